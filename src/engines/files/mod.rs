//! What every engine and `voiced models` do with files on disk: a file's sha256 (once per
//! change: [`cached_sha256`]), the preset folders' clips ([`preset_names`]), and the checksum
//! [`manifest`]s that `voiced models prepare` records and the engines verify before loading.

pub mod manifest;
mod sha256;

pub use self::sha256::sha256;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

/// The folder of an engine's preset voices: a reference clip `voices/<preset>.wav` each.
pub const VOICES: &str = "voices";

/// [`sha256`] of `path`, remembered while its size and modification time stay the same:
/// `is_installed` runs on requests, and a graph without external weights can be large. `None`
/// when the file cannot be read.
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
    // Hashed outside the lock: other engines' checks need not wait for a large file.
    let sum = sha256(path).ok()?;
    SEEN.lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(HashMap::new)
        .insert(path.to_owned(), (len, modified, sum.clone()));
    Some(sum)
}

/// Which clips of [`VOICES`] are presets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clips {
    /// Every `voices/*.wav`.
    Any,
    /// Only clips with their transcript beside them, `voices/<stem>.txt`.
    WithTranscript,
}

/// Preset names in the engine dir `dir`: the stems of `voices/*.wav` (see [`Clips`]), sorted.
pub fn preset_names(dir: &Path, clips: Clips) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir.join(VOICES))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let path = e.path();
            let wanted = path.extension().is_some_and(|x| x == "wav")
                && (clips == Clips::Any || path.with_extension("txt").is_file());
            wanted
                .then(|| path.file_stem()?.to_str().map(str::to_owned))
                .flatten()
        })
        .collect();
    names.sort();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_sha256_and_presets_are_sorted_clip_stems() {
        let dir = std::env::temp_dir().join(format!("voiced-files-{}", std::process::id()));
        std::fs::create_dir_all(dir.join(VOICES)).unwrap();
        let file = dir.join("abc");
        std::fs::write(&file, b"abc").unwrap();
        let abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        assert_eq!(sha256(&file).unwrap(), abc);
        assert_eq!(cached_sha256(&file).as_deref(), Some(abc));
        assert_eq!(cached_sha256(&dir.join("absent")), None);
        for name in ["b.wav", "a.wav", "a.txt", "c.mp3"] {
            std::fs::write(dir.join(VOICES).join(name), b"").unwrap();
        }
        assert_eq!(preset_names(&dir, Clips::Any), ["a", "b"]);
        assert_eq!(preset_names(&dir, Clips::WithTranscript), ["a"]);
        assert!(preset_names(&dir.join("absent"), Clips::Any).is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
