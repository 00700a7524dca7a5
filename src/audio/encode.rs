//! Engine output (mono `f32`) to file bytes. Every encoder here is deterministic: the same
//! samples give the same bytes in any process (the API promises same seed, same bytes).

use std::num::NonZeroU32;

use mp3lame_encoder::{Bitrate, Builder, Encoder, FlushGap, Mode, MonoPcm, Quality};

use super::AudioFormat;
use super::ogg_opus;

#[derive(Debug, thiserror::Error)]
pub enum EncodeError {
    #[error("sample rate {0} Hz is not supported")]
    UnsupportedSampleRate(u32),
    #[error("audio too long to encode as {format}")]
    TooLong { format: AudioFormat },
    #[error("mp3 encoder: {0}")]
    Mp3(String),
    #[error("opus encoder: {0}")]
    Opus(#[from] opus::Error),
}

/// Encode mono samples in [-1, 1] at `sample_rate` (values outside are clipped, NaN is silence).
pub fn encode(
    samples: &[f32],
    sample_rate: u32,
    format: AudioFormat,
) -> Result<Vec<u8>, EncodeError> {
    if sample_rate == 0 {
        return Err(EncodeError::UnsupportedSampleRate(sample_rate));
    }
    let clean: Vec<f32> = samples.iter().map(|&s| sanitize(s)).collect();
    match format {
        AudioFormat::Wav => encode_wav(&clean, sample_rate),
        AudioFormat::Mp3 => encode_mp3(&clean, sample_rate),
        AudioFormat::Opus => ogg_opus::encode(&clean, sample_rate),
    }
}

pub(super) fn sanitize(s: f32) -> f32 {
    if s.is_nan() { 0.0 } else { s.clamp(-1.0, 1.0) }
}

fn to_i16(s: f32) -> i16 {
    // `s` is in [-1, 1]; rounding keeps small signals symmetric.
    (s * f32::from(i16::MAX)).round() as i16
}

/// 16-bit PCM mono RIFF WAVE with the canonical 44-byte header.
fn encode_wav(samples: &[f32], sample_rate: u32) -> Result<Vec<u8>, EncodeError> {
    let data_len = samples
        .len()
        .checked_mul(2)
        .and_then(|n| u32::try_from(n).ok())
        .filter(|&n| n <= u32::MAX - WAV_HEADER as u32)
        .ok_or(EncodeError::TooLong {
            format: AudioFormat::Wav,
        })?;
    let mut out = Vec::with_capacity(WAV_HEADER + data_len as usize);
    wav_header(&mut out, sample_rate, Some(data_len));
    pcm16(&mut out, samples);
    Ok(out)
}

/// Length of the header [`wav_header`] writes.
pub(super) const WAV_HEADER: usize = 44;

/// The canonical 44-byte header of 16-bit mono PCM. `data_len: None` writes the streaming
/// placeholder `0xFFFFFFFF` in both size fields, as OpenAI's streamed wav does: the length is
/// not known when the header is sent.
pub(super) fn wav_header(out: &mut Vec<u8>, sample_rate: u32, data_len: Option<u32>) {
    let riff_len = data_len.map_or(u32::MAX, |n| n + WAV_HEADER as u32 - 8);
    out.extend_from_slice(b"RIFF");
    out.extend_from_slice(&riff_len.to_le_bytes());
    out.extend_from_slice(b"WAVEfmt ");
    out.extend_from_slice(&16u32.to_le_bytes()); // fmt chunk size
    out.extend_from_slice(&1u16.to_le_bytes()); // PCM
    out.extend_from_slice(&1u16.to_le_bytes()); // channels
    out.extend_from_slice(&sample_rate.to_le_bytes());
    out.extend_from_slice(&(sample_rate * 2).to_le_bytes()); // byte rate
    out.extend_from_slice(&2u16.to_le_bytes()); // block align
    out.extend_from_slice(&16u16.to_le_bytes()); // bits per sample
    out.extend_from_slice(b"data");
    out.extend_from_slice(&data_len.unwrap_or(u32::MAX).to_le_bytes());
}

/// Sanitized samples as 16-bit little-endian PCM.
pub(super) fn pcm16(out: &mut Vec<u8>, samples: &[f32]) {
    out.reserve(samples.len() * 2);
    for &s in samples {
        out.extend_from_slice(&to_i16(sanitize(s)).to_le_bytes());
    }
}

/// Constant bit rate: 64 kbit/s is transparent enough for 24 kHz speech and keeps sizes
/// predictable (8 kB per second).
const MP3_BITRATE: Bitrate = Bitrate::Kbps64;
/// Sample rates an mp3 frame header can express (MPEG-1, 2 and 2.5).
const MP3_RATES: [u32; 9] = [
    8_000, 11_025, 12_000, 16_000, 22_050, 24_000, 32_000, 44_100, 48_000,
];
/// Samples handed to LAME per call.
const MP3_CHUNK: usize = 8192;

/// Mono CBR mp3 at the input rate (LAME resamples rates mp3 has no frame header for), with a
/// LAME/Info tag carrying encoder delay and padding so decoders can play it gaplessly.
fn encode_mp3(samples: &[f32], sample_rate: u32) -> Result<Vec<u8>, EncodeError> {
    let mut encoder = mp3_encoder(sample_rate, true)?;
    let mut out = Vec::with_capacity(samples.len() / 2 + 8192);
    mp3_frames(&mut encoder, samples, &mut out)?;
    mp3_flush(&mut encoder, &mut out)?;

    // The first frame LAME wrote is a placeholder for the Info tag, whose content (frame count,
    // delay, padding, CRC) is only known now: overwrite it in place.
    let mut tag = Vec::with_capacity(encoder.lame_tag_size());
    if encoder.lame_tag_encode_to_vec(&mut tag).is_some() && tag.len() <= out.len() {
        out[..tag.len()].copy_from_slice(&tag);
    }
    Ok(out)
}

fn mp3_error(e: &dyn std::fmt::Display) -> EncodeError {
    EncodeError::Mp3(e.to_string())
}

/// A mono CBR LAME encoder at `sample_rate` (see [`encode_mp3`]); `info_tag` reserves the first
/// frame for the LAME/Info tag, which can only be filled in once the whole input is known.
pub(super) fn mp3_encoder(sample_rate: u32, info_tag: bool) -> Result<Encoder, EncodeError> {
    mp3_encoder_at(sample_rate, info_tag, MP3_BITRATE)
}

/// The same at another constant bit rate (the live speech socket's `mp3_<rate>_<kbps>`).
pub(super) fn mp3_encoder_at(
    sample_rate: u32,
    info_tag: bool,
    bitrate: Bitrate,
) -> Result<Encoder, EncodeError> {
    let mut builder = Builder::new().ok_or_else(|| EncodeError::Mp3("out of memory".into()))?;
    builder.set_num_channels(1).map_err(|e| mp3_error(&e))?;
    builder
        .set_sample_rate(sample_rate)
        .map_err(|_| EncodeError::UnsupportedSampleRate(sample_rate))?;
    // Keep the engine's rate when mp3 has it; otherwise LAME picks the nearest one it has.
    if MP3_RATES.contains(&sample_rate) {
        builder
            .set_output_sample_rate(NonZeroU32::new(sample_rate))
            .map_err(|e| mp3_error(&e))?;
    }
    builder.set_mode(Mode::Mono).map_err(|e| mp3_error(&e))?;
    builder.set_brate(bitrate).map_err(|e| mp3_error(&e))?;
    builder
        .set_quality(Quality::NearBest)
        .map_err(|e| mp3_error(&e))?;
    builder
        .set_to_write_vbr_tag(info_tag)
        .map_err(|e| mp3_error(&e))?;
    builder.build().map_err(|e| mp3_error(&e))
}

/// Feeds sanitized `samples` to LAME, appending the frames it completes to `out`.
pub(super) fn mp3_frames(
    encoder: &mut Encoder,
    samples: &[f32],
    out: &mut Vec<u8>,
) -> Result<(), EncodeError> {
    let clean: Vec<f32> = samples.iter().map(|&s| sanitize(s)).collect();
    for chunk in clean.chunks(MP3_CHUNK) {
        // LAME's documented worst case per call: 1.25 * samples + 7200 bytes.
        out.reserve(chunk.len() * 5 / 4 + 7200);
        encoder
            .encode_to_vec(MonoPcm(chunk), out)
            .map_err(|e| mp3_error(&e))?;
    }
    Ok(())
}

/// The frames LAME still holds (the end of the input, padded to a whole frame).
pub(super) fn mp3_flush(encoder: &mut Encoder, out: &mut Vec<u8>) -> Result<(), EncodeError> {
    out.reserve(7200);
    encoder
        .flush_to_vec::<FlushGap>(out)
        .map_err(|e| mp3_error(&e))?;
    Ok(())
}
