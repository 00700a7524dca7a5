//! `POST /v1/transcriptions`: base64 audio in, a stored capture out (synchronous), with segment
//! or word timestamps when asked; `GET /v1/captures/{id}` and its captions.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Extension;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use utoipa::ToSchema;

use super::docs;
use crate::domain::{RecognitionOptions, Timestamps};
use crate::http::auth::Principal;
use crate::http::body::{discard, read_limited};
use crate::http::error::ApiError;
use crate::http::idempotency;
use crate::http::json;
use crate::http::models::Problem;
use crate::http::models::{TranscriptSegment, TranscriptWord};
use crate::service::Core;
use crate::service::idempotency::{KeyUse, Keyed};
use crate::service::transcription::{self as service, Done, Incoming};

/// Body limit of this route (shared with the agent's `transcribe`).
pub use crate::http::body::AUDIO_UPLOAD_LIMIT as BODY_LIMIT;

/// Request body (for the document; parsing is field by field).
#[derive(Debug, ToSchema)]
#[allow(dead_code)]
pub struct TranscriptionRequest {
    /// Base64 (standard alphabet; missing padding and a `data:audio/…;base64,` prefix are
    /// accepted) of a wav, mp3, flac, ogg (vorbis or opus) or webm/opus clip: at most 25 MiB
    /// decoded and 15 minutes long.
    #[schema(min_length = 1)]
    audio: String,
    /// `segment`: the answer (and the capture) carries `segments` with start and end times;
    /// `word`: also `words`, each word's start and end (an alignment pass: it costs time).
    /// Absent: text only.
    #[schema(value_type = Option<String>, example = "word")]
    timestamps: Option<TimestampsParam>,
}

/// `segment` or `word`.
#[derive(Debug, ToSchema)]
#[schema(rename_all = "lowercase")]
#[allow(dead_code)]
pub enum TimestampsParam {
    Segment,
    Word,
}

/// The transcript, and the id of the capture that stores it.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
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
    /// Present when `timestamps` was sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub segments: Option<Vec<TranscriptSegment>>,
    /// Present when `timestamps` was `word`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub words: Option<Vec<TranscriptWord>>,
}

/// Transcribes a clip and stores the result as a capture.
#[utoipa::path(post, path = "/v1/transcriptions", tag = "captures",
    security(("api_key" = []), ("bearer" = [])),
    params(("Idempotency-Key" = Option<String>, Header, max_length = 255,
        description = "Same key and body within 48 h returns the first answer without transcribing again")),
    request_body(content = TranscriptionRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "The transcript; a capture was stored", body = TranscriptionResult),
        (status = 400, description = "`invalid_request` (`param: audio`: missing, not base64, undecodable, longer than 15 minutes; `param: timestamps`: not `segment` or `word`)", body = Problem, content_type = "application/problem+json"),
        (status = 429, description = "`rate_limit_exceeded`: the key's request rate, or the account already has `max_transcriptions_per_account` transcriptions in progress (answered before the upload is read; see `Retry-After`)", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "`service_unavailable`: the recogniser's queue is full (answered before the upload is decoded; see `Retry-After`), no model is installed, or the database is unavailable", body = Problem, content_type = "application/problem+json"),
        docs::Transcribe, docs::NotJson,
    ))]
pub async fn create_transcription(
    State(state): State<Core>,
    Extension(principal): Extension<Arc<Principal>>,
    request: Request,
) -> Result<Response, ApiError> {
    let (parts, body) = request.into_parts();
    let key = idempotency::key_from(&parts.headers)?;
    json::require_json(&parts.headers)?;
    // Admission before work: the place is taken before the upload is read, parsed or decoded.
    // A refused upload is answered at once and drained behind the answer (never buffered), so
    // that the client reads the answer and the connection carries its next request.
    let place = match service::take_place(&state, &principal).await {
        Ok(place) => place,
        Err(err) => {
            discard(body, BODY_LIMIT, state.request_timeout());
            return Err(err);
        }
    };
    let bytes = read_limited(body, BODY_LIMIT).await?;
    let wants_fingerprint = key.is_some();
    let (audio, options, fingerprint) =
        tokio::task::spawn_blocking(move || parse_upload(&bytes, wants_fingerprint))
            .await
            .map_err(ApiError::internal)??;
    let keyed = Keyed {
        operation: KeyUse::Transcription,
        key,
        fingerprint,
    };
    let incoming = Incoming {
        audio: std::future::ready(Ok(audio)),
        source: "api",
        param: "audio",
        options,
        progress: None,
    };
    let done = service::run(&state, &principal, place, incoming, keyed).await?;
    Ok(answer(&done))
}

/// The answer of `POST /v1/transcriptions`, the first time and on a replay.
fn answer(done: &Done) -> Response {
    let t = &done.transcribed;
    idempotency::json_answer(
        StatusCode::OK,
        &[],
        &TranscriptionResult {
            id: t.capture_id.clone(),
            text: t.text.clone(),
            language: t.language.clone(),
            duration_ms: t.duration_ms,
            segments: (t.timestamps != Timestamps::None)
                .then(|| t.segments.iter().cloned().map(Into::into).collect()),
            words: t
                .timestamps
                .words()
                .then(|| t.words.iter().cloned().map(Into::into).collect()),
        },
        done.replayed,
    )
}

/// The JSON body → the audio file's bytes, the options, and the request's fingerprint when one
/// is needed. Blocking work (it scans, hashes and decodes up to 34 MiB): run it off the async
/// workers. The base64 text is borrowed from the body, never copied into a JSON value.
fn parse_upload(
    body: &[u8],
    fingerprint: bool,
) -> Result<(Vec<u8>, RecognitionOptions, Vec<u8>), ApiError> {
    let members: BTreeMap<Cow<'_, str>, &RawValue> = serde_json::from_slice(body).map_err(|e| {
        if e.classify() == serde_json::error::Category::Data {
            json::not_an_object()
        } else {
            json::not_json(&e)
        }
    })?;
    if let Some(unknown) = members
        .keys()
        .find(|k| !matches!(k.as_ref(), "audio" | "timestamps"))
    {
        return Err(ApiError::invalid(
            unknown.as_ref(),
            format!("Unknown field {unknown:?}; accepted fields: audio, timestamps."),
        ));
    }
    let timestamps = match members.get("timestamps").map(|raw| raw.get()) {
        None | Some("null") => Timestamps::None,
        Some(raw) => serde_json::from_str::<Cow<'_, str>>(raw)
            .ok()
            .and_then(|value| Timestamps::parse(&value))
            .ok_or_else(|| {
                ApiError::invalid("timestamps", "timestamps must be \"segment\" or \"word\"")
            })?,
    };
    let options = RecognitionOptions {
        timestamps,
        ..RecognitionOptions::default()
    };
    let raw = members
        .get("audio")
        .filter(|raw| raw.get() != "null")
        .ok_or_else(|| ApiError::invalid("audio", "audio is required"))?;
    let audio_b64: Cow<'_, str> = serde_json::from_str(raw.get())
        .map_err(|_| ApiError::invalid("audio", "audio must be a base64 string"))?;
    let fingerprint = if fingerprint {
        service::fingerprint(KeyUse::Transcription, audio_b64.as_bytes(), &options)
    } else {
        Vec::new()
    };
    let audio = service::decode_base64(&audio_b64, "audio")?;
    Ok((audio, options, fingerprint))
}
