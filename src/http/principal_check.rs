//! The answer of a read made with a principal from memory leaves only once the read's own
//! statement has confirmed that principal (`service::principal_cache`).
//!
//! Runs after the rate limit (which needs only the key id, the same whatever the key's state)
//! and before the plan, scope and feature checks, so that a refusal made from memory is
//! re-examined too: a key whose plan or scopes were just granted is served on the very next
//! request, one whose key was revoked refused.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::auth;
use crate::domain::SecretHash;
use crate::service::Core;
use crate::service::principal_cache::{CredentialCheck, Outcome};

/// Runs the request; when its principal came from memory and no statement confirmed it (a
/// refusal, a 4xx before any query, a changed fingerprint), or a statement found the
/// credential changed, the answer is dropped, the cache entry too, and the request runs again
/// with the principal looked up in the database.
pub async fn confirm_reads(State(state): State<Core>, request: Request, next: Next) -> Response {
    let Some(check) = request.extensions().get::<Arc<CredentialCheck>>().cloned() else {
        return next.run(request).await;
    };
    // Writes never start from memory; a read's body is empty (and not read).
    if !matches!(*request.method(), Method::GET | Method::HEAD) {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let first = next
        .clone()
        .run(Request::from_parts(parts.clone(), body))
        .await;
    match check.outcome() {
        Outcome::Confirmed => return first,
        Outcome::Unchecked if !check.from_memory() => return first,
        // The database failed: looking the key up would fail alike, after another wait.
        Outcome::Unchecked if first.status().is_server_error() => return first,
        Outcome::Unchecked | Outcome::Stale => {}
    }
    drop(first);
    crate::service::auth::forget(&state, check.credential());
    let credential = SecretHash(*check.credential());
    let (principal, fresh) = match auth::resolve_key(&state, &credential).await {
        Ok(resolved) => resolved,
        Err(err) => return err.into_response(),
    };
    let mut parts = parts;
    parts.extensions.insert(principal);
    parts.extensions.insert(fresh);
    next.run(Request::from_parts(parts, Body::empty())).await
}

/// A rate-limit refusal (429) of a principal from memory leaves only once the key is known to be
/// live: the credential comes before the rate limit in the order of checks, so a revoked key is
/// told 401, not to wait. Runs outside the rate limit; costs a lookup per such refusal only.
pub async fn confirm_refusals(State(state): State<Core>, request: Request, next: Next) -> Response {
    let check = request.extensions().get::<Arc<CredentialCheck>>().cloned();
    let response = next.run(request).await;
    match check {
        Some(check)
            if check.from_memory()
                && response.status() == StatusCode::TOO_MANY_REQUESTS
                && check.outcome() != Outcome::Confirmed =>
        {
            let credential = SecretHash(*check.credential());
            match auth::resolve_key(&state, &credential).await {
                Ok(_) => response,
                Err(err) => err.into_response(),
            }
        }
        _ => response,
    }
}
