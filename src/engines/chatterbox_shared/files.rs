//! The file layout an operator places under `<models_dir>/chatterbox_turbo/` or
//! `<models_dir>/chatterbox/`: the public ONNX names (`ResembleAI/chatterbox-turbo-ONNX`,
//! `onnx-community/chatterbox-multilingual-ONNX`), one precision variant per graph chosen by
//! which files are present, plus the seeded copy of the decoder that `voiced models prepare`
//! writes. `engine` arguments are the engine id, for the messages.

use std::path::{Path, PathBuf};

pub use crate::engines::files::VOICES;
use crate::engines::files::manifest;

pub const SPEECH_ENCODER: &str = "speech_encoder";
pub const EMBED_TOKENS: &str = "embed_tokens";
pub const LANGUAGE_MODEL: &str = "language_model";
pub const CONDITIONAL_DECODER: &str = "conditional_decoder";
pub const GRAPHS: [&str; 4] = [
    SPEECH_ENCODER,
    EMBED_TOKENS,
    LANGUAGE_MODEL,
    CONDITIONAL_DECODER,
];
/// Suffixes of the upstream precision variants, in order of preference (highest precision
/// first): fp32, fp16, q8, q4, q4f16. Operators normally place one per graph.
pub const VARIANTS: [&str; 5] = ["", "_fp16", "_quantized", "_q4", "_q4f16"];
pub const TOKENIZER: &str = "tokenizer.json";
/// Mel channels of the decoder's flow noise (the `noise` input of the seeded decoder).
pub const NOISE_CHANNELS: usize = 80;

/// The first variant of `graph` present under `dir/onnx/`.
pub fn graph(dir: &Path, graph: &str) -> Option<PathBuf> {
    VARIANTS
        .iter()
        .map(|v| dir.join("onnx").join(format!("{graph}{v}.onnx")))
        .find(|p| p.is_file())
}

/// The seeded copy written next to `decoder` (`conditional_decoder.seeded.onnx`).
pub fn seeded(decoder: &Path) -> PathBuf {
    decoder.with_extension("seeded.onnx")
}

/// What is missing or wrong for `engine` to run from `dir`, one line each (empty: installed).
pub fn problems(dir: &Path, engine: &str) -> Vec<String> {
    let mut problems = Vec::new();
    for name in GRAPHS {
        if graph(dir, name).is_none() {
            problems.push(format!(
                "onnx/{name}.onnx (or a _fp16/_quantized/_q4/_q4f16 variant) is missing"
            ));
        }
    }
    if !dir.join(TOKENIZER).is_file() {
        problems.push(format!("{TOKENIZER} is missing"));
    }
    if let Some(decoder) = graph(dir, CONDITIONAL_DECODER)
        && let Err(problem) = verify_seeded(&decoder, engine)
    {
        problems.push(problem);
    }
    problems
}

/// The seeded decoder exists and matches the checksums recorded when it was written from the
/// decoder that is in place now ([`manifest::verify_seeded`]); `Ok` is its path.
pub fn verify_seeded(decoder: &Path, engine: &str) -> Result<PathBuf, String> {
    let seeded = seeded(decoder);
    manifest::verify_seeded(decoder, &seeded, engine)?;
    Ok(seeded)
}
