//! A voice print as bytes, to be stored once with a cloned profile and read back per generation
//! (the speech encoder then never runs again for that voice). Little-endian, versioned:
//! `VPRINT1\0`, then `audio_features`, `speaker_embeddings`, `speaker_features` as
//! (rank u32, dims u32…, f32 data), then `audio_tokens` as (count u32, i64 data).

use super::{Array, VoicePrint};

const MAGIC: &[u8; 8] = b"VPRINT1\0";

impl VoicePrint {
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        for array in [&self.features, &self.speaker, &self.speaker_features] {
            out.extend((array.shape.len() as u32).to_le_bytes());
            for d in &array.shape {
                out.extend((*d as u32).to_le_bytes());
            }
            out.extend(array.data.iter().flat_map(|x| x.to_le_bytes()));
        }
        out.extend((self.tokens.len() as u32).to_le_bytes());
        out.extend(self.tokens.iter().flat_map(|x| x.to_le_bytes()));
        out
    }

    pub fn from_bytes(bytes: &[u8]) -> Option<VoicePrint> {
        let mut rest = bytes.strip_prefix(MAGIC.as_slice())?;
        let mut take = |n: usize| -> Option<&[u8]> {
            if rest.len() < n {
                return None;
            }
            let (head, tail) = rest.split_at(n);
            rest = tail;
            Some(head)
        };
        let mut arrays = Vec::new();
        for _ in 0..3 {
            let rank = u32::from_le_bytes(take(4)?.try_into().ok()?) as usize;
            if rank > 8 {
                return None;
            }
            let mut shape = Vec::with_capacity(rank);
            for _ in 0..rank {
                shape.push(u32::from_le_bytes(take(4)?.try_into().ok()?) as usize);
            }
            let count = shape.iter().try_fold(1usize, |a, d| a.checked_mul(*d))?;
            let data = take(count.checked_mul(4)?)?
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes")))
                .collect();
            arrays.push(Array { shape, data });
        }
        let count = u32::from_le_bytes(take(4)?.try_into().ok()?) as usize;
        let tokens = take(count.checked_mul(8)?)?
            .chunks_exact(8)
            .map(|c| i64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect();
        if !rest.is_empty() {
            return None;
        }
        let mut arrays = arrays.into_iter();
        Some(VoicePrint {
            features: arrays.next()?,
            speaker: arrays.next()?,
            speaker_features: arrays.next()?,
            tokens,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_print_survives_the_round_trip_and_garbage_is_refused() {
        let print = VoicePrint {
            features: Array {
                shape: vec![1, 2, 3],
                data: vec![0.5, -1.0, 2.0, 3.5, 0.0, 1e-7],
            },
            tokens: vec![1, 6560, 42],
            speaker: Array {
                shape: vec![1, 2],
                data: vec![0.25, -0.25],
            },
            speaker_features: Array {
                shape: vec![1, 1, 2],
                data: vec![9.0, -9.0],
            },
        };
        let bytes = print.to_bytes();
        assert_eq!(VoicePrint::from_bytes(&bytes), Some(print));
        assert_eq!(VoicePrint::from_bytes(&bytes[..bytes.len() - 1]), None);
        assert_eq!(VoicePrint::from_bytes(b"VPRINT1\0\xff\xff\xff\xff"), None);
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(VoicePrint::from_bytes(&longer), None);
    }
}
