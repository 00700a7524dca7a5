//! Round trip through the real API: Kokoro speaks sentences in each language voiced transcribes
//! well, with two voices of the language where Kokoro has two (French has one), and Whisper base
//! transcribes them back through `POST /v1/transcriptions`. The word error rate per language
//! (case and punctuation normalised) must stay under the bound: English 0.10, the others 0.25.
//! English texts carry a number, a price, a date and an abbreviation; the reference and what
//! Whisper wrote are both put through voiced's English normalisation before counting, so
//! "$3.50" heard back as "$3.50" (or "Dr Smith" as "Dr Smith") matches, and a price read wrongly ("dollar three point five
//! zero") does not.
//! Measured figures: docs/benchmarks.md, "Voice round trip". Run alone with
//! `cargo test --test api roundtrip:: -- --nocapture` to print them.

use std::time::Duration;

use crate::common::{TestApp, json};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

struct Language {
    name: &'static str,
    presets: &'static [&'static str],
    bound: f64,
    text: &'static str,
}

const LANGUAGES: &[Language] = &[
    Language {
        name: "English (US)",
        presets: &["af_heart", "am_michael"],
        bound: 0.10,
        text: "The weather is lovely today, so we are going for a walk in the park. \
               Please remember to buy bread and milk on your way home. \
               Dr. Smith paid $3.50 for a coffee on March 3, 2026.",
    },
    Language {
        name: "English (GB)",
        presets: &["bf_emma", "bm_george"],
        bound: 0.10,
        text: "The weather is lovely today, so we are going for a walk in the park. \
               Please remember to buy bread and milk on your way home. \
               Dr. Smith paid $3.50 for a coffee on March 3, 2026.",
    },
    Language {
        name: "Spanish",
        presets: &["ef_dora", "em_alex"],
        bound: 0.25,
        text: "Hoy hace muy buen tiempo, así que vamos a pasear por el parque. \
               Por favor, compra pan y leche cuando vuelvas a casa.",
    },
    Language {
        name: "French",
        presets: &["ff_siwis"],
        bound: 0.25,
        text: "Il fait très beau aujourd'hui, alors nous allons nous promener dans le parc. \
               N'oublie pas d'acheter du pain et du lait en rentrant.",
    },
    Language {
        name: "Italian",
        presets: &["if_sara", "im_nicola"],
        bound: 0.25,
        text: "Oggi il tempo è molto bello, quindi andiamo a fare una passeggiata nel parco. \
               Per favore, compra il pane e il latte quando torni a casa.",
    },
    Language {
        name: "Portuguese (BR)",
        presets: &["pf_dora", "pm_alex"],
        bound: 0.25,
        text: "O tempo está muito bonito hoje, então vamos passear no parque. \
               Por favor, compre pão e leite quando voltar para casa.",
    },
];

/// Lowercase words of letters and digits; punctuation and apostrophes separate words.
fn words(text: &str) -> Vec<String> {
    text.chars()
        .map(|c| {
            if c.is_alphanumeric() {
                c.to_lowercase().next().unwrap_or(c)
            } else {
                ' '
            }
        })
        .collect::<String>()
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

/// Word-level edit distance.
fn edits(reference: &[String], heard: &[String]) -> usize {
    let mut previous: Vec<usize> = (0..=heard.len()).collect();
    for (i, r) in reference.iter().enumerate() {
        let mut row = vec![i + 1];
        for (j, h) in heard.iter().enumerate() {
            let substitution = previous[j] + usize::from(r != h);
            row.push(substitution.min(previous[j + 1] + 1).min(row[j] + 1));
        }
        previous = row;
    }
    previous[heard.len()]
}

#[test]
fn word_error_rate_is_counted_in_words() {
    let reference = words("The cat, sat on the mat.");
    assert_eq!(edits(&reference, &words("the cat sat on the mat")), 0);
    assert_eq!(edits(&reference, &words("a cat sat on mat")), 2);
    assert_eq!(edits(&reference, &words("the cat sat on the hat too")), 2);
    assert_eq!(
        words("N'oublie PAS, l'été!"),
        ["n", "oublie", "pas", "l", "été"]
    );
}

async fn speak_and_hear(app: &TestApp, secret: &str, voice: &str, text: &str) -> String {
    let (status, accepted) = json(
        app.post("/v1/speech")
            .bearer_auth(secret)
            .json(&json!({"text": text, "voice_name": voice, "seed": 7, "response_format": "wav"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 202, "{accepted}");
    let id = accepted["id"].as_str().unwrap();
    tokio::time::timeout(
        Duration::from_secs(300),
        app.completion(id, Duration::from_secs(5)),
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
    let path = &url[url.find("/v1/audio/").unwrap()..];
    let audio = app.get(path).send().await.unwrap().bytes().await.unwrap();
    let (status, capture): (u16, Value) = json(
        app.post("/v1/transcriptions")
            .bearer_auth(secret)
            .json(&json!({"audio": STANDARD.encode(&audio)}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{capture}");
    capture["text"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn each_language_comes_back_from_whisper() {
    let app = TestApp::start_with_workers(1).await;
    let (_, secret) = app.pro_user().await;
    let mut failures = Vec::new();
    for language in LANGUAGES {
        let english = language.name.starts_with("English");
        let dialect = if language.name.contains("GB") {
            "en-gb"
        } else {
            "en-us"
        };
        let said = |text: &str| {
            if english {
                words(&voiced::engines::text::normalize::for_voice(text, dialect))
            } else {
                words(text)
            }
        };
        let reference = said(language.text);
        let (mut errors, mut total) = (0, 0);
        for preset in language.presets {
            let (status, voice) = json(
                app.post("/v1/voices")
                    .bearer_auth(&secret)
                    .json(&json!({"name": preset, "engine": "kokoro", "preset": preset}))
                    .send()
                    .await
                    .unwrap(),
            )
            .await;
            assert_eq!(status, 201, "{voice}");
            let heard = speak_and_hear(&app, &secret, preset, language.text).await;
            let e = edits(&reference, &said(&heard));
            println!(
                "{} {preset}: WER {:.3} ({e}/{}) heard {heard:?}",
                language.name,
                e as f64 / reference.len() as f64,
                reference.len()
            );
            errors += e;
            total += reference.len();
        }
        let wer = errors as f64 / total as f64;
        println!("{}: WER {wer:.3} (bound {})", language.name, language.bound);
        if wer > language.bound {
            failures.push(format!(
                "{}: WER {wer:.3} > {}",
                language.name, language.bound
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    app.stop().await;
}

/// One English sentence per normalisation category (docs/speech-text.md).
const CATEGORIES: &[(&str, &str)] = &[
    (
        "numbers",
        "Your order number is 0042, and the code is 1234567890.",
    ),
    ("decimals", "Pi is about 3.14, and the dose is 0.5 grams."),
    ("fractions", "Add 1/2 cup of sugar and 3/4 cup of flour."),
    ("ratios and scores", "The screen is 16:9, and we won 3-2."),
    ("times", "The train leaves at 07:15 and arrives at 3:45 pm."),
    (
        "dates",
        "She was born on 2026-11-23, and they met on July 4, 1999.",
    ),
    ("years and amounts", "In 1984 they sold 2026 units."),
    ("phone numbers", "Call +1 (555) 123-4567 today."),
    ("digit groups", "The card number is 4111 1111 1111 1111."),
    ("currency", "They raised $1.5M and spent €20 on lunch."),
    ("percentages", "Sales grew 25% this year."),
    ("units", "The box weighs 5 kg and is 30 cm wide."),
    ("ordinals", "She finished 21st in the 100th race."),
    (
        "roman numerals",
        "Chapter IV is about Henry VIII and World War II.",
    ),
    (
        "addresses",
        "Visit https://example.com/docs or write to jane@example.com.",
    ),
    ("symbols", "I write C# and C++ at AT&T."),
    ("initialisms", "The FBI uses HTML and SQL."),
];

/// Per category: Kokoro (af_heart) speaks the sentence, Whisper base transcribes it, and the word
/// error rate is counted between what voiced meant to say (the normalised sentence) and what
/// Whisper wrote, normalised the same way (Whisper writes "$1.5 million", "7:15"). A category
/// whose reading went wrong (a number read as another) shows as a high rate. Figures:
/// docs/benchmarks.md, "Normalisation round trip".
#[tokio::test]
async fn each_normalisation_category_comes_back_from_whisper() {
    let app = TestApp::start_with_workers(1).await;
    let (_, secret) = app.pro_user().await;
    let (status, voice) = json(
        app.post("/v1/voices")
            .bearer_auth(&secret)
            .json(&json!({"name": "af_heart", "engine": "kokoro", "preset": "af_heart"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 201, "{voice}");
    let said = |text: &str| words(&voiced::engines::text::normalize::english(text));
    let (mut errors, mut total) = (0, 0);
    let mut worst = (0.0, "");
    for (category, text) in CATEGORIES {
        let reference = said(text);
        let heard = speak_and_hear(&app, &secret, "af_heart", text).await;
        let e = edits(&reference, &said(&heard));
        let wer = e as f64 / reference.len() as f64;
        println!(
            "{category}: WER {wer:.3} ({e}/{}) heard {heard:?}",
            reference.len()
        );
        errors += e;
        total += reference.len();
        if wer > worst.0 {
            worst = (wer, category);
        }
    }
    let wer = errors as f64 / total as f64;
    println!("all categories: WER {wer:.3} ({errors}/{total})");
    assert!(wer <= 0.15, "WER {wer:.3} over every category");
    // Whisper's own formatting counts as errors here (it writes "7.15" for "seven fifteen" and
    // "4-1-1-1" for a card's digits); a category read as a different value (a capped number,
    // an amount for a phone number) is wrong in most of its words.
    assert!(worst.0 <= 0.6, "{}: WER {:.3}", worst.1, worst.0);
    app.stop().await;
}
