//! Bench-only: an engine that answers every text at once with the same short clip, so that
//! `bench/jobs_per_second.py` measures the pipeline around the model (claim, lease, encode,
//! store the audio, complete, charge, notify) and nothing else. Compiled only with the cargo
//! feature `bench-engine`, which no shipped or CI build enables, and used only when
//! `VOICED_BENCH_INSTANT_ENGINE=1` (see `EngineRegistry::load`).

use super::{Engine, EngineError, Pcm, SynthesisInput};

/// The clip's rate and length: 0.25 s of a 440 Hz tone at 24 kHz (Kokoro's rate).
const RATE: u32 = 24_000;
const SAMPLES: usize = 6_000;

/// Whether the instant engine replaces every engine in this process.
pub fn enabled() -> bool {
    std::env::var("VOICED_BENCH_INSTANT_ENGINE").is_ok_and(|v| v == "1")
}

pub struct InstantEngine;

impl Engine for InstantEngine {
    fn synthesize(&mut self, _input: &SynthesisInput<'_>) -> Result<Pcm, EngineError> {
        let samples = (0..SAMPLES)
            .map(|i| 0.2 * (i as f32 * 440.0 * std::f32::consts::TAU / RATE as f32).sin())
            .collect();
        Ok(Pcm {
            samples,
            sample_rate: RATE,
            words: Vec::new(),
        })
    }
}
