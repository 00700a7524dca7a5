//! The live decoder's containers: Opus in Ogg and WebM arriving in arbitrary pieces decodes to
//! what the file decoder makes of the same bytes; anything else is refused, bounded.

use super::super::{ContainerError, LiveDecoder, LiveEncoding};
use super::*;

/// The bytes pushed in pieces of the given sizes, cycling, then the converter's tail.
fn live(bytes: &[u8], pieces: &[usize]) -> Result<Vec<f32>, ContainerError> {
    let mut decoder = LiveDecoder::new(LiveEncoding::Container, 16_000).unwrap();
    let mut out = Vec::new();
    let mut rest = bytes;
    for &n in pieces.iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let (piece, tail) = rest.split_at(n.min(rest.len()));
        decoder.push(piece, &mut out)?;
        rest = tail;
    }
    decoder.finish(&mut out);
    Ok(out)
}

/// The file decoder's and the live decoder's samples of one stream agree, whatever the pieces.
fn assert_same_as_file(bytes: &[u8], what: &str) {
    let file = decode_for_asr(bytes.to_vec(), &DecodeLimits::default())
        .unwrap_or_else(|e| panic!("{what}: file decoder: {e}"))
        .samples_16k;
    for pieces in [&[1usize][..], &[7, 333, 4096], &[65_536]] {
        let out = live(bytes, pieces).unwrap_or_else(|e| panic!("{what} in {pieces:?}: {e}"));
        let diff = out.len().abs_diff(file.len());
        assert!(
            diff <= 16 * 30,
            "{what} in {pieces:?}: {} samples live, {} from the file",
            out.len(),
            file.len()
        );
        let corr = best_correlation(&out, &file, 64);
        assert!(corr > 0.99, "{what} in {pieces:?}: correlation {corr}");
        let mid = &out[out.len() / 10..out.len() * 9 / 10];
        let hz = zero_crossing_hz(mid, 16_000);
        assert!((hz - 440.0).abs() < 10.0, "{what}: {hz} Hz");
    }
}

fn ffmpeg_pipe(dir: &TempDir, name: &str, out_args: &str) -> Vec<u8> {
    let file = dir.path(name);
    let cmd = format!(
        "ffmpeg -hide_banner -loglevel error -f lavfi -i sine=frequency=440:duration=3 \
         {out_args} - | cat > {}",
        file.display()
    );
    run("sh", &["-c", &cmd]);
    read(&file)
}

#[test]
fn opus_in_ogg_and_webm_decodes_as_the_file_decoder_does() {
    let dir = TempDir::new();
    // As a MediaRecorder writes it: streamed, no cues, no duration, unknown sizes.
    let webm = ffmpeg_pipe(&dir, "a.webm", "-ac 1 -c:a libopus -b:a 32k -f webm");
    assert_same_as_file(&webm, "streamed webm");
    let stereo = ffmpeg_pipe(&dir, "s.webm", "-ac 2 -c:a libopus -b:a 64k -f webm");
    assert_same_as_file(&stereo, "stereo webm");
    let ogg = ffmpeg_pipe(&dir, "a.ogg", "-ac 1 -ar 16000 -c:a libopus -f ogg");
    assert_same_as_file(&ogg, "ogg opus from 16 kHz");
    // voiced's own Ogg Opus writer.
    let own = encode(&tone(440.0, TTS_RATE, 3.0), TTS_RATE, AudioFormat::Opus).unwrap();
    assert_same_as_file(&own, "voiced's ogg opus");
}

#[test]
fn what_is_not_opus_in_ogg_or_webm_is_refused() {
    let dir = TempDir::new();
    let refusal = |bytes: &[u8]| live(bytes, &[4096]).unwrap_err().to_string();
    let wav = encode(&tone(440.0, TTS_RATE, 0.5), TTS_RATE, AudioFormat::Wav).unwrap();
    assert!(
        refusal(&wav).contains("neither Ogg nor WebM"),
        "{}",
        refusal(&wav)
    );
    let vorbis = ffmpeg_pipe(&dir, "v.ogg", "-ac 1 -c:a libvorbis -f ogg");
    assert!(
        refusal(&vorbis).contains("not Opus"),
        "{}",
        refusal(&vorbis)
    );
    let vorbis_webm = ffmpeg_pipe(&dir, "v.webm", "-ac 1 -c:a libvorbis -f webm");
    assert!(
        refusal(&vorbis_webm).contains("no Opus track"),
        "{}",
        refusal(&vorbis_webm)
    );
    // A stream that goes wrong after a valid page is refused at the next page's pattern.
    let ogg = ffmpeg_pipe(&dir, "o.ogg", "-ac 1 -c:a libopus -f ogg");
    let segments = usize::from(ogg[26]);
    let first_page = 27
        + segments
        + ogg[27..27 + segments]
            .iter()
            .map(|&l| usize::from(l))
            .sum::<usize>();
    let mut torn = ogg[..first_page].to_vec();
    torn.extend_from_slice(b"junk");
    assert!(refusal(&torn).contains("OggS"), "{}", refusal(&torn));
    // A WebM block longer than the bound is refused before its bytes are held.
    let mut big = webm_header_only(&dir);
    // A SimpleBlock of 2 MiB (an 8-byte size).
    big.extend_from_slice(&[0xA3, 0x01, 0x00, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00]);
    assert!(refusal(&big).contains("1 MiB"), "{}", refusal(&big));
}

/// A streamed WebM Opus file's header, up to its first cluster.
fn webm_header_only(dir: &TempDir) -> Vec<u8> {
    let webm = ffmpeg_pipe(dir, "h.webm", "-ac 1 -c:a libopus -f webm");
    let cluster = webm
        .windows(4)
        .position(|w| w == [0x1F, 0x43, 0xB6, 0x75])
        .expect("a cluster");
    // The cluster's id and its unknown size (ffmpeg writes 8-byte unknown sizes when piping).
    let mut out = webm[..cluster].to_vec();
    out.extend_from_slice(&[
        0x1F, 0x43, 0xB6, 0x75, 0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
    ]);
    out
}
