//! What the workers of this process report about themselves, for `/readyz`: a worker whose
//! engine cannot start says so here (and retries), so the process is not ready while it cannot
//! generate.

use std::collections::BTreeMap;
use std::sync::Mutex;

#[derive(Debug, Default)]
pub struct WorkerHealth {
    problems: Mutex<BTreeMap<String, String>>,
}

impl WorkerHealth {
    /// Records `worker`'s problem, or clears it with `None`.
    pub fn report(&self, worker: &str, problem: Option<String>) {
        let mut problems = self.problems.lock().unwrap_or_else(|e| e.into_inner());
        match problem {
            Some(problem) => problems.insert(worker.to_owned(), problem),
            None => problems.remove(worker),
        };
    }

    /// The first problem any worker reports (for clients: no paths, no internal detail).
    pub fn problem(&self) -> Option<String> {
        let problems = self.problems.lock().unwrap_or_else(|e| e.into_inner());
        problems.values().next().cloned()
    }
}
