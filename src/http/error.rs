//! How errors leave over HTTP.
//!
//! Handlers and middleware return [`ApiError`] (the service core's [`ServiceError`]); its
//! `IntoResponse` only records the error in the response's extensions. [`render_errors`] (the
//! outermost error layer) turns it into the body: an RFC 9457 problem document, or OpenAI's
//! envelope on OpenAI's dialect (`POST /v1/audio/speech`, `/v1/audio/transcriptions`,
//! `/v1/audio/translations`). The same layer turns axum's own bare rejections (404,
//! 405, 413, 415, …) into documents, so no failure ever leaves without one.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

pub use crate::service::error::{ErrorCode, ServiceError, SettingsPage};

/// The HTTP status of each stable code: the core names codes only; every HTTP door (REST, the
/// console, MCP's problem objects, OAuth) answers with this status.
pub trait HttpStatus {
    fn status(self) -> StatusCode;
}

impl HttpStatus for ErrorCode {
    fn status(self) -> StatusCode {
        match self {
            ErrorCode::InvalidApiKey => StatusCode::UNAUTHORIZED,
            ErrorCode::ProPlanRequired
            | ErrorCode::InsufficientScope
            | ErrorCode::FeatureNotEnabled
            | ErrorCode::InvalidSignature => StatusCode::FORBIDDEN,
            ErrorCode::InvalidRequest => StatusCode::BAD_REQUEST,
            ErrorCode::IdempotencyKeyReused => StatusCode::UNPROCESSABLE_ENTITY,
            ErrorCode::IdempotencyKeyInUse
            | ErrorCode::Conflict
            | ErrorCode::GenerationFinished
            | ErrorCode::TimestampsUnavailable => StatusCode::CONFLICT,
            ErrorCode::RateLimitExceeded
            | ErrorCode::QuotaExhausted
            | ErrorCode::KeyCeilingExceeded => StatusCode::TOO_MANY_REQUESTS,
            ErrorCode::NotFound => StatusCode::NOT_FOUND,
            ErrorCode::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ErrorCode::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ErrorCode::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ErrorCode::RangeNotSatisfiable => StatusCode::RANGE_NOT_SATISFIABLE,
            ErrorCode::RequestTimeout => StatusCode::REQUEST_TIMEOUT,
            ErrorCode::ServiceUnavailable => StatusCode::SERVICE_UNAVAILABLE,
            ErrorCode::InternalError => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

/// OpenAI's error `type` family for the `/v1/audio/speech` envelope (DECISIONS).
pub fn openai_type(code: ErrorCode) -> &'static str {
    match code.status().as_u16() {
        401 => "authentication_error",
        403 => "permission_error",
        429 => "rate_limit_error",
        500.. => "server_error",
        _ => "invalid_request_error",
    }
}

/// The HTTP layer's name for the service error.
pub type ApiError = ServiceError;

impl IntoResponse for ServiceError {
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

/// Marks a failure response whose body is already in its own documented format (the OAuth
/// endpoints' RFC 6749 errors): [`render_errors`] leaves it as it is.
#[derive(Debug, Clone, Copy)]
pub struct OwnFormat;

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
    let request_id = request
        .headers()
        .get(super::REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body_deadline = request
        .extensions()
        .get::<super::connection::BodyDeadline>()
        .cloned();
    let mut response = next.run(request).await;
    if body_deadline.is_some_and(|d| d.passed()) {
        // Whatever the handler made of its failed body read (and on every door, the console's
        // included): the client was too slow, and its connection closes.
        response = ApiError::new(
            ErrorCode::RequestTimeout,
            "The request body did not arrive within the time this server allows; the connection is closed.",
        )
        .into_response();
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    let status = response.status();
    // Console and error pages answer in HTML, failures included; OAuth in its own JSON.
    if is_html(&response) || response.extensions().get::<OwnFormat>().is_some() {
        return response;
    }
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
    let (content_type, body) = if speaks_openai(&path) {
        ("application/json", openai_envelope(&error, &links))
    } else if speaks_elevenlabs(&path) {
        ("application/json", elevenlabs_envelope(&error))
    } else if speaks_cartesia(&path) {
        (
            "application/json",
            cartesia_envelope(&error, request_id.as_deref()),
        )
    } else if speaks_deepgram(&path) {
        let mut body = problem_document(&error, &links, &path);
        deepgram_envelope(&mut body, &error, request_id.as_deref());
        ("application/json", body)
    } else {
        (
            "application/problem+json",
            problem_document(&error, &links, &path),
        )
    };
    let body = body.to_string();
    record_for_audit(&body);
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.remove(header::CONTENT_LENGTH);
    *response.body_mut() = Body::from(body);
    response
}

fn is_html(response: &Response) -> bool {
    response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/html"))
}

/// Test support (debug builds only): with `VOICED_ERROR_BODY_LOG` set, every error body is
/// appended to that file, one per line, so that a CI step can check that no body of any suite
/// carries internal detail (file paths, SQL, panic messages). See `scripts/scan-error-bodies.py`.
pub(crate) fn record_for_audit(body: &str) {
    if !cfg!(debug_assertions) {
        return;
    }
    if let Some(path) = std::env::var_os("VOICED_ERROR_BODY_LOG") {
        use std::io::Write;
        if let Ok(mut file) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            // One write per body: `writeln!` writes the body and the newline separately, and
            // concurrent writers (test threads, several processes) interleaved them.
            let _ = file.write_all(format!("{body}\n").as_bytes());
        }
    }
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

/// The routes of OpenAI's dialect, whose errors use OpenAI's envelope.
pub fn speaks_openai(path: &str) -> bool {
    matches!(
        path,
        "/v1/audio/speech" | "/v1/audio/transcriptions" | "/v1/audio/translations" | "/v1/realtime"
    )
}

/// The routes of Deepgram's dialect, whose refusals carry Deepgram's members too.
pub fn speaks_deepgram(path: &str) -> bool {
    path == "/v1/listen"
}

/// The routes of ElevenLabs' dialect, whose errors use ElevenLabs' shape.
pub fn speaks_elevenlabs(path: &str) -> bool {
    path.starts_with("/v1/text-to-speech/")
}

/// The routes of Cartesia's dialect, whose errors use Cartesia's shape.
pub fn speaks_cartesia(path: &str) -> bool {
    path == "/tts/websocket"
}

/// Cartesia's error shape, `{"error_code", "title", "message", "request_id"}`, with
/// `error_code` and voiced's `code` both the stable code (DECISIONS: the live routes' errors).
fn cartesia_envelope(error: &ApiError, request_id: Option<&str>) -> Value {
    let mut body = json!({
        "error_code": error.code.as_str(),
        "title": error.code.title(),
        "message": error.detail,
        "status_code": error.code.status().as_u16(),
        "request_id": request_id.unwrap_or_default(),
        "code": error.code.as_str(),
    });
    if let Some(param) = &error.param {
        body["param"] = json!(param);
    }
    body
}

/// ElevenLabs' `detail.status` for a code.
pub fn elevenlabs_status(code: ErrorCode) -> &'static str {
    match code {
        ErrorCode::InvalidApiKey => "invalid_api_key",
        ErrorCode::InsufficientScope => "missing_permissions",
        ErrorCode::ProPlanRequired | ErrorCode::FeatureNotEnabled => "payment_required",
        ErrorCode::NotFound => "voice_not_found",
        ErrorCode::QuotaExhausted | ErrorCode::KeyCeilingExceeded => "quota_exceeded",
        ErrorCode::RateLimitExceeded => "too_many_concurrent_requests",
        ErrorCode::InvalidRequest => "invalid_request",
        other => other.as_str(),
    }
}

/// ElevenLabs' error shape, `{"detail": {"status", "message"}}`, with voiced's stable `code`
/// (and `param`) in `detail` and at the top (DECISIONS: the live routes' errors).
fn elevenlabs_envelope(error: &ApiError) -> Value {
    let mut detail = json!({
        "status": elevenlabs_status(error.code),
        "message": error.detail,
        "code": error.code.as_str(),
    });
    if let Some(param) = &error.param {
        detail["param"] = json!(param);
    }
    json!({ "detail": detail, "code": error.code.as_str() })
}

/// Deepgram's error members (`err_code`, `err_msg`, `request_id`) added to the problem
/// document, which keeps voiced's `code` (DECISIONS: the live routes' errors).
fn deepgram_envelope(body: &mut Value, error: &ApiError, request_id: Option<&str>) {
    let err_code = match error.code {
        ErrorCode::InvalidApiKey => "INVALID_AUTH",
        ErrorCode::InsufficientScope
        | ErrorCode::ProPlanRequired
        | ErrorCode::FeatureNotEnabled => "INSUFFICIENT_PERMISSIONS",
        ErrorCode::RateLimitExceeded | ErrorCode::QuotaExhausted => "TOO_MANY_REQUESTS",
        ErrorCode::InvalidRequest => "Bad Request",
        _ => "INTERNAL_SERVER_ERROR",
    };
    body["err_code"] = json!(err_code);
    body["err_msg"] = json!(error.detail);
    body["request_id"] = json!(request_id.unwrap_or_default());
}

/// An error that ends a streamed answer of OpenAI's dialect after it began (the status is sent
/// already): the envelope as an event, `{"type": "error", "error": {...}}`, which OpenAI's SDKs
/// raise as an API error.
pub fn openai_stream_error(error: &ApiError) -> Value {
    let links = ErrorLinks {
        errors_url: String::new(),
        billing_url: String::new(),
        console_url: String::new(),
    };
    let mut event = openai_envelope(error, &links);
    event["type"] = json!("error");
    event
}

fn openai_envelope(error: &ApiError, links: &ErrorLinks) -> Value {
    let mut inner = json!({
        "message": error.detail,
        "type": openai_type(error.code),
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
