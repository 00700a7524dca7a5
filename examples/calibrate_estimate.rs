//! `cargo run --example calibrate_estimate`: measures Kokoro's audio duration per character on a
//! set of English texts and prints the least-squares line `ms = a + b·chars`, the figures behind
//! `EngineId::estimated_audio_ms` (docs/api.md, "Reservations").

use std::path::PathBuf;

use voiced::domain::EngineId;
use voiced::engines::kokoro::{KokoroConfig, KokoroEngine};
use voiced::engines::{Engine, SynthesisInput};

const TEXTS: &[&str] = &[
    "Hello.",
    "Hello from voiced.",
    "The quick brown fox jumps over the lazy dog.",
    "Speech generation is metered in seconds of audio, per calendar month.",
    "A paid API is shared by many accounts, and no account may hurt another one by what it sends.",
    "The meeting starts at nine. Please bring the report, the slides, and a list of open questions for the team.",
    "Once upon a time, in a small village by the sea, there lived an old fisherman who told stories every evening. \
     The children gathered around him, and the sun went down slowly behind the hills.",
    "Transcription takes a place in the recogniser's queue before the upload is decoded. When the queue is full, \
     the answer is a clear refusal with a time to retry, so that a burst of large uploads cannot exhaust the memory \
     of the server. Every accepted request is answered, and nothing accepted is ever lost.",
];

fn main() {
    let dir = std::env::var_os("VOICED_MODELS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/voiced/models")
        });
    let mut engine = KokoroEngine::load(&KokoroConfig::from_models_dir(&dir)).unwrap();
    let mut points = Vec::new();
    for text in TEXTS {
        for preset in ["jf_alpha", "jf_gongitsune"] {
            let pcm = engine
                .synthesize(&SynthesisInput {
                    text,
                    preset,
                    language: "en",
                    seed: 7,
                    temperature: None,
                    cancel: None,
                    voice_print: None,
                    instruction: None,
                })
                .unwrap();
            let chars = text.chars().count() as f64;
            let ms = pcm.duration_ms() as f64;
            let estimate = EngineId::Kokoro.estimated_audio_ms(text);
            println!("{preset:14} chars {chars:4} audio {ms:6} ms  estimate {estimate:6} ms");
            points.push((chars, ms));
        }
    }
    let n = points.len() as f64;
    let (sx, sy) = points
        .iter()
        .fold((0.0, 0.0), |(a, b), (x, y)| (a + x, b + y));
    let (mx, my) = (sx / n, sy / n);
    let slope = points.iter().map(|(x, y)| (x - mx) * (y - my)).sum::<f64>()
        / points.iter().map(|(x, _)| (x - mx).powi(2)).sum::<f64>();
    println!("fit: ms = {:.0} + {:.1} × chars", my - slope * mx, slope);
}
