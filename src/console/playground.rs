//! `/console/playground`: speech and transcription in the browser, for the signed-in owner of
//! the account (issue 30 items 1 and 2). The same core operations as the API
//! (`service::speech::create`, `service::transcription::run`: admission, allowance, metering,
//! limits), authenticated by the console session ([`Principal::console`]), not by a key. Works
//! without JavaScript: a form, then the generation's page, which refreshes itself until the
//! audio is ready; a clip uploaded as a file is transcribed into a capture with `source: "app"`.

use askama::Template;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::page::{
    Chrome, PageError, not_owned, render, see_other, shown_on_page, with_retry_after,
};
use super::session::{CsrfForm, SignedIn};
use super::upload::{self, FileRule};
use crate::audio::AudioFormat;
use crate::console::ConsoleState;
use crate::domain::{
    IdempotencyKey, RecognitionOptions, Seed, SpeechText, Task, Temperature, Timestamps,
};
use crate::http::error::ApiError;
use crate::http::error::HttpStatus;
use crate::http::models::Generation;
use crate::http::speech_delivery;
use crate::service::idempotency::{KeyUse, Keyed};
use crate::service::operations::Operation;
use crate::service::speech::{self, Fields, SpeechRequest, SyncSpeechRequest, VoiceChoice};
use crate::service::transcription::{self, Incoming};
use crate::service::views::{GenerationRow, SpokenWord};
use crate::service::{Principal, ServiceError, reads};

/// Body limit of the transcription form: the API's clip limit and the other fields.
pub const TRANSCRIBE_BODY_LIMIT: usize = 25 * 1024 * 1024 + 64 * 1024;

/// Names of the form's fields, for the core's refusals.
const FIELDS: Fields = Fields {
    text: "text",
    voice: "voice",
    temperature: "temperature",
    engine: "voice",
};

/// A generation as the page shows it.
pub struct Shown {
    pub id: String,
    pub status: String,
    pub error: String,
    /// Percent rendered while generating.
    pub percent: u32,
    /// Relative signed link; empty without audio.
    pub audio: String,
    pub duration: String,
    pub words: Vec<SpokenWord>,
}

/// A transcript as the page shows it.
pub struct Heard {
    pub id: String,
    /// The recogniser's words as decoded.
    pub raw: String,
    /// The stored, refined transcript (what `GET /v1/captures/{id}` returns as `text`).
    pub text: String,
    pub language: String,
    pub duration: String,
    /// Each word with its start and end, in seconds.
    pub words: Vec<(String, String)>,
}

#[derive(Template)]
#[template(path = "console/playground.html")]
struct PlaygroundPage {
    chrome: Chrome,
    voices: Vec<String>,
    /// What the form holds (after a refusal: what was sent).
    text: String,
    voice: String,
    seed: String,
    temperature: String,
    timestamps: bool,
    shown: Option<Shown>,
    heard: Option<Heard>,
    error: String,
    /// The refusal's stable code (`data-code` of the error), empty without one.
    error_code: &'static str,
    /// The account's plan lets it use the playground.
    allowed: bool,
    /// It does so on the app's free allowance (no plan).
    free: bool,
}

/// The console owner's principal: the account's plan, or without one the app's free allowance.
pub(super) fn principal(state: &ConsoleState, user: &SignedIn) -> Result<Principal, ServiceError> {
    Principal::console(
        &user.account_id,
        &user.plan,
        &user.features,
        state.console.free,
    )
}

/// The playground's refusal before a body is read: the operation's own requirement.
fn allowed(principal: &Principal, operation: Operation) -> Result<(), ServiceError> {
    operation.check(principal)
}

async fn voices(state: &ConsoleState, account_id: &str) -> Result<Vec<String>, PageError> {
    Ok(crate::service::voices::names(state, account_id).await?)
}

#[derive(Deserialize, Default)]
pub struct Shows {
    #[serde(default)]
    generation: String,
}

#[derive(Default)]
struct Page {
    text: String,
    voice: String,
    seed: String,
    temperature: String,
    timestamps: bool,
    shown: Option<Shown>,
    heard: Option<Heard>,
    error: String,
    error_code: &'static str,
}

impl Page {
    /// An empty form (word timings ticked), nothing shown.
    fn blank() -> Self {
        Self {
            timestamps: true,
            ..Self::default()
        }
    }

    /// `self` with the refusal's reason and code.
    fn refused(self, err: &ServiceError) -> Self {
        Self {
            error: err.detail.clone(),
            error_code: err.code.as_str(),
            ..self
        }
    }
}

/// The page of a form's outcome: a started generation's page, a client error shown on the
/// form as sent (`sent`), anything else the error page.
async fn started_or_refused(
    state: &ConsoleState,
    user: &SignedIn,
    started: Result<String, ServiceError>,
    sent: Page,
) -> Result<Response, PageError> {
    match started {
        Ok(id) => Ok(see_other(&format!("/console/playground?generation={id}"))),
        Err(err) => {
            let err = shown_on_page(err)?;
            let mut response = page(state, user, err.code.status(), sent.refused(&err)).await?;
            with_retry_after(&mut response, err.retry_after_secs);
            Ok(response)
        }
    }
}

async fn page(
    state: &ConsoleState,
    user: &SignedIn,
    status: StatusCode,
    content: Page,
) -> Result<Response, PageError> {
    let principal = principal(state, user)?;
    let page = PlaygroundPage {
        chrome: Chrome::signed_in(user, "playground"),
        voices: voices(state, &user.account_id).await?,
        text: content.text,
        voice: content.voice,
        seed: content.seed,
        temperature: content.temperature,
        timestamps: content.timestamps,
        shown: content.shown,
        heard: content.heard,
        error: content.error,
        error_code: content.error_code,
        allowed: allowed(&principal, Operation::CreateSpeech).is_ok(),
        free: principal.on_free_allowance(),
    };
    Ok(render(status, &page))
}

/// The playground, and the generation `?generation=` names (the account's own only).
pub async fn show(
    State(state): State<ConsoleState>,
    user: SignedIn,
    Query(shows): Query<Shows>,
) -> Result<Response, PageError> {
    let shown = match shows.generation.trim() {
        "" => None,
        id => {
            let principal = principal(&state, &user)?;
            let row = reads::generation(&state, &principal, None, id)
                .await
                .map_err(not_owned)?;
            Some(present(&state, row))
        }
    };
    let content = Page {
        shown,
        ..Page::blank()
    };
    page(&state, &user, StatusCode::OK, content).await
}

fn present(state: &ConsoleState, row: GenerationRow) -> Shown {
    let generation = Generation::present(state, row);
    // The owner's own route, not the signed link: that one needs a plan, and the app's free
    // use plays what it made too.
    let audio = if generation.audio_url.is_some() {
        audio_path(&generation.id)
    } else {
        String::new()
    };
    Shown {
        status: generation.status.clone(),
        error: generation.error.clone().unwrap_or_default(),
        percent: (generation.progress.unwrap_or(0.0) * 100.0) as u32,
        audio,
        duration: generation
            .duration_ms
            .map(|ms| format!("{:.1} s", ms as f64 / 1000.0))
            .unwrap_or_default(),
        words: generation
            .words
            .unwrap_or_default()
            .into_iter()
            .map(|w| SpokenWord {
                text: w.text,
                start: w.start,
                end: w.end,
                source_start: w.source_start,
                source_end: w.source_end,
            })
            .collect(),
        id: generation.id,
    }
}

#[derive(Deserialize)]
pub struct SpeakForm {
    #[serde(default)]
    text: String,
    #[serde(default)]
    voice: String,
    #[serde(default)]
    seed: String,
    /// Engines that take one (chatterbox); empty for the engine's default.
    #[serde(default)]
    temperature: String,
    timestamps: Option<String>,
}

/// Starts a generation as the API's `POST /v1/speech` does, and shows its page; a refusal shows
/// the reason (naming the field) and the form as sent, and starts nothing.
pub async fn speak(
    State(state): State<ConsoleState>,
    user: SignedIn,
    CsrfForm(form): CsrfForm<SpeakForm>,
) -> Result<Response, PageError> {
    let started = start(&state, &user, &form).await;
    let sent = Page {
        timestamps: form.timestamps.is_some(),
        text: form.text,
        voice: form.voice,
        seed: form.seed,
        temperature: form.temperature,
        ..Page::default()
    };
    started_or_refused(&state, &user, started, sent).await
}

async fn start(
    state: &ConsoleState,
    user: &SignedIn,
    form: &SpeakForm,
) -> Result<String, ServiceError> {
    let principal = principal(state, user)?;
    allowed(&principal, Operation::CreateSpeech)?;
    let (text, seed, temperature) = parse_speech_fields(form)?;
    let request = SpeechRequest {
        text,
        voice: VoiceChoice::Name(form.voice.trim()),
        seed,
        temperature,
        format: AudioFormat::Mp3,
        word_timestamps: form.timestamps.is_some(),
    };
    let keyed = Keyed::json(KeyUse::Speech, None, &serde_json::Value::Null);
    Ok(speech::create(state, &principal, request, FIELDS, keyed)
        .await?
        .generation_id)
}

type Parsed = (SpeechText, Option<Seed>, Option<Temperature>);

fn parse_speech_fields(form: &SpeakForm) -> Result<Parsed, ServiceError> {
    let text = SpeechText::new(&form.text)
        .map_err(|m| ServiceError::invalid("text", format!("The text {m}.")))?;
    let seed = match form.seed.trim() {
        "" => None,
        raw => Some(
            raw.parse::<u64>()
                .ok()
                .and_then(|n| Seed::new(n).ok())
                .ok_or_else(|| {
                    ServiceError::invalid(
                        "seed",
                        "The seed is a whole number from 0 to 2^53−1, or empty.",
                    )
                })?,
        ),
    };
    let temperature = match form.temperature.trim() {
        "" => None,
        raw => Some(
            raw.parse::<f64>()
                .ok()
                .and_then(|t| Temperature::new(t).ok())
                .ok_or_else(|| {
                    ServiceError::invalid(
                        "temperature",
                        "The temperature is a number from 0.05 to 2, or empty.",
                    )
                })?,
        ),
    };
    Ok((text, seed, temperature))
}

/// `POST /console/playground/stream`, what the page's script sends instead of the form: the
/// same speech, through the synchronous core operation (`POST /v1/audio/speech`'s: the same
/// admission, allowance, metering and limits), its mp3 streamed as the worker renders it, so
/// that the page's `<audio>` plays it through Media Source Extensions while the rest is made.
/// `X-Service-Generation-Id` names the generation (the page links it: download, word timings).
/// A refusal is a JSON problem document (`detail` says why), which the script shows.
pub async fn stream(
    State(state): State<ConsoleState>,
    user: SignedIn,
    CsrfForm(form): CsrfForm<SpeakForm>,
) -> Response {
    match streamed(&state, &user, &form).await {
        Ok(response) => response,
        Err(err) => err.into_response(),
    }
}

async fn streamed(
    state: &ConsoleState,
    user: &SignedIn,
    form: &SpeakForm,
) -> Result<Response, ApiError> {
    let principal = principal(state, user)?;
    allowed(&principal, Operation::CreateSpeech)?;
    let (text, seed, temperature) = parse_speech_fields(form)?;
    let request = SyncSpeechRequest {
        text,
        voice: form.voice.trim(),
        engine: None,
        seed,
        temperature,
        format: AudioFormat::Mp3,
    };
    let keyed = Keyed::json(KeyUse::SyncSpeech, None, &serde_json::Value::Null);
    let accepted = speech::create_sync(state, &principal, request, FIELDS, keyed).await?;
    speech_delivery::deliver(state, &accepted.generation_id, None, accepted.replayed).await
}

/// Where the console plays and downloads a generation's audio (`GET /console/audio/{id}`).
pub fn audio_path(id: &str) -> String {
    format!("/console/audio/{id}")
}

/// `GET /console/audio/{id}`: the account's own generation's audio, for its signed-in owner
/// whatever the plan (the signed `/v1/audio` link needs one).
pub async fn audio(
    State(state): State<ConsoleState>,
    user: SignedIn,
    axum::extract::Path(id): axum::extract::Path<String>,
) -> Result<Response, PageError> {
    let principal = principal(&state, &user)?;
    let delivery = crate::service::delivery::owned(&state, &principal, &id)
        .await
        .map_err(not_owned)?;
    let mut response = speech_delivery::render(delivery);
    response.headers_mut().insert(
        axum::http::header::CACHE_CONTROL,
        axum::http::HeaderValue::from_static("private, no-store"),
    );
    Ok(response)
}

/// The sentence a preview speaks.
pub const PREVIEW_TEXT: &str = "Hello! This is how I sound. I can read your words aloud.";

#[derive(Deserialize)]
pub struct PreviewForm {
    #[serde(default)]
    voice: String,
}

/// `POST /console/playground/preview`: one short sentence ([`PREVIEW_TEXT`]) in the voice, as
/// a generation of the account like any other (counted, in history: about 4 s of audio), with
/// the idempotency key `console-preview-<voice id>`: a second preview within the key's 24 hours
/// replays the first (no new audio, nothing counted again). Shows the generation's page.
pub async fn preview(
    State(state): State<ConsoleState>,
    user: SignedIn,
    CsrfForm(form): CsrfForm<PreviewForm>,
) -> Result<Response, PageError> {
    let started = previewed(&state, &user, form.voice.trim()).await;
    let sent = Page {
        voice: form.voice,
        ..Page::blank()
    };
    started_or_refused(&state, &user, started, sent).await
}

async fn previewed(
    state: &ConsoleState,
    user: &SignedIn,
    voice: &str,
) -> Result<String, ServiceError> {
    let principal = principal(state, user)?;
    allowed(&principal, Operation::CreateSpeech)?;
    let profile = speech::find_voice(state, &principal, VoiceChoice::Name(voice), "voice").await?;
    let key = IdempotencyKey::parse(&format!("console-preview-{}", profile.id))
        .ok_or_else(|| ServiceError::internal("a preview key outside the key rule"))?;
    let body = serde_json::json!({ "voice_id": profile.id, "text": PREVIEW_TEXT });
    let request = SpeechRequest {
        text: SpeechText::new(PREVIEW_TEXT).map_err(ServiceError::internal)?,
        voice: VoiceChoice::Name(voice),
        seed: None,
        temperature: None,
        format: AudioFormat::Mp3,
        word_timestamps: profile.engine.reports_word_timings(),
    };
    let keyed = Keyed::json(KeyUse::Speech, Some(key), &body);
    Ok(speech::create(state, &principal, request, FIELDS, keyed)
        .await?
        .generation_id)
}

/// Transcribes an uploaded clip into a capture (`source: "app"`), as `POST /v1/transcriptions`
/// does, with word timings; shows the transcript. Admitted before the file is read (the plan,
/// the feature, the free minutes, the recogniser's and the account's places), then the form is
/// read in order, its CSRF token before the file (`console::upload`).
pub async fn transcribe(
    State(state): State<ConsoleState>,
    user: SignedIn,
    request: axum::extract::Request,
) -> Result<Response, PageError> {
    let admitted = async {
        let principal = principal(&state, &user)?;
        allowed(&principal, Operation::Transcribe)?;
        let place = transcription::take_place(&state, &principal).await?;
        Ok::<_, ServiceError>((principal, place))
    }
    .await;
    let (principal, place) = match admitted {
        Ok(admitted) => admitted,
        Err(err) => {
            upload::refuse(request, TRANSCRIBE_BODY_LIMIT, state.request_timeout());
            return refused(&state, &user, err).await;
        }
    };
    let rule = FileRule {
        field: "audio",
        max_bytes: crate::audio::MAX_AUDIO_BYTES,
        too_large: "The audio file is larger than 25 MiB.".to_owned(),
    };
    let audio = match upload::read(&user.session, request, &state, &rule).await {
        Ok(form) => form.file,
        Err(PageError::Service(err)) => return refused(&state, &user, err).await,
        Err(err) => return Err(err),
    };
    match hear(&state, &principal, place, audio).await {
        Ok(heard) => {
            let content = Page {
                heard: Some(heard),
                ..Page::blank()
            };
            page(&state, &user, StatusCode::OK, content).await
        }
        Err(err) => refused(&state, &user, err).await,
    }
}

/// The page with a refusal's reason (a client error), or the error page (anything else).
async fn refused(
    state: &ConsoleState,
    user: &SignedIn,
    err: ServiceError,
) -> Result<Response, PageError> {
    let err = shown_on_page(err)?;
    let mut response = page(state, user, err.code.status(), Page::blank().refused(&err)).await?;
    with_retry_after(&mut response, err.retry_after_secs);
    Ok(response)
}

async fn hear(
    state: &ConsoleState,
    principal: &Principal,
    place: transcription::Place,
    audio: Vec<u8>,
) -> Result<Heard, ServiceError> {
    if audio.is_empty() {
        return Err(ServiceError::invalid(
            "audio",
            "Choose an audio file (wav, mp3, ogg, webm, flac or m4a, up to 25 MiB).",
        ));
    }
    let options = RecognitionOptions::new(None, Task::Transcribe, None, None, Timestamps::Word)
        .map_err(|e| ServiceError::invalid(e.param, e.message))?;
    let incoming = Incoming {
        audio: std::future::ready(Ok(audio)),
        source: "app",
        param: "audio",
        options,
        progress: None,
    };
    let keyed = Keyed::json(KeyUse::Transcription, None, &serde_json::Value::Null);
    let done = transcription::run(state, principal, place, incoming, keyed).await?;
    let t = done.transcribed;
    // The stored capture, as the API reads it: the raw and the refined transcript.
    let stored = reads::capture(state, principal, None, &t.capture_id).await?;
    Ok(Heard {
        id: t.capture_id,
        raw: stored.capture.transcript_raw,
        text: stored.capture.transcript_refined,
        language: t.language,
        duration: format!("{:.1} s", t.duration_ms as f64 / 1000.0),
        words: t
            .words
            .into_iter()
            .map(|w| {
                (
                    w.word.trim().to_owned(),
                    format!("{:.2}–{:.2} s", w.start, w.end),
                )
            })
            .collect(),
    })
}
