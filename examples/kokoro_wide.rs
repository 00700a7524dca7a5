//! Issue 28: one Kokoro piece on one session with N intra-op threads, against one thread, in one
//! process, alternating: time per run, and whether the audio is the same sample for sample.
//!
//! `kokoro_wide [ROUNDS] [TEXT]`: prints one JSON line per run and a summary.
//! Sessions: `narrow` (1 thread), `wide` (every core, idle threads spinning: ONNX Runtime's
//! default), `wide-sleep` (every core, idle threads sleeping).

use std::path::PathBuf;
use std::time::Instant;

use voiced::engines::kokoro::{KokoroConfig, KokoroEngine};
use voiced::engines::{Engine, SynthesisInput};

const SENTENCE: &str = "The quick brown fox jumps over the lazy dog near the river bank.";

fn main() {
    let mut args = std::env::args().skip(1);
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(5);
    let text = args.next().unwrap_or_else(|| SENTENCE.to_owned());
    let dir = std::env::var_os("VOICED_MODELS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/voiced/models")
        });
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let designs = [
        ("narrow", 1, true),
        ("wide", cores, true),
        ("wide-sleep", cores, false),
    ];
    let mut engines: Vec<(&str, KokoroEngine)> = designs
        .iter()
        .map(|&(name, threads, spinning)| {
            let config = KokoroConfig {
                intra_threads: threads,
                spinning,
                ..KokoroConfig::from_models_dir(&dir)
            };
            (name, KokoroEngine::load(&config).unwrap())
        })
        .collect();
    let input = SynthesisInput {
        text: &text,
        preset: "af_heart",
        language: "en",
        seed: 7,
        temperature: None,
        cancel: None,
        voice_print: None,
        instruction: None,
    };
    // Warm-up (the first run of a session is slower), and the reference audio.
    let reference = engines[0].1.synthesize(&input).unwrap().samples;
    for (_, engine) in engines.iter_mut().skip(1) {
        engine.synthesize(&input).unwrap();
    }
    let audio_s = reference.len() as f64 / 24_000.0;
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); engines.len()];
    for round in 0..rounds {
        let n = engines.len();
        for k in 0..n {
            let i = (k + round) % n;
            let (name, engine) = &mut engines[i];
            let started = Instant::now();
            let samples = engine.synthesize(&input).unwrap().samples;
            let took = started.elapsed().as_secs_f64();
            let same = samples == reference;
            println!(
                "{{\"round\": {round}, \"design\": \"{name}\", \"s\": {took:.3}, \"identical\": {same}}}"
            );
            assert!(same, "{name}: the audio differs from one thread's");
            times[i].push(took);
        }
    }
    let median = |v: &[f64]| {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let base = median(&times[0]);
    println!("audio {audio_s:.2} s, {cores} cores, {rounds} rounds, medians:");
    for (i, (name, _)) in engines.iter().enumerate() {
        let m = median(&times[i]);
        println!(
            "  {name:<11} {m:.3} s  ratio to narrow {:.3}  identical audio: yes",
            m / base
        );
    }
}
