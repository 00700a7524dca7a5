//! Reference audio for a cloned voice: decoded with voiced's decoder, brought to the engine's
//! rate and checked before any model sees it (5–30 s, not silence, not clipped), so that a bad
//! clip is a clear client error instead of a poor voice.

use std::time::Duration;

use crate::audio::{
    ASR_SAMPLE_RATE, DecodeError, DecodeLimits, DecodedAudio, decode_for_asr, resample,
};

pub const MIN_SECS: u64 = 5;
pub const MAX_SECS: u64 = 30;
/// Below this RMS (about −46 dBFS) a clip is silence or hiss.
const SILENCE_RMS: f32 = 0.005;
/// A clip is clipped when more than this share of its samples sits at full scale.
const CLIPPED_SHARE: f32 = 0.005;
const FULL_SCALE: f32 = 0.98;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReferenceError {
    #[error("the reference audio could not be decoded ({0})")]
    Undecodable(String),
    #[error(
        "the reference audio is {secs} s long; it must have {MIN_SECS} to {MAX_SECS} s of speech"
    )]
    Length { secs: u64 },
    #[error("the reference audio is silent")]
    Silent,
    #[error("the reference audio is clipped (distorted at full scale); record it at a lower level")]
    Clipped,
    #[error("the reference audio file is larger than 16 MiB")]
    TooLarge,
}

/// Largest reference file accepted (30 s of 48 kHz 24-bit stereo WAV is 8.6 MB).
pub const MAX_BYTES: usize = 16 * 1024 * 1024;

/// Decodes and checks `bytes`; returns mono samples at `rate`.
pub fn prepare(bytes: &[u8], rate: u32) -> Result<Vec<f32>, ReferenceError> {
    let decoded = decode_checked(bytes)?;
    resample(&decoded.samples_16k, ASR_SAMPLE_RATE, rate)
        .map_err(|e| ReferenceError::Undecodable(e.to_string()))
}

/// Decodes and checks `bytes` without bringing them to an engine's rate (what a clone request
/// is checked with before anything is stored); returns the clip's duration in milliseconds.
pub fn check(bytes: &[u8]) -> Result<u64, ReferenceError> {
    decode_checked(bytes).map(|d| d.duration_ms)
}

fn decode_checked(bytes: &[u8]) -> Result<DecodedAudio, ReferenceError> {
    if bytes.len() > MAX_BYTES {
        return Err(ReferenceError::TooLarge);
    }
    let limits = DecodeLimits {
        max_duration: Duration::from_secs(MAX_SECS + 1),
        min_duration: Duration::from_millis(100),
    };
    let decoded = decode_for_asr(bytes.to_vec(), &limits).map_err(|e| match e {
        DecodeError::TooLong { .. } => ReferenceError::Length { secs: MAX_SECS + 1 },
        DecodeError::Undecodable(why) => ReferenceError::Undecodable(why),
    })?;
    let secs = decoded.duration_ms / 1000;
    if !(MIN_SECS * 1000..=MAX_SECS * 1000).contains(&decoded.duration_ms) {
        return Err(ReferenceError::Length { secs });
    }
    let samples = &decoded.samples_16k;
    let rms = (samples.iter().map(|s| s * s).sum::<f32>() / samples.len().max(1) as f32).sqrt();
    if rms < SILENCE_RMS {
        return Err(ReferenceError::Silent);
    }
    let loud = samples.iter().filter(|s| s.abs() >= FULL_SCALE).count();
    if loud as f32 > CLIPPED_SHARE * samples.len() as f32 {
        return Err(ReferenceError::Clipped);
    }
    Ok(decoded)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wav(secs: f32, amplitude: f32) -> Vec<u8> {
        let spec = hound::WavSpec {
            channels: 1,
            sample_rate: 24_000,
            bits_per_sample: 16,
            sample_format: hound::SampleFormat::Int,
        };
        let mut out = std::io::Cursor::new(Vec::new());
        let mut writer = hound::WavWriter::new(&mut out, spec).unwrap();
        for i in 0..(secs * 24_000.0) as usize {
            let t = i as f32 / 24_000.0;
            let s = (amplitude * (2.0 * std::f32::consts::PI * 180.0 * t).sin()).clamp(-1.0, 1.0);
            writer.write_sample((s * 32767.0) as i16).unwrap();
        }
        writer.finalize().unwrap();
        out.into_inner()
    }

    #[test]
    fn a_good_clip_comes_back_at_the_engine_rate() {
        let samples = prepare(&wav(6.0, 0.3), 24_000).unwrap();
        assert!(
            (samples.len() as i64 - 6 * 24_000).abs() < 100,
            "{}",
            samples.len()
        );
    }

    #[test]
    fn bad_clips_are_refused_with_the_reason() {
        assert_eq!(
            prepare(&wav(3.0, 0.3), 24_000),
            Err(ReferenceError::Length { secs: 3 })
        );
        assert!(matches!(
            prepare(&wav(31.5, 0.3), 24_000),
            Err(ReferenceError::Length { .. })
        ));
        assert_eq!(prepare(&wav(6.0, 0.0), 24_000), Err(ReferenceError::Silent));
        assert_eq!(
            prepare(&wav(6.0, 3.0), 24_000),
            Err(ReferenceError::Clipped)
        );
        assert!(matches!(
            prepare(b"not audio at all", 24_000),
            Err(ReferenceError::Undecodable(_))
        ));
    }
}
