//! The process's one ONNX Runtime environment and the session set-up every ONNX engine shares.

use std::path::Path;
use std::sync::{Mutex, OnceLock};

use ort::environment::{Environment, GlobalThreadPoolOptions};
use ort::session::Session;
use ort::session::builder::GraphOptimizationLevel;

use super::EngineError;

/// `<models_dir>/onnxruntime/` holds this library (`voiced models fetch kokoro` installs it).
pub const ORT_LIBRARY: &str = "libonnxruntime.so.1.31.1";

/// `<models_dir>/onnxruntime/libonnxruntime.so.1.31.1`.
pub fn library_path(models_dir: &Path) -> std::path::PathBuf {
    models_dir.join("onnxruntime").join(ORT_LIBRARY)
}

/// Intra-op threads of a process-wide pool that every session shares, and whether its idle
/// threads spin, when set (before the first session) by [`share_one_thread_pool`]; unset, each
/// session has its own threads.
static SHARED_POOL: OnceLock<(usize, bool)> = OnceLock::new();

/// Makes every ONNX Runtime session of the process share one intra-op pool of `threads` threads
/// (ONNX Runtime's global thread pools) instead of each having its own. Must be called before
/// the first session is created; `false` when it came too late or was already set. `spin`: idle
/// pool threads spin-wait for work (ONNX Runtime's default) instead of sleeping. Measured
/// against sessions with their own threads in `bench/kokoro_sharing.py` (docs/benchmarks.md);
/// the service does not use it (sessions with their own thread were better).
pub fn share_one_thread_pool(threads: usize, spin: bool) -> bool {
    SHARED_POOL.set((threads.max(1), spin)).is_ok()
}

/// Whether sessions use the shared pool (their own thread count is then ignored).
pub fn shares_one_thread_pool() -> bool {
    SHARED_POOL.get().is_some_and(|&(threads, _)| threads > 0)
}

/// The process's ONNX Runtime environment (ort allows one per process), loading the library
/// from `library` on first use. With ort's `load-dynamic` a missing library makes the first ort
/// call panic, so its presence is checked first.
pub fn environment(library: &Path) -> Result<Environment, EngineError> {
    if !library.is_file() {
        return Err(EngineError::NotInstalled(format!(
            "ONNX Runtime library {} is missing: run `voiced models fetch kokoro`",
            library.display()
        )));
    }
    static ENVIRONMENT: Mutex<Option<Environment>> = Mutex::new(None);
    let mut env = ENVIRONMENT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(env) = env.as_ref() {
        return Ok(env.clone());
    }
    let cannot = |e: &dyn std::fmt::Display| {
        EngineError::NotInstalled(format!(
            "cannot load ONNX Runtime {}: {e}",
            library.display()
        ))
    };
    let mut builder = ort::init_from(library)
        .map_err(|e| cannot(&e))?
        .with_name("voiced");
    // Fixed now: a later call cannot change the environment built here.
    let (shared, spin) = *SHARED_POOL.get_or_init(|| (0, false));
    if shared > 0 {
        let pool = GlobalThreadPoolOptions::default()
            .with_intra_threads(shared)
            .and_then(|pool| pool.with_inter_threads(1))
            .and_then(|pool| pool.with_spin_control(spin))
            .map_err(|e| cannot(&e))?;
        builder = builder.with_global_thread_pool(pool);
    }
    let built = builder.build().map_err(|e| cannot(&e))?;
    *env = Some(built.clone());
    Ok(built)
}

pub fn inference(e: impl std::fmt::Display) -> EngineError {
    EngineError::Inference(e.to_string())
}

/// A session on `model` with ONNX Runtime's default optimisations and `intra_threads` threads.
pub fn session(
    env: &Environment,
    model: &Path,
    intra_threads: usize,
) -> Result<Session, EngineError> {
    if !model.is_file() {
        return Err(EngineError::NotInstalled(format!(
            "{} is missing",
            model.display()
        )));
    }
    Session::builder(env)
        .map_err(inference)?
        // `All` is ONNX Runtime's default (and Python's); ort's `Level3` is not the same.
        .with_optimization_level(GraphOptimizationLevel::All)
        .map_err(inference)?
        .with_intra_threads(intra_threads.max(1))
        .map_err(inference)?
        .commit_from_file(model)
        .map_err(|e| EngineError::NotInstalled(format!("cannot load {}: {e}", model.display())))
}
