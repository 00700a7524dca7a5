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
use axum::middleware::{Next, from_fn, from_fn_with_state};
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
    Router::new()
        .route(
            "/v1/text-to-speech/{voice_id}/multi-stream-input",
            get(socket::multi_stream_input),
        )
        .route(
            "/v1/text-to-speech/{voice_id}/stream-input",
            get(socket::stream_input),
        )
        .route("/v1/text-to-speech/{voice_id}", post(rest::convert))
        .route("/v1/text-to-speech/{voice_id}/stream", post(rest::convert))
        .layer(from_fn_with_state(
            Operation::CreateSpeech.requirement(),
            http::auth::authorize,
        ))
        .layer(from_fn_with_state(
            core.limits().clone(),
            http::rate_limit::rate_limit,
        ))
        .layer(from_fn_with_state(
            core.clone(),
            http::auth::authenticate_write,
        ))
        .layer(from_fn(elevenlabs_credentials))
}

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
