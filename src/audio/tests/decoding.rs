use std::time::Duration;

use super::*;

fn decode(bytes: &[u8]) -> Result<DecodedAudio, DecodeError> {
    decode_for_asr(bytes.to_vec(), &DecodeLimits::default())
}

fn assert_tone(out: &DecodedAudio, secs: f64, what: &str) {
    let want = (secs * 1000.0) as u64;
    assert!(
        out.duration_ms.abs_diff(want) <= 60,
        "{what}: {} ms, want {want}",
        out.duration_ms
    );
    let len = out.samples_16k.len() as f64 / 16_000.0;
    assert!(
        (len - secs).abs() <= 0.06,
        "{what}: {len} s of 16 kHz samples"
    );
    let mid = &out.samples_16k[out.samples_16k.len() / 10..out.samples_16k.len() * 9 / 10];
    let hz = zero_crossing_hz(mid, 16_000);
    assert!((hz - 440.0).abs() < 10.0, "{what}: {hz} Hz");
    assert!(rms(mid) > 0.05, "{what}: rms {}", rms(mid));
}

/// A 440 Hz tone made by ffmpeg in the given output format.
fn ffmpeg_tone(dir: &TempDir, name: &str, secs: f64, out_args: &[&str]) -> Vec<u8> {
    let file = dir.path(name);
    let src = format!("sine=frequency=440:sample_rate=48000:duration={secs}");
    let mut args = vec!["-f", "lavfi", "-i", &src];
    args.extend_from_slice(out_args);
    args.push(file.to_str().unwrap());
    ffmpeg(&args);
    read(&file)
}

#[test]
fn decodes_what_clients_upload() {
    let dir = TempDir::new();
    let cases: &[(&str, &[&str])] = &[
        (
            "stereo44.wav",
            &["-ac", "2", "-ar", "44100", "-c:a", "pcm_s16le"],
        ),
        (
            "float.wav",
            &["-ac", "1", "-ar", "22050", "-c:a", "pcm_f32le"],
        ),
        ("tone.flac", &["-ac", "1", "-ar", "44100"]),
        (
            "tone.mp3",
            &[
                "-ac",
                "2",
                "-ar",
                "44100",
                "-c:a",
                "libmp3lame",
                "-b:a",
                "128k",
            ],
        ),
        (
            "vorbis.ogg",
            &["-ac", "2", "-ar", "44100", "-c:a", "libvorbis"],
        ),
        ("opus.ogg", &["-ac", "1", "-c:a", "libopus", "-b:a", "32k"]),
        (
            "stereo-opus.opus",
            &["-ac", "2", "-c:a", "libopus", "-b:a", "64k"],
        ),
        ("opus.webm", &["-ac", "1", "-c:a", "libopus", "-b:a", "32k"]),
        ("vorbis.webm", &["-ac", "1", "-c:a", "libvorbis"]),
    ];
    for (name, args) in cases {
        let bytes = ffmpeg_tone(&dir, name, 2.5, args);
        let out = decode(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_tone(&out, 2.5, name);
    }
}

#[test]
fn decodes_browser_style_streamed_webm() {
    // MediaRecorder output is written as a stream: no duration, no cues. Piping ffmpeg's
    // matroska muxer into a file that cannot be seeked produces the same shape.
    let dir = TempDir::new();
    let file = dir.path("stream.webm");
    let cmd = format!(
        "ffmpeg -hide_banner -loglevel error -f lavfi -i sine=frequency=440:duration=3 \
         -c:a libopus -f webm - | cat > {}",
        file.display()
    );
    run("sh", &["-c", &cmd]);
    assert_tone(&decode(&read(&file)).unwrap(), 3.0, "streamed webm");
}

#[test]
fn decodes_sox_fixtures() {
    let dir = TempDir::new();
    for (name, extra) in [("s24.wav", "-b24"), ("u8.wav", "-b8"), ("sox.flac", "-b16")] {
        let file = dir.path(name);
        let path = file.to_str().unwrap();
        run(
            "sox",
            &[
                "-n", "-r", "32000", "-c", "2", extra, path, "synth", "1.5", "sine", "440", "vol",
                "0.5",
            ],
        );
        assert_tone(&decode(&read(&file)).unwrap(), 1.5, name);
    }
}

#[test]
fn refuses_clips_over_the_duration_limit() {
    let limits = DecodeLimits {
        max_duration: Duration::from_secs(2),
        ..DecodeLimits::default()
    };
    let clip = tone(440.0, TTS_RATE, 3.0);
    for format in AudioFormat::ALL {
        let bytes = encode(&clip, TTS_RATE, format).unwrap();
        assert_eq!(
            decode_for_asr(bytes.to_vec(), &limits),
            Err(DecodeError::TooLong { max_seconds: 2 }),
            "{format}"
        );
    }
    let dir = TempDir::new();
    let flac = ffmpeg_tone(&dir, "long.flac", 3.0, &[]);
    assert_eq!(
        decode_for_asr(flac.to_vec(), &limits),
        Err(DecodeError::TooLong { max_seconds: 2 })
    );
    // Just under the limit is fine.
    let ok = encode(&tone(440.0, TTS_RATE, 1.9), TTS_RATE, AudioFormat::Opus).unwrap();
    assert!(decode_for_asr(ok.to_vec(), &limits).is_ok());
}

fn assert_undecodable(bytes: &[u8], what: &str) {
    match decode(bytes) {
        Err(DecodeError::Undecodable(_)) => {}
        other => panic!(
            "{what}: expected Undecodable, got {:?}",
            other.map(|d| d.duration_ms)
        ),
    }
}

/// Deterministic pseudo-random bytes (xorshift).
fn noise_bytes(n: usize, mut seed: u64) -> Vec<u8> {
    (0..n)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 24) as u8
        })
        .collect()
}

#[test]
fn garbage_is_undecodable() {
    assert_undecodable(b"", "empty");
    assert_undecodable(b"hello, world", "text");
    assert_undecodable(b"RIFF\x24\x00\x00\x00WAVE", "wav header only");
    for seed in 1..=20 {
        assert_undecodable(
            &noise_bytes(64 * 1024, seed),
            &format!("random bytes, seed {seed}"),
        );
    }
    let mut png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR".to_vec();
    png.extend(noise_bytes(4096, 99));
    assert_undecodable(&png, "png");
    for magic in [
        &b"OggS"[..],
        b"fLaC",
        b"ID3\x03\x00\x00\x00\x00\x00\x00",
        b"\x1aE\xdf\xa3",
        b"\xff\xfb\x90\x64",
    ] {
        let mut bytes = magic.to_vec();
        bytes.extend(noise_bytes(16 * 1024, 7));
        assert_undecodable(&bytes, &format!("random after {magic:?}"));
    }
}

#[test]
fn truncated_files() {
    let clip = tone(440.0, TTS_RATE, 3.0);
    for format in AudioFormat::ALL {
        let bytes = encode(&clip, TTS_RATE, format).unwrap();
        for cut in [100, 300, 600] {
            assert_undecodable(&bytes[..cut], &format!("{format} cut to {cut} bytes"));
        }
        // Half the file, where the container declares the full length: refused.
        if format != AudioFormat::Opus {
            assert_undecodable(&bytes[..bytes.len() / 2], &format!("{format} cut in half"));
        }
        // Cut inside the last frame: the rest is there, accepted.
        let out = decode(&bytes[..bytes.len() - 50]).unwrap_or_else(|e| panic!("{format}: {e}"));
        assert!(
            out.duration_ms.abs_diff(3000) <= 100,
            "{format}: {} ms",
            out.duration_ms
        );
    }
}

#[test]
fn too_short_is_undecodable() {
    let blip = encode(&tone(440.0, TTS_RATE, 0.05), TTS_RATE, AudioFormat::Wav).unwrap();
    assert_undecodable(&blip, "50 ms");
    let short = encode(&tone(440.0, TTS_RATE, 0.2), TTS_RATE, AudioFormat::Wav).unwrap();
    assert!(decode(&short).is_ok());
}

#[test]
fn silence_is_valid_audio() {
    let bytes = encode(&vec![0.0; 24_000], TTS_RATE, AudioFormat::Wav).unwrap();
    let out = decode(&bytes).unwrap();
    assert_eq!(out.duration_ms, 1000);
    assert!(out.samples_16k.iter().all(|&s| s == 0.0));
}

#[test]
fn containers_with_delay_and_padding_info_decode_to_the_exact_length() {
    // Encoder delay and padding (mp3 LAME tag, Ogg pre-skip and end granule) are removed, so
    // the durations we report match the source to the sample. WebM carries pre-skip but its
    // end padding (DiscardPadding) is not read: up to one packet (20 ms) more.
    let dir = TempDir::new();
    let cases: &[(&str, &[&str], usize)] = &[
        ("a.wav", &[], 0),
        ("a.flac", &[], 0),
        ("a.mp3", &["-c:a", "libmp3lame"], 0),
        ("a.ogg", &["-c:a", "libvorbis"], 0),
        ("b.ogg", &["-c:a", "libopus"], 0),
        ("a.webm", &["-c:a", "libopus"], 320),
    ];
    for (name, args, slack) in cases {
        let bytes = ffmpeg_tone(&dir, name, 2.5, args);
        let n = decode(&bytes).unwrap().samples_16k.len();
        assert!(
            (40_000..=40_000 + slack).contains(&n),
            "{name}: {n} samples at 16 kHz"
        );
    }
    for format in AudioFormat::ALL {
        let out = decode(&encode(&tone(440.0, TTS_RATE, 2.5), TTS_RATE, format).unwrap()).unwrap();
        assert_eq!(
            (out.duration_ms, out.samples_16k.len()),
            (2500, 40_000),
            "ours, {format}"
        );
    }
}
