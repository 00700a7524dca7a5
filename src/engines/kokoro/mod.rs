//! Kokoro-82M (int8 ONNX) on ONNX Runtime: 24 kHz speech from espeak-ng phonemes.
//!
//! Data path: text ([`normalize`]d in English) → [`split`] into pieces under 510 tokens →
//! [`phonemize`] (espeak-ng) →
//! [`session`] (one ONNX Runtime session) with the voice's style row and [`noise`] drawn from
//! the request's seed (one stream per piece) → pieces joined with short pauses. Pieces are the
//! engine's [`Segment`]s: the worker may render them on several sessions at once.

pub mod estimate;
mod noise;
pub mod readable;
pub mod session;
mod voices;

use std::path::{Path, PathBuf};

use self::noise::SourceNoise;
use self::session::{KokoroSession, SAMPLES_PER_FRAME, Spoken};
pub use self::voices::{RAW_VOICE_BYTES, is_voice_name};
use self::voices::{Style, VoiceIndex};
use crate::domain::{EngineId, EngineInfo};
use crate::engines::pieces;
use crate::engines::text::phonemize::{self, Vocab};
use crate::engines::text::{Piece, normalize, pronounce, split, timing};
use crate::engines::{Engine, EngineError, Pcm, Preset, Segment, SynthesisInput};

/// Its capabilities ([`EngineId::info`]).
pub const INFO: &EngineInfo = EngineId::Kokoro.info();

pub const SAMPLE_RATE: u32 = 24_000;
/// Pieces must stay below this many phoneme tokens (the voices have 510 style rows).
pub const MAX_TOKENS: usize = 510;

/// File names inside the Kokoro model directory (`<models_dir>/kokoro/`).
pub mod files {
    /// The graph with seeded noise inputs; the one the engine runs.
    pub const SEEDED_MODEL: &str = "kokoro-v1.0.int8.seeded.onnx";
    /// The graph as shipped (kept for verification, not used for synthesis).
    pub const MODEL: &str = "kokoro-v1.0.int8.onnx";
    pub const VOCAB: &str = "vocab.json";
    pub const VOICES_JA: &str = "voices_ja.npz";
    /// Upstream voice pack, optional: an operator may drop it in to add Kokoro's other voices.
    pub const VOICES_UPSTREAM: &str = "voices-v1.0.bin";
    /// kokoro-js 1.2.1's 54 voices, one raw `<name>.bin` each (`voiced models fetch kokoro`).
    pub const VOICES_DIR: &str = "voices";
    /// `<models_dir>/onnxruntime/` holds this library.
    pub const ORT_LIBRARY: &str = "libonnxruntime.so.1.31.1";
}

#[derive(Debug, Clone)]
pub struct KokoroConfig {
    /// `<models_dir>/kokoro`.
    pub model_dir: PathBuf,
    /// `<models_dir>/onnxruntime/libonnxruntime.so.1.31.1`.
    pub ort_library: PathBuf,
    /// Intra-op threads of the session (1 is best for throughput: run more engines instead).
    pub intra_threads: usize,
    /// With several intra-op threads: whether idle ones spin between operators (ONNX Runtime's
    /// default) instead of sleeping.
    pub spinning: bool,
}

impl KokoroConfig {
    /// The layout `voiced models fetch kokoro` creates under `models_dir`, one thread.
    pub fn from_models_dir(models_dir: &Path) -> Self {
        Self {
            model_dir: models_dir.join(INFO.id.as_str()),
            ort_library: models_dir.join("onnxruntime").join(files::ORT_LIBRARY),
            intra_threads: 1,
            spinning: true,
        }
    }
}

fn voice_index(model_dir: &Path) -> Result<VoiceIndex, EngineError> {
    VoiceIndex::open(
        &[
            model_dir.join(files::VOICES_JA),
            model_dir.join(files::VOICES_UPSTREAM),
        ],
        Some(&model_dir.join(files::VOICES_DIR)),
    )
}

/// Lists the installed voices without creating a session (`voiced admin voice presets`, and
/// `GET /v1/voices/presets` on every call). Indexing the archives costs far more than the
/// request around it, so the list is kept and built again only when one of the files the index
/// reads (or the voices folder) changes size or modification time.
pub fn presets(model_dir: &Path) -> Result<Vec<Preset>, EngineError> {
    type Listed = (
        PathBuf,
        Vec<Option<(std::time::SystemTime, u64)>>,
        Vec<Preset>,
    );
    static LISTED: std::sync::Mutex<Option<Listed>> = std::sync::Mutex::new(None);
    if !model_dir.join(files::VOICES_JA).is_file() {
        return Err(not_fetched(&model_dir.join(files::VOICES_JA)));
    }
    let stamp: Vec<_> = [files::VOICES_JA, files::VOICES_UPSTREAM, files::VOICES_DIR]
        .iter()
        .map(|name| {
            let meta = std::fs::metadata(model_dir.join(name)).ok()?;
            Some((meta.modified().ok()?, meta.len()))
        })
        .collect();
    let mut listed = LISTED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((dir, seen, presets)) = listed.as_ref()
        && dir == model_dir
        && *seen == stamp
    {
        return Ok(presets.clone());
    }
    let presets = voice_index(model_dir)?.presets();
    *listed = Some((model_dir.to_path_buf(), stamp, presets.clone()));
    Ok(presets)
}

fn not_fetched(path: &Path) -> EngineError {
    EngineError::NotInstalled(format!(
        "{} is missing: run `voiced models fetch kokoro`",
        path.display()
    ))
}

pub struct KokoroEngine {
    session: KokoroSession,
    vocab: Vocab,
    voices: VoiceIndex,
    /// The last voice used, kept to skip re-reading its archive.
    style: Option<(String, Style)>,
}

impl KokoroEngine {
    pub fn load(config: &KokoroConfig) -> Result<Self, EngineError> {
        let dir = &config.model_dir;
        for name in [files::SEEDED_MODEL, files::VOCAB, files::VOICES_JA] {
            if !dir.join(name).is_file() {
                return Err(not_fetched(&dir.join(name)));
            }
        }
        let vocab = Vocab::load(&dir.join(files::VOCAB))?;
        let voices = voice_index(dir)?;
        let session = KokoroSession::load_spinning(
            &dir.join(files::SEEDED_MODEL),
            &config.ort_library,
            config.intra_threads,
            config.spinning,
        )?;
        if !session.is_seeded() {
            return Err(EngineError::NotInstalled(format!(
                "{} lacks the seed inputs: run `voiced models fetch kokoro` again",
                files::SEEDED_MODEL
            )));
        }
        Ok(Self {
            session,
            vocab,
            voices,
            style: None,
        })
    }

    /// Splits text into the pieces `synthesize` would run (exposed for tests and diagnostics).
    pub fn pieces(
        &self,
        text: &str,
        preset: &str,
        language: &str,
    ) -> Result<Vec<Piece>, EngineError> {
        let voice = phonemize::espeak_voice(language, preset)?;
        let pinned = pronounce::pin(text);
        let normalized = normalize::for_voice(&pinned.text, &voice);
        let text = normalized.as_str();
        let mut tokenize = |texts: &[&str]| -> Result<Vec<Vec<i64>>, EngineError> {
            let phonemes = phonemize::phonemize_many(texts, &voice, &pinned.phonemes)?;
            Ok(phonemes.iter().map(|p| self.vocab.tokens(p)).collect())
        };
        split::split_short_start(text, MAX_TOKENS, &mut tokenize)
    }

    fn style(&mut self, preset: &str) -> Result<&Style, EngineError> {
        if self.style.as_ref().is_none_or(|(name, _)| name != preset) {
            self.style = Some((preset.to_owned(), self.voices.load(preset)?));
        }
        Ok(&self.style.as_ref().expect("just set").1)
    }
}

impl KokoroEngine {
    /// Checks what `synthesize` checks before any inference, and splits the text.
    fn segments_of(&self, input: &SynthesisInput<'_>) -> Result<Vec<Segment>, EngineError> {
        if !self.voices.contains(input.preset) {
            return Err(EngineError::UnknownPreset(input.preset.to_owned()));
        }
        let text = input.text.trim();
        if text.is_empty() {
            return Err(EngineError::InvalidInput("the text is empty".into()));
        }
        let pieces = pieces::some(self.pieces(text, input.preset, input.language)?)?;
        let last = pieces.len() - 1;
        Ok(pieces
            .into_iter()
            .enumerate()
            .map(|(i, piece)| Segment {
                pause_secs: if i < last {
                    piece.boundary.pause_secs()
                } else {
                    0.0
                },
                text: piece.text,
                tokens: piece.tokens,
            })
            .collect())
    }
}

impl KokoroEngine {
    /// Segment `index`'s audio as the model made it (no clamp, no pause).
    fn speak_segment(
        &mut self,
        input: &SynthesisInput<'_>,
        segment: &Segment,
        index: usize,
    ) -> Result<Spoken, EngineError> {
        if !self.voices.contains(input.preset) {
            return Err(EngineError::UnknownPreset(input.preset.to_owned()));
        }
        // Each piece's noise comes from its own stream of the seed, so the audio is a function
        // of (text, voice, seed) whichever session renders which piece.
        let source = SourceNoise::draw(&mut noise::piece_rng(input.seed, index));
        let row = self.style(input.preset)?.row(segment.tokens.len()).to_vec();
        self.session
            .infer_until(&segment.tokens, &row, &source, input.cancel)
    }
}

impl KokoroEngine {
    /// The voices this instance's index holds (what [`presets`] lists for its folder).
    pub fn presets(&self) -> Vec<Preset> {
        self.voices.presets()
    }
}

impl Engine for KokoroEngine {
    fn synthesize(&mut self, input: &SynthesisInput<'_>) -> Result<Pcm, EngineError> {
        let segments = self.segments_of(input)?;
        let (pcm, _) = pieces::render(&segments, input, SAMPLE_RATE, |i, segment| {
            Ok(self.speak_segment(input, segment, i)?.audio)
        })?;
        Ok(pcm)
    }

    fn segments(
        &mut self,
        input: &SynthesisInput<'_>,
    ) -> Option<Result<Vec<Segment>, EngineError>> {
        Some(self.segments_of(input))
    }

    fn render_segment(
        &mut self,
        input: &SynthesisInput<'_>,
        segment: &Segment,
        index: usize,
    ) -> Result<Pcm, EngineError> {
        let spoken = self.speak_segment(input, segment, index)?;
        let pause = (segment.pause_secs * SAMPLE_RATE as f32) as usize;
        let mut samples = Vec::with_capacity(spoken.audio.len() + pause);
        pieces::append(&mut samples, &spoken.audio, segment.pause_secs, SAMPLE_RATE);
        let words = match &spoken.durations {
            Some(durations) => timing::piece_words(
                &segment.text,
                &self.vocab.symbols(&segment.tokens),
                durations,
                SAMPLES_PER_FRAME as f64 / f64::from(SAMPLE_RATE),
            ),
            None => Vec::new(),
        };
        Ok(Pcm {
            samples,
            sample_rate: SAMPLE_RATE,
            words,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ONNX Runtime gives the same samples whatever its intra-op thread count, so a segment
    /// sounds the same on the process's wide instance as on a thread's own one-thread instance
    /// (the worker picks either by load: `worker::pieces`).
    #[test]
    fn a_segment_sounds_the_same_on_one_thread_and_on_several() {
        let dir = std::env::var_os("VOICED_MODELS_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache/voiced/models")
            });
        let load = |intra_threads, spinning| {
            KokoroEngine::load(&KokoroConfig {
                intra_threads,
                spinning,
                ..KokoroConfig::from_models_dir(&dir)
            })
            .unwrap()
        };
        let mut narrow = load(1, true);
        let input = SynthesisInput {
            text: "The quick brown fox jumps over the lazy dog, and then it runs away. Why?",
            preset: "af_heart",
            language: "en",
            seed: 28,
            temperature: None,
            cancel: None,
            voice_print: None,
            instruction: None,
        };
        let segments = narrow.segments(&input).unwrap().unwrap();
        assert!(segments.len() >= 2, "{segments:?}");
        let reference: Vec<Vec<f32>> = (0..segments.len())
            .map(|i| {
                narrow
                    .render_segment(&input, &segments[i], i)
                    .unwrap()
                    .samples
            })
            .collect();
        for (threads, spinning) in [(2, false), (3, true)] {
            let mut wide = load(threads, spinning);
            for (i, segment) in segments.iter().enumerate() {
                let samples = wide.render_segment(&input, segment, i).unwrap().samples;
                assert!(
                    samples == reference[i],
                    "segment {i} on {threads} threads differs from one thread's"
                );
            }
        }
    }
}
