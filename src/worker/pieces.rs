//! Sentences shared between the engine threads of one process, so that a lone generation uses
//! every engine session, not one.
//!
//! The engine thread that runs a generation (its owner) splits the text into the engine's
//! segments and lists them on the process's [`Board`]. It renders them in order itself, and
//! wakes the process's other engine threads: one whose own worker has nothing to do takes the
//! next segment nobody has taken, renders it on its own session, and hands the audio back. The
//! owner encodes the segments strictly in order as they become ready and streams each one out.
//! A thread that is busy with its own generation never helps, so under load every session runs
//! its own job, as before; when fewer generations run than there are sessions, the idle ones
//! help. The audio does not depend on who rendered what: a segment's audio is a function of
//! (text, voice, seed, index) (see `Engine::render_segment`).
//!
//! A segment whose run starts with no other model run in progress in the process, when no idle
//! thread could take another segment meanwhile, runs on the process's wide instance of the
//! engine (every core as intra-op threads, [`EngineRegistry::load_wide`]) instead of the
//! thread's own: a lone one-sentence request, or the last segment of a lone generation, then
//! uses the whole machine. ONNX Runtime gives the same samples whatever its thread count, so
//! this changes nothing in the audio either.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::ThreadId;
use std::time::Duration;

use std::collections::HashMap;

use super::engine_thread::{RenderError, Task, engine_error, synthesis_input};
use crate::domain::EngineId;
use crate::engines::cores::Run;
use crate::engines::registry::EngineRegistry;
use crate::engines::{Cancel, Engine, EngineError, Pcm, Segment, SynthesisInput};
use crate::store::queue::Job;

/// The segments of the generations running in this process that idle engine threads may render.
#[derive(Default)]
pub struct Board {
    open: Mutex<Vec<Arc<SharedJob>>>,
    /// Every engine thread's inbox, to wake idle ones when segments are listed.
    threads: Mutex<Vec<(ThreadId, mpsc::Sender<Task>)>>,
    /// Segments rendered by a thread other than their generation's own.
    helped: AtomicU64,
    /// The process's wide engine instances, loaded on first need; `None`: the engine has none
    /// here (or it failed to load: logged once, the threads' own instances serve).
    wide: Mutex<HashMap<EngineId, Option<Box<dyn Engine>>>>,
    /// Segments rendered on a wide instance.
    widened: AtomicU64,
}

/// One generation's segments and their audio as it comes back.
pub(super) struct SharedJob {
    pub job: Job,
    pub segments: Vec<Segment>,
    pub cancel: Arc<Cancel>,
    owner: ThreadId,
    state: Mutex<Progress>,
    ready: Condvar,
}

struct Progress {
    /// The first segment nobody has taken.
    next: usize,
    /// Segments taken by a thread that could not render them (its engine did not load).
    returned: Vec<usize>,
    results: Vec<Option<Result<Pcm, RenderError>>>,
    /// The owner has stopped (finished, failed or cancelled): nothing more is taken.
    closed: bool,
}

impl Board {
    /// How many segments threads rendered for other threads' generations so far.
    pub fn helped(&self) -> u64 {
        self.helped.load(Ordering::Relaxed)
    }

    /// How many segments ran on a wide instance (every core) so far.
    pub fn widened(&self) -> u64 {
        self.widened.load(Ordering::Relaxed)
    }

    /// Whether a thread other than `me` could take a segment listed now: another thread exists
    /// and some open generation has a segment nobody has taken.
    fn others_could_help(&self, me: ThreadId) -> bool {
        let others = lock(&self.threads).iter().any(|(id, _)| *id != me);
        others && lock(&self.open).iter().any(|job| job.untaken())
    }

    /// Renders segment `index` on the process's wide instance of `engine` when `run` started
    /// alone and no idle thread could take another segment meanwhile (a wide run beside others
    /// would take their cores). `None` when it does not: the caller renders on its own instance.
    fn render_wide(
        &self,
        registry: &EngineRegistry,
        engine: EngineId,
        run: &mut Run,
        input: &SynthesisInput<'_>,
        segment: &Segment,
        index: usize,
    ) -> Option<Result<Pcm, EngineError>> {
        if !run.alone() || self.others_could_help(std::thread::current().id()) {
            return None;
        }
        let mut wide = match self.wide.try_lock() {
            Ok(wide) => wide,
            Err(std::sync::TryLockError::WouldBlock) => return None,
            Err(std::sync::TryLockError::Poisoned(poisoned)) => {
                // A wide run panicked: its instance may be broken, load it afresh.
                let mut wide = poisoned.into_inner();
                wide.clear();
                self.wide.clear_poison();
                wide
            }
        };
        let instance = wide
            .entry(engine)
            .or_insert_with(|| wide_instance(registry, engine));
        let instance = instance.as_mut()?;
        run.widen();
        let result = instance.render_segment(input, segment, index);
        self.widened.fetch_add(1, Ordering::Relaxed);
        metrics::counter!("voiced_wide_runs_total", "kind" => "speech").increment(1);
        Some(result)
    }

    /// Loads the process's wide instance of `engine` now if it has one (start-up warm-up: the
    /// first lone request does not wait for it).
    pub(super) fn load_wide(&self, registry: &EngineRegistry, engine: EngineId) {
        lock(&self.wide)
            .entry(engine)
            .or_insert_with(|| wide_instance(registry, engine));
    }

    pub(super) fn count_help(&self) {
        self.helped.fetch_add(1, Ordering::Relaxed);
        metrics::counter!("voiced_shared_segments_total").increment(1);
    }

    /// Registers an engine thread's inbox.
    pub(super) fn join(&self, thread: ThreadId, inbox: mpsc::Sender<Task>) {
        let mut threads = lock(&self.threads);
        threads.retain(|(id, _)| *id != thread);
        threads.push((thread, inbox));
    }

    /// Lists `job` and wakes the other threads; unlisted when the guard drops.
    fn list(&self, job: Arc<SharedJob>) -> Listed<'_> {
        lock(&self.open).push(job.clone());
        // A thread whose inbox is gone has ended; forget it.
        lock(&self.threads)
            .retain(|(id, inbox)| *id == job.owner || inbox.send(Task::Help).is_ok());
        Listed { board: self, job }
    }

    /// The next segment another thread's generation has left untaken, oldest generation first.
    pub(super) fn take(&self, me: ThreadId) -> Option<(Arc<SharedJob>, usize)> {
        let open = lock(&self.open);
        for job in open.iter() {
            if job.owner == me || job.cancel.is_cancelled() {
                continue;
            }
            if let Some(index) = job.take() {
                return Some((job.clone(), index));
            }
        }
        None
    }
}

/// The wide instance of `engine`, or `None` when it has none or it does not load (logged).
fn wide_instance(registry: &EngineRegistry, engine: EngineId) -> Option<Box<dyn Engine>> {
    registry
        .load_wide(engine)?
        .inspect_err(|e| {
            tracing::warn!(engine = %engine, error = %e, "the wide instance does not load; runs stay on their threads")
        })
        .ok()
}

struct Listed<'a> {
    board: &'a Board,
    job: Arc<SharedJob>,
}

impl Drop for Listed<'_> {
    fn drop(&mut self) {
        lock(&self.job.state).closed = true;
        lock(&self.board.open).retain(|j| !Arc::ptr_eq(j, &self.job));
    }
}

impl SharedJob {
    /// Whether a segment is left that nobody has taken.
    fn untaken(&self) -> bool {
        let progress = lock(&self.state);
        !progress.closed && (!progress.returned.is_empty() || progress.next < self.segments.len())
    }

    fn take(&self) -> Option<usize> {
        let mut progress = lock(&self.state);
        if progress.closed {
            return None;
        }
        if let Some(index) = progress.returned.pop() {
            return Some(index);
        }
        let index = progress.next;
        (index < self.segments.len()).then(|| {
            progress.next += 1;
            index
        })
    }

    pub(super) fn put(&self, index: usize, result: Result<Pcm, RenderError>) {
        lock(&self.state).results[index] = Some(result);
        self.ready.notify_all();
    }

    pub(super) fn give_back(&self, index: usize) {
        lock(&self.state).returned.push(index);
        self.ready.notify_all();
    }
}

/// Segment `index` of `input`, counted as a model run ([`Run`]): on the process's wide instance
/// of `id` when the run is alone (see [`Board::render_wide`]), otherwise on `engine` (the
/// calling thread's own).
pub(super) fn run_segment(
    board: &Board,
    registry: &EngineRegistry,
    id: EngineId,
    engine: &mut dyn Engine,
    input: &SynthesisInput<'_>,
    segment: &Segment,
    index: usize,
) -> Result<Pcm, EngineError> {
    let mut run = Run::start();
    if let Some(result) = board.render_wide(registry, id, &mut run, input, segment, index) {
        return result;
    }
    engine.render_segment(input, segment, index)
}

/// Renders `segments` of `job` on `engine` (the owner's, an instance of `id`) and on idle
/// threads, and hands each segment's audio to `emit` in order (`last` on the final one). Stops
/// at a segment boundary when `cancel` is set.
#[allow(clippy::too_many_arguments)]
pub(super) fn render(
    board: &Board,
    registry: &EngineRegistry,
    id: EngineId,
    engine: &mut dyn Engine,
    job: &Job,
    segments: Vec<Segment>,
    cancel: &Arc<Cancel>,
    emit: &mut dyn FnMut(Pcm, bool) -> Result<(), RenderError>,
) -> Result<(), RenderError> {
    let input = synthesis_input(job, cancel);
    let count = segments.len();
    if count == 1 {
        // Nothing to share.
        if input.is_cancelled() {
            return Err(RenderError::Cancelled);
        }
        let pcm = run_segment(board, registry, id, engine, &input, &segments[0], 0)
            .map_err(engine_error)?;
        return emit(pcm, true);
    }
    let shared = Arc::new(SharedJob {
        job: job.clone(),
        segments,
        cancel: cancel.clone(),
        owner: std::thread::current().id(),
        state: Mutex::new(Progress {
            next: 0,
            returned: Vec::new(),
            results: (0..count).map(|_| None).collect(),
            closed: false,
        }),
        ready: Condvar::new(),
    });
    let _listed = board.list(shared.clone());
    let mut emitted = 0;
    loop {
        if input.is_cancelled() {
            return Err(RenderError::Cancelled);
        }
        let mut progress = lock(&shared.state);
        if let Some(result) = progress.results[emitted].take() {
            drop(progress);
            emitted += 1;
            emit(result?, emitted == count)?;
            if emitted == count {
                return Ok(());
            }
            continue;
        }
        // A later segment that failed fails the generation now, not when its turn comes.
        if let Some(failed) = progress
            .results
            .iter()
            .flatten()
            .find_map(|r| r.as_ref().err())
        {
            return Err(failed.clone());
        }
        let own = progress.returned.pop().or_else(|| {
            (progress.next < count).then(|| {
                progress.next += 1;
                progress.next - 1
            })
        });
        if let Some(index) = own {
            drop(progress);
            let segment = &shared.segments[index];
            let result = run_segment(board, registry, id, engine, &input, segment, index)
                .map_err(engine_error);
            shared.put(index, result);
            continue;
        }
        // Every segment is taken: wait for the helpers' (checking for a cancellation now and
        // then: the flag has no wake-up of its own).
        let _ = shared
            .ready
            .wait_timeout(progress, Duration::from_millis(50))
            .unwrap_or_else(PoisonError::into_inner);
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
