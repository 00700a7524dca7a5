//! The agent interface: MCP over Streamable HTTP at `/mcp` (docs/agents.md).
//!
//! rmcp, the official Rust SDK, speaks the protocol: the 2026-07-28 revision (no `initialize`,
//! every request self-contained) and the 2025-11-25 handshake. Every revision is served
//! statelessly: no session lives in a process, so any `voiced serve` behind a load balancer
//! answers any request, and a restart loses nothing.
//!
//! A request passes, in order (docs/agents.md, "Admission"; details in [`auth`]):
//! 1. [`auth::gate`]: the credential (401 with the OAuth challenge), the plan (403
//!    `pro_plan_required`), then the message's first bytes (at most
//!    [`auth::SMALL_BODY_LIMIT`]), which name the method and tool and so the rate-limit class;
//! 2. the per-key rate limit, the same as on `/v1`;
//! 3. [`auth::admit`]: the called tool's scope (403 `insufficient_scope` with its challenge)
//!    and feature, then the body: at most [`auth::SMALL_BODY_LIMIT`] (413), except a
//!    `transcribe` call, which takes its recogniser place first and may be [`BODY_LIMIT`];
//! 4. rmcp: Host and Origin against the public base URL (403 otherwise), the protocol's own
//!    validation, then [`server::VoicedMcp`], whose tools call the same service functions as
//!    the REST handlers.

pub mod auth;
pub mod peek;
pub mod server;
pub mod tools;
pub mod url_audio;

use std::sync::Arc;

use axum::Router;
use axum::http::Uri;
use axum::middleware::from_fn_with_state;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use crate::http::rate_limit;

/// Where the agent interface is served.
pub const PATH: &str = "/mcp";

/// Largest request body: a `transcribe` call with as much base64 audio as
/// `POST /v1/transcriptions` takes, and the JSON-RPC around it. Every other message is held to
/// [`auth::SMALL_BODY_LIMIT`] by the gate; rmcp's own limit stays this.
pub const BODY_LIMIT: usize = crate::http::body::AUDIO_UPLOAD_LIMIT;

/// What the agent interface holds: the core, and the links its error results name.
#[derive(Clone)]
pub struct McpState {
    pub core: crate::service::Core,
    pub links: Arc<crate::http::error::ErrorLinks>,
}

impl std::ops::Deref for McpState {
    type Target = crate::service::Core;

    fn deref(&self) -> &crate::service::Core {
        &self.core
    }
}

/// The `/mcp` route with its gate and rate limit.
pub fn router(state: McpState) -> Router {
    let factory_state = state.clone();
    let service = StreamableHttpService::new(
        move || Ok(server::VoicedMcp::new(factory_state.clone())),
        Arc::new(NeverSessionManager::default()),
        transport_config(state.public_base_url()),
    );
    // Layers wrap what is above them: the gate runs first, then the rate limit, then admission
    // of the tool and its body.
    Router::new()
        .route_service(PATH, service)
        .layer(from_fn_with_state(state.clone(), auth::admit))
        .layer(from_fn_with_state(
            state.limits().clone(),
            rate_limit::rate_limit,
        ))
        .layer(from_fn_with_state(state.clone(), auth::gate))
        .layer(axum::middleware::map_response(own_format))
        .with_state(state)
}

/// The agent interface's own transport errors (JSON-RPC errors, 403 for a foreign Host, 405,
/// 406) are the protocol's answers: marked so that the error renderer leaves them as they are.
/// Refusals of the gate and the rate limit carry an `ApiError` and are rendered as everywhere.
async fn own_format(mut response: axum::response::Response) -> axum::response::Response {
    if response
        .extensions()
        .get::<Arc<crate::http::error::ApiError>>()
        .is_none()
    {
        response
            .extensions_mut()
            .insert(crate::http::error::OwnFormat);
    }
    response
}

/// Stateless for every protocol revision, JSON answers unless a tool sends progress (then the
/// answer is an event stream), and the DNS-rebinding guard set to the public base URL.
fn transport_config(public_base_url: &str) -> StreamableHttpServerConfig {
    let (host, origin) = host_and_origin(public_base_url);
    StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_allowed_hosts([host])
        .with_allowed_origins([origin])
        .with_max_request_body_bytes(BODY_LIMIT)
}

/// The Host a request must name (any port: a proxy in front may listen on another one than the
/// public URL's) and the one browser Origin accepted, scheme, host and port exactly.
fn host_and_origin(public_base_url: &str) -> (String, String) {
    let uri: Uri = public_base_url
        .parse()
        .expect("public_base_url was validated at start-up");
    let scheme = uri.scheme_str().unwrap_or("https").to_ascii_lowercase();
    let host = uri.host().unwrap_or("localhost").to_ascii_lowercase();
    let port = uri
        .port_u16()
        .unwrap_or(if scheme == "http" { 80 } else { 443 });
    (host.clone(), format!("{scheme}://{host}:{port}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_and_origins_come_from_the_public_url() {
        assert_eq!(
            host_and_origin("https://Voice.Example.com"),
            (
                "voice.example.com".into(),
                "https://voice.example.com:443".into()
            )
        );
        assert_eq!(
            host_and_origin("http://127.0.0.1:8080"),
            ("127.0.0.1".into(), "http://127.0.0.1:8080".into())
        );
        assert_eq!(
            host_and_origin("https://example.com:8443/voice"),
            ("example.com".into(), "https://example.com:8443".into())
        );
    }
}
