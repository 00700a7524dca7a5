//! `cargo run --release --example bench [THREADS]`: load time, real-time factor, peak RSS.

use std::path::PathBuf;
use std::time::Instant;

use voiced::engines::kokoro::{KokoroConfig, KokoroEngine};
use voiced::engines::{Engine, SynthesisInput};

fn main() {
    let threads: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1);
    let dir = PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/voiced/models");
    let mut config = KokoroConfig::from_models_dir(&dir);
    config.intra_threads = threads;
    let started = Instant::now();
    let mut engine = KokoroEngine::load(&config).unwrap();
    println!("load {:.2} s", started.elapsed().as_secs_f32());
    let text = "The quick brown fox jumps over the lazy dog. Then it ran back into the forest, \
                where nobody could see it any more, and the dog went back to sleep.";
    let t = Instant::now();
    let pieces = engine.pieces(text, "jf_alpha", "en").unwrap();
    println!(
        "phonemize {} pieces {:.3} s",
        pieces.len(),
        t.elapsed().as_secs_f32()
    );
    let input = SynthesisInput {
        text,
        preset: "jf_alpha",
        language: "en",
        seed: 1,
        temperature: None,
        cancel: None,
        voice_print: None,
        instruction: None,
    };
    let t = Instant::now();
    let pcm = engine.synthesize(&input).unwrap();
    let audio = pcm.samples.len() as f32 / pcm.sample_rate as f32;
    let took = t.elapsed().as_secs_f32();
    println!(
        "threads {threads}: {audio:.2} s audio in {took:.2} s = {:.2}x real time",
        audio / took
    );
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    println!(
        "{}",
        status.lines().find(|l| l.starts_with("VmHWM")).unwrap()
    );
}
