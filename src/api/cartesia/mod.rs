//! Cartesia's speech dialect: the WebSocket `GET /tts/websocket`, which Pipecat's
//! `CartesiaTTSService` and LiveKit Agents' `cartesia.TTS` open. Each message names its
//! context's voice, model and output format, so the door opens the core's live speech session
//! with voices per context (`service::live_speech::open_per_context`), translates Cartesia's
//! messages into its inputs and its events into Cartesia's `chunk`, `timestamps`,
//! `flush_done`, `done` and `error` messages. Refusals at the upgrade are HTTP answers in
//! Cartesia's error shape with voiced's `code` (`http::error`). The decisions per field are
//! in docs/live-speech.md.

mod params;
mod socket;

use axum::Router;
use axum::extract::Request;
use axum::http::{HeaderValue, header};
use axum::middleware::{Next, from_fn};
use axum::response::Response;
use axum::routing::get;

use crate::http;
use crate::service::Core;
use crate::service::operations::Operation;
use crate::service::speech::Fields;

/// Field names of this dialect for the core's errors.
const FIELDS: Fields = Fields {
    text: "transcript",
    voice: "voice.id",
    temperature: "temperature",
    engine: "model_id",
};

/// The route with its own stack, outermost first: Cartesia's credential forms → authenticate
/// (the upgrade counts as one write) → rate limit → the speech requirement → the handler.
pub fn router(core: Core) -> Router<Core> {
    let routes = Router::new().route("/tts/websocket", get(socket::websocket));
    http::auth::writing_routes(routes, &core, Operation::CreateSpeech.requirement())
        .layer(from_fn(cartesia_credentials))
}

/// Cartesia's speech socket (the OpenAPI declaration; docs/live-speech.md). Voice, model and
/// output format travel in each message, so an unknown voice or a bad format is an `error`
/// message on the socket, not an HTTP answer.
#[utoipa::path(get, path = "/tts/websocket", tag = "live",
    security(("api_key" = []), ("bearer" = [])),
    params(
        ("cartesia_version" = Option<String>, Query, pattern = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$", description = "Cartesia's API version (or the `Cartesia-Version` header): any date such as `2025-04-16`; optional"),
        ("api_key" = Option<String>, Query, description = "The key, for clients that cannot set headers (`X-API-Key` and `Authorization: Bearer` are read first)"),
    ),
    responses(
        (status = 101, description = "Switching Protocols: the socket (docs/live-speech.md)"),
        (status = 400, description = "`invalid_request` naming the parameter", body = Object, content_type = "application/json"),
        (status = 401, description = "`invalid_api_key`", body = Object, content_type = "application/json"),
        (status = 403, description = "`pro_plan_required`, `insufficient_scope` (needs `voice:generate`) or `feature_not_enabled`", body = Object, content_type = "application/json"),
        (status = 429, description = "`rate_limit_exceeded`: the write rate, or the account's sockets", body = Object, content_type = "application/json"),
        (status = 503, description = "`service_unavailable`: every socket place is taken", body = Object, content_type = "application/json"),
    ))]
pub async fn websocket_document() {}

/// The `api_key` query parameter (Cartesia's browser clients cannot set headers on a
/// WebSocket) as the `Authorization: Bearer` `http::auth` reads, when no header credential
/// (`X-API-Key`, `Authorization`) was sent.
async fn cartesia_credentials(mut request: Request, next: Next) -> Response {
    let key = request.uri().query().and_then(|query| {
        url::form_urlencoded::parse(query.as_bytes())
            .find(|(name, _)| name == "api_key")
            .map(|(_, value)| value.trim().to_owned())
    });
    let headers = request.headers_mut();
    if !http::auth::credential_sent(headers)
        && let Some(key) = key.filter(|k| !k.is_empty())
        && let Ok(value) = HeaderValue::from_str(&format!("Bearer {key}"))
    {
        headers.insert(header::AUTHORIZATION, value);
    }
    next.run(request).await
}
