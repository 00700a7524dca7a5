//! Kokoro with the real model. Needs `voiced models fetch kokoro` (here:
//! `cargo run --example fetch`) into `VOICED_MODELS_DIR` (default `$HOME/.cache/voiced/models`).

use std::path::PathBuf;

use voiced::engines::kokoro::{KokoroConfig, KokoroEngine, MAX_TOKENS, presets};
use voiced::engines::text::Boundary;
use voiced::engines::{Engine, EngineError, Pcm, SynthesisInput};

fn models_dir() -> PathBuf {
    std::env::var_os("VOICED_MODELS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache/voiced/models")
        })
}

fn engine() -> KokoroEngine {
    KokoroEngine::load(&KokoroConfig::from_models_dir(&models_dir())).expect("run the fetch first")
}

fn say(engine: &mut KokoroEngine, text: &str, language: &str, seed: u64) -> Pcm {
    let input = SynthesisInput {
        text,
        preset: "jf_alpha",
        language,
        seed,
        temperature: None,
        cancel: None,
        voice_print: None,
        instruction: None,
    };
    engine.synthesize(&input).unwrap()
}

fn rms(samples: &[f32]) -> f32 {
    (samples.iter().map(|s| s * s).sum::<f32>() / samples.len() as f32).sqrt()
}

#[test]
fn presets_list_the_japanese_voices() {
    let presets = presets(&models_dir().join("kokoro")).unwrap();
    let names: Vec<&str> = presets.iter().map(|p| p.name.as_str()).collect();
    for name in [
        "jf_alpha",
        "jf_gongitsune",
        "jf_nezumi",
        "jf_tebukuro",
        "jm_kumo",
    ] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    let alpha = presets.iter().find(|p| p.name == "jf_alpha").unwrap();
    assert_eq!(alpha.language, "ja");
    assert_eq!(engine().presets(), presets);
}

#[test]
fn a_sentence_sounds_like_a_sentence() {
    let text = "The quick brown fox jumps over the lazy dog.";
    let pcm = say(&mut engine(), text, "en", 1);
    assert_eq!(pcm.sample_rate, 24_000);
    let secs = pcm.samples.len() as f32 / 24_000.0;
    let per_char = secs / text.len() as f32;
    assert!(
        (0.04..=0.15).contains(&per_char),
        "{secs} s for {} chars",
        text.len()
    );
    assert!(rms(&pcm.samples) > 0.02, "rms {}", rms(&pcm.samples));
    assert!(pcm.samples.iter().all(|s| (-1.0..=1.0).contains(s)));
}

#[test]
fn the_seed_decides_the_waveform_not_the_loudness() {
    let text = "Seeds make every take repeatable.";
    let first = say(&mut engine(), text, "en", 42);
    let mut other_instance = engine();
    let again = say(&mut other_instance, text, "en", 42);
    assert_eq!(
        first.samples, again.samples,
        "same seed, new session: identical samples"
    );

    let other = say(&mut other_instance, text, "en", 43);
    assert_ne!(first.samples, other.samples);
    let (a, b) = (rms(&first.samples), rms(&other.samples));
    assert!((a - b).abs() / a < 0.05, "rms {a} vs {b}");
}

#[test]
fn segments_render_the_same_on_any_session_in_any_order() {
    let text = "The first sentence is short. The second one is a little longer than the first. \
                And the third closes the paragraph.";
    let input = SynthesisInput {
        text,
        preset: "jf_alpha",
        language: "en",
        seed: 9,
        temperature: None,
        cancel: None,
        voice_print: None,
        instruction: None,
    };
    let mut a = engine();
    let whole = a.synthesize(&input).unwrap();
    let segments = a.segments(&input).unwrap().unwrap();
    assert_eq!(segments.len(), 3, "{segments:?}");
    assert!(segments[..2].iter().all(|s| s.pause_secs > 0.0));
    assert_eq!(segments[2].pause_secs, 0.0, "no pause after the last");
    // Another session renders them last to first, then the first session renders the middle
    // one again after the others: every segment's audio is the same.
    let mut b = engine();
    let mut parts: Vec<Vec<f32>> = (0..3)
        .rev()
        .map(|i| b.render_segment(&input, &segments[i], i).unwrap().samples)
        .collect();
    parts.reverse();
    assert_eq!(
        a.render_segment(&input, &segments[1], 1).unwrap().samples,
        parts[1]
    );
    assert_eq!(parts.concat(), whole.samples, "joined in order: synthesize");
    // Each segment has its own noise: the same tokens at another index sound different.
    assert_ne!(
        b.render_segment(&input, &segments[0], 1).unwrap().samples[..4800],
        parts[0][..4800]
    );
}

#[test]
fn several_pieces_are_joined_with_pauses() {
    let mut engine = engine();
    let text = "こんにちは、げんきですか。はい、げんきです！";
    let pieces = engine.pieces(text, "jf_alpha", "ja").unwrap();
    assert_eq!(pieces.len(), 2, "{pieces:?}");
    let pcm = say(&mut engine, text, "ja", 7);
    let secs = pcm.samples.len() as f32 / 24_000.0;
    assert!((1.5..6.0).contains(&secs), "{secs} s");
    // The sentence pause (0.25 s) is digital silence somewhere in the middle.
    let silent_run = pcm
        .samples
        .split(|s| *s != 0.0)
        .map(<[f32]>::len)
        .max()
        .unwrap();
    assert!(silent_run >= 6_000, "longest silence {silent_run} samples");
}

#[test]
fn ten_thousand_characters_split_into_model_sized_pieces() {
    let engine = engine();
    let mut text = String::new();
    let sentences = [
        "Mr. Brown paid 3.5 dollars for a coffee, then walked home; the rain had stopped.",
        "\"Is this the right way?\" she asked, looking at the map.",
        "Numbers like 1,234 and dates such as 12 May 2024 are read out in full!",
    ];
    // One run-on sentence far beyond 510 tokens, with commas, and one without any.
    let run_on =
        "and the clerk counted the boxes, one by one, while the lorries waited outside ".repeat(12);
    let no_commas = "on and on the road went through the hills and over the rivers ".repeat(12);
    let mut i = 0;
    while text.chars().count() < 10_000 {
        match i % 5 {
            3 => text.push_str(&format!("{run_on}. ")),
            4 => text.push_str(&format!("{no_commas}.\n")),
            n => text.push_str(&format!("{} ", sentences[n % 3])),
        }
        i += 1;
    }
    let text: String = text.chars().take(10_000).collect();

    let pieces = engine.pieces(&text, "jf_alpha", "en").unwrap();
    assert!(
        pieces
            .iter()
            .all(|p| !p.tokens.is_empty() && p.tokens.len() < MAX_TOKENS)
    );
    // The run-on sentences were cut at clauses, the comma-less one also at words.
    assert!(pieces.iter().any(|p| p.boundary == Boundary::Clause));
    assert!(pieces.iter().any(|p| p.boundary == Boundary::Word));
    assert!(pieces.len() > 30, "{} pieces", pieces.len());
    let squash = |s: &str| s.split_whitespace().collect::<String>();
    let joined: String = pieces.iter().map(|p| p.text.as_str()).collect();
    // English pieces carry the normalised text: "Mr." → "mister", "1,234" → "one thousand…".
    let said = voiced::engines::text::normalize::english(&text);
    assert!(said.starts_with("mister Brown paid three point five dollars"));
    assert_eq!(squash(&joined), squash(&said), "text lost or reordered");
}

#[test]
fn unknown_preset_and_unspeakable_text_are_errors() {
    let mut engine = engine();
    let input = SynthesisInput {
        text: "Hello.",
        preset: "xx_nobody",
        language: "en",
        seed: 1,
        temperature: None,
        cancel: None,
        voice_print: None,
        instruction: None,
    };
    assert!(
        matches!(engine.synthesize(&input), Err(EngineError::UnknownPreset(p)) if p == "xx_nobody")
    );
    let input = SynthesisInput {
        text: " \n ",
        preset: "jf_alpha",
        language: "en",
        seed: 1,
        temperature: None,
        cancel: None,
        voice_print: None,
        instruction: None,
    };
    assert!(matches!(
        engine.synthesize(&input),
        Err(EngineError::InvalidInput(_))
    ));
    let input = SynthesisInput {
        text: "日本語",
        preset: "jf_alpha",
        language: "ja",
        seed: 1,
        temperature: None,
        cancel: None,
        voice_print: None,
        instruction: None,
    };
    assert!(matches!(
        engine.synthesize(&input),
        Err(EngineError::InvalidInput(_))
    ));
}

#[test]
fn missing_runtime_or_model_is_not_installed() {
    let mut config = KokoroConfig::from_models_dir(&models_dir());
    config.ort_library = PathBuf::from("/nonexistent/libonnxruntime.so.1.31.1");
    match KokoroEngine::load(&config) {
        Err(EngineError::NotInstalled(msg)) => {
            assert!(msg.contains("voiced models fetch kokoro"), "{msg}")
        }
        Err(e) => panic!("wrong error {e}"),
        Ok(_) => panic!("loaded without a runtime"),
    }
    let empty = std::env::temp_dir().join(format!("voiced-kokoro-empty-{}", std::process::id()));
    let config = KokoroConfig::from_models_dir(&empty);
    assert!(matches!(
        KokoroEngine::load(&config),
        Err(EngineError::NotInstalled(_))
    ));
    assert!(matches!(
        presets(&empty.join("kokoro")),
        Err(EngineError::NotInstalled(_))
    ));
}

/// A cancellation stops a piece inside its ONNX Runtime run (issue 23 item 8): one long piece
/// (no punctuation, under the token limit) is cancelled once its run has started, and the engine
/// answers `Cancelled` instead of the piece's audio. Without the termination the run would finish
/// and return the audio: `render_segment` checks nothing after it.
#[test]
fn a_cancellation_stops_a_piece_inside_its_run() {
    let mut engine = engine();
    let text = "on and on the road went through the hills and over the rivers past the farms \
                and the quiet villages where nobody had seen a stranger for years and years";
    let cancel = voiced::engines::Cancel::new();
    let input = SynthesisInput {
        text,
        preset: "jf_alpha",
        language: "en",
        seed: 3,
        temperature: None,
        cancel: Some(&cancel),
        voice_print: None,
        instruction: None,
    };
    let segments = engine.segments(&input).unwrap().unwrap();
    assert_eq!(segments.len(), 1, "one piece");
    let result = std::thread::scope(|scope| {
        let rendering = scope.spawn(|| engine.render_segment(&input, &segments[0], 0));
        while cancel.runs_in_progress() == 0 {
            assert!(!rendering.is_finished(), "the run registers itself");
            std::thread::yield_now();
        }
        cancel.cancel();
        rendering.join().unwrap()
    });
    assert!(
        matches!(result, Err(EngineError::Cancelled)),
        "{:?}",
        result.err()
    );
    assert_eq!(cancel.runs_in_progress(), 0);

    // The same session renders the next piece normally, and to the same audio as a fresh one.
    let fresh = say(&mut engine, text, "en", 3);
    let again = say(&mut self::engine(), text, "en", 3);
    assert_eq!(fresh.samples, again.samples);
}
