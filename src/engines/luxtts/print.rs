//! A LuxTTS voice print as bytes: the prompt's Vocos features (already scaled by 0.1), its
//! transcript's phoneme tokens and the clip's loudness. Little-endian, versioned: `LUXVP1\0\0`,
//! frames u32, feature width u32, features (f32…, frame-major), tokens (count u32, i64…),
//! RMS f32.

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
        let mut out = MAGIC.to_vec();
        out.extend((self.frames() as u32).to_le_bytes());
        out.extend((self.width as u32).to_le_bytes());
        out.extend(self.features.iter().flat_map(|x| x.to_le_bytes()));
        out.extend((self.tokens.len() as u32).to_le_bytes());
        out.extend(self.tokens.iter().flat_map(|x| x.to_le_bytes()));
        out.extend(self.rms.to_le_bytes());
        out
    }

    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        let mut rest = bytes.strip_prefix(MAGIC.as_slice())?;
        let mut take = |n: usize| -> Option<&[u8]> {
            let (head, tail) = rest.split_at_checked(n)?;
            rest = tail;
            Some(head)
        };
        let frames = u32::from_le_bytes(take(4)?.try_into().ok()?) as usize;
        let width = u32::from_le_bytes(take(4)?.try_into().ok()?) as usize;
        let features = take(frames.checked_mul(width)?.checked_mul(4)?)?
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes")))
            .collect();
        let count = u32::from_le_bytes(take(4)?.try_into().ok()?) as usize;
        let tokens = take(count.checked_mul(8)?)?
            .chunks_exact(8)
            .map(|c| i64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect();
        let rms = f32::from_le_bytes(take(4)?.try_into().ok()?);
        if !rest.is_empty() || width == 0 {
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
}
