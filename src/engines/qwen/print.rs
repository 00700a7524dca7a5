//! A Qwen voice print as bytes, stored once with a cloned profile: the speaker encoder's
//! x-vector and, when the reference came with its transcript (and fits the speech tokenizer's
//! window), the transcript's tokens and the clip's codes for in-context cloning.
//! Little-endian, versioned: `QWENVP1\0`, speaker (count u32, f32…), transcript tokens
//! (count u32, u32…), groups u32, frames u32, codes (i64…, frame-major).

use crate::engines::print_codec::{Reader, Writer};

const MAGIC: &[u8; 8] = b"QWENVP1\0";

#[derive(Debug, Clone, PartialEq)]
pub struct QwenPrint {
    pub speaker: Vec<f32>,
    /// Empty: x-vector-only cloning.
    pub text_ids: Vec<u32>,
    pub groups: usize,
    /// `groups` codes per reference frame; empty without a transcript.
    pub codes: Vec<i64>,
}

impl QwenPrint {
    /// Whether the print carries an in-context example (transcript and codes).
    pub fn has_example(&self) -> bool {
        !self.text_ids.is_empty() && !self.codes.is_empty()
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        let frames = self.codes.len().checked_div(self.groups).unwrap_or(0);
        Writer::new(MAGIC)
            .count(self.speaker.len())
            .f32s(&self.speaker)
            .count(self.text_ids.len())
            .u32s(&self.text_ids)
            .count(self.groups)
            .count(frames)
            .i64s(&self.codes)
            .finish()
    }

    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        let mut read = Reader::new(bytes, MAGIC)?;
        let n = read.count()?;
        let speaker = read.f32s(n)?;
        let n = read.count()?;
        let text_ids = read.u32s(n)?;
        let groups = read.count()?;
        let frames = read.count()?;
        let codes = read.i64s(frames.checked_mul(groups)?)?;
        read.finish()?;
        Some(Self {
            speaker,
            text_ids,
            groups,
            codes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_print_survives_the_round_trip_and_garbage_is_refused() {
        let print = QwenPrint {
            speaker: vec![0.5, -1.0, 1e-7],
            text_ids: vec![3, 151_644],
            groups: 2,
            codes: vec![1, 2, 3, 4],
        };
        let bytes = print.to_bytes();
        assert_eq!(QwenPrint::from_bytes(&bytes), Some(print.clone()));
        assert!(print.has_example());
        assert_eq!(QwenPrint::from_bytes(&bytes[..bytes.len() - 1]), None);
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(QwenPrint::from_bytes(&longer), None);
        assert_eq!(QwenPrint::from_bytes(b"VPRINT1\0\0\0\0\0"), None);
        let plain = QwenPrint {
            text_ids: Vec::new(),
            codes: Vec::new(),
            ..print
        };
        assert!(!plain.has_example());
        assert_eq!(QwenPrint::from_bytes(&plain.to_bytes()), Some(plain));
    }

    #[test]
    fn the_stored_layout_is_unchanged() {
        let print = QwenPrint {
            speaker: vec![1.5],
            text_ids: vec![258],
            groups: 2,
            codes: vec![-2, 3],
        };
        let bytes: &[u8] = b"QWENVP1\0\
            \x01\0\0\0\0\0\xc0\x3f\
            \x01\0\0\0\x02\x01\0\0\
            \x02\0\0\0\x01\0\0\0\
            \xfe\xff\xff\xff\xff\xff\xff\xff\x03\0\0\0\0\0\0\0";
        assert_eq!(print.to_bytes(), bytes);
        assert_eq!(QwenPrint::from_bytes(bytes), Some(print));
    }
}
