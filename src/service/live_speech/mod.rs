//! Live speech: a socket the core owns, fed text in pieces for up to [`MAX_CONTEXTS`] contexts
//! (one agent turn each), answering with each context's audio as it is rendered, with when each
//! character is said. Every door's speech-socket dialect (ElevenLabs' `stream-input` and
//! `multi-stream-input`, Cartesia's `/tts/websocket`) translates its messages into
//! [`SpeechInput`]s and [`SpeechEvent`]s into its own frames. docs/live-speech.md has the
//! choices:
//!
//! - **Voices.** A session opened with [`open`] speaks one voice in one format, named at the
//!   upgrade (ElevenLabs'); one opened with [`open_per_context`] is told each context's voice,
//!   engine and format by a [`SpeechInput::Speaker`] before the context's first text
//!   (Cartesia's messages name them), looked up and checked as `open` does.
//!
//! - **Phrases.** A context buffers its text ([`phrases::Buffer`]) until a phrase is complete
//!   (a sentence end, the client's chunk schedule, a flush, the end). Each phrase is one
//!   generation, admitted exactly as every speech request is (`speech::admit_phrase`: plan,
//!   scope, allowance, key ceiling, pending cap, pronunciations, normalisation, the fair
//!   queue), rendered as 16-bit wav and delivered as it is rendered, transcoded to the
//!   socket's format, with character timings from the engine's word durations
//!   ([`alignment`]). A context's phrases are spoken one after the other; contexts run side by
//!   side.
//! - **Charging** is delivery's (`delivery::CancelOnDrop`): a phrase that completes is charged
//!   its audio by its completion; one cut (its context cancelled, the client gone, the time
//!   limit, shutdown) is charged the audio up to the last chunk handed to the socket, once.
//!   A refusal of a phrase (a ceiling crossed mid-socket) ends the socket with the refusal.
//! - **Cancelling** a context ([`SpeechInput::CloseContext`] while it still holds text not
//!   flushed, or [`SpeechInput::Cancel`] whatever it holds) stops the phrase it renders inside
//!   its piece, drops what is queued, and drops its audio not yet taken by the door.
//! - **Marks** ([`SpeechInput::Mark`]) travel in a context's order: the door is told
//!   ([`Delivered::Mark`]) once everything given to the context before it was delivered.
//! - **Bounds.** [`MAX_CONTEXTS`] per socket; `max_speech_sockets` per process and
//!   `max_speech_sockets_per_account`; an idle timeout (no text and nothing rendering);
//!   `speech_socket_max_session_secs`; queues of fixed length between the door, the session,
//!   its contexts and the door's writer, so a client that reads slowly stops the rendering's
//!   delivery and then its own input, and nothing grows.

pub mod alignment;
pub mod phrases;
mod rest;
mod session;
mod speak;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::mpsc;

pub use self::alignment::{CharTimes, ChunkAlignment};
pub use self::rest::{ConvertRequest, convert};
use self::session::start;
use super::core::{Core, Slots};
use super::error::ServiceError;
use super::principal::Principal;
use super::speech::Fields;
use crate::audio::OutputFormat;
use crate::domain::EngineId;

/// Contexts one socket may hold at once (ElevenLabs' own limit).
pub const MAX_CONTEXTS: usize = 5;
/// The idle timeout when the client names none, and the longest it may name (seconds).
pub const DEFAULT_IDLE_SECS: u64 = 20;
pub const MAX_IDLE_SECS: u64 = 180;
/// The longest context id.
pub const MAX_CONTEXT_ID: usize = 128;
/// Inputs a door may have handed over and the session not yet taken.
const INPUT_QUEUE: usize = 16;
/// Events the contexts may have produced and the door not yet taken.
const EVENT_QUEUE: usize = 8;
/// Phrases one context may hold before the session waits for it.
const PHRASE_QUEUE: usize = 4;

/// The process's places for speech sockets (from configuration).
pub struct SpeechSockets {
    pub(in crate::service) process: Slots,
    pub(in crate::service) per_account: Slots,
    pub(in crate::service) max_session: Duration,
}

impl SpeechSockets {
    pub fn new(process: usize, per_account: usize, max_session: Duration) -> Self {
        Self {
            process: Slots::new(process),
            per_account: Slots::new(per_account),
            max_session,
        }
    }
}

/// The names a dialect gives the session's parameters (for its refusals).
#[derive(Debug, Clone, Copy)]
pub struct Params {
    pub speech: Fields,
    pub idle_timeout: &'static str,
    pub schedule: &'static str,
    pub context: &'static str,
}

/// How a session is to run (a door's parameters, parsed).
#[derive(Debug, Clone)]
pub struct SpeechOptions {
    /// A voice profile's id or name.
    pub voice: String,
    /// The engine the client named, and the parameter that named it (`None`: the voice's).
    pub engine: Option<(EngineId, &'static str)>,
    pub output: OutputFormat,
    /// Seconds without text (and nothing rendering) that end the socket.
    pub idle_timeout_secs: Option<u64>,
    /// Cut phrases at sentence ends only (no chunk schedule).
    pub auto_mode: bool,
    pub params: Params,
}

/// What a door hands the session.
#[derive(Debug)]
pub enum SpeechInput {
    /// Text for a context; `flush` makes what it holds a phrase now. Empty text without a
    /// flush only keeps the socket alive. `schedule`: the client's chunk schedule from now on.
    Text {
        context: String,
        text: String,
        flush: bool,
        schedule: Option<Vec<usize>>,
    },
    /// Ends a context: with text still waiting for a flush it is cancelled at once; otherwise
    /// what was flushed is finished first.
    CloseContext { context: String },
    /// No more input: every context's text is spoken, then the socket ends.
    Close,
    /// A message the door could not read: the session sends this refusal and ends.
    Refuse(ServiceError),
    /// The voice, engine and format `context` speaks with when it opens (sessions of
    /// [`open_per_context`]); ignored while the context is open. The voice is looked up and
    /// checked as [`open`] does; a refusal ends the session.
    Speaker {
        context: String,
        speaker: ContextVoice,
    },
    /// Cancels a context at once, whatever it holds or still speaks.
    Cancel { context: String },
    /// Asks for [`Delivered::Mark`] once everything `context` was given before is delivered
    /// (at once when the context is not open).
    Mark { context: String, mark: u64 },
}

impl SpeechInput {
    /// The context the input is for (a refusal of it names that context).
    pub fn context(&self) -> Option<&str> {
        match self {
            Self::Text { context, .. }
            | Self::CloseContext { context }
            | Self::Speaker { context, .. }
            | Self::Cancel { context }
            | Self::Mark { context, .. } => Some(context),
            Self::Close | Self::Refuse(_) => None,
        }
    }
}

/// What the session tells its door, in order.
#[derive(Debug)]
pub enum SpeechEvent {
    Audio {
        context: String,
        /// The phrase's generation (readable afterwards).
        generation_id: String,
        audio: Bytes,
        /// When each character of the chunk is said (engines with durations).
        alignment: Option<ChunkAlignment>,
    },
    /// The context has ended: nothing more comes for it.
    ContextDone {
        context: String,
    },
    /// A refusal (a phrase's admission, a bad message); the session ends after it.
    Refused {
        context: Option<String>,
        error: ServiceError,
    },
    Ended(EndReason),
}

/// Why a session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndReason {
    /// The client closed it, and everything it sent was spoken.
    Client,
    /// No text and nothing rendering for the idle timeout.
    Idle,
    /// It reached `speech_socket_max_session_secs`.
    MaxDuration,
    Shutdown,
    /// A refusal ended it.
    Refused,
}

/// The voice, engine and format one context speaks with (a dialect that names them per
/// context).
#[derive(Debug, Clone)]
pub struct ContextVoice {
    /// A voice profile's id or name.
    pub voice: String,
    /// The engine the client named, and the parameter that named it (`None`: the voice's).
    pub engine: Option<(EngineId, &'static str)>,
    pub output: OutputFormat,
}

/// How a session whose contexts each name their voice is to run.
#[derive(Debug, Clone)]
pub struct PerContextOptions {
    pub idle_timeout_secs: Option<u64>,
    pub auto_mode: bool,
    pub params: Params,
}

/// What a door takes from the session's events: an event, or a mark it asked for.
#[derive(Debug)]
pub enum Delivered {
    Event(SpeechEvent),
    /// Everything `context` was given before [`SpeechInput::Mark`] `mark` has been delivered.
    Mark {
        context: String,
        mark: u64,
    },
}

/// A door's handle on an open session.
pub struct SpeechSession {
    pub inputs: SpeechInputs,
    pub events: SpeechEvents,
}

/// The session's input side.
#[derive(Clone)]
pub struct SpeechInputs(mpsc::Sender<SpeechInput>);

impl SpeechInputs {
    /// Hands `input` over, waiting while the session is behind. `false`: it has ended.
    pub async fn send(&self, input: SpeechInput) -> bool {
        self.0.send(input).await.is_ok()
    }
}

/// An event, and for audio (and marks) the flag that drops it when its context was cancelled
/// first.
type Queued = (Delivered, Option<Arc<AtomicBool>>);

/// The session's events.
pub struct SpeechEvents(mpsc::Receiver<Queued>);

impl SpeechEvents {
    /// The next event; `None` after [`SpeechEvent::Ended`]. Audio of a context cancelled since
    /// it was made is dropped here: a cancel stops the audio at once.
    pub async fn next(&mut self) -> Option<SpeechEvent> {
        loop {
            if let Delivered::Event(event) = self.next_delivered().await? {
                return Some(event);
            }
        }
    }

    /// The next event or mark (the same dropping as [`Self::next`]).
    pub async fn next_delivered(&mut self) -> Option<Delivered> {
        loop {
            let (delivered, cut) = self.0.recv().await?;
            if cut.is_some_and(|c| c.load(Ordering::Acquire)) {
                continue;
            }
            return Some(delivered);
        }
    }
}

/// Opens a speech session for `principal`: the speech requirement, the voice (400
/// `invalid_request` naming it, as on every speech door), its engine (the one the client named must be the voice's, and
/// installed), the idle timeout, a place among the account's and the process's sockets (429
/// `rate_limit_exceeded`, 503 `service_unavailable`). Everything a door refuses before it
/// upgrades; each phrase is admitted on its own later.
pub async fn open(
    core: &Core,
    principal: &Principal,
    options: SpeechOptions,
) -> Result<SpeechSession, ServiceError> {
    super::operations::Operation::CreateSpeech.check(principal)?;
    let params = options.params;
    let idle = idle_timeout(options.idle_timeout_secs, params)?;
    let voice = find_voice(core, principal, &options.voice, options.engine, params).await?;
    let speaker = speak::Speaker {
        voice,
        output: options.output,
    };
    start(
        core,
        principal,
        Some(speaker),
        idle,
        options.auto_mode,
        params,
    )
}

/// Opens a session whose contexts each name their voice, engine and format
/// ([`SpeechInput::Speaker`]): what [`open`] checks, less the voice.
pub async fn open_per_context(
    core: &Core,
    principal: &Principal,
    options: PerContextOptions,
) -> Result<SpeechSession, ServiceError> {
    super::operations::Operation::CreateSpeech.check(principal)?;
    let params = options.params;
    let idle = idle_timeout(options.idle_timeout_secs, params)?;
    start(core, principal, None, idle, options.auto_mode, params)
}

fn idle_timeout(secs: Option<u64>, params: Params) -> Result<u64, ServiceError> {
    match secs {
        None => Ok(DEFAULT_IDLE_SECS),
        Some(secs) if (1..=MAX_IDLE_SECS).contains(&secs) => Ok(secs),
        Some(_) => Err(ServiceError::invalid(
            params.idle_timeout,
            format!(
                "{} must be 1 to {MAX_IDLE_SECS} seconds",
                params.idle_timeout
            ),
        )),
    }
}

/// The voice profile `name` (an id or a name) of the principal's account, able to speak here
/// with the engine the client named: its id.
async fn find_voice(
    core: &Core,
    principal: &Principal,
    name: &str,
    engine: Option<(EngineId, &'static str)>,
    params: Params,
) -> Result<String, ServiceError> {
    // The same lookup (and refusal: 400 naming the field) as every speech door.
    let voice = super::speech::find_voice(
        core,
        principal,
        super::speech::VoiceChoice::IdOrName(name),
        params.speech.voice,
    )
    .await?;
    super::speech::refuse_unavailable(voice.engine, &voice.name, params.speech.voice)?;
    if let Some((engine, field)) = engine
        && engine != voice.engine
    {
        return Err(ServiceError::invalid(
            field,
            format!(
                "Voice {:?} is a preset of the {} engine; {field} {engine} cannot render it. Use {}, or the dialect's own model name (the voice's engine renders).",
                voice.name, voice.engine, voice.engine
            ),
        ));
    }
    if !core.engines.is_installed(voice.engine) {
        return Err(ServiceError::invalid(
            engine.map_or(params.speech.voice, |(_, field)| field),
            format!(
                "The voice {:?} uses the {} engine, which is not installed on this deployment.",
                voice.name, voice.engine
            ),
        ));
    }
    Ok(voice.id)
}
