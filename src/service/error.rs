//! The one error type of the service core, shared by every transport (REST, the console, the
//! agent interface). A [`ServiceError`] carries a stable [`ErrorCode`] and what the client needs
//! to act on it; each transport renders it in its own format and picks its HTTP status (`http::error` writes
//! problem documents and OpenAI's envelope). Internal causes go to the log, never into `detail`.

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
    Conflict,
    /// Cancelling a generation that has already completed or failed.
    GenerationFinished,
    RateLimitExceeded,
    QuotaExhausted,
    KeyCeilingExceeded,
    NotFound,
    MethodNotAllowed,
    UnsupportedMediaType,
    PayloadTooLarge,
    InvalidSignature,
    RangeNotSatisfiable,
    /// Captions were asked of a capture made without timestamps.
    TimestampsUnavailable,
    /// The request's body did not arrive within `body_read_timeout_secs`.
    RequestTimeout,
    ServiceUnavailable,
    InternalError,
}

impl ErrorCode {
    pub const ALL: [ErrorCode; 22] = [
        ErrorCode::InvalidApiKey,
        ErrorCode::ProPlanRequired,
        ErrorCode::InsufficientScope,
        ErrorCode::FeatureNotEnabled,
        ErrorCode::InvalidRequest,
        ErrorCode::IdempotencyKeyReused,
        ErrorCode::IdempotencyKeyInUse,
        ErrorCode::Conflict,
        ErrorCode::GenerationFinished,
        ErrorCode::RateLimitExceeded,
        ErrorCode::QuotaExhausted,
        ErrorCode::KeyCeilingExceeded,
        ErrorCode::NotFound,
        ErrorCode::MethodNotAllowed,
        ErrorCode::UnsupportedMediaType,
        ErrorCode::PayloadTooLarge,
        ErrorCode::InvalidSignature,
        ErrorCode::RangeNotSatisfiable,
        ErrorCode::TimestampsUnavailable,
        ErrorCode::RequestTimeout,
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
            ErrorCode::Conflict => "conflict",
            ErrorCode::GenerationFinished => "generation_finished",
            ErrorCode::RateLimitExceeded => "rate_limit_exceeded",
            ErrorCode::QuotaExhausted => "quota_exhausted",
            ErrorCode::KeyCeilingExceeded => "key_ceiling_exceeded",
            ErrorCode::NotFound => "not_found",
            ErrorCode::MethodNotAllowed => "method_not_allowed",
            ErrorCode::UnsupportedMediaType => "unsupported_media_type",
            ErrorCode::PayloadTooLarge => "payload_too_large",
            ErrorCode::InvalidSignature => "invalid_signature",
            ErrorCode::RangeNotSatisfiable => "range_not_satisfiable",
            ErrorCode::TimestampsUnavailable => "timestamps_unavailable",
            ErrorCode::RequestTimeout => "request_timeout",
            ErrorCode::ServiceUnavailable => "service_unavailable",
            ErrorCode::InternalError => "internal_error",
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
            ErrorCode::Conflict => "Conflict",
            ErrorCode::GenerationFinished => "Generation already finished",
            ErrorCode::RateLimitExceeded => "Rate limit exceeded",
            ErrorCode::QuotaExhausted => "Audio allowance used up",
            ErrorCode::KeyCeilingExceeded => "Key spend ceiling reached",
            ErrorCode::NotFound => "Not found",
            ErrorCode::MethodNotAllowed => "Method not allowed",
            ErrorCode::UnsupportedMediaType => "Unsupported media type",
            ErrorCode::PayloadTooLarge => "Payload too large",
            ErrorCode::InvalidSignature => "Invalid signature",
            ErrorCode::RangeNotSatisfiable => "Range not satisfiable",
            ErrorCode::TimestampsUnavailable => "Capture made without timestamps",
            ErrorCode::RequestTimeout => "Request body too slow",
            ErrorCode::ServiceUnavailable => "Service unavailable",
            ErrorCode::InternalError => "Internal error",
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
pub struct ServiceError {
    pub code: ErrorCode,
    pub detail: String,
    pub param: Option<String>,
    pub required_scope: Option<Scope>,
    pub settings: Option<SettingsPage>,
    pub retry_after_secs: Option<u64>,
}

impl ServiceError {
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

    /// 403 `feature_not_enabled`: the account's plan does not include `feature`.
    pub fn feature_not_enabled(feature: crate::domain::Feature) -> Self {
        Self::new(
            ErrorCode::FeatureNotEnabled,
            format!(
                "This account's plan does not include {}; upgrading the plan enables it.",
                feature.as_str()
            ),
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

impl From<sqlx::Error> for ServiceError {
    fn from(err: sqlx::Error) -> Self {
        if database_unavailable(&err) {
            tracing::error!(error = %err, "database unavailable");
            ServiceError::unavailable(5)
        } else {
            ServiceError::internal(err)
        }
    }
}

/// Whether `err` means PostgreSQL cannot serve right now (the client should retry), rather than
/// a fault in the request or in our SQL: no connection to be had, the connection broke, or the
/// server is shutting down or starting (SQLSTATE class 08, 57P01–57P03, 53300).
pub fn database_unavailable(err: &sqlx::Error) -> bool {
    match err {
        sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::Protocol(_)
        | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(db) => db.code().is_some_and(|code| {
            code.starts_with("08") || matches!(&*code, "57P01" | "57P02" | "57P03" | "53300")
        }),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_failures_are_unavailable_not_internal() {
        let refused = sqlx::Error::Io(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
        assert_eq!(
            ServiceError::from(refused).code,
            ErrorCode::ServiceUnavailable
        );
        assert_eq!(
            ServiceError::from(sqlx::Error::PoolTimedOut).code,
            ErrorCode::ServiceUnavailable
        );
        assert_eq!(
            ServiceError::from(sqlx::Error::RowNotFound).code,
            ErrorCode::InternalError
        );
    }

    #[test]
    fn every_code_has_a_distinct_token() {
        let mut tokens: Vec<&str> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
        tokens.sort_unstable();
        tokens.dedup();
        assert_eq!(tokens.len(), ErrorCode::ALL.len());
    }
}
