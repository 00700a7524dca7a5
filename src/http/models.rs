//! Response bodies of the API (spec §2), with their OpenAPI schemas.

use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;

use crate::service::Core;
use crate::store::captures::CaptureRow;
use crate::store::generations::GenerationRow;
use crate::store::voices::VoiceRow;

/// A voice profile (item of `GET /v1/voices`).
#[derive(Debug, Serialize, ToSchema)]
pub struct Voice {
    #[schema(example = "voice_0192f0c1a2b37c0d8e9f0a1b2c3d4e5f")]
    pub id: String,
    pub name: String,
    pub description: String,
    /// ISO 639-1 code.
    #[schema(example = "en")]
    pub language: String,
    /// `preset` (an engine's built-in voice) or `cloned`.
    #[schema(example = "preset")]
    pub voice_type: String,
    /// Engine id used when a request names none.
    #[schema(example = "kokoro")]
    pub default_engine: String,
    pub has_personality: bool,
    /// Completed generations in this voice.
    pub generation_count: i64,
    /// Reference samples behind the profile (0 for a preset).
    pub sample_count: i32,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<VoiceRow> for Voice {
    fn from(row: VoiceRow) -> Self {
        Self {
            id: row.id,
            name: row.name,
            description: row.description,
            language: row.language,
            voice_type: row.voice_type.as_str().to_owned(),
            default_engine: row.engine.as_str().to_owned(),
            has_personality: row.has_personality,
            generation_count: row.generation_count,
            sample_count: row.sample_count,
            created_at: row.created_at,
            updated_at: row.updated_at,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct VoiceList {
    pub data: Vec<Voice>,
    pub total: i64,
}

/// A stored transcription (item of `GET /v1/captures`).
#[derive(Debug, Serialize, ToSchema)]
pub struct Capture {
    #[schema(example = "cap_0192f0c1a2b37c0d8e9f0a1b2c3d4e5f")]
    pub id: String,
    /// `api`, `app` or `agent`.
    #[schema(example = "api")]
    pub source: String,
    /// ISO 639-1 code of the detected language.
    #[schema(example = "en")]
    pub language: String,
    pub duration_ms: i64,
    pub transcript_raw: String,
    pub transcript_refined: String,
    pub created_at: DateTime<Utc>,
}

impl From<CaptureRow> for Capture {
    fn from(row: CaptureRow) -> Self {
        Self {
            id: row.id,
            source: row.source,
            language: row.language,
            duration_ms: row.duration_ms,
            transcript_raw: row.transcript_raw,
            transcript_refined: row.transcript_refined,
            created_at: row.created_at,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct CaptureList {
    pub data: Vec<Capture>,
    pub total: i64,
    pub limit: i64,
    pub offset: i64,
}

/// One page of the account's generations (`GET /v1/generations`), newest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct GenerationList {
    pub data: Vec<Generation>,
    /// How many generations match the filters.
    pub total: i64,
    pub limit: i64,
    pub offset: i64,
}

/// A speech generation (`GET /v1/generations/{generationId}`).
#[derive(Debug, Serialize, ToSchema)]
pub struct Generation {
    #[schema(example = "gen_0192f0c1a2b37c0d8e9f0a1b2c3d4e5f")]
    pub id: String,
    /// `generating`, `completed` or `failed`.
    #[schema(example = "completed")]
    pub status: String,
    /// Id of the voice profile used.
    pub profile: String,
    pub has_audio: bool,
    /// Signed link to the audio, valid about 15 minutes; a fresh one on every poll. Present
    /// once completed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audio_url: Option<String>,
    /// Why the generation failed; present when `status` is `failed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The seed used (request, else the voice's pin, else random).
    pub seed: i64,
    /// Engine that renders it.
    pub engine: String,
    /// `mp3`, `opus` or `wav`.
    pub format: String,
    /// Length of the audio once completed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<i64>,
    pub created_at: DateTime<Utc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<DateTime<Utc>>,
    /// While `generating`: audio rendered over the audio estimated at admission, 0 while still
    /// queued, never decreasing, and below 1 until the generation completes.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0, maximum = 1)]
    pub progress: Option<f64>,
    /// While queued: how many queued generations (of every account) were created before it.
    /// Approximate: the fair order can serve another account's newer job first.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0)]
    pub queue_position: Option<i64>,
}

impl Generation {
    /// The view of a generation every door shows, with a freshly signed link when there is
    /// audio.
    pub fn present(core: &Core, row: GenerationRow) -> Self {
        let audio_url = (row.status == crate::domain::GenerationStatus::Completed && row.has_audio)
            .then(|| crate::service::audio::signed_url(core, &row.id));
        Self {
            id: row.id,
            status: row.status.as_str().to_owned(),
            profile: row.voice_id,
            has_audio: row.has_audio,
            audio_url,
            error: row.error,
            seed: row.seed,
            engine: row.engine.as_str().to_owned(),
            format: row.format,
            duration_ms: row.duration_ms,
            created_at: row.created_at,
            finished_at: row.finished_at,
            progress: (row.status == crate::domain::GenerationStatus::Generating)
                .then(|| crate::domain::progress(row.queued, row.rendered_ms, row.estimated_ms)),
            queue_position: row.queue_position.filter(|_| row.queued),
        }
    }
}

/// RFC 9457 problem document (every error outside `POST /v1/audio/speech`).
#[derive(Debug, Serialize, ToSchema)]
pub struct Problem {
    /// `{errors_url}/<code>`.
    #[serde(rename = "type")]
    pub type_url: String,
    pub title: String,
    pub status: u16,
    pub detail: String,
    /// The request path.
    pub instance: String,
    /// Stable token to branch on, e.g. `invalid_request`.
    pub code: String,
    /// The request field at fault, where one is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub param: Option<String>,
    /// With `insufficient_scope`: the scope the key lacks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub required_scope: Option<String>,
    /// With plan, allowance and ceiling errors: where to resolve it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub settings_url: Option<String>,
}

/// Liveness / readiness answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    #[schema(example = "ok")]
    pub status: String,
}

/// OpenAI's error envelope (errors of `POST /v1/audio/speech`).
#[derive(Debug, Serialize, ToSchema)]
pub struct OpenAiError {
    pub error: OpenAiErrorBody,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct OpenAiErrorBody {
    pub message: String,
    /// `invalid_request_error`, `authentication_error`, `permission_error`, `rate_limit_error`
    /// or `server_error`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The request field at fault, or null.
    pub param: Option<String>,
    /// The same stable token as in problem documents.
    pub code: String,
}
