//! Response bodies of the API (spec §2), with their OpenAPI schemas.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::domain::{Segment, Word};

use crate::service::Core;
use crate::service::views::{CaptureRow, GenerationRow, PronunciationRow, VoiceRow};

/// A pronunciation rule (item of `GET /v1/pronunciations`): exactly one of `alias` and
/// `phonemes` is present.
#[derive(Debug, Serialize, ToSchema)]
pub struct Pronunciation {
    #[schema(example = "pron_0192f0c1a2b37c0d8e9f0a1b2c3d4e5f")]
    pub id: String,
    /// The word or phrase, matched as whole words.
    #[schema(example = "Kokoro")]
    pub text: String,
    /// Words read instead of `text`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alias: Option<String>,
    /// IPA spoken instead of `text` (kokoro and luxtts voices).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "ˈkoʊkəɹoʊ")]
    pub phonemes: Option<String>,
    /// The voice language it is limited to; `null`: every language.
    #[schema(example = "en")]
    pub language: Option<String>,
    pub case_sensitive: bool,
    pub created_at: DateTime<Utc>,
}

impl From<PronunciationRow> for Pronunciation {
    fn from(row: PronunciationRow) -> Self {
        Self {
            id: row.id,
            text: row.text,
            alias: row.alias,
            phonemes: row.phonemes,
            language: row.language,
            case_sensitive: row.case_sensitive,
            created_at: row.created_at,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PronunciationList {
    pub data: Vec<Pronunciation>,
    pub total: i64,
}

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
    /// Where it was made: `api` (`POST /v1/transcriptions`, `/v1/audio/transcriptions` or
    /// `/v1/audio/translations`), `agent` (MCP `transcribe`) or `app`.
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

/// A stretch of speech between two of Whisper's timestamp tokens (OpenAI's `verbose_json`
/// segment). Times in seconds from the start of the clip.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct TranscriptSegment {
    pub id: u32,
    /// Frame (10 ms) at which the 30 s window that decoded it starts.
    pub seek: u32,
    #[schema(example = 0.0)]
    pub start: f64,
    #[schema(example = 2.48)]
    pub end: f64,
    #[schema(example = " Ever tried, ever failed.")]
    pub text: String,
    /// Whisper's token ids, timestamp tokens included.
    pub tokens: Vec<u32>,
    /// Sampling temperature that decoded it (0: beam search).
    pub temperature: f32,
    pub avg_logprob: f32,
    pub compression_ratio: f32,
    pub no_speech_prob: f32,
}

impl From<Segment> for TranscriptSegment {
    fn from(s: Segment) -> Self {
        Self {
            id: s.id,
            seek: s.seek,
            start: s.start,
            end: s.end,
            text: s.text,
            tokens: s.tokens,
            temperature: s.temperature,
            avg_logprob: s.avg_logprob,
            compression_ratio: s.compression_ratio,
            no_speech_prob: s.no_speech_prob,
        }
    }
}

/// One word with its start and end (seconds from the start of the clip); the text is as
/// Whisper writes it, leading space and attached punctuation included.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct TranscriptWord {
    #[schema(example = " tried,")]
    pub word: String,
    #[schema(example = 0.52)]
    pub start: f64,
    #[schema(example = 0.98)]
    pub end: f64,
}

impl From<Word> for TranscriptWord {
    fn from(w: Word) -> Self {
        Self {
            word: w.word,
            start: w.start,
            end: w.end,
        }
    }
}

/// One capture with its timings (`GET /v1/captures/{id}`).
#[derive(Debug, Serialize, ToSchema)]
pub struct CaptureDetail {
    #[serde(flatten)]
    pub capture: Capture,
    /// `transcribe`, or `translate` (the transcript is English; `language` is the language
    /// spoken).
    #[schema(example = "transcribe")]
    pub task: String,
    /// What the transcription asked for: `none`, `segment` or `word`.
    #[schema(example = "word")]
    pub timestamps: String,
    /// Present when timestamps were asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub segments: Option<Vec<TranscriptSegment>>,
    /// Present when word timestamps were asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub words: Option<Vec<TranscriptWord>>,
}

impl TryFrom<crate::service::views::CaptureDetail> for CaptureDetail {
    type Error = serde_json::Error;

    fn try_from(d: crate::service::views::CaptureDetail) -> Result<Self, Self::Error> {
        Ok(Self {
            capture: d.capture.into(),
            task: d.task,
            timestamps: d.timestamps,
            segments: d.segments.map(serde_json::from_value).transpose()?,
            words: d.words.map(serde_json::from_value).transpose()?,
        })
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct CaptureList {
    pub data: Vec<Capture>,
    pub total: i64,
    pub limit: i64,
    pub offset: i64,
}

// Documentation only: the door parses the filter as a `domain::GenerationStatus`.
/// A generation's status, as the `status` filter of `GET /v1/generations` takes it.
#[derive(Debug, ToSchema)]
#[schema(rename_all = "lowercase")]
#[allow(dead_code)]
pub enum GenerationStatusFilter {
    Generating,
    Completed,
    Failed,
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
    /// Length of the audio once completed; on a generation cancelled after some of its audio
    /// had been streamed to its caller, the audio delivered, which is what was charged.
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
    /// Approximate: the fair order can serve another account's newer job first; exact up to
    /// 100, an upper bound beyond.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0)]
    pub queue_position: Option<i64>,
    /// Asked for with `timestamps: "word"`, once completed: each word as spoken (after
    /// normalisation), when it is said (seconds in the audio), and the characters of the
    /// request's text it reads (`source_start` inclusive, `source_end` exclusive, counted in
    /// Unicode code points).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub words: Option<Vec<SpokenWord>>,
}

/// A word of generated speech (item of a generation's `words`).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct SpokenWord {
    #[schema(example = "three")]
    pub text: String,
    /// Seconds from the start of the audio.
    #[schema(example = 0.412)]
    pub start: f64,
    #[schema(example = 0.688)]
    pub end: f64,
    #[schema(example = 7)]
    pub source_start: usize,
    #[schema(example = 12)]
    pub source_end: usize,
}

impl Generation {
    /// The view of a generation every door shows, with a freshly signed link when there is
    /// audio.
    pub fn present(core: &Core, row: GenerationRow) -> Self {
        Self::present_with(row, |id| crate::service::audio::signed_url(core, id))
    }

    /// The same view, signing the link with `sign` (the webhook deliveries' payload).
    pub fn present_with(row: GenerationRow, sign: impl FnOnce(&str) -> String) -> Self {
        let audio_url = (row.status == crate::domain::GenerationStatus::Completed && row.has_audio)
            .then(|| sign(&row.id));
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
            words: row
                .words
                .filter(|_| row.status == crate::domain::GenerationStatus::Completed)
                .and_then(|w| serde_json::from_value(w).ok()),
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
