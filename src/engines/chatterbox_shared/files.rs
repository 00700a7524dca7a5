//! The file layout an operator places under `<models_dir>/chatterbox_turbo/` or
//! `<models_dir>/chatterbox/`: the public ONNX names (`ResembleAI/chatterbox-turbo-ONNX`,
//! `onnx-community/chatterbox-multilingual-ONNX`), one precision variant per graph chosen by
//! which files are present, plus the seeded copy of the decoder that `voiced models prepare`
//! writes. `engine` arguments are the engine id, for the messages.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use sha2::{Digest, Sha256};

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
/// Reference clips of the preset voices: `voices/<preset>.wav`.
pub const VOICES: &str = "voices";
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

/// Where the checksums of a seeded decoder are recorded: `<decoder>.seeded.sha256` holding
/// "<sha256 of the source graph> <sha256 of the seeded graph>".
pub fn manifest(decoder: &Path) -> PathBuf {
    decoder.with_extension("seeded.sha256")
}

pub fn sha256(path: &Path) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher)?;
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
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
/// decoder that is in place now.
pub fn verify_seeded(decoder: &Path, engine: &str) -> Result<PathBuf, String> {
    let seeded = seeded(decoder);
    let prepare = format!("run `voiced models prepare {engine}`");
    let recorded = std::fs::read_to_string(manifest(decoder))
        .map_err(|_| format!("the seeded decoder is missing: {prepare}"))?;
    let mut sums = recorded.split_whitespace();
    let (Some(source), Some(output)) = (sums.next(), sums.next()) else {
        return Err(format!(
            "{} is malformed: {prepare}",
            manifest(decoder).display()
        ));
    };
    if cached_sha256(decoder).as_deref() != Some(source) {
        return Err(format!(
            "the decoder changed since it was seeded: {prepare}"
        ));
    }
    if cached_sha256(&seeded).as_deref() != Some(output) {
        return Err(format!(
            "{} does not match its recorded checksum: {prepare}",
            seeded.display()
        ));
    }
    Ok(seeded)
}

/// sha256 of `path`, remembered while its size and modification time stay the same:
/// `is_installed` runs on requests, and a graph without external weights can be large.
fn cached_sha256(path: &Path) -> Option<String> {
    type Seen = HashMap<PathBuf, (u64, SystemTime, String)>;
    static SEEN: Mutex<Option<Seen>> = Mutex::new(None);
    let meta = std::fs::metadata(path).ok()?;
    let (len, modified) = (meta.len(), meta.modified().ok()?);
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    let seen = seen.get_or_insert_with(HashMap::new);
    if let Some((l, m, sum)) = seen.get(path)
        && *l == len
        && *m == modified
    {
        return Some(sum.clone());
    }
    let sum = sha256(path).ok()?;
    seen.insert(path.to_owned(), (len, modified, sum.clone()));
    Some(sum)
}

/// Preset names: the stems of `voices/*.wav`, sorted.
pub fn preset_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir.join(VOICES))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let path = e.path();
            (path.extension().is_some_and(|x| x == "wav"))
                .then(|| path.file_stem()?.to_str().map(str::to_owned))
                .flatten()
        })
        .collect();
    names.sort();
    names
}
