//! Silero VAD (issue 38 item 1) on real audio: Kokoro's speech with pauses, silence and noise
//! made with sox, frame by frame against the package's arithmetic in Python (the same model
//! file and ONNX Runtime version, `tests/vad/reference.py`): the same decisions on at least 99 %
//! of the frames, and the decisions right where the audio is known to be speech or not.
//!
//! Needs `voiced models fetch kokoro vad` and, for the reference, a Python with onnxruntime
//! 1.31.1 and numpy as `VOICED_VAD_PYTHON` (scripts/test.sh makes one).

use std::path::{Path, PathBuf};
use std::process::Command;

use voiced::engines::kokoro::{KokoroConfig, KokoroEngine};
use voiced::engines::vad::{FRAME, THRESHOLD, Vad};
use voiced::engines::{Engine, SynthesisInput};

use crate::asr::{read_wav, scratch_dir};

/// 16-bit mono WAV of `samples` at `rate`.
fn write_wav(path: &Path, samples: &[f32], rate: u32) {
    let spec = hound::WavSpec {
        channels: 1,
        sample_rate: rate,
        bits_per_sample: 16,
        sample_format: hound::SampleFormat::Int,
    };
    let mut writer = hound::WavWriter::create(path, spec).unwrap();
    for s in samples {
        writer
            .write_sample((s.clamp(-1.0, 1.0) * 32767.0) as i16)
            .unwrap();
    }
    writer.finalize().unwrap();
}

/// 16 kHz mono 16-bit audio that sox makes from nothing with `effects` (silence, noise).
fn generated(path: &Path, effects: &[&str]) {
    let out = path.to_str().unwrap();
    let mut args = vec!["-n", "-r", "16000", "-c", "1", "-b", "16", out];
    args.extend_from_slice(effects);
    sox(&args);
}

fn sox(args: &[&str]) {
    let ok = Command::new("sox")
        .args(args)
        .status()
        .expect("run sox")
        .success();
    assert!(ok, "sox {args:?} failed");
}

/// Kokoro saying `text`, as a 16 kHz mono WAV (sox resamples).
fn kokoro_wav(engine: &mut KokoroEngine, text: &str, name: &str) -> PathBuf {
    let pcm = engine
        .synthesize(&SynthesisInput {
            text,
            preset: "af_heart",
            language: "en",
            seed: 7,
            temperature: None,
            cancel: None,
            voice_print: None,
            instruction: None,
        })
        .unwrap();
    let raw = scratch_dir().join(format!("{name}-raw.wav"));
    write_wav(&raw, &pcm.samples, pcm.sample_rate);
    let out = scratch_dir().join(format!("{name}.wav"));
    sox(&[
        raw.to_str().unwrap(),
        "-r",
        "16000",
        "-c",
        "1",
        "-b",
        "16",
        out.to_str().unwrap(),
    ]);
    out
}

/// The reference's probabilities of `clip`, or `None` (said, as SKIPPED) without its Python.
fn reference(clip: &Path) -> Option<Vec<f32>> {
    let Some(python) = std::env::var_os("VOICED_VAD_PYTHON") else {
        assert!(
            std::env::var_os("VOICED_REQUIRE_VAD_REFERENCE").is_none(),
            "VOICED_VAD_PYTHON is required here"
        );
        crate::common::skip("vad reference", "VOICED_VAD_PYTHON is not set");
        return None;
    };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vad/reference.py");
    let model = voiced::engines::vad::model_path(&voiced::models::default_models_dir());
    let out = Command::new(python)
        .arg(script)
        .arg(model)
        .arg(clip)
        .output()
        .expect("run the reference");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| l.parse().unwrap())
            .collect(),
    )
}

/// The share of frames on which both call it the same (speech or not).
fn agreement(ours: &[f32], theirs: &[f32]) -> f64 {
    assert_eq!(ours.len(), theirs.len());
    let same = ours
        .iter()
        .zip(theirs)
        .filter(|(a, b)| (**a >= THRESHOLD) == (**b >= THRESHOLD))
        .count();
    same as f64 / ours.len() as f64
}

fn speech_share(probabilities: &[f32]) -> f64 {
    probabilities.iter().filter(|p| **p >= THRESHOLD).count() as f64 / probabilities.len() as f64
}

#[test]
fn silero_vad_finds_speech_pauses_silence_and_noise_as_its_package_does() {
    let mut kokoro = KokoroEngine::load(&KokoroConfig::from_models_dir(
        &voiced::models::default_models_dir(),
    ))
    .expect("run `voiced models fetch kokoro` first");
    let first = kokoro_wav(
        &mut kokoro,
        "The first sentence is spoken here.",
        "vad-first",
    );
    let second = kokoro_wav(
        &mut kokoro,
        "Another sentence follows after the long pause.",
        "vad-second",
    );
    let dir = scratch_dir();
    // 0.5 s silence, speech, 1.5 s silence, speech, 1 s silence.
    let clip = dir.join("vad-clip.wav");
    let silence = |secs: &str, name: &str| {
        let path = dir.join(name);
        generated(&path, &["trim", "0", secs]);
        path
    };
    let (half, pause, end) = (
        silence("0.5", "s05.wav"),
        silence("1.5", "s15.wav"),
        silence("1.0", "s10.wav"),
    );
    sox(&[
        half.to_str().unwrap(),
        first.to_str().unwrap(),
        pause.to_str().unwrap(),
        second.to_str().unwrap(),
        end.to_str().unwrap(),
        clip.to_str().unwrap(),
    ]);
    // Quiet noise (white and pink), 5 s, no speech in it.
    let noise = dir.join("vad-noise.wav");
    generated(
        &noise,
        &[
            "synth",
            "5",
            "whitenoise",
            "synth",
            "5",
            "pinknoise",
            "mix",
            "vol",
            "0.05",
        ],
    );
    let silent = silence("3.0", "vad-silence.wav");

    let mut vad = Vad::load(&voiced::models::default_models_dir())
        .expect("run `voiced models fetch vad` first");
    let samples = read_wav(&clip);
    let ours = vad.probabilities(&samples).unwrap();
    let frames_of = |path: &Path| read_wav(path).len().div_ceil(FRAME);
    let (a, p) = (frames_of(&first), frames_of(&pause));
    let start_a = frames_of(&half);
    let start_b = start_a + a + p;
    // Inside each sentence (its middle half): speech; inside the pause, away from its edges
    // (0.3 s): not; the same for the silence around.
    let middle = |start: usize, len: usize| &ours[start + len / 4..start + 3 * len / 4];
    let b = frames_of(&second);
    assert!(
        speech_share(middle(start_a, a)) > 0.8,
        "{:?}",
        middle(start_a, a)
    );
    assert!(
        speech_share(middle(start_b, b)) > 0.8,
        "{:?}",
        middle(start_b, b)
    );
    let margin = 10; // 0.32 s
    let pause_frames = &ours[start_a + a + margin..start_b - margin];
    assert!(speech_share(pause_frames) < 0.05, "{pause_frames:?}");
    assert!(speech_share(&ours[..start_a.saturating_sub(margin)]) < 0.05);
    vad.reset();
    let on_silence = vad.probabilities(&read_wav(&silent)).unwrap();
    assert_eq!(speech_share(&on_silence), 0.0, "{on_silence:?}");
    vad.reset();
    let on_noise = vad.probabilities(&read_wav(&noise)).unwrap();
    assert!(speech_share(&on_noise) < 0.05, "{on_noise:?}");

    // Frame by frame against the package's arithmetic on the same files.
    for (path, ours) in [(&clip, &ours), (&silent, &on_silence), (&noise, &on_noise)] {
        let Some(theirs) = reference(path) else {
            return;
        };
        let agree = agreement(ours, &theirs);
        let worst = ours
            .iter()
            .zip(&theirs)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        println!(
            "{}: {} frames, decisions agree on {:.2} %, largest probability difference {worst:.6}",
            path.file_name().unwrap().to_string_lossy(),
            ours.len(),
            agree * 100.0
        );
        assert!(agree >= 0.99, "{agree} on {path:?}");
    }
}
