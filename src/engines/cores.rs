//! The process's model runs in progress, so that a run that starts alone may use every core (a
//! session or replica with more intra-op threads) while runs side by side keep one core each.
//!
//! Every model run of the process counts itself here while it computes: a speech segment on an
//! engine thread (its own generation's or one it helps with), a whole-text synthesis, a
//! transcription. A run that finds no other in progress is told it is alone; the caller then
//! picks its wide instance. Runs that start later use their own one-thread instances as before,
//! so a wide run meets at most a few seconds of contention (its own length) and throughput under
//! load is what it was (every run then starts with another in progress).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

static RUNNING: AtomicUsize = AtomicUsize::new(0);
/// Runs in progress on a wide instance.
static WIDE: AtomicUsize = AtomicUsize::new(0);
/// When a run last started beside a wide one, in milliseconds from [`epoch`] (0: never).
static CONTENDED_MS: AtomicU64 = AtomicU64::new(0);

/// After a run started beside a wide one, runs stay on their own instances for this long: under
/// steady load two workers' gaps between jobs (store, complete, claim) would otherwise let one
/// of them go wide now and then and share the cores with the other's next run.
pub const QUIET_AFTER_CONTENTION: Duration = Duration::from_secs(10);

fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

fn now_ms() -> u64 {
    // Never 0, which means "never contended".
    epoch().elapsed().as_millis() as u64 + 1
}

/// One model run in progress; counted until dropped.
#[must_use = "the run counts only while this is held"]
pub struct Run {
    alone: bool,
    wide: bool,
}

impl Run {
    /// Counts a run from now on.
    pub fn start() -> Self {
        let now = now_ms();
        let before = RUNNING.fetch_add(1, Ordering::SeqCst);
        if WIDE.load(Ordering::SeqCst) > 0 {
            CONTENDED_MS.store(now, Ordering::SeqCst);
        }
        let contended = CONTENDED_MS.load(Ordering::SeqCst);
        let quiet = contended == 0
            || now.saturating_sub(contended) >= QUIET_AFTER_CONTENTION.as_millis() as u64;
        Self {
            alone: before == 0 && quiet,
            wide: false,
        }
    }

    /// No other run of the process was in progress when this one started, and none has started
    /// beside a wide run for [`QUIET_AFTER_CONTENTION`]: the caller may use a wide instance.
    pub fn alone(&self) -> bool {
        self.alone
    }

    /// Records that this run uses a wide instance (a run that starts beside it then holds wide
    /// runs back for a while).
    pub fn widen(&mut self) {
        if !self.wide {
            self.wide = true;
            WIDE.fetch_add(1, Ordering::SeqCst);
        }
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        if self.wide {
            WIDE.fetch_sub(1, Ordering::SeqCst);
        }
        RUNNING.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Model runs in progress in the process now.
pub fn running() -> usize {
    RUNNING.load(Ordering::SeqCst)
}

/// The cores this process may use (what a wide instance's threads are sized to).
pub fn available() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Intra-op threads of a process's wide instance of a model whose other instances have
/// `narrow` threads: every core, or `None` when that is no more than `narrow` (no wide instance
/// is worth its memory then).
pub fn wide_threads(narrow: usize) -> Option<usize> {
    let cores = available();
    (cores > narrow.max(1)).then_some(cores)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_beside_another_is_not_alone_and_one_beside_a_wide_run_holds_wide_runs_back() {
        let first = Run::start();
        let second = Run::start();
        assert!(!second.alone());
        assert!(running() >= 2);
        drop((first, second));
        let mut wide = Run::start();
        wide.widen();
        let beside = Run::start();
        assert!(!beside.alone());
        drop((wide, beside));
        // Alone again, but within the quiet time after a run met a wide one.
        assert!(!Run::start().alone());
        assert_eq!(wide_threads(available()), None);
        assert_eq!(wide_threads(0), (available() > 1).then_some(available()));
    }
}
