//! The cloning engines (chatterbox_turbo, chatterbox) on tiny generated models with the public
//! ONNX signatures (`scripts/tiny_engine_models.py`, cached under
//! `$VOICED_CACHE/tiny-engines/<script hash>`): each Rust pipeline against a Python reference
//! loop with onnxruntime, generation end to end through the real API, and cloning end to end
//! (`voiced admin voice clone`, the console's upload form, the print computed once and
//! reused). Needs `voiced models fetch kokoro` (ONNX Runtime, the onnx Python package and the
//! onnxruntime wheel) in `VOICED_MODELS_DIR`.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use crate::common::fixtures;
use crate::common::{TestApp, json};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use voiced::domain::EngineId;
use voiced::engines::chatterbox::{ChatterboxConfig, ChatterboxEngine};
use voiced::engines::chatterbox_shared::Trace;
use voiced::engines::chatterbox_turbo::{
    ChatterboxTurboEngine, NOISE_FRAMES, SAMPLE_RATE, STOP_SPEECH, TurboConfig,
};
use voiced::engines::registry::EngineRegistry;
use voiced::engines::{Engine, EngineError, SynthesisInput};

const GENERATOR: &str = include_str!("../../scripts/tiny_engine_models.py");
const SEEDER: &str = include_str!("../../scripts/seed_noise_graph.py");
const REFERENCE: &str = "scripts/chatterbox_turbo_reference.py";
const MULTILINGUAL_REFERENCE: &str = "scripts/chatterbox_reference.py";
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
        voiced::models::chatterbox::prepare_multilingual(&tmp).expect("seeding the decoder");
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

fn multilingual() -> ChatterboxEngine {
    ChatterboxEngine::load(&ChatterboxConfig::from_models_dir(models_dir())).expect("engine loads")
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
        instruction: None,
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
        state(dir, "chatterbox").state,
        voiced::models::status::State::Installed
    );
    assert!(registry.is_installed(EngineId::Chatterbox));
    assert!(presets.iter().any(|(e, _)| *e == EngineId::Chatterbox));
    assert_eq!(
        state(dir, "tada").state,
        voiced::models::status::State::Unavailable
    );
    // Without the files, chatterbox is missing and says what to place and run.
    let empty = common::TempDir::new("mtl-empty", 0o755);
    let missing = state(empty.path(), "chatterbox");
    assert_eq!(missing.state, voiced::models::status::State::Missing);
    assert!(
        missing
            .details
            .iter()
            .any(|d| d.contains("onnx/language_model.onnx"))
            && missing.how.contains("voiced models prepare chatterbox")
            && missing
                .how
                .contains("onnx-community/chatterbox-multilingual-ONNX"),
        "{missing:?}"
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

    let cancelled = voiced::engines::Cancel::new();
    cancelled.cancel();
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
    let print = engine.print_of(&reference).unwrap();
    let stored = print.to_bytes();
    let restored = voiced::engines::chatterbox_turbo::VoicePrint::from_bytes(&stored).unwrap();
    assert_eq!(restored, print);
    // The trait's door to the same print: what a cloned profile stores.
    assert_eq!(Engine::reference_rate(&engine), Some(SAMPLE_RATE));
    assert_eq!(
        Engine::voice_print(&mut engine, &reference, None, "en").unwrap(),
        stored
    );
    // The preset path decodes the same clip the same way: the stored print gives the same take.
    let text = "Hello from voiced.";
    let from_preset = engine.synthesize(&input(text, 5, None)).unwrap();
    let (from_print, _) = engine
        .synthesize_with_print(&input(text, 5, None), &restored)
        .unwrap();
    assert_eq!(from_print.samples, from_preset.samples);
    // Through `SynthesisInput::voice_print` the preset is not looked at.
    let from_stored = engine
        .synthesize(&SynthesisInput {
            preset: "no-such-preset",
            voice_print: Some(&stored),
            ..input(text, 5, None)
        })
        .unwrap();
    assert_eq!(from_stored.samples, from_preset.samples);
    let damaged = engine.synthesize(&SynthesisInput {
        voice_print: Some(&stored[..stored.len() - 3]),
        ..input(text, 5, None)
    });
    assert!(
        matches!(&damaged, Err(EngineError::DamagedPrint)),
        "{:?}",
        damaged.err()
    );
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

/// Runs a reference loop script on `request` (reference clip and noise bank written beside it).
fn reference_loop(
    script: &str,
    model_dir: &Path,
    trace: &Trace,
    piece: usize,
    request: Value,
) -> Value {
    let work = common::TempDir::new("engine-ref", 0o755);
    write_f32(&work.path().join("reference.f32"), &trace.reference);
    write_f32(&work.path().join("noise.f32"), &trace.pieces[piece].noise);
    let mut request = request;
    request["uniforms"] = json!(trace.pieces[piece].uniforms);
    request["reference"] = json!(work.path().join("reference.f32"));
    request["noise"] = json!(work.path().join("noise.f32"));
    request["noise_frames"] = json!(NOISE_FRAMES);
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
        .arg(script)
        .arg(model_dir)
        .arg(work.path().join("request.json"))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// The reference's ids, tokens and waveform equal the pipeline's (waveform within 1e-4).
fn assert_same_as_reference(
    reference: &Value,
    piece: &voiced::engines::chatterbox_shared::PieceTrace,
    pcm: &[f32],
    what: &str,
) {
    let ids: Vec<i64> = serde_json::from_value(reference["text_ids"].clone()).unwrap();
    assert_eq!(ids, piece.text_ids, "tokenizer ({what})");
    let tokens: Vec<i64> = serde_json::from_value(reference["tokens"].clone()).unwrap();
    assert_eq!(tokens, piece.tokens, "sampled speech tokens ({what})");
    let waveform: Vec<f32> = serde_json::from_value(reference["waveform"].clone()).unwrap();
    assert_eq!(waveform.len(), pcm.len(), "waveform length ({what})");
    let worst = waveform
        .iter()
        .zip(pcm)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max);
    assert!(worst < 1e-4, "waveforms differ by {worst} ({what})");
}

#[test]
fn the_pipeline_matches_a_python_reference_loop() {
    let mut engine = engine();
    let text = "Hello from the voiced engine, one two three.";
    for (seed, temperature) in [(11, Some(0.9f32)), (12, Some(1.6))] {
        let (pcm, trace) = engine
            .synthesize_traced(&input(text, seed, temperature))
            .unwrap();
        let reference = reference_loop(
            REFERENCE,
            &models_dir().join("chatterbox_turbo"),
            &trace,
            0,
            json!({ "text": text, "temperature": temperature.unwrap() }),
        );
        assert_same_as_reference(
            &reference,
            &trace.pieces[0],
            &pcm.samples,
            &format!("seed {seed}"),
        );
    }
}

#[test]
fn the_multilingual_pipeline_matches_a_python_reference_loop() {
    let mut engine = multilingual();
    for (text, language, seed, temperature) in [
        (
            "Hello from the voiced engine: one, two, three",
            "en",
            21,
            0.8f32,
        ),
        ("Très bien, merci: à demain", "fr", 22, 1.5),
    ] {
        let (pcm, trace) = engine
            .synthesize_traced(&SynthesisInput {
                language,
                ..input(text, seed, Some(temperature))
            })
            .unwrap();
        assert_eq!(trace.pieces.len(), 1, "{text}");
        let reference = reference_loop(
            MULTILINGUAL_REFERENCE,
            &models_dir().join("chatterbox"),
            &trace,
            0,
            json!({ "text": text, "language": language, "temperature": temperature }),
        );
        assert_same_as_reference(&reference, &trace.pieces[0], &pcm.samples, text);
    }
}

#[test]
fn the_multilingual_engine_follows_seed_temperature_and_language() {
    let mut engine = multilingual();
    let text = "Hello from voiced.";
    let (a, trace) = engine.synthesize_traced(&input(text, 7, None)).unwrap();
    assert_eq!(a.sample_rate, SAMPLE_RATE);
    let piece = &trace.pieces[0];
    // The prompt follows the upstream template: exaggeration slot, start of text, the language
    // tag, …, stop of text, two start-of-speech ids.
    assert_eq!(&piece.text_ids[..2], &[6563, 255]);
    assert_eq!(
        &piece.text_ids[piece.text_ids.len() - 3..],
        &[0, 6561, 6561]
    );
    assert_eq!(
        piece.tokens.last(),
        Some(&STOP_SPEECH),
        "the generated models stop by themselves: {:?}",
        piece.tokens
    );
    // The decoder speaks the generated tokens below 6561; the last one's audio is dropped.
    let spoken = piece
        .tokens
        .iter()
        .filter(|t| (0..6561).contains(*t))
        .count();
    assert!(spoken > 5, "{spoken} speech tokens");
    assert_eq!(a.samples.len(), (spoken - 1) * SAMPLES_PER_TOKEN);
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
    let german = engine
        .synthesize(&SynthesisInput {
            language: "de",
            ..input(text, 7, None)
        })
        .unwrap();
    assert_ne!(
        a.samples, german.samples,
        "the language tag is part of the prompt"
    );
    match engine.synthesize(&SynthesisInput {
        language: "xx",
        ..input(text, 7, None)
    }) {
        Err(EngineError::InvalidInput(why)) => {
            assert!(why.contains("23") || why.contains("ar, da"), "{why}")
        }
        other => panic!("unexpected {:?}", other.map(|p| p.samples.len())),
    }
    // Its print is the speech encoder's four outputs, like turbo's.
    let clip = std::fs::read(models_dir().join("chatterbox/voices/default.wav")).unwrap();
    let reference = voiced::engines::reference::prepare(&clip, SAMPLE_RATE).unwrap();
    let stored = Engine::voice_print(&mut engine, &reference, None, "de").unwrap();
    let from_print = engine
        .synthesize(&SynthesisInput {
            voice_print: Some(&stored),
            ..input(text, 7, None)
        })
        .unwrap();
    assert_eq!(
        from_print.samples, a.samples,
        "the preset's clip as a stored print"
    );
}

/// Samples of a mono WAV at `rate`.
fn wav_samples(bytes: &[u8], rate: u32) -> usize {
    let reader = hound::WavReader::new(std::io::Cursor::new(bytes)).unwrap();
    assert_eq!(reader.spec().sample_rate, rate);
    assert_eq!(reader.spec().channels, 1);
    reader.len() as usize
}

fn speech_body(voice: &str, seed: u64, temperature: Option<f64>) -> Value {
    let mut body = json!({
        "text": "Hello from voiced.", "voice_name": voice, "seed": seed, "response_format": "wav"
    });
    if let Some(t) = temperature {
        body["temperature"] = json!(t);
    }
    body
}

/// A voice-like recording (a gliding harmonic tone with a syllable rhythm) as 16-bit WAV.
fn recording(secs: f32, rate: u32, f0: f32, amplitude: f32) -> Vec<u8> {
    let spec = hound::WavSpec {
        channels: 1,
        sample_rate: rate,
        bits_per_sample: 16,
        sample_format: hound::SampleFormat::Int,
    };
    let mut out = std::io::Cursor::new(Vec::new());
    let mut writer = hound::WavWriter::new(&mut out, spec).unwrap();
    let mut phase = 0.0f32;
    for i in 0..(secs * rate as f32) as usize {
        let t = i as f32 / rate as f32;
        phase += std::f32::consts::TAU * (f0 + 25.0 * (1.3 * t).sin()) / rate as f32;
        let voice: f32 = (1..6).map(|h| (h as f32 * phase).sin() / h as f32).sum();
        let envelope = 0.5 + 0.5 * (std::f32::consts::TAU * 2.5 * t).sin().powi(2);
        let s = (amplitude * voice * envelope).clamp(-1.0, 1.0);
        writer.write_sample((s * 32767.0) as i16).unwrap();
    }
    writer.finalize().unwrap();
    out.into_inner()
}

/// `voiced` as an operator runs it, on this suite's database and models.
fn voiced_cli(app: &TestApp, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_voiced"))
        .args(args)
        .env("VOICED_DATABASE_URL", app.db.url())
        .env("VOICED_MODELS_DIR", models_dir())
        .env("VOICED_LOG", "error")
        .output()
        .expect("voiced runs")
}

/// The stored print of a voice: (print, error, attempts, computed_at as text).
async fn print_row(
    app: &TestApp,
    voice: &str,
) -> (Option<Vec<u8>>, Option<String>, i32, Option<String>) {
    let stored = fixtures::voice_print(app, voice).await;
    (
        stored.print,
        stored.error,
        stored.attempts,
        stored.computed_at.map(|at| at.to_rfc3339()),
    )
}

async fn voice_id(app: &TestApp, account: &str, name: &str) -> Option<String> {
    fixtures::voices_of(app, account)
        .await
        .into_iter()
        .find(|v| v.name == name)
        .map(|v| v.id)
}

/// A browser without JavaScript: one session cookie, no redirects followed.
struct Browser {
    client: reqwest::Client,
    base: String,
    cookie: Option<String>,
}

impl Browser {
    fn new(app: &TestApp) -> Self {
        Self {
            client: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
            base: app.base.clone(),
            cookie: None,
        }
    }

    async fn send(&mut self, request: reqwest::RequestBuilder) -> (u16, String) {
        let request = match &self.cookie {
            Some(cookie) => request.header(reqwest::header::COOKIE, cookie),
            None => request,
        };
        let response = request.send().await.unwrap();
        if let Some(set) = response.headers().get(reqwest::header::SET_COOKIE) {
            self.cookie = Some(set.to_str().unwrap().split(';').next().unwrap().to_owned());
        }
        let status = response.status().as_u16();
        (status, response.text().await.unwrap())
    }

    async fn csrf(&mut self, path: &str) -> String {
        let (status, html) = self
            .send(self.client.get(format!("{}{path}", self.base)))
            .await;
        assert_eq!(status, 200, "{html}");
        let marker = "name=\"csrf_token\" value=\"";
        let start = html.find(marker).expect("a form with a csrf_token") + marker.len();
        html[start..][..html[start..].find('"').unwrap()].to_owned()
    }

    async fn sign_up(&mut self, email: &str) {
        let token = self.csrf("/console/sign-up").await;
        let form = [
            ("email", email),
            ("password", "a long enough passphrase"),
            ("csrf_token", &token),
        ];
        let request = self
            .client
            .post(format!("{}/console/sign-up", self.base))
            .form(&form);
        assert_eq!(self.send(request).await.0, 303);
    }

    /// Posts the clone form as `multipart/form-data` (the page's CSRF token unless `csrf` is
    /// given).
    async fn clone_voice(
        &mut self,
        fields: &[(&str, &str)],
        audio: &[u8],
        csrf: Option<&str>,
    ) -> (u16, String) {
        let token = match csrf {
            Some(token) => token.to_owned(),
            None => self.csrf("/console/voices").await,
        };
        let boundary = "----voiced-test-boundary-7d1f";
        let mut body = Vec::new();
        let mut part = |name: &str, filename: Option<&str>, content: &[u8]| {
            body.extend(
                format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"").bytes(),
            );
            if let Some(f) = filename {
                body.extend(format!("; filename=\"{f}\"\r\nContent-Type: audio/wav").bytes());
            }
            body.extend(b"\r\n\r\n");
            body.extend(content);
            body.extend(b"\r\n");
        };
        part("csrf_token", None, token.as_bytes());
        for (name, value) in fields {
            part(name, None, value.as_bytes());
        }
        part("audio", Some("voice.wav"), audio);
        body.extend(format!("--{boundary}--\r\n").bytes());
        let request = self
            .client
            .post(format!("{}/console/voices/clone", self.base))
            .header(
                reqwest::header::CONTENT_TYPE,
                format!("multipart/form-data; boundary={boundary}"),
            )
            .body(body);
        self.send(request).await
    }
}

/// One server for the suite's API checks: both Chatterbox engines speak through `/v1/speech`
/// (rate, length arithmetic, seed, temperature), then voices are cloned with the admin command
/// and the console form and speak from their stored prints.
#[tokio::test]
async fn engines_speak_and_clone_through_the_api() {
    let dir = models_dir().to_str().unwrap().to_owned();
    let app = TestApp::start_with(1, &[("VOICED_MODELS_DIR", &dir)]).await;
    let (account, secret) = app.pro_user().await;

    // chatterbox_turbo: 24 kHz, whole tokens of 960 samples.
    app.voice(&account, "Turbo", EngineId::ChatterboxTurbo, "default")
        .await;
    let a = app
        .speech_audio(&secret, speech_body("Turbo", 3, None))
        .await;
    let samples = wav_samples(&a, SAMPLE_RATE);
    assert_eq!(samples % SAMPLES_PER_TOKEN, 0, "{samples} samples");
    assert!(samples / SAMPLES_PER_TOKEN > 3 + 4, "{samples} samples");
    assert_eq!(
        app.speech_audio(&secret, speech_body("Turbo", 3, None))
            .await,
        a,
        "same seed"
    );
    assert_ne!(
        app.speech_audio(&secret, speech_body("Turbo", 4, None))
            .await,
        a,
        "other seed"
    );
    assert_ne!(
        app.speech_audio(&secret, speech_body("Turbo", 3, Some(1.7)))
            .await,
        a,
        "other temperature"
    );

    // chatterbox (multilingual), in German.
    let mtl = app
        .voice(&account, "Multi", EngineId::Chatterbox, "default")
        .await;
    fixtures::set_voice_language(&app, &mtl, "de").await;
    let m = app
        .speech_audio(&secret, speech_body("Multi", 3, None))
        .await;
    let samples = wav_samples(&m, SAMPLE_RATE);
    assert!(
        samples > 0 && samples.is_multiple_of(SAMPLES_PER_TOKEN),
        "{samples} samples"
    );
    assert_eq!(
        app.speech_audio(&secret, speech_body("Multi", 3, None))
            .await,
        m,
        "same seed"
    );
    assert_ne!(
        app.speech_audio(&secret, speech_body("Multi", 4, None))
            .await,
        m,
        "other seed"
    );
    assert_ne!(
        app.speech_audio(&secret, speech_body("Multi", 3, Some(0.2)))
            .await,
        m,
        "other temperature"
    );

    // The API keeps refusing cloning (spec: voice:generate "cannot clone a real person's voice").
    let (status, problem) = json(
        app.post("/v1/voices")
            .bearer_auth(&secret)
            .json(&json!({ "name": "Sneaky", "engine": "chatterbox", "preset": "default", "audio": "UklGRg==" }))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, problem["param"].as_str()),
        (400, Some("audio")),
        "{problem}"
    );
    assert_eq!(voice_id(&app, &account, "Sneaky").await, None);

    admin_clones_and_the_print_is_reused(&app, &account, &secret, &a).await;
    console_clones_through_a_worker(&app).await;
    app.stop().await;
}

/// `voiced admin voice clone` computes the print in-process; generations use the stored print
/// and never the recording again.
async fn admin_clones_and_the_print_is_reused(
    app: &TestApp,
    account: &str,
    secret: &str,
    preset_take: &[u8],
) {
    let work = common::TempDir::new("clone-cli", 0o755);
    let clip = work.path().join("ada.wav");
    std::fs::write(&clip, recording(7.0, 22_050, 180.0, 0.3)).unwrap();
    let output = voiced_cli(
        app,
        &[
            "admin",
            "--json",
            "voice",
            "clone",
            "--account",
            account,
            "--name",
            "Ada",
            "--engine",
            "chatterbox_turbo",
            "--audio",
            clip.to_str().unwrap(),
            "--transcript",
            "Hello, I am Ada.",
        ],
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let made: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(made["voice_type"], "cloned", "{made}");
    assert_eq!(made["sample_count"], 1, "{made}");
    let id = made["id"].as_str().unwrap().to_owned();

    // Stored once: the print is the engine's for the recording, computed by the command itself
    // (no worker attempt), next to the recording as uploaded.
    let (print, error, attempts, computed_at) = print_row(app, &id).await;
    let print = print.expect("print stored by the command");
    assert_eq!((error, attempts), (None, 0));
    let mut turbo = engine();
    let reference =
        voiced::engines::reference::prepare(&std::fs::read(&clip).unwrap(), SAMPLE_RATE).unwrap();
    assert_eq!(
        print,
        Engine::voice_print(&mut turbo, &reference, None, "en").unwrap()
    );
    let (audio, transcript) = fixtures::voice_sample(app, &id).await;
    assert_eq!(audio, std::fs::read(&clip).unwrap());
    assert_eq!(transcript.as_deref(), Some("Hello, I am Ada."));

    let take = app.speech_audio(secret, speech_body("Ada", 3, None)).await;
    wav_samples(&take, SAMPLE_RATE);
    assert_ne!(take, preset_take, "the cloned voice is not the preset's");
    // Generations never go back to the recording: with it destroyed, the same request gives
    // the same bytes; the print was not recomputed.
    fixtures::corrupt_voice_samples(app, &id).await;
    assert_eq!(
        app.speech_audio(secret, speech_body("Ada", 3, None)).await,
        take
    );
    let after = print_row(app, &id).await;
    assert_eq!(
        (after.0.as_ref(), after.2, &after.3),
        (Some(&print), 0, &computed_at)
    );
    // And the print is what speaks: a damaged one fails the generation, clearly.
    fixtures::corrupt_voice_print(app, &id).await;
    let (status, accepted) = app.speak(secret, speech_body("Ada", 3, None)).await;
    assert_eq!(status, 202, "{accepted}");
    let failed = app.finished(secret, accepted["id"].as_str().unwrap()).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    assert!(
        failed["error"].as_str().unwrap().contains("damaged"),
        "{failed}"
    );

    // Refusals name the option and store nothing.
    let silent = work.path().join("silent.wav");
    std::fs::write(&silent, recording(7.0, 22_050, 180.0, 0.0)).unwrap();
    let short = work.path().join("short.wav");
    std::fs::write(&short, recording(3.0, 22_050, 180.0, 0.3)).unwrap();
    for (engine, file, expected) in [
        (
            "chatterbox",
            &silent,
            "--audio: The reference audio is silent",
        ),
        (
            "chatterbox",
            &short,
            "--audio: The reference audio is 3 s long; it must have 5 to 30 s",
        ),
        (
            "kokoro",
            &clip,
            "--engine: The kokoro engine cannot clone a voice",
        ),
    ] {
        let output = voiced_cli(
            app,
            &[
                "admin",
                "voice",
                "clone",
                "--account",
                account,
                "--name",
                "Refused",
                "--engine",
                engine,
                "--audio",
                file.to_str().unwrap(),
            ],
        );
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            !output.status.success() && stderr.contains(expected),
            "{stderr}"
        );
    }
    assert_eq!(voice_id(app, account, "Refused").await, None);
}

/// The console's upload form: consent, CSRF and the recording are checked; a worker computes
/// the print once (the voice's first generation waits for it) and generations reuse it.
async fn console_clones_through_a_worker(app: &TestApp) {
    let mut browser = Browser::new(app);
    browser.sign_up("grace@example.com").await;
    let account = fixtures::account_id(app, "grace@example.com").await;
    fixtures::set_plan(app, &account, voiced::domain::Plan::Pro).await;
    let (_, secret) = app.key(&account, &voiced::domain::Scope::ALL).await;
    let voice = recording(8.0, 44_100, 120.0, 0.25);
    let fields = |name: &'static str, engine: &'static str, consent: &'static str| {
        vec![
            ("name", name),
            ("engine", engine),
            ("language", "fr"),
            ("transcript", ""),
            ("consent", consent),
        ]
    };

    // Refusals: the page says why (400-class) and nothing is stored.
    let (status, page) = browser
        .clone_voice(&fields("Grace", "chatterbox", ""), &voice, None)
        .await;
    assert!(status == 400 && page.contains("consent"), "{status} {page}");
    let (status, page) = browser
        .clone_voice(
            &fields("Grace", "chatterbox", "yes"),
            &recording(7.0, 44_100, 120.0, 0.0),
            None,
        )
        .await;
    assert!(status == 400 && page.contains("silent"), "{status} {page}");
    let (status, page) = browser
        .clone_voice(&fields("Grace", "kokoro", "yes"), &voice, None)
        .await;
    assert!(
        status == 400 && page.contains("cannot clone"),
        "{status} {page}"
    );
    let (status, page) = browser
        .clone_voice(&fields("Grace", "chatterbox", "yes"), b"not audio", None)
        .await;
    assert!(
        status == 400 && page.contains("could not be decoded"),
        "{status} {page}"
    );
    let (status, _) = browser
        .clone_voice(
            &fields("Grace", "chatterbox", "yes"),
            &voice,
            Some("forged"),
        )
        .await;
    assert_eq!(status, 403);
    let huge = vec![0u8; voiced::engines::reference::MAX_BYTES + 128 * 1024];
    let (status, page) = browser
        .clone_voice(&fields("Grace", "chatterbox", "yes"), &huge, None)
        .await;
    assert!(status == 413 && page.contains("MiB"), "{status} {page}");
    assert_eq!(voice_id(app, &account, "Grace").await, None);

    // Accepted: back to the list; the print is a job for the worker.
    let (status, page) = browser
        .clone_voice(&fields("Grace", "chatterbox", "yes"), &voice, None)
        .await;
    assert_eq!(status, 303, "{page}");
    let id = voice_id(app, &account, "Grace")
        .await
        .expect("voice stored");
    // Sent at once: the generation waits for the print, then speaks French in the clone.
    let take = app
        .speech_audio(&secret, speech_body("Grace", 9, None))
        .await;
    wav_samples(&take, SAMPLE_RATE);
    let (print, error, attempts, computed_at) = print_row(app, &id).await;
    let print = print.expect("the worker stored the print");
    assert_eq!((error, attempts), (None, 1), "computed once, by one worker");
    let mut mtl = multilingual();
    let reference = voiced::engines::reference::prepare(&voice, SAMPLE_RATE).unwrap();
    assert_eq!(
        print,
        Engine::voice_print(&mut mtl, &reference, None, "fr").unwrap()
    );
    assert_eq!(
        app.speech_audio(&secret, speech_body("Grace", 9, None))
            .await,
        take
    );
    assert_eq!(
        print_row(app, &id).await,
        (Some(print), None, 1, computed_at),
        "reused, not recomputed"
    );
    let (_, list) = browser
        .send(
            browser
                .client
                .get(format!("{}/console/voices", browser.base)),
        )
        .await;
    assert!(
        list.contains("Grace") && list.contains("cloned from 1 recording"),
        "{list}"
    );

    // A recording that passes the form's checks but not the engine (stored behind the form's
    // back here) fails its print: requests for the voice are then refused up front, and a
    // generation that was already waiting fails with the reason.
    let limits = voiced::service::cloning::CloneLimits::default();
    let broken = fixtures::store_clone_recording(app, &account, limits, "Broken", b"not audio")
        .await
        .unwrap();
    let error = common::poll_until(Duration::from_secs(60), "the print to fail", || async {
        print_row(app, &broken).await.1
    })
    .await;
    assert!(error.contains("could not be decoded"), "{error}");
    let (status, problem) = app.speak(&secret, speech_body("Broken", 1, None)).await;
    assert_eq!(
        (status, problem["param"].as_str()),
        (400, Some("voice_name")),
        "{problem}"
    );
    assert!(
        problem["detail"]
            .as_str()
            .unwrap()
            .contains("could not be prepared"),
        "{problem}"
    );
    let (key_id, _) = app.key(&account, &voiced::domain::Scope::ALL).await;
    let waiting = fixtures::enqueue_past_admission(
        app,
        &account,
        Some(&key_id),
        &broken,
        "chatterbox",
        "Hello.",
    )
    .await;
    let failed = app.finished(&secret, &waiting).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    assert!(
        failed["error"]
            .as_str()
            .unwrap()
            .contains("could not be prepared"),
        "{failed}"
    );
}

#[tokio::test]
async fn tada_voices_are_refused_at_the_request_on_both_endpoints() {
    let app = TestApp::start().await;
    let (account, secret) = app.pro_user().await;
    app.voice(&account, "Tada voice", EngineId::Tada, "default")
        .await;
    let (status, body) = app
        .speak(
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
