//! Ogg comment headers, read before symphonia sees them. symphonia allocates each comment's
//! declared length (32 bits: up to 4 GiB) before reading it from the packet, so a few hundred
//! bytes can ask for gigabytes; where the allocation fails the process aborts, which
//! `catch_unwind` cannot stop. Comments longer than their packet are refused here.

use super::decode::DecodeError;

/// Packets looked at per logical stream (the comment header is the second).
const HEADER_PACKETS: usize = 4;

struct Stream {
    serial: u32,
    packets: usize,
    partial: Vec<u8>,
}

/// Refuse an Ogg upload whose Vorbis comment or OpusTags header declares a comment longer
/// than the packet holding it.
pub(super) fn check(bytes: &[u8]) -> Result<(), DecodeError> {
    if !bytes.starts_with(b"OggS") {
        return Ok(());
    }
    let mut streams: Vec<Stream> = Vec::new();
    let mut at = 0usize;
    while let Some(offset) = find_page(&bytes[at..]) {
        at += offset;
        let Some(header) = bytes.get(at..at + 27) else {
            return Ok(());
        };
        let serial = u32::from_le_bytes([header[14], header[15], header[16], header[17]]);
        let segments = usize::from(header[26]);
        let Some(table) = bytes.get(at + 27..at + 27 + segments) else {
            return Ok(());
        };
        let mut data = at + 27 + segments;
        let index = match streams.iter().position(|s| s.serial == serial) {
            Some(i) => i,
            None => {
                // A few streams at most in real files; a flood of serials is not audio.
                if streams.len() >= 16 {
                    return Ok(());
                }
                streams.push(Stream {
                    serial,
                    packets: 0,
                    partial: Vec::new(),
                });
                streams.len() - 1
            }
        };
        let stream = &mut streams[index];
        for &lace in table {
            let Some(part) = bytes.get(data..data + usize::from(lace)) else {
                return Ok(());
            };
            data += usize::from(lace);
            if stream.packets >= HEADER_PACKETS {
                continue;
            }
            stream.partial.extend_from_slice(part);
            if lace < 255 {
                check_comments(&stream.partial)?;
                stream.partial.clear();
                stream.packets += 1;
            }
        }
        at = data.max(at + 4);
        if streams.iter().all(|s| s.packets >= HEADER_PACKETS) {
            return Ok(());
        }
    }
    Ok(())
}

fn find_page(bytes: &[u8]) -> Option<usize> {
    bytes.windows(4).position(|w| w == b"OggS")
}

fn check_comments(packet: &[u8]) -> Result<(), DecodeError> {
    let body = if let Some(rest) = packet.strip_prefix(b"\x03vorbis") {
        rest
    } else if let Some(rest) = packet.strip_prefix(b"OpusTags") {
        rest
    } else {
        return Ok(());
    };
    let too_long = || DecodeError::Undecodable("ogg: a comment is longer than its packet".into());
    let word = |at: usize| {
        body.get(at..at + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
    };
    let Some(vendor) = word(0) else {
        return Ok(());
    };
    let mut at = 4usize.saturating_add(vendor);
    let Some(count) = word(at) else {
        return Ok(());
    };
    at += 4;
    for _ in 0..count {
        let Some(len) = word(at) else {
            return Ok(());
        };
        if len > body.len() {
            return Err(too_long());
        }
        at += 4 + len;
    }
    Ok(())
}
