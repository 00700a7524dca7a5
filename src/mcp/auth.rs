//! The gate in front of the MCP transport: who is calling, and may they call this tool.
//!
//! - No credential, or one that resolves to nobody → 401 `invalid_api_key` with
//!   `WWW-Authenticate: Bearer resource_metadata="…", scope="…"` (plus `error="invalid_token"`
//!   when a credential was sent), which is how an OAuth client finds the authorization server.
//! - A `tools/call` whose tool needs a scope the credential lacks → (after the rate limit, in
//!   [`scope`]) 403 `insufficient_scope` with
//!   `WWW-Authenticate: Bearer error="insufficient_scope", scope="…", resource_metadata="…"`.
//!   The body is read (it must be anyway) and only the method and tool name are looked at. The
//!   tools check the scope again themselves, so a body this peek cannot read is still refused.
//! - Everything else passes, with the principal in the request's extensions (rmcp hands them to
//!   the tools) and the rate-limit class of the call: a generating tool call counts as a write,
//!   anything else as a read.
//!
//! The problem document bodies are written by `http::error::render_errors`, as everywhere.

use std::borrow::Cow;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::tools;
use crate::domain::Scope;
use crate::http::AppState;
use crate::http::auth::{AuthResource, resolve_principal};
use crate::http::error::{ApiError, ErrorCode};
use crate::http::json;
use crate::http::rate_limit::RateClass;
use crate::service::Principal;
use crate::service::principal::Requirement;

/// Bodies larger than this are peeked at off the async workers.
const PEEK_INLINE_BYTES: usize = 256 * 1024;

pub async fn gate(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let principal = match resolve_principal(&state, request.headers(), AuthResource::Mcp).await {
        Ok(principal) => principal,
        Err(err) => return unauthenticated(&state, request.headers(), err),
    };
    tracing::Span::current().record("account_id", principal.account_id.as_str());
    let (mut parts, body) = request.into_parts();
    let body = if parts.method == Method::POST {
        match axum::body::to_bytes(body, super::BODY_LIMIT).await {
            Ok(bytes) => bytes,
            Err(err) => {
                let too_large = err.into_inner().is::<http_body_util::LengthLimitError>();
                let err = if too_large {
                    json::too_large()
                } else {
                    json::unreadable()
                };
                return err.into_response();
            }
        }
    } else {
        Bytes::new()
    };
    let tool = called_tool(&body).await;
    let requirement = tool.as_deref().and_then(tools::requirement);
    let class = match requirement {
        Some(requirement) if requirement.scope == Scope::VoiceGenerate => RateClass::Write,
        _ => RateClass::Read,
    };
    parts.extensions.insert(Arc::new(principal));
    parts.extensions.insert(class);
    if let Some(requirement) = requirement {
        parts.extensions.insert(requirement);
    }
    next.run(Request::from_parts(parts, Body::from(body))).await
}

/// After the rate limit (as on `/v1`): a tool call whose tool needs a scope the credential
/// lacks → 403 with the challenge naming that scope. Plan and feature refusals are left to the
/// tool, which answers them as tool errors.
pub async fn scope(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let extensions = request.extensions();
    if let (Some(principal), Some(requirement)) = (
        extensions.get::<Arc<Principal>>(),
        extensions.get::<Requirement>(),
    ) && let Err(err) = principal.authorize(*requirement)
        && err.code == ErrorCode::InsufficientScope
    {
        return insufficient_scope(&state, requirement.scope, err);
    }
    next.run(request).await
}

/// 401 with the challenge that leads an OAuth client to the protected-resource metadata.
fn unauthenticated(state: &AppState, headers: &HeaderMap, err: ApiError) -> Response {
    if err.code != ErrorCode::InvalidApiKey {
        return err.into_response();
    }
    let presented =
        headers.contains_key(header::AUTHORIZATION) || headers.contains_key("x-api-key");
    let error = if presented {
        "error=\"invalid_token\", "
    } else {
        ""
    };
    let challenge = format!(
        "Bearer {error}resource_metadata=\"{}\", scope=\"{} {}\"",
        super::resource_metadata_url(&state.public_base_url),
        Scope::VoiceRead,
        Scope::VoiceGenerate,
    );
    with_challenge(err.into_response(), &challenge)
}

/// 403 naming the scope the tool needs.
fn insufficient_scope(state: &AppState, scope: Scope, err: ApiError) -> Response {
    let challenge = format!(
        "Bearer error=\"insufficient_scope\", scope=\"{scope}\", resource_metadata=\"{}\"",
        super::resource_metadata_url(&state.public_base_url),
    );
    with_challenge(err.into_response(), &challenge)
}

fn with_challenge(mut response: Response, challenge: &str) -> Response {
    match HeaderValue::from_str(challenge) {
        Ok(value) => {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, value);
        }
        Err(_) => tracing::error!("public_base_url makes an invalid WWW-Authenticate header"),
    }
    response
}

/// The method and tool name of a JSON-RPC message; nothing else is decoded (the arguments are
/// skipped over, never copied).
#[derive(Deserialize)]
struct Peek<'a> {
    #[serde(borrow, default)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    params: Option<PeekParams<'a>>,
}

#[derive(Deserialize)]
struct PeekParams<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
}

/// The tool a `tools/call` body names; `None` for anything else (or anything unreadable, which
/// rmcp then refuses).
async fn called_tool(body: &Bytes) -> Option<String> {
    fn peek(body: &[u8]) -> Option<String> {
        let message: Peek<'_> = serde_json::from_slice(body).ok()?;
        if message.method.as_deref() != Some("tools/call") {
            return None;
        }
        message.params?.name.map(Cow::into_owned)
    }
    if body.len() <= PEEK_INLINE_BYTES {
        return peek(body);
    }
    let body = body.clone();
    tokio::task::spawn_blocking(move || peek(&body))
        .await
        .ok()
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn only_tool_calls_name_a_tool() {
        let call = Bytes::from_static(
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"speak","arguments":{"text":"hi","x":[1,{"y":2}]}}}"#,
        );
        assert_eq!(called_tool(&call).await.as_deref(), Some("speak"));
        let list = Bytes::from_static(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
        assert_eq!(called_tool(&list).await, None);
        for unreadable in [
            &b"not json"[..],
            b"[]",
            br#"{"method":"tools/call","params":[]}"#,
        ] {
            assert_eq!(called_tool(&Bytes::from_static(unreadable)).await, None);
        }
        let escaped =
            Bytes::from_static(br#"{"method":"tools/call","params":{"name":"spe\u0061k"}}"#);
        assert_eq!(called_tool(&escaped).await.as_deref(), Some("speak"));
    }
}
