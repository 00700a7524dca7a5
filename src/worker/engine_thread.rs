//! The dedicated OS thread a worker's engines run on. Inference and encoding are CPU-bound and
//! synchronous: they never run on a tokio worker thread.
//!
//! Supervision: a panic inside an engine fails that one job (the reply says so) and ends the
//! thread, whose engine state may be broken; the worker then replaces it with
//! [`EngineThread::restart`], which loads the engines afresh for the next job.

use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc;

use tokio::sync::oneshot;

use crate::audio::{self, AudioFormat};
use crate::domain::EngineId;
use crate::engines::registry::EngineRegistry;
use crate::engines::{Engine, EngineError, SynthesisInput};
use crate::store::prints::PrintJob;
use crate::store::queue::Job;

/// Encoded audio of one generation.
pub struct Rendered {
    pub bytes: Vec<u8>,
    pub format: AudioFormat,
    pub duration_ms: i64,
    /// Time spent in the engine alone (for the benchmark's overhead ratio).
    pub engine_ms: u128,
}

/// Why a job produced no audio.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RenderError {
    /// The caller cancelled it; it stopped at a sentence boundary.
    Cancelled,
    /// The engine panicked; the thread is gone and must be replaced.
    Panicked,
    /// The engine or the encoder failed; the message is for the generation's `error`.
    Failed(String),
}

enum Task {
    Render {
        job: Job,
        cancel: Arc<AtomicBool>,
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
}

/// Handle to one engine thread. Dropping it ends the thread after its current task.
pub struct EngineThread {
    name: String,
    registry: Arc<EngineRegistry>,
    tasks: mpsc::Sender<Task>,
}

impl EngineThread {
    pub fn spawn(name: &str, registry: Arc<EngineRegistry>) -> std::io::Result<Self> {
        let tasks = start(name, registry.clone())?;
        Ok(Self {
            name: name.to_owned(),
            registry,
            tasks,
        })
    }

    /// Replaces the thread (after a panic): a new thread with freshly loaded engines.
    pub fn restart(&mut self) -> std::io::Result<()> {
        self.tasks = start(&self.name, self.registry.clone())?;
        tracing::warn!(worker = %self.name, "engine thread replaced");
        Ok(())
    }

    /// Hands `job` to the thread; the receiver yields its result. `cancel` is checked between
    /// sentences.
    pub fn submit(
        &self,
        job: Job,
        cancel: Arc<AtomicBool>,
    ) -> oneshot::Receiver<Result<Rendered, RenderError>> {
        let (reply, receiver) = oneshot::channel();
        if let Err(mpsc::SendError(Task::Render { reply, .. })) =
            self.tasks.send(Task::Render { job, cancel, reply })
        {
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

fn start(name: &str, registry: Arc<EngineRegistry>) -> std::io::Result<mpsc::Sender<Task>> {
    let (tasks, inbox) = mpsc::channel::<Task>();
    std::thread::Builder::new()
        .name(format!("engine-{name}"))
        .spawn(move || {
            let mut loaded: HashMap<EngineId, Box<dyn Engine>> = HashMap::new();
            for task in inbox {
                match task {
                    Task::Render { job, cancel, reply } => {
                        let outcome = catch_unwind(AssertUnwindSafe(|| {
                            render(&registry, &mut loaded, &job, &cancel)
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
                            engine_for(&registry, &mut loaded, engine).map(drop)
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
                }
            }
        })?;
    Ok(tasks)
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

fn render(
    registry: &EngineRegistry,
    loaded: &mut HashMap<EngineId, Box<dyn Engine>>,
    job: &Job,
    cancel: &AtomicBool,
) -> Result<Rendered, RenderError> {
    let failed = |e: &dyn std::fmt::Display| RenderError::Failed(e.to_string());
    let engine_id: EngineId = job.engine.parse().map_err(|e: String| failed(&e))?;
    let format: AudioFormat = job.format.parse().map_err(|e| failed(&e))?;
    let voice_print = match (job.voice_type.as_str(), &job.voice_print, &job.print_error) {
        ("cloned", Some(print), _) => Some(print.as_slice()),
        ("cloned", None, Some(error)) => {
            return Err(RenderError::Failed(format!(
                "the voice could not be prepared from its reference audio: {error}"
            )));
        }
        ("cloned", None, None) => {
            return Err(RenderError::Failed(format!(
                "this cloned voice has no voice print for the {engine_id} engine"
            )));
        }
        _ => None,
    };
    let engine = engine_for(registry, loaded, engine_id).map_err(|e| failed(&e))?;
    let preset = job.preset.as_deref().unwrap_or_default();
    let started = std::time::Instant::now();
    let pcm = engine
        .synthesize(&SynthesisInput {
            text: &job.text,
            preset,
            language: &job.language,
            seed: job.seed as u64,
            temperature: job.temperature,
            cancel: Some(cancel),
            voice_print,
        })
        .map_err(|e| match e {
            EngineError::Cancelled => RenderError::Cancelled,
            other => failed(&other),
        })?;
    let engine_ms = started.elapsed().as_millis();
    let duration_ms = pcm.duration_ms();
    let bytes = audio::encode(&pcm.samples, pcm.sample_rate, format).map_err(|e| failed(&e))?;
    Ok(Rendered {
        bytes,
        format,
        duration_ms,
        engine_ms,
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
