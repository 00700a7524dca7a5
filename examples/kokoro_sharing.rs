//! `cargo run --release --example kokoro_sharing -- MODE [PARAGRAPH]`: how a Kokoro generation
//! uses two cores, in one of three designs. ONNX Runtime's environment is per process, so each
//! design runs in its own process; `bench/kokoro_sharing.py` runs them in turn and compares.
//!
//! MODE:
//! - `serial`: two sessions with one own intra-op thread each; a lone paragraph runs its
//!   sentences one after the other on one session (voiced before sentence sharing).
//! - `pieces`: the same two sessions; a lone paragraph's sentences are shared between both
//!   sessions, each taking the next one nobody has taken (what `worker::pieces` does).
//! - `pool`: two sessions sharing one ONNX Runtime thread pool of two threads; a lone paragraph
//!   runs on one session, whose operators use both threads. Idle pool threads sleep.
//! - `pool-spin`: the same, with idle pool threads spinning (ONNX Runtime's default, what a
//!   single session with two threads, such as fastkokoro's, does).
//!
//! Prints one JSON line: time to the first sentence's audio and to the last (lone paragraph),
//! and sentences per second with both sessions busy on their own sentences (load).

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::time::Instant;

use voiced::engines::kokoro::{KokoroConfig, KokoroEngine};
use voiced::engines::{Engine, Segment, SynthesisInput};

const SENTENCE: &str = "The quick brown fox jumps over the lazy dog near the river bank.";
/// Rounds of the load measurement: each session renders the sentence this many times.
const LOAD_ROUNDS: usize = 6;

fn input(text: &str) -> SynthesisInput<'_> {
    SynthesisInput {
        text,
        preset: "jf_alpha",
        language: "en",
        seed: 7,
        temperature: None,
        cancel: None,
        voice_print: None,
        instruction: None,
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_else(|| "serial".into());
    let paragraph = args.next().unwrap_or_else(|| {
        "The weather was cold and windy this morning, so we stayed inside and read the newspaper. \
         In the afternoon the sun came out, and we walked to the market to buy bread, apples and \
         fresh fish for dinner. On the way home we met an old friend, who told us about her trip \
         to the mountains and the little village where she stayed for a week. She showed us \
         pictures of the lake, the old church and the narrow streets. We promised to visit the \
         village together next summer."
            .into()
    });
    let dir = std::env::var_os("VOICED_MODELS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/voiced/models")
        });
    if mode == "pool" || mode == "pool-spin" {
        assert!(voiced::engines::onnx::share_one_thread_pool(
            2,
            mode == "pool-spin"
        ));
    }
    let config = KokoroConfig::from_models_dir(&dir);
    let mut engines: Vec<KokoroEngine> = (0..2)
        .map(|_| KokoroEngine::load(&config).expect("kokoro loads"))
        .collect();
    for engine in &mut engines {
        engine.synthesize(&input("Warm up.")).unwrap();
    }
    let mut b = engines.pop().unwrap();
    let mut a = engines.pop().unwrap();

    // A lone paragraph.
    let started = Instant::now();
    let segments: Arc<Vec<Segment>> = Arc::new(a.segments(&input(&paragraph)).unwrap().unwrap());
    let count = segments.len();
    let (done, finished) = mpsc::channel::<(usize, f64, usize)>();
    let next = Arc::new(AtomicUsize::new(0));
    let helper = if mode == "pieces" {
        let (segments, next, done, paragraph) = (
            segments.clone(),
            next.clone(),
            done.clone(),
            paragraph.clone(),
        );
        let thread = std::thread::spawn(move || {
            loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                if i >= segments.len() {
                    return b;
                }
                let pcm = b
                    .render_segment(&input(&paragraph), &segments[i], i)
                    .unwrap();
                done.send((i, started.elapsed().as_secs_f64(), pcm.samples.len()))
                    .unwrap();
            }
        });
        Err(thread)
    } else {
        Ok(b)
    };
    loop {
        let i = next.fetch_add(1, Ordering::SeqCst);
        if i >= count {
            break;
        }
        let pcm = a
            .render_segment(&input(&paragraph), &segments[i], i)
            .unwrap();
        done.send((i, started.elapsed().as_secs_f64(), pcm.samples.len()))
            .unwrap();
    }
    drop(done);
    let mut b = match helper {
        Err(thread) => thread.join().unwrap(),
        Ok(b) => b,
    };
    let mut times = vec![0.0; count];
    let mut samples = 0;
    for (i, at, n) in finished {
        times[i] = at;
        samples += n;
    }
    // In order: a sentence is out once it and every one before it are done.
    let first = times[0];
    let last = times.iter().cloned().fold(0.0, f64::max);

    // Load: both sessions busy with their own sentences.
    let started = Instant::now();
    let other = std::thread::spawn(move || {
        for _ in 0..LOAD_ROUNDS {
            b.synthesize(&input(SENTENCE)).unwrap();
        }
    });
    for _ in 0..LOAD_ROUNDS {
        a.synthesize(&input(SENTENCE)).unwrap();
    }
    other.join().unwrap();
    let busy = (2 * LOAD_ROUNDS) as f64 / started.elapsed().as_secs_f64();
    println!(
        "{{\"mode\": \"{mode}\", \"sentences\": {count}, \"first_s\": {first:.3}, \"last_s\": {last:.3}, \"audio_s\": {:.2}, \"busy_sentences_per_s\": {busy:.3}}}",
        samples as f64 / 24_000.0
    );
}
