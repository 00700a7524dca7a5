//! A Qwen voice print as bytes, stored once with a cloned profile: the speaker encoder's
//! x-vector and, when the reference came with its transcript (and fits the speech tokenizer's
//! window), the transcript's tokens and the clip's codes for in-context cloning.
//! Little-endian, versioned: `QWENVP1\0`, speaker (count u32, f32…), transcript tokens
//! (count u32, u32…), groups u32, frames u32, codes (i64…, frame-major).

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
        let mut out = MAGIC.to_vec();
        out.extend((self.speaker.len() as u32).to_le_bytes());
        out.extend(self.speaker.iter().flat_map(|x| x.to_le_bytes()));
        out.extend((self.text_ids.len() as u32).to_le_bytes());
        out.extend(self.text_ids.iter().flat_map(|x| x.to_le_bytes()));
        let frames = self.codes.len().checked_div(self.groups).unwrap_or(0);
        out.extend((self.groups as u32).to_le_bytes());
        out.extend((frames as u32).to_le_bytes());
        out.extend(self.codes.iter().flat_map(|x| x.to_le_bytes()));
        out
    }

    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        let mut rest = bytes.strip_prefix(MAGIC.as_slice())?;
        let mut take = |n: usize| -> Option<&[u8]> {
            let (head, tail) = rest.split_at_checked(n)?;
            rest = tail;
            Some(head)
        };
        let n = u32::from_le_bytes(take(4)?.try_into().ok()?) as usize;
        let speaker = take(n.checked_mul(4)?)?
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes")))
            .collect();
        let n = u32::from_le_bytes(take(4)?.try_into().ok()?) as usize;
        let text_ids = take(n.checked_mul(4)?)?
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
            .collect();
        let groups = u32::from_le_bytes(take(4)?.try_into().ok()?) as usize;
        let frames = u32::from_le_bytes(take(4)?.try_into().ok()?) as usize;
        let codes = take(frames.checked_mul(groups)?.checked_mul(8)?)?
            .chunks_exact(8)
            .map(|c| i64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect();
        if !rest.is_empty() {
            return None;
        }
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
}
