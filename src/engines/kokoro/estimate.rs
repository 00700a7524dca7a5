//! How long Kokoro will speak a text, from what it will read: the text normalised (English) and
//! phonemized exactly as for synthesis, counted in phonemes, plus the pause after each sentence.
//! Numbers, ordinals, dates, currency, fractions and emoji are read out (emoji by their name),
//! so counting the input's characters under-estimates them by up to 4.5×; counting phonemes
//! follows them (docs/benchmarks.md, "Admission estimate").
//!
//! Costs one espeak-ng process (no model, no session): callers on an async runtime run it on the
//! blocking pool.

use crate::engines::EngineError;
use crate::engines::text::{normalize, phonemize, pronounce, split};

/// What Kokoro will read of a text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reading {
    /// Phoneme symbols (IPA letters, stress marks, spaces and punctuation) of the whole text.
    pub phonemes: usize,
    /// Sentences that have something to pronounce (each but the last is followed by a pause).
    pub sentences: usize,
}

/// Fixed milliseconds of every generation: the voice's lead-in and tail ("Hi." speaks 1.3 s for
/// its 4 phonemes).
pub const BASE_MS: i64 = 1000;
/// Milliseconds per phoneme symbol. `cargo run --example calibrate_estimate` (2026-11-25, 28
/// generations of 14 texts of 17–72 s by af_heart and bm_george) fitted 2477 + 54.3 per phoneme,
/// the slowest text speaking 70 ms per phoneme (plain prose, pauses excluded); with 65 and the
/// base above every text of the corpus speaks 0.75–1.01× its estimate (`tests/estimate.rs`;
/// docs/benchmarks.md), texts of numbers at the low end.
pub const PER_PHONEME_MS: i64 = 65;
/// The silence after each sentence but the last (`split::Boundary::Sentence`), in milliseconds.
pub const SENTENCE_PAUSE_MS: i64 = 250;

/// The reading of `text` by a voice of `language` with `preset`.
pub fn reading(text: &str, preset: &str, language: &str) -> Result<Reading, EngineError> {
    let voice = phonemize::espeak_voice(language, preset)?;
    let pinned = pronounce::pin(text.trim());
    let normalized = normalize::for_voice(&pinned.text, &voice);
    let text = normalized.as_str();
    let sentences = split::sentences(text);
    if sentences.is_empty() {
        return Ok(Reading {
            phonemes: 0,
            sentences: 0,
        });
    }
    let phonemes = phonemize::phonemize_many(&sentences, &voice, &pinned.phonemes)?;
    Ok(Reading {
        phonemes: phonemes.iter().map(|p| p.chars().count()).sum(),
        sentences: phonemes.iter().filter(|p| !p.trim().is_empty()).count(),
    })
}

/// The estimated duration of a reading, in milliseconds.
pub fn estimated_ms(reading: Reading) -> i64 {
    let pauses = reading.sentences.saturating_sub(1) as i64;
    BASE_MS + PER_PHONEME_MS * reading.phonemes as i64 + SENTENCE_PAUSE_MS * pauses
}
