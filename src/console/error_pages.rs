//! `GET /errors/<code>`: one page per code of [`ErrorCode::ALL`], the `type` URL of every
//! problem document (default `errors_url`). The texts are matched exhaustively on the code, so
//! a new code does not compile until it has its page.

use askama::Template;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::Response;

use super::page::{Chrome, ok, render};
use crate::http::error::HttpStatus;
use crate::service::ErrorCode;

/// What a code means and what to do about it.
pub struct CodeDoc {
    pub meaning: &'static str,
    pub remedy: &'static str,
    /// Members (or headers) beyond type, title, status, detail, instance and code.
    pub extras: &'static [&'static str],
}

pub fn doc(code: ErrorCode) -> CodeDoc {
    let (meaning, remedy, extras): (&str, &str, &[&str]) = match code {
        ErrorCode::InvalidApiKey => (
            "The request carried no API key or OAuth access token, or one that is unknown, \
             expired or revoked, or a token not issued for this API.",
            "Send a live key in the x-api-key header or as Authorization: Bearer <key>. Keys are \
             made in the console (API keys tab); a revoked or lost key is replaced, not recovered. \
             An OAuth client refreshes its token, or asks the user again.",
            &[
                "WWW-Authenticate: Bearer resource_metadata=\"…\" (header; error=\"invalid_token\" when a credential was sent)",
            ],
        ),
        ErrorCode::ProPlanRequired => (
            "The account has no active subscription or trial, so every /v1 request is refused. \
             Nothing is revoked or deleted.",
            "Get a plan (see settings_url, the billing page). The same keys work again on the \
             next request.",
            &["settings_url"],
        ),
        ErrorCode::InsufficientScope => (
            "The key lacks the scope this operation needs.",
            "Use a key with the scope named in required_scope, or create one in the console.",
            &["required_scope"],
        ),
        ErrorCode::FeatureNotEnabled => (
            "The account's plan does not include this capability.",
            "Only a plan that includes it resolves this; see settings_url.",
            &["settings_url"],
        ),
        ErrorCode::InvalidRequest => (
            "A parameter is missing, malformed, out of range or unsupported (for example a \
             temperature for an engine that takes none).",
            "Fix the field named in param as detail says, and send the request again.",
            &["param (when one field is at fault)"],
        ),
        ErrorCode::IdempotencyKeyReused => (
            "This Idempotency-Key was used before with a different request body.",
            "Use a new key for a different request; reuse a key only to retry the same request.",
            &[],
        ),
        ErrorCode::IdempotencyKeyInUse => (
            "The first request with this Idempotency-Key is still running.",
            "Wait for it to finish, then retry: the retry gets the first request's answer.",
            &[],
        ),
        ErrorCode::Conflict => (
            "The request conflicts with what the account has: a voice profile with the same \
             name, the most webhook endpoints or cloned voices it may keep, or a generation \
             whose audio cannot be deleted because it is still generating.",
            "Choose another name or use the existing resource (GET /v1/voices lists them), \
             delete one first, or cancel the generation (or wait for it) before deleting its \
             audio.",
            &["param (the field that collides)"],
        ),
        ErrorCode::GenerationFinished => (
            "The generation asked to be cancelled had already completed or failed: there is \
             nothing left to stop, and a completed one stays charged.",
            "Read it with GET /v1/generations/{id}; delete nothing, retry nothing.",
            &["param (generationId)"],
        ),
        ErrorCode::RateLimitExceeded => (
            "The key made more requests than its rate policy allows (600 writes per hour, 300 \
             reads per minute), or the account has too many generations pending.",
            "Wait the seconds in Retry-After; the RateLimit header shows what remains.",
            &[
                "Retry-After (header)",
                "RateLimit, RateLimit-Policy (headers)",
            ],
        ),
        ErrorCode::QuotaExhausted => (
            "The account's generated audio this month has reached the plan's allowance (120 \
             minutes).",
            "Wait for the next calendar month (UTC) or change the plan; see settings_url.",
            &["settings_url"],
        ),
        ErrorCode::KeyCeilingExceeded => (
            "This key's generated audio this month has reached the ceiling set on the key.",
            "Raise or remove the key's ceiling in the console (settings_url); the key works \
             again on its next request. Other keys are not affected.",
            &["settings_url"],
        ),
        ErrorCode::NotFound => (
            "There is no such resource, or it belongs to another account (the two answers are \
             the same).",
            "Check the id or the path.",
            &[],
        ),
        ErrorCode::MethodNotAllowed => (
            "The path exists but does not take this HTTP method.",
            "Use one of the methods in the Allow header.",
            &["Allow (header)"],
        ),
        ErrorCode::UnsupportedMediaType => (
            "The body is not sent as application/json.",
            "Send JSON with Content-Type: application/json.",
            &[],
        ),
        ErrorCode::PayloadTooLarge => (
            "The body is larger than the endpoint accepts (25 MiB of audio for transcriptions, \
             1 MiB elsewhere).",
            "Send less: shorter audio or text.",
            &[],
        ),
        ErrorCode::RangeNotSatisfiable => (
            "An audio download asked for a byte range that starts past the end of the file. The \
             answer's Content-Range header gives the file's length (bytes */<length>).",
            "Ask for a range inside the file, or download it whole (no Range header).",
            &["Content-Range (header)"],
        ),
        ErrorCode::TimestampsUnavailable => (
            "Captions (GET /v1/captures/{id}/captions) were asked of a capture made without \
             timestamps: it stores no segments to time the cues.",
            "Transcribe the clip again with \"timestamps\": \"segment\" or \"word\" \
             (POST /v1/transcriptions), or response_format verbose_json, srt or vtt (POST \
             /v1/audio/transcriptions), and ask the new capture for its captions.",
            &[],
        ),
        ErrorCode::RequestTimeout => (
            "The request's body did not arrive within the time the server allows after its \
             headers (body_read_timeout_secs, 120 s by default); the connection was closed.",
            "Send the body at once (not trickled), or over a faster link; then retry.",
            &[],
        ),
        ErrorCode::InvalidSignature => (
            "The signed audio link is malformed or expired (links last about 15 minutes).",
            "Poll the generation again for a fresh audio_url.",
            &[],
        ),
        ErrorCode::ServiceUnavailable => (
            "The service cannot take the request right now: the database is unreachable, the \
             recogniser's queue is full, the request ran past the server's time limit, or the \
             server is shutting down. Nothing was charged for a request answered this way.",
            "Retry after the seconds in Retry-After.",
            &["Retry-After (header)"],
        ),
        ErrorCode::InternalError => (
            "Something failed on the service's side.",
            "Retry later; if it persists, report the X-Request-Id of the response.",
            &[],
        ),
    };
    CodeDoc {
        meaning,
        remedy,
        extras,
    }
}

pub struct CodeRow {
    pub code: &'static str,
    pub status: u16,
    pub title: &'static str,
}

#[derive(Template)]
#[template(path = "errors/code.html")]
struct CodePage {
    chrome: Chrome,
    code: &'static str,
    status: u16,
    title: &'static str,
    doc: CodeDoc,
}

#[derive(Template)]
#[template(path = "errors/index.html")]
struct IndexPage {
    chrome: Chrome,
    codes: Vec<CodeRow>,
    unknown: String,
}

fn index(status: StatusCode, unknown: String) -> Response {
    let codes = ErrorCode::ALL
        .iter()
        .map(|c| CodeRow {
            code: c.as_str(),
            status: c.status().as_u16(),
            title: c.title(),
        })
        .collect();
    render(
        status,
        &IndexPage {
            chrome: Chrome::anonymous(String::new()),
            codes,
            unknown,
        },
    )
}

pub async fn list() -> Response {
    index(StatusCode::OK, String::new())
}

/// The page of one code; an unknown code gets the list with 404.
pub async fn page(Path(code): Path<String>) -> Response {
    match ErrorCode::ALL.iter().find(|c| c.as_str() == code) {
        Some(&c) => ok(&CodePage {
            chrome: Chrome::anonymous(String::new()),
            code: c.as_str(),
            status: c.status().as_u16(),
            title: c.title(),
            doc: doc(c),
        }),
        None => index(StatusCode::NOT_FOUND, code),
    }
}
