//! The service core: the operations every door (REST, the console, the agent interface) calls.
//! It takes a [`Principal`] and validated domain types and returns domain results or a
//! [`ServiceError`]; transports only translate. Admission (allowance, key ceiling, pending cap),
//! metering and idempotency live here, once.

pub mod accounts;
pub mod audio;
pub mod auth;
pub mod cloning;
pub mod core;
pub mod deletion;
pub mod delivery;
pub mod error;
pub mod health;
pub mod housekeeping;
pub mod idempotency;
pub mod keys;
pub mod live;
pub mod live_speech;
pub mod oauth;
pub mod operations;
pub mod operator;
pub mod principal;
pub mod principal_cache;
pub mod pronunciations;
pub mod rates;
pub mod reads;
pub mod speech;
pub mod transcription;
pub mod usage;
pub mod views;
pub mod voices;
pub mod webhooks;

pub use core::Core;
pub use error::{ErrorCode, ServiceError, SettingsPage};
pub use principal::Principal;
