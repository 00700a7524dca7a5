//! The recogniser on real models (fetched into `VOICED_MODELS_DIR` on first use).

use crate::asr::{beckett, espeak, recognizer, wer};
use voiced::domain::{RecognitionOptions, Task, Timestamps};
use voiced::engines::whisper::{AsrError, Transcript};
use voiced::models::whisper::WhisperModel::{Base, TinyEn};

const BECKETT: &str = "Ever tried. Ever failed. No matter. Try again. Fail again. Fail better.";
const PARAGRAPH: &str = "The weather was cold and windy this morning, so we stayed inside \
    and read the newspaper. In the afternoon the sun came out, and we walked to the market \
    to buy bread, apples and fresh fish for dinner.";
const THIRD_PART: &str = "After dinner we listened to music on the radio and talked about \
    our plans for the summer holidays by the sea.";
const SECOND_HALF: &str = "Please send the quarterly report to the finance team before \
    Friday, and remember to include the figures for the new office in Berlin.";

#[test]
fn human_speech_is_transcribed_by_both_models() {
    let audio = beckett();
    for model in [Base, TinyEn] {
        let transcript = recognizer(model).transcribe(&audio).unwrap();
        let error = wer(BECKETT, &transcript.text);
        eprintln!("{model:?}: {:?} WER {error:.3}", transcript.text);
        assert!(error <= 0.1, "{model:?}: {:?}", transcript.text);
        assert_eq!(transcript.language, "en");
    }
}

#[test]
fn synthetic_english_paragraph() {
    let audio = espeak("en-us", PARAGRAPH);
    for model in [Base, TinyEn] {
        let transcript = recognizer(model).transcribe(&audio).unwrap();
        let error = wer(PARAGRAPH, &transcript.text);
        eprintln!("{model:?}: {:?} WER {error:.3}", transcript.text);
        assert!(error <= 0.15, "{model:?}: {:?}", transcript.text);
    }
}

#[test]
fn german_is_detected_by_base() {
    let audio = espeak(
        "de",
        "Guten Morgen, heute ist das Wetter schön und wir gehen in den Park.",
    );
    let transcript = recognizer(Base).transcribe(&audio).unwrap();
    eprintln!("{transcript:?}");
    assert_eq!(transcript.language, "de");
    assert!(transcript.language_probability > 0.5);
    assert!(
        transcript.text.to_lowercase().contains("morgen"),
        "{transcript:?}"
    );
}

#[test]
fn silence_gives_empty_text() {
    let silence = vec![0.0f32; 16_000 * 5];
    // Faint noise (about -50 dBFS): above the digital-silence gate, so the model decides.
    let mut state = 12345u32;
    let hiss: Vec<f32> = (0..16_000 * 5)
        .map(|_| {
            state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (f64::from(state) / f64::from(u32::MAX) - 0.5) as f32 * 0.006
        })
        .collect();
    for model in [Base, TinyEn] {
        for (name, audio) in [("silence", &silence), ("hiss", &hiss)] {
            let transcript = recognizer(model).transcribe(audio).unwrap();
            assert_eq!(transcript.text, "", "{model:?} on {name}");
        }
    }
}

#[test]
fn audio_longer_than_one_window_is_transcribed_whole() {
    let mut audio = espeak("en-us", PARAGRAPH);
    audio.extend(std::iter::repeat_n(0.0, 16_000));
    audio.extend(espeak("en-us", SECOND_HALF));
    audio.extend(std::iter::repeat_n(0.0, 16_000));
    audio.extend(espeak("en-us", THIRD_PART));
    audio.extend(beckett());
    assert!(audio.len() > 16_000 * 36, "{} s", audio.len() / 16_000);
    let reference = format!("{PARAGRAPH} {SECOND_HALF} {THIRD_PART} {BECKETT}");
    for model in [Base, TinyEn] {
        let transcript = recognizer(model).transcribe(&audio).unwrap();
        let error = wer(&reference, &transcript.text);
        eprintln!("{model:?}: {:?} WER {error:.3}", transcript.text);
        assert!(error <= 0.15, "{model:?}: {:?}", transcript.text);
        let text = transcript.text.to_lowercase();
        assert!(
            text.contains("weather") && text.contains("fail better"),
            "{text}"
        );
    }
}

#[test]
fn warm_up_succeeds_and_english_only_model_reports_english() {
    let tiny = recognizer(TinyEn);
    tiny.warm_up().unwrap();
    assert!(!tiny.is_multilingual());
    let transcript = tiny.transcribe(&beckett()).unwrap();
    assert_eq!(
        (
            transcript.language.as_str(),
            transcript.language_probability
        ),
        ("en", 1.0)
    );
}

#[test]
fn recognizer_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<voiced::engines::whisper::Recognizer>();
}

fn with_timestamps(timestamps: Timestamps) -> RecognitionOptions {
    RecognitionOptions {
        timestamps,
        ..RecognitionOptions::default()
    }
}

/// Segments in order inside the clip; words in order, each inside (overlapping) a segment;
/// the words' text is the segments' text, which is the transcript.
fn check_timings(transcript: &Transcript, label: &str) {
    assert!(!transcript.segments.is_empty(), "{label}: no segments");
    let mut previous_end = 0.0;
    for s in &transcript.segments {
        assert!(s.start <= s.end, "{label}: {s:?}");
        assert!(
            s.start >= previous_end - 0.011,
            "{label}: {s:?} before {previous_end}"
        );
        assert!(s.end <= transcript.duration + 0.02, "{label}: {s:?}");
        previous_end = s.end;
    }
    let joined: String = transcript
        .segments
        .iter()
        .map(|s| s.text.as_str())
        .collect();
    assert_eq!(joined.trim(), transcript.text, "{label}");
    let words: String = transcript.words.iter().map(|w| w.word.as_str()).collect();
    assert_eq!(words.trim(), transcript.text, "{label}");
    let mut previous_start = 0.0;
    for w in &transcript.words {
        assert!(w.start <= w.end, "{label}: {w:?}");
        assert!(
            w.start >= previous_start,
            "{label}: {w:?} before {previous_start}"
        );
        assert!((0.0..=1.0).contains(&w.probability), "{label}: {w:?}");
        assert!(
            transcript
                .segments
                .iter()
                .any(|s| w.end >= s.start && w.start <= s.end),
            "{label}: {w:?} outside every segment"
        );
        previous_start = w.start;
    }
}

#[test]
fn word_timestamps_are_ordered_inside_segments_and_spell_the_text() {
    let mut long = espeak("en-us", PARAGRAPH);
    long.extend(std::iter::repeat_n(0.0, 16_000));
    long.extend(espeak("en-us", SECOND_HALF));
    long.extend(beckett());
    for model in [Base, TinyEn] {
        for (name, audio) in [("beckett", beckett()), ("long", long.clone())] {
            let label = format!("{model:?} {name}");
            let plain = recognizer(model).transcribe(&audio).unwrap();
            let mut streamed = Vec::new();
            let timed = recognizer(model)
                .recognize(&audio, &with_timestamps(Timestamps::Word), &mut |s, w| {
                    streamed.push((s.clone(), w.len()));
                })
                .unwrap();
            eprintln!(
                "{label}: {} segments, {} words",
                timed.segments.len(),
                timed.words.len()
            );
            assert_eq!(
                timed.text, plain.text,
                "{label}: word timing changes no text"
            );
            assert!(timed.words.len() >= 10, "{label}: {:?}", timed.words);
            check_timings(&timed, &label);
            assert_eq!(
                streamed.iter().map(|(s, _)| s.clone()).collect::<Vec<_>>(),
                timed.segments,
                "{label}: every segment is handed on as decoded"
            );
            assert_eq!(
                streamed.iter().map(|(_, n)| n).sum::<usize>(),
                timed.words.len()
            );
            // Segment timestamps alone: the same text and no words.
            let segments = recognizer(model)
                .recognize(
                    &audio,
                    &with_timestamps(Timestamps::Segment),
                    &mut |_, _| {},
                )
                .unwrap();
            assert_eq!(segments.text, plain.text);
            assert!(segments.words.is_empty());
            check_timings_without_words(&segments, &label);
        }
    }
}

fn check_timings_without_words(transcript: &Transcript, label: &str) {
    let joined: String = transcript
        .segments
        .iter()
        .map(|s| s.text.as_str())
        .collect();
    assert_eq!(joined.trim(), transcript.text, "{label}");
    assert!(
        transcript
            .segments
            .windows(2)
            .all(|p| p[0].end <= p[1].start + 0.011)
    );
}

#[test]
fn beckett_words_land_where_they_are_spoken() {
    // "Ever tried. Ever failed. No matter. Try again. Fail again. Fail better." is read with
    // pauses: the last word ends near the clip's end and the first starts near its start.
    let audio = beckett();
    let duration = audio.len() as f64 / 16_000.0;
    let timed = recognizer(Base)
        .recognize(&audio, &with_timestamps(Timestamps::Word), &mut |_, _| {})
        .unwrap();
    let first = timed.words.first().unwrap();
    let last = timed.words.last().unwrap();
    eprintln!("{duration} s: {:?}", timed.words);
    assert!(first.start < 1.5, "{first:?}");
    assert!(
        last.end > duration - 2.0 && last.end <= duration + 0.02,
        "{last:?}"
    );
    assert!(last.word.to_lowercase().contains("better"), "{last:?}");
}

#[test]
fn translation_prompt_and_refusals() {
    let german = espeak(
        "de",
        "Guten Morgen, heute ist das Wetter schön und wir gehen in den Park.",
    );
    let translate = RecognitionOptions {
        task: Task::Translate,
        ..RecognitionOptions::default()
    };
    let english = recognizer(Base)
        .recognize(&german, &translate, &mut |_, _| {})
        .unwrap();
    eprintln!("{english:?}");
    assert_eq!(english.language, "de", "the spoken language is reported");
    let text = english.text.to_lowercase();
    assert!(
        text.contains("morning") || text.contains("weather") || text.contains("park"),
        "{text}"
    );
    assert!(!text.contains("wetter"), "{text}");

    // An initial prompt primes the spelling of a name.
    let audio = espeak("en-us", "Please call Kaitlyn Smyth about the report.");
    let primed = RecognitionOptions {
        prompt: Some("Kaitlyn Smyth".into()),
        ..RecognitionOptions::default()
    };
    let text = recognizer(Base)
        .recognize(&audio, &primed, &mut |_, _| {})
        .unwrap()
        .text;
    eprintln!("primed: {text}");
    assert!(text.contains("Smyth"), "{text}");

    // An English-only model neither translates nor recognises German.
    let refused = recognizer(TinyEn).recognize(&german, &translate, &mut |_, _| {});
    assert!(
        matches!(refused, Err(AsrError::Refused { param: "model", .. })),
        "{refused:?}"
    );
    let german_forced = RecognitionOptions {
        language: Some("de".into()),
        ..RecognitionOptions::default()
    };
    let refused = recognizer(TinyEn).recognize(&german, &german_forced, &mut |_, _| {});
    assert!(matches!(
        refused,
        Err(AsrError::Refused {
            param: "language",
            ..
        })
    ));
}
