//! Voice style vectors, each a float32 array [510, 1, 256] indexed by phoneme-token count: numpy
//! `.npz` archives (`voices_ja.npz`, upstream `voices-v1.0.bin`) and raw little-endian files
//! `voices/<name>.bin` (kokoro-js 1.2.1's 54 voices, installed by `voiced models fetch kokoro`).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::engines::{EngineError, Preset};

pub const STYLE_DIM: usize = 256;
pub const STYLE_ROWS: usize = 510;

/// One voice: `STYLE_ROWS` rows of `STYLE_DIM` floats.
pub struct Style(Vec<f32>);

impl Style {
    /// The style row for a piece of `tokens` phoneme tokens: row `min(tokens, 510) - 1`.
    pub fn row(&self, tokens: usize) -> &[f32] {
        let row = tokens.clamp(1, STYLE_ROWS) - 1;
        &self.0[row * STYLE_DIM..(row + 1) * STYLE_DIM]
    }
}

/// Bytes of one raw voice file: 510 × 1 × 256 little-endian float32.
pub const RAW_VOICE_BYTES: u64 = (STYLE_ROWS * STYLE_DIM * 4) as u64;

/// Where a voice's style is stored.
enum Source {
    /// An entry `<name>.npy` of a numpy `.npz` archive.
    Npz(PathBuf),
    /// A raw float32 file.
    Raw(PathBuf),
}

/// Where each voice is stored; styles are read on first use.
pub struct VoiceIndex {
    voices: BTreeMap<String, Source>,
}

impl VoiceIndex {
    /// Lists the voices of every archive present in `archives`, then the `<name>.bin` files of
    /// `raw_dir` (earlier sources win on duplicates: kokoro-js's Japanese voices are
    /// bit-identical to `voices_ja.npz`'s).
    pub fn open(archives: &[PathBuf], raw_dir: Option<&Path>) -> Result<Self, EngineError> {
        let mut voices = BTreeMap::new();
        for path in archives.iter().filter(|p| p.exists()) {
            let archive = open_archive(path)?;
            for entry in archive.file_names() {
                if let Some(name) = entry.strip_suffix(".npy") {
                    voices
                        .entry(name.to_owned())
                        .or_insert_with(|| Source::Npz(path.clone()));
                }
            }
        }
        if let Some(dir) = raw_dir.filter(|d| d.is_dir()) {
            let entries = std::fs::read_dir(dir).map_err(|e| broken(dir, e))?;
            for entry in entries {
                let path = entry.map_err(|e| broken(dir, e))?.path();
                let Some(name) = path
                    .file_name()
                    .and_then(|n| n.to_str())
                    .and_then(|n| n.strip_suffix(".bin"))
                    .filter(|n| is_voice_name(n))
                else {
                    continue;
                };
                // A partial file (an interrupted copy) is not a voice.
                if path.metadata().is_ok_and(|m| m.len() == RAW_VOICE_BYTES) {
                    voices
                        .entry(name.to_owned())
                        .or_insert_with(|| Source::Raw(path.clone()));
                }
            }
        }
        Ok(Self { voices })
    }

    pub fn presets(&self) -> Vec<Preset> {
        self.voices.keys().map(|name| preset(name)).collect()
    }

    pub fn contains(&self, name: &str) -> bool {
        self.voices.contains_key(name)
    }

    pub fn load(&self, name: &str) -> Result<Style, EngineError> {
        let source = self
            .voices
            .get(name)
            .ok_or_else(|| EngineError::UnknownPreset(name.to_owned()))?;
        let path = match source {
            Source::Raw(path) => {
                let bytes = std::fs::read(path).map_err(|e| broken(path, e))?;
                if bytes.len() as u64 != RAW_VOICE_BYTES {
                    return Err(broken(
                        path,
                        format!("{} bytes, expected {RAW_VOICE_BYTES}", bytes.len()),
                    ));
                }
                return Ok(Style(
                    bytes
                        .chunks_exact(4)
                        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                        .collect(),
                ));
            }
            Source::Npz(path) => path,
        };
        let mut archive = open_archive(path)?;
        let mut entry = archive
            .by_name(&format!("{name}.npy"))
            .map_err(|e| broken(path, e))?;
        let mut bytes = Vec::new();
        entry.read_to_end(&mut bytes).map_err(|e| broken(path, e))?;
        let values = parse_npy_f32(&bytes).map_err(|e| broken(path, format!("{name}: {e}")))?;
        if values.len() != STYLE_ROWS * STYLE_DIM {
            return Err(broken(
                path,
                format!("{name}: {} values, expected 510×256", values.len()),
            ));
        }
        Ok(Style(values))
    }
}

fn open_archive(path: &Path) -> Result<zip::ZipArchive<File>, EngineError> {
    let file = File::open(path).map_err(|e| broken(path, e))?;
    zip::ZipArchive::new(file).map_err(|e| broken(path, e))
}

fn broken(path: &Path, e: impl std::fmt::Display) -> EngineError {
    EngineError::NotInstalled(format!("cannot read voices from {}: {e}", path.display()))
}

/// Kokoro's voice names: a language letter, a gender letter, `_`, lowercase ASCII.
pub fn is_voice_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    bytes.len() > 3
        && bytes.len() <= 40
        && bytes[2] == b'_'
        && bytes[..2].iter().all(u8::is_ascii_lowercase)
        && bytes[3..]
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

/// Kokoro's naming: first letter the language, second the gender (`jf_alpha`, `am_adam`).
/// The language is ISO 639-1, with the region where Kokoro has two (American and British
/// English) or speaks one variety (Brazilian Portuguese).
fn preset(name: &str) -> Preset {
    let mut chars = name.chars();
    let (language, label) = match chars.next() {
        Some('a') => ("en-us", "American English"),
        Some('b') => ("en-gb", "British English"),
        Some('j') => ("ja", "Japanese"),
        Some('z') => ("zh", "Mandarin Chinese"),
        Some('e') => ("es", "Spanish"),
        Some('f') => ("fr", "French"),
        Some('h') => ("hi", "Hindi"),
        Some('i') => ("it", "Italian"),
        Some('p') => ("pt-br", "Brazilian Portuguese"),
        _ => ("und", "unknown language"),
    };
    let gender = match chars.next() {
        Some('f') => " female",
        Some('m') => " male",
        _ => "",
    };
    let given = name.split_once('_').map_or(name, |(_, n)| n);
    let mut given_chars = given.chars();
    let given: String = given_chars
        .next()
        .map(|c| c.to_ascii_uppercase())
        .into_iter()
        .chain(given_chars)
        .collect();
    Preset {
        name: name.to_owned(),
        language: language.to_owned(),
        description: format!("{given}: {label}{gender} voice (Kokoro-82M)"),
    }
}

/// Minimal `.npy` reader: little-endian float32, C order (all Kokoro voice files are).
fn parse_npy_f32(bytes: &[u8]) -> Result<Vec<f32>, String> {
    let rest = bytes
        .strip_prefix(b"\x93NUMPY")
        .ok_or("not an .npy array")?;
    let (header_len, offset) = match rest.first() {
        Some(1) if rest.len() >= 4 => (usize::from(u16::from_le_bytes([rest[2], rest[3]])), 4),
        Some(2 | 3) if rest.len() >= 6 => {
            let len = u32::from_le_bytes([rest[2], rest[3], rest[4], rest[5]]);
            (usize::try_from(len).map_err(|_| "header too long")?, 6)
        }
        _ => return Err("unsupported .npy version".into()),
    };
    let header = rest
        .get(offset..offset + header_len)
        .ok_or("truncated header")?;
    let header = std::str::from_utf8(header).map_err(|_| "header is not text")?;
    if !header.contains("'descr': '<f4'") || !header.contains("'fortran_order': False") {
        return Err(format!("unsupported array layout {header:?}"));
    }
    let data = &rest[offset + header_len..];
    if data.len() % 4 != 0 {
        return Err("data length is not a multiple of 4".into());
    }
    Ok(data
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_npy_v1() {
        let header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
        bytes.extend_from_slice(header.as_bytes());
        bytes.extend_from_slice(&1.5f32.to_le_bytes());
        bytes.extend_from_slice(&(-2.0f32).to_le_bytes());
        assert_eq!(parse_npy_f32(&bytes).unwrap(), vec![1.5, -2.0]);
    }

    #[test]
    fn rejects_float64() {
        let header = "{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }";
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
        bytes.extend_from_slice(header.as_bytes());
        bytes.extend_from_slice(&[0; 8]);
        assert!(parse_npy_f32(&bytes).is_err());
    }

    #[test]
    fn preset_language_and_gender_from_prefix() {
        assert_eq!(preset("bm_george").language, "en-gb");
        assert_eq!(preset("pf_dora").language, "pt-br");
        assert_eq!(preset("zm_yunxi").language, "zh");
        assert_eq!(
            preset("jf_alpha").description,
            "Alpha: Japanese female voice (Kokoro-82M)"
        );
        assert_eq!(
            preset("am_adam").description,
            "Adam: American English male voice (Kokoro-82M)"
        );
    }

    #[test]
    fn voice_names() {
        assert!(is_voice_name("af_heart"));
        assert!(is_voice_name("zf_xiaoxiao"));
        assert!(!is_voice_name("LICENSE"));
        assert!(!is_voice_name("af_"));
        assert!(!is_voice_name("af_../x"));
    }

    #[test]
    fn raw_voices_are_listed_and_read_beside_archives() {
        let dir = std::env::temp_dir().join(format!("voiced-voices-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut bytes = Vec::new();
        for i in 0..STYLE_ROWS * STYLE_DIM {
            bytes.extend_from_slice(&(i as f32).to_le_bytes());
        }
        std::fs::write(dir.join("af_test.bin"), &bytes).unwrap();
        // Too short: an interrupted copy, not a voice.
        std::fs::write(dir.join("am_short.bin"), &bytes[..1024]).unwrap();
        std::fs::write(dir.join("LICENSE"), b"text").unwrap();
        let index = VoiceIndex::open(&[], Some(&dir)).unwrap();
        let names: Vec<String> = index.presets().into_iter().map(|p| p.name).collect();
        assert_eq!(names, ["af_test"]);
        let style = index.load("af_test").unwrap();
        assert_eq!(style.row(1)[0], 0.0);
        assert_eq!(style.row(2)[3], (STYLE_DIM + 3) as f32);
        assert!(matches!(
            index.load("am_short"),
            Err(EngineError::UnknownPreset(_))
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
