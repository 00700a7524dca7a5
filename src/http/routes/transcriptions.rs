//! `POST /v1/transcriptions`: base64 audio in, a stored capture out (synchronous).

use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::Serialize;
use utoipa::ToSchema;

use crate::audio::{self, Base64Error, DecodeError, DecodeLimits};
use crate::domain::new_id;
use crate::http::AppState;
use crate::http::auth::Principal;
use crate::http::error::{ApiError, ErrorCode};
use crate::http::idempotency;
use crate::http::json::JsonObject;
use crate::http::models::Problem;
use crate::store;

/// Longest clip accepted (DECISIONS: 15 minutes).
pub const MAX_DURATION: Duration = Duration::from_secs(15 * 60);
/// Body limit of this route: 25 MiB of audio as base64 (4/3 larger) plus a data-URL prefix
/// and the JSON around it.
pub const BODY_LIMIT: usize = audio::MAX_AUDIO_BYTES / 3 * 4 + 1024 * 1024;

/// Request body (for the document; parsing is field by field).
#[derive(Debug, ToSchema)]
#[allow(dead_code)]
pub struct TranscriptionRequest {
    /// Base64 (standard alphabet; missing padding and a `data:audio/…;base64,` prefix are
    /// accepted) of a wav, mp3, flac, ogg (vorbis or opus) or webm/opus clip: at most 25 MiB
    /// decoded and 15 minutes long.
    audio: String,
}

/// The transcript, and the id of the capture that stores it.
#[derive(Debug, Serialize, ToSchema)]
pub struct TranscriptionResult {
    /// Id of the capture created (listed by `GET /v1/captures`).
    #[schema(example = "cap_0192f0c1a2b37c0d8e9f0a1b2c3d4e5f")]
    pub id: String,
    /// What was said; empty when no speech was found.
    pub text: String,
    /// ISO 639-1 code of the detected language.
    #[schema(example = "en")]
    pub language: String,
    pub duration_ms: i64,
}

fn undecodable() -> ApiError {
    ApiError::invalid(
        "audio",
        "audio could not be decoded: send base64 of a wav, mp3, flac, ogg (vorbis or opus) or webm/opus clip",
    )
}

/// Base64 → bytes → 16 kHz mono samples, off the async runtime (it is CPU work).
async fn decode(audio_b64: String) -> Result<audio::DecodedAudio, ApiError> {
    tokio::task::spawn_blocking(move || {
        let bytes = audio::decode_base64_audio(&audio_b64, audio::MAX_AUDIO_BYTES).map_err(
            |e| match e {
                Base64Error::TooLarge { .. } => ApiError::new(
                    ErrorCode::PayloadTooLarge,
                    "audio is larger than 25 MiB once decoded.",
                )
                .with_param("audio"),
                _ => ApiError::invalid("audio", "audio must be base64 (standard alphabet)"),
            },
        )?;
        let limits = DecodeLimits {
            max_duration: MAX_DURATION,
            ..DecodeLimits::default()
        };
        audio::decode_for_asr(bytes, &limits).map_err(|e| match e {
            DecodeError::TooLong { max_seconds } => ApiError::invalid(
                "audio",
                format!("audio is longer than {} minutes", max_seconds / 60),
            ),
            DecodeError::Undecodable(reason) => {
                tracing::info!(%reason, "undecodable upload");
                undecodable()
            }
        })
    })
    .await
    .map_err(ApiError::internal)?
}

/// Transcribes a clip and stores the result as a capture.
#[utoipa::path(post, path = "/v1/transcriptions", tag = "captures",
    security(("api_key" = []), ("bearer" = [])),
    params(("Idempotency-Key" = Option<String>, Header, max_length = 255,
        description = "Same key and body within 24 h returns the first answer without transcribing again")),
    request_body(content = TranscriptionRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "The transcript; a capture was stored", body = TranscriptionResult),
        (status = 400, description = "`invalid_request` (`param: audio`: missing, not base64, undecodable, longer than 15 minutes)", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "`invalid_api_key`", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "`pro_plan_required`, `insufficient_scope` (needs `voice:generate`) or `feature_not_enabled`", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "`idempotency_key_in_use`", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "`payload_too_large`: more than 25 MiB of audio", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "`unsupported_media_type`", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "`idempotency_key_reused`", body = Problem, content_type = "application/problem+json"),
        (status = 429, description = "`rate_limit_exceeded`", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "`service_unavailable`: the recogniser's queue is full (see `Retry-After`) or no model is installed", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn create_transcription(
    State(state): State<AppState>,
    Extension(principal): Extension<Arc<Principal>>,
    headers: HeaderMap,
    body: JsonObject,
) -> Result<Response, ApiError> {
    let key = idempotency::key_from(&headers)?;
    body.only(&["audio"])?;
    let audio_b64 = match body.0.get("audio") {
        Some(serde_json::Value::String(s)) if !s.trim().is_empty() => s.clone(),
        Some(serde_json::Value::String(_)) => {
            return Err(ApiError::invalid("audio", "audio must not be empty"));
        }
        Some(_) => return Err(ApiError::invalid("audio", "audio must be a base64 string")),
        None => return Err(ApiError::invalid("audio", "audio is required")),
    };
    let fingerprint = || idempotency::fingerprint("POST /v1/transcriptions", &body.value());

    idempotency::run_once(
        &state.pool,
        &principal.account_id,
        key,
        fingerprint,
        state.request_timeout,
        || async {
            let decoded = decode(audio_b64).await?;
            if !state.asr.is_installed() {
                tracing::error!("transcription requested but no Whisper model is installed");
                return Err(ApiError::unavailable(60));
            }
            // Held until the answer: a client that goes away gives its place back.
            let _place = state
                .asr
                .try_admit()
                .ok_or_else(|| ApiError::unavailable(2))?;
            let transcript = state
                .asr
                .transcribe(decoded.samples_16k)
                .await
                .map_err(|e| ApiError::internal(format!("recogniser: {e}")))?;
            let refined = crate::engines::whisper::refine(&transcript.text);
            let id = new_id("cap");
            let duration_ms = i64::try_from(decoded.duration_ms).unwrap_or(i64::MAX);
            store::captures::insert(
                &state.pool,
                store::captures::NewCapture {
                    id: &id,
                    account_id: &principal.account_id,
                    api_key_id: Some(&principal.key_id),
                    source: "api",
                    language: &transcript.language,
                    duration_ms,
                    transcript_raw: &transcript.text,
                    transcript_refined: &refined,
                },
            )
            .await?;
            Ok(Json(TranscriptionResult {
                id,
                text: transcript.text,
                language: transcript.language,
                duration_ms,
            })
            .into_response())
        },
    )
    .await
}
