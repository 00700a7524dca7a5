//! The file layout under `<models_dir>/luxtts/`: the two graphs of `YatharthS/LuxTTS`
//! (`text_encoder.onnx`, `fm_decoder.onnx` or a precision variant such as upstream's
//! `fm_decoder_int8.onnx`), its `tokens.txt`, and a vocoder the operator supplies as ONNX
//! (`vocoder.onnx`: upstream's Vocos is PyTorch only; docs/engines.md gives the signature).

use std::path::{Path, PathBuf};

use crate::engines::files::manifest;

pub const DIR: &str = "luxtts";
pub const TEXT_ENCODER: &str = "text_encoder";
pub const FM_DECODER: &str = "fm_decoder";
pub const VOCODER: &str = "vocoder.onnx";
pub const TOKENS: &str = "tokens.txt";
/// Precision suffixes in order of preference: fp32, fp16, q8 (upstream's `_int8`), q4.
pub const VARIANTS: [&str; 4] = ["", "_fp16", "_int8", "_int4"];
/// Reference clips of the preset voices with their transcripts: `voices/<preset>.wav` and
/// `voices/<preset>.txt` ([`Clips::WithTranscript`](crate::engines::files::Clips)).
pub use crate::engines::files::VOICES;

pub fn dir(models_dir: &Path) -> PathBuf {
    models_dir.join(DIR)
}

/// The first variant of `graph` present in `dir` (a relative path).
pub fn graph(dir: &Path, graph: &str) -> Option<PathBuf> {
    VARIANTS
        .iter()
        .map(|v| PathBuf::from(format!("{graph}{v}.onnx")))
        .find(|p| dir.join(p).is_file())
}

/// The files `voiced models prepare luxtts` checks and records (relative paths).
pub fn checked_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = [TEXT_ENCODER, FM_DECODER]
        .iter()
        .filter_map(|g| graph(dir, g))
        .collect();
    files.push(VOCODER.into());
    files.push(TOKENS.into());
    files
}

/// What is missing or wrong for the engine to run, one line each (empty: installed).
pub fn problems(dir: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    for name in [TEXT_ENCODER, FM_DECODER] {
        if graph(dir, name).is_none() {
            problems.push(format!(
                "{name}.onnx (or a _fp16/_int8/_int4 variant) is missing"
            ));
        }
    }
    if !dir.join(VOCODER).is_file() {
        problems.push(format!(
            "{VOCODER} is missing: an ONNX vocoder mel [1, 100, frames] → waveform (docs/engines.md)"
        ));
    }
    if !dir.join(TOKENS).is_file() {
        problems.push(format!("{TOKENS} is missing"));
    }
    if problems.is_empty()
        && let Err(problem) = manifest::verify(dir, &checked_files(dir), DIR)
    {
        problems.push(problem);
    }
    problems
}
