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

pub mod utterances;

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::{Instant, sleep_until};

use self::utterances::{EndReason, Mark, Utterance, Utterances};
use super::core::{Core, Slot};
use super::error::{ErrorCode, ServiceError};
use super::principal::Principal;
use super::transcription::{self, Place, Transcribed};
use crate::audio::{LiveDecoder, LiveEncoding};
use crate::domain::{RecognitionOptions, Segment, Task, Timestamps, Word, new_id};
use crate::engines::vad::{FRAME, SAMPLE_RATE, Vad};
use crate::engines::whisper::Transcript;
use crate::worker::asr::Failure;

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
    /// Audio bytes in the session's encoding (at most [`MAX_AUDIO_MESSAGE`]).
    Audio(Vec<u8>),
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

/// New settings for a running session: its audio format, endpointing, detection and the
/// recogniser's language and prompt. Every field replaces the session's.
#[derive(Debug, Clone)]
pub struct Tuning {
    pub encoding: LiveEncoding,
    pub sample_rate: u32,
    /// As [`LiveOptions::endpointing`] (raised to [`MIN_ENDPOINTING`]; at most 60 s).
    pub endpointing: Option<Duration>,
    /// The speech probability that starts an utterance (0 to 1); `None`: the detector's own.
    pub threshold: Option<f32>,
    /// Audio kept before the first speech frame (at most
    /// [`utterances::MAX_PRE_ROLL`]); `None`: [`utterances::PRE_ROLL`].
    pub pre_roll: Option<Duration>,
    /// ISO 639-1; detected when `None`.
    pub language: Option<String>,
    pub prompt: Option<String>,
}

/// A [`Tuning`] that passed [`Tuning::check`].
#[derive(Debug, Clone)]
pub struct Tuned {
    encoding: LiveEncoding,
    sample_rate: u32,
    endpointing: Option<Duration>,
    threshold: f32,
    pre_roll: Duration,
    recognition: RecognitionOptions,
}

/// The longest endpointing a session takes.
pub const MAX_ENDPOINTING: Duration = Duration::from_secs(60);

impl Tuning {
    /// Checks the settings as [`open`] checks its options: 400 naming `sample_rate`,
    /// `endpointing`, `threshold`, `pre_roll`, `language` or `prompt`.
    pub fn check(self) -> Result<Tuned, ServiceError> {
        LiveDecoder::new(self.encoding, self.sample_rate).map_err(|_| {
            ServiceError::invalid(
                "sample_rate",
                "sample_rate must be between 8000 and 384000 Hz",
            )
        })?;
        if self.endpointing.is_some_and(|d| d > MAX_ENDPOINTING) {
            return Err(ServiceError::invalid(
                "endpointing",
                "the silence that ends an utterance is at most 60000 ms",
            ));
        }
        let threshold = match self.threshold {
            None => crate::engines::vad::THRESHOLD,
            Some(t) if (0.0..=1.0).contains(&t) => t,
            Some(_) => {
                return Err(ServiceError::invalid(
                    "threshold",
                    "threshold must be a number from 0 to 1",
                ));
            }
        };
        let pre_roll = match self.pre_roll {
            None => utterances::PRE_ROLL,
            Some(d) if d <= utterances::MAX_PRE_ROLL => d,
            Some(_) => {
                return Err(ServiceError::invalid(
                    "pre_roll",
                    "the audio kept before speech is at most 1000 ms",
                ));
            }
        };
        let recognition = RecognitionOptions::new(
            self.language.as_deref(),
            Task::Transcribe,
            self.prompt.as_deref(),
            None,
            Timestamps::Word,
        )
        .map_err(|e| ServiceError::invalid(e.param, e.message))?;
        Ok(Tuned {
            encoding: self.encoding,
            sample_rate: self.sample_rate,
            endpointing: self.endpointing.map(|d| d.max(MIN_ENDPOINTING)),
            threshold,
            pre_roll,
            recognition,
        })
    }
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
    let endpointing = options.endpointing.map(|d| d.max(MIN_ENDPOINTING));
    let session = Session {
        core: core.clone(),
        principal: principal.clone(),
        id: id.clone(),
        place,
        free_left,
        _slot: slot,
        vad: Some(vad),
        decoder,
        format: (options.encoding, options.sample_rate),
        utterances: Utterances::new(endpointing),
        pending: Vec::new(),
        recognition,
        interim_results: options.interim_results,
        utterance_end: options.utterance_end,
        source: options.source,
        settings,
        events: event_tx,
        waiting: VecDeque::new(),
        running: None,
        finals: Vec::new(),
        utterance_seq: 0,
        interim_mark: 0,
        utterance_end_due: None,
        last_word_end: 0.0,
        opened: Instant::now(),
    };
    metrics::gauge!("voiced_live_sessions").increment(1.0);
    tokio::spawn(session.run(input_rx));
    Ok(LiveSession {
        id,
        inputs: LiveInputs(input_tx),
        events: LiveEvents(event_rx),
    })
}

type Recognition = Pin<Box<dyn Future<Output = Result<Transcript, Failure>> + Send>>;

/// A recognition of the session in flight.
struct Running {
    future: Recognition,
    /// The utterance (its number and audio's place) it recognises.
    seq: u64,
    start_sample: u64,
    len: usize,
    /// `Some`: a final, and why its utterance ended.
    final_reason: Option<EndReason>,
}

/// A final waiting for the recogniser.
struct Waiting {
    seq: u64,
    utterance: Utterance,
}

struct Session {
    core: Core,
    principal: Principal,
    id: String,
    place: Place,
    /// The app's free use: the session's audio may not pass this sample.
    free_left: Option<u64>,
    _slot: Slot,
    /// Out while a batch of frames is on the blocking pool.
    vad: Option<Vad>,
    decoder: LiveDecoder,
    /// The decoder's encoding and rate.
    format: (LiveEncoding, u32),
    utterances: Utterances,
    /// Decoded audio not yet a whole frame.
    pending: Vec<f32>,
    recognition: RecognitionOptions,
    interim_results: bool,
    utterance_end: Option<Duration>,
    source: &'static str,
    settings: LiveSettings,
    events: mpsc::Sender<LiveEvent>,
    waiting: VecDeque<Waiting>,
    running: Option<Running>,
    /// Finals so far (for the capture), with their segments on the session's clock.
    finals: Vec<(Hypothesis, Vec<Segment>)>,
    /// The open (or next) utterance's number.
    utterance_seq: u64,
    /// The open utterance's length at its last interim.
    interim_mark: usize,
    /// The session's sample at which silence will have lasted `utterance_end`.
    utterance_end_due: Option<u64>,
    last_word_end: f64,
    opened: Instant,
}

fn seconds(samples: u64) -> f64 {
    samples as f64 / f64::from(SAMPLE_RATE)
}

impl Session {
    async fn run(mut self, mut inputs: mpsc::Receiver<LiveInput>) {
        let deadline = self.opened + self.settings.max_session;
        let mut idle_deadline = Instant::now() + self.settings.idle_timeout;
        let mut shutdown = self.core.shutdown_deadline.clone();
        let reason = loop {
            let reading = self.waiting.len() < MAX_WAITING_FINALS;
            if !reading {
                // Idle time counts only while the session reads.
                idle_deadline = Instant::now() + self.settings.idle_timeout;
            }
            // Biased: what the client sent is taken before the idle deadline is looked at, so a
            // session that was busy (a batch on the detector, a full queue of finals) longer
            // than the idle time does not take its own delay for the client's silence.
            tokio::select! {
                biased;
                result = finished(&mut self.running), if self.running.is_some() => {
                    let running = self.running.take().expect("guarded");
                    if let Err(e) = self.recognised(running, result).await {
                        tracing::error!(error = ?e, "live transcription: the recogniser failed");
                        break (CloseReason::Failed, Some(e));
                    }
                    self.next_job();
                }
                input = inputs.recv(), if reading => match input {
                    Some(LiveInput::Audio(bytes)) => {
                        idle_deadline = Instant::now() + self.settings.idle_timeout;
                        if let Err(e) = self.audio(&bytes).await {
                            break (CloseReason::Failed, Some(e));
                        }
                        if seconds(self.utterances.clock()) >= self.settings.max_session.as_secs_f64() {
                            break (CloseReason::MaxDuration, None);
                        }
                        if self.free_minutes_spent() {
                            break (CloseReason::FreeMinutesUsed, None);
                        }
                    }
                    Some(LiveInput::KeepAlive) => {
                        idle_deadline = Instant::now() + self.settings.idle_timeout;
                    }
                    Some(LiveInput::Finalize) => {
                        idle_deadline = Instant::now() + self.settings.idle_timeout;
                        self.finalize(EndReason::Finalize);
                        self.next_job();
                    }
                    Some(LiveInput::Clear) => {
                        idle_deadline = Instant::now() + self.settings.idle_timeout;
                        self.clear();
                    }
                    Some(LiveInput::Tune(tuned)) => {
                        idle_deadline = Instant::now() + self.settings.idle_timeout;
                        self.tune(tuned);
                    }
                    Some(LiveInput::Close) | None => break (CloseReason::Client, None),
                },
                // While it does not read, the session cannot tell a silent client.
                () = sleep_until(idle_deadline), if reading => break (CloseReason::Idle, None),
                () = sleep_until(deadline) => break (CloseReason::MaxDuration, None),
                Ok(()) = shutdown.changed() => {
                    if shutdown.borrow().is_some() {
                        break (CloseReason::Shutdown, None);
                    }
                }
            }
        };
        let ending = self.end(reason).await;
        let _ = self.events.send(LiveEvent::Ended(ending)).await;
        metrics::gauge!("voiced_live_sessions").decrement(1.0);
    }

    /// Sends `event` unless the door has gone; waits at most until the session's deadline.
    async fn emit(&mut self, event: LiveEvent) {
        let until = self.opened + self.settings.max_session;
        let _ = tokio::time::timeout_at(until, self.events.send(event)).await;
    }

    /// Whether no whole frame fits in the free minutes left (never without a free allowance).
    fn free_minutes_spent(&self) -> bool {
        self.free_left
            .is_some_and(|left| self.utterances.clock() + FRAME as u64 > left)
    }

    /// Decodes `bytes` (cut where the free minutes end), runs the detector over the whole
    /// frames and endpoints them.
    async fn audio(&mut self, bytes: &[u8]) -> Result<(), ServiceError> {
        self.decoder.push(bytes, &mut self.pending).map_err(|e| {
            ServiceError::invalid("audio", format!("the audio cannot be decoded: {e}"))
        })?;
        if let Some(left) = self.free_left {
            let room = left.saturating_sub(self.utterances.clock());
            self.pending
                .truncate(usize::try_from(room).unwrap_or(usize::MAX));
        }
        let whole = self.pending.len() / FRAME * FRAME;
        if whole == 0 {
            return Ok(());
        }
        let frames: Vec<f32> = self.pending.drain(..whole).collect();
        let mut vad = self
            .vad
            .take()
            .expect("the detector is back between batches");
        let (vad, frames, probabilities) = tokio::task::spawn_blocking(move || {
            let probabilities = vad.probabilities(&frames);
            (vad, frames, probabilities)
        })
        .await
        .map_err(ServiceError::internal)?;
        self.vad = Some(vad);
        let probabilities = probabilities
            .map_err(|e| ServiceError::internal(format!("voice activity detector: {e}")))?;
        for (frame, probability) in frames.chunks(FRAME).zip(probabilities) {
            match self.utterances.frame(frame, probability) {
                Some(Mark::SpeechStarted { at_sample }) => {
                    self.utterance_end_due = None;
                    self.interim_mark = 0;
                    self.emit(LiveEvent::SpeechStarted {
                        at: seconds(at_sample),
                    })
                    .await;
                }
                Some(Mark::Ended {
                    speech_end_sample, ..
                }) => {
                    self.emit(LiveEvent::SpeechStopped {
                        at: seconds(speech_end_sample),
                    })
                    .await;
                    if let Some(utterance) = self.utterances.take_ended() {
                        self.wait_final(utterance);
                    }
                    self.utterance_seq += 1;
                    if let Some(after) = self.utterance_end {
                        self.utterance_end_due = Some(
                            speech_end_sample
                                + (after.as_secs_f64() * f64::from(SAMPLE_RATE)) as u64,
                        );
                    }
                }
                None => {}
            }
            self.announce_utterance_end().await;
        }
        self.next_job();
        Ok(())
    }

    /// Clear: the open utterance's audio is dropped; an interim of it still running is not
    /// sent (it is of an older utterance now).
    fn clear(&mut self) {
        self.utterances.clear();
        self.utterance_seq += 1;
        self.interim_mark = 0;
    }

    /// New settings from now on; audio already decoded keeps its place on the clock.
    fn tune(&mut self, tuned: Tuned) {
        let format = (tuned.encoding, tuned.sample_rate);
        if format != self.format
            && let Ok(decoder) = LiveDecoder::new(tuned.encoding, tuned.sample_rate)
        {
            self.decoder.finish(&mut self.pending);
            self.decoder = decoder;
            self.format = format;
        }
        self.utterances.set_endpointing(tuned.endpointing);
        self.utterances
            .set_detection(tuned.threshold, tuned.pre_roll);
        self.recognition = tuned.recognition;
    }

    fn wait_final(&mut self, utterance: Utterance) {
        self.waiting.push_back(Waiting {
            seq: self.utterance_seq,
            utterance,
        });
    }

    /// Finalize (or the close): the open utterance ends now; with nothing open, an empty
    /// final answers after those waiting.
    fn finalize(&mut self, reason: EndReason) {
        let utterance = self.utterances.close(reason).unwrap_or(Utterance {
            start_sample: self.utterances.clock(),
            samples: Vec::new(),
            reason,
        });
        self.wait_final(utterance);
        self.utterance_seq += 1;
    }

    /// `UtteranceEnd` once silence has lasted `utterance_end` after the last speech, and only
    /// after that speech's final went out.
    async fn announce_utterance_end(&mut self) {
        let Some(due) = self.utterance_end_due else {
            return;
        };
        let final_outstanding = !self.waiting.is_empty()
            || self
                .running
                .as_ref()
                .is_some_and(|r| r.final_reason.is_some());
        if self.utterances.in_speech() || final_outstanding || self.utterances.clock() < due {
            return;
        }
        self.utterance_end_due = None;
        self.emit(LiveEvent::UtteranceEnd {
            last_word_end: self.last_word_end,
        })
        .await;
    }

    /// Starts the next recognition when none is running: a waiting final first, else an
    /// interim of the open utterance when it grew by the interim interval.
    fn next_job(&mut self) {
        if self.running.is_some() {
            return;
        }
        if let Some(waiting) = self.waiting.pop_front() {
            let Waiting { seq, utterance } = waiting;
            let (start_sample, len) = (utterance.start_sample, utterance.samples.len());
            let reason = utterance.reason;
            let future: Recognition = if utterance.samples.is_empty() {
                Box::pin(std::future::ready(Ok(Transcript {
                    text: String::new(),
                    language: self.recognition.language.clone().unwrap_or_default(),
                    language_probability: 1.0,
                    duration: 0.0,
                    segments: Vec::new(),
                    words: Vec::new(),
                })))
            } else {
                self.recognise(utterance.samples, Timestamps::Word)
            };
            self.running = Some(Running {
                future,
                seq,
                start_sample,
                len,
                final_reason: Some(reason),
            });
            return;
        }
        if !self.interim_results {
            return;
        }
        let interval =
            (self.settings.interim_interval.as_secs_f64() * f64::from(SAMPLE_RATE)) as usize;
        let Some((start_sample, audio)) = self.utterances.open_audio() else {
            return;
        };
        if audio.len() < self.interim_mark + interval {
            return;
        }
        self.interim_mark = audio.len();
        let (samples, len) = (audio.to_vec(), audio.len());
        let future = self.recognise(samples, Timestamps::None);
        self.running = Some(Running {
            future,
            seq: self.utterance_seq,
            start_sample,
            len,
            final_reason: None,
        });
    }

    fn recognise(&self, samples: Vec<f32>, timestamps: Timestamps) -> Recognition {
        let mut options = self.recognition.clone();
        options.timestamps = timestamps;
        // The previous final primes the decoder (a caller's own prompt, when it sent one).
        if options.prompt.is_none()
            && let Some((last, _)) = self.finals.iter().rev().find(|(h, _)| !h.text.is_empty())
        {
            options.prompt = Some(last.text.clone());
        }
        let asr = self.core.asr.clone();
        let may_widen = self.place.ticket.may_widen();
        Box::pin(async move { asr.recognize_held(samples, options, may_widen).await })
    }

    /// A recognition came back: an interim of the still open utterance goes out, a stale one
    /// is dropped; a final goes out and is kept for the capture.
    async fn recognised(
        &mut self,
        running: Running,
        result: Result<Transcript, Failure>,
    ) -> Result<(), ServiceError> {
        let transcript = result.map_err(|e| match e {
            Failure::Refused { param, message } => ServiceError::invalid(param, message),
            Failure::Failed(e) => ServiceError::internal(format!("recogniser: {e}")),
            Failure::Stopped => ServiceError::internal("recogniser: stopped"),
        })?;
        let offset = seconds(running.start_sample);
        let mut hypothesis = Hypothesis {
            text: transcript.text.trim().to_owned(),
            start: offset,
            duration: seconds(running.len as u64),
            words: transcript
                .words
                .iter()
                .map(|w| Word {
                    word: w.word.trim().to_owned(),
                    start: round_ms(w.start + offset),
                    end: round_ms(w.end + offset),
                    probability: w.probability,
                })
                .filter(|w| !w.word.is_empty())
                .collect(),
            confidence: 0.0,
            language: transcript.language.clone(),
        };
        hypothesis.confidence = confidence(&hypothesis.words, &transcript.segments);
        match running.final_reason {
            None => {
                if running.seq == self.utterance_seq && self.utterances.in_speech() {
                    self.emit(LiveEvent::Interim(hypothesis)).await;
                }
            }
            Some(reason) => {
                if let Some(last) = hypothesis.words.last() {
                    self.last_word_end = last.end;
                }
                let segments = transcript
                    .segments
                    .iter()
                    .map(|s| Segment {
                        start: round_ms(s.start + offset),
                        end: round_ms(s.end + offset),
                        seek: (offset * 100.0) as u32,
                        ..s.clone()
                    })
                    .collect();
                self.finals.push((hypothesis.clone(), segments));
                self.emit(LiveEvent::Final { hypothesis, reason }).await;
                self.announce_utterance_end().await;
            }
        }
        Ok(())
    }

    /// The close: what is still open becomes a final, every final waiting is recognised (until
    /// the session's deadline, or at shutdown the server's), the capture is stored.
    async fn end(&mut self, (reason, error): (CloseReason, Option<ServiceError>)) -> Ending {
        if error.is_none() {
            let mut tail = Vec::new();
            self.decoder.finish(&mut tail);
            self.pending.extend(tail);
            if let Some(open) = self.utterances.close(EndReason::Close) {
                self.wait_final(open);
            }
            if let Some(running) = &self.running
                && running.final_reason.is_none()
            {
                self.running = None; // an interim nobody needs any more
            }
            self.next_job();
            let until = match *self.core.shutdown_deadline.borrow() {
                Some(at) => at,
                None => self.opened + self.settings.max_session + Duration::from_secs(60),
            };
            while let Some(running) = self.running.as_mut() {
                let Ok(result) = tokio::time::timeout_at(until, &mut running.future).await else {
                    break;
                };
                let running = self.running.take().expect("present");
                if let Err(e) = self.recognised(running, result).await {
                    tracing::error!(error = ?e, "live transcription: the last final failed");
                    break;
                }
                self.next_job();
            }
        }
        let duration = seconds(self.utterances.clock());
        let mut ending = Ending {
            reason,
            duration,
            capture_id: None,
            error,
        };
        if self.utterances.clock() == 0 {
            return ending;
        }
        match self.store().await {
            Ok(()) => ending.capture_id = Some(self.id.clone()),
            Err(e) => {
                tracing::error!(error = ?e, "live transcription: storing the capture failed");
                ending.error.get_or_insert(e);
            }
        }
        ending
    }

    async fn store(&mut self) -> Result<(), ServiceError> {
        let said: Vec<&Hypothesis> = self
            .finals
            .iter()
            .map(|(h, _)| h)
            .filter(|h| !h.text.is_empty())
            .collect();
        let mut segments: Vec<Segment> = self.finals.iter().flat_map(|(_, s)| s.clone()).collect();
        for (id, segment) in segments.iter_mut().enumerate() {
            segment.id = u32::try_from(id).unwrap_or(u32::MAX);
        }
        let duration = seconds(self.utterances.clock());
        let done = Transcribed {
            capture_id: self.id.clone(),
            text: said
                .iter()
                .map(|h| h.text.as_str())
                .collect::<Vec<_>>()
                .join(" "),
            language: said
                .first()
                .map(|h| h.language.clone())
                .or_else(|| self.recognition.language.clone())
                .unwrap_or_else(|| "en".to_owned()),
            duration_ms: (duration * 1000.0).round() as i64,
            task: Task::Transcribe,
            timestamps: Timestamps::Word,
            duration,
            segments,
            words: said.iter().flat_map(|h| h.words.clone()).collect(),
        };
        transcription::store_capture(&self.core.pool, &self.principal, self.source, &done, None)
            .await
    }
}

/// The running recognition's answer (never, with none running: the branch is off then).
async fn finished(running: &mut Option<Running>) -> Result<Transcript, Failure> {
    match running {
        Some(running) => (&mut running.future).await,
        None => std::future::pending().await,
    }
}

fn round_ms(seconds: f64) -> f64 {
    (seconds * 1000.0).round() / 1000.0
}

/// The mean of the words' probabilities; without words, the segments' mean token probability.
fn confidence(words: &[Word], segments: &[Segment]) -> f32 {
    if !words.is_empty() {
        return words.iter().map(|w| w.probability).sum::<f32>() / words.len() as f32;
    }
    if segments.is_empty() {
        return 0.0;
    }
    segments.iter().map(|s| s.avg_logprob.exp()).sum::<f32>() / segments.len() as f32
}
