//! The cloning engines on tiny generated models with the public ONNX signatures
//! (`scripts/tiny_engine_models.py`, cached under `$VOICED_CACHE/tiny-engines/<script hash>`):
//! the Rust pipeline against a Python reference loop with onnxruntime, and generation end to end
//! through the real API. Needs `voiced models fetch kokoro` (ONNX Runtime, the onnx Python
//! package and the onnxruntime wheel) in `VOICED_MODELS_DIR`.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use common::{TestApp, json};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use voiced::domain::EngineId;
use voiced::engines::chatterbox_turbo::{
    ChatterboxTurboEngine, NOISE_FRAMES, SAMPLE_RATE, STOP_SPEECH, TurboConfig,
};
use voiced::engines::registry::EngineRegistry;
use voiced::engines::{Engine, EngineError, SynthesisInput};

const GENERATOR: &str = include_str!("../scripts/tiny_engine_models.py");
const SEEDER: &str = include_str!("../scripts/seed_noise_graph.py");
const REFERENCE: &str = "scripts/chatterbox_turbo_reference.py";
const SAMPLES_PER_TOKEN: usize = 960;

fn real_models_dir() -> PathBuf {
    voiced::models::default_models_dir()
}

fn cache_dir() -> PathBuf {
    std::env::var_os("VOICED_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache/voiced"))
        .join("tiny-engines")
}

fn python(real: &Path) -> Command {
    let mut cmd = Command::new("python3");
    cmd.env("PYTHONPATH", real.join(".pylib"))
        .env("PYTHONNOUSERSITE", "1");
    cmd
}

/// A models dir with the generated engines, and the real Kokoro, ONNX Runtime and onnx
/// package linked in; generated once per version of the scripts, then reused.
fn models_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let real = real_models_dir();
        let key: String = Sha256::digest(format!("{GENERATOR}\0{SEEDER}"))
            .iter()
            .take(8)
            .map(|b| format!("{b:02x}"))
            .collect();
        let dir = cache_dir().join(key);
        if dir.join("done").is_file() {
            return dir;
        }
        let tmp = cache_dir().join(format!("tmp-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::create_dir_all(&tmp).unwrap();
        let status = python(&real)
            .arg("scripts/tiny_engine_models.py")
            .arg(&tmp)
            .status()
            .expect("python3 runs");
        assert!(status.success(), "generating the tiny models failed");
        for name in ["kokoro", "onnxruntime", ".pylib"] {
            std::os::unix::fs::symlink(real.join(name), tmp.join(name)).unwrap();
        }
        // The install step an operator runs, on the generated files.
        voiced::models::chatterbox::prepare_turbo(&tmp).expect("seeding the decoder");
        std::fs::write(tmp.join("done"), b"").unwrap();
        if std::fs::rename(&tmp, &dir).is_err() {
            // Another test process won the race; its copy is the same.
            let _ = std::fs::remove_dir_all(&tmp);
        }
        dir
    })
}

fn engine() -> ChatterboxTurboEngine {
    ChatterboxTurboEngine::load(&TurboConfig::from_models_dir(models_dir())).expect("engine loads")
}

fn input(text: &str, seed: u64, temperature: Option<f32>) -> SynthesisInput<'_> {
    SynthesisInput {
        text,
        preset: "default",
        language: "en",
        seed,
        temperature,
        cancel: None,
        voice_print: None,
    }
}

#[test]
fn the_install_state_follows_the_files() {
    let dir = models_dir();
    let registry = EngineRegistry::new(dir.to_owned(), 1);
    assert!(registry.is_installed(EngineId::ChatterboxTurbo));
    let presets = registry.presets();
    let turbo = presets
        .iter()
        .find(|(e, _)| *e == EngineId::ChatterboxTurbo)
        .expect("turbo presets listed");
    assert_eq!(turbo.1[0].name, "default");
    assert!(!EngineRegistry::is_available(EngineId::Tada));
    let state = |dir: &Path, engine: &str| {
        voiced::models::status::status(dir)
            .into_iter()
            .find(|s| s.engine == engine)
            .unwrap()
    };
    assert_eq!(
        state(dir, "chatterbox_turbo").state,
        voiced::models::status::State::Installed
    );
    assert_eq!(
        state(dir, "tada").state,
        voiced::models::status::State::Unavailable
    );

    // Without the seeded decoder the engine is not installed and says what to run.
    let bare = common::TempDir::new("turbo-bare", 0o755);
    let turbo_dir = bare.path().join("chatterbox_turbo");
    std::fs::create_dir_all(turbo_dir.join("onnx")).unwrap();
    for entry in std::fs::read_dir(dir.join("chatterbox_turbo/onnx")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        if !name.contains(".seeded.") {
            std::fs::copy(&path, turbo_dir.join("onnx").join(&name)).unwrap();
        }
    }
    std::fs::copy(
        dir.join("chatterbox_turbo/tokenizer.json"),
        turbo_dir.join("tokenizer.json"),
    )
    .unwrap();
    std::os::unix::fs::symlink(dir.join("onnxruntime"), bare.path().join("onnxruntime")).unwrap();
    let bare_registry = EngineRegistry::new(bare.path().to_owned(), 1);
    assert!(!bare_registry.is_installed(EngineId::ChatterboxTurbo));
    let missing = state(bare.path(), "chatterbox_turbo");
    assert_eq!(missing.state, voiced::models::status::State::Missing);
    assert!(
        missing
            .details
            .iter()
            .any(|d| d.contains("voiced models prepare")),
        "{missing:?}"
    );
    match ChatterboxTurboEngine::load(&TurboConfig::from_models_dir(bare.path())) {
        Err(EngineError::NotInstalled(why)) => {
            assert!(
                why.contains("voiced models prepare chatterbox_turbo"),
                "{why}"
            )
        }
        Err(other) => panic!("unexpected error {other}"),
        Ok(_) => panic!("loaded without a seeded decoder"),
    }
}

#[test]
fn seed_and_temperature_decide_the_take_and_the_length_adds_up() {
    let mut engine = engine();
    let text = "Hello from voiced.";
    let (a, trace) = engine.synthesize_traced(&input(text, 7, None)).unwrap();
    assert_eq!(a.sample_rate, SAMPLE_RATE);
    assert_eq!(trace.pieces.len(), 1);
    let piece = &trace.pieces[0];
    // The generated models stop by themselves after a bounded number of steps.
    assert_eq!(
        piece.tokens.last(),
        Some(&STOP_SPEECH),
        "{:?}",
        piece.tokens
    );
    let speech = piece.tokens.len() - 1;
    assert!((5..200).contains(&speech), "{speech} speech tokens");
    // The decoder leaves the prompt out and adds three silence tokens, 960 samples each.
    assert_eq!(a.samples.len(), (speech + 3) * SAMPLES_PER_TOKEN);
    assert!(a.samples.iter().any(|s| s.abs() > 0.01));

    let again = engine.synthesize(&input(text, 7, None)).unwrap();
    assert_eq!(a.samples, again.samples, "same seed, same audio");
    let other = engine.synthesize(&input(text, 8, None)).unwrap();
    assert_ne!(a.samples, other.samples, "another seed, another take");
    let colder = engine.synthesize(&input(text, 7, Some(0.3))).unwrap();
    assert_ne!(
        a.samples, colder.samples,
        "the temperature changes the take"
    );

    let cancelled = std::sync::atomic::AtomicBool::new(true);
    let result = engine.synthesize(&SynthesisInput {
        cancel: Some(&cancelled),
        ..input(text, 7, None)
    });
    assert!(matches!(result, Err(EngineError::Cancelled)));
}

#[test]
fn a_stored_voice_print_speaks_like_its_reference_clip() {
    let mut engine = engine();
    let clip = std::fs::read(models_dir().join("chatterbox_turbo/voices/default.wav")).unwrap();
    let reference = voiced::engines::reference::prepare(&clip, SAMPLE_RATE).unwrap();
    let print = engine.voice_print(&reference).unwrap();
    let stored = print.to_bytes();
    let restored = voiced::engines::chatterbox_turbo::VoicePrint::from_bytes(&stored).unwrap();
    assert_eq!(restored, print);
    // The preset path decodes the same clip the same way: the stored print gives the same take.
    let text = "Hello from voiced.";
    let from_preset = engine.synthesize(&input(text, 5, None)).unwrap();
    let (from_print, _) = engine
        .synthesize_with_print(&input(text, 5, None), &restored)
        .unwrap();
    assert_eq!(from_print.samples, from_preset.samples);
    // A clip too short to clone from is refused before any model runs.
    let short = &reference[..SAMPLE_RATE as usize * 3];
    let spec = hound::WavSpec {
        channels: 1,
        sample_rate: SAMPLE_RATE,
        bits_per_sample: 16,
        sample_format: hound::SampleFormat::Int,
    };
    let mut wav = std::io::Cursor::new(Vec::new());
    let mut writer = hound::WavWriter::new(&mut wav, spec).unwrap();
    for s in short {
        writer.write_sample((s * 32767.0) as i16).unwrap();
    }
    writer.finalize().unwrap();
    assert!(matches!(
        voiced::engines::reference::prepare(&wav.into_inner(), SAMPLE_RATE),
        Err(voiced::engines::reference::ReferenceError::Length { secs: 3 })
    ));
}

/// onnxruntime's Python wheel (the one `voiced models fetch kokoro` pinned), unpacked once.
fn onnxruntime_python() -> PathBuf {
    let dir = cache_dir().join("onnxruntime-1.31.1-py");
    if dir.join("onnxruntime/__init__.py").is_file() {
        return dir;
    }
    let wheel =
        real_models_dir().join(".pip/onnxruntime-1.31.1-cp311-cp311-manylinux_2_28_x86_64.whl");
    let tmp = cache_dir().join(format!("ortpy-tmp-{}", std::process::id()));
    let status = Command::new("python3")
        .args(["-m", "zipfile", "-e"])
        .arg(&wheel)
        .arg(&tmp)
        .status()
        .unwrap();
    assert!(status.success(), "unpacking {}", wheel.display());
    if std::fs::rename(&tmp, &dir).is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    dir
}

fn write_f32(path: &Path, data: &[f32]) {
    let bytes: Vec<u8> = data.iter().flat_map(|x| x.to_le_bytes()).collect();
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn the_pipeline_matches_a_python_reference_loop() {
    let mut engine = engine();
    let text = "Hello from the voiced engine, one two three.";
    for (seed, temperature) in [(11, Some(0.9f32)), (12, Some(1.6))] {
        let (pcm, trace) = engine
            .synthesize_traced(&input(text, seed, temperature))
            .unwrap();
        let piece = &trace.pieces[0];
        let work = common::TempDir::new("turbo-ref", 0o755);
        write_f32(&work.path().join("reference.f32"), &trace.reference);
        write_f32(&work.path().join("noise.f32"), &piece.noise);
        let request = json!({
            "text": text,
            "temperature": temperature.unwrap(),
            "uniforms": piece.uniforms,
            "reference": work.path().join("reference.f32"),
            "noise": work.path().join("noise.f32"),
            "noise_frames": NOISE_FRAMES,
        });
        std::fs::write(work.path().join("request.json"), request.to_string()).unwrap();
        let real = real_models_dir();
        let output = Command::new("python3")
            .env(
                "PYTHONPATH",
                format!(
                    "{}:{}",
                    real.join(".pylib").display(),
                    onnxruntime_python().display()
                ),
            )
            .env("PYTHONNOUSERSITE", "1")
            .arg(REFERENCE)
            .arg(models_dir().join("chatterbox_turbo"))
            .arg(work.path().join("request.json"))
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let reference: Value = serde_json::from_slice(&output.stdout).unwrap();
        let ids: Vec<i64> = serde_json::from_value(reference["text_ids"].clone()).unwrap();
        assert_eq!(ids, piece.text_ids, "tokenizer");
        let tokens: Vec<i64> = serde_json::from_value(reference["tokens"].clone()).unwrap();
        assert_eq!(tokens, piece.tokens, "sampled speech tokens (seed {seed})");
        let waveform: Vec<f32> = serde_json::from_value(reference["waveform"].clone()).unwrap();
        assert_eq!(waveform.len(), pcm.samples.len());
        let worst = waveform
            .iter()
            .zip(&pcm.samples)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        assert!(worst < 1e-4, "waveforms differ by {worst}");
    }
}

async fn speak(app: &TestApp, secret: &str, body: Value) -> (u16, Value) {
    json(
        app.post("/v1/speech")
            .bearer_auth(secret)
            .json(&body)
            .send()
            .await
            .unwrap(),
    )
    .await
}

async fn wav_of(app: &TestApp, secret: &str, body: Value) -> Vec<u8> {
    let (status, accepted) = speak(app, secret, body).await;
    assert_eq!(status, 202, "{accepted}");
    let id = accepted["id"].as_str().unwrap();
    tokio::time::timeout(
        Duration::from_secs(120),
        app.completions.wait(id, Duration::from_secs(5)),
    )
    .await
    .expect("generation finishes")
    .unwrap();
    let (_, generation) = json(
        app.get(&format!("/v1/generations/{id}"))
            .bearer_auth(secret)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(generation["status"], "completed", "{generation}");
    let url = generation["audio_url"].as_str().unwrap();
    let response = app
        .get(&url[url.find("/v1/audio/").unwrap()..])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    response.bytes().await.unwrap().to_vec()
}

#[tokio::test]
async fn chatterbox_turbo_speaks_through_the_api() {
    let dir = models_dir().to_str().unwrap().to_owned();
    let app = TestApp::start_with(1, &[("VOICED_MODELS_DIR", &dir)]).await;
    let (account, secret) = app.pro_user().await;
    app.voice(&account, "Turbo", EngineId::ChatterboxTurbo, "default")
        .await;
    let body = |seed: u64, temperature: Option<f64>| {
        let mut body = json!({
            "text": "Hello from voiced.", "voice_name": "Turbo", "seed": seed, "response_format": "wav"
        });
        if let Some(t) = temperature {
            body["temperature"] = json!(t);
        }
        body
    };
    let a = wav_of(&app, &secret, body(3, None)).await;
    let reader = hound::WavReader::new(std::io::Cursor::new(&a)).unwrap();
    assert_eq!(reader.spec().sample_rate, SAMPLE_RATE);
    assert_eq!(reader.spec().channels, 1);
    let samples = reader.len() as usize;
    assert_eq!(samples % SAMPLES_PER_TOKEN, 0, "{samples} samples");
    assert!(samples / SAMPLES_PER_TOKEN > 3 + 4, "{samples} samples");

    assert_eq!(wav_of(&app, &secret, body(3, None)).await, a, "same seed");
    assert_ne!(wav_of(&app, &secret, body(4, None)).await, a, "other seed");
    assert_ne!(
        wav_of(&app, &secret, body(3, Some(1.7))).await,
        a,
        "other temperature"
    );
    app.stop().await;
}

#[tokio::test]
async fn tada_voices_are_refused_at_the_request_on_both_endpoints() {
    let app = TestApp::start().await;
    let (account, secret) = app.pro_user().await;
    app.voice(&account, "Tada voice", EngineId::Tada, "default")
        .await;
    let (status, body) = speak(
        &app,
        &secret,
        json!({ "text": "Hello.", "voice_name": "Tada voice" }),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["code"], "invalid_request");
    assert_eq!(body["param"], "voice_name");
    let detail = body["detail"].as_str().unwrap();
    assert!(detail.contains("Tada voice"), "{detail}");
    assert!(
        detail.contains("the tada engine is not available on this deployment"),
        "{detail}"
    );

    let (status, body) = json(
        app.post("/v1/audio/speech")
            .bearer_auth(&secret)
            .json(&json!({ "model": "tts-1", "input": "Hello.", "voice": "Tada voice" }))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["code"], "invalid_request");
    assert_eq!(body["error"]["param"], "voice");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("the tada engine is not available on this deployment"),
        "{message}"
    );
    app.stop().await;
}
