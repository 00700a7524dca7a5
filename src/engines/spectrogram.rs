//! Log-mel spectrograms of reference audio, in the two conventions the cloning engines were
//! trained with: Qwen3-TTS's speaker encoder (librosa Slaney filters, reflect padding of
//! (n_fft − hop)/2, magnitude with a 1e-9 floor, log clamped at 1e-5) and LuxTTS's Vocos
//! features (torchaudio's HTK filters without normalisation, centred frames, magnitude, log
//! clamped at 1e-7). Computed in f64; periodic Hann window of n_fft samples.

use std::sync::Arc;

use rustfft::num_complex::Complex;
use rustfft::{Fft, FftPlanner};

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum MelScale {
    /// librosa's default (`htk=False`) with `norm="slaney"` (area-normalised triangles).
    Slaney,
    /// torchaudio's default: HTK scale, triangles of height 1.
    Htk,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Padding {
    /// `center=True`: reflect n_fft/2 on each side; 1 + n/hop frames.
    Centered,
    /// `center=False` after an explicit reflect padding of this many samples on each side.
    Reflect(usize),
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MelConfig {
    pub sample_rate: u32,
    pub n_fft: usize,
    pub hop: usize,
    pub n_mels: usize,
    pub fmin: f64,
    pub fmax: f64,
    pub scale: MelScale,
    pub padding: Padding,
    /// Added to |X|² before the square root.
    pub magnitude_floor: f64,
    /// The mel energies are clamped to at least this before the natural log.
    pub log_floor: f64,
}

/// Qwen3-TTS `mel_spectrogram(n_fft=1024, num_mels=128, sampling_rate=24000, hop_size=256,
/// win_size=1024, fmin=0, fmax=12000)`, the speaker encoder's input.
pub const QWEN_SPEAKER: MelConfig = MelConfig {
    sample_rate: 24_000,
    n_fft: 1024,
    hop: 256,
    n_mels: 128,
    fmin: 0.0,
    fmax: 12_000.0,
    scale: MelScale::Slaney,
    padding: Padding::Reflect((1024 - 256) / 2),
    magnitude_floor: 1e-9,
    log_floor: 1e-5,
};

/// ZipVoice's `VocosFbank` (torchaudio `MelSpectrogram(24000, n_fft=1024, hop_length=256,
/// n_mels=100, center=True, power=1)`, log clamped at 1e-7), LuxTTS's prompt features.
pub const VOCOS: MelConfig = MelConfig {
    sample_rate: 24_000,
    n_fft: 1024,
    hop: 256,
    n_mels: 100,
    fmin: 0.0,
    fmax: 12_000.0,
    scale: MelScale::Htk,
    padding: Padding::Centered,
    magnitude_floor: 0.0,
    log_floor: 1e-7,
};

/// Build once, reuse: the filterbank, window and FFT plan.
pub struct Mel {
    config: MelConfig,
    filters: Vec<f64>,
    window: Vec<f64>,
    fft: Arc<dyn Fft<f64>>,
}

impl Mel {
    pub fn new(config: MelConfig) -> Self {
        let n = config.n_fft;
        let window = (0..n)
            .map(|i| 0.5 - 0.5 * (2.0 * std::f64::consts::PI * i as f64 / n as f64).cos())
            .collect();
        Self {
            filters: filters(&config),
            window,
            fft: FftPlanner::new().plan_fft_forward(n),
            config,
        }
    }

    pub fn n_mels(&self) -> usize {
        self.config.n_mels
    }

    /// Log-mel frames of `samples`, frame-major: `frames × n_mels` values.
    pub fn compute(&self, samples: &[f32]) -> (usize, Vec<f32>) {
        let c = &self.config;
        let pad = match c.padding {
            Padding::Centered => c.n_fft / 2,
            Padding::Reflect(p) => p,
        };
        let signal = reflect_pad(samples, pad);
        if signal.len() < c.n_fft {
            return (0, Vec::new());
        }
        let frames = 1 + (signal.len() - c.n_fft) / c.hop;
        let bins = c.n_fft / 2 + 1;
        let mut out = Vec::with_capacity(frames * c.n_mels);
        let mut buf = vec![Complex::new(0f64, 0f64); c.n_fft];
        let mut scratch = vec![Complex::new(0f64, 0f64); self.fft.get_inplace_scratch_len()];
        let mut magnitude = vec![0f64; bins];
        for frame in 0..frames {
            let start = frame * c.hop;
            for (i, x) in buf.iter_mut().enumerate() {
                *x = Complex::new(signal[start + i] * self.window[i], 0.0);
            }
            self.fft.process_with_scratch(&mut buf, &mut scratch);
            for (m, x) in magnitude.iter_mut().zip(&buf) {
                *m = (x.norm_sqr() + c.magnitude_floor).sqrt();
            }
            for mel in 0..c.n_mels {
                let filter = &self.filters[mel * bins..(mel + 1) * bins];
                let energy: f64 = filter.iter().zip(&magnitude).map(|(f, m)| f * m).sum();
                out.push(energy.max(c.log_floor).ln() as f32);
            }
        }
        (frames, out)
    }
}

/// `np.pad(x, pad, mode="reflect")` (the edge sample is not repeated), in f64.
fn reflect_pad(x: &[f32], pad: usize) -> Vec<f64> {
    let n = x.len() as isize;
    if n == 0 {
        return Vec::new();
    }
    let at = |i: isize| -> f64 {
        if n == 1 {
            return f64::from(x[0]);
        }
        let period = 2 * (n - 1);
        let mut j = i.rem_euclid(period);
        if j >= n {
            j = period - j;
        }
        f64::from(x[j as usize])
    };
    (-(pad as isize)..n + pad as isize).map(at).collect()
}

fn hz_to_mel(scale: MelScale, f: f64) -> f64 {
    match scale {
        MelScale::Htk => 2595.0 * (1.0 + f / 700.0).log10(),
        MelScale::Slaney => {
            let f_sp = 200.0 / 3.0;
            if f >= 1000.0 {
                1000.0 / f_sp + (f / 1000.0).ln() / (6.4f64.ln() / 27.0)
            } else {
                f / f_sp
            }
        }
    }
}

fn mel_to_hz(scale: MelScale, m: f64) -> f64 {
    match scale {
        MelScale::Htk => 700.0 * (10f64.powf(m / 2595.0) - 1.0),
        MelScale::Slaney => {
            let f_sp = 200.0 / 3.0;
            let min_log_mel = 1000.0 / f_sp;
            if m >= min_log_mel {
                1000.0 * ((6.4f64.ln() / 27.0) * (m - min_log_mel)).exp()
            } else {
                f_sp * m
            }
        }
    }
}

/// Triangular filters, `n_mels × (n_fft/2 + 1)`, row-major.
fn filters(c: &MelConfig) -> Vec<f64> {
    let bins = c.n_fft / 2 + 1;
    let (low, high) = (hz_to_mel(c.scale, c.fmin), hz_to_mel(c.scale, c.fmax));
    let points: Vec<f64> = (0..c.n_mels + 2)
        .map(|i| {
            mel_to_hz(
                c.scale,
                low + (high - low) * i as f64 / (c.n_mels + 1) as f64,
            )
        })
        .collect();
    let mut weights = vec![0f64; c.n_mels * bins];
    for m in 0..c.n_mels {
        let norm = match c.scale {
            MelScale::Slaney => 2.0 / (points[m + 2] - points[m]),
            MelScale::Htk => 1.0,
        };
        for k in 0..bins {
            let f = k as f64 * f64::from(c.sample_rate) / c.n_fft as f64;
            let lower = (f - points[m]) / (points[m + 1] - points[m]);
            let upper = (points[m + 2] - f) / (points[m + 2] - points[m + 1]);
            weights[m * bins + k] = lower.min(upper).max(0.0) * norm;
        }
    }
    weights
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tone(hz: f32, secs: f32) -> Vec<f32> {
        (0..(secs * 24_000.0) as usize)
            .map(|i| 0.5 * (2.0 * std::f32::consts::PI * hz * i as f32 / 24_000.0).sin())
            .collect()
    }

    #[test]
    fn frame_counts_follow_the_padding() {
        let one_second = tone(440.0, 1.0);
        // center=False after (1024 − 256)/2 on each side: 1 + (24000 + 768 − 1024) / 256.
        let (frames, data) = Mel::new(QWEN_SPEAKER).compute(&one_second);
        assert_eq!(frames, 1 + (24_000 + 768 - 1024) / 256);
        assert_eq!(data.len(), frames * 128);
        // center=True: 1 + n / hop.
        let (frames, _) = Mel::new(VOCOS).compute(&one_second);
        assert_eq!(frames, 1 + 24_000 / 256);
    }

    #[test]
    fn a_tone_lights_its_own_band() {
        for config in [QWEN_SPEAKER, VOCOS] {
            let mel = Mel::new(config);
            let (frames, data) = mel.compute(&tone(440.0, 0.5));
            let middle = &data[(frames / 2) * config.n_mels..(frames / 2 + 1) * config.n_mels];
            let loudest = middle
                .iter()
                .enumerate()
                .max_by(|a, b| a.1.total_cmp(b.1))
                .unwrap()
                .0;
            // The loudest band's centre frequency is near 440 Hz.
            let (low, high) = (
                hz_to_mel(config.scale, config.fmin),
                hz_to_mel(config.scale, config.fmax),
            );
            let centre = mel_to_hz(
                config.scale,
                low + (high - low) * (loudest + 1) as f64 / (config.n_mels + 1) as f64,
            );
            assert!(
                (centre - 440.0).abs() < 120.0,
                "{config:?}: band at {centre} Hz"
            );
            // Silence sits at the log floor.
            let (_, quiet) = mel.compute(&vec![0.0; 4096]);
            let floor = config.log_floor.ln() as f32;
            assert!(
                quiet.iter().all(|&x| (x - floor).abs() < 1e-3),
                "{config:?}"
            );
        }
    }

    #[test]
    fn the_scales_round_trip() {
        for scale in [MelScale::Slaney, MelScale::Htk] {
            for f in [0.0, 300.0, 1000.0, 4000.0, 12_000.0] {
                assert!((mel_to_hz(scale, hz_to_mel(scale, f)) - f).abs() < 1e-6);
            }
        }
    }
}
