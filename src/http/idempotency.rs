//! `Idempotency-Key` at the HTTP edge: reading the header, and answering (the first time and on
//! a replay) with JSON. The semantics live in `service::idempotency`.

use axum::body::Body;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use super::error::ApiError;
use crate::domain::IdempotencyKey;

pub const HEADER: &str = "idempotency-key";

/// The key sent with the request, if any; 400 when it is empty, too long or not visible ASCII.
pub fn key_from(headers: &HeaderMap) -> Result<Option<IdempotencyKey>, ApiError> {
    let Some(value) = headers.get(HEADER) else {
        return Ok(None);
    };
    match value.to_str().ok().and_then(IdempotencyKey::parse) {
        Some(key) => Ok(Some(key)),
        None => Err(ApiError::invalid(
            "Idempotency-Key",
            IdempotencyKey::refusal("Idempotency-Key"),
        )),
    }
}

/// A JSON answer of an idempotent operation: the first answer (`replayed = false`) or a replay
/// (the same bytes, marked `Idempotent-Replayed: true`).
pub fn json_answer(
    status: StatusCode,
    headers: &[(&str, String)],
    body: &impl serde::Serialize,
    replayed: bool,
) -> Response {
    let mut response =
        Body::from(serde_json::to_vec(body).expect("answers serialise")).into_response();
    *response.status_mut() = status;
    let all = [("content-type", "application/json")]
        .into_iter()
        .chain(headers.iter().map(|(n, v)| (*n, v.as_str())));
    for (name, value) in all {
        if let (Ok(name), Ok(value)) = (HeaderName::try_from(name), HeaderValue::try_from(value)) {
            response.headers_mut().insert(name, value);
        }
    }
    if replayed {
        response
            .headers_mut()
            .insert("idempotent-replayed", HeaderValue::from_static("true"));
    }
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

    fn fingerprint(route: &str, body: &serde_json::Value) -> Vec<u8> {
        crate::service::idempotency::fingerprint_json(route, body)
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
