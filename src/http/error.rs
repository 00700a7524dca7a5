//! The one error type of the HTTP layer.
//!
//! Handlers and middleware return [`ApiError`]; its `IntoResponse` only records the error in the
//! response's extensions. [`render_errors`] (the outermost error layer) turns it into the body:
//! an RFC 9457 problem document, or OpenAI's envelope on `POST /v1/audio/speech`. The same layer
//! turns axum's own bare rejections (404, 405, 413, 415, …) into documents, so no failure ever
//! leaves without one.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

use crate::domain::Scope;

/// Stable error tokens (spec §7.3 and DECISIONS). Clients branch on these.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    InvalidApiKey,
    ProPlanRequired,
    InsufficientScope,
    FeatureNotEnabled,
    InvalidRequest,
    IdempotencyKeyReused,
    IdempotencyKeyInUse,
    RateLimitExceeded,
    QuotaExhausted,
    KeyCeilingExceeded,
    NotFound,
    MethodNotAllowed,
    UnsupportedMediaType,
    PayloadTooLarge,
    InvalidSignature,
    ServiceUnavailable,
    InternalError,
}

impl ErrorCode {
    pub const ALL: [ErrorCode; 17] = [
        ErrorCode::InvalidApiKey,
        ErrorCode::ProPlanRequired,
        ErrorCode::InsufficientScope,
        ErrorCode::FeatureNotEnabled,
        ErrorCode::InvalidRequest,
        ErrorCode::IdempotencyKeyReused,
        ErrorCode::IdempotencyKeyInUse,
        ErrorCode::RateLimitExceeded,
        ErrorCode::QuotaExhausted,
        ErrorCode::KeyCeilingExceeded,
        ErrorCode::NotFound,
        ErrorCode::MethodNotAllowed,
        ErrorCode::UnsupportedMediaType,
        ErrorCode::PayloadTooLarge,
        ErrorCode::InvalidSignature,
        ErrorCode::ServiceUnavailable,
        ErrorCode::InternalError,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidApiKey => "invalid_api_key",
            ErrorCode::ProPlanRequired => "pro_plan_required",
            ErrorCode::InsufficientScope => "insufficient_scope",
            ErrorCode::FeatureNotEnabled => "feature_not_enabled",
            ErrorCode::InvalidRequest => "invalid_request",
            ErrorCode::IdempotencyKeyReused => "idempotency_key_reused",
            ErrorCode::IdempotencyKeyInUse => "idempotency_key_in_use",
            ErrorCode::RateLimitExceeded => "rate_limit_exceeded",
            ErrorCode::QuotaExhausted => "quota_exhausted",
            ErrorCode::KeyCeilingExceeded => "key_ceiling_exceeded",
            ErrorCode::NotFound => "not_found",
            ErrorCode::MethodNotAllowed => "method_not_allowed",
            ErrorCode::UnsupportedMediaType => "unsupported_media_type",
            ErrorCode::PayloadTooLarge => "payload_too_large",
            ErrorCode::InvalidSignature => "invalid_signature",
            ErrorCode::ServiceUnavailable => "service_unavailable",
            ErrorCode::InternalError => "internal_error",
        }
    }

    pub fn status(self) -> StatusCode {
        match self {
            ErrorCode::InvalidApiKey => StatusCode::UNAUTHORIZED,
            ErrorCode::ProPlanRequired
            | ErrorCode::InsufficientScope
            | ErrorCode::FeatureNotEnabled
            | ErrorCode::InvalidSignature => StatusCode::FORBIDDEN,
            ErrorCode::InvalidRequest => StatusCode::BAD_REQUEST,
            ErrorCode::IdempotencyKeyReused => StatusCode::UNPROCESSABLE_ENTITY,
            ErrorCode::IdempotencyKeyInUse => StatusCode::CONFLICT,
            ErrorCode::RateLimitExceeded
            | ErrorCode::QuotaExhausted
            | ErrorCode::KeyCeilingExceeded => StatusCode::TOO_MANY_REQUESTS,
            ErrorCode::NotFound => StatusCode::NOT_FOUND,
            ErrorCode::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ErrorCode::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ErrorCode::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ErrorCode::ServiceUnavailable => StatusCode::SERVICE_UNAVAILABLE,
            ErrorCode::InternalError => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            ErrorCode::InvalidApiKey => "Invalid API key",
            ErrorCode::ProPlanRequired => "Paid plan required",
            ErrorCode::InsufficientScope => "Insufficient scope",
            ErrorCode::FeatureNotEnabled => "Feature not enabled",
            ErrorCode::InvalidRequest => "Invalid request",
            ErrorCode::IdempotencyKeyReused => "Idempotency key reused",
            ErrorCode::IdempotencyKeyInUse => "Idempotency key in use",
            ErrorCode::RateLimitExceeded => "Rate limit exceeded",
            ErrorCode::QuotaExhausted => "Audio allowance used up",
            ErrorCode::KeyCeilingExceeded => "Key spend ceiling reached",
            ErrorCode::NotFound => "Not found",
            ErrorCode::MethodNotAllowed => "Method not allowed",
            ErrorCode::UnsupportedMediaType => "Unsupported media type",
            ErrorCode::PayloadTooLarge => "Payload too large",
            ErrorCode::InvalidSignature => "Invalid signature",
            ErrorCode::ServiceUnavailable => "Service unavailable",
            ErrorCode::InternalError => "Internal error",
        }
    }

    /// OpenAI's error `type` family for the `/v1/audio/speech` envelope (DECISIONS).
    fn openai_type(self) -> &'static str {
        match self.status().as_u16() {
            401 => "authentication_error",
            403 => "permission_error",
            429 => "rate_limit_error",
            500.. => "server_error",
            _ => "invalid_request_error",
        }
    }
}

/// Which settings page an error points the user at (`settings_url`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettingsPage {
    Billing,
    Console,
}

#[derive(Debug, Clone)]
pub struct ApiError {
    pub code: ErrorCode,
    pub detail: String,
    pub param: Option<String>,
    pub required_scope: Option<Scope>,
    pub settings: Option<SettingsPage>,
    pub retry_after_secs: Option<u64>,
}

impl ApiError {
    pub fn new(code: ErrorCode, detail: impl Into<String>) -> Self {
        Self {
            code,
            detail: detail.into(),
            param: None,
            required_scope: None,
            settings: None,
            retry_after_secs: None,
        }
    }

    /// 400 `invalid_request` naming the field at fault.
    pub fn invalid(param: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidRequest, detail).with_param(param)
    }

    pub fn with_param(mut self, param: impl Into<String>) -> Self {
        self.param = Some(param.into());
        self
    }

    pub fn with_settings(mut self, page: SettingsPage) -> Self {
        self.settings = Some(page);
        self
    }

    pub fn with_retry_after(mut self, secs: u64) -> Self {
        self.retry_after_secs = Some(secs.max(1));
        self
    }

    pub fn invalid_api_key() -> Self {
        Self::new(
            ErrorCode::InvalidApiKey,
            "Send a valid API key in the x-api-key header or as Authorization: Bearer <key>.",
        )
    }

    pub fn pro_plan_required() -> Self {
        Self::new(
            ErrorCode::ProPlanRequired,
            "The API is part of the paid plan; this account has no active subscription or trial.",
        )
        .with_settings(SettingsPage::Billing)
    }

    pub fn insufficient_scope(scope: Scope) -> Self {
        let mut err = Self::new(
            ErrorCode::InsufficientScope,
            format!("This API key lacks the {scope} scope."),
        );
        err.required_scope = Some(scope);
        err
    }

    pub fn not_found() -> Self {
        Self::new(ErrorCode::NotFound, "No such resource.")
    }

    /// The database or an engine cannot serve now; the client should retry.
    pub fn unavailable(retry_after_secs: u64) -> Self {
        Self::new(
            ErrorCode::ServiceUnavailable,
            "The service is temporarily unavailable; retry shortly.",
        )
        .with_retry_after(retry_after_secs)
    }

    /// A failure the client cannot act on. The cause goes to the log (inside the request's span,
    /// which carries the request id), never to the client.
    pub fn internal(cause: impl std::fmt::Display) -> Self {
        tracing::error!(error = %cause, "internal error");
        Self::new(
            ErrorCode::InternalError,
            "Something went wrong on our side; the request id identifies it in our logs.",
        )
    }
}

impl From<sqlx::Error> for ApiError {
    fn from(err: sqlx::Error) -> Self {
        match err {
            sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::Io(_) => {
                tracing::error!(error = %err, "database unavailable");
                ApiError::unavailable(5)
            }
            other => ApiError::internal(other),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = self.code.status().into_response();
        if let Some(secs) = self.retry_after_secs {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        if self.code == ErrorCode::InvalidApiKey {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response.extensions_mut().insert(Arc::new(self));
        response
    }
}

/// Addresses the error bodies link to.
#[derive(Debug, Clone)]
pub struct ErrorLinks {
    pub errors_url: String,
    pub billing_url: String,
    pub console_url: String,
}

/// The one place error bodies are written. See the module docs.
pub async fn render_errors(
    State(links): State<Arc<ErrorLinks>>,
    request: Request,
    next: Next,
) -> Response {
    let path = request.uri().path().to_owned();
    let mut response = next.run(request).await;
    let status = response.status();
    let error = match response.extensions_mut().remove::<Arc<ApiError>>() {
        Some(error) => error,
        None if status.is_client_error() || status.is_server_error() => {
            Arc::new(from_bare_status(status))
        }
        None => return response,
    };
    // A timeout answers 408 from tower-http; the code decides the status we send.
    *response.status_mut() = error.code.status();
    if error.code == ErrorCode::ServiceUnavailable && error.retry_after_secs.is_none() {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(5u64));
    }
    let (content_type, body) = if path == "/v1/audio/speech" {
        ("application/json", openai_envelope(&error, &links))
    } else {
        (
            "application/problem+json",
            problem_document(&error, &links, &path),
        )
    };
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.remove(header::CONTENT_LENGTH);
    *response.body_mut() = Body::from(body.to_string());
    response
}

/// axum and tower-http answer some failures themselves with a bare status (unknown route, wrong
/// method, body too large, timeout, extractor rejections): give each its code.
fn from_bare_status(status: StatusCode) -> ApiError {
    match status {
        StatusCode::NOT_FOUND => ApiError::not_found(),
        StatusCode::METHOD_NOT_ALLOWED => ApiError::new(
            ErrorCode::MethodNotAllowed,
            "This path does not accept that method; the Allow header lists the ones it does.",
        ),
        StatusCode::PAYLOAD_TOO_LARGE => ApiError::new(
            ErrorCode::PayloadTooLarge,
            "The request body is larger than this endpoint accepts.",
        ),
        StatusCode::UNSUPPORTED_MEDIA_TYPE => ApiError::new(
            ErrorCode::UnsupportedMediaType,
            "Send the body as JSON with Content-Type: application/json.",
        ),
        StatusCode::REQUEST_TIMEOUT => ApiError::new(
            ErrorCode::ServiceUnavailable,
            "The request took longer than the server allows; retry shortly.",
        )
        .with_retry_after(5),
        s if s.is_client_error() => ApiError::new(ErrorCode::InvalidRequest, "Invalid request."),
        s => ApiError::internal(format!("bare {s} response")),
    }
}

fn settings_url(error: &ApiError, links: &ErrorLinks) -> Option<String> {
    match error.settings? {
        SettingsPage::Billing => Some(links.billing_url.clone()),
        SettingsPage::Console => Some(links.console_url.clone()),
    }
}

fn problem_document(error: &ApiError, links: &ErrorLinks, path: &str) -> Value {
    let code = error.code.as_str();
    let mut doc = Map::new();
    doc.insert("type".into(), json!(format!("{}/{code}", links.errors_url)));
    doc.insert("title".into(), json!(error.code.title()));
    doc.insert("status".into(), json!(error.code.status().as_u16()));
    doc.insert("detail".into(), json!(error.detail));
    doc.insert("instance".into(), json!(path));
    doc.insert("code".into(), json!(code));
    if let Some(param) = &error.param {
        doc.insert("param".into(), json!(param));
    }
    if let Some(scope) = error.required_scope {
        doc.insert("required_scope".into(), json!(scope.as_str()));
    }
    if let Some(url) = settings_url(error, links) {
        doc.insert("settings_url".into(), json!(url));
    }
    Value::Object(doc)
}

fn openai_envelope(error: &ApiError, links: &ErrorLinks) -> Value {
    let mut inner = json!({
        "message": error.detail,
        "type": error.code.openai_type(),
        "param": error.param,
        "code": error.code.as_str(),
    });
    if let Some(url) = settings_url(error, links) {
        inner["settings_url"] = json!(url);
    }
    if let Some(scope) = error.required_scope {
        inner["required_scope"] = json!(scope.as_str());
    }
    json!({ "error": inner })
}
