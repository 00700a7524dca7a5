//! The file layout an operator places under `<models_dir>/qwen/` (Qwen3-TTS Base, which clones
//! from reference audio) or `<models_dir>/qwen_custom_voice/` (CustomVoice, nine preset
//! speakers): the public wavekat ONNX export's names. The four generation graphs sit in one
//! precision directory (`fp32/`, `fp16/`, `int8/` or `int4/`, the highest present wins), the
//! rest at the root.

use std::path::{Path, PathBuf};

use crate::engines::files::manifest;

pub const TALKER_PREFILL: &str = "talker_prefill.onnx";
pub const TALKER_DECODE: &str = "talker_decode.onnx";
pub const CODE_PREDICTOR: &str = "code_predictor.onnx";
pub const VOCODER: &str = "vocoder.onnx";
pub const GRAPHS: [&str; 4] = [TALKER_PREFILL, TALKER_DECODE, CODE_PREDICTOR, VOCODER];
/// Precision directories in order of preference.
pub const PRECISIONS: [&str; 4] = ["fp32", "fp16", "int8", "int4"];
/// Base only, at the root (fp32 upstream).
pub const SPEAKER_ENCODER: &str = "speaker_encoder.onnx";
pub const TOKENIZER_ENCODER: &str = "tokenizer_encoder.onnx";
pub const CONFIG: &str = "config.json";
pub const VOCAB: &str = "tokenizer/vocab.json";
pub const MERGES: &str = "tokenizer/merges.txt";
pub const EMBEDDINGS: &str = "embeddings";
/// Base only: reference clips of the preset voices, `voices/<preset>.wav`, each optionally with
/// its transcript `voices/<preset>.txt` (then the clip is also an in-context example).
pub use crate::engines::files::VOICES;

/// The two engines on this layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// `Qwen3-TTS-12Hz-*-Base`: speaker encoder and speech tokenizer; clones.
    Base,
    /// `Qwen3-TTS-12Hz-*-CustomVoice`: nine built-in speakers; no cloning.
    CustomVoice,
}

impl Variant {
    /// The engine's capabilities.
    pub fn info(self) -> &'static crate::domain::EngineInfo {
        match self {
            Self::Base => super::INFO_BASE,
            Self::CustomVoice => super::INFO_CUSTOM_VOICE,
        }
    }

    /// The engine id, which is also the directory under the models dir.
    pub fn engine(self) -> &'static str {
        self.info().id.as_str()
    }

    /// `tts_model_type` in `config.json`.
    pub fn model_type(self) -> &'static str {
        match self {
            Self::Base => "base",
            Self::CustomVoice => "custom_voice",
        }
    }

    pub fn dir(self, models_dir: &Path) -> PathBuf {
        models_dir.join(self.engine())
    }
}

/// The first precision directory holding all four generation graphs.
pub fn precision(dir: &Path) -> Option<&'static str> {
    PRECISIONS
        .into_iter()
        .find(|p| GRAPHS.iter().all(|g| dir.join(p).join(g).is_file()))
}

/// The graphs and small files `voiced models prepare` checks and records (relative paths).
pub fn checked_files(dir: &Path, variant: Variant) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = match precision(dir) {
        Some(p) => GRAPHS.iter().map(|g| Path::new(p).join(g)).collect(),
        None => Vec::new(),
    };
    if variant == Variant::Base {
        files.push(SPEAKER_ENCODER.into());
        files.push(TOKENIZER_ENCODER.into());
    }
    files.extend([CONFIG, VOCAB, MERGES].map(PathBuf::from));
    files
}

/// What is missing or wrong for the engine to run, one line each (empty: installed).
pub fn problems(dir: &Path, variant: Variant) -> Vec<String> {
    let mut problems = Vec::new();
    if precision(dir).is_none() {
        problems.push(format!(
            "{{fp32,fp16,int8,int4}}/{{{}}} are missing (one precision directory with all four)",
            GRAPHS.join(",")
        ));
    }
    let mut required = vec![CONFIG, VOCAB, MERGES];
    if variant == Variant::Base {
        required.extend([SPEAKER_ENCODER, TOKENIZER_ENCODER]);
    }
    for file in required {
        if !dir.join(file).is_file() {
            problems.push(format!("{file} is missing"));
        }
    }
    for table in [
        "text_embedding",
        "text_projection_fc1_weight",
        "text_projection_fc1_bias",
        "text_projection_fc2_weight",
        "text_projection_fc2_bias",
        "talker_codec_embedding",
        "cp_codec_embedding_0",
    ] {
        if !embedding(dir, table).is_file() {
            problems.push(format!("{EMBEDDINGS}/{table}.npy is missing"));
        }
    }
    if problems.is_empty()
        && let Err(problem) = manifest::verify(dir, &checked_files(dir, variant), variant.engine())
    {
        problems.push(problem);
    }
    problems
}

pub fn embedding(dir: &Path, table: &str) -> PathBuf {
    dir.join(EMBEDDINGS).join(format!("{table}.npy"))
}
