//! `voiced models prepare chatterbox_turbo|chatterbox`: the install step for operator-placed
//! Chatterbox files. No weights can be fetched (none are published outside a model hub); what
//! this does is give the conditional decoder a seed: `scripts/seed_noise_graph.py` rewrites its
//! `RandomNormalLike` into a `noise` input, and the checksums of the source and of the output
//! are recorded next to them, so that the engine loads only a seeded decoder made from the
//! decoder in place.

use std::path::{Path, PathBuf};

use super::kokoro::{FetchError, ensure_onnx, run_script};
use crate::engines::chatterbox_shared::files;
use crate::engines::files::manifest;
use crate::engines::{chatterbox, chatterbox_turbo};

const SEED_SCRIPT: &str = include_str!("../../scripts/seed_noise_graph.py");

/// [`prepare`] for `chatterbox_turbo`.
pub fn prepare_turbo(models_dir: &Path) -> Result<PathBuf, FetchError> {
    prepare(models_dir, chatterbox_turbo::DIR)
}

/// [`prepare`] for `chatterbox` (multilingual).
pub fn prepare_multilingual(models_dir: &Path) -> Result<PathBuf, FetchError> {
    prepare(models_dir, chatterbox::DIR)
}

/// Writes `<decoder>.seeded.onnx` and `<decoder>.seeded.sha256` for the engine whose files are
/// in `<models_dir>/<engine>` (idempotent: a seeded decoder that still verifies is kept).
/// Returns the seeded graph's path.
pub fn prepare(models_dir: &Path, engine: &str) -> Result<PathBuf, FetchError> {
    let dir = models_dir.join(engine);
    let decoder = files::graph(&dir, files::CONDITIONAL_DECODER).ok_or_else(|| FetchError::Io {
        path: dir.join("onnx/conditional_decoder.onnx"),
        source: std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "place the upstream files first (docs/engines.md)",
        ),
    })?;
    if let Ok(seeded) = files::verify_seeded(&decoder, engine) {
        return Ok(seeded);
    }
    let pylib = ensure_onnx(models_dir, &super::pypi::Quiet)?;
    let seeded = files::seeded(&decoder);
    let channels = files::NOISE_CHANNELS.to_string();
    run_script(
        &pylib,
        SEED_SCRIPT,
        &[
            decoder.as_os_str(),
            seeded.as_os_str(),
            std::ffi::OsStr::new(&channels),
        ],
    )?;
    manifest::record_seeded(&decoder, &seeded).map_err(|source| FetchError::Io {
        path: manifest::seeded_path(&decoder),
        source,
    })?;
    Ok(seeded)
}
