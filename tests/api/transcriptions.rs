//! `POST /v1/transcriptions` with the real Whisper base model: real human speech, formats,
//! language detection, silence, idempotency, admission control, and every refusal (none of
//! which stores a capture).

use crate::asr;

use std::path::Path;
use std::process::Command;

use crate::common::fixtures;
use crate::common::{TestApp, assert_problem, json};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD};
use serde_json::{Value, json};
use voiced::domain::{Feature, Plan, Scope};

const BECKETT: &str = "Ever tried. Ever failed. No matter. Try again. Fail again. Fail better.";

fn b64(path: &Path) -> String {
    STANDARD.encode(std::fs::read(path).unwrap())
}

/// Converts `input` with ffmpeg (codec args) into `name` in the scratch dir.
fn convert(input: &Path, name: &str, args: &[&str]) -> std::path::PathBuf {
    let out = asr::scratch_dir().join(name);
    let status = Command::new("ffmpeg")
        .args(["-v", "error", "-y", "-i"])
        .arg(input)
        .args(args)
        .arg(&out)
        .status()
        .expect("ffmpeg runs");
    assert!(status.success(), "ffmpeg {name}");
    out
}

async fn captures(app: &TestApp) -> usize {
    fixtures::captures(app).await.len()
}

#[tokio::test]
async fn human_speech_becomes_a_listed_capture() {
    let app = TestApp::start().await;
    let (_, secret) = app.pro_user().await;
    let wav = asr::beckett_wav();
    // A data URL prefix and missing padding are accepted.
    let audio = format!(
        "data:audio/wav;base64,{}",
        STANDARD_NO_PAD.encode(std::fs::read(&wav).unwrap())
    );
    let (status, result) = app.transcribe(&secret, &audio).await;
    assert_eq!(status, 200, "{result}");
    let text = result["text"].as_str().unwrap();
    let wer = asr::wer(BECKETT, text);
    assert!(wer <= 0.1, "WER {wer}: {text}");
    assert_eq!(result["language"], "en");
    let samples = asr::read_wav(&wav).len() as i64;
    let expected_ms = samples * 1000 / 16_000;
    assert!(
        (result["duration_ms"].as_i64().unwrap() - expected_ms).abs() <= 50,
        "{result}"
    );

    let (_, listed) = json(
        app.get("/v1/captures")
            .bearer_auth(&secret)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(listed["total"], 1);
    let capture = &listed["data"][0];
    assert_eq!(capture["id"], result["id"]);
    assert_eq!(capture["source"], "api");
    assert_eq!(capture["language"], "en");
    assert_eq!(capture["transcript_raw"], text);
    assert_eq!(capture["duration_ms"], result["duration_ms"]);
    let refined = capture["transcript_refined"].as_str().unwrap();
    assert!(
        asr::wer(text, refined) <= 0.1,
        "refined keeps the words: {refined}"
    );
    app.stop().await;
}

#[tokio::test]
async fn the_same_clip_in_every_format_gives_the_same_transcript() {
    let app = TestApp::start().await;
    let (_, secret) = app.pro_user().await;
    // Real human speech, in every container and codec the API takes.
    let wav = asr::beckett_wav();
    let files = [
        wav.clone(),
        convert(&wav, "clip.mp3", &["-c:a", "libmp3lame", "-b:a", "128k"]),
        convert(&wav, "clip.flac", &[]),
        convert(&wav, "clip-vorbis.ogg", &["-c:a", "libvorbis"]),
        convert(&wav, "clip-opus.ogg", &["-c:a", "libopus", "-b:a", "48k"]),
        convert(&wav, "clip.webm", &["-c:a", "libopus", "-b:a", "48k"]),
    ];
    let normal = |s: &str| -> String {
        s.to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || c.is_whitespace())
            .collect::<String>()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut transcripts = Vec::new();
    for file in &files {
        let (status, result) = app.transcribe(&secret, &b64(file)).await;
        assert_eq!(status, 200, "{file:?}: {result}");
        let text = result["text"].as_str().unwrap().to_owned();
        let wer = asr::wer(BECKETT, &text);
        assert!(wer <= 0.1, "{file:?}: WER {wer}: {text}");
        transcripts.push(normal(&text));
    }
    assert!(
        transcripts.iter().all(|t| *t == transcripts[0]),
        "{transcripts:#?}"
    );
    assert_eq!(captures(&app).await, files.len());
    app.stop().await;
}

#[tokio::test]
async fn english_paragraph_german_and_silence() {
    let app = TestApp::start().await;
    let (_, secret) = app.pro_user().await;
    let paragraph = "The weather was cold and windy this morning, so we stayed inside \
        and read the newspaper. In the afternoon the sun came out, and we walked to the market \
        to buy bread, apples and fresh fish for dinner.";
    let (status, result) = app
        .transcribe(&secret, &b64(&asr::espeak_wav("en-us", paragraph)))
        .await;
    assert_eq!(status, 200, "{result}");
    let wer = asr::wer(paragraph, result["text"].as_str().unwrap());
    assert!(wer <= 0.15, "WER {wer}: {result}");

    let german = "Guten Morgen, wie geht es Ihnen heute? Das Wetter ist schön.";
    let (status, result) = app
        .transcribe(&secret, &b64(&asr::espeak_wav("de", german)))
        .await;
    assert_eq!(status, 200, "{result}");
    assert_eq!(result["language"], "de", "{result}");

    let silence = asr::scratch_dir().join("silence.wav");
    let ok = Command::new("sox")
        .args(["-n", "-r", "16000", "-c", "1", "-b", "16"])
        .arg(&silence)
        .args(["trim", "0", "4"])
        .status()
        .unwrap()
        .success();
    assert!(ok);
    let (status, result) = app.transcribe(&secret, &b64(&silence)).await;
    assert_eq!(status, 200, "{result}");
    assert_eq!(result["text"], "", "{result}");
    assert_eq!(result["duration_ms"], 4000);
    assert_eq!(captures(&app).await, 3, "silence is stored too");
    app.stop().await;
}

#[tokio::test]
async fn idempotent_replay_creates_one_capture_and_transcription_is_never_metered() {
    let app = TestApp::start().await;
    let (_, secret) = app.pro_user().await;
    let audio = b64(&asr::espeak_wav("en-us", "Only once, please."));
    let send = || {
        app.post("/v1/transcriptions")
            .bearer_auth(&secret)
            .header("Idempotency-Key", "transcribe-1")
            .json(&json!({ "audio": audio }))
            .send()
    };
    let first = send().await.unwrap();
    assert_eq!(first.status(), 200);
    let first = first.bytes().await.unwrap();
    let again = send().await.unwrap();
    assert_eq!(again.status(), 200);
    assert_eq!(again.bytes().await.unwrap(), first, "byte for byte");
    assert_eq!(captures(&app).await, 1);
    let ledger = fixtures::ledger(&app).await.len();
    assert_eq!(ledger, 0);
    app.stop().await;
}

#[tokio::test]
async fn bad_audio_is_refused_and_stores_nothing() {
    let app = TestApp::start().await;
    let (_, secret) = app.pro_user().await;
    let wav = asr::espeak_wav("en-us", "A short clip to cut.");
    let mp3 = convert(&wav, "cut.mp3", &["-c:a", "libmp3lame", "-b:a", "64k"]);
    let truncated = STANDARD.encode(&std::fs::read(&mp3).unwrap()[..300]);
    let png = STANDARD.encode(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89\0\0\0\rIDATx\x9cc\xf8\x0f\0\0\x01\x01\0\x05\x18\xd8N\0\0\0\0IEND\xaeB`\x82");
    let random: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let random = STANDARD.encode(random);
    let cases: Vec<(Value, &str)> = vec![
        (json!({}), "audio"),
        (json!({ "audio": "" }), "audio"),
        (json!({ "audio": 5 }), "audio"),
        (json!({ "audio": ["x"] }), "audio"),
        (json!({ "audio": "@@not base64@@" }), "audio"),
        (json!({ "audio": random }), "audio"),
        (json!({ "audio": png }), "audio"),
        (json!({ "audio": truncated }), "audio"),
        (json!({ "audio": b64(&wav), "model": "whisper-1" }), "model"),
    ];
    for (body, param) in cases {
        let (status, problem) = json(
            app.post("/v1/transcriptions")
                .bearer_auth(&secret)
                .json(&body)
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(status, 400, "{problem}");
        assert_problem(&problem, 400, "invalid_request", "/v1/transcriptions");
        assert_eq!(problem["param"], param, "{problem}");
    }

    // Longer than 15 minutes (8 kHz 8-bit keeps the file small).
    let long = asr::scratch_dir().join("long.wav");
    let ok = Command::new("sox")
        .args([
            "-n",
            "-r",
            "8000",
            "-c",
            "1",
            "-b",
            "8",
            "-e",
            "unsigned-integer",
        ])
        .arg(&long)
        .args(["synth", "901", "sine", "300", "vol", "0.1"])
        .status()
        .unwrap()
        .success();
    assert!(ok);
    let (status, problem) = app.transcribe(&secret, &b64(&long)).await;
    assert_eq!(status, 400, "{problem}");
    assert_eq!(problem["param"], "audio");
    assert!(
        problem["detail"].as_str().unwrap().contains("15 minutes"),
        "{problem}"
    );

    // More than 25 MiB once decoded.
    let big = STANDARD.encode(vec![0u8; 25 * 1024 * 1024 + 3]);
    let (status, problem) = app.transcribe(&secret, &big).await;
    assert_eq!(status, 413, "{problem}");
    assert_problem(&problem, 413, "payload_too_large", "/v1/transcriptions");

    assert_eq!(captures(&app).await, 0);
    app.stop().await;
}

#[tokio::test]
async fn gates_and_a_full_recogniser_queue() {
    let app = TestApp::start().await;
    let account = app.account(Plan::Pro).await;
    let (_, reader) = app.key(&account, &[Scope::VoiceRead]).await;
    let (status, problem) = app.transcribe(&reader, "AAAA").await;
    assert_eq!(status, 403);
    assert_problem(&problem, 403, "insufficient_scope", "/v1/transcriptions");
    assert_eq!(problem["required_scope"], "voice:generate");

    let (_, secret) = app.key(&account, &Scope::ALL).await;
    fixtures::set_features(&app, &account, &[Feature::Speech]).await;
    let (status, problem) = app.transcribe(&secret, "AAAA").await;
    assert_eq!(status, 403);
    assert_eq!(problem["code"], "feature_not_enabled");
    fixtures::set_features(&app, &account, &Feature::ALL).await;

    // Every place in the recogniser's queue taken: refused with 503 and Retry-After, not queued.
    let mut places = Vec::new();
    while let Some(place) = app.asr.try_admit() {
        places.push(place);
    }
    let audio = b64(&asr::espeak_wav("en-us", "Is there room?"));
    let response = app
        .post("/v1/transcriptions")
        .bearer_auth(&secret)
        .json(&json!({ "audio": audio }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 503);
    assert!(response.headers().get("retry-after").is_some());
    let (_, problem) = json(response).await;
    assert_problem(&problem, 503, "service_unavailable", "/v1/transcriptions");
    drop(places);
    let (status, _) = app.transcribe(&secret, &audio).await;
    assert_eq!(status, 200);
    assert_eq!(captures(&app).await, 1);
    app.stop().await;
}

/// Timings from `POST /v1/transcriptions` with `timestamps`, kept by the capture, read back by
/// `GET /v1/captures/{id}` and turned into captions; every refusal of the new parameters.
#[tokio::test]
async fn timestamps_are_returned_stored_and_captioned() {
    let app = TestApp::start().await;
    let account = app.account(Plan::Pro).await;
    let (_, secret) = app.key(&account, &Scope::ALL).await;
    let (_, reader) = app.key(&account, &[Scope::VoiceRead]).await;
    let audio = b64(&asr::beckett_wav());
    let (status, result) = app
        .post_json(
            "/v1/transcriptions",
            &secret,
            &json!({ "audio": audio, "timestamps": "word" }),
        )
        .await;
    assert_eq!(status, 200, "{result}");
    let text = result["text"].as_str().unwrap();
    let segments = result["segments"].as_array().unwrap();
    let words = result["words"].as_array().unwrap();
    assert!(!segments.is_empty() && words.len() >= 10, "{result}");
    let joined: String = words.iter().map(|w| w["word"].as_str().unwrap()).collect();
    assert_eq!(joined.trim(), text);
    let mut previous = 0.0;
    for w in words {
        let (start, end) = (w["start"].as_f64().unwrap(), w["end"].as_f64().unwrap());
        assert!(previous <= start && start <= end, "{w}");
        previous = start;
    }
    assert!(
        previous < 10.5,
        "words end inside the 10 s clip: {previous}"
    );

    // The capture keeps them; a voice:read key reads it.
    let id = result["id"].as_str().unwrap();
    let (status, capture) = json(
        app.get(&format!("/v1/captures/{id}"))
            .bearer_auth(&reader)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{capture}");
    assert_eq!(capture["transcript_raw"], text);
    assert_eq!(
        (&capture["task"], &capture["timestamps"], &capture["source"]),
        (&json!("transcribe"), &json!("word"), &json!("api"))
    );
    assert_eq!(capture["segments"], result["segments"]);
    assert_eq!(capture["words"], result["words"]);

    // Captions, one cue a segment.
    for (format, content_type, first_line, separator) in [
        ("srt", "application/x-subrip", "1", ","),
        ("vtt", "text/vtt", "WEBVTT", "."),
    ] {
        let response = app
            .get(&format!("/v1/captures/{id}/captions?format={format}"))
            .bearer_auth(&reader)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let header = response.headers()["content-type"]
            .to_str()
            .unwrap()
            .to_owned();
        assert!(header.starts_with(content_type), "{header}");
        let body = response.text().await.unwrap();
        assert_eq!(body.lines().next(), Some(first_line), "{body}");
        let cues: Vec<&str> = body.lines().filter(|l| l.contains(" --> ")).collect();
        assert_eq!(cues.len(), segments.len(), "{body}");
        let first_end = format!("00:00:0{}", separator);
        assert!(
            cues[0].starts_with(&first_end) || cues[0].starts_with("00:00:"),
            "{body}"
        );
        assert!(body.contains("better"), "{body}");
    }
    // WebVTT when no format is named.
    let response = app
        .get(&format!("/v1/captures/{id}/captions"))
        .bearer_auth(&reader)
        .send()
        .await
        .unwrap();
    assert!(response.text().await.unwrap().starts_with("WEBVTT\n"));

    // Segment timestamps alone: segments, no words.
    let (status, plain_segments) = app
        .post_json(
            "/v1/transcriptions",
            &secret,
            &json!({ "audio": audio, "timestamps": "segment" }),
        )
        .await;
    assert_eq!(status, 200, "{plain_segments}");
    assert!(
        plain_segments["segments"]
            .as_array()
            .is_some_and(|s| !s.is_empty())
    );
    assert!(plain_segments.get("words").is_none(), "{plain_segments}");

    // Without timestamps: no timings in the answer, and captions are refused with 409.
    let (status, untimed) = app.transcribe(&secret, &audio).await;
    assert_eq!(status, 200);
    assert!(untimed.get("segments").is_none(), "{untimed}");
    let untimed_id = untimed["id"].as_str().unwrap();
    let path = format!("/v1/captures/{untimed_id}/captions");
    let (status, problem) = json(app.get(&path).bearer_auth(&reader).send().await.unwrap()).await;
    assert_eq!(status, 409, "{problem}");
    assert_problem(&problem, 409, "timestamps_unavailable", &path);
    let (_, capture) = json(
        app.get(&format!("/v1/captures/{untimed_id}"))
            .bearer_auth(&reader)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(capture["timestamps"], "none");
    assert!(capture.get("segments").is_none(), "{capture}");

    // A bad format; another account's capture and a missing one are both 404.
    let path = format!("/v1/captures/{id}/captions");
    let (status, problem) = json(
        app.get(&format!("{path}?format=ass"))
            .bearer_auth(&reader)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(problem["param"], "format", "{problem}");
    let (_, stranger) = app.pro_user().await;
    for path in [
        format!("/v1/captures/{id}"),
        format!("/v1/captures/{id}/captions"),
        "/v1/captures/cap_missing".to_owned(),
    ] {
        let (status, problem) =
            json(app.get(&path).bearer_auth(&stranger).send().await.unwrap()).await;
        assert_eq!(status, 404, "{path}: {problem}");
        assert_eq!(problem["code"], "not_found");
    }

    // Bad timestamps are refused by name and store nothing.
    let before = captures(&app).await;
    for bad in [json!("words"), json!(true), json!(["word"])] {
        let (status, problem) = app
            .post_json(
                "/v1/transcriptions",
                &secret,
                &json!({ "audio": audio, "timestamps": bad }),
            )
            .await;
        assert_eq!(status, 400, "{problem}");
        assert_eq!(problem["param"], "timestamps", "{problem}");
    }
    assert_eq!(captures(&app).await, before);

    // One Idempotency-Key, the same clip with other timestamps: a different request.
    let send = |timestamps: &'static str| {
        app.post("/v1/transcriptions")
            .bearer_auth(&secret)
            .header("Idempotency-Key", "ts-key-1")
            .json(&json!({ "audio": audio, "timestamps": timestamps }))
            .send()
    };
    let (status, first) = json(send("segment").await.unwrap()).await;
    assert_eq!(status, 200, "{first}");
    let (status, replay) = json(send("segment").await.unwrap()).await;
    assert_eq!((status, &replay), (200, &first));
    let (status, problem) = json(send("word").await.unwrap()).await;
    assert_eq!(status, 422, "{problem}");
    assert_eq!(problem["code"], "idempotency_key_reused");
    app.stop().await;
}
