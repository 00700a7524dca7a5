//! Live transcription: a session the core owns, fed audio a message at a time, answering with
//! speech events, interim hypotheses and finals; every door's live dialect (Deepgram's
//! `/v1/listen`, OpenAI's `/v1/realtime`) translates its frames into [`LiveInput`]s and
//! [`LiveEvent`]s into its own. A dialect that configures its session after it opened (OpenAI's
//! `session.update`) sends a checked [`Tuning`].
//!
//! The pipeline: bytes → [`crate::audio::LiveDecoder`] (16 kHz, resampled once) → Silero VAD
//! (`engines::vad`, 512-sample frames, on the blocking pool) → [`utterances::Utterances`]
//! (endpointing) → Whisper through the recogniser's queue (`worker::asr`), one job of the
//! session at a time. The choices, and the limits that keep a session bounded, are in
//! docs/live-transcription.md:
//!
//! - **Admission** is a transcription's ([`super::transcription::take_place`]: feature,
//!   scope, plan, the account's transcriptions in flight, the recogniser's places), plus a place
//!   among this process's live sessions (`max_live_sessions`). The session holds its recogniser
//!   place for its whole life: once admitted, its finals are never refused.
//! - **Interims** of the open utterance at most once per `live_interim_interval_ms` of new audio,
//!   and only while the session has no recognition running and no final waiting.
//! - **Pacing**: at most [`MAX_WAITING_FINALS`] finals wait for the recogniser; while they do
//!   the session reads no more audio, its input channel fills and the door stops reading the
//!   socket (TCP pushes back on the client). Nothing grows with a client that sends faster
//!   than the recogniser keeps up.
//! - **Ends**: the client's close, `live_idle_timeout_secs` without audio or keep-alive,
//!   `live_max_session_secs` (of wall clock or of audio), shutdown, and for the app's free use
//!   (an account without a plan, in the console) its free transcription minutes: the audio is
//!   cut where they end. The finals become one capture (segments and words on the session's
//!   clock, metered like a file transcription of its length) when any audio was received.
//!
//! This file: the types a door speaks and [`open`] (admission). The session's task is
//! `session` (its recognitions in `session::recognition`); `tuning` checks a running session's
//! new settings; `utterances` endpoints.

mod session;
mod tuning;
pub mod utterances;

use std::time::Duration;

use tokio::sync::mpsc;

pub use self::tuning::{MAX_ENDPOINTING, Tuned, Tuning};
use self::utterances::EndReason;
use super::core::Core;
use super::error::{ErrorCode, ServiceError};
use super::principal::Principal;
use super::transcription;
use crate::audio::{LiveDecoder, LiveEncoding};
use crate::domain::{RecognitionOptions, Task, Timestamps, Word, new_id};
use crate::engines::vad::{FRAME, SAMPLE_RATE, Vad};

/// The largest audio message a door hands over (a door refuses larger frames).
pub const MAX_AUDIO_MESSAGE: usize = 256 * 1024;
/// Endpointing below this is raised to it: Silero's frames are 32 ms, and a pause between
/// two words is often longer than that.
pub const MIN_ENDPOINTING: Duration = Duration::from_millis(300);
/// Finals waiting for the recogniser before the session stops reading audio.
pub const MAX_WAITING_FINALS: usize = 2;
/// Inputs a door may have handed over and the session not yet taken.
const INPUT_QUEUE: usize = 16;
/// Events the session may have produced and the door not yet taken.
const EVENT_QUEUE: usize = 64;

/// The process's live transcription settings (from configuration).
#[derive(Debug, Clone)]
pub struct LiveSettings {
    pub models_dir: std::path::PathBuf,
    pub max_session: Duration,
    pub idle_timeout: Duration,
    pub interim_interval: Duration,
}

/// How a session is to run (a door's parameters, parsed).
#[derive(Debug, Clone)]
pub struct LiveOptions {
    pub encoding: LiveEncoding,
    pub sample_rate: u32,
    /// Send interim hypotheses of the open utterance.
    pub interim_results: bool,
    /// Silence that ends an utterance (raised to [`MIN_ENDPOINTING`]); `None`: only Finalize,
    /// the utterance's length and the close end one.
    pub endpointing: Option<Duration>,
    /// Silence after the last word that announces [`LiveEvent::UtteranceEnd`].
    pub utterance_end: Option<Duration>,
    /// ISO 639-1; detected when `None`.
    pub language: Option<String>,
    /// Words the recogniser is primed with (names, terms).
    pub prompt: Option<String>,
    /// The capture's `source` (`api`, `app`, `agent`).
    pub source: &'static str,
}

/// What a door hands the session.
#[derive(Debug)]
pub enum LiveInput {
    /// Audio bytes in the session's encoding (at most [`MAX_AUDIO_MESSAGE`]): the socket's own
    /// frame, never copied.
    Audio(bytes::Bytes),
    KeepAlive,
    /// End the open utterance now.
    Finalize,
    /// Drop the open utterance's audio without a final (OpenAI's `input_audio_buffer.clear`).
    Clear,
    /// New settings for the session from now on ([`Tuning::check`]).
    Tune(Tuned),
    /// No more audio: finish, store, end.
    Close,
}

/// A hypothesis of one utterance, on the session's clock (seconds from its first sample).
#[derive(Debug, Clone)]
pub struct Hypothesis {
    pub text: String,
    pub start: f64,
    pub duration: f64,
    /// With timings for finals; empty for interims.
    pub words: Vec<Word>,
    /// 0 to 1.
    pub confidence: f32,
    pub language: String,
}

/// Why a session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloseReason {
    /// The client closed it.
    Client,
    /// No audio and no keep-alive for `live_idle_timeout_secs`.
    Idle,
    /// It reached `live_max_session_secs`.
    MaxDuration,
    /// The server is shutting down.
    Shutdown,
    /// The recogniser failed.
    Failed,
    /// The app's free use: this month's free transcription minutes ran out; the audio up to
    /// them was transcribed and kept.
    FreeMinutesUsed,
}

impl CloseReason {
    /// The refusal a door shows for an ending that is one (the free minutes used up: 429
    /// `quota_exhausted`, the same as a transcription refused at its start).
    pub fn refusal(self) -> Option<ServiceError> {
        match self {
            CloseReason::FreeMinutesUsed => Some(transcription::free_minutes_used_up()),
            _ => None,
        }
    }
}

/// The end of a session.
#[derive(Debug, Clone)]
pub struct Ending {
    pub reason: CloseReason,
    /// Seconds of audio received.
    pub duration: f64,
    /// The capture the finals were stored as (none when no audio came).
    pub capture_id: Option<String>,
    /// What went wrong, when something did (the recogniser, storing the capture).
    pub error: Option<ServiceError>,
}

/// What the session tells its door, in order.
#[derive(Debug, Clone)]
pub enum LiveEvent {
    /// Speech started at `at` seconds.
    SpeechStarted {
        at: f64,
    },
    /// The utterance's speech ended at `at` seconds (its final follows).
    SpeechStopped {
        at: f64,
    },
    Interim(Hypothesis),
    /// The utterance's final, and why it ended. An empty Finalize with nothing open answers
    /// with an empty hypothesis (reason `Finalize`).
    Final {
        hypothesis: Hypothesis,
        reason: EndReason,
    },
    /// Silence of `utterance_end` followed the last word (which ended at `last_word_end`).
    UtteranceEnd {
        last_word_end: f64,
    },
    /// The last event.
    Ended(Ending),
}

/// A door's handle on an open session: [`LiveSession::split`] it into what goes in and what
/// comes out. Dropping both ends the session as a close would.
pub struct LiveSession {
    id: String,
    inputs: LiveInputs,
    events: LiveEvents,
}

/// The session's input side (cheap to clone).
#[derive(Clone)]
pub struct LiveInputs(mpsc::Sender<LiveInput>);

/// The session's events.
pub struct LiveEvents(mpsc::Receiver<LiveEvent>);

impl LiveSession {
    /// The session's id, which is also its capture's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn split(self) -> (LiveInputs, LiveEvents) {
        (self.inputs, self.events)
    }
}

impl LiveInputs {
    /// Hands `input` over, waiting while the session is behind (the pacing). `false`: the
    /// session has ended.
    pub async fn send(&self, input: LiveInput) -> bool {
        self.0.send(input).await.is_ok()
    }
}

impl LiveEvents {
    /// The next event; `None` after [`LiveEvent::Ended`].
    pub async fn next(&mut self) -> Option<LiveEvent> {
        self.0.recv().await
    }
}

/// Opens a live session for `principal`: the transcription's requirement and places
/// ([`transcription::take_place`]; for the app's free use 429 `quota_exhausted` when less than
/// a frame of its free minutes is left), a place among the process's live sessions (503 with
/// `Retry-After` when all are taken), the options checked (400 naming the parameter), and the
/// voice activity detector loaded. Everything a door must refuse before it upgrades.
pub async fn open(
    core: &Core,
    principal: &Principal,
    options: LiveOptions,
) -> Result<LiveSession, ServiceError> {
    super::operations::Operation::Transcribe.check(principal)?;
    let decoder = LiveDecoder::new(options.encoding, options.sample_rate).map_err(|_| {
        ServiceError::invalid(
            "sample_rate",
            "sample_rate must be between 8000 and 384000 Hz",
        )
    })?;
    let recognition = RecognitionOptions::new(
        options.language.as_deref(),
        Task::Transcribe,
        options.prompt.as_deref(),
        None,
        Timestamps::Word,
    )
    .map_err(|e| ServiceError::invalid(e.param, e.message))?;
    let settings = core.live.clone();
    let slot = core.live_sessions.take("process").ok_or_else(|| {
        metrics::counter!("voiced_live_refusals_total").increment(1);
        ServiceError::new(
            ErrorCode::ServiceUnavailable,
            "This server has as many live transcription sessions as it allows; retry shortly.",
        )
        .with_retry_after(5)
    })?;
    let place = transcription::take_place(core, principal).await?;
    // Whole 16 kHz samples of the free minutes left (a place of the free use is one per account,
    // so nothing else spends them while the session holds it); less than a frame is nothing.
    let free_left = place
        .free_left_ms
        .map(|ms| u64::try_from(ms).unwrap_or(0) * u64::from(SAMPLE_RATE) / 1000);
    if free_left.is_some_and(|left| left < FRAME as u64) {
        return Err(transcription::free_minutes_used_up());
    }
    let models_dir = settings.models_dir.clone();
    let vad = tokio::task::spawn_blocking(move || Vad::load(&models_dir))
        .await
        .map_err(ServiceError::internal)?
        .map_err(|e| {
            tracing::error!(error = ?e, "live transcription without its voice activity detector");
            ServiceError::unavailable(60)
        })?;
    let id = new_id("cap");
    let (input_tx, input_rx) = mpsc::channel(INPUT_QUEUE);
    let (event_tx, event_rx) = mpsc::channel(EVENT_QUEUE);
    session::spawn(
        session::Admitted {
            core: core.clone(),
            principal: principal.clone(),
            id: id.clone(),
            place,
            free_left,
            slot,
            vad,
            decoder,
            recognition,
            options,
            settings,
            events: event_tx,
        },
        input_rx,
    );
    Ok(LiveSession {
        id,
        inputs: LiveInputs(input_tx),
        events: LiveEvents(event_rx),
    })
}
