//! The dedicated OS thread a worker's engines run on. Inference and encoding are CPU-bound and
//! synchronous: they never run on a tokio worker thread.
//!
//! A generation's audio is encoded piece by piece as the engine produces it, and every encoded
//! chunk is sent to the worker as soon as it exists (for the requests that stream it); the
//! chunks joined are the stored file. When the thread's own worker has nothing to do, it renders
//! segments of the other threads' generations ([`super::pieces`]).
//!
//! Supervision: a panic inside an engine fails that one job (the reply says so) and ends the
//! thread, whose engine state may be broken; the worker then replaces it with
//! [`EngineThread::restart`], which loads the engines afresh for the next job.

use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::{mpsc as chunks, oneshot};

use super::pieces::{self, Board, SharedJob};
use super::streams::AudioChunk;
use crate::audio::{AudioFormat, StreamEncoder};
use crate::domain::{EngineId, VoiceKind};
use crate::engines::cores::Run;
use crate::engines::registry::EngineRegistry;
use crate::engines::text::timing::WordTiming;
use crate::engines::{Cancel, Engine, EngineError, Pcm, SynthesisInput};
use crate::store::prints::PrintJob;
use crate::store::queue::Job;

/// Encoded audio of one generation.
pub struct Rendered {
    /// The finished file: the chunks sent while rendering, joined, with the headers only the
    /// whole audio can fill in (`audio::StreamEncoder::finish`).
    pub bytes: Vec<u8>,
    pub format: AudioFormat,
    pub duration_ms: i64,
    /// Time spent rendering, encoding excluded (for the benchmark's overhead ratio).
    pub engine_ms: u128,
    /// When each word is said, in seconds from the start (engines that know; empty otherwise).
    pub words: Vec<WordTiming>,
}

/// Where the encoded chunks of a generation go as they are produced, each with the audio
/// rendered when it was encoded.
pub type ChunkSender = chunks::UnboundedSender<AudioChunk>;

/// Why a job produced no audio.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RenderError {
    /// The caller cancelled it; it stopped between pieces or inside one.
    Cancelled,
    /// The engine panicked; the thread is gone and must be replaced.
    Panicked,
    /// The engine or the encoder failed; the message is for the generation's `error`.
    Failed(String),
}

pub(super) enum Task {
    Render {
        job: Job,
        cancel: Arc<Cancel>,
        chunks: Option<ChunkSender>,
        reply: oneshot::Sender<Result<Rendered, RenderError>>,
    },
    /// Compute a cloned voice's print from its reference clip.
    Print {
        job: PrintJob,
        reply: oneshot::Sender<Result<Vec<u8>, RenderError>>,
    },
    /// Load `engine` now (start-up warm-up), so that a broken install shows before a job fails.
    Load {
        engine: EngineId,
        reply: oneshot::Sender<Result<(), RenderError>>,
    },
    /// Segments were listed on the board: an idle thread looks for one to render.
    Help,
}

/// Handle to one engine thread. Dropping it ends the thread after its current task.
pub struct EngineThread {
    name: String,
    registry: Arc<EngineRegistry>,
    board: Arc<Board>,
    tasks: mpsc::Sender<Task>,
}

impl EngineThread {
    /// A thread for one worker. The threads spawned with the same `board` help each other.
    pub fn spawn(
        name: &str,
        registry: Arc<EngineRegistry>,
        board: Arc<Board>,
    ) -> std::io::Result<Self> {
        let tasks = start(name, registry.clone(), board.clone())?;
        Ok(Self {
            name: name.to_owned(),
            registry,
            board,
            tasks,
        })
    }

    /// Replaces the thread (after a panic): a new thread with freshly loaded engines.
    pub fn restart(&mut self) -> std::io::Result<()> {
        self.tasks = start(&self.name, self.registry.clone(), self.board.clone())?;
        tracing::warn!(worker = %self.name, "engine thread replaced");
        Ok(())
    }

    /// Hands `job` to the thread; the receiver yields its result. `cancel` stops it between
    /// pieces, and inside a piece on engines that run it as one ONNX Runtime call (kokoro).
    pub fn submit(
        &self,
        job: Job,
        cancel: Arc<Cancel>,
    ) -> oneshot::Receiver<Result<Rendered, RenderError>> {
        self.submit_streaming(job, cancel, None)
    }

    /// Same, and every encoded chunk goes to `chunks` as soon as it exists (all of them before
    /// the result).
    pub fn submit_streaming(
        &self,
        job: Job,
        cancel: Arc<Cancel>,
        chunks: Option<ChunkSender>,
    ) -> oneshot::Receiver<Result<Rendered, RenderError>> {
        let (reply, receiver) = oneshot::channel();
        if let Err(mpsc::SendError(Task::Render { reply, .. })) = self.tasks.send(Task::Render {
            job,
            cancel,
            chunks,
            reply,
        }) {
            let _ = reply.send(Err(RenderError::Panicked));
        }
        receiver
    }

    /// Computes the voice print of `job` on the thread.
    pub async fn print(&self, job: PrintJob) -> Result<Vec<u8>, RenderError> {
        let (reply, receiver) = oneshot::channel();
        if self.tasks.send(Task::Print { job, reply }).is_err() {
            return Err(RenderError::Panicked);
        }
        receiver.await.unwrap_or(Err(RenderError::Panicked))
    }

    /// Loads `engine` on the thread.
    pub async fn load(&self, engine: EngineId) -> Result<(), RenderError> {
        let (reply, receiver) = oneshot::channel();
        if self.tasks.send(Task::Load { engine, reply }).is_err() {
            return Err(RenderError::Panicked);
        }
        receiver.await.unwrap_or(Err(RenderError::Panicked))
    }
}

fn start(
    name: &str,
    registry: Arc<EngineRegistry>,
    board: Arc<Board>,
) -> std::io::Result<mpsc::Sender<Task>> {
    let (tasks, inbox) = mpsc::channel::<Task>();
    let joined = tasks.clone();
    let on_board = board.clone();
    let thread = std::thread::Builder::new()
        .name(format!("engine-{name}"))
        .spawn(move || {
            let me = std::thread::current().id();
            let mut loaded: HashMap<EngineId, Box<dyn Engine>> = HashMap::new();
            // Cleared when helping failed, until the next task: no retrying in a loop.
            let mut may_help = true;
            loop {
                // The thread's own tasks first; segments of other generations when it has none.
                let task = match inbox.try_recv() {
                    Ok(task) => task,
                    Err(mpsc::TryRecvError::Disconnected) => return,
                    Err(mpsc::TryRecvError::Empty) => {
                        if may_help && let Some((shared, index)) = board.take(me) {
                            may_help = help(&registry, &board, &mut loaded, &shared, index);
                            if may_help {
                                board.count_help();
                            }
                            continue;
                        }
                        match inbox.recv() {
                            Ok(task) => task,
                            Err(_) => return,
                        }
                    }
                };
                may_help = true;
                match task {
                    Task::Render {
                        job,
                        cancel,
                        chunks,
                        reply,
                    } => {
                        let outcome = catch_unwind(AssertUnwindSafe(|| {
                            render(&registry, &board, &mut loaded, &job, &cancel, chunks)
                        }));
                        match outcome {
                            Ok(result) => {
                                let _ = reply.send(result);
                            }
                            Err(_) => {
                                tracing::error!(generation_id = %job.id, "engine panicked");
                                let _ = reply.send(Err(RenderError::Panicked));
                                return; // the engines' state is suspect: the worker replaces us
                            }
                        }
                    }
                    Task::Print { job, reply } => {
                        let outcome = catch_unwind(AssertUnwindSafe(|| {
                            print(&registry, &mut loaded, &job)
                        }));
                        let panicked = outcome.is_err();
                        if panicked {
                            tracing::error!(voice_id = %job.voice_id, "engine panicked computing a voice print");
                        }
                        let _ = reply.send(outcome.unwrap_or(Err(RenderError::Panicked)));
                        if panicked {
                            return;
                        }
                    }
                    Task::Load { engine, reply } => {
                        let outcome = catch_unwind(AssertUnwindSafe(|| {
                            engine_for(&registry, &mut loaded, engine).map(drop)?;
                            board.load_wide(&registry, engine);
                            Ok::<_, EngineError>(())
                        }));
                        let result = match outcome {
                            Ok(Ok(())) => Ok(()),
                            Ok(Err(e)) => Err(RenderError::Failed(e.to_string())),
                            Err(_) => Err(RenderError::Panicked),
                        };
                        let panicked = result == Err(RenderError::Panicked);
                        let _ = reply.send(result);
                        if panicked {
                            return;
                        }
                    }
                    Task::Help => {}
                }
            }
        })?;
    on_board.join(thread.thread().id(), joined);
    Ok(tasks)
}

/// Renders segment `index` of another thread's generation on this thread's engine. `false`
/// when this thread cannot (its engine does not load): the segment goes back to the owner.
fn help(
    registry: &EngineRegistry,
    board: &Board,
    loaded: &mut HashMap<EngineId, Box<dyn Engine>>,
    shared: &SharedJob,
    index: usize,
) -> bool {
    let engine = shared
        .job
        .engine
        .parse::<EngineId>()
        .map_err(EngineError::NotInstalled)
        .and_then(|id| Ok((id, engine_for(registry, loaded, id)?)));
    let (id, engine) = match engine {
        Ok(engine) => engine,
        Err(err) => {
            tracing::warn!(generation_id = %shared.job.id, error = %err, "cannot help: the engine does not load here");
            shared.give_back(index);
            return false;
        }
    };
    let input = synthesis_input(&shared.job, &shared.cancel);
    let segment = &shared.segments[index];
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        pieces::run_segment(board, registry, id, engine.as_mut(), &input, segment, index)
    }));
    match outcome {
        Ok(result) => shared.put(index, result.map_err(engine_error)),
        Err(_) => {
            // The segment's generation fails, as if its owner had panicked; this thread's
            // engines may be broken, so they are loaded afresh for the next task.
            tracing::error!(generation_id = %shared.job.id, "engine panicked on a shared segment");
            shared.put(index, Err(RenderError::Panicked));
            loaded.clear();
        }
    }
    true
}

fn engine_for<'a>(
    registry: &EngineRegistry,
    loaded: &'a mut HashMap<EngineId, Box<dyn Engine>>,
    engine_id: EngineId,
) -> Result<&'a mut Box<dyn Engine>, EngineError> {
    Ok(match loaded.entry(engine_id) {
        std::collections::hash_map::Entry::Occupied(entry) => entry.into_mut(),
        std::collections::hash_map::Entry::Vacant(entry) => entry.insert(registry.load(engine_id)?),
    })
}

/// The engine's view of a job (the same for every thread that renders part of it).
pub(super) fn synthesis_input<'a>(job: &'a Job, cancel: &'a Cancel) -> SynthesisInput<'a> {
    SynthesisInput {
        text: &job.text,
        preset: job.preset.as_deref().unwrap_or_default(),
        language: &job.language,
        seed: job.seed as u64,
        temperature: job.temperature,
        cancel: Some(cancel),
        voice_print: job
            .voice_print
            .as_deref()
            .filter(|_| job.voice_type == VoiceKind::Cloned),
        instruction: job.personality.as_deref(),
    }
}

/// A failed render as the account sees it: a fixed public sentence per kind of failure (the
/// generation's `error`); the engine's own message (model paths, tokenizer internals) goes to
/// the log only.
pub(super) fn engine_error(e: EngineError) -> RenderError {
    let sentence = match &e {
        EngineError::Cancelled => return RenderError::Cancelled,
        EngineError::NotInstalled(_) => NOT_INSTALLED,
        EngineError::UnknownPreset(_) => {
            "the voice's preset is not offered by its engine on this deployment; nothing was charged"
        }
        EngineError::InvalidInput(_) => {
            "the engine could not read this text with this voice; nothing was charged"
        }
        EngineError::DamagedPrint => {
            "the voice's stored print is damaged or from another version of voiced; clone the voice again; nothing was charged"
        }
        EngineError::Inference(_) => ENGINE_FAILED,
    };
    tracing::warn!(error = %e, "engine failed");
    RenderError::Failed(sentence.to_owned())
}

/// Public sentences of failures that are not the engine's (see [`engine_error`]).
const NOT_INSTALLED: &str =
    "the engine of this voice is not installed on this deployment; nothing was charged";
const ENGINE_FAILED: &str = "the engine failed on this generation; nothing was charged";
const ENCODING_FAILED: &str = "the audio could not be encoded; nothing was charged";

/// A failure of the render around the engine, with `sentence` for the account.
fn failure(sentence: &str, cause: &dyn std::fmt::Display) -> RenderError {
    tracing::warn!(error = %cause, "generation failed");
    RenderError::Failed(sentence.to_owned())
}

fn render(
    registry: &EngineRegistry,
    board: &Board,
    loaded: &mut HashMap<EngineId, Box<dyn Engine>>,
    job: &Job,
    cancel: &Arc<Cancel>,
    chunks: Option<ChunkSender>,
) -> Result<Rendered, RenderError> {
    let engine_id: EngineId = job
        .engine
        .parse()
        .map_err(|e: String| failure(NOT_INSTALLED, &e))?;
    let format: AudioFormat = job
        .format
        .parse()
        .map_err(|e| failure(ENCODING_FAILED, &e))?;
    // A cloned voice speaks from its stored print (`synthesis_input` passes it on).
    match (job.voice_type, &job.voice_print, &job.print_error) {
        (VoiceKind::Cloned, Some(_), _) => {}
        (VoiceKind::Cloned, None, Some(error)) => {
            return Err(RenderError::Failed(format!(
                "the voice could not be prepared from its reference audio: {error}"
            )));
        }
        (VoiceKind::Cloned, None, None) => {
            return Err(RenderError::Failed(format!(
                "this cloned voice has no voice print for the {engine_id} engine"
            )));
        }
        _ => {}
    }
    let engine = engine_for(registry, loaded, engine_id).map_err(engine_error)?;
    let started = Instant::now();
    let mut out = Output {
        format,
        encoder: None,
        bytes: Vec::new(),
        samples: 0,
        sample_rate: 0,
        encoding: Duration::ZERO,
        chunks,
        words: Vec::new(),
    };
    let input = synthesis_input(job, cancel);
    let mut words = Vec::new();
    match engine.segments(&input) {
        Some(segments) => {
            let segments = segments.map_err(engine_error)?;
            pieces::render(
                board,
                registry,
                engine_id,
                engine.as_mut(),
                job,
                segments,
                cancel,
                &mut |pcm, last| {
                    let offset = out.rendered_secs();
                    let said: Vec<WordTiming> = pcm
                        .words
                        .iter()
                        .map(|w| WordTiming {
                            text: w.text.clone(),
                            start: w.start + offset,
                            end: w.end + offset,
                        })
                        .collect();
                    words.extend(said.iter().cloned());
                    out.push(&pcm, last, said)?;
                    cancel.set_rendered_ms(out.rendered_ms());
                    Ok(())
                },
            )?;
        }
        // An engine that renders whole texts only: one piece.
        None => {
            let run = Run::start();
            let pcm = engine.synthesize(&input).map_err(engine_error)?;
            drop(run);
            words = pcm.words.clone();
            out.push(&pcm, true, words.clone())?;
        }
    }
    let bytes = out.finish()?;
    let engine_ms = started.elapsed().saturating_sub(out.encoding).as_millis();
    let duration_ms = (out.samples * 1000 / u64::from(out.sample_rate.max(1))) as i64;
    Ok(Rendered {
        bytes,
        format,
        duration_ms,
        engine_ms,
        words,
    })
}

/// A cloned voice's print: the reference clip decoded and checked again, brought to the
/// engine's rate, and run through the engine's conditioning once. The failure message is for
/// the account (it is shown with the voice): engine details go to the log.
fn print(
    registry: &EngineRegistry,
    loaded: &mut HashMap<EngineId, Box<dyn Engine>>,
    job: &PrintJob,
) -> Result<Vec<u8>, RenderError> {
    let engine_id: EngineId = job
        .engine
        .parse()
        .map_err(|e: String| RenderError::Failed(e))?;
    let _run = Run::start();
    let outcome = engine_for(registry, loaded, engine_id)
        .map_err(PrintError::from)
        .and_then(|engine| {
            compute_print(
                engine.as_mut(),
                &job.audio,
                job.transcript.as_deref(),
                &job.language,
            )
        });
    outcome.map_err(|err| {
        tracing::warn!(voice_id = %job.voice_id, engine = %engine_id, error = %err, "voice print failed");
        RenderError::Failed(err.for_account(engine_id))
    })
}

/// Why a voice print could not be made.
#[derive(Debug, thiserror::Error)]
pub enum PrintError {
    #[error("this engine cannot clone a voice")]
    CannotClone,
    #[error(transparent)]
    Reference(#[from] crate::engines::reference::ReferenceError),
    #[error(transparent)]
    Engine(#[from] EngineError),
}

impl PrintError {
    /// What the account is told (no paths or engine internals).
    pub fn for_account(&self, engine: EngineId) -> String {
        match self {
            PrintError::CannotClone => format!("the {engine} engine cannot clone a voice"),
            PrintError::Reference(e) => e.to_string(),
            PrintError::Engine(EngineError::NotInstalled(_)) => {
                format!("the {engine} engine is not installed where the voice print was computed")
            }
            PrintError::Engine(_) => {
                format!("the {engine} engine could not compute a voice print from this recording")
            }
        }
    }
}

/// The print of `audio` (a reference clip as uploaded) for `engine`: the same steps wherever
/// the print is computed (a worker, or `voiced admin voice clone` in-process).
pub fn compute_print(
    engine: &mut dyn Engine,
    audio: &[u8],
    transcript: Option<&str>,
    language: &str,
) -> Result<Vec<u8>, PrintError> {
    let rate = engine.reference_rate().ok_or(PrintError::CannotClone)?;
    let reference = crate::engines::reference::prepare(audio, rate)?;
    Ok(engine.voice_print(&reference, transcript, language)?)
}

/// The encoder of one generation and where its chunks go.
struct Output {
    format: AudioFormat,
    /// Made at the first piece, whose rate it takes.
    encoder: Option<StreamEncoder>,
    bytes: Vec<u8>,
    samples: u64,
    sample_rate: u32,
    encoding: Duration,
    chunks: Option<ChunkSender>,
    /// Words of pieces whose bytes the encoder still holds (they go with the next chunk).
    words: Vec<WordTiming>,
}

impl Output {
    /// Milliseconds of audio pushed so far.
    /// Seconds of audio pushed so far (where the next piece starts).
    fn rendered_secs(&self) -> f64 {
        self.samples as f64 / f64::from(self.sample_rate.max(1))
    }

    fn rendered_ms(&self) -> u64 {
        self.samples * 1000 / u64::from(self.sample_rate.max(1))
    }

    /// The stored file: what was streamed, finished (exact wav sizes, the mp3 Info tag; see
    /// `audio::StreamEncoder::finish`). Streaming readers have their chunks already: the
    /// finished bytes go to the blob store in one write, never over bytes someone reads.
    fn finish(&mut self) -> Result<Vec<u8>, RenderError> {
        let started = Instant::now();
        let mut bytes = std::mem::take(&mut self.bytes);
        if let Some(encoder) = &self.encoder {
            encoder
                .finish(&mut bytes)
                .map_err(|e| failure(ENCODING_FAILED, &e))?;
        }
        self.encoding += started.elapsed();
        Ok(bytes)
    }

    /// Encodes a piece; `words` (when it is said, from the start of the audio) go with the
    /// chunk that carries its bytes.
    fn push(&mut self, pcm: &Pcm, last: bool, words: Vec<WordTiming>) -> Result<(), RenderError> {
        let failed = |e: &dyn std::fmt::Display| failure(ENCODING_FAILED, e);
        let started = Instant::now();
        let encoder = match &mut self.encoder {
            Some(encoder) => encoder,
            None => self
                .encoder
                .insert(StreamEncoder::new(self.format, pcm.sample_rate).map_err(|e| failed(&e))?),
        };
        let chunk = encoder.push(&pcm.samples, last).map_err(|e| failed(&e))?;
        self.samples += pcm.samples.len() as u64;
        self.sample_rate = pcm.sample_rate;
        self.bytes.extend_from_slice(&chunk);
        self.encoding += started.elapsed();
        self.words.extend(words);
        if let Some(chunks) = &self.chunks
            && !chunk.is_empty()
        {
            // A receiver that is gone (the worker stopped waiting) needs no chunks.
            let _ = chunks.send(AudioChunk {
                bytes: Bytes::from(chunk),
                end_ms: self.rendered_ms(),
                words: std::mem::take(&mut self.words),
            });
        }
        Ok(())
    }
}
