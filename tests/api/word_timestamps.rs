//! Word timestamps of generated speech (issue 26 item 2): `timestamps: "word"` on
//! `POST /v1/speech` and the agent's `speak`, the generation's `words` (from Kokoro's own
//! predicted durations) with the characters of the text each reads, captions, and their accuracy
//! against Whisper's independent word alignment of the same audio (figure in
//! docs/benchmarks.md, "Word timestamps of generated speech"; printed with `--nocapture`).

use crate::common::client::mcp_call;
use crate::common::{TestApp, json};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};
use voiced::domain::EngineId;

const TEXT: &str = "The quick brown fox jumps over the lazy dog. It costs $3.50 today, \
                    and the meeting starts at 07:15 in room 12.";

fn key(word: &str) -> String {
    word.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

#[tokio::test]
async fn generated_words_carry_their_times_and_sources_and_agree_with_whisper() {
    let app = TestApp::start_with_workers(1).await;
    let (account, secret) = app.pro_user().await;
    app.voice(&account, "heart", EngineId::Kokoro, "af_heart")
        .await;

    // Only `word` and `none` are timestamps of speech.
    let (status, problem) = app
        .speak(
            &secret,
            json!({"text": TEXT, "voice_name": "heart", "timestamps": "segment"}),
        )
        .await;
    assert_eq!(status, 400, "{problem}");
    assert_eq!(problem["param"], "timestamps");

    let (generation, audio) = app
        .completed_audio(
            &secret,
            json!({"text": TEXT, "voice_name": "heart", "seed": 7, "response_format": "wav",
                   "timestamps": "word"}),
        )
        .await;
    let words = generation["words"].as_array().expect("words").clone();
    let said: Vec<&str> = words.iter().map(|w| w["text"].as_str().unwrap()).collect();
    println!("words: {said:?}");
    assert_eq!(
        &said[..9],
        [
            "The", "quick", "brown", "fox", "jumps", "over", "the", "lazy", "dog"
        ]
    );
    let duration = generation["duration_ms"].as_f64().unwrap() / 1000.0;
    let chars: Vec<char> = TEXT.chars().collect();
    let source = |w: &Value| -> String {
        chars[w["source_start"].as_u64().unwrap() as usize
            ..w["source_end"].as_u64().unwrap() as usize]
            .iter()
            .collect()
    };
    let mut previous_end = 0.0;
    for w in &words {
        let (start, end) = (w["start"].as_f64().unwrap(), w["end"].as_f64().unwrap());
        assert!(start < end && end <= duration + 0.001, "{w}");
        assert!(start >= previous_end - 0.001, "words do not overlap: {w}");
        previous_end = end;
        let text = w["text"].as_str().unwrap();
        let read = source(w);
        // A word read as written points at itself; a written-out one at what it reads.
        if ![
            "three", "dollars", "fifty", "seven", "fifteen", "twelve", "o",
        ]
        .contains(&key(text).as_str())
        {
            assert_eq!(key(&read), key(text), "{w} reads {read:?}");
        }
    }
    let dollars = words
        .iter()
        .find(|w| w["text"] == "dollars")
        .expect("dollars");
    assert_eq!(source(dollars), "$3.50");

    // Whisper's own word alignment of the same audio: the start of each word both heard.
    let (status, heard) = json(
        app.post("/v1/transcriptions")
            .bearer_auth(&secret)
            .json(&json!({"audio": STANDARD.encode(&audio), "timestamps": "word"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{heard}");
    // Whisper's words are contiguous: a word after a silence starts where the one before it
    // ended, so its start says nothing about when the word is said. Starts are compared where
    // ours follow the word before without a pause (over 100 ms); every matched word is printed.
    let (mut deltas, mut all) = (Vec::new(), Vec::new());
    let mut next = 0;
    for h in heard["words"].as_array().unwrap() {
        let k = key(h["word"].as_str().unwrap());
        if let Some(i) = (next..words.len().min(next + 4))
            .find(|&i| key(words[i]["text"].as_str().unwrap()) == k)
        {
            let ours = words[i]["start"].as_f64().unwrap();
            let delta = (ours - h["start"].as_f64().unwrap()).abs();
            let paused = i == 0 || ours - words[i - 1]["end"].as_f64().unwrap() > 0.1;
            println!(
                "{k:>10} ours {ours:.3}-{:.3} whisper {:.3}-{:.3}{}",
                words[i]["end"].as_f64().unwrap(),
                h["start"].as_f64().unwrap(),
                h["end"].as_f64().unwrap(),
                if paused { " (after a pause)" } else { "" }
            );
            all.push(delta);
            if !paused {
                deltas.push(delta);
            }
            next = i + 1;
        }
    }
    let median = |d: &mut Vec<f64>| {
        d.sort_by(f64::total_cmp);
        d[d.len() / 2]
    };
    let (joined, every) = (median(&mut deltas), median(&mut all));
    println!(
        "word starts vs Whisper: {} of {} words matched; median |Δ| {:.0} ms over the {} not after a pause, {:.0} ms over all",
        all.len(),
        words.len(),
        joined * 1000.0,
        deltas.len(),
        every * 1000.0
    );
    assert!(
        all.len() * 10 >= words.len() * 7,
        "most words are heard: {heard}"
    );
    assert!(deltas.len() >= 10, "{deltas:?}");
    assert!(joined <= 0.060, "median |Δ| {joined:.3} s");

    // Captions from the words; a generation without timestamps has none.
    let id = generation["id"].as_str().unwrap();
    let response = app
        .get(&format!("/v1/generations/{id}/captions?format=srt"))
        .bearer_auth(&secret)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"],
        "application/x-subrip; charset=utf-8"
    );
    let srt = response.text().await.unwrap();
    assert!(srt.starts_with("1\n00:00:0"), "{srt}");
    assert!(srt.contains("The quick brown fox"), "{srt}");
    let (plain, _) = app
        .completed_audio(
            &secret,
            json!({"text": "Hello there.", "voice_name": "heart"}),
        )
        .await;
    assert!(plain.get("words").is_none(), "{plain}");
    let (status, problem) = json(
        app.get(&format!(
            "/v1/generations/{}/captions",
            plain["id"].as_str().unwrap()
        ))
        .bearer_auth(&secret)
        .send()
        .await
        .unwrap(),
    )
    .await;
    assert_eq!(status, 409, "{problem}");
    assert_eq!(problem["code"], "timestamps_unavailable");

    // The agent's speak takes the same argument and answers the words.
    let client = app.mcp_client(&secret).await;
    let result = mcp_call(
        &client,
        "speak",
        json!({"text": "Good morning, Ada.", "voice": "heart", "timestamps": "word", "wait_seconds": 120}),
    )
    .await;
    assert_ne!(result.is_error, Some(true), "{result:?}");
    let spoken = result.structured_content.expect("structured content");
    let words: Vec<&str> = spoken["words"]
        .as_array()
        .unwrap_or_else(|| panic!("{spoken}"))
        .iter()
        .map(|w| w["text"].as_str().unwrap())
        .collect();
    assert_eq!(words, ["Good", "morning", "Ada"]);
    client.cancel().await.unwrap();
    app.stop().await;
}
