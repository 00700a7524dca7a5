//! `POST /v1/speech` (asynchronous), and the field parsing both speech endpoints share.
//! Admission is the service core's (`service::speech`).

use std::sync::Arc;

use axum::Extension;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde::Serialize;
use utoipa::ToSchema;

use crate::audio::AudioFormat;
use crate::domain::{Seed, SpeechText, Temperature};
use crate::http::auth::Principal;
use crate::http::error::ApiError;
use crate::http::idempotency;
use crate::http::json::JsonObject;
use crate::http::models::Problem;
use crate::service::Core;
use crate::service::idempotency::{Keyed, Operation};
use crate::service::speech::{self as service, Accepted, Fields, VoiceChoice};

pub fn parse_seed(body: &JsonObject) -> Result<Option<Seed>, ApiError> {
    body.optional("seed")
        .map(|v| Seed::from_json(v).map_err(|m| ApiError::invalid("seed", m)))
        .transpose()
}

pub fn parse_temperature(body: &JsonObject) -> Result<Option<Temperature>, ApiError> {
    body.optional("temperature")
        .map(|v| Temperature::from_json(v).map_err(|m| ApiError::invalid("temperature", m)))
        .transpose()
}

pub fn parse_format(body: &JsonObject, field: &str) -> Result<AudioFormat, ApiError> {
    match body.optional(field) {
        None => Ok(AudioFormat::Mp3),
        Some(serde_json::Value::String(s)) => s.parse().map_err(|_| {
            ApiError::invalid(field, format!("{field} must be one of mp3, opus, wav"))
        }),
        Some(_) => Err(ApiError::invalid(
            field,
            format!("{field} must be one of mp3, opus, wav"),
        )),
    }
}

pub fn parse_text(body: &JsonObject, field: &str) -> Result<SpeechText, ApiError> {
    SpeechText::new(body.required_str(field)?)
        .map_err(|m| ApiError::invalid(field, format!("{field} {m}")))
}

/// Answer of `POST /v1/speech`.
#[derive(Debug, Serialize, ToSchema)]
pub struct SpeechAccepted {
    #[schema(example = "gen_0192f0c1a2b37c0d8e9f0a1b2c3d4e5f")]
    pub id: String,
    #[schema(example = "generating")]
    pub status: String,
    /// Name of the voice profile.
    pub voice: String,
}

/// Request body of `POST /v1/speech` (for the document; parsing is field by field).
#[derive(Debug, ToSchema)]
#[allow(dead_code)]
pub struct SpeechRequest {
    /// 1 to 10 000 characters after trimming.
    #[schema(min_length = 1, max_length = 10000)]
    text: String,
    /// Name of one of the account's voice profiles.
    #[schema(min_length = 1)]
    voice_name: String,
    /// 0 to 2^53−1. Omitted: the voice's pinned seed, else random. Same seed, text and voice →
    /// the same audio.
    #[schema(minimum = 0, maximum = 9007199254740991_i64)]
    seed: Option<i64>,
    /// 0.05 to 2, chatterbox engines only.
    #[schema(minimum = 0.05, maximum = 2.0)]
    temperature: Option<f64>,
    /// `mp3` (default), `opus` (Ogg Opus) or `wav` (16-bit PCM).
    #[schema(example = "mp3")]
    response_format: Option<String>,
}

const FIELDS: [&str; 5] = [
    "text",
    "voice_name",
    "seed",
    "temperature",
    "response_format",
];

/// Starts a speech generation; poll `GET /v1/generations/{id}` for the audio.
#[utoipa::path(post, path = "/v1/speech", tag = "speech",
    security(("api_key" = []), ("bearer" = [])),
    params(("Idempotency-Key" = Option<String>, Header, max_length = 255,
        description = "Same key and body within 48 h returns the first answer without generating again")),
    request_body(content = SpeechRequest, content_type = "application/json"),
    responses(
        (status = 202, description = "Accepted; `Location` points at the generation", body = SpeechAccepted,
            headers(("Location" = String, description = "/v1/generations/{id}"))),
        (status = 400, description = "`invalid_request` (`param` names the field)", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "`invalid_api_key`", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "`pro_plan_required`, `insufficient_scope` (needs `voice:generate`) or `feature_not_enabled`", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "`idempotency_key_in_use`", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "`payload_too_large`", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "`unsupported_media_type`", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "`idempotency_key_reused`", body = Problem, content_type = "application/problem+json"),
        (status = 429, description = "`rate_limit_exceeded`, `quota_exhausted` or `key_ceiling_exceeded`", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "`service_unavailable`", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn create_speech(
    State(state): State<Core>,
    Extension(principal): Extension<Arc<Principal>>,
    headers: HeaderMap,
    body: JsonObject,
) -> Result<Response, ApiError> {
    let key = idempotency::key_from(&headers)?;
    body.only(&FIELDS)?;
    let text = parse_text(&body, "text")?;
    let voice_name = body.required_str("voice_name")?;
    let seed = parse_seed(&body)?;
    let temperature = parse_temperature(&body)?;
    let format = parse_format(&body, "response_format")?;
    let keyed = Keyed::json(Operation::Speech, key, &body.value());
    let request = service::SpeechRequest {
        text,
        voice: VoiceChoice::Name(voice_name),
        seed,
        temperature,
        format,
    };
    let accepted = service::create(&state, &principal, request, FIELDS_OF_SPEECH, keyed).await?;
    Ok(accepted_answer(&accepted))
}

/// The answer of `POST /v1/speech`, the first time and (byte for byte, marked replayed) on a
/// replay through either door (REST or the agent's `speak`).
fn accepted_answer(accepted: &Accepted) -> Response {
    idempotency::json_answer(
        StatusCode::ACCEPTED,
        &[(
            "location",
            format!("/v1/generations/{}", accepted.generation_id),
        )],
        &SpeechAccepted {
            id: accepted.generation_id.clone(),
            status: "generating".into(),
            voice: accepted.voice.clone(),
        },
        accepted.replayed,
    )
}

/// Field names of `POST /v1/speech` for the service's errors.
const FIELDS_OF_SPEECH: Fields = Fields {
    text: "text",
    voice: "voice_name",
    temperature: "temperature",
    engine: "voice_name",
};
