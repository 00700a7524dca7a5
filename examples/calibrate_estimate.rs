//! `cargo run --release --example calibrate_estimate`: speaks the estimate's corpus
//! (`tests/corpus`: plain prose and texts that speak long) with Kokoro and fits
//! `ms − 250 × (sentences − 1) = a + b × phonemes` by least squares over the texts, the figures
//! behind `engines::kokoro::estimate` (docs/api.md, "Admission"; docs/benchmarks.md, "Admission
//! estimate"). Prints each text's spoken / estimated ratio with the constants in force.

#[path = "../tests/corpus/mod.rs"]
mod corpus;

use std::path::PathBuf;

use voiced::engines::kokoro::estimate::{self, SENTENCE_PAUSE_MS};
use voiced::engines::kokoro::{KokoroConfig, KokoroEngine};
use voiced::engines::{Engine, SynthesisInput};

const PRESETS: [&str; 2] = ["af_heart", "bm_george"];

fn main() {
    let dir = std::env::var_os("VOICED_MODELS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/voiced/models")
        });
    let mut engine = KokoroEngine::load(&KokoroConfig::from_models_dir(&dir)).unwrap();
    let mut points = Vec::new();
    for case in corpus::adversarial() {
        for preset in PRESETS {
            let reading = estimate::reading(&case.text, preset, "en").unwrap();
            let pcm = engine
                .synthesize(&SynthesisInput {
                    text: &case.text,
                    preset,
                    language: "en",
                    seed: 7,
                    temperature: None,
                    cancel: None,
                    voice_print: None,
                    instruction: None,
                })
                .unwrap();
            let ms = pcm.duration_ms();
            let estimate = estimate::estimated_ms(reading);
            println!(
                "{:40} {preset:10} phonemes {:5} sentences {:3} spoken {ms:7} ms  estimate {estimate:7} ms  ratio {:.2}",
                case.category,
                reading.phonemes,
                reading.sentences,
                ms as f64 / estimate as f64
            );
            let pauses = reading.sentences.saturating_sub(1) as i64 * SENTENCE_PAUSE_MS;
            points.push((reading.phonemes as f64, (ms - pauses) as f64));
        }
    }
    let n = points.len() as f64;
    let (sx, sy) = points
        .iter()
        .fold((0.0, 0.0), |(a, b), (x, y)| (a + x, b + y));
    let (mx, my) = (sx / n, sy / n);
    let slope = points.iter().map(|(x, y)| (x - mx) * (y - my)).sum::<f64>()
        / points.iter().map(|(x, _)| (x - mx).powi(2)).sum::<f64>();
    println!(
        "fit: ms = {:.0} + {:.1} × phonemes (+ {SENTENCE_PAUSE_MS} per sentence pause)",
        my - slope * mx,
        slope
    );
    let worst = points.iter().map(|(x, y)| y / x).fold(0.0f64, f64::max);
    println!("largest ms per phoneme of one text: {worst:.1}");
}
