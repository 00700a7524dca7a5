//! A voice print as bytes, to be stored once with a cloned profile and read back per generation
//! (the speech encoder then never runs again for that voice). Little-endian, versioned:
//! `VPRINT1\0`, then `audio_features`, `speaker_embeddings`, `speaker_features` as
//! (rank u32, dims u32…, f32 data), then `audio_tokens` as (count u32, i64 data).

use super::{Array, VoicePrint};
use crate::engines::print_codec::{Reader, Writer};

const MAGIC: &[u8; 8] = b"VPRINT1\0";

impl VoicePrint {
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Writer::new(MAGIC);
        for array in [&self.features, &self.speaker, &self.speaker_features] {
            out.count(array.shape.len());
            for d in &array.shape {
                out.count(*d);
            }
            out.f32s(&array.data);
        }
        out.count(self.tokens.len()).i64s(&self.tokens).finish()
    }

    pub fn from_bytes(bytes: &[u8]) -> Option<VoicePrint> {
        let mut read = Reader::new(bytes, MAGIC)?;
        let mut arrays = Vec::new();
        for _ in 0..3 {
            let rank = read.count()?;
            if rank > 8 {
                return None;
            }
            let shape = (0..rank)
                .map(|_| read.count())
                .collect::<Option<Vec<_>>>()?;
            let count = shape.iter().try_fold(1usize, |a, d| a.checked_mul(*d))?;
            let data = read.f32s(count)?;
            arrays.push(Array { shape, data });
        }
        let count = read.count()?;
        let tokens = read.i64s(count)?;
        read.finish()?;
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

    #[test]
    fn the_stored_layout_is_unchanged() {
        let print = VoicePrint {
            features: Array {
                shape: vec![1, 1],
                data: vec![1.5],
            },
            tokens: vec![-2],
            speaker: Array {
                shape: vec![1],
                data: vec![0.25],
            },
            speaker_features: Array {
                shape: vec![],
                data: vec![-4.0],
            },
        };
        let bytes: &[u8] = b"VPRINT1\0\
            \x02\0\0\0\x01\0\0\0\x01\0\0\0\0\0\xc0\x3f\
            \x01\0\0\0\x01\0\0\0\0\0\x80\x3e\
            \0\0\0\0\0\0\x80\xc0\
            \x01\0\0\0\xfe\xff\xff\xff\xff\xff\xff\xff";
        assert_eq!(print.to_bytes(), bytes);
        assert_eq!(VoicePrint::from_bytes(bytes), Some(print));
    }
}
