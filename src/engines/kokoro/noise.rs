//! Seeded inputs for the harmonic source of the rewritten graph (`scripts/kokoro_seed_graph.py`).
//!
//! Kokoro's SineGen draws a noise term and a random initial phase per harmonic; the shipped ONNX
//! export dropped both, so we feed them from a seeded RNG. Piece `i` of a text draws from stream
//! `i` of the ChaCha generator keyed by the seed, so the output is a pure function of (text,
//! voice, seed) whichever session renders which piece, in whatever order. (Until pieces could
//! run in parallel, every piece drew from stream 0 in turn: the first piece's audio is the same
//! as then, the later pieces' differ.)

use std::f32::consts::TAU;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;

/// Harmonics of the source: the fundamental and 8 overtones.
pub const HARMONICS: usize = 9;
/// Frames in the noise bank (2 s at 24 kHz); the graph tiles it to the source's length.
pub const BANK_FRAMES: usize = 48_000;

/// `sine_noise` [1, BANK_FRAMES, HARMONICS] and `sine_phase` [1, 1, HARMONICS].
pub struct SourceNoise {
    pub noise: Vec<f32>,
    pub phase: Vec<f32>,
}

impl SourceNoise {
    /// All zeros: the rewritten graph then reproduces the original model exactly.
    pub fn silent() -> Self {
        Self {
            noise: vec![0.0; BANK_FRAMES * HARMONICS],
            phase: vec![0.0; HARMONICS],
        }
    }

    /// Phase offsets uniform in [0, 2π) for the overtones (the fundamental keeps phase 0, as in
    /// SineGen), then a standard-normal noise bank.
    pub fn draw(rng: &mut ChaCha8Rng) -> Self {
        let phase = (0..HARMONICS)
            .map(|h| {
                if h == 0 {
                    0.0
                } else {
                    rng.random::<f32>() * TAU
                }
            })
            .collect();
        let noise = (0..BANK_FRAMES * HARMONICS)
            .map(|_| rng.sample(StandardNormal))
            .collect();
        Self { noise, phase }
    }
}

pub fn rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}

/// The generator piece `index` of a text draws its noise from.
pub fn piece_rng(seed: u64, index: usize) -> ChaCha8Rng {
    let mut rng = rng(seed);
    rng.set_stream(index as u64);
    rng
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_draws_other_seed_other_draws() {
        let a = SourceNoise::draw(&mut rng(7));
        let b = SourceNoise::draw(&mut rng(7));
        let c = SourceNoise::draw(&mut rng(8));
        assert_eq!(a.noise, b.noise);
        assert_eq!(a.phase, b.phase);
        assert_ne!(a.noise, c.noise);
        assert_eq!(a.phase[0], 0.0);
        assert!(a.phase.iter().all(|p| (0.0..TAU).contains(p)));
        let mean_sq = a.noise.iter().map(|x| x * x).sum::<f32>() / a.noise.len() as f32;
        assert!((mean_sq - 1.0).abs() < 0.02, "variance {mean_sq}");
    }

    #[test]
    fn each_piece_has_its_own_stream_and_the_first_is_the_seeds() {
        let first = SourceNoise::draw(&mut piece_rng(7, 0));
        assert_eq!(first.noise, SourceNoise::draw(&mut rng(7)).noise);
        let second = SourceNoise::draw(&mut piece_rng(7, 1));
        assert_ne!(first.noise, second.noise);
        assert_eq!(second.noise, SourceNoise::draw(&mut piece_rng(7, 1)).noise);
        assert_ne!(second.noise, SourceNoise::draw(&mut piece_rng(8, 1)).noise);
    }
}
