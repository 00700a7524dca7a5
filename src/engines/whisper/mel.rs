//! Whisper's log-mel spectrogram, computed as faster-whisper's `FeatureExtractor` does:
//! 160 samples of trailing zeros, reflect-padded STFT (n_fft 400, hop 160, periodic Hann),
//! power spectrum through a Slaney-normalised mel filterbank, log10, clamp to max − 8,
//! then (x + 4) / 4 — over the whole clip, before it is cut into 30 s windows.

use std::sync::Arc;

use rustfft::num_complex::Complex;
use rustfft::{Fft, FftPlanner};

pub const SAMPLE_RATE: usize = 16_000;
pub const N_FFT: usize = 400;
pub const HOP: usize = 160;
/// Frames in one 30 s window, the encoder's input length.
pub const WINDOW_FRAMES: usize = 3000;

/// Log-mel features of a whole clip, `n_mels` rows by `frames` columns, row-major.
pub struct Features {
    pub n_mels: usize,
    pub frames: usize,
    pub data: Vec<f32>,
}

impl Features {
    /// Frames `[start, start + len)`, zero-padded (as faster-whisper's `pad_or_trim`) to a
    /// full window, laid out as the encoder's `[1, n_mels, 3000]` input.
    pub fn window(&self, start: usize, len: usize) -> Vec<f32> {
        let mut out = vec![0.0; self.n_mels * WINDOW_FRAMES];
        let len = len
            .min(WINDOW_FRAMES)
            .min(self.frames.saturating_sub(start));
        for mel in 0..self.n_mels {
            let row = &self.data[mel * self.frames..(mel + 1) * self.frames];
            out[mel * WINDOW_FRAMES..mel * WINDOW_FRAMES + len]
                .copy_from_slice(&row[start..start + len]);
        }
        out
    }
}

/// Computes features for a given number of mel bins; build once, reuse across calls.
pub struct MelExtractor {
    n_mels: usize,
    filters: Vec<f32>,
    window: Vec<f32>,
    fft: Arc<dyn Fft<f32>>,
}

impl MelExtractor {
    pub fn new(n_mels: usize) -> Self {
        let window = (0..N_FFT)
            .map(|i| {
                let x = 2.0 * std::f64::consts::PI * i as f64 / N_FFT as f64;
                (0.5 - 0.5 * x.cos()) as f32
            })
            .collect();
        Self {
            n_mels,
            filters: mel_filters(n_mels),
            window,
            fft: FftPlanner::new().plan_fft_forward(N_FFT),
        }
    }

    pub fn compute(&self, samples: &[f32]) -> Features {
        let bins = N_FFT / 2 + 1;
        let mut padded_input = samples.to_vec();
        padded_input.resize(samples.len() + HOP, 0.0);
        let signal = reflect_pad(&padded_input, N_FFT / 2);
        // The STFT has 1 + len / hop frames; faster-whisper drops the last one.
        let frames = padded_input.len() / HOP;

        let mut power = vec![0f32; frames * bins];
        let mut buf = vec![Complex::new(0f32, 0f32); N_FFT];
        let mut scratch = vec![Complex::new(0f32, 0f32); self.fft.get_inplace_scratch_len()];
        for (frame, out) in power.chunks_exact_mut(bins).enumerate() {
            let start = frame * HOP;
            for (i, c) in buf.iter_mut().enumerate() {
                *c = Complex::new(signal[start + i] * self.window[i], 0.0);
            }
            self.fft.process_with_scratch(&mut buf, &mut scratch);
            for (o, c) in out.iter_mut().zip(&buf) {
                *o = c.norm_sqr();
            }
        }

        let mut data = vec![0f32; self.n_mels * frames];
        for mel in 0..self.n_mels {
            let filter = &self.filters[mel * bins..(mel + 1) * bins];
            for frame in 0..frames {
                let spectrum = &power[frame * bins..(frame + 1) * bins];
                let energy: f32 = filter.iter().zip(spectrum).map(|(f, p)| f * p).sum();
                data[mel * frames + frame] = energy.max(1e-10).log10();
            }
        }
        let floor = data.iter().copied().fold(f32::NEG_INFINITY, f32::max) - 8.0;
        for x in &mut data {
            *x = (x.max(floor) + 4.0) / 4.0;
        }
        Features {
            n_mels: self.n_mels,
            frames,
            data,
        }
    }
}

/// numpy's `np.pad(x, pad, mode="reflect")` (edge sample not repeated).
fn reflect_pad(x: &[f32], pad: usize) -> Vec<f32> {
    let n = x.len();
    let at = |i: isize| -> f32 {
        if n == 1 {
            return x[0];
        }
        let period = 2 * (n as isize - 1);
        let mut j = i.rem_euclid(period);
        if j >= n as isize {
            j = period - j;
        }
        x[j as usize]
    };
    (-(pad as isize)..(n + pad) as isize).map(at).collect()
}

/// Slaney-style mel filterbank (librosa `htk=False, norm="slaney"`), `n_mels × (N_FFT/2+1)`.
fn mel_filters(n_mels: usize) -> Vec<f32> {
    let bins = N_FFT / 2 + 1;
    let fft_freqs: Vec<f64> = (0..bins)
        .map(|i| i as f64 * SAMPLE_RATE as f64 / N_FFT as f64)
        .collect();
    let (f_sp, min_log_hz) = (200.0 / 3.0, 1000.0);
    let min_log_mel = min_log_hz / f_sp;
    let log_step = 6.4f64.ln() / 27.0;
    let max_mel = 45.245640471924965;
    let freqs: Vec<f64> = (0..n_mels + 2)
        .map(|i| {
            let mel = max_mel * i as f64 / (n_mels + 1) as f64;
            if mel >= min_log_mel {
                min_log_hz * (log_step * (mel - min_log_mel)).exp()
            } else {
                f_sp * mel
            }
        })
        .collect();
    let mut weights = vec![0f32; n_mels * bins];
    for m in 0..n_mels {
        let enorm = 2.0 / (freqs[m + 2] - freqs[m]);
        for (k, &f) in fft_freqs.iter().enumerate() {
            let lower = (f - freqs[m]) / (freqs[m + 1] - freqs[m]);
            let upper = (freqs[m + 2] - f) / (freqs[m + 2] - freqs[m + 1]);
            weights[m * bins + k] = (lower.min(upper).max(0.0) * enorm) as f32;
        }
    }
    weights
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reflect_pad_matches_numpy() {
        assert_eq!(
            reflect_pad(&[1.0, 2.0, 3.0, 4.0], 2),
            [3.0, 2.0, 1.0, 2.0, 3.0, 4.0, 3.0, 2.0]
        );
    }

    #[test]
    fn one_second_gives_one_hundred_frames_in_range() {
        let tone: Vec<f32> = (0..SAMPLE_RATE)
            .map(|i| (i as f32 * 440.0 * 2.0 * std::f32::consts::PI / 16_000.0).sin() * 0.5)
            .collect();
        let features = MelExtractor::new(80).compute(&tone);
        assert_eq!((features.n_mels, features.frames), (80, 101));
        let max = features.data.iter().copied().fold(f32::MIN, f32::max);
        let min = features.data.iter().copied().fold(f32::MAX, f32::min);
        assert!(
            (max - min - 2.0).abs() < 1e-4,
            "dynamic range is clamped to 8 decades"
        );
        // 440 Hz lands in a low mel bin, far louder than the top bin.
        let row = |m: usize| features.data[m * 101 + 50];
        assert!(row(10) > row(79) + 1.0);
    }
}
