//! ElevenLabs' speech dialect: the WebSockets `GET /v1/text-to-speech/{voice_id}/stream-input`
//! (one context) and `…/multi-stream-input` (up to five), and REST `POST
//! /v1/text-to-speech/{voice_id}` and `…/stream`. The door parses ElevenLabs' query, bodies and
//! messages into the core's live speech session (`service::live_speech`) and synchronous
//! speech, and renders their events and deliveries in ElevenLabs' shapes; refusals at the
//! upgrade and of REST calls are HTTP answers in ElevenLabs' error shape with voiced's `code`
//! (`http::error`). The decisions per parameter are in docs/live-speech.md.

mod params;
mod rest;
mod socket;

use axum::Router;
use axum::extract::Request;
use axum::http::{HeaderValue, header};
use axum::middleware::{Next, from_fn};
use axum::response::Response;
use axum::routing::{get, post};

use crate::http;
use crate::service::Core;
use crate::service::operations::Operation;
use crate::service::speech::Fields;

/// Field names of this dialect for the core's errors.
const FIELDS: Fields = Fields {
    text: "text",
    voice: "voice_id",
    temperature: "temperature",
    engine: "voice_id",
};

/// The routes with their own stack, outermost first: ElevenLabs' credential header →
/// authenticate (the upgrade counts as one write) → rate limit → the speech requirement →
/// the handler.
pub fn router(core: Core) -> Router<Core> {
    let routes = Router::new()
        .route(
            "/v1/text-to-speech/{voice_id}/multi-stream-input",
            get(socket::multi_stream_input),
        )
        .route(
            "/v1/text-to-speech/{voice_id}/stream-input",
            get(socket::stream_input),
        )
        .route("/v1/text-to-speech/{voice_id}", post(rest::convert))
        .route("/v1/text-to-speech/{voice_id}/stream", post(rest::convert));
    http::auth::writing_routes(routes, &core, Operation::CreateSpeech.requirement())
        .layer(from_fn(elevenlabs_credentials))
}

/// ElevenLabs' multi-context speech socket (the OpenAPI declaration; the wire is in
/// docs/live.md): text in pieces per `context_id`, audio with `alignment` out as it is rendered.
#[utoipa::path(get, path = "/v1/text-to-speech/{voice_id}/multi-stream-input", tag = "live",
    security(("api_key" = []), ("bearer" = [])),
    params(
        ("voice_id" = String, Path, description = "A voice profile's id or name"),
        ("model_id" = Option<String>, Query, description = "An engine id, or an ElevenLabs model name (`eleven_*`: the voice's own engine)"),
        ("output_format" = Option<String>, Query, description = "`pcm_8000` … `pcm_48000`, `mp3_22050_32`, `mp3_44100_32` … `mp3_44100_192`, `ulaw_8000`; default `mp3_22050_32`"),
        ("inactivity_timeout" = Option<u32>, Query, description = "Seconds without a message before the socket closes (default 20, at most 180)"),
        ("sync_alignment" = Option<bool>, Query, description = "Accepted; alignment is always sent with the audio"),
        ("auto_mode" = Option<bool>, Query, description = "Phrases at sentence ends, without the chunk schedule"),
    ),
    responses(
        (status = 101, description = "Switching Protocols: the socket (docs/live.md)"),
        (status = 400, description = "`invalid_request` naming the parameter (`voice_id`: no such voice in this account)", body = Object, content_type = "application/json"),
        (status = 401, description = "`invalid_api_key`", body = Object, content_type = "application/json"),
        (status = 403, description = "`pro_plan_required`, `insufficient_scope` (needs `voice:generate`) or `feature_not_enabled`", body = Object, content_type = "application/json"),
        (status = 429, description = "`rate_limit_exceeded`: the write rate, or the account's sockets", body = Object, content_type = "application/json"),
        (status = 503, description = "`service_unavailable`: every socket place is taken", body = Object, content_type = "application/json"),
    ))]
pub async fn multi_stream_input_document() {}

/// ElevenLabs' single-context speech socket (the OpenAPI declaration; docs/live.md).
#[utoipa::path(get, path = "/v1/text-to-speech/{voice_id}/stream-input", tag = "live",
    security(("api_key" = []), ("bearer" = [])),
    params(
        ("voice_id" = String, Path, description = "A voice profile's id or name"),
        ("model_id" = Option<String>, Query, description = "An engine id, or an ElevenLabs model name"),
        ("output_format" = Option<String>, Query, description = "As on the multi-context socket"),
    ),
    responses(
        (status = 101, description = "Switching Protocols: the socket (docs/live.md)"),
        (status = 400, description = "`invalid_request` naming the parameter (`voice_id`: no such voice in this account)", body = Object, content_type = "application/json"),
        (status = 401, description = "`invalid_api_key`", body = Object, content_type = "application/json"),
        (status = 403, description = "`pro_plan_required`, `insufficient_scope` or `feature_not_enabled`", body = Object, content_type = "application/json"),
        (status = 429, description = "`rate_limit_exceeded`", body = Object, content_type = "application/json"),
        (status = 503, description = "`service_unavailable`", body = Object, content_type = "application/json"),
    ))]
pub async fn stream_input_document() {}

/// ElevenLabs' REST speech: `POST /v1/text-to-speech/{voice_id}` (the whole audio) and
/// `…/stream` (streamed as it is rendered); JSON `{text, model_id, voice_settings, …}`.
#[utoipa::path(post, path = "/v1/text-to-speech/{voice_id}", tag = "live",
    security(("api_key" = []), ("bearer" = [])),
    params(
        ("voice_id" = String, Path, description = "A voice profile's id or name"),
        ("output_format" = Option<String>, Query, description = "As on the sockets; default `mp3_44100_128`"),
    ),
    request_body(content = Object, content_type = "application/json", description = "`{text, model_id, voice_settings, language_code, …}` (docs/live.md)"),
    responses(
        (status = 200, description = "The audio in the asked format", content((Vec<u8> = "audio/mpeg"), (Vec<u8> = "audio/pcm"), (Vec<u8> = "audio/basic"))),
        (status = 400, description = "`invalid_request` naming the field", body = Object, content_type = "application/json"),
        (status = 401, description = "`invalid_api_key`", body = Object, content_type = "application/json"),
        (status = 403, description = "`pro_plan_required`, `insufficient_scope` or `feature_not_enabled`", body = Object, content_type = "application/json"),
        (status = 413, description = "`payload_too_large`", body = Object, content_type = "application/json"),
        (status = 415, description = "`unsupported_media_type`", body = Object, content_type = "application/json"),
        (status = 429, description = "`rate_limit_exceeded`, `quota_exhausted` or `key_ceiling_exceeded`", body = Object, content_type = "application/json"),
    ))]
pub async fn convert_document() {}

/// The streamed twin of [`convert_document`].
#[utoipa::path(post, path = "/v1/text-to-speech/{voice_id}/stream", tag = "live",
    security(("api_key" = []), ("bearer" = [])),
    params(
        ("voice_id" = String, Path, description = "A voice profile's id or name"),
        ("output_format" = Option<String>, Query, description = "As on the sockets; default `mp3_44100_128`"),
    ),
    request_body(content = Object, content_type = "application/json", description = "As `POST /v1/text-to-speech/{voice_id}`"),
    responses(
        (status = 200, description = "The audio, streamed as it is rendered", content((Vec<u8> = "audio/mpeg"), (Vec<u8> = "audio/pcm"), (Vec<u8> = "audio/basic"))),
        (status = 400, description = "`invalid_request` naming the field", body = Object, content_type = "application/json"),
        (status = 401, description = "`invalid_api_key`", body = Object, content_type = "application/json"),
        (status = 403, description = "`pro_plan_required`, `insufficient_scope` or `feature_not_enabled`", body = Object, content_type = "application/json"),
        (status = 413, description = "`payload_too_large`", body = Object, content_type = "application/json"),
        (status = 415, description = "`unsupported_media_type`", body = Object, content_type = "application/json"),
        (status = 429, description = "`rate_limit_exceeded`, `quota_exhausted` or `key_ceiling_exceeded`", body = Object, content_type = "application/json"),
    ))]
pub async fn convert_stream_document() {}

/// ElevenLabs' `xi-api-key` header as the `Authorization: Bearer` `http::auth` reads, when no
/// credential of voiced's own (`x-api-key`, `Authorization`) was sent.
async fn elevenlabs_credentials(mut request: Request, next: Next) -> Response {
    let headers = request.headers_mut();
    if !http::auth::credential_sent(headers)
        && let Some(key) = headers.get("xi-api-key").and_then(|v| v.to_str().ok())
        && let Ok(value) = HeaderValue::from_str(&format!("Bearer {}", key.trim()))
    {
        headers.insert(header::AUTHORIZATION, value);
    }
    next.run(request).await
}
