use super::*;

/// Pushes `pieces` one by one; returns each push's bytes.
fn stream(pieces: &[Vec<f32>], format: AudioFormat) -> Vec<Vec<u8>> {
    let mut encoder = StreamEncoder::new(format, TTS_RATE).unwrap();
    let last = pieces.len() - 1;
    pieces
        .iter()
        .enumerate()
        .map(|(i, p)| encoder.push(p, i == last).unwrap())
        .collect()
}

/// Three sentences' worth: tones of different pitch with silences between, 0.9 s + 1.3 s + 0.7 s.
fn pieces() -> Vec<Vec<f32>> {
    let mut a = tone(300.0, TTS_RATE, 0.65);
    a.resize(a.len() + 6_000, 0.0);
    let mut b = tone(440.0, TTS_RATE, 1.05);
    b.resize(b.len() + 6_000, 0.0);
    let c = tone(520.0, TTS_RATE, 0.7);
    vec![a, b, c]
}

#[test]
fn one_piece_is_exactly_the_one_shot_file() {
    let input = chirp(100.0, 3_000.0, TTS_RATE, 1.2);
    for format in AudioFormat::ALL {
        let streamed = stream(std::slice::from_ref(&input), format);
        assert_eq!(streamed.len(), 1);
        assert!(
            streamed[0] == encode(&input, TTS_RATE, format).unwrap(),
            "{format}: one push differs from encode()"
        );
    }
}

#[test]
fn pieces_joined_decode_to_the_whole_audio() {
    let pieces = pieces();
    let samples: usize = pieces.iter().map(Vec::len).sum();
    let secs = samples as f64 / f64::from(TTS_RATE);
    let dir = TempDir::new();
    for format in AudioFormat::ALL {
        let chunks = stream(&pieces, format);
        assert!(
            chunks.iter().take(2).all(|c| !c.is_empty()),
            "{format}: the first pieces give bytes at once"
        );
        let file: Vec<u8> = chunks.concat();
        // Our own decoder (the one uploads go through).
        let ours = decode_for_asr(file.clone(), &DecodeLimits::default())
            .unwrap_or_else(|e| panic!("{format}: {e}"));
        // mp3 without the Info tag keeps LAME's delay and padding (about 50 + 20 ms here).
        let slack = if format == AudioFormat::Mp3 { 120 } else { 20 };
        let want = (secs * 1000.0) as u64;
        assert!(
            ours.duration_ms >= want - 20 && ours.duration_ms <= want + slack,
            "{format}: {} ms decoded, {want} ms pushed",
            ours.duration_ms
        );
        // ffmpeg, an independent decoder.
        let path = dir.path(&format!("streamed.{}", format.extension()));
        std::fs::write(&path, &file).unwrap();
        let raw = dir.path("raw.f32");
        ffmpeg(&[
            "-i",
            path.to_str().unwrap(),
            "-f",
            "f32le",
            "-ac",
            "1",
            "-ar",
            "24000",
            raw.to_str().unwrap(),
        ]);
        let decoded = read(&raw).len() / 4;
        let extra = if format == AudioFormat::Mp3 { 2_400 } else { 2 };
        assert!(
            decoded + 2 >= samples && decoded <= samples + extra,
            "{format}: ffmpeg decoded {decoded} samples, {samples} pushed"
        );
        // The tones come back in place: the middle piece's pitch where it was pushed.
        let at = pieces[0].len() as f64 / f64::from(TTS_RATE);
        let mid =
            &ours.samples_16k[((at + 0.2) * 16_000.0) as usize..((at + 0.8) * 16_000.0) as usize];
        let hz = zero_crossing_hz(mid, 16_000);
        assert!((hz - 440.0).abs() < 12.0, "{format}: {hz} Hz");
        // Deterministic: the same pieces, the same bytes.
        assert!(stream(&pieces, format) == chunks, "{format}");
    }
}

#[test]
fn streamed_wav_has_the_open_ended_header() {
    let pieces = pieces();
    let chunks = stream(&pieces, AudioFormat::Wav);
    let header = &chunks[0][..44];
    assert_eq!(&header[..4], b"RIFF");
    assert_eq!(
        &header[4..8],
        &[0xFF; 4],
        "RIFF size: streaming placeholder"
    );
    assert_eq!(&header[36..40], b"data");
    assert_eq!(
        &header[40..44],
        &[0xFF; 4],
        "data size: streaming placeholder"
    );
    assert_eq!(chunks[0].len(), 44 + 2 * pieces[0].len());
    for (chunk, piece) in chunks[1..].iter().zip(&pieces[1..]) {
        assert_eq!(chunk.len(), 2 * piece.len(), "PCM only after the header");
    }
}

#[test]
fn streamed_ogg_opus_is_one_stream_of_whole_pages_per_piece() {
    let pieces = pieces();
    let chunks = stream(&pieces, AudioFormat::Opus);
    for chunk in &chunks {
        // Each push's bytes are whole pages (checked by parsing them alone).
        ogg_pages(chunk);
    }
    let pages = ogg_pages(&chunks.concat());
    let serial = pages[0].2;
    assert!(pages.iter().all(|p| p.2 == serial), "one logical stream");
    assert_eq!(pages[0].0, 0x02, "BOS first");
    assert!(pages[0].3.starts_with(b"OpusHead"));
    assert!(pages[1].3.starts_with(b"OpusTags"));
    assert!(pages[1..].iter().all(|p| p.0 & 0x02 == 0), "one BOS");
    let last = pages.last().unwrap();
    assert_eq!(last.0, 0x04, "EOS last");
    assert!(pages[..pages.len() - 1].iter().all(|p| p.0 & 0x04 == 0));
    let samples: u64 = pieces.iter().map(|p| p.len() as u64).sum();
    assert_eq!(last.1, 312 + 2 * samples, "end granule trims the padding");
    let granules: Vec<u64> = pages[2..].iter().map(|p| p.1).collect();
    assert!(granules.windows(2).all(|w| w[0] < w[1]), "{granules:?}");
}

#[test]
fn a_rate_opus_does_not_take_is_encoded_at_the_end() {
    let rate = 22_050;
    let mut encoder = StreamEncoder::new(AudioFormat::Opus, rate).unwrap();
    let a = tone(440.0, rate, 0.5);
    let b = tone(440.0, rate, 0.5);
    assert!(encoder.push(&a, false).unwrap().is_empty());
    let file = encoder.push(&b, true).unwrap();
    let whole: Vec<f32> = a.iter().chain(&b).copied().collect();
    assert!(file == encode(&whole, rate, AudioFormat::Opus).unwrap());
}

/// Streams `pieces` and finishes the concatenation: the stored file.
fn finished(pieces: &[Vec<f32>], format: AudioFormat) -> (Vec<u8>, Vec<u8>) {
    let mut encoder = StreamEncoder::new(format, TTS_RATE).unwrap();
    let last = pieces.len() - 1;
    let mut streamed = Vec::new();
    for (i, p) in pieces.iter().enumerate() {
        streamed.extend(encoder.push(p, i == last).unwrap());
    }
    let mut file = streamed.clone();
    encoder.finish(&mut file).unwrap();
    (streamed, file)
}

#[test]
fn finished_wav_has_exact_sizes_and_the_streamed_samples() {
    let pieces = pieces();
    let samples: usize = pieces.iter().map(Vec::len).sum();
    let (streamed, file) = finished(&pieces, AudioFormat::Wav);
    assert_eq!(file.len(), streamed.len());
    assert_eq!(
        &file[4..8],
        &(file.len() as u32 - 8).to_le_bytes(),
        "RIFF size"
    );
    assert_eq!(
        &file[40..44],
        &(2 * samples as u32).to_le_bytes(),
        "data size"
    );
    assert_eq!(file[..4], streamed[..4]);
    assert_eq!(file[8..40], streamed[8..40], "the format chunk as streamed");
    assert!(file[44..] == streamed[44..], "the PCM as streamed");
    // hound trusts the header: it reads exactly the samples pushed.
    let reader = hound::WavReader::new(std::io::Cursor::new(&file)).unwrap();
    assert_eq!(reader.duration() as usize, samples);
    assert_eq!(reader.len() as usize, samples);
    // And it is the file one push of all the samples gives.
    let whole: Vec<f32> = pieces.concat();
    assert!(file == encode(&whole, TTS_RATE, AudioFormat::Wav).unwrap());
}

#[test]
fn finished_mp3_is_the_stream_behind_its_lame_tag() {
    let mut tiny_first = pieces();
    tiny_first.insert(0, tone(200.0, TTS_RATE, 0.004));
    for pieces in [pieces(), tiny_first] {
        finished_mp3(&pieces);
    }
}

fn finished_mp3(pieces: &[Vec<f32>]) {
    let samples: usize = pieces.iter().map(Vec::len).sum();
    let (streamed, file) = finished(pieces, AudioFormat::Mp3);
    assert!(
        file.ends_with(&streamed),
        "the streamed frames, unchanged, after the tag"
    );
    let tag = &file[..file.len() - streamed.len()];
    assert!(tag.windows(4).any(|w| w == b"Info"), "a CBR Info tag frame");
    assert_eq!(
        lame_gapless_samples(&streamed),
        None,
        "the stream has no tag"
    );
    assert_eq!(
        lame_gapless_samples(&file),
        Some(samples as u64),
        "the tag declares the gapless length"
    );
    // The streamed frames are those of an encoder with no tag at all: dropping the frame
    // reserved for it changes nothing else.
    let mut plain = super::super::encode::mp3_encoder(TTS_RATE, false).unwrap();
    let mut untagged = Vec::new();
    for piece in pieces {
        super::super::encode::mp3_frames(&mut plain, piece, &mut untagged).unwrap();
    }
    super::super::encode::mp3_flush(&mut plain, &mut untagged).unwrap();
    let diff = untagged.iter().zip(&streamed).position(|(a, b)| a != b);
    assert!(
        untagged == streamed,
        "streamed frames = frames without a tag: {} vs {} bytes, first difference at {diff:?}",
        untagged.len(),
        streamed.len()
    );
    // ffmpeg honours the tag: exactly the samples pushed come back.
    let dir = TempDir::new();
    let path = dir.path("finished.mp3");
    std::fs::write(&path, &file).unwrap();
    let raw = dir.path("raw.f32");
    ffmpeg(&[
        "-i",
        path.to_str().unwrap(),
        "-f",
        "f32le",
        "-ac",
        "1",
        "-ar",
        "24000",
        raw.to_str().unwrap(),
    ]);
    let decoded = read(&raw).len() / 4;
    assert!(
        decoded.abs_diff(samples) <= 2,
        "ffmpeg decoded {decoded} samples of {samples}"
    );
}

#[test]
fn finishing_leaves_one_piece_and_ogg_opus_as_they_are() {
    let pieces = pieces();
    let (streamed, file) = finished(&pieces, AudioFormat::Opus);
    assert!(
        file == streamed,
        "Ogg Opus: the last page ends the stream already"
    );
    for format in AudioFormat::ALL {
        let one = std::slice::from_ref(&pieces[1]);
        let (streamed, file) = finished(one, format);
        assert!(file == streamed, "{format}: one piece is the one-shot file");
    }
    // The one-shot mp3 carries the same kind of tag.
    let one = encode(&pieces[1], TTS_RATE, AudioFormat::Mp3).unwrap();
    assert_eq!(lame_gapless_samples(&one), Some(pieces[1].len() as u64));
}
