//! `Idempotency-Key` at the HTTP edge: reading the header, and turning stored answers into
//! responses and back. The semantics live in `service::idempotency`.

use axum::body::Body;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use super::error::ApiError;
use crate::domain::IdempotencyKey;
use crate::service::idempotency::{self as service, StoredResponse};

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

/// Fingerprint of a JSON request: route and canonical JSON body (key order and whitespace do not
/// matter, values do).
pub fn fingerprint(route: &str, body: &serde_json::Value) -> Vec<u8> {
    service::fingerprint_json(route, body)
}

/// A JSON answer as it is sent and stored: replays send exactly these bytes.
pub fn stored_json(
    status: StatusCode,
    headers: &[(&str, String)],
    body: &impl serde::Serialize,
) -> StoredResponse {
    let mut all = vec![("content-type".to_owned(), "application/json".to_owned())];
    all.extend(headers.iter().map(|(n, v)| ((*n).to_owned(), v.clone())));
    StoredResponse {
        status: status.as_u16(),
        headers: all,
        body: serde_json::to_vec(body).expect("answers serialise"),
        generation_id: None,
    }
}

/// The response for a stored answer: the first answer (`replayed = false`) or a replay.
pub fn respond(stored: StoredResponse, replayed: bool) -> Response {
    let mut response = Body::from(stored.body).into_response();
    *response.status_mut() = StatusCode::from_u16(stored.status).unwrap_or(StatusCode::OK);
    for (name, value) in stored.headers {
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
