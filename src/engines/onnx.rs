//! The process's one ONNX Runtime environment and the session set-up every ONNX engine shares.

use std::path::Path;
use std::sync::Mutex;

use ort::environment::Environment;
use ort::session::Session;
use ort::session::builder::GraphOptimizationLevel;

use super::EngineError;

/// `<models_dir>/onnxruntime/` holds this library (`voiced models fetch kokoro` installs it).
pub const ORT_LIBRARY: &str = "libonnxruntime.so.1.31.1";

/// `<models_dir>/onnxruntime/libonnxruntime.so.1.31.1`.
pub fn library_path(models_dir: &Path) -> std::path::PathBuf {
    models_dir.join("onnxruntime").join(ORT_LIBRARY)
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
    let built = ort::init_from(library)
        .map_err(|e| cannot(&e))?
        .with_name("voiced")
        .build()
        .map_err(|e| cannot(&e))?;
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
