//! qwen, qwen_custom_voice and luxtts on tiny generated models with the public ONNX signatures
//! (`scripts/tiny_engine_models.py`): install state and `models status`, seed and length
//! arithmetic, voice prints, the Rust pipelines against Python reference loops with onnxruntime
//! (`scripts/qwen_reference.py`, `scripts/luxtts_reference.py`), and generation end to end
//! through the real API. Needs `voiced models fetch kokoro` (ONNX Runtime, the onnx Python
//! package, the onnxruntime wheel) in `VOICED_MODELS_DIR`, and espeak-ng.

use crate::common;
use crate::tiny;

use std::path::Path;

use crate::common::TestApp;
use serde_json::{Value, json};
use voiced::domain::EngineId;
use voiced::engines::luxtts::{self, LuxConfig, LuxEngine};
use voiced::engines::qwen::{self, QwenEngine, QwenEngineConfig, Variant};
use voiced::engines::registry::EngineRegistry;
use voiced::engines::{Engine, EngineError, SynthesisInput};
use voiced::models::status::State;

const FRAME: usize = qwen::SAMPLES_PER_FRAME;
/// The generated LuxTTS vocoder writes 48 kHz, 512 samples per frame.
const LUX_RATE: u32 = 48_000;
const LUX_HOP: usize = 512;

fn qwen_engine(variant: Variant) -> QwenEngine {
    QwenEngine::load(&QwenEngineConfig::from_models_dir(
        tiny::models_dir(),
        variant,
    ))
    .expect("engine loads")
}

fn lux_engine() -> LuxEngine {
    LuxEngine::load(&LuxConfig::from_models_dir(tiny::models_dir())).expect("engine loads")
}

fn input<'a>(text: &'a str, preset: &'a str, seed: u64) -> SynthesisInput<'a> {
    SynthesisInput {
        text,
        preset,
        language: "en",
        seed,
        temperature: None,
        cancel: None,
        voice_print: None,
        instruction: None,
    }
}

fn status(dir: &Path, engine: &str) -> voiced::models::status::EngineStatus {
    voiced::models::status::status(dir)
        .into_iter()
        .find(|s| s.engine == engine)
        .unwrap()
}

#[test]
fn the_install_state_follows_the_files_and_their_check() {
    let dir = tiny::models_dir();
    let registry = EngineRegistry::new(dir.to_owned(), 1);
    for engine in [EngineId::Qwen, EngineId::QwenCustomVoice, EngineId::Luxtts] {
        assert!(registry.is_installed(engine), "{engine}");
        let state = status(dir, engine.as_str());
        assert_eq!(state.state, State::Installed, "{state:?}");
        assert!(
            state
                .details
                .iter()
                .any(|d| d.contains("checksums verified")),
            "{state:?}"
        );
    }
    let presets = registry.presets();
    let names = |engine| -> Vec<String> {
        presets
            .iter()
            .find(|(e, _)| *e == engine)
            .map(|(_, p)| p.iter().map(|p| p.name.clone()).collect())
            .unwrap_or_default()
    };
    assert_eq!(names(EngineId::Qwen), ["default", "narrator"]);
    assert_eq!(names(EngineId::QwenCustomVoice).len(), 9);
    assert!(names(EngineId::QwenCustomVoice).contains(&"ryan".to_owned()));
    assert_eq!(names(EngineId::Luxtts), ["default"]);
    assert!(
        registry
            .readable(EngineId::Luxtts, "ja", "こんにちは")
            .is_err()
    );
    assert!(
        registry
            .readable(EngineId::Luxtts, "en-GB", "Hello.")
            .is_ok()
    );

    // An empty models dir: each engine is missing, naming the files and where they come from.
    let empty = common::TempDir::new("qwen-empty", 0o755);
    for engine in ["qwen", "qwen_custom_voice", "luxtts"] {
        let state = status(empty.path(), engine);
        assert_eq!(state.state, State::Missing, "{state:?}");
        assert!(
            state
                .how
                .contains(&format!("voiced models prepare {engine}")),
            "{state:?}"
        );
    }
    let qwen = status(empty.path(), "qwen");
    assert!(
        qwen.details
            .iter()
            .any(|d| d.contains("talker_prefill.onnx")),
        "{qwen:?}"
    );
    assert!(
        qwen.details
            .iter()
            .any(|d| d.contains("speaker_encoder.onnx")),
        "{qwen:?}"
    );
    assert!(qwen.how.contains("Qwen3-TTS-12Hz-0.6B-Base"), "{qwen:?}");
    let lux = status(empty.path(), "luxtts");
    assert!(
        lux.details.iter().any(|d| d.contains("vocoder.onnx")),
        "{lux:?}"
    );
    let err = voiced::models::checked::prepare(empty.path(), EngineId::Qwen)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("talker_prefill.onnx") && err.contains("place the upstream files first"),
        "{err}"
    );

    // The files in place but not checked: missing, saying what to run; loading refuses.
    let bare = common::TempDir::new("qwen-bare", 0o755);
    tiny::copy_dir(&dir.join("qwen"), &bare.path().join("qwen"));
    std::fs::remove_file(bare.path().join("qwen/voiced-prepared.sha256")).unwrap();
    std::os::unix::fs::symlink(dir.join("onnxruntime"), bare.path().join("onnxruntime")).unwrap();
    let state = status(bare.path(), "qwen");
    assert_eq!(state.state, State::Missing);
    assert!(
        state
            .details
            .iter()
            .any(|d| d.contains("voiced models prepare qwen")),
        "{state:?}"
    );
    match QwenEngine::load(&QwenEngineConfig::from_models_dir(
        bare.path(),
        Variant::Base,
    )) {
        Err(EngineError::NotInstalled(why)) => {
            assert!(why.contains("voiced models prepare qwen"), "{why}")
        }
        Err(other) => panic!("unexpected error {other}"),
        Ok(_) => panic!("loaded unchecked files"),
    }
    // Checked, then a graph replaced: missing again.
    std::os::unix::fs::symlink(dir.join(".pylib"), bare.path().join(".pylib")).unwrap();
    voiced::models::checked::prepare(bare.path(), EngineId::Qwen).unwrap();
    assert_eq!(status(bare.path(), "qwen").state, State::Installed);
    std::fs::copy(
        dir.join("qwen/fp32/talker_decode.onnx"),
        bare.path().join("qwen/fp32/talker_prefill.onnx"),
    )
    .unwrap();
    let state = status(bare.path(), "qwen");
    assert!(
        state
            .details
            .iter()
            .any(|d| d.contains("changed since it was checked")),
        "{state:?}"
    );
}

#[test]
fn prepare_refuses_a_graph_that_draws_its_own_noise() {
    let dir = tiny::models_dir();
    let work = common::TempDir::new("lux-noisy", 0o755);
    tiny::copy_dir(&dir.join("luxtts"), &work.path().join("luxtts"));
    std::os::unix::fs::symlink(dir.join(".pylib"), work.path().join(".pylib")).unwrap();
    // A vocoder with a RandomNormalLike node (a tiny graph written by the test's python).
    let vocoder = work.path().join("luxtts/vocoder.onnx");
    let script = format!(
        "import onnx\nfrom onnx import helper, TensorProto as T\n\
         g = helper.make_graph([helper.make_node('RandomNormalLike', ['mel'], ['noise'], name='z'),\
         helper.make_node('Add', ['mel', 'noise'], ['waveform'])], 'v',\
         [helper.make_tensor_value_info('mel', T.FLOAT, [1, 100, 'f'])],\
         [helper.make_tensor_value_info('waveform', T.FLOAT, [1, 100, 'f'])])\n\
         onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid('', 17)]), {:?})\n",
        vocoder.display().to_string()
    );
    let status = tiny::python().args(["-c", &script]).status().unwrap();
    assert!(status.success());
    let err = voiced::models::checked::prepare(work.path(), EngineId::Luxtts)
        .unwrap_err()
        .to_string();
    assert!(err.contains("RandomNormalLike node z"), "{err}");
    // The record copied along names the old vocoder: it no longer verifies.
    let problems = voiced::engines::luxtts::files::problems(&work.path().join("luxtts"));
    assert!(
        problems.iter().any(|p| p.contains("changed")),
        "{problems:?}"
    );
}

#[test]
fn qwen_seed_decides_the_take_and_the_length_adds_up() {
    let mut engine = qwen_engine(Variant::Base);
    assert_eq!(engine.reference_rate(), Some(qwen::SAMPLE_RATE));
    let text = "Hello from the voiced engine.";
    for preset in ["default", "narrator"] {
        let (a, trace) = engine.synthesize_traced(&input(text, preset, 7)).unwrap();
        assert_eq!(a.sample_rate, qwen::SAMPLE_RATE);
        assert_eq!(trace.pieces.len(), 1);
        let piece = &trace.pieces[0].generated;
        assert!(piece.stopped, "the generated talker stops by itself");
        let frames = piece.codes.len() / 16;
        assert!((3..60).contains(&frames), "{frames} frames");
        assert_eq!(piece.talker_uniforms.len(), frames + 1);
        assert_eq!(piece.predictor_uniforms.len(), frames * 15);
        // 1920 samples per frame; the in-context reference's share is cut off.
        assert!(
            a.samples.len().abs_diff(frames * FRAME) <= 1,
            "{preset}: {} samples for {frames} frames",
            a.samples.len()
        );
        assert!(a.samples.iter().any(|s| s.abs() > 0.01));
        let again = engine.synthesize(&input(text, preset, 7)).unwrap();
        assert_eq!(a.samples, again.samples, "same seed, same audio");
        let other = engine.synthesize(&input(text, preset, 8)).unwrap();
        assert_ne!(a.samples, other.samples, "another seed, another take");
    }
    let default = engine.synthesize(&input(text, "default", 7)).unwrap();
    let narrator = engine.synthesize(&input(text, "narrator", 7)).unwrap();
    assert_ne!(default.samples, narrator.samples, "the voice matters");
    // Base takes no instruction: a personality prompt is stored on the profile but not read.
    let prompted = engine
        .synthesize(&SynthesisInput {
            instruction: Some("speak warmly and slowly"),
            ..input(text, "default", 7)
        })
        .unwrap();
    assert_eq!(prompted.samples, default.samples, "Base ignores it");
    assert!(matches!(
        engine.synthesize(&input(text, "nobody", 7)),
        Err(EngineError::UnknownPreset(_))
    ));
    let cancelled = voiced::engines::Cancel::new();
    cancelled.cancel();
    let result = engine.synthesize(&SynthesisInput {
        cancel: Some(&cancelled),
        ..input(text, "default", 7)
    });
    assert!(matches!(result, Err(EngineError::Cancelled)));
}

#[test]
fn a_qwen_voice_print_speaks_like_its_reference_clip() {
    let mut engine = qwen_engine(Variant::Base);
    let dir = tiny::models_dir().join("qwen/voices");
    let clip = std::fs::read(dir.join("narrator.wav")).unwrap();
    let reference = voiced::engines::reference::prepare(&clip, qwen::SAMPLE_RATE).unwrap();
    let transcript = std::fs::read_to_string(dir.join("narrator.txt")).unwrap();
    let text = "Hello from the voiced engine.";
    // With the transcript: x-vector and in-context example, as the preset with its .txt.
    let print = engine
        .voice_print(&reference, Some(&transcript), "en")
        .unwrap();
    let parsed = qwen::QwenPrint::from_bytes(&print).unwrap();
    assert!(parsed.has_example());
    let from_print = engine
        .synthesize(&SynthesisInput {
            voice_print: Some(&print),
            ..input(text, "ignored", 3)
        })
        .unwrap();
    let from_preset = engine.synthesize(&input(text, "narrator", 3)).unwrap();
    assert_eq!(from_print.samples, from_preset.samples);
    // Without it: x-vector only, another take.
    let plain = engine.voice_print(&reference, None, "en").unwrap();
    assert!(!qwen::QwenPrint::from_bytes(&plain).unwrap().has_example());
    let from_plain = engine
        .synthesize(&SynthesisInput {
            voice_print: Some(&plain),
            ..input(text, "ignored", 3)
        })
        .unwrap();
    assert_ne!(from_plain.samples, from_print.samples);
    // Another engine's bytes are refused.
    assert!(matches!(
        engine.synthesize(&SynthesisInput {
            voice_print: Some(b"LUXVP1\0\0garbage"),
            ..input(text, "ignored", 3)
        }),
        Err(EngineError::DamagedPrint)
    ));
}

#[test]
fn qwen_custom_voice_speaks_its_speakers_and_reads_instructions() {
    let mut engine = qwen_engine(Variant::CustomVoice);
    assert_eq!(engine.reference_rate(), None);
    assert!(matches!(
        engine.voice_print(&[0.1; 48_000], None, "en"),
        Err(EngineError::InvalidInput(_))
    ));
    let text = "Hello from the voiced engine.";
    let ryan = engine.synthesize(&input(text, "ryan", 5)).unwrap();
    assert_eq!(ryan.sample_rate, qwen::SAMPLE_RATE);
    assert_eq!(ryan.samples.len() % FRAME, 0);
    assert_eq!(
        engine.synthesize(&input(text, "Ryan", 5)).unwrap().samples,
        ryan.samples
    );
    let vivian = engine.synthesize(&input(text, "vivian", 5)).unwrap();
    assert_ne!(ryan.samples, vivian.samples);
    // The voice's personality prompt, through `Engine::synthesize` as the worker calls it.
    let instructed = |engine: &mut QwenEngine, instruction| {
        engine
            .synthesize(&SynthesisInput {
                instruction: Some(instruction),
                ..input(text, "ryan", 5)
            })
            .unwrap()
            .samples
    };
    let warm = instructed(&mut engine, "speak warmly and slowly");
    assert_ne!(warm, ryan.samples, "the 1.7B model reads the instruction");
    assert_eq!(instructed(&mut engine, "speak warmly and slowly"), warm);
    assert_ne!(instructed(&mut engine, "whisper, very fast"), warm);
    assert_eq!(
        instructed(&mut engine, "  speak warmly and slowly\n"),
        warm,
        "trimmed"
    );
    assert_eq!(instructed(&mut engine, " \n"), ryan.samples, "blank: none");
    assert!(matches!(
        engine.synthesize(&input(text, "default", 5)),
        Err(EngineError::UnknownPreset(_))
    ));
    assert!(matches!(
        engine.synthesize(&SynthesisInput {
            voice_print: Some(b"QWENVP1\0"),
            ..input(text, "ryan", 5)
        }),
        Err(EngineError::InvalidInput(_))
    ));
}

#[test]
fn luxtts_seed_decides_the_take_and_a_print_speaks_like_its_clip() {
    let mut engine = lux_engine();
    assert_eq!(engine.sample_rate(), LUX_RATE);
    assert_eq!(engine.reference_rate(), Some(luxtts::REFERENCE_RATE));
    let text = "Hello from the voiced engine, one two three.";
    let (a, trace) = engine
        .synthesize_traced(&input(text, "default", 7))
        .unwrap();
    assert_eq!(a.sample_rate, LUX_RATE);
    let print = trace.print.as_ref().unwrap();
    // The first 5 s at 24 kHz: (120000 + 128) / 256 frames of 100 features.
    assert_eq!(print.frames(), (5 * 24_000 + 128) / 256);
    let frames = trace.pieces[0].noise.len() / 100;
    assert!(frames > print.frames(), "{frames} frames");
    assert_eq!(a.samples.len(), (frames - print.frames()) * LUX_HOP);
    assert!(a.samples.iter().any(|s| s.abs() > 0.001));
    assert_eq!(
        engine
            .synthesize(&input(text, "default", 7))
            .unwrap()
            .samples,
        a.samples
    );
    assert_ne!(
        engine
            .synthesize(&input(text, "default", 8))
            .unwrap()
            .samples,
        a.samples
    );

    let dir = tiny::models_dir().join("luxtts/voices");
    let clip = std::fs::read(dir.join("default.wav")).unwrap();
    let reference = voiced::engines::reference::prepare(&clip, luxtts::REFERENCE_RATE).unwrap();
    let transcript = std::fs::read_to_string(dir.join("default.txt")).unwrap();
    let bytes = engine
        .voice_print(&reference, Some(&transcript), "en")
        .unwrap();
    assert_eq!(luxtts::LuxPrint::from_bytes(&bytes).as_ref(), Some(print));
    let from_print = engine
        .synthesize(&SynthesisInput {
            voice_print: Some(&bytes),
            ..input(text, "ignored", 7)
        })
        .unwrap();
    assert_eq!(from_print.samples, a.samples);
    assert!(matches!(
        engine.voice_print(&reference, None, "en"),
        Err(EngineError::InvalidInput(why)) if why.contains("transcript")
    ));
    assert!(matches!(
        engine.synthesize(&SynthesisInput {
            language: "fr",
            ..input(text, "default", 7)
        }),
        Err(EngineError::InvalidInput(_))
    ));
}

fn run_reference(script: &str, model_dir: &Path, request: &Value, work: &Path) -> Value {
    std::fs::write(work.join("request.json"), request.to_string()).unwrap();
    let output = tiny::python_with_onnxruntime()
        .arg(script)
        .arg(model_dir)
        .arg(work.join("request.json"))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

fn vec_of<T: serde::de::DeserializeOwned>(v: &Value) -> Vec<T> {
    serde_json::from_value(v.clone()).unwrap()
}

#[test]
fn qwen_matches_a_python_reference_loop() {
    let text = "Hello from the voiced engine, one two three.";
    let cases: [(Variant, &str, Option<&str>, u64); 3] = [
        (Variant::Base, "default", None, 11),
        (Variant::Base, "narrator", None, 12),
        (
            Variant::CustomVoice,
            "ryan",
            Some("speak warmly and slowly"),
            13,
        ),
    ];
    for (variant, preset, instruction, seed) in cases {
        let mut engine = qwen_engine(variant);
        let (pcm, trace) = engine
            .synthesize_traced(&SynthesisInput {
                instruction,
                ..input(text, preset, seed)
            })
            .unwrap();
        let piece = &trace.pieces[0];
        let work = common::TempDir::new("qwen-ref", 0o755);
        let mut request = json!({
            "text": text,
            "language": "en",
            "talker_uniforms": piece.generated.talker_uniforms,
            "predictor_uniforms": piece.generated.predictor_uniforms,
            "instruction": instruction,
        });
        if variant == Variant::Base {
            tiny::write_f32(&work.path().join("reference.f32"), &trace.reference);
            request["reference"] = json!(work.path().join("reference.f32"));
            let transcript = tiny::models_dir().join(format!("qwen/voices/{preset}.txt"));
            request["transcript"] = json!(std::fs::read_to_string(transcript).ok());
        } else {
            request["speaker"] = json!(preset);
        }
        let dir = tiny::models_dir().join(variant.engine());
        let reference = run_reference("scripts/qwen_reference.py", &dir, &request, work.path());
        let ids: Vec<u32> = vec_of(&reference["text_ids"]);
        assert_eq!(ids, piece.text_ids, "tokenizer ({preset})");
        let codes: Vec<Vec<i64>> = vec_of(&reference["codes"]);
        assert_eq!(
            codes.concat(),
            piece.generated.codes,
            "codes ({preset}, seed {seed})"
        );
        let waveform: Vec<f32> = vec_of(&reference["waveform"]);
        let worst = tiny::worst(&waveform, &pcm.samples);
        assert!(worst < 1e-4, "{preset}: waveforms differ by {worst}");
    }
}

#[test]
fn luxtts_matches_a_python_reference_loop() {
    let mut engine = lux_engine();
    let text = "Hello from the voiced engine, one two three.";
    let (pcm, trace) = engine
        .synthesize_traced(&input(text, "default", 21))
        .unwrap();
    let print = trace.print.as_ref().unwrap();
    let piece = &trace.pieces[0];
    let dir = tiny::models_dir().join("luxtts");
    let clip = std::fs::read(dir.join("voices/default.wav")).unwrap();
    let reference = voiced::engines::reference::prepare(&clip, luxtts::REFERENCE_RATE).unwrap();
    let work = common::TempDir::new("lux-ref", 0o755);
    tiny::write_f32(&work.path().join("reference.f32"), &reference);
    tiny::write_f32(&work.path().join("noise.f32"), &piece.noise);
    let request = json!({
        "reference": work.path().join("reference.f32"),
        "noise": work.path().join("noise.f32"),
        "tokens": piece.tokens,
        "prompt_tokens": print.tokens,
    });
    let out = run_reference("scripts/luxtts_reference.py", &dir, &request, work.path());
    let features: Vec<f32> = vec_of(&out["features"]);
    let worst = tiny::worst(&features, &print.features);
    assert!(worst < 1e-4, "prompt features differ by {worst}");
    let waveform: Vec<f32> = vec_of(&out["waveform"]);
    let worst = tiny::worst(&waveform, &pcm.samples);
    assert!(worst < 1e-4, "waveforms differ by {worst}");
}

#[tokio::test]
async fn qwen_and_luxtts_speak_through_the_api() {
    let dir = tiny::models_dir().to_str().unwrap().to_owned();
    let app = TestApp::start_with(1, &[("VOICED_MODELS_DIR", &dir)]).await;
    let (account, secret) = app.pro_user().await;
    let voices = [
        (
            "Qwen narrator",
            EngineId::Qwen,
            "narrator",
            qwen::SAMPLE_RATE,
            FRAME,
        ),
        (
            "Qwen Ryan",
            EngineId::QwenCustomVoice,
            "ryan",
            qwen::SAMPLE_RATE,
            FRAME,
        ),
        ("Lux", EngineId::Luxtts, "default", LUX_RATE, LUX_HOP),
    ];
    let mut ids = std::collections::HashMap::new();
    for (name, engine, preset, rate, hop) in voices {
        ids.insert(name, app.voice(&account, name, engine, preset).await);
        let body = |seed: u64| {
            json!({
                "text": "Hello from the voiced engine.", "voice_name": name, "seed": seed,
                "response_format": "wav"
            })
        };
        let a = app.speech_audio(&secret, body(3)).await;
        let reader = hound::WavReader::new(std::io::Cursor::new(&a)).unwrap();
        assert_eq!(reader.spec().sample_rate, rate, "{name}");
        assert_eq!(reader.spec().channels, 1);
        let samples = reader.len() as usize;
        assert!(samples > hop, "{name}: {samples} samples");
        // Whole frames (an in-context clone's cut may leave one sample more).
        assert!(samples % hop <= 1, "{name}: {samples} samples");
        assert_eq!(
            app.speech_audio(&secret, body(3)).await,
            a,
            "{name}: same seed"
        );
        assert_ne!(
            app.speech_audio(&secret, body(4)).await,
            a,
            "{name}: other seed"
        );
        // These engines take no temperature: refused at the request, as for kokoro.
        let mut hot = body(3);
        hot["temperature"] = json!(0.7);
        let (status, refused) = app.speak(&secret, hot).await;
        assert_eq!(status, 400, "{name}: {refused}");
        assert_eq!(refused["param"], "temperature", "{refused}");
    }

    // A profile's personality prompt, set through the service the console and `voiced admin`
    // use, reaches the 1.7B CustomVoice model as its instruction; Base stores it but reads none.
    let text = "Hello from the voiced engine.";
    let body = |name: &str| json!({ "text": text, "voice_name": name, "seed": 3, "response_format": "wav" });
    let set_personality = |name: &str, prompt: Option<&'static str>| {
        let (app, account, id) = (&app, account.clone(), ids[name].clone());
        async move { crate::common::fixtures::set_personality(app, &account, &id, prompt).await }
    };
    let prompt = "speak warmly and slowly";
    let plain = app.speech_audio(&secret, body("Qwen Ryan")).await;
    let narrator = app.speech_audio(&secret, body("Qwen narrator")).await;
    set_personality("Qwen Ryan", Some(prompt)).await;
    set_personality("Qwen narrator", Some(prompt)).await;
    let warm = app.speech_audio(&secret, body("Qwen Ryan")).await;
    assert!(warm != plain, "the personality prompt changes the take");
    assert!(
        app.speech_audio(&secret, body("Qwen Ryan")).await == warm,
        "same prompt, same seed: same bytes"
    );
    // Exactly the engine's audio with the prompt as its instruction (which
    // `qwen_matches_a_python_reference_loop` checks against the reference loop).
    let expected = qwen_engine(Variant::CustomVoice)
        .synthesize(&SynthesisInput {
            instruction: Some(prompt),
            ..input(text, "ryan", 3)
        })
        .unwrap();
    let expected = voiced::audio::encode(
        &expected.samples,
        expected.sample_rate,
        voiced::audio::AudioFormat::Wav,
    )
    .unwrap();
    assert!(warm == expected, "the worker passes the prompt unchanged");
    assert!(
        app.speech_audio(&secret, body("Qwen narrator")).await == narrator,
        "Base ignores the prompt"
    );
    set_personality("Qwen Ryan", None).await;
    assert!(
        app.speech_audio(&secret, body("Qwen Ryan")).await == plain,
        "cleared: the plain take again"
    );
    app.stop().await;
}
