//! The recogniser on real models (fetched into `VOICED_MODELS_DIR` on first use).

use crate::asr::{beckett, espeak, recognizer, wer};
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
