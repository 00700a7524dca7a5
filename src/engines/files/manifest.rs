//! Checksums of operator-placed files, recorded by `voiced models prepare <engine>` after it has
//! checked or rewritten them, and verified before an engine loads them. Two formats are on
//! disk, and both are read here:
//!
//! - [`Format::Prepared`] (qwen, qwen_custom_voice, luxtts, after
//!   `scripts/check_graph_noise.py` found no graph that draws noise of its own, so that the
//!   seed decides every take): one file per engine dir, `voiced-prepared.sha256`, with lines
//!   `<sha256>  <path relative to the dir>`.
//! - [`Format::Seeded`] (chatterbox, chatterbox_turbo, after `scripts/seed_noise_graph.py`
//!   wrote the seeded decoder): `<decoder>.seeded.sha256` next to the decoder, holding
//!   `<sha256 of the source graph> <sha256 of the seeded graph>`.
//!
//! Graph files are hashed, not the external weight files next to them (`*.onnx.data`), which
//! can be gigabytes: the graph names its weights, and the checks are about the graph.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{cached_sha256, sha256};

/// The prepared format's file name in an engine dir.
pub const FILE: &str = "voiced-prepared.sha256";

/// `<dir>/voiced-prepared.sha256`.
pub fn path(dir: &Path) -> PathBuf {
    dir.join(FILE)
}

/// Where a seeded decoder's checksums are recorded: `<decoder>.seeded.sha256`.
pub fn seeded_path(decoder: &Path) -> PathBuf {
    decoder.with_extension("seeded.sha256")
}

/// How a manifest names the files it records.
#[derive(Debug, Clone, Copy)]
pub enum Format<'a> {
    /// Lines `<sha256>  <name>`.
    Prepared,
    /// Two checksums, the first for `source`, the second for `seeded`.
    Seeded { source: &'a str, seeded: &'a str },
}

/// Why a manifest could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unreadable {
    /// No manifest (never prepared), or not readable.
    Missing,
    /// A seeded record without its two checksums.
    Malformed,
}

/// What a manifest says of one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    Unchanged,
    /// The file's checksum differs from the recorded one (or the file cannot be read).
    Changed,
    /// The manifest does not name the file.
    Unrecorded,
}

/// The checksums one manifest records, by file name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Manifest(BTreeMap<String, String>);

impl Manifest {
    /// Reads the manifest at `path` in `format`.
    pub fn read(path: &Path, format: Format<'_>) -> Result<Self, Unreadable> {
        let text = std::fs::read_to_string(path).map_err(|_| Unreadable::Missing)?;
        Self::parse(&text, format)
    }

    fn parse(text: &str, format: Format<'_>) -> Result<Self, Unreadable> {
        let sums = match format {
            Format::Prepared => text
                .lines()
                .filter_map(|line| line.split_once("  "))
                .map(|(sum, file)| (file.to_owned(), sum.to_owned()))
                .collect(),
            Format::Seeded { source, seeded } => {
                let mut sums = text.split_whitespace();
                let (Some(a), Some(b)) = (sums.next(), sums.next()) else {
                    return Err(Unreadable::Malformed);
                };
                BTreeMap::from([
                    (source.to_owned(), a.to_owned()),
                    (seeded.to_owned(), b.to_owned()),
                ])
            }
        };
        Ok(Self(sums))
    }

    /// Whether `file` (read at `path`) still has the checksum recorded for `name`.
    pub fn check(&self, name: &str, path: &Path) -> Check {
        match self.0.get(name) {
            None => Check::Unrecorded,
            Some(sum) if cached_sha256(path).as_deref() == Some(sum.as_str()) => Check::Unchanged,
            Some(_) => Check::Changed,
        }
    }
}

/// Writes the prepared manifest of `dir` for `files` (relative to `dir`).
pub fn record(dir: &Path, files: &[PathBuf]) -> std::io::Result<()> {
    let mut out = String::new();
    for file in files {
        let sum = sha256(&dir.join(file))?;
        out.push_str(&format!("{sum}  {}\n", file.display()));
    }
    std::fs::write(path(dir), out)
}

/// Writes the seeded record of `decoder` and the `seeded` graph written from it.
pub fn record_seeded(decoder: &Path, seeded: &Path) -> std::io::Result<()> {
    let record = format!("{} {}\n", sha256(decoder)?, sha256(seeded)?);
    std::fs::write(seeded_path(decoder), record)
}

/// Every file of `files` is recorded in the prepared manifest of `dir` and unchanged; `Err`
/// says what to run otherwise.
pub fn verify(dir: &Path, files: &[PathBuf], engine: &str) -> Result<(), String> {
    let prepare = format!("run `voiced models prepare {engine}`");
    let manifest = Manifest::read(&path(dir), Format::Prepared)
        .map_err(|_| format!("the files have not been checked yet: {prepare}"))?;
    for file in files {
        let name = file.display().to_string();
        match manifest.check(&name, &dir.join(file)) {
            Check::Unchanged => {}
            Check::Unrecorded => return Err(format!("{name} was not checked: {prepare}")),
            Check::Changed => {
                return Err(format!("{name} changed since it was checked: {prepare}"));
            }
        }
    }
    Ok(())
}

/// The seeded copy of `decoder` exists and matches the checksums recorded when it was written
/// from the decoder that is in place now.
pub fn verify_seeded(decoder: &Path, seeded: &Path, engine: &str) -> Result<(), String> {
    let prepare = format!("run `voiced models prepare {engine}`");
    let (source_name, seeded_name) = ("source", "seeded");
    let record = seeded_path(decoder);
    let format = Format::Seeded {
        source: source_name,
        seeded: seeded_name,
    };
    let manifest = Manifest::read(&record, format).map_err(|why| match why {
        Unreadable::Missing => format!("the seeded decoder is missing: {prepare}"),
        Unreadable::Malformed => format!("{} is malformed: {prepare}", record.display()),
    })?;
    if manifest.check(source_name, decoder) != Check::Unchanged {
        return Err(format!(
            "the decoder changed since it was seeded: {prepare}"
        ));
    }
    if manifest.check(seeded_name, seeded) != Check::Unchanged {
        return Err(format!(
            "{} does not match its recorded checksum: {prepare}",
            seeded.display()
        ));
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

    #[test]
    fn a_seeded_record_names_its_source_and_its_copy() {
        let dir = std::env::temp_dir().join(format!("voiced-seeded-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (decoder, seeded) = (dir.join("d.onnx"), dir.join("d.seeded.onnx"));
        std::fs::write(&decoder, b"source graph").unwrap();
        std::fs::write(&seeded, b"seeded graph").unwrap();
        let missing = verify_seeded(&decoder, &seeded, "chatterbox").unwrap_err();
        assert!(
            missing.contains("the seeded decoder is missing"),
            "{missing}"
        );
        std::fs::write(seeded_path(&decoder), "only-one\n").unwrap();
        let malformed = verify_seeded(&decoder, &seeded, "chatterbox").unwrap_err();
        assert!(malformed.contains("is malformed"), "{malformed}");
        record_seeded(&decoder, &seeded).unwrap();
        // The format on disk: "<source> <seeded>\n".
        let written = std::fs::read_to_string(seeded_path(&decoder)).unwrap();
        assert_eq!(
            written,
            format!(
                "{} {}\n",
                sha256(&decoder).unwrap(),
                sha256(&seeded).unwrap()
            )
        );
        assert_eq!(verify_seeded(&decoder, &seeded, "chatterbox"), Ok(()));
        std::fs::write(&seeded, b"another seeded graph").unwrap();
        let changed = verify_seeded(&decoder, &seeded, "chatterbox").unwrap_err();
        assert!(
            changed.contains("does not match its recorded checksum"),
            "{changed}"
        );
        std::fs::write(&decoder, b"another source graph").unwrap();
        let changed = verify_seeded(&decoder, &seeded, "chatterbox").unwrap_err();
        assert!(
            changed.contains("the decoder changed since it was seeded"),
            "{changed}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
