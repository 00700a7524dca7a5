//! Opus in Ogg (RFC 7845) or WebM, as a live client sends it: a browser's `MediaRecorder`
//! (`audio/webm;codecs=opus`, `audio/ogg;codecs=opus`) or an encoder piped to a socket. The
//! bytes arrive in arbitrary pieces; whole pages (Ogg) or elements (WebM) are taken as they
//! complete, their Opus packets decoded by libopus at 48 kHz mono (a stereo stream is downmixed
//! by the decoder), and the stream's pre-skip dropped.
//!
//! Bounded: at most [`MAX_PENDING`] bytes wait for a page or element to complete, and elements
//! the walk does not need (video, cues, attachments) are skipped as they pass, never held. Not
//! checked: Ogg page checksums (a socket already delivers the bytes intact) and the order of
//! Ogg pages; a second logical Ogg stream is ignored; laced WebM blocks are refused (browsers
//! never lace audio).

use std::fmt;

/// The rate libopus decodes at here (Ogg Opus granules count at 48 kHz too).
pub(super) const OPUS_RATE: u32 = 48_000;
/// The longest Opus packet: 120 ms at 48 kHz.
const MAX_FRAME: usize = 5_760;
/// Bytes that may wait for one page or element to complete (an Ogg page is at most 65 307).
const MAX_PENDING: usize = 1 << 20;

const OGG: &[u8; 4] = b"OggS";
const EBML: [u8; 4] = [0x1A, 0x45, 0xDF, 0xA3];

// WebM elements: the masters the walk descends into, and the leaves it reads.
const SEGMENT: u32 = 0x1853_8067;
const CLUSTER: u32 = 0x1F43_B675;
const TRACKS: u32 = 0x1654_AE6B;
const TRACK_ENTRY: u32 = 0xAE;
const BLOCK_GROUP: u32 = 0xA0;
const TRACK_NUMBER: u32 = 0xD7;
const CODEC_ID: u32 = 0x86;
const CODEC_PRIVATE: u32 = 0x63A2;
const SIMPLE_BLOCK: u32 = 0xA3;
const BLOCK: u32 = 0xA1;

/// Why a container stream cannot be decoded (the client's fault: a live door closes with it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerError(String);

impl fmt::Display for ContainerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ContainerError {}

fn refuse(what: impl Into<String>) -> ContainerError {
    ContainerError(what.into())
}

/// One stream's demuxer and decoder: bytes in, 48 kHz mono samples out.
pub(super) struct OpusContainer {
    pending: Vec<u8>,
    format: Option<Format>,
    /// Bytes of a WebM element being skipped that have not arrived yet.
    skip: u64,
    decoder: Option<opus::Decoder>,
    /// Samples still to drop at the start (the stream's pre-skip).
    pre_skip: usize,
    frame: Vec<f32>,
}

enum Format {
    Ogg(OggState),
    Webm(WebmState),
}

#[derive(Default)]
struct OggState {
    serial: Option<u32>,
    /// The packet that continues on the next page.
    packet: Vec<u8>,
    packets: u64,
}

#[derive(Default)]
struct WebmState {
    /// The track entry being read.
    entry: Option<TrackEntry>,
    opus_track: Option<u64>,
}

/// What a WebM `TrackEntry` said so far.
#[derive(Default)]
struct TrackEntry {
    number: Option<u64>,
    codec: Option<Vec<u8>>,
    /// `CodecPrivate`: Opus's identification header.
    head: Option<Vec<u8>>,
}

impl OpusContainer {
    pub(super) fn new() -> Self {
        Self {
            pending: Vec::new(),
            format: None,
            skip: 0,
            decoder: None,
            pre_skip: 0,
            frame: vec![0.0; MAX_FRAME],
        }
    }

    /// Takes `bytes`, appending the samples of every packet they complete to `out`.
    pub(super) fn push(&mut self, bytes: &[u8], out: &mut Vec<f32>) -> Result<(), ContainerError> {
        let mut bytes = bytes;
        if self.skip > 0 {
            let n = (self.skip.min(bytes.len() as u64)) as usize;
            self.skip -= n as u64;
            bytes = &bytes[n..];
            if self.skip > 0 {
                return Ok(());
            }
        }
        self.pending.extend_from_slice(bytes);
        if self.format.is_none() {
            if self.pending.len() < 4 {
                return Ok(());
            }
            self.format = Some(if self.pending.starts_with(OGG) {
                Format::Ogg(OggState::default())
            } else if self.pending.starts_with(&EBML) {
                Format::Webm(WebmState::default())
            } else {
                return Err(refuse(
                    "the audio is neither Ogg nor WebM: name the encoding (linear16, mulaw, alaw) for raw audio",
                ));
            });
        }
        let mut packets = Vec::new();
        let used = match self.format.as_mut().expect("set above") {
            Format::Ogg(state) => ogg_pages(&self.pending, state, &mut packets)?,
            Format::Webm(state) => {
                let (used, skip) = webm_elements(&self.pending, state, &mut packets)?;
                self.skip = skip;
                used
            }
        };
        self.pending.drain(..used);
        if self.pending.len() > MAX_PENDING {
            return Err(refuse("a page or element is longer than 1 MiB"));
        }
        for packet in packets {
            self.packet(packet, out)?;
        }
        Ok(())
    }

    fn packet(&mut self, packet: Packet, out: &mut Vec<f32>) -> Result<(), ContainerError> {
        match packet {
            Packet::Head(head) => {
                if self.decoder.is_some() {
                    return Ok(());
                }
                if head.len() < 19 || !head.starts_with(b"OpusHead") {
                    return Err(refuse("the stream is not Opus: only Opus is decoded live"));
                }
                if head[9] == 0 || head[9] > 2 {
                    return Err(refuse(format!(
                        "Opus with {} channels is not supported live (mono or stereo)",
                        head[9]
                    )));
                }
                self.pre_skip = usize::from(u16::from_le_bytes([head[10], head[11]]));
                self.decoder = Some(
                    opus::Decoder::new(OPUS_RATE, opus::Channels::Mono)
                        .map_err(|e| refuse(format!("opus: {e}")))?,
                );
            }
            Packet::Audio(data) => {
                let Some(decoder) = self.decoder.as_mut() else {
                    return Err(refuse("an Opus packet came before the stream's OpusHead"));
                };
                let n = decoder
                    .decode_float(&data, &mut self.frame, false)
                    .map_err(|e| refuse(format!("opus: {e}")))?;
                let skip = self.pre_skip.min(n);
                self.pre_skip -= skip;
                out.extend_from_slice(&self.frame[skip..n]);
            }
        }
        Ok(())
    }
}

enum Packet {
    /// The codec's identification header (Ogg's first packet, WebM's `CodecPrivate`).
    Head(Vec<u8>),
    Audio(Vec<u8>),
}

/// Takes the whole Ogg pages at the start of `buf`; returns the bytes used.
fn ogg_pages(
    buf: &[u8],
    state: &mut OggState,
    packets: &mut Vec<Packet>,
) -> Result<usize, ContainerError> {
    let mut at = 0;
    loop {
        let page = &buf[at..];
        if !OGG.starts_with(&page[..page.len().min(4)]) {
            return Err(refuse("an Ogg page does not start with OggS"));
        }
        if page.len() < 27 {
            return Ok(at);
        }
        let segments = usize::from(page[26]);
        let Some(lacing) = page.get(27..27 + segments) else {
            return Ok(at);
        };
        let body: usize = lacing.iter().map(|&l| usize::from(l)).sum();
        let len = 27 + segments + body;
        if page.len() < len {
            return Ok(at);
        }
        let serial = u32::from_le_bytes([page[14], page[15], page[16], page[17]]);
        if *state.serial.get_or_insert(serial) == serial {
            let mut data = &page[27 + segments..len];
            for &l in lacing {
                let (piece, rest) = data.split_at(usize::from(l));
                state.packet.extend_from_slice(piece);
                data = rest;
                if l < 255 {
                    let packet = std::mem::take(&mut state.packet);
                    state.packets += 1;
                    // The second packet is OpusTags: comments only.
                    match state.packets {
                        1 => packets.push(Packet::Head(packet)),
                        2 => {}
                        _ => packets.push(Packet::Audio(packet)),
                    }
                }
            }
            if state.packet.len() > MAX_PENDING {
                return Err(refuse("an Ogg packet is longer than 1 MiB"));
            }
        }
        at += len;
    }
}

/// Walks the complete WebM elements at the start of `buf`; returns the bytes used and how many
/// bytes of an element being skipped have not arrived yet.
fn webm_elements(
    buf: &[u8],
    state: &mut WebmState,
    packets: &mut Vec<Packet>,
) -> Result<(usize, u64), ContainerError> {
    let mut at = 0;
    loop {
        let rest = &buf[at..];
        let Some((id, id_len)) = element_id(rest)? else {
            return Ok((at, 0));
        };
        let Some((size, size_len)) = vint(&rest[id_len..])? else {
            return Ok((at, 0));
        };
        let header = id_len + size_len;
        match id {
            SEGMENT | CLUSTER | TRACKS | BLOCK_GROUP => {
                at += header;
                continue;
            }
            TRACK_ENTRY => {
                state.commit_entry();
                state.entry = Some(TrackEntry::default());
                at += header;
                continue;
            }
            _ => {}
        }
        let Some(size) = size else {
            return Err(refuse(format!("WebM element {id:#x} has an unknown size")));
        };
        let wanted = matches!(
            id,
            TRACK_NUMBER | CODEC_ID | CODEC_PRIVATE | SIMPLE_BLOCK | BLOCK
        );
        if !wanted {
            let available = (rest.len() - header) as u64;
            if size > available {
                return Ok((buf.len(), size - available));
            }
            at += header + size as usize;
            continue;
        }
        if size > MAX_PENDING as u64 {
            return Err(refuse("a WebM element is longer than 1 MiB"));
        }
        let Some(body) = rest.get(header..header + size as usize) else {
            return Ok((at, 0));
        };
        match id {
            TRACK_NUMBER => {
                if let Some(entry) = state.entry.as_mut() {
                    entry.number = Some(body.iter().fold(0u64, |v, &b| (v << 8) | u64::from(b)));
                }
            }
            CODEC_ID => {
                if let Some(entry) = state.entry.as_mut() {
                    entry.codec = Some(body.to_vec());
                }
            }
            CODEC_PRIVATE => {
                if let Some(entry) = state.entry.as_mut() {
                    entry.head = Some(body.to_vec());
                }
            }
            _ => {
                if state.opus_track.is_none()
                    && let Some(head) = state.commit_entry()
                {
                    packets.push(Packet::Head(head));
                }
                let Some(track) = state.opus_track else {
                    return Err(refuse("the WebM stream has no Opus track"));
                };
                let Some((Some(number), number_len)) = vint(body)? else {
                    return Err(refuse("a WebM block has no track number"));
                };
                let Some(&flags) = body.get(number_len + 2) else {
                    return Err(refuse("a WebM block is shorter than its header"));
                };
                if flags & 0x06 != 0 {
                    return Err(refuse("laced WebM blocks are not supported live"));
                }
                if number == track {
                    packets.push(Packet::Audio(body[number_len + 3..].to_vec()));
                }
            }
        }
        at += header + size as usize;
    }
}

impl WebmState {
    /// Records the entry read so far as the Opus track if it is one; returns its `OpusHead` the
    /// first time an Opus track is found.
    fn commit_entry(&mut self) -> Option<Vec<u8>> {
        let entry = self.entry.take()?;
        if self.opus_track.is_some() || entry.codec.as_deref() != Some(b"A_OPUS".as_slice()) {
            return None;
        }
        self.opus_track = entry.number;
        entry.number.and(entry.head)
    }
}

/// An element id (1–4 bytes, marker bit kept); `None` when more bytes are needed.
fn element_id(bytes: &[u8]) -> Result<Option<(u32, usize)>, ContainerError> {
    let Some(&first) = bytes.first() else {
        return Ok(None);
    };
    let len = first.leading_zeros() as usize + 1;
    if len > 4 {
        return Err(refuse("a WebM element id is malformed"));
    }
    Ok(bytes
        .get(..len)
        .map(|b| (b.iter().fold(0u32, |v, &b| (v << 8) | u32::from(b)), len)))
}

/// A variable-size integer: `(None, len)` for the "unknown" value (all value bits set); `None`
/// when more bytes are needed or the first byte is zero.
#[allow(clippy::type_complexity)]
fn vint(bytes: &[u8]) -> Result<Option<(Option<u64>, usize)>, ContainerError> {
    let Some(&first) = bytes.first() else {
        return Ok(None);
    };
    if first == 0 {
        return Err(refuse("a WebM size starts with 0x00"));
    }
    let len = first.leading_zeros() as usize + 1;
    let Some(bytes) = bytes.get(..len) else {
        return Ok(None);
    };
    let value = bytes[1..]
        .iter()
        .fold(u64::from(first) & (0xff >> len), |v, &b| {
            (v << 8) | u64::from(b)
        });
    let unknown = value == (1u64 << (7 * len)) - 1;
    Ok(Some((if unknown { None } else { Some(value) }, len)))
}
