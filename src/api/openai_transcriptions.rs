//! `POST /v1/audio/transcriptions` and `POST /v1/audio/translations`: OpenAI's transcription
//! dialect, `multipart/form-data` exactly as OpenAI's SDKs send it. The same core operation as
//! `POST /v1/transcriptions` (admission, limits, idempotency, the capture, `source = "api"`);
//! this door parses the form and renders `json`, `text`, `srt`, `vtt`, `verbose_json` or a
//! `text/event-stream`. Every field it cannot honour is refused by name, never ignored. Errors
//! use OpenAI's envelope (rendered in `http::error::render_errors` for these paths).

use std::convert::Infallible;
use std::sync::Arc;

use axum::Extension;
use axum::extract::multipart::{Field, Multipart, MultipartError};
use axum::extract::{FromRequest, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::json;
use utoipa::ToSchema;

use super::docs;
use crate::audio::MAX_AUDIO_BYTES;
use crate::domain::{CaptionFormat, RecognitionOptions, Task, Timestamps, captions};
use crate::http::auth::Principal;
use crate::http::body::discard;
use crate::http::error::{ApiError, ErrorCode, openai_stream_error};
use crate::http::idempotency;
use crate::http::models::{OpenAiError, TranscriptSegment, TranscriptWord};
use crate::service::Core;
use crate::service::idempotency::{KeyUse, Keyed};
use crate::service::transcription::{self as service, Done, Incoming, Transcribed};

use crate::http::body::AUDIO_UPLOAD_LIMIT as BODY_LIMIT;

/// OpenAI model names that select the configured recogniser.
const OPENAI_MODELS: [&str; 4] = [
    "whisper-1",
    "gpt-4o-transcribe",
    "gpt-4o-mini-transcribe",
    "gpt-transcribe",
];

/// Request form of `POST /v1/audio/transcriptions` (for the document; parsing is field by field).
#[derive(Debug, ToSchema)]
#[allow(dead_code)]
pub struct OpenAiTranscriptionForm {
    /// The clip: wav, mp3, flac, ogg (vorbis or opus) or webm/opus; at most 25 MiB and 15
    /// minutes.
    #[schema(value_type = String, format = Binary)]
    file: Vec<u8>,
    /// `whisper-1`, `gpt-4o-transcribe`, `gpt-4o-mini-transcribe` or `gpt-transcribe` select the
    /// configured recogniser; so does its own id (`whisper-base` or `whisper-tiny.en`).
    #[schema(example = "whisper-1")]
    model: String,
    /// ISO 639-1 code of the language spoken (detected when absent).
    #[schema(example = "en")]
    language: Option<String>,
    /// Text to prime the decoder with (names, spelling, style); at most 2000 characters.
    #[schema(max_length = 2000)]
    prompt: Option<String>,
    /// `json` (default), `text`, `srt`, `vtt` or `verbose_json`. `diarized_json` is refused.
    response_format: Option<String>,
    /// 0 to 1: the first sampling temperature; 0 (default) starts with beam search and falls
    /// back to higher temperatures when the text is repetitive or improbable.
    #[schema(minimum = 0, maximum = 1)]
    temperature: Option<f64>,
    /// `segment` and/or `word`, only with `verbose_json` (sent as repeated
    /// `timestamp_granularities[]` fields). Default `segment`.
    #[schema(rename = "timestamp_granularities[]")]
    timestamp_granularities: Option<Vec<String>>,
    /// `true`: a `text/event-stream` of `transcript.text.delta` events, one a segment as it is
    /// decoded, then one `transcript.text.done` (with `json` or `text` only).
    stream: Option<bool>,
    /// ISO 639-1 codes (repeated `languages[]` fields): the recogniser takes the first as
    /// `language` (it cannot restrict detection to a list); with `language` too, `language`
    /// must be one of them.
    #[schema(rename = "languages[]")]
    languages: Option<Vec<String>>,
    /// Names and terms (repeated `keywords[]` fields, at most 100 of at most 100 characters):
    /// joined with commas after `prompt` to prime the recogniser; the whole prompt at most 2000
    /// characters.
    #[schema(rename = "keywords[]")]
    keywords: Option<Vec<String>>,
}

/// Request form of `POST /v1/audio/translations` (for the document).
#[derive(Debug, ToSchema)]
#[allow(dead_code)]
pub struct OpenAiTranslationForm {
    /// The clip, as for transcriptions.
    #[schema(value_type = String, format = Binary)]
    file: Vec<u8>,
    /// As for transcriptions; an English-only recogniser cannot translate (400 naming `model`).
    #[schema(example = "whisper-1")]
    model: String,
    /// ISO 639-1 code of the language spoken (detected when absent).
    language: Option<String>,
    #[schema(max_length = 2000)]
    prompt: Option<String>,
    /// `json` (default), `text`, `srt`, `vtt` or `verbose_json`.
    response_format: Option<String>,
    #[schema(minimum = 0, maximum = 1)]
    temperature: Option<f64>,
}

/// `response_format=json`.
#[derive(Debug, Serialize, ToSchema)]
pub struct OpenAiTranscription {
    pub text: String,
    pub usage: OpenAiUsage,
}

/// Seconds of audio billed (OpenAI's duration usage).
#[derive(Debug, Serialize, ToSchema)]
pub struct OpenAiUsage {
    /// Always `duration`.
    #[serde(rename = "type")]
    #[schema(example = "duration")]
    pub kind: &'static str,
    /// Seconds of audio, rounded up.
    pub seconds: u64,
}

/// `response_format=verbose_json`.
#[derive(Debug, Serialize, ToSchema)]
pub struct OpenAiVerboseTranscription {
    /// `transcribe` or `translate`.
    pub task: &'static str,
    /// ISO 639-1 code of the language spoken (for a translation too).
    #[schema(example = "en")]
    pub language: String,
    /// Seconds of audio.
    pub duration: f64,
    pub text: String,
    /// With the `segment` granularity (the default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub segments: Option<Vec<TranscriptSegment>>,
    /// With the `word` granularity.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub words: Option<Vec<TranscriptWord>>,
    pub usage: OpenAiUsage,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Json,
    Text,
    Srt,
    Vtt,
    VerboseJson,
}

/// The form as parsed: what the core is asked, and how to answer.
struct Form {
    file: Vec<u8>,
    options: RecognitionOptions,
    format: Format,
    /// Which of segments and words `verbose_json` carries.
    granularities: (bool, bool),
    stream: bool,
}

/// Transcribes a clip (OpenAI's `POST /v1/audio/transcriptions`) and stores it as a capture.
#[utoipa::path(post, path = "/v1/audio/transcriptions", tag = "captures",
    security(("api_key" = []), ("bearer" = [])),
    params(("Idempotency-Key" = Option<String>, Header, max_length = 255,
        description = "Same key and request within 48 h returns the first answer without transcribing again")),
    request_body(content = OpenAiTranscriptionForm, content_type = "multipart/form-data"),
    responses(
        (status = 200, description = "The transcript in the asked format; a capture was stored (`source: api`)", content(
            (OpenAiTranscription = "application/json"),
            (OpenAiVerboseTranscription = "application/json"),
            (String = "text/plain"),
            (String = "text/vtt"),
            (String = "application/x-subrip"),
            (String = "text/event-stream"),
        )),
        (status = 400, description = "`invalid_request`, `error.param` naming the field (`file`, `model`, `language`, `prompt`, `temperature`, `response_format`, `timestamp_granularities[]`, `stream`, `include[]`, or any field not supported, e.g. `chunking_strategy`, `known_speaker_names[]`)", body = OpenAiError),
        docs::OpenAi<docs::Transcribe>, docs::OpenAi<docs::NotMultipart>, docs::OpenAi<docs::RecogniserBusy>,
    ))]
pub async fn create_openai_transcription(
    State(state): State<Core>,
    Extension(principal): Extension<Arc<Principal>>,
    request: Request,
) -> Result<Response, ApiError> {
    handle(state, principal, request, Task::Transcribe).await
}

/// Translates a clip into English (OpenAI's `POST /v1/audio/translations`) and stores it as a
/// capture whose transcript is the English text and whose `language` is the one spoken.
#[utoipa::path(post, path = "/v1/audio/translations", tag = "captures",
    security(("api_key" = []), ("bearer" = [])),
    params(("Idempotency-Key" = Option<String>, Header, max_length = 255,
        description = "Same key and request within 48 h returns the first answer without translating again")),
    request_body(content = OpenAiTranslationForm, content_type = "multipart/form-data"),
    responses(
        (status = 200, description = "The English text in the asked format; a capture was stored (`source: api`, `task: translate`)", content(
            (OpenAiTranscription = "application/json"),
            (OpenAiVerboseTranscription = "application/json"),
            (String = "text/plain"),
            (String = "text/vtt"),
            (String = "application/x-subrip"),
        )),
        (status = 400, description = "`invalid_request`, `error.param` naming the field (as for transcriptions; `timestamp_granularities[]` and `stream` are refused here; `model` when the recogniser is English-only)", body = OpenAiError),
        docs::OpenAi<docs::Transcribe>, docs::OpenAi<docs::NotMultipart>, docs::OpenAi<docs::RecogniserBusy>,
    ))]
pub async fn create_openai_translation(
    State(state): State<Core>,
    Extension(principal): Extension<Arc<Principal>>,
    request: Request,
) -> Result<Response, ApiError> {
    handle(state, principal, request, Task::Translate).await
}

async fn handle(
    state: Core,
    principal: Arc<Principal>,
    request: Request,
    task: Task,
) -> Result<Response, ApiError> {
    let (parts, body) = request.into_parts();
    let key = idempotency::key_from(&parts.headers)?;
    require_multipart(&parts.headers)?;
    // Admission before work: the place is taken before the upload is read.
    let place = match service::take_place(&state, &principal).await {
        Ok(place) => place,
        Err(err) => {
            discard(body, BODY_LIMIT, state.request_timeout());
            return Err(err);
        }
    };
    let mut multipart = Multipart::from_request(Request::from_parts(parts, body), &())
        .await
        .map_err(|e| unreadable_form(e.status(), &e))?;
    let form = match read_form(
        &mut multipart,
        task,
        &crate::service::transcription::model_name(&state),
    )
    .await
    {
        Ok(form) => form,
        Err(err) => {
            // The rest of a refused form is read and discarded behind the answer (as
            // `http::body::discard` does for JSON uploads): a connection closed on unread bytes
            // is reset, and a client still sending its file would see the reset, not the 400.
            let within = state.request_timeout();
            tokio::spawn(async move {
                let _ = tokio::time::timeout(within, discard_form(multipart)).await;
            });
            return Err(err);
        }
    };
    let operation = match task {
        Task::Transcribe => KeyUse::AudioTranscription,
        Task::Translate => KeyUse::AudioTranslation,
    };
    let Form {
        file,
        options,
        format,
        granularities,
        stream,
    } = form;
    let (file, fingerprint) = if key.is_some() {
        let tag = options.clone();
        tokio::task::spawn_blocking(move || {
            let fingerprint = service::fingerprint(operation, &file, &tag);
            (file, fingerprint)
        })
        .await
        .map_err(ApiError::internal)?
    } else {
        (file, Vec::new())
    };
    let keyed = Keyed {
        operation,
        key,
        fingerprint,
    };
    if stream {
        return Ok(streamed(state, principal, place, file, options, keyed).await);
    }
    let incoming = Incoming {
        audio: std::future::ready(Ok(file)),
        source: "api",
        param: "file",
        options,
        progress: None,
    };
    let done = service::run(&state, &principal, place, incoming, keyed).await?;
    Ok(render(&done, format, granularities))
}

/// A form that cannot be read: 413 when it is over the body limit, 400 otherwise.
fn unreadable_form(status: StatusCode, error: &dyn std::fmt::Display) -> ApiError {
    if status == StatusCode::PAYLOAD_TOO_LARGE {
        ApiError::new(
            ErrorCode::PayloadTooLarge,
            "The form is larger than 25 MiB of audio allows.",
        )
        .with_param("file")
    } else {
        ApiError::invalid("file", format!("The form could not be read: {error}"))
    }
}

fn require_multipart(headers: &HeaderMap) -> Result<(), ApiError> {
    let is_form = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.get(..19)
                .is_some_and(|p| p.eq_ignore_ascii_case("multipart/form-data"))
        });
    if is_form {
        Ok(())
    } else {
        Err(ApiError::new(
            ErrorCode::UnsupportedMediaType,
            "Send the request as multipart/form-data (file, model and the other fields).",
        ))
    }
}

/// Reads the form, refusing every field it does not support by name.
/// Reads the remaining fields of a form and drops them (bounded by the route's body limit).
async fn discard_form(mut multipart: Multipart) {
    while let Ok(Some(mut field)) = multipart.next_field().await {
        while let Ok(Some(_)) = field.chunk().await {}
    }
}

async fn read_form(
    multipart: &mut Multipart,
    task: Task,
    installed: &str,
) -> Result<Form, ApiError> {
    let unreadable = |e: MultipartError| unreadable_form(e.status(), &e);
    let mut file: Option<Vec<u8>> = None;
    let mut model: Option<String> = None;
    let mut language: Option<String> = None;
    let mut prompt: Option<String> = None;
    let mut response_format: Option<String> = None;
    let mut temperature: Option<String> = None;
    let mut granularities: Vec<String> = Vec::new();
    let mut stream: Option<String> = None;
    let mut languages: Vec<String> = Vec::new();
    let mut keywords: Vec<String> = Vec::new();
    while let Some(field) = multipart.next_field().await.map_err(unreadable)? {
        let name = field.name().unwrap_or_default().to_owned();
        let translate = task == Task::Translate;
        match name.as_str() {
            "file" => {
                if file.is_some() {
                    return Err(ApiError::invalid("file", "Send one file."));
                }
                file = Some(read_file(field).await?);
            }
            "model" => model = Some(text(field, &name).await?),
            "language" => language = Some(text(field, &name).await?),
            "prompt" => prompt = Some(text(field, &name).await?),
            "response_format" => response_format = Some(text(field, &name).await?),
            "temperature" => temperature = Some(text(field, &name).await?),
            "timestamp_granularities[]" | "timestamp_granularities" if !translate => {
                granularities.push(text(field, &name).await?);
            }
            "stream" if !translate => stream = Some(text(field, &name).await?),
            "languages[]" | "languages" if !translate => {
                languages.push(text(field, &name).await?);
            }
            "keywords[]" | "keywords" if !translate => {
                keywords.push(text(field, &name).await?);
                if keywords.len() > MAX_KEYWORDS {
                    return Err(ApiError::invalid(
                        "keywords",
                        format!("at most {MAX_KEYWORDS} keywords"),
                    ));
                }
            }
            "include[]" | "include" if !translate => {
                let value = text(field, &name).await?;
                return Err(ApiError::invalid(
                    name,
                    format!(
                        "include {value:?} is not supported: token log-probabilities are not \
                         returned; send no include[]."
                    ),
                ));
            }
            "" => return Err(ApiError::invalid("file", "A form field has no name.")),
            _ => {
                return Err(ApiError::invalid(
                    name.clone(),
                    format!(
                        "{name} is not supported by this {}; accepted fields: file, model, \
                         language, prompt, response_format, temperature{}.",
                        if translate {
                            "translation endpoint"
                        } else {
                            "endpoint"
                        },
                        if translate {
                            ""
                        } else {
                            ", timestamp_granularities[], stream, languages[], keywords[]"
                        }
                    ),
                ));
            }
        }
    }
    let file = file.ok_or_else(|| ApiError::invalid("file", "file is required"))?;
    if file.is_empty() {
        return Err(ApiError::invalid("file", "file must not be empty"));
    }
    check_model(model.as_deref(), installed)?;
    let format = match response_format.as_deref() {
        None | Some("json") => Format::Json,
        Some("text") => Format::Text,
        Some("srt") => Format::Srt,
        Some("vtt") => Format::Vtt,
        Some("verbose_json") => Format::VerboseJson,
        Some("diarized_json") => {
            return Err(ApiError::invalid(
                "response_format",
                "diarized_json is not supported: there is no speaker diarisation; use json, \
                 text, srt, vtt or verbose_json.",
            ));
        }
        Some(other) => {
            return Err(ApiError::invalid(
                "response_format",
                format!(
                    "response_format {other:?} is not one of json, text, srt, vtt, verbose_json."
                ),
            ));
        }
    };
    let (mut segments, mut words) = (false, false);
    for granularity in &granularities {
        match granularity.as_str() {
            "segment" => segments = true,
            "word" => words = true,
            other => {
                return Err(ApiError::invalid(
                    "timestamp_granularities[]",
                    format!("timestamp granularity {other:?} is not one of segment, word."),
                ));
            }
        }
    }
    if !granularities.is_empty() && format != Format::VerboseJson {
        return Err(ApiError::invalid(
            "timestamp_granularities[]",
            "timestamp_granularities[] needs response_format verbose_json.",
        ));
    }
    if granularities.is_empty() {
        segments = true;
    }
    let stream = match stream.as_deref() {
        None => false,
        Some(v) if v.eq_ignore_ascii_case("false") => false,
        Some(v) if v.eq_ignore_ascii_case("true") => true,
        Some(_) => return Err(ApiError::invalid("stream", "stream must be true or false.")),
    };
    if stream && !matches!(format, Format::Json | Format::Text) {
        return Err(ApiError::invalid(
            "stream",
            "stream=true answers with transcript.text events: use response_format json or text.",
        ));
    }
    let timestamps = match format {
        Format::Json | Format::Text => Timestamps::None,
        Format::Srt | Format::Vtt => Timestamps::Segment,
        Format::VerboseJson if words => Timestamps::Word,
        Format::VerboseJson => Timestamps::Segment,
    };
    let temperature = match temperature.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(raw) => Some(
            raw.parse::<f64>()
                .ok()
                .filter(|t| t.is_finite())
                .ok_or_else(|| {
                    ApiError::invalid("temperature", "temperature must be a number from 0 to 1")
                })?,
        ),
    };
    let language = language.as_deref().map(str::trim).filter(|l| !l.is_empty());
    let language = first_language(language, &languages)?;
    let prompt = with_keywords(prompt, &keywords)?;
    let options =
        RecognitionOptions::new(language, task, prompt.as_deref(), temperature, timestamps)
            .map_err(|e| ApiError::invalid(e.param, e.message))?;
    Ok(Form {
        file,
        options,
        format,
        granularities: (segments, words),
        stream,
    })
}

/// Keywords a request may send (each at most [`MAX_KEYWORD_CHARS`]).
const MAX_KEYWORDS: usize = 100;
const MAX_KEYWORD_CHARS: usize = 100;

/// `languages`: the recogniser takes one language or detects among all it knows, so the first
/// of the list is the language (docs/api.md). With `language` too, `language` must be
/// one of the list.
fn first_language<'a>(
    language: Option<&'a str>,
    languages: &'a [String],
) -> Result<Option<&'a str>, ApiError> {
    let listed: Vec<&str> = languages
        .iter()
        .map(|l| l.trim())
        .filter(|l| !l.is_empty())
        .collect();
    if let Some(unknown) = listed
        .iter()
        .find(|l| !crate::domain::LANGUAGES.contains(l))
    {
        return Err(ApiError::invalid(
            "languages[]",
            format!(
                "language {unknown:?} is not a language the recogniser knows: use ISO 639-1 \
                 codes in lower case, e.g. en, de, fr"
            ),
        ));
    }
    match (language, listed.first()) {
        (language, None) => Ok(language),
        (None, Some(first)) => Ok(Some(first)),
        (Some(language), Some(_)) if listed.contains(&language) => Ok(Some(language)),
        (Some(_), Some(_)) => Err(ApiError::invalid(
            "languages[]",
            "language must be one of languages[] when both are sent",
        )),
    }
}

/// `keywords`: joined with commas after the prompt (Whisper spells names and terms it was
/// primed with); the whole prompt stays within the recogniser's limit (400 naming `keywords`).
fn with_keywords(prompt: Option<String>, keywords: &[String]) -> Result<Option<String>, ApiError> {
    let words: Vec<&str> = keywords
        .iter()
        .map(|k| k.trim())
        .filter(|k| !k.is_empty())
        .collect();
    if words.is_empty() {
        return Ok(prompt);
    }
    if let Some(long) = words.iter().find(|k| k.chars().count() > MAX_KEYWORD_CHARS) {
        return Err(ApiError::invalid(
            "keywords",
            format!("keyword {long:?} is longer than {MAX_KEYWORD_CHARS} characters"),
        ));
    }
    let joined = words.join(", ");
    let prompt = match prompt.as_deref().map(str::trim) {
        None | Some("") => joined,
        Some(p) => format!("{p} {joined}"),
    };
    if prompt.chars().count() > crate::domain::MAX_PROMPT_CHARS {
        return Err(ApiError::invalid(
            "keywords",
            format!(
                "the prompt with its keywords is longer than {} characters",
                crate::domain::MAX_PROMPT_CHARS
            ),
        ));
    }
    Ok(Some(prompt))
}

/// The OpenAI model names, or the installed recogniser's own id; anything else is refused.
pub(crate) fn check_model(model: Option<&str>, installed: &str) -> Result<(), ApiError> {
    match model.map(str::trim) {
        None | Some("") => Err(ApiError::invalid("model", "model is required")),
        Some(m) if OPENAI_MODELS.contains(&m) || m == installed => Ok(()),
        Some(other) => Err(ApiError::invalid(
            "model",
            format!(
                "model {other:?} is not available here: use whisper-1, gpt-4o-transcribe, \
                 gpt-4o-mini-transcribe, gpt-transcribe or the installed recogniser {installed}."
            ),
        )),
    }
}

async fn read_file(mut field: Field<'_>) -> Result<Vec<u8>, ApiError> {
    let mut bytes = Vec::new();
    while let Some(chunk) = field
        .chunk()
        .await
        .map_err(|e| unreadable_form(e.status(), &e))?
    {
        if bytes.len() + chunk.len() > MAX_AUDIO_BYTES {
            return Err(
                ApiError::new(ErrorCode::PayloadTooLarge, "file is larger than 25 MiB.")
                    .with_param("file"),
            );
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

/// A text field, at most 64 KiB.
async fn text(mut field: Field<'_>, name: &str) -> Result<String, ApiError> {
    const MAX: usize = 64 * 1024;
    let mut bytes = Vec::new();
    while let Some(chunk) = field
        .chunk()
        .await
        .map_err(|e| ApiError::invalid(name.to_owned(), format!("{name} could not be read: {e}")))?
    {
        if bytes.len() + chunk.len() > MAX {
            return Err(ApiError::invalid(
                name.to_owned(),
                format!("{name} is longer than 64 KiB"),
            ));
        }
        bytes.extend_from_slice(&chunk);
    }
    String::from_utf8(bytes)
        .map_err(|_| ApiError::invalid(name.to_owned(), format!("{name} must be UTF-8 text")))
}

fn usage(t: &Transcribed) -> OpenAiUsage {
    OpenAiUsage {
        kind: "duration",
        seconds: (t.duration_ms.max(0) as u64).div_ceil(1000),
    }
}

/// The answer in the asked format, the first time and on a replay.
fn render(done: &Done, format: Format, (segments, words): (bool, bool)) -> Response {
    let t = &done.transcribed;
    let plain = |content_type: &'static str, body: String| {
        let mut response = ([(header::CONTENT_TYPE, content_type)], body).into_response();
        if done.replayed {
            response.headers_mut().insert(
                "idempotent-replayed",
                axum::http::HeaderValue::from_static("true"),
            );
        }
        response
    };
    match format {
        Format::Json => idempotency::json_answer(
            StatusCode::OK,
            &[],
            &OpenAiTranscription {
                text: t.text.clone(),
                usage: usage(t),
            },
            done.replayed,
        ),
        Format::Text => plain("text/plain; charset=utf-8", format!("{}\n", t.text)),
        Format::Srt => plain(
            CaptionFormat::Srt.content_type(),
            captions(&t.segments, CaptionFormat::Srt),
        ),
        Format::Vtt => plain(
            CaptionFormat::Vtt.content_type(),
            captions(&t.segments, CaptionFormat::Vtt),
        ),
        Format::VerboseJson => idempotency::json_answer(
            StatusCode::OK,
            &[],
            &OpenAiVerboseTranscription {
                task: t.task.as_str(),
                language: t.language.clone(),
                duration: t.duration,
                text: t.text.clone(),
                segments: segments.then(|| t.segments.iter().cloned().map(Into::into).collect()),
                words: words.then(|| t.words.iter().cloned().map(Into::into).collect()),
                usage: usage(t),
            },
            done.replayed,
        ),
    }
}

/// `stream=true`: the transcription runs in a task that hands each segment on as it is decoded;
/// the answer starts with the first segment (so a refusal before it, e.g. undecodable audio, is
/// still an ordinary error), then one `transcript.text.delta` a segment and a final
/// `transcript.text.done`. A replay sends its whole text as one delta.
async fn streamed(
    state: Core,
    principal: Arc<Principal>,
    place: service::Place,
    file: Vec<u8>,
    options: RecognitionOptions,
    keyed: Keyed,
) -> Response {
    let (progress, mut segments) = tokio::sync::mpsc::unbounded_channel();
    let mut task = tokio::spawn(async move {
        let incoming = Incoming {
            audio: std::future::ready(Ok(file)),
            source: "api",
            param: "file",
            options,
            progress: Some(progress),
        };
        service::run(&state, &principal, place, incoming, keyed).await
    });
    let first = segments.recv().await;
    let (events, receiver) = tokio::sync::mpsc::unbounded_channel::<Event>();
    let delta = |text: &str| {
        Event::default().data(json!({"type": "transcript.text.delta", "delta": text}).to_string())
    };
    if first.is_none() {
        // Nothing was decoded: a refusal, a replay, or a clip without speech.
        let done = match (&mut task).await {
            Ok(Ok(done)) => done,
            Ok(Err(err)) => return err.into_response(),
            Err(err) => return ApiError::internal(err).into_response(),
        };
        if !done.transcribed.text.is_empty() {
            let _ = events.send(delta(&done.transcribed.text));
        }
        let _ = events.send(finished(&done.transcribed.text));
    } else {
        tokio::spawn(async move {
            let mut next = first;
            while let Some((segment, _words)) = next {
                let _ = events.send(delta(&segment.text));
                next = segments.recv().await;
            }
            let last = match task.await {
                Ok(Ok(done)) => finished(&done.transcribed.text),
                Ok(Err(err)) => failed(&err),
                Err(err) => failed(&ApiError::internal(err)),
            };
            let _ = events.send(last);
        });
    }
    let stream = futures_util::stream::unfold(receiver, |mut receiver| async move {
        receiver
            .recv()
            .await
            .map(|event| (Ok::<_, Infallible>(event), receiver))
    });
    Sse::new(stream).into_response()
}

fn finished(text: &str) -> Event {
    Event::default().data(json!({"type": "transcript.text.done", "text": text}).to_string())
}

fn failed(err: &ApiError) -> Event {
    Event::default().data(openai_stream_error(err).to_string())
}
