//! Headers that declare what the decoder will not handle are refused before anything is
//! allocated from them (issue 8): rates, channel counts, sizes and lengths.

use std::time::Duration;

use super::*;

/// A 16-bit PCM wav with every header field as given (`None`: the true value).
fn wav(
    rate: u32,
    channels: u16,
    frames: usize,
    riff_len: Option<u32>,
    data_len: Option<u32>,
) -> Vec<u8> {
    let data: Vec<u8> = (0..frames * usize::from(channels))
        .flat_map(|i| (((i as f64 * 0.06).sin() * 8000.0) as i16).to_le_bytes())
        .collect();
    let mut out = Vec::with_capacity(44 + data.len());
    out.extend_from_slice(b"RIFF");
    out.extend_from_slice(&riff_len.unwrap_or(36 + data.len() as u32).to_le_bytes());
    out.extend_from_slice(b"WAVEfmt ");
    out.extend_from_slice(&16u32.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes()); // PCM
    out.extend_from_slice(&channels.to_le_bytes());
    out.extend_from_slice(&rate.to_le_bytes());
    out.extend_from_slice(&rate.wrapping_mul(2 * u32::from(channels)).to_le_bytes());
    out.extend_from_slice(&(2 * channels).to_le_bytes());
    out.extend_from_slice(&16u16.to_le_bytes());
    out.extend_from_slice(b"data");
    out.extend_from_slice(&data_len.unwrap_or(data.len() as u32).to_le_bytes());
    out.extend_from_slice(&data);
    out
}

fn decode(bytes: Vec<u8>) -> Result<DecodedAudio, DecodeError> {
    decode_for_asr(bytes, &DecodeLimits::default())
}

#[track_caller]
fn assert_undecodable(result: Result<DecodedAudio, DecodeError>, what: &str, reason: &str) {
    match result {
        Err(DecodeError::Undecodable(r)) => assert!(r.contains(reason), "{what}: {r}"),
        other => panic!(
            "{what}: expected Undecodable ({reason}), got {:?}",
            other.map(|d| d.duration_ms)
        ),
    }
}

#[test]
fn wav_rates_outside_8_to_384_khz_are_refused() {
    for rate in [0, 1, 7_999, 384_001, 30_000_001, u32::MAX] {
        // A few KB whatever the rate: what is refused is the declaration.
        let bytes = wav(rate, 1, 2_000, None, None);
        // Refused by our check, not by a panic caught in symphonia (0 Hz panics there).
        assert_undecodable(decode(bytes), &format!("{rate} Hz"), "sample rate");
    }
    for rate in [8_000, 384_000] {
        let out = decode(wav(rate, 1, rate as usize / 2, None, None)).unwrap();
        assert_eq!(
            (out.duration_ms, out.samples_16k.len()),
            (500, 8_000),
            "{rate} Hz"
        );
    }
}

#[test]
fn channel_counts_outside_1_to_8_are_refused() {
    for channels in [0, 9, 255] {
        assert_undecodable(
            decode(wav(16_000, channels, 4_000, None, None)),
            &format!("{channels} channels"),
            "channels",
        );
    }
    assert_eq!(
        decode(wav(16_000, 8, 4_000, None, None))
            .unwrap()
            .duration_ms,
        250
    );
}

#[test]
fn wav_data_sizes_must_agree_with_the_upload() {
    // 4 GiB claimed, a quarter of a second present.
    assert_undecodable(
        decode(wav(16_000, 1, 4_000, None, Some(u32::MAX - 1))),
        "data chunk of 4 GiB",
        "",
    );
    // Claims 10 s inside a RIFF that says so too, holds 1 s.
    let riff = 36 + 320_000;
    assert_undecodable(
        decode(wav(16_000, 1, 16_000, Some(riff), Some(320_000))),
        "10 s claimed, 1 s present",
        "bytes of audio",
    );
    // The streaming placeholder (what ffmpeg writes to a pipe) declares nothing: accepted.
    let streamed = decode(wav(16_000, 1, 16_000, Some(u32::MAX), Some(u32::MAX))).unwrap();
    assert_eq!(streamed.duration_ms, 1000);
    // Cut inside the last frames: accepted, as before.
    let mut cut = wav(16_000, 1, 16_000, None, None);
    cut.truncate(cut.len() - 30);
    assert!(decode(cut).is_ok());
}

#[test]
fn truncated_headers_are_undecodable() {
    let full = wav(16_000, 1, 16_000, None, None);
    for len in [0, 4, 11, 12, 20, 30, 36, 43, 44] {
        assert!(
            matches!(
                decode(full[..len].to_vec()),
                Err(DecodeError::Undecodable(_))
            ),
            "header cut to {len} bytes"
        );
    }
}

/// Overwrite STREAMINFO's sample rate (20 bits) and total samples (36 bits).
fn patch_streaminfo(flac: &mut [u8], rate: Option<u32>, total: Option<u64>) {
    assert_eq!(&flac[..4], b"fLaC");
    assert_eq!(flac[4] & 0x7f, 0, "STREAMINFO comes first");
    let si = &mut flac[8..8 + 34];
    if let Some(rate) = rate {
        si[10] = (rate >> 12) as u8;
        si[11] = (rate >> 4) as u8;
        si[12] = (si[12] & 0x0f) | ((rate as u8 & 0x0f) << 4);
    }
    if let Some(total) = total {
        si[13] = (si[13] & 0xf0) | ((total >> 32) as u8 & 0x0f);
        si[14..18].copy_from_slice(&(total as u32).to_be_bytes());
    }
}

#[test]
fn flac_streaminfo_that_lies_is_refused() {
    let dir = TempDir::new();
    let file = dir.path("a.flac");
    ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        "sine=frequency=440:sample_rate=16000:duration=2",
        file.to_str().unwrap(),
    ]);
    let flac = read(&file);
    assert_eq!(decode(flac.clone()).unwrap().duration_ms, 2000);
    let lie = |rate, total| {
        let mut bytes = flac.clone();
        patch_streaminfo(&mut bytes, rate, total);
        decode(bytes)
    };
    // symphonia refuses some rates itself (e.g. 1 Hz: "end of stream" after probing on);
    // the rest meets our check. Undecodable either way.
    for rate in [1, 7_999, 384_001, 1_048_575] {
        assert!(
            matches!(lie(Some(rate), None), Err(DecodeError::Undecodable(_))),
            "STREAMINFO at {rate} Hz"
        );
    }
    assert_undecodable(lie(Some(1_048_575), None), "1 048 575 Hz", "sample rate");
    // Longer than the limit, from the header alone.
    assert_eq!(
        lie(None, Some(16_000 * 3_600)),
        Err(DecodeError::TooLong { max_seconds: 900 })
    );
    assert_eq!(
        lie(None, Some((1 << 36) - 1)),
        Err(DecodeError::TooLong { max_seconds: 900 })
    );
    assert_undecodable(lie(None, Some(16_000 * 60)), "1 min declared", "truncated");
    assert_undecodable(lie(None, Some(4_000)), "0.25 s declared", "STREAMINFO");
}

#[test]
fn length_declared_over_the_limit_is_too_long_before_decoding() {
    // A wav that holds what it declares, 3 s against a 2 s limit; and a 20-minute header on
    // an upload that holds 20 minutes of 8 kHz audio is refused the same way by default.
    let limits = DecodeLimits {
        max_duration: Duration::from_secs(2),
        ..DecodeLimits::default()
    };
    assert_eq!(
        decode_for_asr(wav(16_000, 1, 48_000, None, None), &limits),
        Err(DecodeError::TooLong { max_seconds: 2 })
    );
    // Streamed (placeholder sizes): found while decoding instead.
    assert_eq!(
        decode_for_asr(
            wav(16_000, 1, 48_000, Some(u32::MAX), Some(u32::MAX)),
            &limits
        ),
        Err(DecodeError::TooLong { max_seconds: 2 })
    );
}

/// Overwrite the sample rate of the Vorbis identification header on the first Ogg page, and
/// fix the page's CRC so only the header is wrong.
fn patch_vorbis_rate(ogg: &mut [u8], rate: u32) {
    assert_eq!(&ogg[..4], b"OggS");
    let segments = usize::from(ogg[26]);
    let body = 27 + segments;
    let page_len = body + ogg[27..body].iter().map(|&s| usize::from(s)).sum::<usize>();
    assert_eq!(&ogg[body..body + 7], b"\x01vorbis");
    ogg[body + 12..body + 16].copy_from_slice(&rate.to_le_bytes());
    ogg[22..26].fill(0);
    let crc = ogg_crc(&ogg[..page_len]);
    ogg[22..26].copy_from_slice(&crc.to_le_bytes());
}

/// Overwrite the Matroska `SamplingFrequency` (id 0xB5, 8-byte float).
fn patch_webm_rate(webm: &mut [u8], rate: f64) {
    let at = webm
        .windows(2)
        .position(|w| w == [0xB5, 0x88])
        .expect("SamplingFrequency element");
    webm[at + 2..at + 10].copy_from_slice(&rate.to_be_bytes());
}

#[test]
fn ogg_vorbis_and_webm_rates_outside_the_range_are_refused() {
    let dir = TempDir::new();
    let ogg = dir.path("a.ogg");
    let webm = dir.path("a.webm");
    for (file, codec) in [(&ogg, "libvorbis"), (&webm, "libopus")] {
        ffmpeg(&[
            "-f",
            "lavfi",
            "-i",
            "sine=frequency=440:sample_rate=48000:duration=1",
            "-c:a",
            codec,
            file.to_str().unwrap(),
        ]);
    }
    let (ogg, webm) = (read(&ogg), read(&webm));
    assert!(decode(ogg.clone()).is_ok() && decode(webm.clone()).is_ok());
    for rate in [1, 7_999, 384_001, 30_000_001, u32::MAX] {
        let mut bytes = ogg.clone();
        patch_vorbis_rate(&mut bytes, rate);
        assert!(
            matches!(decode(bytes), Err(DecodeError::Undecodable(_))),
            "vorbis at {rate} Hz"
        );
    }
    for rate in [
        0.0,
        1.0,
        7_999.0,
        384_001.0,
        4_294_967_295.0,
        1e300,
        f64::NAN,
        f64::INFINITY,
    ] {
        let mut bytes = webm.clone();
        patch_webm_rate(&mut bytes, rate);
        assert_undecodable(decode(bytes), &format!("webm at {rate} Hz"), "sample rate");
    }
}

#[test]
fn flac_metadata_lengths_past_their_block_are_refused_before_allocating() {
    let dir = TempDir::new();
    let file = dir.path("tagged.flac");
    ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        "sine=frequency=440:sample_rate=16000:duration=1",
        "-metadata",
        "title=hostile",
        file.to_str().unwrap(),
    ]);
    let flac = read(&file);
    assert!(decode(flac.clone()).is_ok());
    // Walk the metadata blocks to the VORBIS_COMMENT (type 4).
    let mut at = 4;
    while flac[at] & 0x7f != 4 {
        assert_eq!(flac[at] & 0x80, 0, "no VORBIS_COMMENT block");
        at += 4
            + (usize::from(flac[at + 1]) << 16
                | usize::from(flac[at + 2]) << 8
                | usize::from(flac[at + 3]));
    }
    // The vendor string, then the first comment, claim 4 GiB (symphonia would allocate it).
    let mut vendor = flac.clone();
    vendor[at + 4..at + 8].copy_from_slice(&u32::MAX.to_le_bytes());
    assert_undecodable(decode(vendor), "vendor of 4 GiB", "longer than its block");
    let vendor_len = u32::from_le_bytes(flac[at + 4..at + 8].try_into().unwrap()) as usize;
    let first = at + 4 + 4 + vendor_len + 4;
    let mut comment = flac.clone();
    comment[first..first + 4].copy_from_slice(&0xFFFF_FFF0u32.to_le_bytes());
    assert_undecodable(decode(comment), "comment of 4 GiB", "longer than its block");
}

#[test]
fn webm_element_sizes_past_the_upload_are_refused_before_allocating() {
    let dir = TempDir::new();
    let file = dir.path("a.webm");
    ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        "sine=frequency=440:sample_rate=48000:duration=1",
        "-c:a",
        "libopus",
        file.to_str().unwrap(),
    ]);
    let webm = read(&file);
    // DocType ("webm", id 0x4282, size 0x84) declaring 2^56 - 2 bytes instead: symphonia
    // allocates what an element declares before reading it.
    let at = webm
        .windows(3)
        .position(|w| w == [0x42, 0x82, 0x84])
        .expect("DocType");
    // The EBML header (a master, 1-byte size after its 4-byte id) must hold it: 2^56 - 1 too.
    assert_eq!(webm[..4], [0x1a, 0x45, 0xdf, 0xa3]);
    assert!(webm[4] & 0x80 != 0, "1-byte size");
    let mut bytes = webm[..4].to_vec();
    bytes.extend_from_slice(&[0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xf0]);
    bytes.extend_from_slice(&webm[5..at + 2]);
    bytes.extend_from_slice(&[0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xc0]);
    bytes.extend_from_slice(&webm[at + 3..]);
    assert_undecodable(
        decode(bytes),
        "DocType of 2^56 bytes",
        "longer than the upload",
    );
}

#[test]
fn webm_laced_frame_sizes_past_their_block_are_refused_before_allocating() {
    let dir = TempDir::new();
    let file = dir.path("a.webm");
    ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        "sine=frequency=440:sample_rate=48000:duration=1",
        "-c:a",
        "libopus",
        file.to_str().unwrap(),
    ]);
    let webm = read(&file);
    // The first SimpleBlock (id 0xA3) of track 1 (0x81), a keyframe (flags 0x80).
    let (at, data) = (0..webm.len() - 16)
        .find_map(|i| {
            if webm[i] != 0xa3 || webm[i + 1] == 0 {
                return None;
            }
            let data = i + 1 + webm[i + 1].leading_zeros() as usize + 1;
            (webm[data] == 0x81 && webm[data + 3] == 0x80).then_some((i, data))
        })
        .expect("a SimpleBlock");
    assert!(at > 0);
    // EBML lacing, one size given: 2^56 - 256 bytes (symphonia would allocate it).
    let mut bytes = webm.clone();
    bytes[data + 3] = 0x86;
    bytes[data + 4] = 1;
    bytes[data + 5..data + 13].copy_from_slice(&[0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00]);
    assert_undecodable(decode(bytes), "laced frame of 2^56 bytes", "laced frame");
}

#[test]
fn wav_info_values_longer_than_the_upload_are_refused_before_allocating() {
    // RIFF declares 4 GiB, so symphonia's chunk bounds allow a LIST/INFO value of almost that.
    let audio = wav(16_000, 1, 16_000, None, None);
    let mut list = b"LIST".to_vec();
    list.extend_from_slice(&0xFFFF_0000u32.to_le_bytes());
    list.extend_from_slice(b"INFOINAM");
    list.extend_from_slice(&0xFFFE_0000u32.to_le_bytes());
    list.extend_from_slice(b"hostile");
    let mut bytes = audio[..12].to_vec();
    bytes[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
    bytes.extend_from_slice(&list);
    bytes.extend_from_slice(&audio[12..]);
    assert_undecodable(
        decode(bytes),
        "INFO value of 4 GiB",
        "longer than the upload",
    );
    // A short, honest INFO list is fine.
    let mut list = b"LIST".to_vec();
    list.extend_from_slice(&16u32.to_le_bytes());
    list.extend_from_slice(b"INFOINAM");
    list.extend_from_slice(&4u32.to_le_bytes());
    list.extend_from_slice(b"abc\0");
    let mut bytes = audio[..12].to_vec();
    bytes[4..8].copy_from_slice(&((audio.len() - 8 + list.len()) as u32).to_le_bytes());
    bytes.extend_from_slice(&list);
    bytes.extend_from_slice(&audio[12..]);
    assert_eq!(decode(bytes).unwrap().duration_ms, 1000);
}

#[test]
fn ogg_comments_longer_than_their_packet_are_refused_before_allocating() {
    let dir = TempDir::new();
    let file = dir.path("a.ogg");
    ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        "sine=frequency=440:sample_rate=48000:duration=1",
        "-c:a",
        "libvorbis",
        "-metadata",
        "title=hostile",
        file.to_str().unwrap(),
    ]);
    let ogg = read(&file);
    assert!(decode(ogg.clone()).is_ok());
    // The comment header: "\x03vorbis", vendor length and vendor, count, first comment length.
    let at = ogg
        .windows(7)
        .position(|w| w == b"\x03vorbis")
        .expect("comment header");
    let vendor = u32::from_le_bytes(ogg[at + 7..at + 11].try_into().unwrap()) as usize;
    let first = at + 11 + vendor + 4;
    let mut bytes = ogg.clone();
    bytes[first..first + 4].copy_from_slice(&0xFFFF_FFF0u32.to_le_bytes());
    // Fix the CRC of the page holding it, so only the length is wrong.
    let page = bytes[..first]
        .windows(4)
        .rposition(|w| w == b"OggS")
        .unwrap();
    let segments = usize::from(bytes[page + 26]);
    let len = 27
        + segments
        + bytes[page + 27..page + 27 + segments]
            .iter()
            .map(|&s| usize::from(s))
            .sum::<usize>();
    bytes[page + 22..page + 26].fill(0);
    let crc = ogg_crc(&bytes[page..page + len]);
    bytes[page + 22..page + 26].copy_from_slice(&crc.to_le_bytes());
    assert_undecodable(decode(bytes), "comment of 4 GiB", "longer than its packet");
}
