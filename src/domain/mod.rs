//! Validated domain types: each can only be built valid, so code past the HTTP edge never
//! re-checks them.

/// Each engine's capabilities, stated once ([`EngineId::info`]).
pub use engine_id::EngineInfo;

mod api_key;
mod engine_id;
mod ids;
pub mod oauth;
mod plan;
mod scope;
mod speech;

pub use api_key::{ApiKeySecret, KEY_PREFIX, SecretHash};
pub use engine_id::EngineId;
pub use ids::new_id;
pub use plan::{Feature, Plan};
pub use scope::Scope;
pub use speech::{MAX_SEED, MAX_TEXT_CHARS, Seed, SpeechText, Temperature};
