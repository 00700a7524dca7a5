//! The transcription API's `audio` field: base64 of the file bytes.

use base64::Engine as _;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};

/// Standard alphabet; padding optional (but checked when present).
const LENIENT: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// Upload limit for the decoded `audio` field (25 MiB).
pub const MAX_AUDIO_BYTES: usize = 25 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Base64Error {
    #[error("audio is not valid base64: {0}")]
    Invalid(String),
    #[error("audio is larger than {max_bytes} bytes")]
    TooLarge { max_bytes: usize },
}

/// Decode the `audio` field. Accepts standard base64 with or without `=` padding, ASCII
/// whitespace anywhere (line-wrapped output of `base64`), the URL-safe characters `-` and `_`,
/// and a `data:<type>;base64,` prefix. The size limit is checked from the length alone, before
/// anything is decoded.
pub fn decode_base64_audio(s: &str, max_bytes: usize) -> Result<Vec<u8>, Base64Error> {
    let body = strip_data_url(s.trim_start())?;

    // Length of the payload without whitespace and padding gives the decoded size exactly.
    let mut symbols = 0usize;
    for b in body.bytes() {
        if !b.is_ascii_whitespace() && b != b'=' {
            symbols += 1;
        }
    }
    let decoded_len = symbols / 4 * 3 + (symbols % 4).saturating_sub(1);
    if decoded_len > max_bytes {
        return Err(Base64Error::TooLarge { max_bytes });
    }
    if symbols == 0 {
        return Err(Base64Error::Invalid("empty".into()));
    }

    // Decoded a chunk at a time, so the only allocation as large as the upload is the output
    // (a compacted copy of a 34 MB field would be one more).
    let mut out = Vec::with_capacity(decoded_len + 3);
    let mut chunk = Vec::with_capacity(CHUNK_SYMBOLS);
    let mut padded = false;
    for b in body.bytes() {
        let b = match b {
            b if b.is_ascii_whitespace() => continue,
            b'=' => {
                padded = true;
                b'='
            }
            // Data after padding: one base64 string only (the whole-string decoder refused
            // this too; chunks must not make it acceptable).
            _ if padded => return Err(Base64Error::Invalid("data after padding".into())),
            b'-' => b'+',
            b'_' => b'/',
            b => b,
        };
        chunk.push(b);
        // Whole quanta only, so padding never straddles two chunks.
        if chunk.len() == CHUNK_SYMBOLS {
            decode_chunk(&chunk, &mut out)?;
            chunk.clear();
        }
    }
    if !chunk.is_empty() {
        decode_chunk(&chunk, &mut out)?;
    }
    Ok(out)
}

/// Symbols decoded at a time (a multiple of 4).
const CHUNK_SYMBOLS: usize = 64 * 1024;

fn decode_chunk(chunk: &[u8], out: &mut Vec<u8>) -> Result<(), Base64Error> {
    LENIENT
        .decode_vec(chunk, out)
        .map_err(|e| Base64Error::Invalid(e.to_string()))
}

/// Strip `data:[<media type>][;params];base64,` if present.
fn strip_data_url(s: &str) -> Result<&str, Base64Error> {
    let Some(head) = s.get(..5) else {
        return Ok(s);
    };
    if !head.eq_ignore_ascii_case("data:") {
        return Ok(s);
    }
    let comma = s
        .find(',')
        .ok_or_else(|| Base64Error::Invalid("data URL without a comma".into()))?;
    let meta = &s[5..comma];
    let is_base64 = meta
        .rsplit(';')
        .next()
        .is_some_and(|p| p.trim().eq_ignore_ascii_case("base64"));
    if !is_base64 {
        return Err(Base64Error::Invalid("data URL is not ;base64".into()));
    }
    Ok(&s[comma + 1..])
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: usize = 1024 * 1024;

    #[test]
    fn accepts_padded_and_unpadded() {
        assert_eq!(decode_base64_audio("aGVsbG8=", MIB).unwrap(), b"hello");
        assert_eq!(decode_base64_audio("aGVsbG8", MIB).unwrap(), b"hello");
        assert_eq!(decode_base64_audio("aGVsbA==", MIB).unwrap(), b"hell");
        assert_eq!(decode_base64_audio("aGVsbA", MIB).unwrap(), b"hell");
    }

    #[test]
    fn accepts_whitespace_and_line_wrapping() {
        let wrapped = "  aGVs\r\nbG8g\n d29y\tbGQ=\n";
        assert_eq!(decode_base64_audio(wrapped, MIB).unwrap(), b"hello world");
    }

    #[test]
    fn accepts_data_url_prefix() {
        let url = "data:audio/wav;base64,aGVsbG8=";
        assert_eq!(decode_base64_audio(url, MIB).unwrap(), b"hello");
        let url = "DATA:audio/ogg;codecs=opus;base64,aGVsbG8";
        assert_eq!(decode_base64_audio(url, MIB).unwrap(), b"hello");
    }

    #[test]
    fn accepts_url_safe_characters() {
        // 0xfb 0xff encodes to "+/8=" in the standard alphabet.
        assert_eq!(decode_base64_audio("-_8", MIB).unwrap(), [0xfb, 0xff]);
    }

    #[test]
    fn rejects_invalid_input() {
        for bad in [
            "aGVs*G8=",
            "a",
            "aGVsbG8=aGVs",
            "data:audio/wav,aGVsbG8=",
            "",
            "  \n",
        ] {
            assert!(
                matches!(decode_base64_audio(bad, MIB), Err(Base64Error::Invalid(_))),
                "{bad:?} should be invalid"
            );
        }
    }

    #[test]
    fn chunked_decoding_matches_the_whole_string_at_every_boundary() {
        // Lengths around the chunk size, with and without padding and line wrapping.
        let engine = base64::engine::general_purpose::STANDARD;
        for n in [
            CHUNK_SYMBOLS / 4 * 3 - 2,
            CHUNK_SYMBOLS / 4 * 3 - 1,
            CHUNK_SYMBOLS / 4 * 3,
            CHUNK_SYMBOLS / 4 * 3 + 1,
            2 * CHUNK_SYMBOLS / 4 * 3 + 2,
        ] {
            let bytes: Vec<u8> = (0..n).map(|i| (i * 7 + i / 251) as u8).collect();
            let text = engine.encode(&bytes);
            assert_eq!(decode_base64_audio(&text, 4 * MIB).unwrap(), bytes, "{n}");
            let unpadded = text.trim_end_matches('=');
            assert_eq!(
                decode_base64_audio(unpadded, 4 * MIB).unwrap(),
                bytes,
                "{n}"
            );
            let wrapped: String = text
                .as_bytes()
                .chunks(76)
                .map(|l| format!("{}\n", std::str::from_utf8(l).unwrap()))
                .collect();
            assert_eq!(
                decode_base64_audio(&wrapped, 4 * MIB).unwrap(),
                bytes,
                "{n}"
            );
            // A second string after the padding stays invalid wherever the chunks fall.
            if text.ends_with('=') {
                let two = format!("{text}{text}");
                assert!(decode_base64_audio(&two, 4 * MIB).is_err(), "{n}");
            }
        }
    }

    #[test]
    fn rejects_too_large_before_decoding() {
        // 12 symbols decode to 9 bytes: the limit is exact.
        assert_eq!(
            decode_base64_audio("aGVsbG8gd29y", 9).unwrap(),
            b"hello wor"
        );
        assert_eq!(
            decode_base64_audio("aGVsbG8gd29y", 8),
            Err(Base64Error::TooLarge { max_bytes: 8 })
        );
        // Not valid base64 at all, but over the limit by length: refused as too large without
        // being decoded.
        let huge = "!".repeat(4 * MIB);
        assert_eq!(
            decode_base64_audio(&huge, MIB),
            Err(Base64Error::TooLarge { max_bytes: MIB })
        );
    }
}
