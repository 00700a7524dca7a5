//! Checksums of operator-placed files, recorded by `voiced models prepare <engine>` after it has
//! checked them (`scripts/check_graph_noise.py`: no graph draws noise of its own, so that the
//! seed decides every take), and verified before an engine loads them. One file per engine dir,
//! `voiced-prepared.sha256`, with lines `<sha256>  <path relative to the dir>`.
//!
//! Graph files are hashed, not the external weight files next to them (`*.onnx.data`), which
//! can be gigabytes: the graph names its weights, and the checks are about the graph.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use sha2::{Digest, Sha256};

pub const FILE: &str = "voiced-prepared.sha256";

pub fn path(dir: &Path) -> PathBuf {
    dir.join(FILE)
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

/// sha256 of `path`, remembered while its size and modification time stay the same
/// (`is_installed` runs on requests).
pub fn cached_sha256(path: &Path) -> Option<String> {
    type Seen = HashMap<PathBuf, (u64, SystemTime, String)>;
    static SEEN: Mutex<Option<Seen>> = Mutex::new(None);
    let meta = std::fs::metadata(path).ok()?;
    let (len, modified) = (meta.len(), meta.modified().ok()?);
    {
        let seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((l, m, sum)) = seen.as_ref().and_then(|s| s.get(path))
            && *l == len
            && *m == modified
        {
            return Some(sum.clone());
        }
    }
    let sum = sha256(path).ok()?;
    SEEN.lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(HashMap::new)
        .insert(path.to_owned(), (len, modified, sum.clone()));
    Some(sum)
}

/// Writes the manifest for `files` (relative to `dir`).
pub fn record(dir: &Path, files: &[PathBuf]) -> std::io::Result<()> {
    let mut out = String::new();
    for file in files {
        let sum = sha256(&dir.join(file))?;
        out.push_str(&format!("{sum}  {}\n", file.display()));
    }
    std::fs::write(path(dir), out)
}

/// Every file of `files` is recorded and unchanged; `Err` says what to run otherwise.
pub fn verify(dir: &Path, files: &[PathBuf], engine: &str) -> Result<(), String> {
    let prepare = format!("run `voiced models prepare {engine}`");
    let text = std::fs::read_to_string(path(dir))
        .map_err(|_| format!("the files have not been checked yet: {prepare}"))?;
    let recorded: BTreeMap<&str, &str> = text
        .lines()
        .filter_map(|line| line.split_once("  "))
        .map(|(sum, file)| (file, sum))
        .collect();
    for file in files {
        let name = file.display().to_string();
        let Some(sum) = recorded.get(name.as_str()) else {
            return Err(format!("{name} was not checked: {prepare}"));
        };
        if cached_sha256(&dir.join(file)).as_deref() != Some(*sum) {
            return Err(format!("{name} changed since it was checked: {prepare}"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_or_unrecorded_file_is_reported() {
        let dir = std::env::temp_dir().join(format!("voiced-manifest-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("fp32")).unwrap();
        std::fs::write(dir.join("fp32/a.onnx"), b"graph a").unwrap();
        std::fs::write(dir.join("b.json"), b"{}").unwrap();
        let files = [PathBuf::from("fp32/a.onnx"), PathBuf::from("b.json")];
        assert!(
            verify(&dir, &files, "qwen")
                .unwrap_err()
                .contains("voiced models prepare qwen")
        );
        record(&dir, &files).unwrap();
        assert_eq!(verify(&dir, &files, "qwen"), Ok(()));
        let more = [PathBuf::from("c.onnx")];
        assert!(
            verify(&dir, &more, "qwen")
                .unwrap_err()
                .contains("was not checked")
        );
        // Another size, so the cached checksum cannot be reused.
        std::fs::write(dir.join("b.json"), b"{\"x\": 1}").unwrap();
        assert!(
            verify(&dir, &files, "qwen")
                .unwrap_err()
                .contains("changed")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
