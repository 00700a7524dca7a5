//! Audio as a live session receives it, a message at a time: 16-bit little-endian PCM, G.711
//! μ-law or A-law, mono, at the rate the client named, or Opus in Ogg or WebM (the container says
//! its rate; [`super::live_container`]), turned into the 16 kHz `f32` the voice activity
//! detector and the recogniser take. Resampled once, as it arrives (the converter keeps only its
//! filter's history); a sample split across two messages is carried to the next.

use super::ASR_SAMPLE_RATE;
pub use super::live_container::ContainerError;
use super::live_container::{OPUS_RATE, OpusContainer};
use super::resample::{Resampler, UnsupportedRate};

/// How the client's bytes encode its samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LiveEncoding {
    /// 16-bit signed little-endian PCM.
    Linear16,
    /// G.711 μ-law, one byte a sample.
    Mulaw,
    /// Opus in Ogg or WebM, told apart by the first bytes; the named rate is not used.
    Container,
    /// G.711 A-law, one byte a sample.
    Alaw,
}

/// One session's decoder: bytes in, 16 kHz mono samples out.
pub struct LiveDecoder {
    encoding: LiveEncoding,
    /// The first byte of a 16-bit sample whose second byte is in the next message.
    carry: Option<u8>,
    resampler: Resampler,
    scratch: Vec<f32>,
    container: Option<Box<OpusContainer>>,
}

impl LiveDecoder {
    /// A decoder for `encoding` at `sample_rate` (8–384 kHz; a container's own rate wins).
    pub fn new(encoding: LiveEncoding, sample_rate: u32) -> Result<Self, UnsupportedRate> {
        let (rate, container) = match encoding {
            LiveEncoding::Container => (OPUS_RATE, Some(Box::new(OpusContainer::new()))),
            _ => (sample_rate, None),
        };
        Ok(Self {
            encoding,
            carry: None,
            resampler: Resampler::new(rate, ASR_SAMPLE_RATE)?,
            scratch: Vec::new(),
            container,
        })
    }

    /// Appends what `bytes` hold, at 16 kHz, to `out`. Only a container can be malformed.
    pub fn push(&mut self, bytes: &[u8], out: &mut Vec<f32>) -> Result<(), ContainerError> {
        self.scratch.clear();
        match self.encoding {
            LiveEncoding::Container => {
                let container = self.container.as_mut().expect("made with the encoding");
                container.push(bytes, &mut self.scratch)?;
            }
            LiveEncoding::Mulaw => self
                .scratch
                .extend(bytes.iter().map(|&b| f32::from(mulaw(b)) / 32768.0)),
            LiveEncoding::Alaw => self
                .scratch
                .extend(bytes.iter().map(|&b| f32::from(alaw(b)) / 32768.0)),
            LiveEncoding::Linear16 => {
                let mut rest = bytes;
                if let Some(first) = self.carry
                    && let Some((&second, tail)) = rest.split_first()
                {
                    self.scratch
                        .push(f32::from(i16::from_le_bytes([first, second])) / 32768.0);
                    self.carry = None;
                    rest = tail;
                }
                let pairs = rest.chunks_exact(2);
                if let [odd] = pairs.remainder() {
                    self.carry = Some(*odd);
                }
                self.scratch
                    .extend(pairs.map(|p| f32::from(i16::from_le_bytes([p[0], p[1]])) / 32768.0));
            }
        }
        self.resampler.push(&self.scratch, out);
        Ok(())
    }

    /// The converter's tail (its filter's delay), at the end of the stream.
    pub fn finish(&mut self, out: &mut Vec<f32>) {
        self.resampler.finish(out);
    }
}

/// G.711 μ-law → 16-bit linear.
fn mulaw(byte: u8) -> i16 {
    let u = !byte;
    let exponent = i32::from((u >> 4) & 0x07);
    let mantissa = i32::from(u & 0x0f);
    let magnitude = (((mantissa << 3) + 0x84) << exponent) - 0x84;
    let value = if u & 0x80 != 0 { -magnitude } else { magnitude };
    value as i16
}

/// G.711 A-law → 16-bit linear (the even bits are inverted on the wire).
fn alaw(byte: u8) -> i16 {
    let a = byte ^ 0x55;
    let exponent = i32::from((a >> 4) & 0x07);
    let mantissa = i32::from(a & 0x0f);
    let magnitude = match exponent {
        0 => (mantissa << 4) + 8,
        e => ((mantissa << 4) + 0x108) << (e - 1),
    };
    let value = if a & 0x80 != 0 { magnitude } else { -magnitude };
    value as i16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mulaw_decodes_the_g711_table() {
        // ITU-T G.711: 0xFF and 0x7F are the two zeros, 0x80 and 0x00 the extremes.
        assert_eq!(mulaw(0xFF), 0);
        assert_eq!(mulaw(0x7F), 0);
        assert_eq!(mulaw(0x80), 32124);
        assert_eq!(mulaw(0x00), -32124);
        assert_eq!(mulaw(0xF0), 120);
    }

    #[test]
    fn alaw_decodes_the_g711_table() {
        // ITU-T G.711 A-law: 0xD5 and 0x55 are the smallest steps (±8), 0xAA and 0x2A the
        // extremes (±32256); the sign bit set is positive.
        assert_eq!(alaw(0xD5), 8);
        assert_eq!(alaw(0x55), -8);
        assert_eq!(alaw(0xAA), 32256);
        assert_eq!(alaw(0x2A), -32256);
        // Segment 1, mantissa 0: 0x80|0x10 inverted = 0xC5 → 264.
        assert_eq!(alaw(0xC5), 264);
        // Monotonic over the positive half, as decoded: every code a distinct level.
        let mut levels: Vec<i16> = (0u8..=255)
            .filter(|b| (b ^ 0x55) & 0x80 != 0)
            .map(alaw)
            .collect();
        levels.sort_unstable();
        levels.dedup();
        assert_eq!(levels.len(), 128);
    }

    #[test]
    fn alaw_at_eight_kilohertz_becomes_sixteen_and_keeps_a_tone() {
        // A 440 Hz tone encoded to A-law by the inverse of the table, decoded back.
        let encode = |x: i16| -> u8 {
            (0u8..=255)
                .min_by_key(|&b| (i32::from(alaw(b)) - i32::from(x)).abs())
                .unwrap()
        };
        let tone: Vec<u8> = (0..8_000)
            .map(|n| {
                let t = f64::from(n) / 8_000.0;
                encode((16_000.0 * (2.0 * std::f64::consts::PI * 440.0 * t).sin()) as i16)
            })
            .collect();
        let mut decoder = LiveDecoder::new(LiveEncoding::Alaw, 8_000).unwrap();
        let mut out = Vec::new();
        decoder.push(&tone, &mut out).unwrap();
        decoder.finish(&mut out);
        assert_eq!(out.len(), 16_000);
        let peak = out.iter().fold(0f32, |m, s| m.max(s.abs()));
        assert!((peak - 16_000.0 / 32768.0).abs() < 0.03, "{peak}");
    }

    #[test]
    fn a_sample_split_across_messages_is_carried() {
        let samples: Vec<i16> = (0..100).map(|i| (i * 300 - 15_000) as i16).collect();
        let bytes: Vec<u8> = samples.iter().flat_map(|s| s.to_le_bytes()).collect();
        let mut whole = Vec::new();
        LiveDecoder::new(LiveEncoding::Linear16, 16_000)
            .unwrap()
            .push(&bytes, &mut whole)
            .unwrap();
        let mut split = Vec::new();
        let mut decoder = LiveDecoder::new(LiveEncoding::Linear16, 16_000).unwrap();
        for piece in bytes.chunks(7) {
            decoder.push(piece, &mut split).unwrap();
        }
        assert_eq!(whole.len(), 100);
        assert_eq!(whole, split);
        assert!((whole[0] - (-15_000.0 / 32768.0)).abs() < 1e-6);
    }

    #[test]
    fn eight_kilohertz_becomes_sixteen() {
        let mut decoder = LiveDecoder::new(LiveEncoding::Mulaw, 8_000).unwrap();
        let mut out = Vec::new();
        decoder.push(&[0xFF; 8_000], &mut out).unwrap();
        decoder.finish(&mut out);
        assert_eq!(out.len(), 16_000);
        assert!(out.iter().all(|s| s.abs() < 1e-6));
    }
}
