//! Uploaded clip → 16 kHz mono `f32` for the recogniser.
//!
//! symphonia demuxes wav, mp3, flac, ogg and webm/mkv and decodes pcm, mp3, flac and vorbis;
//! Opus packets (from Ogg or WebM) go through libopus. Decoding streams into the resampler and
//! stops as soon as the clip passes the duration limit.
//!
//! Hostile headers are refused before anything is allocated from what they declare (the track's
//! parameters right after probing, then every decoded buffer's own rate and layout):
//! - a sample rate outside 8 000–384 000 Hz or a channel count outside 1–8 is undecodable (the
//!   resampler refuses such rates itself too, so its filter table stays bounded);
//! - uncompressed audio (wav) whose declared data size the upload cannot hold is undecodable,
//!   except the streaming placeholder `0xFFFFFFFF`, which declares nothing;
//! - a declared length over [`DecodeLimits::max_duration`] is [`DecodeError::TooLong`] at once;
//!   streams that declare no length (browser webm, piped wav) are cut off while decoding.
//!
//! What counts as undecodable (→ [`DecodeError::Undecodable`]):
//! - no recognised container, no audio track, or a codec we do not decode;
//! - the header checks above;
//! - nothing decodable, or less than [`DecodeLimits::min_duration`] of audio (a file cut down to
//!   a few hundred bytes lands here);
//! - more than a few corrupt packets, or more than 10 % of them;
//! - a **truncated** file: the container declares its length (mp3 Xing/Info or size estimate,
//!   wav data chunk, flac STREAMINFO, ogg last granule, mkv Info duration) and less than 90 % of
//!   it decodes, with more than half a second missing. A file cut mid-way through its last frame
//!   loses well under that and is accepted;
//! - a FLAC stream that decodes to clearly more than its STREAMINFO sample count.

use std::io::Cursor;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Duration;

use symphonia::core::audio::SampleBuffer;
use symphonia::core::codecs::{
    CODEC_TYPE_FLAC, CODEC_TYPE_NULL, CODEC_TYPE_OPUS, CODEC_TYPE_PCM_ALAW, CODEC_TYPE_PCM_F32BE,
    CODEC_TYPE_PCM_F32LE, CODEC_TYPE_PCM_F64BE, CODEC_TYPE_PCM_F64LE, CODEC_TYPE_PCM_MULAW,
    CODEC_TYPE_PCM_S8, CODEC_TYPE_PCM_S16BE, CODEC_TYPE_PCM_S16LE, CODEC_TYPE_PCM_S24BE,
    CODEC_TYPE_PCM_S24LE, CODEC_TYPE_PCM_S32BE, CODEC_TYPE_PCM_S32LE, CODEC_TYPE_PCM_U8,
    CODEC_TYPE_PCM_U16BE, CODEC_TYPE_PCM_U16LE, CODEC_TYPE_PCM_U24BE, CODEC_TYPE_PCM_U24LE,
    CODEC_TYPE_PCM_U32BE, CODEC_TYPE_PCM_U32LE, CodecParameters, CodecType, DecoderOptions,
};
use symphonia::core::errors::Error as SymphoniaError;
use symphonia::core::formats::{FormatOptions, FormatReader, Packet};
use symphonia::core::io::MediaSourceStream;
use symphonia::core::meta::MetadataOptions;
use symphonia::core::probe::Hint;

use super::ASR_SAMPLE_RATE;
use super::ogg_opus::opus_head_pre_skip;
use super::resample::{MAX_SAMPLE_RATE, MIN_SAMPLE_RATE, Resampler, supported_rate};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeLimits {
    /// Longer clips are refused with [`DecodeError::TooLong`] (decoding stops at the limit).
    pub max_duration: Duration,
    /// Shorter clips are refused as undecodable: nothing to transcribe, and the usual result of
    /// a truncated upload.
    pub min_duration: Duration,
}

impl Default for DecodeLimits {
    fn default() -> Self {
        DecodeLimits {
            max_duration: Duration::from_secs(15 * 60),
            min_duration: Duration::from_millis(100),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct DecodedAudio {
    /// Mono, 16 kHz, nominally in [-1, 1].
    pub samples_16k: Vec<f32>,
    /// Duration of the source audio (after encoder delay and padding are removed).
    pub duration_ms: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// Not audio we can decode; the reason is for logs, not for API clients.
    #[error("audio could not be decoded: {0}")]
    Undecodable(String),
    #[error("audio is longer than {max_seconds} seconds")]
    TooLong { max_seconds: u64 },
}

fn undecodable(reason: impl Into<String>) -> DecodeError {
    DecodeError::Undecodable(reason.into())
}

/// Corrupt packets tolerated before the error ratio is looked at.
const MAX_CORRUPT_PACKETS: u64 = 3;

/// Interleaved integer PCM, as the wav reader reports it.
const PCM_INTEGER: [CodecType; 14] = [
    CODEC_TYPE_PCM_S8,
    CODEC_TYPE_PCM_U8,
    CODEC_TYPE_PCM_S16LE,
    CODEC_TYPE_PCM_S16BE,
    CODEC_TYPE_PCM_U16LE,
    CODEC_TYPE_PCM_U16BE,
    CODEC_TYPE_PCM_S24LE,
    CODEC_TYPE_PCM_S24BE,
    CODEC_TYPE_PCM_U24LE,
    CODEC_TYPE_PCM_U24BE,
    CODEC_TYPE_PCM_S32LE,
    CODEC_TYPE_PCM_S32BE,
    CODEC_TYPE_PCM_U32LE,
    CODEC_TYPE_PCM_U32BE,
];

/// Most channels accepted (7.1 surround).
pub const MAX_CHANNELS: usize = 8;

/// Decode a clip (wav, mp3, flac, ogg vorbis/opus, webm/opus), downmix to mono and resample to
/// 16 kHz. Takes the upload by value: the demuxer reads it in place, without a copy. CPU-bound:
/// run it on a blocking thread.
pub fn decode_for_asr(bytes: Vec<u8>, limits: &DecodeLimits) -> Result<DecodedAudio, DecodeError> {
    // Third-party demuxers meet hostile input here; a panic in one is a bad file, not a crash.
    catch_unwind(AssertUnwindSafe(|| decode_inner(bytes, limits)))
        .unwrap_or_else(|_| Err(undecodable("decoder panicked")))
}

fn decode_inner(bytes: Vec<u8>, limits: &DecodeLimits) -> Result<DecodedAudio, DecodeError> {
    let input_len = bytes.len() as u64;
    check_wav_chunks(&bytes)?;
    check_flac_metadata(&bytes)?;
    super::matroska_guard::check(&bytes)?;
    super::ogg_guard::check(&bytes)?;
    let source = MediaSourceStream::new(Box::new(Cursor::new(bytes)), Default::default());
    let format_options = FormatOptions {
        enable_gapless: true,
        ..Default::default()
    };
    let mut reader = symphonia::default::get_probe()
        .format(
            &Hint::new(),
            source,
            &format_options,
            &MetadataOptions::default(),
        )
        .map_err(|e| undecodable(format!("unrecognised container: {e}")))?
        .format;

    let track = reader
        .tracks()
        .iter()
        .find(|t| t.codec_params.codec != CODEC_TYPE_NULL)
        .ok_or_else(|| undecodable("no audio track"))?;
    let track_id = track.id;
    let params = track.codec_params.clone();
    // Everything the header declares is checked before a decoder (whose buffers follow the
    // declared channel count and rate) or the resampler exists.
    let declared = check_declared(&params, input_len, limits)?;

    let mut decoder = if params.codec == CODEC_TYPE_OPUS {
        TrackDecoder::opus(&params)?
    } else {
        let codec = symphonia::default::get_codecs()
            .make(&params, &DecoderOptions::default())
            .map_err(|e| undecodable(format!("unsupported codec: {e}")))?;
        TrackDecoder::Symphonia { codec, buf: None }
    };

    let mut sink = Sink::new(limits, declared);
    let (mut packets, mut corrupt) = (0u64, 0u64);
    while let Some(packet) = next_packet(reader.as_mut(), sink.frames > 0)? {
        if packet.track_id() != track_id {
            continue;
        }
        packets += 1;
        if !decoder.decode(&packet, &mut sink)? {
            corrupt += 1;
            if corrupt > MAX_CORRUPT_PACKETS && corrupt * 10 > packets {
                return Err(undecodable(format!(
                    "{corrupt} of {packets} packets are corrupt"
                )));
            }
        }
    }
    let (samples_16k, frames, rate) = sink.finish()?;
    let duration = frames as f64 / f64::from(rate);

    if duration < limits.min_duration.as_secs_f64() {
        return Err(undecodable(format!(
            "only {duration:.3} s of audio decoded"
        )));
    }
    if let Some(declared) = declared {
        if duration < 0.9 * declared && declared - duration > 0.5 {
            return Err(undecodable(format!(
                "truncated: {duration:.2} s decoded of {declared:.2} s declared"
            )));
        }
        // FLAC's STREAMINFO counts every sample of the stream; more audio than that means the
        // header lies (encoders that do not know the count write 0, which declares nothing).
        if params.codec == CODEC_TYPE_FLAC && duration > 1.1 * declared && duration - declared > 0.5
        {
            return Err(undecodable(format!(
                "{duration:.2} s decoded, STREAMINFO declares {declared:.2} s"
            )));
        }
    }
    Ok(DecodedAudio {
        samples_16k,
        duration_ms: frames * 1000 / u64::from(rate),
    })
}

/// Refuse what the track's header declares and we will not handle, before anything is
/// allocated from it: sample rates outside 8–384 kHz, channel counts outside 1–8, a PCM data
/// size the upload cannot hold, or a length over the limit. Returns the declared length in
/// seconds when it is one to hold the decoded audio to (see the module docs).
fn check_declared(
    params: &CodecParameters,
    input_len: u64,
    limits: &DecodeLimits,
) -> Result<Option<f64>, DecodeError> {
    check_rate_and_channels(params.sample_rate, params.channels.map(|c| c.count()))?;
    let Some(mut declared) = declared_duration(params) else {
        return Ok(None);
    };
    if !declared.is_finite() || declared < 0.0 {
        return Err(undecodable("declared length is not a number"));
    }
    if let (Some(n_frames), Some(frame_bits)) = (params.n_frames, pcm_frame_bits(params)) {
        // Uncompressed audio: the declared size is exact, and must fit in the upload. The one
        // exception is the streaming placeholder (`0xFFFFFFFF` data bytes, written by ffmpeg to a
        // pipe), which declares nothing.
        let declared_bytes = u128::from(n_frames) * u128::from(frame_bits) / 8;
        let frame_bytes = u128::from(frame_bits.div_ceil(8));
        if declared_bytes + frame_bytes > u128::from(u32::MAX) {
            return Ok(None);
        }
        let held = u128::from(input_len);
        if declared_bytes > held {
            let missing = (declared_bytes - held) as f64 / declared_bytes as f64 * declared;
            if held * 10 < declared_bytes * 9 && missing > 0.5 {
                return Err(undecodable(format!(
                    "declares {declared_bytes} bytes of audio in a {held}-byte upload"
                )));
            }
            // A cut inside the last few frames: judge what decodes.
            declared = declared.min(held as f64 / declared_bytes as f64 * declared);
        }
    }
    if declared > limits.max_duration.as_secs_f64() {
        return Err(DecodeError::TooLong {
            max_seconds: limits.max_duration.as_secs(),
        });
    }
    Ok(Some(declared))
}

/// Read a wav's chunks in place before symphonia does: its reader panics on a zero sample rate
/// while probing (its time base divides by it), and allocates each LIST/INFO value's declared
/// length (up to 4 GiB, bounded only by the RIFF size the file declares) before reading it. So
/// the `fmt ` chunk gets the rate and channel checks here, and a chunk or INFO value longer than
/// the whole upload (which could never be read) is refused. The data chunk is left to the
/// checks after probing (its size may be the streaming placeholder).
fn check_wav_chunks(bytes: &[u8]) -> Result<(), DecodeError> {
    if bytes.len() < 12 || &bytes[..4] != b"RIFF" || &bytes[8..12] != b"WAVE" {
        return Ok(());
    }
    let longer_than_upload = || undecodable("wav: a chunk is longer than the upload");
    let u32_at = |at: usize| {
        bytes
            .get(at..at + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
    };
    let mut at = 12usize;
    while let (Some(id), Some(len)) = (bytes.get(at..at + 4), u32_at(at + 4)) {
        if id == b"data" {
            return Ok(());
        }
        if len > bytes.len() {
            return Err(longer_than_upload());
        }
        if id == b"fmt " {
            let (Some(fmt), true) = (bytes.get(at + 8..at + 16), len >= 16) else {
                return Err(undecodable("wav: fmt chunk cut short"));
            };
            let channels = u16::from_le_bytes([fmt[2], fmt[3]]);
            let rate = u32::from_le_bytes([fmt[4], fmt[5], fmt[6], fmt[7]]);
            check_rate_and_channels(Some(rate), Some(usize::from(channels)))?;
        }
        if id == b"LIST" && bytes.get(at + 8..at + 12) == Some(b"INFO") {
            let end = (at + 8 + len).min(bytes.len());
            let mut item = at + 12;
            while item + 8 <= end {
                let item_len = u32_at(item + 4).unwrap_or(0);
                if item_len > bytes.len() {
                    return Err(longer_than_upload());
                }
                item += 8 + item_len + (item_len & 1);
            }
        }
        at += 8 + len + (len & 1);
    }
    Ok(())
}

/// symphonia allocates the lengths that FLAC's VORBIS_COMMENT and PICTURE blocks declare
/// (32 bits each, up to 4 GiB) before reading them, and only then fails at the end of the
/// block. Lengths that cannot fit in their block are refused here instead: the file would be
/// refused anyway, after the allocation.
fn check_flac_metadata(bytes: &[u8]) -> Result<(), DecodeError> {
    const VORBIS_COMMENT: u8 = 4;
    const PICTURE: u8 = 6;
    if !bytes.starts_with(b"fLaC") {
        return Ok(());
    }
    let too_long = || undecodable("flac: a metadata field is longer than its block");
    let mut at = 4usize;
    while let Some(header) = bytes.get(at..at + 4) {
        let (last, kind) = (header[0] & 0x80 != 0, header[0] & 0x7f);
        let len =
            usize::from(header[1]) << 16 | usize::from(header[2]) << 8 | usize::from(header[3]);
        let start = at + 4;
        // What the block may hold: its declared length (symphonia reads no further).
        let block = &bytes[start.min(bytes.len())..(start + len).min(bytes.len())];
        let mut fields = BlockFields { block, at: 0, len };
        match kind {
            VORBIS_COMMENT => {
                let vendor = fields.u32_le()?;
                fields.skip(vendor).ok_or_else(too_long)?;
                let count = fields.u32_le()?;
                for _ in 0..count {
                    let comment = fields.u32_le()?;
                    fields.skip(comment).ok_or_else(too_long)?;
                }
            }
            PICTURE => {
                fields.u32_be()?; // picture type
                for _ in 0..2 {
                    // media type, description
                    let n = fields.u32_be()?;
                    fields.skip(n).ok_or_else(too_long)?;
                }
                for _ in 0..4 {
                    fields.u32_be()?; // width, height, depth, colours
                }
                let data = fields.u32_be()?;
                fields.skip(data).ok_or_else(too_long)?;
            }
            _ => {}
        }
        if last {
            break;
        }
        at = start + len;
    }
    Ok(())
}

/// Fields of one FLAC metadata block, bounded by its declared length.
struct BlockFields<'a> {
    /// The part of the block present in the upload.
    block: &'a [u8],
    at: usize,
    /// The declared block length.
    len: usize,
}

impl BlockFields<'_> {
    fn word(&mut self) -> Result<[u8; 4], DecodeError> {
        let word = self
            .block
            .get(self.at..self.at + 4)
            .filter(|_| self.at + 4 <= self.len)
            .ok_or_else(|| undecodable("flac: metadata block cut short"))?;
        self.at += 4;
        Ok([word[0], word[1], word[2], word[3]])
    }

    fn u32_le(&mut self) -> Result<u32, DecodeError> {
        self.word().map(u32::from_le_bytes)
    }

    fn u32_be(&mut self) -> Result<u32, DecodeError> {
        self.word().map(u32::from_be_bytes)
    }

    /// Skip `n` bytes; `None` if they go past the declared block length.
    fn skip(&mut self, n: u32) -> Option<()> {
        let end = self
            .at
            .checked_add(n as usize)
            .filter(|&end| end <= self.len)?;
        self.at = end;
        Some(())
    }
}

/// The checks on rate and channel count, for a header and for each decoded buffer.
fn check_rate_and_channels(rate: Option<u32>, channels: Option<usize>) -> Result<(), DecodeError> {
    if let Some(rate) = rate
        && !supported_rate(rate)
    {
        return Err(undecodable(format!(
            "sample rate {rate} Hz is outside {MIN_SAMPLE_RATE}-{MAX_SAMPLE_RATE} Hz"
        )));
    }
    if let Some(channels) = channels
        && !(1..=MAX_CHANNELS).contains(&channels)
    {
        return Err(undecodable(format!(
            "{channels} channels (1 to {MAX_CHANNELS} are accepted)"
        )));
    }
    Ok(())
}

/// Bits in one frame of uncompressed (PCM, float, A-law, µ-law) audio; `None` for codecs.
fn pcm_frame_bits(params: &CodecParameters) -> Option<u64> {
    let codec = params.codec;
    let sample_bits = if PCM_INTEGER.contains(&codec) {
        // Integer PCM names its width; without it, nothing is checked.
        u64::from(params.bits_per_coded_sample?)
    } else if [CODEC_TYPE_PCM_ALAW, CODEC_TYPE_PCM_MULAW].contains(&codec) {
        8
    } else if [CODEC_TYPE_PCM_F32LE, CODEC_TYPE_PCM_F32BE].contains(&codec) {
        32
    } else if [CODEC_TYPE_PCM_F64LE, CODEC_TYPE_PCM_F64BE].contains(&codec) {
        64
    } else {
        return None;
    };
    let channels = params.channels.map(|c| c.count())?;
    Some(sample_bits * channels as u64)
}

/// The next packet, or `None` at the end of the stream. A damaged or cut-off container after
/// some audio ends the stream (the truncation check judges what was decoded).
fn next_packet(
    reader: &mut dyn FormatReader,
    have_audio: bool,
) -> Result<Option<Packet>, DecodeError> {
    match reader.next_packet() {
        Ok(packet) => Ok(Some(packet)),
        Err(SymphoniaError::IoError(_)) | Err(SymphoniaError::ResetRequired) => Ok(None),
        Err(SymphoniaError::DecodeError(_)) if have_audio => Ok(None),
        Err(e) => Err(undecodable(format!("demuxer: {e}"))),
    }
}

/// Length the container declares, in seconds.
fn declared_duration(params: &CodecParameters) -> Option<f64> {
    let n = params.n_frames?;
    if let Some(tb) = params.time_base {
        let t = tb.calc_time(n);
        return Some(t.seconds as f64 + t.frac);
    }
    params.sample_rate.map(|rate| n as f64 / f64::from(rate))
}

enum TrackDecoder {
    Symphonia {
        codec: Box<dyn symphonia::core::codecs::Decoder>,
        buf: Option<SampleBuffer<f32>>,
    },
    Opus {
        decoder: opus::Decoder,
        channels: usize,
        /// 48 kHz samples still to drop from the start (OpusHead pre-skip).
        skip: usize,
        pcm: Vec<f32>,
    },
}

/// Longest Opus packet: 120 ms at 48 kHz.
const OPUS_MAX_FRAMES: usize = 5760;

impl TrackDecoder {
    fn opus(params: &CodecParameters) -> Result<Self, DecodeError> {
        let head = params.extra_data.as_deref().unwrap_or_default();
        let channels = match head.get(9) {
            Some(&c) if head.starts_with(b"OpusHead") => usize::from(c),
            _ => params.channels.map_or(1, |c| c.count()),
        };
        let mode = match channels {
            1 => opus::Channels::Mono,
            2 => opus::Channels::Stereo,
            n => {
                return Err(undecodable(format!(
                    "opus with {n} channels is not supported"
                )));
            }
        };
        // Ogg's reader reports pre-skip as the codec delay; WebM keeps it in the OpusHead only.
        let skip = params
            .delay
            .map(|d| d as usize)
            .or_else(|| opus_head_pre_skip(head).map(usize::from))
            .unwrap_or(0);
        let decoder =
            opus::Decoder::new(48_000, mode).map_err(|e| undecodable(format!("opus: {e}")))?;
        Ok(TrackDecoder::Opus {
            decoder,
            channels,
            skip,
            pcm: vec![0.0; OPUS_MAX_FRAMES * channels],
        })
    }

    /// Decode one packet into `sink`. `Ok(false)`: the packet was corrupt and skipped.
    fn decode(&mut self, packet: &Packet, sink: &mut Sink) -> Result<bool, DecodeError> {
        match self {
            TrackDecoder::Symphonia { codec, buf } => {
                let decoded = match codec.decode(packet) {
                    Ok(decoded) => decoded,
                    Err(SymphoniaError::DecodeError(_)) | Err(SymphoniaError::IoError(_)) => {
                        return Ok(false);
                    }
                    Err(e) => return Err(undecodable(format!("decoder: {e}"))),
                };
                let spec = *decoded.spec();
                // Decoders take rate and layout from the stream (a FLAC or MP3 frame header),
                // which need not agree with the container's header checked before.
                check_rate_and_channels(Some(spec.rate), Some(spec.channels.count()))?;
                let frames = decoded.frames();
                if frames == 0 {
                    return Ok(true);
                }
                let needed = frames * spec.channels.count();
                let buf = match buf {
                    Some(b) if b.capacity() >= needed => b,
                    _ => buf.insert(SampleBuffer::new(frames as u64, spec)),
                };
                buf.copy_interleaved_ref(decoded);
                sink.push(buf.samples(), spec.channels.count(), spec.rate)
            }
            TrackDecoder::Opus {
                decoder,
                channels,
                skip,
                pcm,
            } => {
                let frames = match decoder.decode_float(&packet.data, pcm, false) {
                    Ok(n) => n,
                    Err(_) => return Ok(false),
                };
                // Container trimming (end padding), then the stream's pre-skip.
                let start = (packet.trim_start() as usize).min(frames);
                let end = frames.saturating_sub(packet.trim_end() as usize).max(start);
                let dropped = (*skip).min(end - start);
                *skip -= dropped;
                let ch = *channels;
                sink.push(&pcm[(start + dropped) * ch..end * ch], ch, 48_000)
            }
        }
    }
}

/// Downmixes, counts source frames against the limit and streams into the resampler.
struct Sink {
    max_duration: Duration,
    rate: u32,
    max_frames: u64,
    frames: u64,
    mono: Vec<f32>,
    resampler: Option<Resampler>,
    out: Vec<f32>,
}

impl Sink {
    /// `declared`: the length the container declares, in seconds, already held to the limit;
    /// the output is reserved for it (plus a little for a resampler tail) so a clip of known
    /// length is decoded without reallocating.
    fn new(limits: &DecodeLimits, declared: Option<f64>) -> Self {
        let max = limits.max_duration.as_secs_f64();
        let reserve = declared.map_or(0, |d| {
            (d.min(max) * f64::from(ASR_SAMPLE_RATE)) as usize + ASR_SAMPLE_RATE as usize / 10
        });
        Sink {
            max_duration: limits.max_duration,
            rate: 0,
            max_frames: 0,
            frames: 0,
            mono: Vec::new(),
            resampler: None,
            out: Vec::with_capacity(reserve),
        }
    }

    /// `Ok(false)` when the packet does not fit the stream (a sample-rate change mid-stream is
    /// treated as a corrupt packet: real files do not do it, misdetected garbage does).
    fn push(
        &mut self,
        interleaved: &[f32],
        channels: usize,
        rate: u32,
    ) -> Result<bool, DecodeError> {
        check_rate_and_channels(Some(rate), Some(channels))?;
        if self.resampler.is_none() {
            self.rate = rate;
            self.max_frames = (self.max_duration.as_secs_f64() * f64::from(rate)) as u64;
            self.resampler = Some(
                Resampler::new(rate, ASR_SAMPLE_RATE).map_err(|e| undecodable(e.to_string()))?,
            );
        } else if rate != self.rate {
            return Ok(false);
        }
        self.mono.clear();
        self.mono
            .extend(interleaved.chunks_exact(channels).map(|frame| {
                let sum: f32 = frame.iter().sum();
                // Non-finite samples only come from broken streams; keep them out of the model.
                let v = sum / channels as f32;
                if v.is_finite() { v } else { 0.0 }
            }));
        self.frames += self.mono.len() as u64;
        if self.frames > self.max_frames {
            return Err(DecodeError::TooLong {
                max_seconds: self.max_duration.as_secs(),
            });
        }
        if let Some(r) = self.resampler.as_mut() {
            r.push(&self.mono, &mut self.out);
        }
        Ok(true)
    }

    /// Samples at 16 kHz, source frames, source rate.
    fn finish(mut self) -> Result<(Vec<f32>, u64, u32), DecodeError> {
        let mut resampler = self
            .resampler
            .take()
            .ok_or_else(|| undecodable("no audio decoded"))?;
        resampler.finish(&mut self.out);
        Ok((self.out, self.frames, self.rate))
    }
}
