//! The console's file uploads (`/console/playground/transcribe`, `/console/voices/clone`), read
//! only after they were admitted (docs/console.md, "Uploads"): the handler asks the core for its
//! places (plan, feature, allowance, the recogniser's or the account's upload slot) before this
//! reads a byte of the body. Then the form is read in its order: the CSRF token must come before
//! the file (the `csrf_token` form part, which the console's forms put first, or the
//! `X-CSRF-Token` header) and is checked before the first byte of the file is read; the file is
//! read once, chunk by chunk, into one buffer and refused past its bound; every other field is
//! a short text, bounded too.

use std::collections::HashMap;

use axum::extract::multipart::{Field, Multipart, MultipartError};
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;

use super::page::PageError;
use super::session::check_csrf;
use crate::service::{ErrorCode, ServiceError};
use tower_sessions::Session;

/// The longest text field of an upload form, in bytes.
const MAX_TEXT_BYTES: usize = 16 * 1024;

/// The header that may carry the CSRF token instead of the form part.
pub const CSRF_HEADER: &str = "x-csrf-token";

/// An upload form as read: its text fields by name, and its file.
#[derive(Debug, Default)]
pub struct UploadForm {
    pub fields: HashMap<String, String>,
    pub file: Vec<u8>,
}

impl UploadForm {
    /// A text field (empty when absent).
    pub fn text(&self, name: &str) -> String {
        self.fields.get(name).cloned().unwrap_or_default()
    }
}

/// What a file field is called and how large it may be, and what a refusal about it says.
pub struct FileRule {
    pub field: &'static str,
    pub max_bytes: usize,
    /// The 413's sentence.
    pub too_large: String,
}

/// An upload refused before it was read: answered at once, its body read and thrown away
/// behind the answer (at most `limit` bytes, for at most `within`), never kept, so that the
/// browser reads the answer instead of a connection cut under its upload.
pub fn refuse(request: Request, limit: usize, within: std::time::Duration) {
    crate::http::body::discard(request.into_body(), limit, within);
}

/// Reads an admitted upload form (see the module): a file before a valid CSRF token, a wrong
/// token, a body that is not `multipart/form-data` or cannot be read, a file past its bound
/// are refused, and the file's bytes are never read before the token is checked.
pub async fn read<S: Send + Sync>(
    session: &Session,
    request: Request,
    state: &S,
    rule: &FileRule,
) -> Result<UploadForm, PageError> {
    let token_header = request
        .headers()
        .get(CSRF_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let mut multipart = Multipart::from_request(request, state).await.map_err(|_| {
        ServiceError::invalid(rule.field, "The form is sent as multipart/form-data.")
    })?;
    match read_fields(session, token_header, &mut multipart, rule).await {
        Ok(form) => Ok(form),
        Err(refused) => {
            // Answered at once; what is left of the body is read and thrown away behind the
            // answer, so that the browser shows it.
            tokio::spawn(async move {
                let drain = async move {
                    while let Ok(Some(mut field)) = multipart.next_field().await {
                        while let Ok(Some(_)) = field.chunk().await {}
                    }
                };
                let _ = tokio::time::timeout(std::time::Duration::from_secs(120), drain).await;
            });
            Err(refused)
        }
    }
}

async fn read_fields(
    session: &Session,
    token_header: Option<String>,
    multipart: &mut Multipart,
    rule: &FileRule,
) -> Result<UploadForm, PageError> {
    let unreadable = |e: MultipartError| -> PageError {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            too_large(rule).into()
        } else {
            ServiceError::invalid(rule.field, "The form could not be read; send it again.").into()
        }
    };
    let mut verified = match token_header {
        Some(token) => {
            check_csrf(session, &token).await?;
            true
        }
        None => false,
    };
    let mut form = UploadForm::default();
    while let Some(mut field) = multipart.next_field().await.map_err(unreadable)? {
        let name = field.name().unwrap_or_default().to_owned();
        if name == rule.field {
            if !verified {
                // The token comes first: a file before it is never read.
                return Err(PageError::Csrf);
            }
            form.file = read_bounded(&mut field, rule.max_bytes)
                .await
                .map_err(unreadable)?
                .ok_or_else(|| too_large(rule))?;
            continue;
        }
        let text = read_bounded(&mut field, MAX_TEXT_BYTES)
            .await
            .map_err(unreadable)?
            .ok_or_else(|| {
                ServiceError::new(
                    ErrorCode::PayloadTooLarge,
                    format!("The field {name} is longer than {MAX_TEXT_BYTES} bytes."),
                )
                .with_param(name.clone())
            })?;
        let text = String::from_utf8(text)
            .map_err(|_| ServiceError::invalid(name.clone(), "The field is not UTF-8 text."))?;
        if name == "csrf_token" && !verified {
            check_csrf(session, &text).await?;
            verified = true;
        }
        form.fields.insert(name, text);
    }
    if !verified {
        return Err(PageError::Csrf);
    }
    Ok(form)
}

/// The field's bytes, or `None` once they pass `max` (the rest is not read).
async fn read_bounded(
    field: &mut Field<'_>,
    max: usize,
) -> Result<Option<Vec<u8>>, MultipartError> {
    let mut bytes = Vec::new();
    while let Some(chunk) = field.chunk().await? {
        if bytes.len() + chunk.len() > max {
            return Ok(None);
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(Some(bytes))
}

fn too_large(rule: &FileRule) -> ServiceError {
    ServiceError::new(ErrorCode::PayloadTooLarge, rule.too_large.clone()).with_param(rule.field)
}
