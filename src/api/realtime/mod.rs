//! OpenAI's realtime transcription: `GET /v1/realtime?intent=transcription` upgraded to a
//! WebSocket. The door opens a session of the core before it upgrades (every refusal is an HTTP
//! answer in OpenAI's error envelope with voiced's `code`), then translates OpenAI's client
//! events into [`LiveInput`](live::LiveInput)s (`session.update` → a checked
//! [`Tuning`](live::Tuning), `input_audio_buffer.*` → audio, Finalize, Clear) and the session's
//! events into OpenAI's server events (speech started and stopped, `committed`, transcription
//! `delta` and `completed`). The rules are the core's (`service::live`);
//! docs/live-transcription.md has the wire and the choices.
//!
//! The door's parts: `config` (the session as configured, echoed in GA and beta shapes),
//! `update` (reading `session.update` and `transcription_session.update`), `conversation`
//! (client events in; the items, their deltas and completions out), `socket` (the serving
//! loop). This file: the route, the browser's credential, the query and the upgrade.

mod config;
mod conversation;
mod socket;
mod update;

use std::sync::Arc;

use axum::Extension;
use axum::Router;
use axum::extract::ws::{WebSocketUpgrade, rejection::WebSocketUpgradeRejection};
use axum::extract::{RawQuery, Request, State};
use axum::http::{HeaderValue, header};
use axum::middleware::{Next, from_fn};
use axum::response::Response;
use axum::routing::get;

use self::config::Config;
use super::openai_transcriptions::check_model;
use crate::http;
use crate::http::auth::Principal;
use crate::http::error::ApiError;
use crate::service::Core;
use crate::service::live;
use crate::service::operations::Operation;

/// The largest client event: 1 MiB of JSON (about 768 KiB of audio), handed to the session in
/// pieces of at most [`live::MAX_AUDIO_MESSAGE`].
const MAX_EVENT: usize = 1024 * 1024;
/// The browser's credential: the subprotocol `openai-insecure-api-key.<key>` beside `realtime`.
const KEY_PROTOCOL: &str = "openai-insecure-api-key.";

/// The route with its own stack, outermost first: the browser's credential form →
/// authenticate (always looked up; the upgrade counts as one write) → rate limit → the
/// operation's requirement (`Operation::Transcribe`) → the handler.
pub fn router(core: Core) -> Router<Core> {
    let routes = Router::new().route("/v1/realtime", get(realtime));
    http::auth::writing_routes(routes, &core, Operation::Transcribe.requirement())
        .layer(from_fn(protocol_credential))
}

/// Browsers cannot set headers on a WebSocket: OpenAI's browser clients offer the subprotocols
/// `realtime, openai-insecure-api-key.<key>`; the key becomes `Authorization: Bearer` when no
/// other credential was sent.
async fn protocol_credential(mut request: Request, next: Next) -> Response {
    let headers = request.headers_mut();
    if !http::auth::credential_sent(headers) {
        let key = headers
            .get(header::SEC_WEBSOCKET_PROTOCOL)
            .and_then(|v| v.to_str().ok())
            .and_then(|offered| {
                offered
                    .split(',')
                    .map(str::trim)
                    .find_map(|p| p.strip_prefix(KEY_PROTOCOL))
                    .map(str::to_owned)
            });
        if let Some(value) = key.and_then(|k| HeaderValue::from_str(&format!("Bearer {k}")).ok()) {
            headers.insert(header::AUTHORIZATION, value);
        }
    }
    next.run(request).await
}

/// `intent` must be `transcription` (a conversation session is not something voiced holds);
/// `model`, when sent, an OpenAI transcription model or the installed recogniser.
fn parse_query(raw: Option<&str>, installed: &str) -> Result<Option<String>, ApiError> {
    // Percent-decoded as every dialect door reads its query (never a refusal in itself).
    let pairs: Vec<(String, String)> =
        url::form_urlencoded::parse(raw.unwrap_or_default().as_bytes())
            .into_owned()
            .collect();
    let value = |name: &str| {
        pairs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    };
    if value("intent") != Some("transcription") {
        return Err(ApiError::invalid(
            "intent",
            "only transcription sessions are served here: connect with ?intent=transcription",
        ));
    }
    match value("model") {
        None => Ok(None),
        Some(model) => {
            check_model(Some(model), installed)?;
            Ok(Some(model.to_owned()))
        }
    }
}

/// OpenAI's realtime transcription: `GET /v1/realtime?intent=transcription` upgraded to a
/// WebSocket of OpenAI's realtime events (`session.update`, `input_audio_buffer.append` /
/// `commit` / `clear` in; `session.created`, speech started and stopped, `…transcription.delta`
/// and `.completed`, `error` out; GA and beta names), the finals stored as one capture
/// (`source: api`). Credentials: `Authorization: Bearer <key>`, `x-api-key`, or the subprotocols
/// `realtime, openai-insecure-api-key.<key>`. Refusals come before the upgrade, in OpenAI's
/// error envelope with voiced's `code`.
#[utoipa::path(get, path = "/v1/realtime", tag = "live",
    security(("api_key" = []), ("bearer" = [])),
    params(
        ("intent" = String, Query, pattern = "^transcription$", description = "`transcription` (a conversation session is not offered)"),
        ("model" = Option<String>, Query, description = "`whisper-1`, `gpt-4o-transcribe`, `gpt-4o-mini-transcribe`, `gpt-transcribe` or the installed recogniser: the server's recogniser answers"),
    ),
    responses(
        (status = 101, description = "Switching Protocols: the session's WebSocket (docs/live.md)"),
        (status = 400, description = "`invalid_request` naming `intent`, `model`, or `upgrade` (no upgrade headers)", body = crate::http::models::OpenAiError),
        (status = 401, description = "`invalid_api_key`", body = crate::http::models::OpenAiError),
        (status = 403, description = "`pro_plan_required`, `insufficient_scope` (needs `voice:generate`) or `feature_not_enabled`", body = crate::http::models::OpenAiError),
        (status = 429, description = "`rate_limit_exceeded` (the upgrade counts as one write; see `Retry-After`)", body = crate::http::models::OpenAiError),
        (status = 503, description = "`service_unavailable`: every live or recogniser place is taken, or no model is installed", body = crate::http::models::OpenAiError),
    ))]
pub async fn realtime_document() {}

/// `GET /v1/realtime`: the upgrade, once the session is open.
async fn realtime(
    State(core): State<Core>,
    Extension(principal): Extension<Arc<Principal>>,
    RawQuery(raw): RawQuery,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Result<Response, ApiError> {
    let installed = crate::service::transcription::model_name(&core);
    let model = parse_query(raw.as_deref(), &installed)?;
    let upgrade = upgrade.map_err(|_| {
        ApiError::invalid(
            "upgrade",
            "GET /v1/realtime is a WebSocket: send the upgrade headers",
        )
    })?;
    let config = Config::new(model.unwrap_or_else(|| "gpt-4o-transcribe".to_owned()));
    let session = live::open(&core, &principal, config.options()).await?;
    Ok(upgrade
        .protocols(["realtime"])
        .max_message_size(MAX_EVENT)
        .max_frame_size(MAX_EVENT)
        .on_upgrade(move |socket| socket::serve(socket, session, config, installed)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_needs_the_transcription_intent_and_a_known_model() {
        assert_eq!(
            parse_query(
                Some("intent=transcription&model=gpt-4o-mini-transcribe"),
                "whisper-base"
            )
            .unwrap()
            .as_deref(),
            Some("gpt-4o-mini-transcribe")
        );
        assert!(
            parse_query(Some("intent=transcription"), "whisper-base")
                .unwrap()
                .is_none()
        );
        for (query, param) in [
            ("model=gpt-realtime", "intent"),
            ("intent=conversation", "intent"),
            ("intent=transcription&model=gpt-realtime", "model"),
        ] {
            let err = parse_query(Some(query), "whisper-base").unwrap_err();
            assert_eq!(err.param.as_deref(), Some(param), "{query}");
        }
    }
}
