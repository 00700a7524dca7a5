//! `Idempotency-Key` semantics for every door (spec §4, DECISIONS): same key + same request →
//! the stored answer; same key + another request → `idempotency_key_reused`; same key while the
//! first still runs → `idempotency_key_in_use`. Keys are scoped to the account.
//!
//! The record is completed in the same transaction as the work it answers for (the generation
//! or the capture, see [`Claim::complete_in`]): a process that dies after that commit leaves a
//! completed record, so the retry replays it instead of meeting a 409 and then running twice.

use std::time::Duration;

use sha2::{Digest, Sha256};
use sqlx::{PgConnection, PgPool};

use super::error::{ErrorCode, ServiceError};
use crate::domain::IdempotencyKey;
use crate::store::idempotency::{self, Begin};

pub use crate::store::idempotency::StoredResponse;

/// Renders the answer a replay will get from what the operation produced (each door renders
/// its own wire format).
pub type Render<'a, T> = &'a (dyn Fn(&T) -> StoredResponse + Sync);

/// The idempotency of one request as its door sees it: the key the client sent (if any), the
/// request's fingerprint (empty without a key), and how to render the answer replays get.
pub struct Keyed<'a, T> {
    pub key: Option<IdempotencyKey>,
    pub fingerprint: Vec<u8>,
    pub render: Render<'a, T>,
}

/// A key this request owns: complete it with the work, or release it when nothing was done.
#[derive(Debug)]
pub struct Claim {
    account_id: String,
    key: String,
}

/// How [`begin`] ended.
pub enum Begun {
    /// Run the request; with a claim when a key was sent.
    Fresh(Option<Claim>),
    /// The key's first request finished: answer with its response.
    Replay(StoredResponse),
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

/// Claims `key` for this request. Without a key there is nothing to claim (and the fingerprint,
/// which may hash a large body, is never computed). An in-progress record older than
/// `abandoned_after` belongs to a request that died before committing anything; it is taken over.
pub async fn begin(
    pool: &PgPool,
    account_id: &str,
    key: Option<IdempotencyKey>,
    fingerprint: Vec<u8>,
    abandoned_after: Duration,
) -> Result<Begun, ServiceError> {
    let Some(key) = key else {
        return Ok(Begun::Fresh(None));
    };
    let key = key.as_str();
    match idempotency::begin(pool, account_id, key, &fingerprint, abandoned_after).await? {
        Begin::Proceed => Ok(Begun::Fresh(Some(Claim {
            account_id: account_id.to_owned(),
            key: key.to_owned(),
        }))),
        Begin::Replay(stored) => Ok(Begun::Replay(stored)),
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

impl Claim {
    /// Stores the answer replays will get, inside the transaction that commits the work.
    pub async fn complete_in(
        &self,
        tx: &mut PgConnection,
        response: &StoredResponse,
    ) -> sqlx::Result<()> {
        idempotency::complete(tx, &self.account_id, &self.key, response).await
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

/// Releases `claim` (if any) when `result` is an error: the common tail of every idempotent
/// operation.
pub async fn settle<T>(
    pool: &PgPool,
    claim: Option<Claim>,
    result: Result<T, ServiceError>,
) -> Result<T, ServiceError> {
    if result.is_err()
        && let Some(claim) = claim
    {
        claim.release(pool).await;
    }
    result
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
