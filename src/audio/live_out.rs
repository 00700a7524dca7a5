//! Generated speech in the raw formats the speech sockets and their REST twins deliver
//! (ElevenLabs' `output_format`: `pcm_<rate>`, `ulaw_8000`, `mp3_<rate>_<kbps>`; Cartesia's
//! raw `pcm_s16le`, `pcm_f32le`, `pcm_mulaw`), made from the
//! 16-bit wav a generation renders: the header is read for the engine's rate, the samples are
//! resampled once as they arrive (the converter keeps only its filter's history) and encoded.
//! Bytes may come split anywhere (a stored file read in blob-sized pieces): a header or a
//! sample cut in two waits for the rest.

use mp3lame_encoder::{Bitrate, Encoder};

use super::encode::{EncodeError, mp3_encoder_at, mp3_flush, mp3_frames, pcm16, sanitize};
use super::resample::Resampler;

/// How the delivered samples are encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputEncoding {
    /// Raw 16-bit little-endian mono PCM, no header.
    Pcm16,
    /// Raw 32-bit float little-endian mono PCM in [-1, 1], no header (Cartesia's `pcm_f32le`).
    PcmF32,
    /// Raw G.711 μ-law, one byte a sample.
    Mulaw,
    /// Constant-bit-rate mono mp3 frames at this many kbit/s.
    Mp3 { kbps: u32 },
}

/// An encoding at a sample rate, as delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputFormat {
    pub encoding: OutputEncoding,
    pub sample_rate: u32,
}

const PCM_RATES: [u32; 6] = [8_000, 16_000, 22_050, 24_000, 44_100, 48_000];
const MP3_RATES: [u32; 3] = [22_050, 44_100, 48_000];
const MP3_KBPS: [u32; 5] = [32, 64, 96, 128, 192];

impl OutputFormat {
    /// The formats offered: PCM at 8, 16, 22.05, 24, 44.1 and 48 kHz; μ-law at 8 kHz; mp3 at
    /// 22.05, 44.1 or 48 kHz and 32, 64, 96, 128 or 192 kbit/s. `None` for anything else.
    pub fn new(encoding: OutputEncoding, sample_rate: u32) -> Option<Self> {
        let offered = match encoding {
            OutputEncoding::Pcm16 | OutputEncoding::PcmF32 => PCM_RATES.contains(&sample_rate),
            OutputEncoding::Mulaw => sample_rate == 8_000,
            OutputEncoding::Mp3 { kbps } => {
                MP3_RATES.contains(&sample_rate) && MP3_KBPS.contains(&kbps)
            }
        };
        offered.then_some(Self {
            encoding,
            sample_rate,
        })
    }

    pub fn content_type(self) -> &'static str {
        match self.encoding {
            OutputEncoding::Pcm16 | OutputEncoding::PcmF32 => "audio/pcm",
            OutputEncoding::Mulaw => "audio/basic",
            OutputEncoding::Mp3 { .. } => "audio/mpeg",
        }
    }
}

/// Length of the canonical wav header a generation's audio starts with.
const WAV_HEADER: usize = 44;

/// One generation's wav bytes in, the output format's bytes out.
pub struct WavTranscoder {
    format: OutputFormat,
    /// Header bytes until all 44 have come.
    header: Vec<u8>,
    stage: Option<Stage>,
    /// The first byte of a sample whose second byte is in the next push.
    carry: Option<u8>,
    /// Output samples produced so far.
    emitted: u64,
    scratch: Vec<f32>,
    resampled: Vec<f32>,
}

struct Stage {
    resampler: Resampler,
    mp3: Option<Box<Encoder>>,
}

impl WavTranscoder {
    pub fn new(format: OutputFormat) -> Self {
        Self {
            format,
            header: Vec::with_capacity(WAV_HEADER),
            stage: None,
            carry: None,
            emitted: 0,
            scratch: Vec::new(),
            resampled: Vec::new(),
        }
    }

    /// Milliseconds of output audio produced so far (where the next bytes start).
    pub fn emitted_ms(&self) -> f64 {
        self.emitted as f64 * 1000.0 / f64::from(self.format.sample_rate)
    }

    /// The output of the next `bytes` of the wav (possibly nothing yet).
    pub fn push(&mut self, mut bytes: &[u8]) -> Result<Vec<u8>, EncodeError> {
        if self.stage.is_none() {
            let wanted = WAV_HEADER - self.header.len();
            let (head, rest) = bytes.split_at(wanted.min(bytes.len()));
            self.header.extend_from_slice(head);
            bytes = rest;
            if self.header.len() < WAV_HEADER {
                return Ok(Vec::new());
            }
            self.stage = Some(self.start()?);
        }
        self.scratch.clear();
        if let Some(first) = self.carry.take() {
            match bytes.split_first() {
                Some((&second, tail)) => {
                    self.scratch.push(sample([first, second]));
                    bytes = tail;
                }
                None => {
                    self.carry = Some(first);
                    return Ok(Vec::new());
                }
            }
        }
        let pairs = bytes.chunks_exact(2);
        if let [odd] = pairs.remainder() {
            self.carry = Some(*odd);
        }
        self.scratch.extend(pairs.map(|p| sample([p[0], p[1]])));
        let samples = std::mem::take(&mut self.scratch);
        let out = self.convert(&samples, false);
        self.scratch = samples;
        out
    }

    /// The rest: the converter's tail and the frames the mp3 encoder holds.
    pub fn finish(&mut self) -> Result<Vec<u8>, EncodeError> {
        if self.stage.is_none() {
            return Ok(Vec::new());
        }
        self.convert(&[], true)
    }

    fn start(&self) -> Result<Stage, EncodeError> {
        let rate = u32::from_le_bytes([
            self.header[24],
            self.header[25],
            self.header[26],
            self.header[27],
        ]);
        let resampler = Resampler::new(rate, self.format.sample_rate)
            .map_err(|e| EncodeError::UnsupportedSampleRate(e.0))?;
        let mp3 = match self.format.encoding {
            OutputEncoding::Mp3 { kbps } => Some(Box::new(mp3_encoder_at(
                self.format.sample_rate,
                false,
                bitrate(kbps),
            )?)),
            _ => None,
        };
        Ok(Stage { resampler, mp3 })
    }

    fn convert(&mut self, samples: &[f32], last: bool) -> Result<Vec<u8>, EncodeError> {
        let Some(stage) = self.stage.as_mut() else {
            return Ok(Vec::new());
        };
        self.resampled.clear();
        stage.resampler.push(samples, &mut self.resampled);
        if last {
            stage.resampler.finish(&mut self.resampled);
        }
        self.emitted += self.resampled.len() as u64;
        let mut out = Vec::new();
        match (&mut stage.mp3, self.format.encoding) {
            (Some(encoder), _) => {
                mp3_frames(encoder, &self.resampled, &mut out)?;
                if last {
                    mp3_flush(encoder, &mut out)?;
                }
            }
            (None, OutputEncoding::Mulaw) => {
                out.extend(self.resampled.iter().map(|&s| mulaw(sanitize(s))));
            }
            (None, OutputEncoding::PcmF32) => {
                out.extend(
                    self.resampled
                        .iter()
                        .flat_map(|&s| sanitize(s).to_le_bytes()),
                );
            }
            (None, _) => pcm16(&mut out, &self.resampled),
        }
        Ok(out)
    }
}

fn sample(bytes: [u8; 2]) -> f32 {
    f32::from(i16::from_le_bytes(bytes)) / 32768.0
}

fn bitrate(kbps: u32) -> Bitrate {
    match kbps {
        32 => Bitrate::Kbps32,
        96 => Bitrate::Kbps96,
        128 => Bitrate::Kbps128,
        192 => Bitrate::Kbps192,
        _ => Bitrate::Kbps64,
    }
}

/// 16-bit linear → G.711 μ-law (the segment search of the ITU-T reference).
fn mulaw(s: f32) -> u8 {
    const BIAS: i32 = 0x84;
    const CLIP: i32 = 32_635;
    let value = (s * 32767.0).round() as i32;
    let sign = if value < 0 { 0x80 } else { 0 };
    let magnitude = value.abs().min(CLIP) + BIAS;
    let exponent = (0..8)
        .rev()
        .find(|e| magnitude & (0x80 << e) != 0)
        .unwrap_or(0);
    let mantissa = (magnitude >> (exponent + 3)) & 0x0f;
    !(sign | (exponent << 4) as u8 | mantissa as u8)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audio::{AudioFormat, encode};

    fn tone(rate: u32, secs: f32) -> Vec<f32> {
        (0..(rate as f32 * secs) as usize)
            .map(|i| 0.5 * (i as f32 * 440.0 * std::f32::consts::TAU / rate as f32).sin())
            .collect()
    }

    #[test]
    fn offered_formats() {
        assert!(OutputFormat::new(OutputEncoding::Pcm16, 22_050).is_some());
        assert!(OutputFormat::new(OutputEncoding::Pcm16, 11_025).is_none());
        assert!(OutputFormat::new(OutputEncoding::Mulaw, 16_000).is_none());
        assert!(OutputFormat::new(OutputEncoding::Mp3 { kbps: 32 }, 22_050).is_some());
        assert!(OutputFormat::new(OutputEncoding::Mp3 { kbps: 48 }, 22_050).is_none());
    }

    #[test]
    fn a_wav_split_anywhere_becomes_the_same_pcm_at_the_asked_rate() {
        let wav = encode(&tone(24_000, 1.0), 24_000, AudioFormat::Wav).unwrap();
        let format = OutputFormat::new(OutputEncoding::Pcm16, 16_000).unwrap();
        let mut whole = WavTranscoder::new(format);
        let mut one = whole.push(&wav).unwrap();
        one.extend(whole.finish().unwrap());
        let mut split = WavTranscoder::new(format);
        let mut pieces = Vec::new();
        for piece in wav.chunks(7) {
            pieces.extend(split.push(piece).unwrap());
        }
        pieces.extend(split.finish().unwrap());
        assert_eq!(one, pieces);
        assert_eq!(one.len(), 16_000 * 2);
        assert!((split.emitted_ms() - 1000.0).abs() < 1.0);
    }

    #[test]
    fn mulaw_and_mp3_are_made() {
        let wav = encode(&tone(24_000, 0.5), 24_000, AudioFormat::Wav).unwrap();
        let mut ulaw = WavTranscoder::new(OutputFormat::new(OutputEncoding::Mulaw, 8_000).unwrap());
        let mut bytes = ulaw.push(&wav).unwrap();
        bytes.extend(ulaw.finish().unwrap());
        assert_eq!(bytes.len(), 4_000);
        assert_eq!(mulaw(0.0), 0xFF);
        let mut mp3 = WavTranscoder::new(
            OutputFormat::new(OutputEncoding::Mp3 { kbps: 32 }, 22_050).unwrap(),
        );
        let mut bytes = mp3.push(&wav).unwrap();
        bytes.extend(mp3.finish().unwrap());
        // A frame sync at the start; 32 kbit/s for half a second is about 2 kB.
        assert_eq!(bytes[0], 0xFF);
        assert!((1_000..4_000).contains(&bytes.len()), "{}", bytes.len());
    }

    #[test]
    fn float_pcm_is_the_same_signal_as_16_bit() {
        let wav = encode(&tone(24_000, 0.5), 24_000, AudioFormat::Wav).unwrap();
        let run = |encoding| {
            let mut out = WavTranscoder::new(OutputFormat::new(encoding, 16_000).unwrap());
            let mut bytes = out.push(&wav).unwrap();
            bytes.extend(out.finish().unwrap());
            bytes
        };
        let (int, float) = (run(OutputEncoding::Pcm16), run(OutputEncoding::PcmF32));
        assert_eq!(float.len(), int.len() * 2);
        for (i, f) in int.chunks_exact(2).zip(float.chunks_exact(4)) {
            let i = f32::from(i16::from_le_bytes([i[0], i[1]])) / 32768.0;
            let f = f32::from_le_bytes([f[0], f[1], f[2], f[3]]);
            assert!((-1.0..=1.0).contains(&f) && (i - f).abs() < 1e-3, "{i} {f}");
        }
    }
}
