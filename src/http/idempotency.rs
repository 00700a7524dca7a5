//! `Idempotency-Key` for write routes (spec §4, DECISIONS): same key + same request → the stored
//! response byte for byte; same key + another request → 422 `idempotency_key_reused`; same key
//! while the first still runs → 409 `idempotency_key_in_use`. Keys are scoped to the account.

use std::future::Future;
use std::time::Duration;

use axum::body::{Body, to_bytes};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use sqlx::PgPool;

use super::error::{ApiError, ErrorCode};
use crate::store::idempotency::{self, Begin, StoredResponse};

pub const HEADER: &str = "idempotency-key";
const MAX_KEY_CHARS: usize = 255;
/// Response headers that belong to the stored answer (the rest, such as the request id and the
/// rate-limit state, describe the new request and are made afresh).
const KEPT_HEADERS: [&str; 5] = [
    "content-type",
    "location",
    "x-service-engine",
    "x-service-generation-id",
    "content-length",
];

/// The key sent with the request, if any; 400 when it is empty, too long or not visible ASCII.
pub fn key_from(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let Some(value) = headers.get(HEADER) else {
        return Ok(None);
    };
    let invalid = || {
        ApiError::invalid(
            "Idempotency-Key",
            format!("Idempotency-Key must be 1 to {MAX_KEY_CHARS} visible ASCII characters"),
        )
    };
    let key = value.to_str().map_err(|_| invalid())?;
    if key.is_empty() || key.len() > MAX_KEY_CHARS || !key.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(invalid());
    }
    Ok(Some(key.to_owned()))
}

/// Fingerprint of a request: route and canonical JSON body (key order and whitespace do not
/// matter, values do).
pub fn fingerprint(route: &str, body: &serde_json::Value) -> Vec<u8> {
    let mut hash = Sha256::new();
    hash.update(route.as_bytes());
    hash.update([0]);
    hash.update(body.to_string().as_bytes());
    hash.finalize().to_vec()
}

/// Runs `handler` at most once per (account, key). Without a key it just runs it (and the
/// request's fingerprint, which hashes the whole body, is never computed).
/// Only successful answers are stored; a refused or failed request releases the key.
pub async fn run_once<F, Fut>(
    pool: &PgPool,
    account_id: &str,
    key: Option<String>,
    fingerprint: impl FnOnce() -> Vec<u8>,
    abandoned_after: Duration,
    handler: F,
) -> Result<Response, ApiError>
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = Result<Response, ApiError>>,
{
    let Some(key) = key else {
        return handler().await;
    };
    let fingerprint = fingerprint();
    match idempotency::begin(pool, account_id, &key, &fingerprint, abandoned_after).await? {
        Begin::Proceed => {}
        Begin::Replay(stored) => return Ok(replay(stored)),
        Begin::InUse => {
            return Err(ApiError::new(
                ErrorCode::IdempotencyKeyInUse,
                "A request with this Idempotency-Key is still being handled; retry when it has finished.",
            )
            .with_param("Idempotency-Key"));
        }
        Begin::Reused => {
            return Err(ApiError::new(
                ErrorCode::IdempotencyKeyReused,
                "This Idempotency-Key was used with a different request; use a new key.",
            )
            .with_param("Idempotency-Key"));
        }
    }
    let outcome = handler().await;
    match outcome {
        Ok(response) if response.status().is_success() => {
            let (parts, body) = response.into_parts();
            let bytes = to_bytes(body, usize::MAX)
                .await
                .map_err(|e| ApiError::internal(format!("buffering response: {e}")))?;
            let headers = parts
                .headers
                .iter()
                .filter(|(name, _)| KEPT_HEADERS.contains(&name.as_str()))
                .filter_map(|(name, value)| {
                    Some((name.to_string(), value.to_str().ok()?.to_owned()))
                })
                .collect();
            let stored = StoredResponse {
                status: parts.status.as_u16(),
                headers,
                body: bytes.to_vec(),
            };
            idempotency::complete(pool, account_id, &key, &stored).await?;
            Ok(Response::from_parts(parts, Body::from(bytes)))
        }
        other => {
            if let Err(err) = idempotency::abandon(pool, account_id, &key).await {
                tracing::warn!(error = %err, "could not release idempotency key");
            }
            other
        }
    }
}

fn replay(stored: StoredResponse) -> Response {
    let mut response = Body::from(stored.body).into_response();
    *response.status_mut() = StatusCode::from_u16(stored.status).unwrap_or(StatusCode::OK);
    for (name, value) in stored.headers {
        if let (Ok(name), Ok(value)) = (HeaderName::try_from(name), HeaderValue::try_from(value)) {
            response.headers_mut().insert(name, value);
        }
    }
    response
        .headers_mut()
        .insert("idempotent-replayed", HeaderValue::from_static("true"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_are_bounded() {
        let mut headers = HeaderMap::new();
        assert_eq!(key_from(&headers).unwrap(), None);
        headers.insert(HEADER, HeaderValue::from_str(&"k".repeat(255)).unwrap());
        assert!(key_from(&headers).unwrap().is_some());
        headers.insert(HEADER, HeaderValue::from_str(&"k".repeat(256)).unwrap());
        let err = key_from(&headers).unwrap_err();
        assert_eq!(err.param.as_deref(), Some("Idempotency-Key"));
        headers.insert(HEADER, HeaderValue::from_static(""));
        assert!(key_from(&headers).is_err());
    }

    #[test]
    fn fingerprints_ignore_key_order_not_values() {
        let a = fingerprint("/v1/speech", &json!({"text": "hi", "voice_name": "v"}));
        let b: serde_json::Value =
            serde_json::from_str(r#"{ "voice_name":"v",  "text":"hi" }"#).unwrap();
        assert_eq!(a, fingerprint("/v1/speech", &b));
        assert_ne!(
            a,
            fingerprint("/v1/speech", &json!({"text": "hi!", "voice_name": "v"}))
        );
        assert_ne!(
            a,
            fingerprint(
                "/v1/transcriptions",
                &json!({"text": "hi", "voice_name": "v"})
            )
        );
    }
}
