//! `POST /v1/audio/transcriptions` and `/v1/audio/translations` (OpenAI's transcription
//! dialect) with the real Whisper model: every response format and granularity, the stream,
//! translation, idempotency, and every refusal by name in OpenAI's envelope (none of which
//! stores a capture). The OpenAI SDKs run the same calls in tests/sdk.

use crate::asr;
use crate::common::fixtures;
use crate::common::{TestApp, json};
use serde_json::Value;
use voiced::domain::{Plan, Scope};

const BOUNDARY: &str = "voiced-test-boundary-7MA4YWxkTrZu0gW";

/// A `multipart/form-data` body as OpenAI's SDKs send it: text fields, then the file.
fn form(fields: &[(&str, &str)], file: Option<&[u8]>) -> Vec<u8> {
    let mut body = Vec::new();
    for (name, value) in fields {
        body.extend_from_slice(
            format!(
                "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
            )
            .as_bytes(),
        );
    }
    if let Some(bytes) = file {
        body.extend_from_slice(
            format!(
                "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; \
                 filename=\"clip.wav\"\r\nContent-Type: audio/wav\r\n\r\n"
            )
            .as_bytes(),
        );
        body.extend_from_slice(bytes);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{BOUNDARY}--\r\n").as_bytes());
    body
}

async fn post(
    app: &TestApp,
    path: &str,
    secret: &str,
    fields: &[(&str, &str)],
    file: Option<&[u8]>,
) -> reqwest::Response {
    app.post(path)
        .bearer_auth(secret)
        .header(
            "content-type",
            format!("multipart/form-data; boundary={BOUNDARY}"),
        )
        .body(form(fields, file))
        .send()
        .await
        .unwrap()
}

async fn captures(app: &TestApp) -> usize {
    fixtures::captures(app).await.len()
}

fn assert_envelope(body: &Value, code: &str, param: Option<&str>) {
    let error = &body["error"];
    assert_eq!(error["code"], code, "{body}");
    assert_eq!(error["param"].as_str(), param, "{body}");
    assert!(
        error["type"]
            .as_str()
            .is_some_and(|t| t.ends_with("_error")),
        "{body}"
    );
    assert!(
        error["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{body}"
    );
    assert_eq!(body.as_object().unwrap().len(), 1, "only `error`: {body}");
}

/// `data:` payloads of a `text/event-stream`.
fn events(body: &str) -> Vec<Value> {
    body.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(|d| serde_json::from_str(d.trim()).unwrap())
        .collect()
}

#[tokio::test]
async fn every_format_granularity_stream_and_translation() {
    let app = TestApp::start().await;
    let (_, secret) = app.pro_user().await;
    let wav = std::fs::read(asr::beckett_wav()).unwrap();
    let path = "/v1/audio/transcriptions";
    let base = [("model", "whisper-1")];

    // json (the default): text and usage.
    let (status, body) = json(post(&app, path, &secret, &base, Some(&wav)).await).await;
    assert_eq!(status, 200, "{body}");
    let text = body["text"].as_str().unwrap().to_owned();
    assert!(
        asr::wer(
            "Ever tried. Ever failed. No matter. Try again. Fail again. Fail better.",
            &text
        ) <= 0.1
    );
    assert_eq!(body["usage"]["type"], "duration");
    assert_eq!(body["usage"]["seconds"], 10);
    let (_, listed) = json(
        app.get("/v1/captures")
            .bearer_auth(&secret)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(listed["data"][0]["source"], "api");
    assert_eq!(listed["data"][0]["transcript_raw"], text.as_str());

    // text, srt, vtt.
    let answer = |format: &'static str| {
        let fields = [("model", "whisper-1"), ("response_format", format)];
        let (app, secret, wav) = (&app, &secret, &wav);
        async move {
            let response = post(app, path, secret, &fields, Some(wav)).await;
            assert_eq!(response.status(), 200, "{format}");
            let content_type = response.headers()["content-type"]
                .to_str()
                .unwrap()
                .to_owned();
            (content_type, response.text().await.unwrap())
        }
    };
    let (content_type, body) = answer("text").await;
    assert!(content_type.starts_with("text/plain"), "{content_type}");
    assert_eq!(body.trim(), text);
    let (content_type, srt) = answer("srt").await;
    assert!(
        content_type.starts_with("application/x-subrip"),
        "{content_type}"
    );
    assert!(srt.starts_with("1\n00:00:0"), "{srt}");
    let (content_type, vtt) = answer("vtt").await;
    assert!(content_type.starts_with("text/vtt"), "{content_type}");
    assert!(vtt.starts_with("WEBVTT\n\n00:00:0"), "{vtt}");
    assert_eq!(
        srt.matches(" --> ").count(),
        vtt.matches(" --> ").count(),
        "{srt}\n{vtt}"
    );

    // verbose_json: segments by default; words and/or segments as the granularities ask.
    let verbose = |granularities: &'static [&'static str]| {
        let mut fields = vec![("model", "whisper-1"), ("response_format", "verbose_json")];
        fields.extend(
            granularities
                .iter()
                .map(|g| ("timestamp_granularities[]", *g)),
        );
        let (app, secret, wav) = (&app, &secret, &wav);
        async move { json(post(app, path, secret, &fields, Some(wav)).await).await }
    };
    let (status, body) = verbose(&[]).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        (&body["task"], &body["language"], &body["text"]),
        (
            &Value::from("transcribe"),
            &Value::from("en"),
            &Value::from(text.as_str())
        )
    );
    assert!(
        (body["duration"].as_f64().unwrap() - 9.96).abs() < 0.05,
        "{body}"
    );
    let segments = body["segments"].as_array().unwrap();
    assert!(!segments.is_empty());
    for key in [
        "id",
        "seek",
        "start",
        "end",
        "text",
        "tokens",
        "temperature",
        "avg_logprob",
        "compression_ratio",
        "no_speech_prob",
    ] {
        assert!(segments[0].get(key).is_some(), "{key}: {body}");
    }
    assert!(body.get("words").is_none(), "{body}");
    let (_, body) = verbose(&["word"]).await;
    let words = body["words"].as_array().unwrap();
    assert!(
        words.len() >= 10 && body.get("segments").is_none(),
        "{body}"
    );
    let joined: String = words.iter().map(|w| w["word"].as_str().unwrap()).collect();
    assert_eq!(joined.trim(), text);
    let (_, body) = verbose(&["word", "segment"]).await;
    assert!(
        body["words"].is_array() && body["segments"].is_array(),
        "{body}"
    );

    // stream=true: one delta a segment, then done with the whole text.
    let response = post(
        &app,
        path,
        &secret,
        &[("model", "whisper-1"), ("stream", "true")],
        Some(&wav),
    )
    .await;
    assert_eq!(response.status(), 200);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let events = events(&response.text().await.unwrap());
    let (last, deltas) = events.split_last().unwrap();
    assert_eq!(last["type"], "transcript.text.done", "{events:?}");
    assert_eq!(last["text"], text.as_str());
    assert!(!deltas.is_empty());
    let streamed: String = deltas
        .iter()
        .map(|e| {
            assert_eq!(e["type"], "transcript.text.delta");
            e["delta"].as_str().unwrap()
        })
        .collect();
    assert_eq!(streamed.trim(), text);

    // Translation: English text, the spoken language reported and stored.
    let german = std::fs::read(asr::espeak_wav(
        "de",
        "Guten Morgen, heute ist das Wetter schön und wir gehen in den Park.",
    ))
    .unwrap();
    let (status, body) = json(
        post(
            &app,
            "/v1/audio/translations",
            &secret,
            &[("model", "whisper-1"), ("response_format", "verbose_json")],
            Some(&german),
        )
        .await,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        (&body["task"], &body["language"]),
        (&Value::from("translate"), &Value::from("de"))
    );
    let english = body["text"].as_str().unwrap().to_lowercase();
    assert!(
        english.contains("morning") || english.contains("weather") || english.contains("park"),
        "{english}"
    );
    let id = fixtures::captures(&app)
        .await
        .into_iter()
        .find(|c| c.task == "translate")
        .expect("the translation's capture")
        .id;
    let (_, capture) = json(
        app.get(&format!("/v1/captures/{id}"))
            .bearer_auth(&secret)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (&capture["source"], &capture["language"], &capture["task"]),
        (
            &Value::from("api"),
            &Value::from("de"),
            &Value::from("translate")
        )
    );

    // An Idempotency-Key replays the first answer without transcribing again.
    let keyed = || {
        app.post(path)
            .bearer_auth(&secret)
            .header("Idempotency-Key", "openai-asr-1")
            .header(
                "content-type",
                format!("multipart/form-data; boundary={BOUNDARY}"),
            )
            .body(form(
                &[("model", "whisper-1"), ("response_format", "verbose_json")],
                Some(&wav),
            ))
            .send()
    };
    let first = keyed().await.unwrap();
    assert!(first.headers().get("idempotent-replayed").is_none());
    let first = first.text().await.unwrap();
    let before = captures(&app).await;
    let replay = keyed().await.unwrap();
    assert_eq!(replay.headers()["idempotent-replayed"], "true");
    assert_eq!(replay.text().await.unwrap(), first);
    assert_eq!(captures(&app).await, before);
    app.stop().await;
}

#[tokio::test]
async fn every_unsupported_or_bad_field_is_refused_by_name() {
    let app = TestApp::start().await;
    let account = app.account(Plan::Pro).await;
    let (_, secret) = app.key(&account, &Scope::ALL).await;
    let wav = std::fs::read(asr::espeak_wav("en-us", "A short clip.")).unwrap();
    let m = ("model", "whisper-1");
    let long_prompt = "p".repeat(2001);
    let t = "/v1/audio/transcriptions";
    // (path, fields, file, the param refused)
    type Case<'a> = (&'a str, Vec<(&'a str, &'a str)>, Option<&'a [u8]>, &'a str);
    let cases: Vec<Case<'_>> = vec![
        (t, vec![m], None, "file"),
        (t, vec![m], Some(b""), "file"),
        (t, vec![m], Some(b"not audio at all, just text"), "file"),
        (t, vec![], Some(&wav), "model"),
        (t, vec![("model", "gpt-5")], Some(&wav), "model"),
        (t, vec![("model", "whisper-large-v3")], Some(&wav), "model"),
        (
            t,
            vec![m, ("response_format", "diarized_json")],
            Some(&wav),
            "response_format",
        ),
        (
            t,
            vec![m, ("response_format", "xml")],
            Some(&wav),
            "response_format",
        ),
        (
            t,
            vec![m, ("timestamp_granularities[]", "word")],
            Some(&wav),
            "timestamp_granularities[]",
        ),
        (
            t,
            vec![
                m,
                ("response_format", "verbose_json"),
                ("timestamp_granularities[]", "char"),
            ],
            Some(&wav),
            "timestamp_granularities[]",
        ),
        (t, vec![m, ("stream", "maybe")], Some(&wav), "stream"),
        (
            t,
            vec![m, ("stream", "true"), ("response_format", "srt")],
            Some(&wav),
            "stream",
        ),
        (
            t,
            vec![m, ("include[]", "logprobs")],
            Some(&wav),
            "include[]",
        ),
        (
            t,
            vec![m, ("chunking_strategy", "auto")],
            Some(&wav),
            "chunking_strategy",
        ),
        (
            t,
            vec![m, ("known_speaker_names[]", "ann")],
            Some(&wav),
            "known_speaker_names[]",
        ),
        (
            t,
            vec![
                m,
                ("known_speaker_references[]", "data:audio/wav;base64,AAAA"),
            ],
            Some(&wav),
            "known_speaker_references[]",
        ),
        (t, vec![m, ("temperature", "2")], Some(&wav), "temperature"),
        (
            t,
            vec![m, ("temperature", "hot")],
            Some(&wav),
            "temperature",
        ),
        (t, vec![m, ("language", "english")], Some(&wav), "language"),
        (t, vec![m, ("prompt", &long_prompt)], Some(&wav), "prompt"),
        (t, vec![m, ("speed", "1")], Some(&wav), "speed"),
        (
            "/v1/audio/translations",
            vec![m, ("timestamp_granularities[]", "word")],
            Some(&wav),
            "timestamp_granularities[]",
        ),
        (
            "/v1/audio/translations",
            vec![m, ("stream", "true")],
            Some(&wav),
            "stream",
        ),
        ("/v1/audio/translations", vec![], Some(&wav), "model"),
    ];
    for (path, fields, file, param) in cases {
        let response = post(&app, path, &secret, &fields, file).await;
        assert_eq!(
            response.headers()["content-type"],
            "application/json",
            "{path} {fields:?}"
        );
        let (status, body) = json(response).await;
        assert_eq!(status, 400, "{path} {fields:?}: {body}");
        assert_envelope(&body, "invalid_request", Some(param));
    }

    // Not a form: 415 in the same envelope.
    let (status, body) = json(
        app.post("/v1/audio/transcriptions")
            .bearer_auth(&secret)
            .json(&serde_json::json!({ "model": "whisper-1" }))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 415, "{body}");
    assert_envelope(&body, "unsupported_media_type", None);

    // A key without voice:generate.
    let (_, reader) = app.key(&account, &[Scope::VoiceRead]).await;
    let (status, body) = json(post(&app, t, &reader, &[m], Some(&wav)).await).await;
    assert_eq!(status, 403, "{body}");
    assert_envelope(&body, "insufficient_scope", None);
    assert_eq!(captures(&app).await, 0);
    app.stop().await;
}

/// The native route's admission, through the OpenAI door: a full recogniser queue is 503 with
/// `Retry-After` in OpenAI's envelope, answered before the form is read; the account's cap of
/// transcriptions in flight counts this door's too; a plan without transcription is refused.
#[tokio::test]
async fn admission_and_plan_as_on_the_native_route() {
    let app = TestApp::start().await;
    let account = app.account(Plan::Pro).await;
    let (_, secret) = app.key(&account, &Scope::ALL).await;
    let wav = std::fs::read(asr::espeak_wav("en-us", "Is there room?")).unwrap();
    let m = [("model", "whisper-1")];

    let mut places = Vec::new();
    while let Some(place) = app.asr.try_admit() {
        places.push(place);
    }
    let response = post(&app, "/v1/audio/transcriptions", &secret, &m, Some(&wav)).await;
    assert_eq!(response.status(), 503);
    assert!(response.headers().get("retry-after").is_some());
    let (_, body) = json(response).await;
    assert_envelope(&body, "service_unavailable", None);
    drop(places);

    let holds: Vec<_> = std::iter::from_fn(|| app.asr.try_hold_for(&account)).collect();
    assert!(!holds.is_empty());
    let response = post(&app, "/v1/audio/translations", &secret, &m, Some(&wav)).await;
    assert_eq!(response.status(), 429);
    let (_, body) = json(response).await;
    assert_envelope(&body, "rate_limit_exceeded", None);
    drop(holds);
    assert_eq!(captures(&app).await, 0);

    fixtures::set_features(&app, &account, &[voiced::domain::Feature::Speech]).await;
    let (status, body) =
        json(post(&app, "/v1/audio/transcriptions", &secret, &m, Some(&wav)).await).await;
    assert_eq!(status, 403, "{body}");
    assert_envelope(&body, "feature_not_enabled", None);

    fixtures::set_features(&app, &account, &voiced::domain::Feature::ALL).await;
    let (status, body) =
        json(post(&app, "/v1/audio/transcriptions", &secret, &m, Some(&wav)).await).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(captures(&app).await, 1);
    app.stop().await;
}

/// More than 25 MiB of audio in the form: 413 naming `file`, in OpenAI's envelope.
#[tokio::test]
async fn an_oversized_file_is_413() {
    let app = TestApp::start().await;
    let (_, secret) = app.pro_user().await;
    let big = vec![0u8; 25 * 1024 * 1024 + 1];
    let (status, body) = json(
        post(
            &app,
            "/v1/audio/transcriptions",
            &secret,
            &[("model", "whisper-1")],
            Some(&big),
        )
        .await,
    )
    .await;
    assert_eq!(status, 413, "{body}");
    assert_envelope(&body, "payload_too_large", Some("file"));
    assert_eq!(captures(&app).await, 0);
    app.stop().await;
}

#[tokio::test]
async fn languages_take_the_first_and_keywords_join_the_prompt() {
    let app = TestApp::start().await;
    let (_, secret) = app.pro_user().await;
    let path = "/v1/audio/transcriptions";
    let german = std::fs::read(asr::espeak_wav(
        "de",
        "Guten Morgen, heute ist das Wetter schön und wir gehen in den Park.",
    ))
    .unwrap();
    // The first language of the list is the recogniser's language, whatever the audio.
    for (first, second) in [("de", "en"), ("en", "de")] {
        let fields = [
            ("model", "gpt-4o-transcribe"),
            ("response_format", "verbose_json"),
            ("languages[]", first),
            ("languages[]", second),
        ];
        let (status, body) = json(post(&app, path, &secret, &fields, Some(&german)).await).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["language"], first, "{body}");
    }
    // Keywords prime the recogniser with the prompt; the transcript is still the clip's.
    let wav = std::fs::read(asr::beckett_wav()).unwrap();
    let fields = [
        ("model", "gpt-4o-transcribe"),
        ("prompt", "Samuel Beckett, Worstward Ho."),
        ("keywords[]", "Beckett"),
        ("keywords[]", "fail better"),
    ];
    let (status, body) = json(post(&app, path, &secret, &fields, Some(&wav)).await).await;
    assert_eq!(status, 200, "{body}");
    let text = body["text"].as_str().unwrap();
    assert!(
        asr::wer(
            "Ever tried. Ever failed. No matter. Try again. Fail again. Fail better.",
            text
        ) <= 0.1,
        "{text}"
    );
    // Bounds and conflicts, each refused by name before anything is stored.
    let before = captures(&app).await;
    let long = "k".repeat(101);
    let prompt = "p".repeat(1995);
    let many: Vec<(&str, &str)> = std::iter::once(("model", "whisper-1"))
        .chain(std::iter::repeat_n(("keywords[]", "word"), 101))
        .collect();
    for (fields, param) in [
        (
            vec![("model", "whisper-1"), ("languages[]", "klingon")],
            "languages[]",
        ),
        (
            vec![
                ("model", "whisper-1"),
                ("language", "fr"),
                ("languages[]", "de"),
            ],
            "languages[]",
        ),
        (
            vec![("model", "whisper-1"), ("keywords[]", long.as_str())],
            "keywords",
        ),
        (
            vec![
                ("model", "whisper-1"),
                ("prompt", prompt.as_str()),
                ("keywords[]", "Beckett"),
            ],
            "keywords",
        ),
        (many, "keywords"),
    ] {
        let (status, body) = json(post(&app, path, &secret, &fields, Some(&wav)).await).await;
        assert_eq!(status, 400, "{param}: {body}");
        assert_envelope(&body, "invalid_request", Some(param));
    }
    // On translations the lists are not fields at all.
    let (status, body) = json(
        post(
            &app,
            "/v1/audio/translations",
            &secret,
            &[("model", "whisper-1"), ("keywords[]", "Beckett")],
            Some(&wav),
        )
        .await,
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert_envelope(&body, "invalid_request", Some("keywords[]"));
    assert_eq!(captures(&app).await, before);
    app.stop().await;
}
