//! A walk over a Matroska/WebM upload, before symphonia sees it, that refuses sizes symphonia
//! would allocate without checking them against the data. symphonia 0.5 allocates an element's
//! declared size (and a laced block's declared frame sizes) before reading it; a ~100-byte file
//! declaring 2^56 bytes makes the allocation fail, which aborts the process (an allocation
//! failure is not a panic `catch_unwind` could stop).
//!
//! The walk is linear: a master element's children follow its header, so stepping into every
//! master and over every other element visits all elements in order, nested or not, known size
//! or not. A size larger than the whole upload can never be satisfied and is refused; anything
//! else is left to symphonia (a file cut inside its last block still decodes what it holds).

use super::decode::DecodeError;

const EBML: [u8; 4] = [0x1a, 0x45, 0xdf, 0xa3];
/// Master elements symphonia knows (`symphonia-format-mkv` `element_ids.rs`).
const MASTERS: [u32; 29] = [
    0x1A45DFA3, 0x18538067, 0x114D9B74, 0x4DBB, 0x1549A966, 0x1F43B675, 0xA0, 0x75A1, 0xA6,
    0x1654AE6B, 0xAE, 0xE0, 0xE1, 0x6D80, 0x6240, 0x5035, 0x47E7, 0x55B0, 0x55D0, 0x1C53BB6B, 0xBB,
    0xB7, 0x1043A770, 0x45B9, 0xB6, 0x80, 0x1254C367, 0x7373, 0x63C0,
];
/// SimpleTag is a master too (listed apart to keep the table above in symphonia's order).
const SIMPLE_TAG: u32 = 0x67C8;
/// What symphonia scans for when it meets bytes that cannot start an element.
const TOP_LEVEL: [[u8; 4]; 6] = [
    [0x1f, 0x43, 0xb6, 0x75], // Cluster
    [0x1c, 0x53, 0xbb, 0x6b], // Cues
    [0x15, 0x49, 0xa9, 0x66], // Info
    [0x11, 0x4d, 0x9b, 0x74], // SeekHead
    [0x12, 0x54, 0xc3, 0x67], // Tags
    [0x16, 0x54, 0xae, 0x6b], // Tracks
];
const SIMPLE_BLOCK: u32 = 0xA3;
const BLOCK: u32 = 0xA1;

fn refuse(what: &str) -> DecodeError {
    DecodeError::Undecodable(format!("matroska: {what}"))
}

/// Refuse a Matroska/WebM upload with an element or laced frame longer than the upload.
pub(super) fn check(bytes: &[u8]) -> Result<(), DecodeError> {
    if !bytes.starts_with(&EBML) {
        return Ok(());
    }
    let limit = bytes.len() as u64;
    let mut at = 0usize;
    while at < bytes.len() {
        let Some((id, id_len)) = element_id(&bytes[at..]) else {
            // symphonia resynchronises on the next top-level element; so does the walk.
            match bytes[at + 1..]
                .windows(4)
                .position(|w| TOP_LEVEL.iter().any(|t| w == t))
            {
                Some(next) => {
                    at += 1 + next;
                    continue;
                }
                None => return Ok(()),
            }
        };
        let Some((size, size_len)) = vint(&bytes[at + id_len..])? else {
            return Ok(()); // cut short: symphonia stops here too
        };
        let data = at + id_len + size_len;
        if MASTERS.contains(&id) || id == SIMPLE_TAG {
            at = data;
            continue;
        }
        // An unknown size on anything but a master reads as 0 in symphonia.
        let size = size.unwrap_or(0);
        if size > limit {
            return Err(refuse("an element is longer than the upload"));
        }
        let end = data.saturating_add(size as usize);
        if id == SIMPLE_BLOCK || id == BLOCK {
            check_lacing(&bytes[data.min(bytes.len())..end.min(bytes.len())], size)?;
        }
        at = end;
    }
    Ok(())
}

/// Frame sizes in a laced block (Xiph or EBML lacing) must fit in the block.
fn check_lacing(block: &[u8], block_len: u64) -> Result<(), DecodeError> {
    let mut r = Reader {
        bytes: block,
        at: 0,
    };
    let Some(track_len) = r.vint_len()? else {
        return Ok(());
    };
    r.at += track_len;
    if r.take(2).is_none() {
        return Ok(()); // timestamp
    }
    let (Some(flags), Some(frames)) = (r.byte(), r.byte()) else {
        return Ok(());
    };
    let too_long = || refuse("a laced frame is longer than its block");
    match (flags >> 1) & 0b11 {
        0b01 => {
            // Xiph: runs of 255 plus a final byte, `frames` times.
            let mut size = 0u64;
            let mut read = 0;
            while read < frames {
                let Some(b) = r.byte() else {
                    return Ok(());
                };
                size += u64::from(b);
                if b != 255 {
                    if size > block_len {
                        return Err(too_long());
                    }
                    size = 0;
                    read += 1;
                }
            }
        }
        0b11 => {
            // EBML: an unsigned first size, then signed deltas (as symphonia computes them).
            let mut last: Option<u64> = None;
            for _ in 0..frames {
                let Some(len) = r.vint_len()? else {
                    return Ok(());
                };
                let Some(raw) = r.take(len).map(vint_value) else {
                    return Ok(());
                };
                let size = match last {
                    None => raw,
                    Some(last) => {
                        let half = (1i64 << (len as u32 * 7 - 1)) - 1;
                        (last as i64).wrapping_add(raw as i64 - half) as u64
                    }
                };
                if size > block_len {
                    return Err(too_long());
                }
                last = Some(size);
            }
        }
        _ => {}
    }
    Ok(())
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn byte(&mut self) -> Option<u8> {
        let b = *self.bytes.get(self.at)?;
        self.at += 1;
        Some(b)
    }

    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let s = self.bytes.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(s)
    }

    /// Width of the vint starting here (`None`: the block ends first).
    fn vint_len(&self) -> Result<Option<usize>, DecodeError> {
        match self.bytes.get(self.at) {
            None => Ok(None),
            Some(0) => Err(refuse("a variable-size integer starts with 0x00")),
            Some(&b) => Ok(Some(b.leading_zeros() as usize + 1)),
        }
    }
}

/// Element id (1–4 bytes, marker bit kept); `None` if the first byte cannot start one.
fn element_id(bytes: &[u8]) -> Option<(u32, usize)> {
    let first = *bytes.first()?;
    let len = first.leading_zeros() as usize + 1;
    if len > 4 {
        return None;
    }
    let id = bytes
        .get(..len)?
        .iter()
        .fold(0u32, |v, &b| (v << 8) | u32::from(b));
    Some((id, len))
}

/// An element size: `Ok(None)` if the data ends first, `Some((None, len))` for the 1-byte
/// "unknown" size, `Some((Some(size), len))` otherwise.
#[allow(clippy::type_complexity)]
fn vint(bytes: &[u8]) -> Result<Option<(Option<u64>, usize)>, DecodeError> {
    let Some(&first) = bytes.first() else {
        return Ok(None);
    };
    if first == 0 {
        return Err(refuse("a variable-size integer starts with 0x00"));
    }
    if first == 0xff {
        return Ok(Some((None, 1)));
    }
    let len = first.leading_zeros() as usize + 1;
    Ok(bytes.get(..len).map(|b| (Some(vint_value(b)), len)))
}

/// Value of a complete vint (marker bit removed).
fn vint_value(bytes: &[u8]) -> u64 {
    let len = bytes.len();
    let first = u64::from(bytes[0]) & (0xff >> len);
    bytes[1..]
        .iter()
        .fold(first, |v, &b| (v << 8) | u64::from(b))
}
