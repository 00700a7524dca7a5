//! Validated domain types: each can only be built valid, so code past the HTTP edge never
//! re-checks them.

/// Each engine's capabilities, stated once ([`EngineId::info`]).
pub use engine_id::EngineInfo;

mod api_key;
mod ceiling;
mod email;
mod engine_id;
mod generation;
mod idempotency_key;
mod ids;
pub mod oauth;
mod page;
mod plan;
mod rate_prefix;
mod scope;
mod speech;
mod sql;
mod transcript;
pub mod trusted_proxies;

pub use api_key::{ApiKeySecret, KEY_PREFIX, SecretHash};
pub use ceiling::{CeilingError, CeilingMinutes};
pub use email::{Email, MAX_EMAIL_CHARS};
pub use engine_id::EngineId;
pub use generation::{CancelReason, GenerationStatus, VoiceKind, progress};
pub use idempotency_key::{IdempotencyKey, MAX_KEY_CHARS};
pub use ids::{GenerationId, MAX_ID_CHARS, new_id};
pub use page::{Page, PageBound};
pub use plan::{Feature, Plan};
pub use rate_prefix::Ipv6RatePrefix;
pub use scope::Scope;
pub use speech::{MAX_SEED, MAX_TEXT_CHARS, Seed, SpeechText, Temperature};
pub use transcript::{
    CaptionFormat, LANGUAGES, MAX_PROMPT_CHARS, OptionError, RecognitionOptions, Segment, Task,
    Timestamps, Word, captions,
};
pub use trusted_proxies::TrustedProxies;
