use super::*;

fn roundtrip(samples: &[f32], format: AudioFormat) -> (Vec<u8>, DecodedAudio) {
    let bytes = encode(samples, TTS_RATE, format).expect("encode");
    let decoded = decode_for_asr(bytes.to_vec(), &DecodeLimits::default())
        .unwrap_or_else(|e| panic!("{format}: our own output does not decode: {e}"));
    (bytes, decoded)
}

#[test]
fn tone_survives_every_format() {
    let input = tone(440.0, TTS_RATE, 1.0);
    let expected = tone(440.0, 16_000, 1.0);
    for format in AudioFormat::ALL {
        let (_, out) = roundtrip(&input, format);
        assert!(
            out.duration_ms.abs_diff(1000) <= 60,
            "{format}: {} ms",
            out.duration_ms
        );
        assert!(
            out.samples_16k.len().abs_diff(16_000) <= 960,
            "{format}: {}",
            out.samples_16k.len()
        );
        let hz = zero_crossing_hz(&out.samples_16k[1600..14_400], 16_000);
        assert!((hz - 440.0).abs() < 10.0, "{format}: {hz} Hz");
        let level = rms(&out.samples_16k[1600..14_400]);
        assert!(
            (level - 0.5 / 2f64.sqrt()).abs() < 0.05,
            "{format}: rms {level}"
        );
        // Gapless: the tone comes back where it was (within 1 ms).
        let corr = best_correlation(&expected, &out.samples_16k, 16);
        assert!(corr > 0.95, "{format}: correlation {corr}");
    }
}

#[test]
fn chirp_survives_every_format() {
    // Speech band: above ~5 kHz Opus at 32 kbit/s codes energy, not waveform.
    let input = chirp(100.0, 4_000.0, TTS_RATE, 2.0);
    let expected = chirp(100.0, 4_000.0, 16_000, 2.0);
    for format in AudioFormat::ALL {
        let (_, out) = roundtrip(&input, format);
        assert!(
            out.duration_ms.abs_diff(2000) <= 60,
            "{format}: {} ms",
            out.duration_ms
        );
        let corr = best_correlation(&expected, &out.samples_16k, 16);
        assert!(corr > 0.95, "{format}: correlation {corr}");
    }
}

#[test]
fn wav_is_lossless_at_16_bits() {
    let input = chirp(100.0, 6_000.0, 16_000, 0.5);
    let bytes = encode(&input, 16_000, AudioFormat::Wav).unwrap();
    assert_eq!(bytes.len(), 44 + 2 * input.len());
    assert_eq!(&bytes[..4], b"RIFF");
    let out = decode_for_asr(bytes.to_vec(), &DecodeLimits::default()).unwrap();
    assert_eq!(out.samples_16k.len(), input.len());
    let max_err = input
        .iter()
        .zip(&out.samples_16k)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f32::max);
    assert!(max_err < 1.0 / 32_000.0, "max error {max_err}");
}

#[test]
fn encoders_are_deterministic() {
    let input = chirp(80.0, 5_000.0, TTS_RATE, 1.5);
    let other = chirp(80.0, 5_000.0, TTS_RATE, 1.4);
    for format in AudioFormat::ALL {
        let a = encode(&input, TTS_RATE, format).unwrap();
        let b = std::thread::spawn({
            let input = input.clone();
            move || encode(&input, TTS_RATE, format).unwrap()
        })
        .join()
        .unwrap();
        assert!(a == b, "{format}: two encodes of the same samples differ");
        assert_ne!(a, encode(&other, TTS_RATE, format).unwrap(), "{format}");
    }
}

#[test]
fn wav_bytes_are_pinned() {
    // A fixed header and rounding: any change here changes every stored wav.
    let bytes = encode(
        &[0.0, 0.5, -0.5, 1.0, -1.0, 2.0, f32::NAN],
        24_000,
        AudioFormat::Wav,
    )
    .unwrap();
    let data: Vec<i16> = bytes[44..]
        .chunks(2)
        .map(|c| i16::from_le_bytes([c[0], c[1]]))
        .collect();
    assert_eq!(data, [0, 16_384, -16_384, 32_767, -32_767, 32_767, 0]);
    assert_eq!(&bytes[8..16], b"WAVEfmt ");
    assert_eq!(
        u32::from_le_bytes(bytes[24..28].try_into().unwrap()),
        24_000
    );
}

#[test]
fn ogg_opus_follows_rfc_7845() {
    let n = 30_000; // 1.25 s: the last page ends mid-frame and must trim.
    let bytes = encode(&tone(440.0, TTS_RATE, 1.25), TTS_RATE, AudioFormat::Opus).unwrap();
    let pages = ogg_pages(&bytes);
    let (flags, granule, serial, head) = &pages[0];
    assert_eq!((*flags, *granule), (0x02, 0), "first page: BOS, granule 0");
    assert!(head.starts_with(b"OpusHead") && head.len() == 19);
    assert_eq!((head[8], head[9]), (1, 1), "version 1, mono");
    let pre_skip = u64::from(u16::from_le_bytes([head[10], head[11]]));
    assert_eq!(pre_skip, 312, "libopus lookahead at 24 kHz is 6.5 ms");
    assert_eq!(
        u32::from_le_bytes(head[12..16].try_into().unwrap()),
        TTS_RATE
    );
    assert!(pages[1].3.starts_with(b"OpusTags"));
    assert_eq!(pages[1].1, 0);
    assert!(pages.iter().all(|p| p.2 == *serial));
    let last = pages.last().unwrap();
    assert_eq!(last.0, 0x04, "last page: EOS");
    assert_eq!(last.1, pre_skip + 2 * n, "end granule trims the padding");
    let granules: Vec<u64> = pages[2..].iter().map(|p| p.1).collect();
    assert!(
        granules.windows(2).all(|w| w[0] < w[1]),
        "granules increase: {granules:?}"
    );
}

#[test]
fn ffmpeg_reads_our_files_at_the_exact_length() {
    let dir = TempDir::new();
    let n = 36_000; // 1.5 s at 24 kHz
    let input = tone(440.0, TTS_RATE, 1.5);
    for format in AudioFormat::ALL {
        let file = dir.path(&format!("out.{}", format.extension()));
        std::fs::write(&file, encode(&input, TTS_RATE, format).unwrap()).unwrap();
        let raw = dir.path("raw.f32");
        ffmpeg(&[
            "-i",
            file.to_str().unwrap(),
            "-f",
            "f32le",
            "-ac",
            "1",
            "-ar",
            "24000",
            raw.to_str().unwrap(),
        ]);
        let samples = read(&raw).len() / 4;
        // mp3 and Ogg Opus carry delay and padding; ffmpeg trims both.
        assert!(
            samples.abs_diff(n) <= 2,
            "{format}: ffmpeg decoded {samples} samples, wrote {n}"
        );
    }
}

#[test]
fn other_engine_rates_encode() {
    for rate in [16_000, 22_050, 44_100, 48_000] {
        let input = tone(440.0, rate, 1.0);
        for format in AudioFormat::ALL {
            let bytes = encode(&input, rate, format).unwrap();
            let out = decode_for_asr(bytes.to_vec(), &DecodeLimits::default()).unwrap();
            assert!(
                out.duration_ms.abs_diff(1000) <= 60,
                "{format} at {rate}: {} ms",
                out.duration_ms
            );
            let hz = zero_crossing_hz(&out.samples_16k[1600..14_400], 16_000);
            assert!((hz - 440.0).abs() < 10.0, "{format} at {rate}: {hz} Hz");
        }
    }
}

#[test]
fn empty_input_gives_a_valid_empty_file() {
    for format in AudioFormat::ALL {
        let bytes = encode(&[], TTS_RATE, format).unwrap();
        assert!(!bytes.is_empty(), "{format}");
    }
}

#[test]
fn format_names() {
    for format in AudioFormat::ALL {
        assert_eq!(format.as_str().parse::<AudioFormat>().unwrap(), format);
    }
    assert_eq!(AudioFormat::Opus.content_type(), "audio/ogg");
    assert_eq!(AudioFormat::Mp3.content_type(), "audio/mpeg");
    assert_eq!(AudioFormat::Wav.content_type(), "audio/wav");
    assert!("MP3".parse::<AudioFormat>().is_err());
    assert!("flac".parse::<AudioFormat>().is_err());
}

/// `cargo test --release -- --ignored --nocapture measure_`: speed and size per format.
#[test]
#[ignore]
fn measure_encode_and_decode_speed() {
    let secs = 60.0;
    // Speech-like: a wandering fundamental with harmonics and a little noise.
    let base = chirp(90.0, 260.0, TTS_RATE, secs);
    let mut seed = 1u32;
    let input: Vec<f32> = base
        .iter()
        .enumerate()
        .map(|(i, &b)| {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            let noise = (seed as f32 / u32::MAX as f32 - 0.5) * 0.02;
            let t = i as f32 / TTS_RATE as f32;
            0.4 * b + 0.2 * (2.0 * std::f32::consts::PI * 1_200.0 * t).sin() * b + noise
        })
        .collect();
    for format in AudioFormat::ALL {
        let start = std::time::Instant::now();
        let bytes = encode(&input, TTS_RATE, format).unwrap();
        let enc = start.elapsed().as_secs_f64() / secs;
        let start = std::time::Instant::now();
        decode_for_asr(bytes.to_vec(), &DecodeLimits::default()).unwrap();
        let dec = start.elapsed().as_secs_f64() / secs;
        println!(
            "{format}: encode {:.2} ms per audio second, decode {:.2} ms per audio second, {} bytes per second",
            enc * 1000.0,
            dec * 1000.0,
            bytes.len() as f64 / secs
        );
    }
}
