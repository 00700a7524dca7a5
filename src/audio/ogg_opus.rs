//! Ogg Opus (RFC 7845) writer: libopus for the packets, a small Ogg page writer (RFC 3533) of
//! our own so every byte, the stream serial included, is a function of the input samples.

use opus::{Application, Bitrate, Channels, Signal};

use super::encode::EncodeError;
use super::resample::resample;

/// Input rates libopus accepts; anything else is resampled to 48 kHz first.
const OPUS_RATES: [u32; 5] = [8_000, 12_000, 16_000, 24_000, 48_000];
/// Ogg Opus granule positions always count 48 kHz samples.
const GRANULE_RATE: u32 = 48_000;
/// 20 ms frames: the usual speech/music trade-off between latency and overhead.
const FRAME_MS: u32 = 20;
/// Mono speech is transparent well below this; 32 kbit/s VBR ≈ 4 kB per second.
const BITRATE_BPS: i32 = 32_000;
/// About one second of audio per page keeps the container overhead near 1 %.
const PACKETS_PER_PAGE: usize = 50;
/// Recommended maximum packet size for `opus_encode`.
const MAX_PACKET: usize = 4000;
const VENDOR: &[u8] = b"voiced";

pub(crate) fn encode(samples: &[f32], sample_rate: u32) -> Result<Vec<u8>, EncodeError> {
    if !OPUS_RATES.contains(&sample_rate) {
        let upsampled = resample(samples, sample_rate, GRANULE_RATE)
            .map_err(|e| EncodeError::UnsupportedSampleRate(e.0))?;
        return OpusStream::new(GRANULE_RATE, sample_rate)?.push(&upsampled, true);
    }
    OpusStream::new(sample_rate, sample_rate)?.push(samples, true)
}

/// Whether libopus takes `rate` as it is (others are resampled to 48 kHz first).
pub(crate) fn is_opus_rate(rate: u32) -> bool {
    OPUS_RATES.contains(&rate)
}

/// One Ogg Opus stream written piece by piece: [`OpusStream::push`] returns the pages completed
/// by the samples it is given, so that they can be sent while the rest is being produced. Every
/// push but the last ends the page in progress, so each push's bytes are whole pages; the last
/// push pads the encoder's delay and marks the end of the stream. One push of everything gives
/// exactly the pages of the one-shot [`encode`].
pub(crate) struct OpusStream {
    encoder: opus::Encoder,
    /// Opened on the first push: the serial is a hash of the first samples.
    ogg: Option<OggWriter>,
    /// Rate of the samples pushed (one libopus accepts); `input_rate` is recorded in OpusHead.
    rate: u32,
    input_rate: u32,
    /// 48 kHz granule units per input sample.
    scale: u64,
    frame: usize,
    lookahead: usize,
    pre_skip: u16,
    /// Samples pushed that do not fill a whole frame yet.
    pending: Vec<f32>,
    /// Packets of the page in progress.
    page: Vec<Vec<u8>>,
    /// Packets encoded so far.
    packets: u64,
    /// Samples pushed so far.
    samples: u64,
    finished: bool,
}

impl OpusStream {
    /// A stream of samples at `rate` (one of [`OPUS_RATES`]).
    pub(crate) fn new(rate: u32, input_rate: u32) -> Result<Self, EncodeError> {
        let mut encoder = opus::Encoder::new(rate, Channels::Mono, Application::Audio)?;
        encoder.set_bitrate(Bitrate::Bits(BITRATE_BPS))?;
        encoder.set_signal(Signal::Voice)?;
        encoder.set_complexity(10)?;
        let scale = u64::from(GRANULE_RATE / rate);
        let lookahead = encoder.get_lookahead()? as usize;
        let pre_skip = u16::try_from(lookahead as u64 * scale)
            .map_err(|_| EncodeError::UnsupportedSampleRate(rate))?;
        Ok(Self {
            encoder,
            ogg: None,
            rate,
            input_rate,
            scale,
            frame: (rate * FRAME_MS / 1000) as usize,
            lookahead,
            pre_skip,
            pending: Vec::new(),
            page: Vec::with_capacity(PACKETS_PER_PAGE),
            packets: 0,
            samples: 0,
            finished: false,
        })
    }

    /// Encodes `samples` (at the stream's rate) and returns the pages they complete; `last`
    /// ends the stream (nothing may be pushed after it).
    pub(crate) fn push(&mut self, samples: &[f32], last: bool) -> Result<Vec<u8>, EncodeError> {
        assert!(!self.finished, "push after the last one");
        let ogg = self.ogg.get_or_insert_with(|| {
            let mut ogg = OggWriter::new(serial_for(samples, self.rate));
            ogg.write_page(
                &[opus_head(self.pre_skip, self.input_rate)],
                0,
                PageKind::First,
            );
            ogg.write_page(&[opus_tags()], 0, PageKind::Middle);
            ogg
        });
        self.samples += samples.len() as u64;
        self.pending.extend_from_slice(samples);
        // How many packets the stream has once this push is encoded: whole frames only, except
        // at the end, where `lookahead` extra zeros flush the encoder's delay line and the tail
        // is padded to a whole frame.
        let total = if last {
            (self.samples as usize + self.lookahead)
                .div_ceil(self.frame)
                .max(1) as u64
        } else {
            self.packets + (self.pending.len() / self.frame) as u64
        };
        if last {
            let needed = (total - self.packets) as usize * self.frame;
            self.pending.resize(needed, 0.0);
        }
        let frame = self.frame;
        let mut packet = vec![0u8; MAX_PACKET];
        let mut used = 0;
        while self.packets < total {
            let pcm = &self.pending[used..used + frame];
            used += frame;
            let len = self.encoder.encode_float(pcm, &mut packet)?;
            let i = self.packets;
            // A page holds at most 255 lacing values; close it before a packet would overflow it.
            if lacing_len(&self.page) + len / 255 + 1 > 255 {
                ogg.write_page(&self.page, i * frame as u64 * self.scale, PageKind::Middle);
                self.page.clear();
            }
            self.page.push(packet[..len].to_vec());
            self.packets += 1;
            if last && self.packets == total {
                // Granule of the last page: pre-skip plus exactly the input, so players trim
                // the padding.
                let end_granule = u64::from(self.pre_skip) + self.samples * self.scale;
                ogg.write_page(&self.page, end_granule, PageKind::Last);
                self.page.clear();
            } else if self.page.len() == PACKETS_PER_PAGE {
                let granule = self.packets * frame as u64 * self.scale;
                ogg.write_page(&self.page, granule, PageKind::Middle);
                self.page.clear();
            }
        }
        self.pending.drain(..used);
        if !last && !self.page.is_empty() {
            // Send what this push completed now rather than when the page fills up.
            let granule = self.packets * frame as u64 * self.scale;
            ogg.write_page(&self.page, granule, PageKind::Middle);
            self.page.clear();
        }
        self.finished = last;
        Ok(std::mem::take(&mut ogg.out))
    }
}

/// RFC 7845 §5.1 identification header, channel mapping family 0 (mono).
fn opus_head(pre_skip: u16, input_rate: u32) -> Vec<u8> {
    let mut h = Vec::with_capacity(19);
    h.extend_from_slice(b"OpusHead");
    h.push(1); // version
    h.push(1); // channels
    h.extend_from_slice(&pre_skip.to_le_bytes());
    h.extend_from_slice(&input_rate.to_le_bytes());
    h.extend_from_slice(&0i16.to_le_bytes()); // output gain
    h.push(0); // mapping family
    h
}

/// RFC 7845 §5.2 comment header: a fixed vendor string (not libopus's version, which would
/// change the bytes on an upgrade) and no comments.
fn opus_tags() -> Vec<u8> {
    let mut t = Vec::with_capacity(16 + VENDOR.len());
    t.extend_from_slice(b"OpusTags");
    t.extend_from_slice(&(VENDOR.len() as u32).to_le_bytes());
    t.extend_from_slice(VENDOR);
    t.extend_from_slice(&0u32.to_le_bytes());
    t
}

/// Ogg streams carry a serial number meant to be random; ours is a hash of the content so the
/// output stays reproducible while different clips still get different serials.
fn serial_for(samples: &[f32], rate: u32) -> u32 {
    const FNV_OFFSET: u32 = 0x811c_9dc5;
    const FNV_PRIME: u32 = 0x0100_0193;
    let mut h = FNV_OFFSET;
    for b in rate
        .to_le_bytes()
        .into_iter()
        .chain(samples.iter().flat_map(|s| s.to_bits().to_le_bytes()))
    {
        h = (h ^ u32::from(b)).wrapping_mul(FNV_PRIME);
    }
    h
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum PageKind {
    First,
    Middle,
    Last,
}

struct OggWriter {
    out: Vec<u8>,
    serial: u32,
    sequence: u32,
}

impl OggWriter {
    fn new(serial: u32) -> Self {
        OggWriter {
            out: Vec::new(),
            serial,
            sequence: 0,
        }
    }

    /// One page holding whole packets (no continuation: callers keep a page within 255 lacing
    /// values, see [`lacing_len`]).
    fn write_page(&mut self, packets: &[Vec<u8>], granule: u64, kind: PageKind) {
        let mut lacing = Vec::with_capacity(lacing_len(packets));
        for p in packets {
            lacing.extend(std::iter::repeat_n(255u8, p.len() / 255));
            lacing.push((p.len() % 255) as u8);
        }
        assert!(lacing.len() <= 255, "ogg page overflow");
        let start = self.out.len();
        self.out.extend_from_slice(b"OggS");
        self.out.push(0); // version
        self.out.push(match kind {
            PageKind::First => 0x02,
            PageKind::Middle => 0x00,
            PageKind::Last => 0x04,
        });
        self.out.extend_from_slice(&granule.to_le_bytes());
        self.out.extend_from_slice(&self.serial.to_le_bytes());
        self.out.extend_from_slice(&self.sequence.to_le_bytes());
        self.out.extend_from_slice(&[0; 4]); // CRC, filled below
        self.out.push(lacing.len() as u8);
        self.out.extend_from_slice(&lacing);
        for p in packets {
            self.out.extend_from_slice(p);
        }
        let crc = ogg_crc(&self.out[start..]);
        self.out[start + 22..start + 26].copy_from_slice(&crc.to_le_bytes());
        self.sequence += 1;
    }
}

/// Lacing values (segments) the packets take in a page.
fn lacing_len(packets: &[Vec<u8>]) -> usize {
    packets.iter().map(|p| p.len() / 255 + 1).sum()
}

/// CRC-32 of RFC 3533: polynomial 0x04c11db7, MSB first, zero initial value, no final xor.
pub(crate) fn ogg_crc(data: &[u8]) -> u32 {
    const TABLE: [u32; 256] = {
        let mut table = [0u32; 256];
        let mut i = 0;
        while i < 256 {
            let mut r = (i as u32) << 24;
            let mut bit = 0;
            while bit < 8 {
                r = if r & 0x8000_0000 != 0 {
                    (r << 1) ^ 0x04c1_1db7
                } else {
                    r << 1
                };
                bit += 1;
            }
            table[i] = r;
            i += 1;
        }
        table
    };
    data.iter().fold(0u32, |crc, &b| {
        (crc << 8) ^ TABLE[((crc >> 24) as u8 ^ b) as usize]
    })
}

/// Pre-skip (48 kHz samples) from an OpusHead packet, if `head` is one.
pub(crate) fn opus_head_pre_skip(head: &[u8]) -> Option<u16> {
    if head.len() >= 19 && head.starts_with(b"OpusHead") {
        Some(u16::from_le_bytes([head[10], head[11]]))
    } else {
        None
    }
}
