//! The dedicated OS thread a worker's engines run on. Inference and encoding are CPU-bound and
//! synchronous: they never run on a tokio worker thread.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::mpsc;

use tokio::sync::oneshot;

use crate::audio::{self, AudioFormat};
use crate::domain::EngineId;
use crate::engines::registry::EngineRegistry;
use crate::engines::{Engine, SynthesisInput};
use crate::store::queue::Job;

/// Encoded audio of one generation.
pub struct Rendered {
    pub bytes: Vec<u8>,
    pub format: AudioFormat,
    pub duration_ms: i64,
    /// Time spent in the engine alone (for the benchmark's overhead ratio).
    pub engine_ms: u128,
}

struct Task {
    job: Job,
    reply: oneshot::Sender<Result<Rendered, String>>,
}

/// Handle to one engine thread. Dropping it ends the thread after its current task.
pub struct EngineThread {
    tasks: mpsc::Sender<Task>,
}

impl EngineThread {
    pub fn spawn(name: &str, registry: Arc<EngineRegistry>) -> std::io::Result<Self> {
        let (tasks, inbox) = mpsc::channel::<Task>();
        std::thread::Builder::new()
            .name(format!("engine-{name}"))
            .spawn(move || {
                let mut loaded: HashMap<EngineId, Box<dyn Engine>> = HashMap::new();
                for task in inbox {
                    let result = render(&registry, &mut loaded, &task.job);
                    let _ = task.reply.send(result);
                }
            })?;
        Ok(Self { tasks })
    }

    /// Hands `job` to the thread; the receiver yields its result.
    pub fn submit(&self, job: Job) -> oneshot::Receiver<Result<Rendered, String>> {
        let (reply, receiver) = oneshot::channel();
        if let Err(mpsc::SendError(task)) = self.tasks.send(Task { job, reply }) {
            let _ = task.reply.send(Err("engine thread stopped".into()));
        }
        receiver
    }
}

fn render(
    registry: &EngineRegistry,
    loaded: &mut HashMap<EngineId, Box<dyn Engine>>,
    job: &Job,
) -> Result<Rendered, String> {
    let engine_id: EngineId = job.engine.parse()?;
    let format: AudioFormat = job
        .format
        .parse()
        .map_err(|_| format!("unknown format {}", job.format))?;
    let engine = match loaded.entry(engine_id) {
        std::collections::hash_map::Entry::Occupied(entry) => entry.into_mut(),
        std::collections::hash_map::Entry::Vacant(entry) => {
            entry.insert(registry.load(engine_id).map_err(|e| e.to_string())?)
        }
    };
    let preset = job.preset.as_deref().unwrap_or_default();
    let started = std::time::Instant::now();
    let pcm = engine
        .synthesize(&SynthesisInput {
            text: &job.text,
            preset,
            language: &job.language,
            seed: job.seed as u64,
            temperature: job.temperature,
        })
        .map_err(|e| e.to_string())?;
    let engine_ms = started.elapsed().as_millis();
    let duration_ms = pcm.duration_ms();
    let bytes = audio::encode(&pcm.samples, pcm.sample_rate, format).map_err(|e| e.to_string())?;
    Ok(Rendered {
        bytes,
        format,
        duration_ms,
        engine_ms,
    })
}
