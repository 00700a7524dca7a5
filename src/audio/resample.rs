//! Band-limited sample-rate conversion: a Kaiser-windowed sinc evaluated from a polyphase table.
//!
//! Output sample `n` sits exactly at input position `n * in_rate / out_rate`, so the converter
//! adds no delay and there is nothing to trim. Streaming: feed chunks with [`Resampler::push`],
//! then [`Resampler::finish`]; memory stays proportional to the filter length, not the clip.

use std::f64::consts::PI;

/// Zero crossings of the sinc kept on each side of the centre tap.
const ZERO_CROSSINGS: f64 = 24.0;
/// Cutoff as a fraction of the lower Nyquist frequency (leaves room for the transition band).
const ROLLOFF: f64 = 0.92;
/// Kaiser window shape: about 80 dB of stop-band attenuation.
const KAISER_BETA: f64 = 8.0;
/// Upper bound on the number of filter phases; rarer rate pairs round to the nearest phase.
const MAX_PHASES: u64 = 1024;

/// Lowest sample rate converted (either side).
pub const MIN_SAMPLE_RATE: u32 = 8_000;
/// Highest sample rate converted (either side). The filter grows with the ratio of the two
/// rates (at 384 kHz → 16 kHz it is about 10 MB); rates a header merely declares, such as
/// 4 294 967 295 Hz, would otherwise ask for tens of gigabytes.
pub const MAX_SAMPLE_RATE: u32 = 384_000;

/// A rate outside [`MIN_SAMPLE_RATE`]..=[`MAX_SAMPLE_RATE`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("sample rate {0} Hz is outside 8000-384000 Hz")]
pub struct UnsupportedRate(pub u32);

/// Whether `hz` is a rate the converter (and the decoder) accepts.
pub fn supported_rate(hz: u32) -> bool {
    (MIN_SAMPLE_RATE..=MAX_SAMPLE_RATE).contains(&hz)
}

/// Resample a whole mono clip from `from_hz` to `to_hz` (both within 8–384 kHz).
pub fn resample(samples: &[f32], from_hz: u32, to_hz: u32) -> Result<Vec<f32>, UnsupportedRate> {
    let mut resampler = Resampler::new(from_hz, to_hz)?;
    let mut out = Vec::with_capacity(resampler.output_len(samples.len() as u64) as usize);
    resampler.push(samples, &mut out);
    resampler.finish(&mut out);
    Ok(out)
}

pub(crate) struct Resampler {
    /// Input samples per output sample is `step_num / step_den` (reduced fraction).
    step_num: u64,
    step_den: u64,
    /// Taps on each side of the centre; the filter has `2 * half` taps.
    half: usize,
    phases: u64,
    /// `phases` rows of `2 * half` taps, each row summing to 1.
    table: Vec<f32>,
    /// Pending input; `buf[0]` is input sample number `buf_start`.
    buf: Vec<f32>,
    buf_start: u64,
    /// Input samples pushed so far.
    consumed: u64,
    /// Index of the next output sample.
    next_out: u64,
}

impl Resampler {
    /// Refuses rates outside 8–384 kHz before allocating anything: the table holds up to
    /// `MAX_PHASES` rows of about `48 * max(from, to) / min(from, to)` taps.
    pub(crate) fn new(from_hz: u32, to_hz: u32) -> Result<Self, UnsupportedRate> {
        for hz in [from_hz, to_hz] {
            if !supported_rate(hz) {
                return Err(UnsupportedRate(hz));
            }
        }
        let g = gcd(u64::from(from_hz), u64::from(to_hz));
        let (step_num, step_den) = (u64::from(from_hz) / g, u64::from(to_hz) / g);

        // Normalised cutoff in cycles per input sample; below the lower of the two Nyquists.
        let cutoff = 0.5 * ROLLOFF * (f64::from(to_hz) / f64::from(from_hz)).min(1.0);
        let half = (ZERO_CROSSINGS / (2.0 * cutoff)).ceil() as usize;
        let phases = step_den.min(MAX_PHASES);
        let taps = 2 * half;

        let mut table = Vec::with_capacity(phases as usize * taps);
        let i0_beta = bessel_i0(KAISER_BETA);
        for phase in 0..phases {
            let frac = phase as f64 / phases as f64;
            let row: Vec<f64> = (0..taps)
                .map(|i| {
                    // Tap i reads input `ip + i + 1 - half`; its distance from the centre:
                    let t = (i as f64 + 1.0 - half as f64) - frac;
                    let x = t / half as f64;
                    let window = if x.abs() >= 1.0 {
                        0.0
                    } else {
                        bessel_i0(KAISER_BETA * (1.0 - x * x).sqrt()) / i0_beta
                    };
                    2.0 * cutoff * sinc(2.0 * cutoff * t) * window
                })
                .collect();
            let sum: f64 = row.iter().sum();
            table.extend(row.iter().map(|&h| (h / sum) as f32));
        }

        Ok(Resampler {
            step_num,
            step_den,
            half,
            phases,
            table,
            buf: Vec::new(),
            buf_start: 0,
            consumed: 0,
            next_out: 0,
        })
    }

    /// Number of output samples `n` input samples turn into.
    pub(crate) fn output_len(&self, n: u64) -> u64 {
        (n * self.step_den).div_ceil(self.step_num)
    }

    pub(crate) fn push(&mut self, input: &[f32], out: &mut Vec<f32>) {
        if self.step_num == self.step_den {
            out.extend_from_slice(input);
            self.consumed += input.len() as u64;
            self.next_out = self.consumed;
            return;
        }
        self.buf.extend_from_slice(input);
        self.consumed += input.len() as u64;
        // Emit every output whose taps are all available.
        loop {
            let (ip, _) = self.position(self.next_out);
            if ip + self.half as u64 >= self.consumed {
                break;
            }
            out.push(self.output_at(self.next_out));
            self.next_out += 1;
        }
        // Keep only the history the next output still needs.
        let (ip, _) = self.position(self.next_out);
        let keep_from = (ip + 1)
            .saturating_sub(self.half as u64)
            .max(self.buf_start);
        let drop = (keep_from - self.buf_start) as usize;
        if drop > 0 {
            self.buf.drain(..drop);
            self.buf_start = keep_from;
        }
    }

    /// Emit the tail, treating input past the end as silence.
    pub(crate) fn finish(&mut self, out: &mut Vec<f32>) {
        let total = self.output_len(self.consumed);
        while self.next_out < total {
            out.push(self.output_at(self.next_out));
            self.next_out += 1;
        }
    }

    /// Integer input position and table row of output sample `n`.
    fn position(&self, n: u64) -> (u64, usize) {
        let num = n * self.step_num;
        let (mut ip, frac) = (num / self.step_den, num % self.step_den);
        let mut phase = if self.phases == self.step_den {
            frac
        } else {
            // Nearest of `phases` evenly spaced phases.
            (frac * self.phases + self.step_den / 2) / self.step_den
        };
        if phase == self.phases {
            ip += 1;
            phase = 0;
        }
        (ip, phase as usize)
    }

    fn output_at(&self, n: u64) -> f32 {
        let (ip, phase) = self.position(n);
        let taps = 2 * self.half;
        let row = &self.table[phase * taps..(phase + 1) * taps];
        // Input index of the first tap; may lie before the start of the clip.
        let first = ip as i64 + 1 - self.half as i64;
        let buf_end = self.buf_start + self.buf.len() as u64;
        if first >= self.buf_start as i64 && first as u64 + taps as u64 <= buf_end {
            // Every tap inside the buffer: the common case, kept free of bounds checks.
            let start = (first as u64 - self.buf_start) as usize;
            return dot(row, &self.buf[start..start + taps]);
        }
        let mut acc = 0.0f32;
        for (i, &h) in row.iter().enumerate() {
            let k = first + i as i64;
            if k >= self.buf_start as i64 && (k as u64) < buf_end {
                acc += h * self.buf[(k as u64 - self.buf_start) as usize];
            }
        }
        acc
    }
}

/// Dot product in four independent lanes (lets the compiler use SIMD; the summation order is
/// fixed, so results do not depend on the machine).
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0.0f32; 4];
    let (a4, a_rest) = a.split_at(a.len() / 4 * 4);
    let (b4, b_rest) = b.split_at(a4.len());
    for (x, y) in a4.chunks_exact(4).zip(b4.chunks_exact(4)) {
        for i in 0..4 {
            lanes[i] += x[i] * y[i];
        }
    }
    let tail: f32 = a_rest.iter().zip(b_rest).map(|(x, y)| x * y).sum();
    (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]) + tail
}

fn sinc(x: f64) -> f64 {
    if x.abs() < 1e-12 {
        1.0
    } else {
        (PI * x).sin() / (PI * x)
    }
}

/// Modified Bessel function of the first kind, order 0 (power series).
fn bessel_i0(x: f64) -> f64 {
    let mut sum = 1.0;
    let mut term = 1.0;
    let q = x * x / 4.0;
    for k in 1..64 {
        term *= q / (k * k) as f64;
        sum += term;
        if term < sum * 1e-17 {
            break;
        }
    }
    sum
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tone(freq: f64, rate: u32, secs: f64) -> Vec<f32> {
        let n = (f64::from(rate) * secs) as usize;
        (0..n)
            .map(|i| (2.0 * PI * freq * i as f64 / f64::from(rate)).sin() as f32 * 0.5)
            .collect()
    }

    fn rms(x: &[f32]) -> f64 {
        (x.iter().map(|&v| f64::from(v) * f64::from(v)).sum::<f64>() / x.len() as f64).sqrt()
    }

    #[test]
    fn keeps_a_tone_in_band_and_in_phase() {
        for from in [8_000, 22_050, 24_000, 44_100, 48_000, 96_000] {
            let input = tone(440.0, from, 1.0);
            let out = resample(&input, from, 16_000).unwrap();
            assert_eq!(out.len(), 16_000, "from {from}");
            let expected = tone(440.0, 16_000, 1.0);
            // Compare away from the edges: no delay, so sample-by-sample agreement.
            let err: Vec<f32> = out[200..15_800]
                .iter()
                .zip(&expected[200..15_800])
                .map(|(a, b)| a - b)
                .collect();
            assert!(rms(&err) < 1e-3, "from {from}: error rms {}", rms(&err));
        }
    }

    #[test]
    fn removes_content_above_the_new_nyquist() {
        // 12 kHz at 48 kHz would alias to 4 kHz at 16 kHz without filtering.
        let out = resample(&tone(12_000.0, 48_000, 1.0), 48_000, 16_000).unwrap();
        assert!(rms(&out[100..15_900]) < 0.5 * 1e-3, "rms {}", rms(&out));
    }

    #[test]
    fn streaming_matches_one_shot_for_any_chunking() {
        let input = tone(1_000.0, 44_100, 0.5);
        let whole = resample(&input, 44_100, 16_000).unwrap();
        let mut r = Resampler::new(44_100, 16_000).unwrap();
        let mut out = Vec::new();
        for chunk in input.chunks(333) {
            r.push(chunk, &mut out);
        }
        r.finish(&mut out);
        assert_eq!(out, whole);
    }

    #[test]
    fn same_rate_is_a_copy() {
        let input = tone(440.0, 16_000, 0.1);
        assert_eq!(resample(&input, 16_000, 16_000).unwrap(), input);
    }

    #[test]
    fn refuses_rates_outside_the_supported_range_without_building_a_table() {
        for hz in [0, 1, 7_999, 384_001, 30_000_001, u32::MAX] {
            assert_eq!(
                Resampler::new(hz, 16_000).err(),
                Some(UnsupportedRate(hz)),
                "from {hz}"
            );
            assert_eq!(
                Resampler::new(16_000, hz).err(),
                Some(UnsupportedRate(hz)),
                "to {hz}"
            );
            assert_eq!(resample(&[0.0; 10], hz, 16_000), Err(UnsupportedRate(hz)));
        }
        // The edges are accepted, and the largest table stays small.
        for hz in [8_000, 383_999, 384_000] {
            let r = Resampler::new(hz, 16_000).unwrap();
            assert!(
                r.table.len() * 4 <= 16 << 20,
                "{hz} Hz: {} taps",
                r.table.len()
            );
        }
    }
}
