//! Admission to the agent interface, as on `/v1`, before the body is read: who is calling, may
//! they call this tool, and how much of the message will be read.
//!
//! In order (docs/agents.md, "Admission"):
//! 1. [`gate`]: the credential → 401 `invalid_api_key` with
//!    `WWW-Authenticate: Bearer resource_metadata="…", scope="…"` (plus `error="invalid_token"`
//!    when a credential was sent), which is how an OAuth client finds the authorization server;
//! 2. [`gate`]: the plan → 403 `pro_plan_required`, nothing of the body read;
//! 3. [`gate`]: the message's first bytes, until [`peek::scan`] knows its method and tool (at
//!    most [`SMALL_BODY_LIMIT`]: the only part of a body read before the rate limit), which
//!    give the rate-limit class (a generating tool call is a write, anything else a read);
//! 4. the per-key rate limit, the same as on `/v1` (`http::rate_limit`) → 429;
//! 5. [`admit`]: the called tool's scope → 403 `insufficient_scope` with
//!    `WWW-Authenticate: Bearer error="insufficient_scope", scope="…", resource_metadata="…"`,
//!    and its plan feature → 403 `feature_not_enabled`;
//! 6. [`admit`]: the body. Every message but a `transcribe` call is read to at most
//!    [`SMALL_BODY_LIMIT`] (413 `payload_too_large` beyond it, reading stops there). A
//!    `transcribe` call first takes its place (`service::transcription::take_place`: 429 for an
//!    account at its cap, 503 for a full recogniser; the refused upload is drained, never
//!    buffered), then is read to [`super::BODY_LIMIT`] and must be one whose bulk is the
//!    `audio_base64` string (413 otherwise); the place goes to the tool in the request's
//!    extensions ([`ReservedPlace`]).
//!
//! So no message larger than [`SMALL_BODY_LIMIT`] is ever parsed into a JSON tree, except a
//! `transcribe` whose only large value is one string. The tools check plan, scope and feature
//! again themselves. The problem document bodies are written by `http::error::render_errors`,
//! as everywhere.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use serde::Deserialize;
use serde_json::value::RawValue;

use super::peek::{self, Head, Scan};
use super::tools;
use crate::domain::Scope;
use crate::http::auth::{
    AuthResource, credential_sent, resolve_principal, www_authenticate,
    www_authenticate_insufficient_scope,
};
use crate::http::error::{ApiError, ErrorCode};
use crate::http::json;
use crate::limits::RateClass;
use crate::mcp::McpState;
use crate::service::Principal;
use crate::service::principal::Requirement;
use crate::service::transcription::{self, Place};

/// Largest message other than a `transcribe` call, and the most of any message read before
/// the rate limit: 1 MiB.
pub const SMALL_BODY_LIMIT: usize = 1024 * 1024;

/// Bodies larger than this are parsed off the async workers.
const PARSE_INLINE_BYTES: usize = 256 * 1024;

/// The tool `transcribe` is admitted differently: a place first, then a large body.
const TRANSCRIBE: &str = "transcribe";

/// The recogniser place a `transcribe` call took at the gate, for the tool to use (once).
#[derive(Clone)]
pub struct ReservedPlace(Arc<Mutex<Option<Place>>>);

impl ReservedPlace {
    /// The place, the first time it is asked for.
    pub fn take(&self) -> Option<Place> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }
}

/// What the gate learnt of the message from its first bytes.
#[derive(Clone)]
struct Peeked(Head);

pub async fn gate(State(state): State<McpState>, request: Request, next: Next) -> Response {
    let principal = match resolve_principal(&state, request.headers(), AuthResource::Mcp).await {
        Ok(principal) => principal,
        Err(err) => return unauthenticated(&state, request.headers(), err),
    };
    tracing::Span::current().record("account_id", principal.account_id.as_str());
    // Every tool and method needs a plan, as every `/v1` route does: refused before any read.
    let (mut parts, body) = request.into_parts();
    if !principal.plan.allows_api() {
        discard(&state, body);
        return ApiError::pro_plan_required().into_response();
    }
    let (head, body) = if parts.method == Method::POST {
        match read_head(body).await {
            Ok(read) => read,
            Err(err) => return err.into_response(),
        }
    } else {
        (Head::default(), body)
    };
    let requirement = head.tool().and_then(tools::requirement);
    let class = match requirement {
        Some(requirement) if requirement.scope == Scope::VoiceGenerate => RateClass::Write,
        _ => RateClass::Read,
    };
    parts.extensions.insert(Arc::new(principal));
    parts.extensions.insert(class);
    if let Some(requirement) = requirement {
        parts.extensions.insert(requirement);
    }
    parts.extensions.insert(Peeked(head));
    next.run(Request::from_parts(parts, body)).await
}

/// Reads the body's first bytes until the scanner knows the method and tool, the body ends, or
/// [`SMALL_BODY_LIMIT`] bytes are held; returns what they name and the whole body again (those
/// bytes, then the rest unread).
async fn read_head(body: Body) -> Result<(Head, Body), ApiError> {
    let mut stream = body.into_data_stream();
    let mut prefix = Vec::new();
    let head = loop {
        if prefix.len() >= SMALL_BODY_LIMIT {
            break Head::default();
        }
        match stream.next().await {
            None => {
                break match peek::scan(&prefix) {
                    Scan::Done(head) => head,
                    Scan::NeedMore => Head::default(),
                };
            }
            Some(Err(_)) => return Err(json::unreadable()),
            Some(Ok(chunk)) => {
                prefix.extend_from_slice(&chunk);
                if let Scan::Done(head) = peek::scan(&prefix) {
                    break head;
                }
            }
        }
    };
    let first = futures_util::stream::once(std::future::ready(Ok::<_, axum::Error>(Bytes::from(
        prefix,
    ))));
    Ok((head, Body::from_stream(first.chain(stream))))
}

/// After the rate limit (as on `/v1`): the tool's scope and feature, then the body within its
/// limit, a `transcribe` call's place taken first.
pub async fn admit(State(state): State<McpState>, request: Request, next: Next) -> Response {
    let extensions = request.extensions();
    let (Some(principal), Some(Peeked(head))) = (
        extensions.get::<Arc<Principal>>().cloned(),
        extensions.get::<Peeked>().cloned(),
    ) else {
        return next.run(request).await;
    };
    if let Some(requirement) = extensions.get::<Requirement>()
        && let Err(err) = principal.authorize(*requirement)
    {
        return match err.code {
            ErrorCode::InsufficientScope => insufficient_scope(&state, requirement.scope, err),
            _ => err.into_response(),
        };
    }
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let (mut parts, body) = request.into_parts();
    let transcribe = head.tool() == Some(TRANSCRIBE);
    let limit = if transcribe {
        super::BODY_LIMIT
    } else {
        SMALL_BODY_LIMIT
    };
    if declared_length(&parts.headers).is_some_and(|length| length > limit) {
        discard(&state, body);
        return too_large(transcribe).into_response();
    }
    let body = if transcribe {
        // Admission before work, as on `/v1/transcriptions`: the place is taken before the
        // audio is read; a refused upload is answered at once and drained behind the answer
        // (never buffered).
        let place = match transcription::take_place(&state, &principal).await {
            Ok(place) => place,
            Err(err) => {
                discard(&state, body);
                return err.into_response();
            }
        };
        let bytes = match read_within(&state, &parts.headers, body, limit, transcribe).await {
            Ok(bytes) => bytes,
            Err(err) => return err.into_response(),
        };
        if let Err(err) = check_transcribe(&bytes).await {
            return err.into_response();
        }
        parts
            .extensions
            .insert(ReservedPlace(Arc::new(Mutex::new(Some(place)))));
        bytes
    } else {
        let bytes = match read_within(&state, &parts.headers, body, limit, transcribe).await {
            Ok(bytes) => bytes,
            Err(err) => return err.into_response(),
        };
        // The whole message, parsed for its method and tool (borrowed: no tree), must call the
        // tool its first bytes named: the rate-limit class and the scope were chosen by them.
        // (rmcp answers a tool it does not know.)
        if let Some(tool) = called_tool(&bytes).await
            && tools::requirement(&tool).is_some()
            && head.tool() != Some(tool.as_str())
        {
            return ApiError::new(
                ErrorCode::InvalidRequest,
                "The message does not name its method and tool once, before its arguments.",
            )
            .into_response();
        }
        bytes
    };
    next.run(Request::from_parts(parts, Body::from(body))).await
}

/// The `Content-Length` the client declared, if any.
fn declared_length(headers: &HeaderMap) -> Option<usize> {
    headers
        .get(header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
}

fn too_large(transcribe: bool) -> ApiError {
    let detail = if transcribe {
        "A transcribe call is at most 34 MiB: 25 MiB of audio as base64 and the JSON-RPC around it."
    } else {
        "An MCP message is at most 1 MiB, except a transcribe call (up to 25 MiB of audio as base64)."
    };
    ApiError::new(ErrorCode::PayloadTooLarge, detail)
}

/// The body, at most `limit` bytes. Beyond the limit: 413, what was read is dropped, and the
/// rest is discarded behind the answer ([`discard`]).
async fn read_within(
    state: &McpState,
    headers: &HeaderMap,
    body: Body,
    limit: usize,
    transcribe: bool,
) -> Result<Bytes, ApiError> {
    let expected = declared_length(headers).unwrap_or(0).min(limit);
    let mut stream = body.into_data_stream();
    let mut read = Vec::with_capacity(expected);
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|_| json::unreadable())?;
        if read.len() + chunk.len() > limit {
            drop(read);
            discard(state, Body::from_stream(stream));
            return Err(too_large(transcribe));
        }
        read.extend_from_slice(&chunk);
    }
    Ok(Bytes::from(read))
}

/// A refused body is not read: it is thrown away behind the answer, at most
/// [`super::BODY_LIMIT`] bytes of it and within the request time limit, nothing kept (a client
/// still sending would otherwise see its connection reset instead of the answer).
fn discard(state: &McpState, body: Body) {
    crate::http::body::discard(body, super::BODY_LIMIT, state.request_timeout());
}

/// A `tools/call` of `transcribe` whose arguments' values are read as raw text (borrowed, no
/// tree); every other member is stepped over.
#[derive(Deserialize)]
struct TranscribeCall<'a> {
    #[serde(borrow)]
    method: Cow<'a, str>,
    #[serde(borrow)]
    params: TranscribeParams<'a>,
}

#[derive(Deserialize)]
struct TranscribeParams<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(borrow, default)]
    arguments: Option<BTreeMap<Cow<'a, str>, &'a RawValue>>,
}

/// A `transcribe` message larger than [`SMALL_BODY_LIMIT`] is admitted only when it is what its
/// first bytes said, a `tools/call` of `transcribe`, and all of it but its `audio_base64` string
/// fits in [`SMALL_BODY_LIMIT`]: what rmcp then parses is small, beside that one string.
async fn check_transcribe(body: &Bytes) -> Result<(), ApiError> {
    fn small_beside_audio(body: &[u8]) -> bool {
        let Ok(call) = serde_json::from_slice::<TranscribeCall<'_>>(body) else {
            return false;
        };
        if call.method != "tools/call" || call.params.name != TRANSCRIBE {
            return false;
        }
        let audio = call
            .params
            .arguments
            .as_ref()
            .and_then(|arguments| arguments.get("audio_base64"))
            .map(|raw| raw.get())
            .filter(|raw| raw.starts_with('"'))
            .map_or(0, str::len);
        body.len() - audio <= SMALL_BODY_LIMIT
    }
    if body.len() <= SMALL_BODY_LIMIT {
        return Ok(());
    }
    let owned = body.clone();
    let small = tokio::task::spawn_blocking(move || small_beside_audio(&owned))
        .await
        .map_err(ApiError::internal)?;
    if small {
        Ok(())
    } else {
        Err(ApiError::new(
            ErrorCode::PayloadTooLarge,
            "An MCP message larger than 1 MiB must be a transcribe call whose audio_base64 string carries the bulk of it.",
        ))
    }
}

/// 401 with the challenge that leads an OAuth client to the protected-resource metadata.
fn unauthenticated(state: &McpState, headers: &HeaderMap, err: ApiError) -> Response {
    if err.code != ErrorCode::InvalidApiKey {
        return err.into_response();
    }
    let challenge = www_authenticate(
        state.public_base_url(),
        AuthResource::Mcp,
        credential_sent(headers),
    );
    let mut response = err.into_response();
    response
        .headers_mut()
        .insert(header::WWW_AUTHENTICATE, challenge);
    response
}

/// 403 naming the scope the tool needs.
fn insufficient_scope(state: &McpState, scope: Scope, err: ApiError) -> Response {
    let challenge =
        www_authenticate_insufficient_scope(state.public_base_url(), AuthResource::Mcp, scope);
    let mut response = err.into_response();
    response
        .headers_mut()
        .insert(header::WWW_AUTHENTICATE, challenge);
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
    if body.len() <= PARSE_INLINE_BYTES {
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
