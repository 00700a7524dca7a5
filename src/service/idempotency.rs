//! `Idempotency-Key` semantics for every door (spec §4, DECISIONS): same key + same request →
//! the stored answer; same key + another request → `idempotency_key_reused`; same key while the
//! first still runs → `idempotency_key_in_use`. Keys are scoped to the account.
//!
//! The record is completed in the same transaction as the work it answers for (the generation
//! or the capture, see [`Claim::complete_in`]): a process that dies after that commit leaves a
//! completed record, so the retry replays it instead of meeting a 409 and then running twice.

use std::future::Future;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use sqlx::{PgConnection, PgPool};

use super::core::Core;
use super::error::{ErrorCode, ServiceError};
use super::principal::Principal;
use super::transcription::Transcribed;
use crate::domain::IdempotencyKey;
use crate::store::idempotency::{self, Begin, LegacyResponse, Stored};
use crate::store::pronunciations::PronunciationRow;
use crate::store::voices::VoiceRow;

pub const MAX_KEY_CHARS: usize = 255;

/// The idempotent operations. The name is part of the fingerprint (one key never answers for
/// two operations) and is stored with the outcome. Doors that share an operation share its
/// keys: `POST /v1/speech` and the agent's `speak`, `POST /v1/transcriptions` and the agent's
/// `transcribe` of base64 audio.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyUse {
    /// Asynchronous speech (`POST /v1/speech`, `speak`).
    Speech,
    /// Synchronous speech (`POST /v1/audio/speech`).
    SyncSpeech,
    /// Transcription of an uploaded clip (`POST /v1/transcriptions`, `transcribe` of base64).
    Transcription,
    /// Transcription of a clip fetched from a URL (`transcribe` of `audio_url`): a URL and a
    /// clip are different requests even when the clip is the same.
    TranscriptionFromUrl,
    /// Adding a preset voice (`POST /v1/voices`).
    AddVoice,
    /// OpenAI's transcription (`POST /v1/audio/transcriptions`).
    AudioTranscription,
    /// OpenAI's translation (`POST /v1/audio/translations`).
    AudioTranslation,
    /// Adding a pronunciation rule (`POST /v1/pronunciations`).
    AddPronunciation,
}

impl KeyUse {
    pub fn name(self) -> &'static str {
        match self {
            KeyUse::Speech => "POST /v1/speech",
            KeyUse::SyncSpeech => "POST /v1/audio/speech",
            KeyUse::Transcription => "POST /v1/transcriptions",
            KeyUse::TranscriptionFromUrl => "transcribe audio_url",
            KeyUse::AddVoice => "POST /v1/voices",
            KeyUse::AudioTranscription => "POST /v1/audio/transcriptions",
            KeyUse::AudioTranslation => "POST /v1/audio/translations",
            KeyUse::AddPronunciation => "POST /v1/pronunciations",
        }
    }
}

/// What an idempotent operation produced: what a replay answers with, whichever door asks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Outcome {
    /// A generation was admitted; `voice` is its profile's name.
    SpeechAccepted {
        generation_id: String,
        voice: String,
    },
    /// A synchronous generation was admitted: the answer is its audio.
    SpeechSync { generation_id: String },
    /// A clip was transcribed into a capture.
    Transcribed(Transcribed),
    /// A voice profile was added: the profile as it was then.
    VoiceCreated(Box<VoiceRow>),
    /// A pronunciation rule was added: the rule as it was then.
    PronunciationCreated(Box<PronunciationRow>),
}

/// The idempotency of one request: the key the client sent (if any) and the request's
/// fingerprint (empty without a key).
#[derive(Clone)]
pub struct Keyed {
    pub operation: KeyUse,
    pub key: Option<IdempotencyKey>,
    pub fingerprint: Vec<u8>,
}

impl Keyed {
    /// A JSON request, fingerprinted in its canonical form ([`fingerprint_json`]) only when a
    /// key was sent.
    pub fn json(operation: KeyUse, key: Option<IdempotencyKey>, body: &serde_json::Value) -> Self {
        let fingerprint = match key {
            Some(_) => fingerprint_json(operation.name(), body),
            None => Vec::new(),
        };
        Self {
            operation,
            key,
            fingerprint,
        }
    }
}

/// A key this request owns: complete it with the work, or release it when nothing was done.
#[derive(Debug, Clone)]
pub struct Claim {
    account_id: String,
    key: String,
    operation: KeyUse,
}

/// How [`run`] ended.
pub enum Ran<T> {
    /// The operation ran (with the key claimed, when one was sent).
    Fresh(T),
    /// The key's first request had finished: what it produced.
    Replayed(Outcome),
}

/// Fingerprint of a JSON request: the operation and the canonical JSON (object keys sorted, no
/// whitespace), so that key order and spacing do not matter and values do. Every door that
/// shares an operation's keys fingerprints the same canonical form.
pub fn fingerprint_json(operation: &str, body: &serde_json::Value) -> Vec<u8> {
    fingerprint(operation, &[body.to_string().as_bytes()])
}

/// Fingerprint of a request: the operation's name and the request's canonical content (the
/// caller decides what is canonical; e.g. JSON re-serialised so key order does not matter).
pub fn fingerprint(operation: &str, parts: &[&[u8]]) -> Vec<u8> {
    let mut hash = Sha256::new();
    hash.update(operation.as_bytes());
    for part in parts {
        hash.update([0]);
        hash.update(part);
    }
    hash.finalize().to_vec()
}

/// Runs an idempotent operation for `principal` (every idempotent operation of every door goes
/// through here): the key is claimed (a replay returns the first request's outcome without
/// running `op`; a key in use or reused is refused), then `op` runs with the claim, which it
/// completes inside the transaction that commits its work ([`Claim::complete_in`]); when `op`
/// fails the key is released, so that the client may retry with it. An in-progress record older
/// than the request time limit belongs to a request that died before committing anything; it
/// is taken over.
pub async fn run<T, F, Fut>(
    core: &Core,
    principal: &Principal,
    keyed: Keyed,
    op: F,
) -> Result<Ran<T>, ServiceError>
where
    F: FnOnce(Option<Claim>) -> Fut,
    Fut: Future<Output = Result<T, ServiceError>>,
{
    let claim = match begin(core, &principal.account_id, keyed).await? {
        Begun::Replay(outcome) => return Ok(Ran::Replayed(outcome)),
        Begun::Fresh(claim) => claim,
    };
    let result = op(claim.clone()).await;
    if result.is_err()
        && let Some(claim) = claim
    {
        claim.release(&core.pool).await;
    }
    result.map(Ran::Fresh)
}

enum Begun {
    Fresh(Option<Claim>),
    Replay(Outcome),
}

/// Claims the key. Without a key there is nothing to claim.
async fn begin(core: &Core, account_id: &str, keyed: Keyed) -> Result<Begun, ServiceError> {
    let Some(key) = keyed.key else {
        return Ok(Begun::Fresh(None));
    };
    let begun = idempotency::begin(
        &core.pool,
        account_id,
        key.as_str(),
        &keyed.fingerprint,
        core.request_timeout,
    )
    .await?;
    match begun {
        Begin::Proceed => Ok(Begun::Fresh(Some(Claim {
            account_id: account_id.to_owned(),
            key: key.as_str().to_owned(),
            operation: keyed.operation,
        }))),
        Begin::Replay(stored) => decode(keyed.operation, stored).map(Begun::Replay),
        Begin::InUse => Err(ServiceError::new(
            ErrorCode::IdempotencyKeyInUse,
            "A request with this Idempotency-Key is still being handled; retry when it has finished.",
        )
        .with_param("Idempotency-Key")),
        Begin::Reused => Err(ServiceError::new(
            ErrorCode::IdempotencyKeyReused,
            "This Idempotency-Key was used with a different request; use a new key.",
        )
        .with_param("Idempotency-Key")),
    }
}

/// The outcome a record holds. The fingerprint matched, so the record is the same operation's;
/// a record written before outcomes were stored holds REST's answer, read back here.
fn decode(operation: KeyUse, stored: Stored) -> Result<Outcome, ServiceError> {
    let outcome = match stored {
        Stored::Outcome { outcome, .. } => serde_json::from_value(outcome).ok(),
        Stored::Legacy(legacy) => from_legacy(operation, legacy),
    };
    outcome.ok_or_else(|| ServiceError::internal("idempotency record without a readable outcome"))
}

/// The outcome of a record in the shape before migration 0014: `POST /v1/speech`'s 202 body,
/// `POST /v1/transcriptions`' 200 body, `POST /v1/voices`' 201 body, or the generation id of a
/// synchronous speech request. (Such records expire 48 h after they were written.)
fn from_legacy(operation: KeyUse, legacy: LegacyResponse) -> Option<Outcome> {
    #[derive(Deserialize)]
    struct Accepted {
        id: String,
        voice: String,
    }
    #[derive(Deserialize)]
    struct Capture {
        id: String,
        text: String,
        language: String,
        duration_ms: i64,
    }
    #[derive(Deserialize)]
    struct Voice {
        id: String,
        name: String,
        description: String,
        language: String,
        voice_type: String,
        default_engine: String,
        has_personality: bool,
        generation_count: i64,
        sample_count: i32,
        created_at: chrono::DateTime<chrono::Utc>,
        updated_at: chrono::DateTime<chrono::Utc>,
    }
    match operation {
        KeyUse::SyncSpeech => legacy
            .generation_id
            .map(|generation_id| Outcome::SpeechSync { generation_id }),
        KeyUse::Speech => {
            let a: Accepted = serde_json::from_slice(&legacy.body).ok()?;
            Some(Outcome::SpeechAccepted {
                generation_id: a.id,
                voice: a.voice,
            })
        }
        KeyUse::Transcription | KeyUse::TranscriptionFromUrl => {
            let c: Capture = serde_json::from_slice(&legacy.body).ok()?;
            Some(Outcome::Transcribed(Transcribed {
                capture_id: c.id,
                text: c.text,
                language: c.language,
                duration_ms: c.duration_ms,
                task: crate::domain::Task::Transcribe,
                timestamps: crate::domain::Timestamps::None,
                duration: c.duration_ms as f64 / 1000.0,
                segments: Vec::new(),
                words: Vec::new(),
            }))
        }
        // Introduced after records stopped holding HTTP answers.
        KeyUse::AudioTranscription | KeyUse::AudioTranslation | KeyUse::AddPronunciation => None,
        KeyUse::AddVoice => {
            let v: Voice = serde_json::from_slice(&legacy.body).ok()?;
            Some(Outcome::VoiceCreated(Box::new(VoiceRow {
                id: v.id,
                name: v.name,
                description: v.description,
                language: v.language,
                voice_type: v.voice_type.parse().ok()?,
                engine: v.default_engine.parse().ok()?,
                // Not part of the answer the record held (nor of its replay).
                preset: None,
                pinned_seed: None,
                pinned_temperature: None,
                has_personality: v.has_personality,
                generation_count: v.generation_count,
                sample_count: v.sample_count,
                created_at: v.created_at,
                updated_at: v.updated_at,
            })))
        }
    }
}

impl Claim {
    /// The operation this key was claimed for.
    pub fn operation(&self) -> KeyUse {
        self.operation
    }

    /// Stores the outcome replays will get, inside the transaction that commits the work.
    pub async fn complete_in(&self, tx: &mut PgConnection, outcome: &Outcome) -> sqlx::Result<()> {
        let value = serde_json::to_value(outcome).expect("outcomes serialise");
        idempotency::complete(
            tx,
            &self.account_id,
            &self.key,
            self.operation.name(),
            &value,
        )
        .await
    }

    /// Releases the key after a request that changed nothing (refused or failed), so that the
    /// client may retry with the same key.
    pub async fn release(self, pool: &PgPool) {
        if let Err(err) = idempotency::abandon(pool, &self.account_id, &self.key).await {
            tracing::warn!(error = %err, "could not release idempotency key");
        }
    }
}

/// Forgets a completed record, so that the key may be used again (its work was cancelled and
/// gave the client nothing).
pub async fn forget(
    pool: &PgPool,
    account_id: &str,
    key: &IdempotencyKey,
) -> Result<(), ServiceError> {
    idempotency::forget(pool, account_id, key.as_str()).await?;
    Ok(())
}

/// Test-only crash points, to prove what survives a process dying at the worst moment. Named by
/// the environment variable `VOICED_FAILPOINT`; only debug builds look at it, so a release
/// binary cannot be made to abort this way.
pub fn failpoint(name: &str) {
    if cfg!(debug_assertions) && std::env::var("VOICED_FAILPOINT").is_ok_and(|v| v == name) {
        tracing::error!(failpoint = name, "failpoint reached: aborting the process");
        std::process::abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_separate_operations_and_parts() {
        let a = fingerprint("POST /v1/speech", &[b"ab"]);
        assert_eq!(a, fingerprint("POST /v1/speech", &[b"ab"]));
        assert_ne!(a, fingerprint("POST /v1/transcriptions", &[b"ab"]));
        assert_ne!(fingerprint("x", &[b"a", b"b"]), fingerprint("x", &[b"ab"]));
    }
}
