//! JSON request bodies as a plain object, so that each field is validated by hand and an error
//! names the field at fault (axum's `Json` rejects with its own text and no field name).

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::{HeaderMap, header};
use serde_json::{Map, Value};

use super::error::{ApiError, ErrorCode};

/// A request body that is a JSON object.
pub struct JsonObject(pub Map<String, Value>);

impl<S: Send + Sync> FromRequest<S> for JsonObject {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        require_json(request.headers())?;
        let bytes = Bytes::from_request(request, state)
            .await
            .map_err(|rejection| {
                if rejection.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
                    too_large()
                } else {
                    unreadable()
                }
            })?;
        match serde_json::from_slice::<Value>(&bytes) {
            Ok(Value::Object(map)) => Ok(JsonObject(map)),
            Ok(_) => Err(not_an_object()),
            Err(err) => Err(not_json(&err)),
        }
    }
}

pub fn too_large() -> ApiError {
    ApiError::new(
        ErrorCode::PayloadTooLarge,
        "The request body is larger than this endpoint accepts.",
    )
}

pub fn unreadable() -> ApiError {
    ApiError::new(
        ErrorCode::InvalidRequest,
        "The request body could not be read.",
    )
}

pub fn not_an_object() -> ApiError {
    ApiError::new(ErrorCode::InvalidRequest, "The body must be a JSON object.")
}

pub fn not_json(err: &serde_json::Error) -> ApiError {
    ApiError::new(
        ErrorCode::InvalidRequest,
        format!(
            "The body is not valid JSON (line {}, column {}).",
            err.line(),
            err.column()
        ),
    )
}

/// 415 for a non-JSON content type, 400 for none; checked before the body is read.
pub fn require_json(headers: &HeaderMap) -> Result<(), ApiError> {
    let is_json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|mime| {
            let mime = mime.trim().to_ascii_lowercase();
            mime == "application/json"
                || (mime.starts_with("application/") && mime.ends_with("+json"))
        });
    match is_json {
        Some(true) => {}
        Some(false) => {
            return Err(ApiError::new(
                ErrorCode::UnsupportedMediaType,
                "Send the body as JSON with Content-Type: application/json.",
            ));
        }
        None => {
            return Err(ApiError::new(
                ErrorCode::InvalidRequest,
                "The body must be JSON sent with Content-Type: application/json.",
            ));
        }
    }
    Ok(())
}

impl JsonObject {
    /// Refuses any member outside `allowed`, naming it.
    pub fn only(&self, allowed: &[&str]) -> Result<(), ApiError> {
        match self.0.keys().find(|k| !allowed.contains(&k.as_str())) {
            Some(unknown) => Err(ApiError::invalid(
                unknown.clone(),
                format!(
                    "Unknown field {unknown:?}; accepted fields: {}.",
                    allowed.join(", ")
                ),
            )),
            None => Ok(()),
        }
    }

    /// A required string member.
    pub fn required_str(&self, name: &str) -> Result<&str, ApiError> {
        match self.0.get(name) {
            Some(Value::String(s)) => Ok(s),
            Some(_) => Err(ApiError::invalid(name, format!("{name} must be a string"))),
            None => Err(ApiError::invalid(name, format!("{name} is required"))),
        }
    }

    /// An optional member that is not null.
    pub fn optional(&self, name: &str) -> Option<&Value> {
        self.0.get(name).filter(|v| !v.is_null())
    }

    /// The body as a JSON value (a copy; used only to fingerprint idempotent requests).
    pub fn value(&self) -> Value {
        Value::Object(self.0.clone())
    }
}
