//! `voiced models prepare qwen|qwen_custom_voice|luxtts`: the install step for these engines'
//! operator-placed files. Their graphs need no rewrite (all sampling and start noise is drawn
//! on the host from the seed); the step proves it — `scripts/check_graph_noise.py` refuses a
//! graph with a random operator, naming it — and records the checked files' sha256, which the
//! engine verifies before it loads them.

use std::path::{Path, PathBuf};

use super::kokoro::{FetchError, ensure_onnx, run_script};
use crate::domain::EngineId;
use crate::engines::files::manifest;
use crate::engines::{luxtts, qwen};

const CHECK_SCRIPT: &str = include_str!("../../scripts/check_graph_noise.py");

/// The engines this step is for.
pub const ENGINES: [EngineId; 3] = [EngineId::Qwen, EngineId::QwenCustomVoice, EngineId::Luxtts];

/// The engine's dir and the files to check there (relative).
fn layout(models_dir: &Path, engine: EngineId) -> (PathBuf, Vec<PathBuf>) {
    match engine {
        EngineId::Luxtts => {
            let dir = luxtts::files::dir(models_dir);
            let files = luxtts::files::checked_files(&dir);
            (dir, files)
        }
        _ => {
            let variant = if engine == EngineId::QwenCustomVoice {
                qwen::Variant::CustomVoice
            } else {
                qwen::Variant::Base
            };
            let dir = variant.dir(models_dir);
            let files = qwen::files::checked_files(&dir, variant);
            (dir, files)
        }
    }
}

/// Checks the placed graphs and records the checksums (idempotent: a record that still
/// verifies is kept). Returns the manifest's path.
pub fn prepare(models_dir: &Path, engine: EngineId) -> Result<PathBuf, FetchError> {
    let (dir, files) = layout(models_dir, engine);
    let missing = match engine {
        EngineId::Luxtts => luxtts::files::problems(&dir),
        EngineId::Qwen => qwen::files::problems(&dir, qwen::Variant::Base),
        _ => qwen::files::problems(&dir, qwen::Variant::CustomVoice),
    };
    if let Some(problem) = missing
        .iter()
        .find(|p| !p.contains("voiced models prepare"))
    {
        return Err(FetchError::Check(format!(
            "{}: {problem}; place the upstream files first (docs/engines.md)",
            dir.display()
        )));
    }
    if manifest::verify(&dir, &files, engine.as_str()).is_ok() {
        return Ok(manifest::path(&dir));
    }
    let pylib = ensure_onnx(models_dir, &super::pypi::Quiet)?;
    let graphs: Vec<PathBuf> = files
        .iter()
        .filter(|f| f.extension().is_some_and(|x| x == "onnx"))
        .map(|f| dir.join(f))
        .collect();
    let args: Vec<&std::ffi::OsStr> = graphs.iter().map(|g| g.as_os_str()).collect();
    run_script(&pylib, CHECK_SCRIPT, &args).map_err(|e| match e {
        FetchError::Rewrite(why) => FetchError::Check(why),
        other => other,
    })?;
    manifest::record(&dir, &files).map_err(|source| FetchError::Io {
        path: manifest::path(&dir),
        source,
    })?;
    Ok(manifest::path(&dir))
}
