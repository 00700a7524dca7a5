//! Transcribes 16 kHz mono 16-bit wav files and prints one JSON line per file with timings
//! (used by `bench/whisper_rtf.py`; also handy by hand).
//!
//! `cargo run --release --example transcribe -- <model_dir> <threads> <clip.wav>...`
//!
//! `VOICED_TIMESTAMPS=segment` or `word` asks for timings too (used by
//! `bench/word_timestamps.py`); each line then carries `segments` and `words`.

use std::time::Instant;

use voiced::domain::{RecognitionOptions, Timestamps};
use voiced::engines::whisper::{ComputeType, Recognizer, WhisperConfig, refine};

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [model_dir, threads, clips @ ..] = args.as_slice() else {
        eprintln!("usage: transcribe <model_dir> <threads> <clip.wav>...");
        std::process::exit(2);
    };
    let started = Instant::now();
    let recognizer = Recognizer::load(&WhisperConfig {
        model_dir: model_dir.into(),
        threads: threads.parse().expect("threads"),
        compute_type: ComputeType::Int8,
    })
    .expect("load");
    let load_s = started.elapsed().as_secs_f64();
    let started = Instant::now();
    recognizer.warm_up().expect("warm up");
    let warm_up_s = started.elapsed().as_secs_f64();
    println!("{{\"event\":\"load\",\"load_s\":{load_s:.3},\"warm_up_s\":{warm_up_s:.3}}}");
    let timestamps = std::env::var("VOICED_TIMESTAMPS")
        .ok()
        .and_then(|v| Timestamps::parse(&v))
        .unwrap_or_default();
    let options = RecognitionOptions {
        timestamps,
        ..RecognitionOptions::default()
    };
    for clip in clips {
        let mut reader = hound::WavReader::open(clip).expect("open wav");
        assert_eq!(reader.spec().sample_rate, 16_000, "{clip}: 16 kHz expected");
        let samples: Vec<f32> = reader
            .samples::<i16>()
            .map(|s| f32::from(s.expect("sample")) / 32768.0)
            .collect();
        let audio_s = samples.len() as f64 / 16_000.0;
        let started = Instant::now();
        let transcript = recognizer
            .recognize(&samples, &options, &mut |_, _| {})
            .expect("transcribe");
        let elapsed = started.elapsed().as_secs_f64();
        let timings = if timestamps == Timestamps::None {
            String::new()
        } else {
            format!(
                ",\"segments\":{},\"words\":{}",
                serde_json::to_string(&transcript.segments).expect("json"),
                serde_json::to_string(&transcript.words).expect("json")
            )
        };
        println!(
            "{{\"event\":\"clip\",\"clip\":{clip:?},\"audio_s\":{audio_s:.3},\"elapsed_s\":{elapsed:.3},\"language\":{:?},\"language_probability\":{:.3},\"text\":{:?},\"refined\":{:?}{timings}}}",
            transcript.language,
            transcript.language_probability,
            transcript.text,
            refine(&transcript.text)
        );
    }
    println!(
        "{{\"event\":\"done\",\"peak_rss_mib\":{:.1}}}",
        peak_rss_kib() as f64 / 1024.0
    );
}
