//! The recogniser behind `POST /v1/transcriptions`: Whisper on dedicated OS threads fed by a
//! bounded queue. Admission refuses (503) instead of queueing without bound; a request whose
//! client went away gives its place back at once, and its job is skipped if it has not started.
//!
//! A transcription that starts with no other model run in progress in the process (speech or
//! transcription, [`crate::engines::cores`]) runs on the process's wide recogniser, a second
//! replica with every core as threads, so that a lone request uses the whole machine; runs side
//! by side keep their one-thread replicas.
//!
//! The queue has two lanes ([`Lanes`]): a live session's final (awaited by a talking user) is
//! taken before any file transcription that waits, so that a long upload queued ahead of it
//! delays the final by at most the job a thread is already running. Interims wait with the
//! files: they are many and optional, and must not starve them.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore, oneshot};

use crate::domain::{RecognitionOptions, Segment, Word};
use crate::engines::cores::{self, Run};
use crate::engines::whisper::{AsrError, Recognizer, Transcript, WhisperConfig};

struct Job {
    samples_16k: Vec<f32>,
    options: RecognitionOptions,
    /// The places the request took, held until the thread is done with the job.
    ticket: Option<Ticket>,
    /// Whether the job may run on the wide replica (not for the app's free use).
    may_widen: bool,
    /// Where each segment goes as soon as it is decoded (a streamed answer), if anywhere.
    segments: Option<tokio::sync::mpsc::UnboundedSender<(Segment, Vec<Word>)>>,
    reply: oneshot::Sender<Result<Transcript, Failure>>,
}

/// Why a transcription gave no transcript.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Failure {
    /// The request asks for what the model cannot do; `param` names the field.
    #[error("{message}")]
    Refused {
        param: &'static str,
        message: String,
    },
    #[error("{0}")]
    Failed(String),
    /// Its caller went away: recognition stopped between two windows.
    #[error("recognition stopped: its caller went away")]
    Stopped,
}

impl From<AsrError> for Failure {
    fn from(e: AsrError) -> Self {
        match e {
            AsrError::Refused { param, message } => Self::Refused { param, message },
            AsrError::Stopped => Self::Stopped,
            other => Self::Failed(other.to_string()),
        }
    }
}

/// Which lane a job waits in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lane {
    /// A live session's utterance: taken first.
    Live,
    /// A file transcription.
    File,
}

/// The recogniser threads' queue: two FIFO lanes, the live one always taken first. Closed when
/// the last [`Inlet`] is dropped (the service is gone): the threads then finish what waits and
/// return.
struct Lanes<T> {
    state: Mutex<LaneState<T>>,
    ready: Condvar,
}

struct LaneState<T> {
    live: VecDeque<T>,
    file: VecDeque<T>,
    closed: bool,
}

impl<T> Lanes<T> {
    fn new() -> Self {
        Self {
            state: Mutex::new(LaneState {
                live: VecDeque::new(),
                file: VecDeque::new(),
                closed: false,
            }),
            ready: Condvar::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LaneState<T>> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Queues `job` in `lane`; `Err` gives it back once the lanes are closed.
    fn push(&self, lane: Lane, job: T) -> Result<(), T> {
        let mut state = self.lock();
        if state.closed {
            return Err(job);
        }
        match lane {
            Lane::Live => state.live.push_back(job),
            Lane::File => state.file.push_back(job),
        }
        drop(state);
        self.ready.notify_one();
        Ok(())
    }

    /// The next job, the live lane's first; waits for one. `None`: closed and empty.
    fn take(&self) -> Option<T> {
        let mut state = self.lock();
        loop {
            if let Some(job) = state.live.pop_front().or_else(|| state.file.pop_front()) {
                return Some(job);
            }
            if state.closed {
                return None;
            }
            state = self
                .ready
                .wait(state)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }

    fn close(&self) {
        self.lock().closed = true;
        self.ready.notify_all();
    }
}

/// The service's end of the lanes, shared by its clones: dropping the last closes them.
struct Inlet(Arc<Lanes<Job>>);

impl Drop for Inlet {
    fn drop(&mut self) {
        self.0.close();
    }
}

#[derive(Clone)]
pub struct AsrService {
    jobs: Arc<Inlet>,
    admission: Arc<Semaphore>,
    /// The places the app's free use may hold at once (half of them, at least one), so that
    /// accounts without a plan never take every place from paying ones.
    free_admission: Arc<Semaphore>,
    model_dir: Arc<std::path::Path>,
    /// Jobs dropped unrun because their client had gone when their turn came.
    skipped: Arc<AtomicU64>,
    /// Jobs stopped between two windows because their client had gone.
    stopped: Arc<AtomicU64>,
    /// Jobs handed to the recogniser threads.
    submitted: Arc<AtomicU64>,
    /// The process's wide recogniser, and the jobs it ran.
    wide: Arc<Wide>,
    /// Places in all: threads plus queue.
    capacity: usize,
    /// Transcriptions each account has in flight in this process (accounts with none are
    /// absent), and how many one account may have.
    per_account: Arc<Mutex<HashMap<String, usize>>>,
    max_per_account: usize,
}

/// A transcription's places: one of the recogniser's (threads plus queue), one of its
/// account's in flight, and for the app's free use one of the free places. The request holds it
/// until its job is handed over ([`AsrService::recognize`]), then the recogniser thread until
/// it is done with the job: a caller that goes away never frees a place a thread still works
/// for.
pub struct Ticket {
    _recogniser: OwnedSemaphorePermit,
    _account: AccountHold,
    _free: Option<OwnedSemaphorePermit>,
    /// Whether the job may run on the wide replica (never the app's free use).
    may_widen: bool,
}

impl Ticket {
    /// Whether its jobs may run on the wide replica (never the app's free use).
    pub fn may_widen(&self) -> bool {
        self.may_widen
    }
}

/// Why [`AsrService::try_ticket`] gave no ticket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoTicket {
    /// The account has this many transcriptions in flight already, its most.
    Account { max: usize },
    /// Every place (or every place the free use may hold) is taken.
    Busy,
}

/// One of an account's transcriptions in flight; dropping it gives the account's count back.
pub struct AccountHold {
    per_account: Arc<Mutex<HashMap<String, usize>>>,
    account: String,
}

impl Drop for AccountHold {
    fn drop(&mut self) {
        let mut counts = self
            .per_account
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(n) = counts.get_mut(&self.account) {
            *n -= 1;
            if *n == 0 {
                counts.remove(&self.account);
            }
        }
    }
}

impl AsrService {
    /// Starts `threads` recogniser threads (each loads its model on first use) and a queue of
    /// `queue` places beyond them.
    pub fn start(config: WhisperConfig, threads: usize, queue: usize) -> std::io::Result<Self> {
        let inbox = Arc::new(Lanes::new());
        let skipped = Arc::new(AtomicU64::new(0));
        let stopped = Arc::new(AtomicU64::new(0));
        let wide = Arc::new(Wide::for_config(&config));
        for n in 0..threads.max(1) {
            let (inbox, config, skipped) = (inbox.clone(), config.clone(), skipped.clone());
            let stopped = stopped.clone();
            let wide = wide.clone();
            std::thread::Builder::new()
                .name(format!("asr-{n}"))
                .spawn(move || recogniser_thread(&config, &wide, &inbox, (&skipped, &stopped)))?;
        }
        let capacity = threads.max(1) + queue;
        Ok(Self {
            jobs: Arc::new(Inlet(inbox)),
            admission: Arc::new(Semaphore::new(capacity)),
            free_admission: Arc::new(Semaphore::new((capacity / 2).max(1))),
            model_dir: config.model_dir.into(),
            skipped,
            stopped,
            submitted: Arc::default(),
            wide,
            capacity,
            per_account: Arc::default(),
            max_per_account: usize::MAX,
        })
    }

    /// At most `max` transcriptions in flight per account (`max_transcriptions_per_account`).
    #[must_use]
    pub fn with_max_per_account(mut self, max: usize) -> Self {
        self.max_per_account = max.max(1);
        self
    }

    /// How many transcriptions one account may have in flight in this process.
    pub fn max_per_account(&self) -> usize {
        self.max_per_account
    }

    /// One more transcription in flight for `account`, or `None` when it has
    /// [`Self::max_per_account`] already. Hold it until the answer.
    pub fn try_hold_for(&self, account: &str) -> Option<AccountHold> {
        self.try_hold_at_most(account, self.max_per_account)
    }

    fn try_hold_at_most(&self, account: &str, max: usize) -> Option<AccountHold> {
        let mut counts = self
            .per_account
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let n = counts.entry(account.to_owned()).or_insert(0);
        if *n >= max {
            return None;
        }
        *n += 1;
        Some(AccountHold {
            per_account: self.per_account.clone(),
            account: account.to_owned(),
        })
    }

    /// The places a transcription for `account` needs, taken together or not at all. The
    /// app's free use (`free`) may have one transcription in flight per account, only while
    /// fewer than half the places are held by free use, and never runs on the wide replica.
    pub fn try_ticket(&self, account: &str, free: bool) -> Result<Ticket, NoTicket> {
        let max = if free { 1 } else { self.max_per_account };
        let hold = self
            .try_hold_at_most(account, max)
            .ok_or(NoTicket::Account { max })?;
        let free_place = if free {
            Some(
                self.free_admission
                    .clone()
                    .try_acquire_owned()
                    .map_err(|_| NoTicket::Busy)?,
            )
        } else {
            None
        };
        let recogniser = self.try_admit().ok_or(NoTicket::Busy)?;
        Ok(Ticket {
            _recogniser: recogniser,
            _account: hold,
            _free: free_place,
            may_widen: !free,
        })
    }

    /// Whether the configured model is on disk.
    pub fn is_installed(&self) -> bool {
        self.model_dir.join("model.bin").is_file()
    }

    /// A place in the recogniser's queue, or `None` when it is full. Hold it until the answer.
    pub fn try_admit(&self) -> Option<OwnedSemaphorePermit> {
        self.admission.clone().try_acquire_owned().ok()
    }

    /// Places free now (threads plus queue, less those held).
    pub fn available(&self) -> usize {
        self.admission.available_permits()
    }

    /// Places held now: transcriptions running or waiting for a recogniser thread.
    pub fn in_use(&self) -> usize {
        self.capacity - self.admission.available_permits().min(self.capacity)
    }

    /// How many jobs were handed to the recogniser threads.
    pub fn submitted(&self) -> u64 {
        self.submitted.load(Ordering::Relaxed)
    }

    /// How many jobs ran on the wide recogniser (every core) so far.
    pub fn widened(&self) -> u64 {
        self.wide.runs.load(Ordering::Relaxed)
    }

    /// How many jobs were dropped unrun because their client had gone.
    pub fn skipped(&self) -> u64 {
        self.skipped.load(Ordering::Relaxed)
    }

    /// How many jobs stopped between two windows because their client had gone.
    pub fn stopped(&self) -> u64 {
        self.stopped.load(Ordering::Relaxed)
    }

    /// Transcribes 16 kHz mono samples on a recogniser thread.
    pub async fn transcribe(&self, samples_16k: Vec<f32>) -> Result<Transcript, Failure> {
        self.recognize(samples_16k, RecognitionOptions::default(), None, None)
            .await
    }

    /// The configured model's name (its directory's name, e.g. `whisper-base`).
    pub fn model_name(&self) -> String {
        self.model_dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    /// Recognises 16 kHz mono samples as `options` say on a recogniser thread, sending each
    /// segment to `segments` (when given) as soon as it is decoded. The `ticket`'s places go
    /// with the job and are given back when the thread is done with it; a caller that goes away
    /// (this future dropped) stops the job between two windows.
    pub async fn recognize(
        &self,
        samples_16k: Vec<f32>,
        options: RecognitionOptions,
        segments: Option<tokio::sync::mpsc::UnboundedSender<(Segment, Vec<Word>)>>,
        ticket: Option<Ticket>,
    ) -> Result<Transcript, Failure> {
        let may_widen = ticket.as_ref().is_none_or(|t| t.may_widen);
        let job = (samples_16k, options, segments, ticket);
        self.submit(Lane::File, job, may_widen).await
    }

    /// Recognises one utterance of a live session, which holds its [`Ticket`] for its whole
    /// life rather than handing it to one job (`may_widen`: [`Ticket::may_widen`]). A final
    /// (`urgent`) waits in the live lane, ahead of every file transcription; an interim waits
    /// with the files, so that sessions' interims (one a second each) can never keep the
    /// files from the recogniser.
    pub async fn recognize_held(
        &self,
        samples_16k: Vec<f32>,
        options: RecognitionOptions,
        may_widen: bool,
        urgent: bool,
    ) -> Result<Transcript, Failure> {
        let lane = if urgent { Lane::Live } else { Lane::File };
        self.submit(lane, (samples_16k, options, None, None), may_widen)
            .await
    }

    async fn submit(
        &self,
        lane: Lane,
        (samples_16k, options, segments, ticket): JobInput,
        may_widen: bool,
    ) -> Result<Transcript, Failure> {
        let (reply, answer) = oneshot::channel();
        let job = Job {
            samples_16k,
            options,
            ticket,
            may_widen,
            segments,
            reply,
        };
        if self.jobs.0.push(lane, job).is_err() {
            return Err(Failure::Failed("recogniser threads stopped".to_owned()));
        }
        self.submitted.fetch_add(1, Ordering::Relaxed);
        answer
            .await
            .unwrap_or_else(|_| Err(Failure::Failed("recogniser thread stopped".into())))
    }
}

/// What a job is made of, beyond its reply: the samples, the options, where segments go and
/// the ticket.
type JobInput = (
    Vec<f32>,
    RecognitionOptions,
    Option<tokio::sync::mpsc::UnboundedSender<(Segment, Vec<Word>)>>,
    Option<Ticket>,
);

/// The process's wide recogniser: a replica with every core as threads, loaded on its first
/// lone job, used by one job at a time.
struct Wide {
    /// `None`: no wider replica than the threads' own (one core, or CTranslate2 choosing).
    config: Option<WhisperConfig>,
    slot: Mutex<Option<Recognizer>>,
    runs: AtomicU64,
}

impl Wide {
    fn for_config(config: &WhisperConfig) -> Self {
        let threads = (config.threads > 0)
            .then(|| cores::wide_threads(config.threads))
            .flatten();
        Self {
            config: threads.map(|threads| WhisperConfig {
                threads,
                ..config.clone()
            }),
            slot: Mutex::new(None),
            runs: AtomicU64::new(0),
        }
    }
}

fn recogniser_thread(
    config: &WhisperConfig,
    wide: &Wide,
    inbox: &Lanes<Job>,
    (skipped, stopped): (&AtomicU64, &AtomicU64),
) {
    let mut recognizer: Option<Recognizer> = None;
    loop {
        let Some(job) = inbox.take() else {
            return;
        };
        if job.reply.is_closed() {
            skipped.fetch_add(1, Ordering::Relaxed);
            continue; // the client went away before its turn
        }
        let mut run = Run::start();
        // Alone in the process: the wide replica, unless another job holds it (or the job is
        // the app's free use).
        let mut wide_slot = match (&wide.config, job.may_widen && run.alone()) {
            (Some(wide_config), true) => wide.slot.try_lock().ok().map(|slot| (wide_config, slot)),
            _ => None,
        };
        if wide_slot.is_some() {
            run.widen();
        }
        // A panic fails this one transcription; the model is loaded afresh for the next.
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut on_segment = |segment: &Segment, words: &[Word]| {
                if let Some(sink) = &job.segments {
                    let _ = sink.send((segment.clone(), words.to_vec()));
                }
            };
            let loaded = match &mut wide_slot {
                Some((wide_config, slot)) => load(wide_config, slot),
                None => load(config, &mut recognizer),
            };
            let gone = || job.reply.is_closed();
            loaded
                .and_then(|r| {
                    r.recognize_until(&job.samples_16k, &job.options, &mut on_segment, &gone)
                })
                .map_err(Failure::from)
        }));
        let result = outcome.unwrap_or_else(|_| {
            tracing::error!("recogniser panicked; reloading the model");
            match &mut wide_slot {
                Some((_, slot)) => **slot = None,
                None => recognizer = None,
            }
            Err(Failure::Failed("the recogniser failed unexpectedly".into()))
        });
        if wide_slot.is_some() {
            wide.runs.fetch_add(1, Ordering::Relaxed);
            metrics::counter!("voiced_wide_runs_total", "kind" => "transcription").increment(1);
        }
        if matches!(result, Err(Failure::Stopped)) {
            stopped.fetch_add(1, Ordering::Relaxed);
        }
        // The thread is free again: so are the job's places.
        drop((wide_slot, run, job.ticket));
        let _ = job.reply.send(result);
    }
}

fn load<'a>(
    config: &WhisperConfig,
    slot: &'a mut Option<Recognizer>,
) -> Result<&'a Recognizer, AsrError> {
    if slot.is_none() {
        let recognizer = Recognizer::load(config)?;
        // The first transcription in a process is up to 3× slower: pay it here, once.
        recognizer.warm_up()?;
        *slot = Some(recognizer);
    }
    Ok(slot.as_ref().expect("loaded above"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_live_job_is_taken_before_every_waiting_file_job() {
        let lanes = Lanes::new();
        for job in ["file 1", "file 2"] {
            lanes.push(Lane::File, job).unwrap();
        }
        lanes.push(Lane::Live, "live 1").unwrap();
        lanes.push(Lane::File, "file 3").unwrap();
        lanes.push(Lane::Live, "live 2").unwrap();
        let order: Vec<_> = std::iter::from_fn(|| {
            let state = lanes.lock();
            let empty = state.live.is_empty() && state.file.is_empty();
            drop(state);
            (!empty).then(|| lanes.take()).flatten()
        })
        .collect();
        assert_eq!(order, ["live 1", "live 2", "file 1", "file 2", "file 3"]);
    }

    #[test]
    fn closed_lanes_refuse_new_jobs_and_hand_out_the_waiting_ones_then_none() {
        let lanes = Arc::new(Lanes::new());
        lanes.push(Lane::File, 1).unwrap();
        let waiting = {
            let lanes = lanes.clone();
            std::thread::spawn(move || (lanes.take(), lanes.take()))
        };
        lanes.close();
        assert_eq!(lanes.push(Lane::Live, 2), Err(2));
        assert_eq!(waiting.join().unwrap(), (Some(1), None));
    }

    #[test]
    fn a_waiting_thread_wakes_for_a_job() {
        let lanes = Arc::new(Lanes::new());
        let waiting = {
            let lanes = lanes.clone();
            std::thread::spawn(move || lanes.take())
        };
        lanes.push(Lane::Live, "live").unwrap();
        assert_eq!(waiting.join().unwrap(), Some("live"));
    }
}
