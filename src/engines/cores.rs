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
use std::sync::atomic::{AtomicUsize, Ordering};

static RUNNING: AtomicUsize = AtomicUsize::new(0);

/// One model run in progress; counted until dropped.
#[must_use = "the run counts only while this is held"]
pub struct Run {
    alone: bool,
}

impl Run {
    /// Counts a run from now on.
    pub fn start() -> Self {
        let before = RUNNING.fetch_add(1, Ordering::SeqCst);
        Self { alone: before == 0 }
    }

    /// No other run of the process was in progress when this one started.
    pub fn alone(&self) -> bool {
        self.alone
    }
}

impl Drop for Run {
    fn drop(&mut self) {
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
    fn a_run_beside_another_is_not_alone_and_wide_means_more_threads() {
        let first = Run::start();
        let second = Run::start();
        assert!(!second.alone());
        assert!(running() >= 2);
        drop((first, second));
        assert_eq!(wide_threads(available()), None);
        assert_eq!(wide_threads(0), (available() > 1).then_some(available()));
    }
}
