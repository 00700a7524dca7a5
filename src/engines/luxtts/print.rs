//! A LuxTTS voice print as bytes: the prompt's Vocos features (already scaled by 0.1), its
//! transcript's phoneme tokens and the clip's loudness. Little-endian, versioned: `LUXVP1\0\0`,
//! frames u32, feature width u32, features (f32…, frame-major), tokens (count u32, i64…),
//! RMS f32.

use crate::engines::print_codec::{Reader, Writer};

const MAGIC: &[u8; 8] = b"LUXVP1\0\0";

#[derive(Debug, Clone, PartialEq)]
pub struct LuxPrint {
    pub width: usize,
    /// `frames × width`, frame-major.
    pub features: Vec<f32>,
    pub tokens: Vec<i64>,
    /// The clip's RMS before any normalisation (the output is scaled to match a quiet clip).
    pub rms: f32,
}

impl LuxPrint {
    pub fn frames(&self) -> usize {
        self.features.len().checked_div(self.width).unwrap_or(0)
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        Writer::new(MAGIC)
            .count(self.frames())
            .count(self.width)
            .f32s(&self.features)
            .count(self.tokens.len())
            .i64s(&self.tokens)
            .f32(self.rms)
            .finish()
    }

    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        let mut read = Reader::new(bytes, MAGIC)?;
        let frames = read.count()?;
        let width = read.count()?;
        let features = read.f32s(frames.checked_mul(width)?)?;
        let count = read.count()?;
        let tokens = read.i64s(count)?;
        let rms = read.f32()?;
        read.finish()?;
        if width == 0 {
            return None;
        }
        Some(Self {
            width,
            features,
            tokens,
            rms,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_print_survives_the_round_trip_and_garbage_is_refused() {
        let print = LuxPrint {
            width: 2,
            features: vec![0.5, -1.0, 2.0, 3.5],
            tokens: vec![1, 42],
            rms: 0.07,
        };
        assert_eq!(print.frames(), 2);
        let bytes = print.to_bytes();
        assert_eq!(LuxPrint::from_bytes(&bytes), Some(print));
        assert_eq!(LuxPrint::from_bytes(&bytes[..bytes.len() - 1]), None);
        assert_eq!(LuxPrint::from_bytes(b"QWENVP1\0"), None);
    }

    #[test]
    fn the_stored_layout_is_unchanged() {
        let print = LuxPrint {
            width: 1,
            features: vec![1.5, 0.25],
            tokens: vec![-2],
            rms: -4.0,
        };
        let bytes: &[u8] = b"LUXVP1\0\0\
            \x02\0\0\0\x01\0\0\0\0\0\xc0\x3f\0\0\x80\x3e\
            \x01\0\0\0\xfe\xff\xff\xff\xff\xff\xff\xff\
            \0\0\x80\xc0";
        assert_eq!(print.to_bytes(), bytes);
        assert_eq!(LuxPrint::from_bytes(bytes), Some(print));
        // A zero width is refused even when the bytes add up.
        assert_eq!(
            LuxPrint::from_bytes(b"LUXVP1\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0"),
            None
        );
    }
}
