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

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::ThreadId;
use std::time::Duration;

use super::engine_thread::{RenderError, Task, engine_error, synthesis_input};
use crate::engines::{Cancel, Engine, Pcm, Segment};
use crate::store::queue::Job;

/// The segments of the generations running in this process that idle engine threads may render.
#[derive(Default)]
pub struct Board {
    open: Mutex<Vec<Arc<SharedJob>>>,
    /// Every engine thread's inbox, to wake idle ones when segments are listed.
    threads: Mutex<Vec<(ThreadId, mpsc::Sender<Task>)>>,
    /// Segments rendered by a thread other than their generation's own.
    helped: AtomicU64,
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

/// Renders `segments` of `job` on `engine` (the owner's) and on idle threads, and hands each
/// segment's audio to `emit` in order (`last` on the final one). Stops at a segment boundary
/// when `cancel` is set.
pub(super) fn render(
    board: &Board,
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
        let pcm = engine
            .render_segment(&input, &segments[0], 0)
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
            let result = engine
                .render_segment(&input, &shared.segments[index], index)
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
