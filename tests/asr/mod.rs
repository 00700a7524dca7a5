//! Test support: models, audio clips and word error rate.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use voiced::engines::whisper::{ComputeType, Recognizer, WhisperConfig};
use voiced::models::{default_models_dir, whisper};

pub fn recognizer(model: whisper::WhisperModel) -> &'static Recognizer {
    static BASE: OnceLock<Recognizer> = OnceLock::new();
    static TINY: OnceLock<Recognizer> = OnceLock::new();
    let cell = match model {
        whisper::WhisperModel::Base => &BASE,
        whisper::WhisperModel::TinyEn => &TINY,
    };
    cell.get_or_init(|| {
        let model_dir = whisper::fetch(&default_models_dir(), model).expect("fetch model");
        Recognizer::load(&WhisperConfig {
            model_dir,
            threads: 2,
            compute_type: ComputeType::Int8,
        })
        .expect("load model")
    })
}

/// Mono 16 kHz samples of a 16-bit wav file (the clips used here are 16 kHz already).
pub fn read_wav(path: &Path) -> Vec<f32> {
    let mut reader = hound::WavReader::open(path).expect("open wav");
    let spec = reader.spec();
    assert_eq!((spec.sample_rate, spec.channels), (16_000, 1), "{path:?}");
    reader
        .samples::<i16>()
        .map(|s| f32::from(s.expect("sample")) / 32768.0)
        .collect()
}

/// Samuel Beckett read by a person, shipped in the PyPI wheel `useful-moonshine-onnx`.
pub fn beckett() -> Vec<f32> {
    read_wav(&beckett_wav())
}

/// The Beckett clip as a wav file (16 kHz mono).
pub fn beckett_wav() -> PathBuf {
    let cache = default_models_dir().join(".pip");
    let wheel = cache.join("useful_moonshine_onnx-20251121-py3-none-any.whl");
    if !wheel.is_file() {
        let status = Command::new("python3")
            .args(["-m", "pip", "download", "--no-deps", "--quiet"])
            .arg("useful-moonshine-onnx==20251121")
            .arg("-d")
            .arg(&cache)
            .status()
            .expect("run pip");
        assert!(status.success(), "pip download useful-moonshine-onnx");
    }
    let mut archive = zip::ZipArchive::new(std::fs::File::open(&wheel).unwrap()).unwrap();
    let mut member = archive
        .by_name("moonshine_onnx/assets/beckett.wav")
        .unwrap();
    let path = scratch_dir().join("beckett.wav");
    std::io::copy(&mut member, &mut std::fs::File::create(&path).unwrap()).unwrap();
    path
}

/// `text` spoken by espeak-ng (voice `voice`), resampled to 16 kHz by sox.
pub fn espeak(voice: &str, text: &str) -> Vec<f32> {
    read_wav(&espeak_wav(voice, text))
}

/// The same, as a 16 kHz mono wav file.
pub fn espeak_wav(voice: &str, text: &str) -> PathBuf {
    let dir = scratch_dir();
    let name: String = text
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(24)
        .collect();
    let raw = dir.join(format!("{voice}-{name}-22k.wav"));
    let out = dir.join(format!("{voice}-{name}.wav"));
    let ok = Command::new("espeak-ng")
        .args(["-v", voice, "-w"])
        .arg(&raw)
        .arg(text)
        .status()
        .expect("run espeak-ng")
        .success();
    assert!(ok, "espeak-ng failed");
    let ok = Command::new("sox")
        .arg(&raw)
        .args(["-r", "16000", "-c", "1", "-b", "16"])
        .arg(&out)
        .status()
        .expect("run sox")
        .success();
    assert!(ok, "sox failed");
    out
}

pub fn scratch_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("voiced-whisper-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Word error rate: lower-cased, punctuation stripped, Levenshtein distance over words
/// divided by the reference's word count.
pub fn wer(reference: &str, hypothesis: &str) -> f64 {
    let words = |s: &str| -> Vec<String> {
        s.to_lowercase()
            .split_whitespace()
            .map(|w| {
                w.chars()
                    .filter(|c| c.is_alphanumeric() || *c == '\'')
                    .collect::<String>()
            })
            .filter(|w| !w.is_empty())
            .collect()
    };
    let (r, h) = (words(reference), words(hypothesis));
    let mut prev: Vec<usize> = (0..=h.len()).collect();
    for (i, rw) in r.iter().enumerate() {
        let mut cur = vec![i + 1; h.len() + 1];
        for (j, hw) in h.iter().enumerate() {
            let substitution = prev[j] + usize::from(rw != hw);
            cur[j + 1] = substitution.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[h.len()] as f64 / r.len().max(1) as f64
}

#[test]
fn wer_counts_word_edits() {
    assert_eq!(
        wer("Ever tried. Ever failed.", "ever tried ever failed"),
        0.0
    );
    assert_eq!(wer("a b c d", "a x c"), 0.5);
}
