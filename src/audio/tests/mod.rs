//! Behaviour tests for the audio module. Fixtures in other formats are made with `ffmpeg` and
//! `sox` subprocesses (both installed on developer machines and in CI).

mod decoding;
mod encoding;
mod hostile;
mod live;
mod streaming;

use std::f64::consts::PI;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

// `super` paths only: this module moves into the server crate as `audio::tests`.
use super::ogg_opus::ogg_crc;
use super::{
    AudioFormat, DecodeError, DecodeLimits, DecodedAudio, StreamEncoder, decode_for_asr, encode,
};

pub(super) const TTS_RATE: u32 = 24_000;

pub(super) fn tone(freq: f64, rate: u32, secs: f64) -> Vec<f32> {
    let n = (f64::from(rate) * secs).round() as usize;
    (0..n)
        .map(|i| (0.5 * (2.0 * PI * freq * i as f64 / f64::from(rate)).sin()) as f32)
        .collect()
}

/// Linear sweep from `f0` to `f1` Hz.
pub(super) fn chirp(f0: f64, f1: f64, rate: u32, secs: f64) -> Vec<f32> {
    let n = (f64::from(rate) * secs).round() as usize;
    let k = (f1 - f0) / secs;
    (0..n)
        .map(|i| {
            let t = i as f64 / f64::from(rate);
            (0.5 * (2.0 * PI * (f0 * t + 0.5 * k * t * t)).sin()) as f32
        })
        .collect()
}

pub(super) fn rms(x: &[f32]) -> f64 {
    (x.iter().map(|&v| f64::from(v).powi(2)).sum::<f64>() / x.len().max(1) as f64).sqrt()
}

/// Frequency estimate of a pure tone from its zero-crossing rate.
pub(super) fn zero_crossing_hz(x: &[f32], rate: u32) -> f64 {
    let crossings = x
        .windows(2)
        .filter(|w| (w[0] < 0.0) != (w[1] < 0.0))
        .count();
    crossings as f64 * f64::from(rate) / (2.0 * x.len() as f64)
}

/// Best normalised cross-correlation of `a` against `b` within ±`max_lag` samples, over the
/// middle of the clip (codecs smear the edges).
pub(super) fn best_correlation(a: &[f32], b: &[f32], max_lag: usize) -> f64 {
    let n = a.len().min(b.len());
    let (lo, hi) = (n / 10 + max_lag, n - n / 10 - max_lag);
    (0..=2 * max_lag)
        .map(|l| {
            let (mut ab, mut aa, mut bb) = (0.0, 0.0, 0.0);
            for i in lo..hi {
                let (x, y) = (f64::from(a[i]), f64::from(b[i + l - max_lag]));
                ab += x * y;
                aa += x * x;
                bb += y * y;
            }
            ab / (aa * bb).sqrt().max(1e-12)
        })
        .fold(f64::MIN, f64::max)
}

/// A scratch directory removed on drop.
pub(super) struct TempDir(PathBuf);

impl TempDir {
    pub(super) fn new() -> Self {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("voiced-audio-test-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("create temp dir");
        TempDir(dir)
    }

    pub(super) fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Run a fixture tool, failing the test with its stderr if it fails.
pub(super) fn run(program: &str, args: &[&str]) {
    let output = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{program} could not be started (is it installed?): {e}"));
    assert!(
        output.status.success(),
        "{program} {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// `ffmpeg` quietly, overwriting.
pub(super) fn ffmpeg(args: &[&str]) {
    let mut all = vec!["-hide_banner", "-loglevel", "error", "-y"];
    all.extend_from_slice(args);
    run("ffmpeg", &all);
}

pub(super) fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

/// Pages of an Ogg stream: (header type, granule, serial, body), checking each CRC.
pub(super) fn ogg_pages(bytes: &[u8]) -> Vec<(u8, u64, u32, Vec<u8>)> {
    let mut pages = Vec::new();
    let mut pos = 0;
    while pos < bytes.len() {
        assert_eq!(&bytes[pos..pos + 4], b"OggS", "page at {pos}");
        let nseg = bytes[pos + 26] as usize;
        let body_len: usize = bytes[pos + 27..pos + 27 + nseg]
            .iter()
            .map(|&l| l as usize)
            .sum();
        let end = pos + 27 + nseg + body_len;
        let mut page = bytes[pos..end].to_vec();
        let crc = u32::from_le_bytes(page[22..26].try_into().unwrap());
        page[22..26].fill(0);
        assert_eq!(ogg_crc(&page), crc, "CRC of page at {pos}");
        let granule = u64::from_le_bytes(bytes[pos + 6..pos + 14].try_into().unwrap());
        let serial = u32::from_le_bytes(bytes[pos + 14..pos + 18].try_into().unwrap());
        pages.push((
            bytes[pos + 5],
            granule,
            serial,
            bytes[pos + 27 + nseg..end].to_vec(),
        ));
        pos = end;
    }
    pages
}

/// The gapless length an mp3's LAME/Info tag declares, as a reader that honours it computes it:
/// `frames × samples per frame − encoder delay − padding`, with the tag's frame count (`Info` or
/// `Xing`, the frame the file starts with). `None` when the file does not start with one.
pub(super) fn lame_gapless_samples(mp3: &[u8]) -> Option<u64> {
    let header = mp3.get(..4)?;
    if header[0] != 0xFF || header[1] & 0xE0 != 0xE0 {
        return None;
    }
    // MPEG version bits: 3 = MPEG-1 (1152 samples a frame), else 2 / 2.5 (576).
    let samples_per_frame: u64 = if (header[1] >> 3) & 0x03 == 3 {
        1152
    } else {
        576
    };
    let first_frame = &mp3[..mp3.len().min(2_000)];
    let at = first_frame
        .windows(4)
        .position(|w| w == b"Info" || w == b"Xing")?;
    let field = |offset: usize| u32::from_be_bytes(mp3[offset..offset + 4].try_into().unwrap());
    let flags = field(at + 4);
    assert_eq!(flags & 0x01, 0x01, "frame count present");
    let mut pos = at + 8;
    let frames = u64::from(field(pos));
    pos += 4;
    if flags & 0x02 != 0 {
        pos += 4; // bytes
    }
    if flags & 0x04 != 0 {
        pos += 100; // table of contents
    }
    if flags & 0x08 != 0 {
        pos += 4; // quality
    }
    assert_eq!(
        &mp3[pos..pos + 4],
        b"LAME",
        "LAME extension after the Info fields"
    );
    // Encoder string (9), revision/method (1), lowpass (1), peak (4), two gains (2 + 2),
    // flags (1), bitrate (1): then 12 bits of delay and 12 of padding.
    let d = pos + 21;
    let delay = (u64::from(mp3[d]) << 4) | (u64::from(mp3[d + 1]) >> 4);
    let padding = ((u64::from(mp3[d + 1]) & 0x0F) << 8) | u64::from(mp3[d + 2]);
    Some(frames * samples_per_frame - delay - padding)
}
