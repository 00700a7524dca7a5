//! `POST /v1/speech` end to end: real PostgreSQL, the real Kokoro model, in-process workers,
//! the signed download, idempotency, metering. Audio is checked by decoding it.

use crate::common;

use std::time::Duration;

use crate::common::fixtures;
use crate::common::{TestApp, assert_problem, json};
use serde_json::{Value, json};
use voiced::audio::{DecodeLimits, decode_for_asr};
use voiced::domain::{EngineId, Feature, Plan, Scope};
use voiced::signing::{AudioSigner, LINK_LIFETIME_SECS};

const SENTENCE: &str = "Hello from voiced.";

#[tokio::test]
async fn create_poll_download_each_format_and_metering() {
    let app = TestApp::start_with_workers(1).await;
    let (account, secret) = app.pro_user().await;
    let voice = app
        .voice(&account, "Narrator", EngineId::Kokoro, "jf_alpha")
        .await;

    for (format, content_type) in [
        ("wav", "audio/wav"),
        ("mp3", "audio/mpeg"),
        ("opus", "audio/ogg"),
    ] {
        let response = app
            .post("/v1/speech")
            .bearer_auth(&secret)
            .json(&json!({ "text": SENTENCE, "voice_name": "Narrator", "seed": 42, "response_format": format }))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 202);
        assert_eq!(
            response.headers()["ratelimit"]
                .to_str()
                .unwrap()
                .split(';')
                .next(),
            Some("\"writes\"")
        );
        let location = response.headers()["location"].to_str().unwrap().to_owned();
        let (_, accepted) = json(response).await;
        let id = accepted["id"].as_str().unwrap();
        assert_eq!(location, format!("/v1/generations/{id}"));
        assert_eq!(
            accepted,
            json!({ "id": id, "status": "generating", "voice": "Narrator" })
        );

        let generation = app.finished(&secret, id).await;
        assert_eq!(generation["status"], "completed", "{generation}");
        assert_eq!(generation["has_audio"], true);
        assert_eq!(generation["profile"], voice);
        assert_eq!(generation["seed"], 42);
        assert_eq!(generation["format"], format);
        let response = app
            .download(generation["audio_url"].as_str().unwrap())
            .await;
        assert_eq!(response.headers()["content-type"], content_type);
        let length: usize = response.headers()["content-length"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        let bytes = response.bytes().await.unwrap();
        assert_eq!(bytes.len(), length);
        let decoded =
            decode_for_asr(bytes.to_vec(), &DecodeLimits::default()).expect("the audio decodes");
        // Three short words: somewhere between half a second and four seconds of speech.
        assert!(
            (500..4000).contains(&decoded.duration_ms),
            "{format}: {} ms",
            decoded.duration_ms
        );
        let rms = (decoded.samples_16k.iter().map(|s| s * s).sum::<f32>()
            / decoded.samples_16k.len() as f32)
            .sqrt();
        assert!(rms > 0.01, "{format}: audible speech, rms {rms}");
        let stated = generation["duration_ms"].as_i64().unwrap();
        assert!(
            (stated - decoded.duration_ms as i64).abs() < 100,
            "{stated} vs {}",
            decoded.duration_ms
        );
    }

    // Charged once each, in the ledger, and counted on the voice.
    let charged: Vec<i64> = fixtures::ledger_of(&app, &account)
        .await
        .iter()
        .map(|row| row.audio_ms)
        .collect();
    assert_eq!(charged.len(), 3);
    assert!(charged.iter().all(|ms| *ms > 500));
    let (_, voices) = json(
        app.get("/v1/voices")
            .bearer_auth(&secret)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(voices["data"][0]["generation_count"], 3);
    app.stop().await;
}

#[tokio::test]
async fn same_seed_same_bytes_other_seed_other_take() {
    let app = TestApp::start_with_workers(1).await;
    let (account, secret) = app.pro_user().await;
    app.voice(&account, "Narrator", EngineId::Kokoro, "jf_alpha")
        .await;
    let body = |seed: u64| json!({ "text": SENTENCE, "voice_name": "Narrator", "seed": seed, "response_format": "wav" });
    let (_, first) = app.completed_audio(&secret, body(7)).await;
    let (_, again) = app.completed_audio(&secret, body(7)).await;
    let (_, other) = app.completed_audio(&secret, body(8)).await;
    assert_eq!(first, again, "same seed, same bytes");
    assert_ne!(first, other, "another seed, another take");
    let a = decode_for_asr(first.to_vec(), &DecodeLimits::default()).unwrap();
    let b = decode_for_asr(other.to_vec(), &DecodeLimits::default()).unwrap();
    let rms = |s: &[f32]| (s.iter().map(|x| x * x).sum::<f32>() / s.len() as f32).sqrt();
    let (ra, rb) = (rms(&a.samples_16k), rms(&b.samples_16k));
    assert!((ra - rb).abs() / ra < 0.1, "same loudness: {ra} vs {rb}");

    // Without a seed: random, recorded and returned; a pinned voice seed applies.
    let (generation, _) = app
        .completed_audio(
            &secret,
            json!({ "text": SENTENCE, "voice_name": "Narrator" }),
        )
        .await;
    assert!(generation["seed"].as_i64().is_some());
    fixtures::pin_voice(&app, "Narrator", Some(7), None).await;
    let (pinned, bytes) = app
        .completed_audio(
            &secret,
            json!({ "text": SENTENCE, "voice_name": "Narrator", "response_format": "wav" }),
        )
        .await;
    assert_eq!(pinned["seed"], 7);
    assert_eq!(
        bytes, first,
        "the pin gives the same take as the explicit seed"
    );
    app.stop().await;
}

#[tokio::test]
async fn idempotent_replays_and_concurrent_duplicates() {
    let app = TestApp::start().await;
    let (account, secret) = app.pro_user().await;
    app.voice(&account, "Narrator", EngineId::Kokoro, "jf_alpha")
        .await;
    let body = json!({ "text": SENTENCE, "voice_name": "Narrator", "seed": 1 });
    let send = |key: &str, body: &Value| {
        app.post("/v1/speech")
            .bearer_auth(&secret)
            .header("Idempotency-Key", key)
            .json(body)
            .send()
    };
    let first = send("key-1", &body).await.unwrap();
    assert_eq!(first.status(), 202);
    let first_location = first.headers()["location"].clone();
    let first_bytes = first.bytes().await.unwrap();
    // Same body with other key order and spacing is the same request.
    let replay = app
        .post("/v1/speech")
        .bearer_auth(&secret)
        .header("Idempotency-Key", "key-1")
        .header("content-type", "application/json")
        .body(r#"{ "seed": 1, "voice_name": "Narrator", "text": "Hello from voiced." }"#)
        .send()
        .await
        .unwrap();
    assert_eq!(replay.status(), 202);
    assert_eq!(replay.headers()["location"], first_location);
    assert_eq!(replay.bytes().await.unwrap(), first_bytes, "byte for byte");

    let (status, reused) = json(
        send(
            "key-1",
            &json!({ "text": "Something else", "voice_name": "Narrator" }),
        )
        .await
        .unwrap(),
    )
    .await;
    assert_eq!(status, 422);
    assert_problem(&reused, 422, "idempotency_key_reused", "/v1/speech");

    // Another account may use the same key: keys are per account.
    let (other, other_secret) = app.pro_user().await;
    app.voice(&other, "Narrator", EngineId::Kokoro, "jf_alpha")
        .await;
    let response = app
        .post("/v1/speech")
        .bearer_auth(&other_secret)
        .header("Idempotency-Key", "key-1")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 202);

    let count = |account: String| {
        let app = &app;
        async move { fixtures::generations_of(app, &account).await.len() }
    };
    assert_eq!(count(account.clone()).await, 1);

    // 20 concurrent identical requests: one generation; the others replay it or are told the
    // key is in use.
    let concurrent = json!({ "text": "Twenty at once.", "voice_name": "Narrator", "seed": 3 });
    let requests = (0..20).map(|_| send("key-race", &concurrent));
    let responses = futures_join_all(requests).await;
    let mut ids = std::collections::BTreeSet::new();
    for response in responses {
        let response = response.unwrap();
        let status = response.status().as_u16();
        let (_, body) = json(response).await;
        match status {
            202 => {
                ids.insert(body["id"].as_str().unwrap().to_owned());
            }
            409 => assert_eq!(body["code"], "idempotency_key_in_use"),
            other => panic!("unexpected {other}: {body}"),
        }
    }
    assert_eq!(ids.len(), 1, "every 202 names the same generation");
    assert_eq!(count(account).await, 2);
    app.stop().await;
}

/// Joins futures without pulling in the futures crate.
async fn futures_join_all<F>(futures: impl IntoIterator<Item = F>) -> Vec<F::Output>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    let handles: Vec<_> = futures.into_iter().map(tokio::spawn).collect();
    let mut out = Vec::new();
    for handle in handles {
        out.push(handle.await.unwrap());
    }
    out
}

#[tokio::test]
async fn bad_input_is_refused_and_creates_nothing() {
    let app = TestApp::start().await;
    let (account, secret) = app.pro_user().await;
    app.voice(&account, "Narrator", EngineId::Kokoro, "jf_alpha")
        .await;
    app.voice(&account, "Chatty", EngineId::Chatterbox, "default")
        .await;
    let long = "a".repeat(10_001);
    let cases: Vec<(Value, &str)> = vec![
        (json!({ "voice_name": "Narrator" }), "text"),
        (json!({ "text": "", "voice_name": "Narrator" }), "text"),
        (json!({ "text": "   ", "voice_name": "Narrator" }), "text"),
        (json!({ "text": long, "voice_name": "Narrator" }), "text"),
        (json!({ "text": 5, "voice_name": "Narrator" }), "text"),
        (json!({ "text": "hi" }), "voice_name"),
        (
            json!({ "text": "hi", "voice_name": "Nobody" }),
            "voice_name",
        ),
        (
            json!({ "text": "hi", "voice_name": "Narrator", "seed": -1 }),
            "seed",
        ),
        (
            json!({ "text": "hi", "voice_name": "Narrator", "seed": 1.5 }),
            "seed",
        ),
        (
            json!({ "text": "hi", "voice_name": "Narrator", "seed": "7" }),
            "seed",
        ),
        (
            json!({ "text": "hi", "voice_name": "Narrator", "seed": 9007199254740992u64 }),
            "seed",
        ),
        (
            json!({ "text": "hi", "voice_name": "Chatty", "temperature": 0.01 }),
            "temperature",
        ),
        (
            json!({ "text": "hi", "voice_name": "Chatty", "temperature": 2.5 }),
            "temperature",
        ),
        (
            json!({ "text": "hi", "voice_name": "Chatty", "temperature": "hot" }),
            "temperature",
        ),
        (
            json!({ "text": "hi", "voice_name": "Narrator", "temperature": 0.7 }),
            "temperature",
        ),
        (
            json!({ "text": "hi", "voice_name": "Narrator", "response_format": "aac" }),
            "response_format",
        ),
        (
            json!({ "text": "hi", "voice_name": "Narrator", "speed": 1 }),
            "speed",
        ),
    ];
    for (body, param) in cases {
        let (status, problem) = app.speak(&secret, body.clone()).await;
        assert_eq!(status, 400, "{body}: {problem}");
        assert_problem(&problem, 400, "invalid_request", "/v1/speech");
        assert_eq!(problem["param"], param, "{body}");
    }
    // A voice's pinned temperature on a kokoro voice is refused the same way.
    fixtures::pin_voice(&app, "Narrator", None, Some(0.7)).await;
    let (status, problem) = app
        .speak(&secret, json!({ "text": "hi", "voice_name": "Narrator" }))
        .await;
    assert_eq!(
        (status, problem["param"].as_str()),
        (400, Some("temperature")),
        "{problem}"
    );

    for (raw, content_type, code, status) in [
        ("not json", "application/json", "invalid_request", 400),
        ("[1,2]", "application/json", "invalid_request", 400),
        (
            "text=hi",
            "application/x-www-form-urlencoded",
            "unsupported_media_type",
            415,
        ),
    ] {
        let response = app
            .post("/v1/speech")
            .bearer_auth(&secret)
            .header("content-type", content_type)
            .body(raw)
            .send()
            .await
            .unwrap();
        let (got, body) = json(response).await;
        assert_eq!(got, status, "{raw}: {body}");
        assert_problem(&body, status, code, "/v1/speech");
    }
    let response = app
        .post("/v1/speech")
        .bearer_auth(&secret)
        .header("Idempotency-Key", "k".repeat(256))
        .json(&json!({ "text": "hi", "voice_name": "Narrator" }))
        .send()
        .await
        .unwrap();
    let (status, body) = json(response).await;
    assert_eq!(
        (status, body["param"].as_str()),
        (400, Some("Idempotency-Key")),
        "{body}"
    );

    let generations = fixtures::generation_count(&app).await;
    assert_eq!(generations, 0);
    app.stop().await;
}

#[tokio::test]
async fn scope_and_feature_gates() {
    let app = TestApp::start().await;
    let account = app.account(Plan::Pro).await;
    app.voice(&account, "Narrator", EngineId::Kokoro, "jf_alpha")
        .await;
    let (_, reader) = app.key(&account, &[Scope::VoiceRead]).await;
    let (status, body) = app
        .speak(&reader, json!({ "text": "hi", "voice_name": "Narrator" }))
        .await;
    assert_eq!(status, 403);
    assert_problem(&body, 403, "insufficient_scope", "/v1/speech");
    assert_eq!(body["required_scope"], "voice:generate");

    let (_, writer) = app.key(&account, &Scope::ALL).await;
    fixtures::set_features(&app, &account, &[Feature::Transcription]).await;
    let (status, body) = app
        .speak(&writer, json!({ "text": "hi", "voice_name": "Narrator" }))
        .await;
    assert_eq!(status, 403);
    assert_problem(&body, 403, "feature_not_enabled", "/v1/speech");
    assert_eq!(
        body["settings_url"],
        "http://127.0.0.1:8080/console/billing"
    );
    app.stop().await;
}

#[tokio::test]
async fn allowance_and_key_ceiling_with_in_flight_overshoot() {
    let app = TestApp::start_with_workers(1).await;
    // Allowance: 120 minutes used → refused, billing link.
    let (spent, spent_secret) = app.pro_user().await;
    let voice = app
        .voice(&spent, "Narrator", EngineId::Kokoro, "jf_alpha")
        .await;
    app.charge(&spent, None, &voice, 120 * 60_000).await;
    let (status, body) = app
        .speak(
            &spent_secret,
            json!({ "text": "hi", "voice_name": "Narrator" }),
        )
        .await;
    assert_eq!(status, 429, "{body}");
    assert_problem(&body, 429, "quota_exhausted", "/v1/speech");
    assert_eq!(
        body["settings_url"],
        "http://127.0.0.1:8080/console/billing"
    );

    // Ceiling of 1 minute with 59 s used: the first request is admitted (there is room left) and
    // reserves its estimate; a second one while it is in flight is refused, because charged plus
    // reserved audio has reached the ceiling. The first completes and is charged: the overshoot is
    // what was in flight at the crossing, nothing more.
    let account = app.account(Plan::Pro).await;
    let voice = app
        .voice(&account, "Narrator", EngineId::Kokoro, "jf_alpha")
        .await;
    let (key_id, secret) = app.key_with_ceiling(&account, &Scope::ALL, Some(1)).await;
    app.charge(&account, Some(&key_id), &voice, 59_000).await;
    let (s1, a) = app
        .speak(
            &secret,
            json!({ "text": SENTENCE, "voice_name": "Narrator" }),
        )
        .await;
    assert_eq!(s1, 202, "{a}");
    let (s2, b) = app
        .speak(
            &secret,
            json!({ "text": SENTENCE, "voice_name": "Narrator" }),
        )
        .await;
    assert_eq!(s2, 429, "refused while the first is in flight: {b}");
    assert_problem(&b, 429, "key_ceiling_exceeded", "/v1/speech");
    let generation = app.finished(&secret, a["id"].as_str().unwrap()).await;
    assert_eq!(generation["status"], "completed");
    let key_total: i64 = fixtures::ledger(&app)
        .await
        .iter()
        .filter(|row| row.api_key_id.as_deref() == Some(key_id.as_str()))
        .map(|row| row.audio_ms)
        .sum();
    assert!(
        key_total > 60_000,
        "overshoot by what was in flight: {key_total}"
    );
    let (status, body) = app
        .speak(&secret, json!({ "text": "hi", "voice_name": "Narrator" }))
        .await;
    assert_eq!(status, 429, "{body}");
    assert_problem(&body, 429, "key_ceiling_exceeded", "/v1/speech");
    assert_eq!(body["settings_url"], "http://127.0.0.1:8080/console/keys");

    // Raising the ceiling clears it; another key of the account is unaffected meanwhile.
    let (_, other_key) = app.key(&account, &Scope::ALL).await;
    let (status, _) = app
        .speak(
            &other_key,
            json!({ "text": "hi", "voice_name": "Narrator" }),
        )
        .await;
    assert_eq!(status, 202);
    fixtures::set_ceiling(&app, &key_id, None).await.unwrap();
    let (status, _) = app
        .speak(&secret, json!({ "text": "hi", "voice_name": "Narrator" }))
        .await;
    assert_eq!(status, 202);
    app.stop().await;
}

/// A voice whose engine is not installed here is refused before anything is queued (it used to
/// be accepted and fail later; every door now refuses it the same way, tests/api/speech_admission.rs).
#[tokio::test]
async fn a_generation_on_an_engine_not_installed_is_refused_and_costs_nothing() {
    let app = TestApp::start().await;
    let (account, secret) = app.pro_user().await;
    app.voice(&account, "Qwen voice", EngineId::Qwen, "default")
        .await;
    let (status, problem) = app
        .speak(&secret, json!({ "text": "hi", "voice_name": "Qwen voice" }))
        .await;
    assert_eq!(status, 400, "{problem}");
    assert_problem(&problem, 400, "invalid_request", "/v1/speech");
    assert_eq!(problem["param"], "voice_name");
    assert!(
        problem["detail"]
            .as_str()
            .unwrap()
            .contains("not installed"),
        "{problem}"
    );
    let generations = fixtures::generation_count(&app).await;
    assert_eq!(generations, 0);
    let charged = fixtures::ledger(&app).await.len();
    assert_eq!(charged, 0);
    app.stop().await;
}

#[tokio::test]
async fn audio_links_need_a_valid_fresh_signature_and_a_paid_plan() {
    let app = TestApp::start_with_workers(1).await;
    let (account, secret) = app.pro_user().await;
    app.voice(&account, "Narrator", EngineId::Kokoro, "jf_alpha")
        .await;
    let (generation, whole) = app
        .completed_audio(
            &secret,
            json!({ "text": SENTENCE, "voice_name": "Narrator", "response_format": "wav" }),
        )
        .await;
    let id = generation["id"].as_str().unwrap();

    // Downloads stream and answer byte ranges (browser <audio> elements seek with them).
    let url = generation["audio_url"].as_str().unwrap();
    let path = &url[url.find("/v1/audio/").unwrap()..];
    let full = app.get(path).send().await.unwrap();
    assert_eq!(full.headers()["accept-ranges"], "bytes");
    let len = whole.len();
    assert!(len > 4000, "{len}");
    let part = app
        .get(path)
        .header("range", "bytes=1000-1999")
        .send()
        .await
        .unwrap();
    assert_eq!(part.status(), 206);
    assert_eq!(
        part.headers()["content-range"],
        format!("bytes 1000-1999/{len}").as_str()
    );
    assert_eq!(part.headers()["content-type"], "audio/wav");
    assert_eq!(part.bytes().await.unwrap(), whole[1000..2000]);
    let tail = app
        .get(path)
        .header("range", "bytes=-100")
        .send()
        .await
        .unwrap();
    assert_eq!(tail.status(), 206);
    assert_eq!(tail.bytes().await.unwrap(), whole[len - 100..]);
    let beyond = app
        .get(path)
        .header("range", format!("bytes={len}-"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        beyond.headers()["content-range"],
        format!("bytes */{len}").as_str()
    );
    let (status, body) = json(beyond).await;
    assert_eq!(status, 416, "{body}");
    assert_eq!(body["code"], "range_not_satisfiable");

    // Each poll signs afresh; both links work.
    let again = app.finished(&secret, id).await;
    assert_eq!(
        app.download(again["audio_url"].as_str().unwrap())
            .await
            .status(),
        200
    );

    let signer = AudioSigner::new(common::SIGNING_SECRET.to_vec());
    let expired = signer.sign(id, chrono::Utc::now().timestamp() - LINK_LIFETIME_SECS - 5);
    let valid = signer.sign(id, chrono::Utc::now().timestamp());
    let tampered = format!("{}x", &valid[..valid.len() - 1]);
    for (what, path) in [
        ("missing", format!("/v1/audio/{id}")),
        ("tampered", format!("/v1/audio/{id}?sig={tampered}")),
        ("expired", format!("/v1/audio/{id}?sig={expired}")),
        ("other id", format!("/v1/audio/gen_other?sig={valid}")),
    ] {
        let (status, body) = json(app.get(&path).send().await.unwrap()).await;
        assert_eq!(status, 403, "{what}: {body}");
        assert_eq!(body["code"], "invalid_signature", "{what}");
    }
    // Keys sent along are ignored, not required and not refused.
    let response = app
        .get(&format!("/v1/audio/{id}?sig={valid}"))
        .header("x-api-key", "vk_garbage")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    // The plan gate applies to downloads too.
    fixtures::set_plan(&app, &account, Plan::None).await;
    let (status, body) = json(
        app.get(&format!("/v1/audio/{id}?sig={valid}"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 403);
    assert_eq!(body["code"], "pro_plan_required");
    app.stop().await;
}

#[tokio::test]
async fn reads_never_use_up_writes() {
    let app = TestApp::start().await;
    let (account, secret) = app.pro_user().await;
    app.voice(&account, "Narrator", EngineId::Kokoro, "jf_alpha")
        .await;
    for _ in 0..300 {
        assert_eq!(
            app.get("/v1/voices")
                .bearer_auth(&secret)
                .send()
                .await
                .unwrap()
                .status(),
            200
        );
    }
    assert_eq!(
        app.get("/v1/voices")
            .bearer_auth(&secret)
            .send()
            .await
            .unwrap()
            .status(),
        429
    );
    let response = app
        .post("/v1/speech")
        .bearer_auth(&secret)
        .json(&json!({ "text": "hi", "voice_name": "Narrator" }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 202);
    assert_eq!(response.headers()["ratelimit"], "\"writes\";r=599;t=6");
    app.stop().await;
}

#[tokio::test]
async fn another_accounts_generation_is_404() {
    let app = TestApp::start().await;
    let (account, secret) = app.pro_user().await;
    let (_, stranger) = app.pro_user().await;
    app.voice(&account, "Narrator", EngineId::Kokoro, "jf_alpha")
        .await;
    let (_, accepted) = app
        .speak(&secret, json!({ "text": "hi", "voice_name": "Narrator" }))
        .await;
    let id = accepted["id"].as_str().unwrap();
    let (status, body) = json(
        app.get(&format!("/v1/generations/{id}"))
            .bearer_auth(&stranger)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 404);
    assert_problem(&body, 404, "not_found", &format!("/v1/generations/{id}"));
    app.stop().await;
}

#[tokio::test]
async fn a_generation_past_the_time_limit_fails_and_costs_nothing() {
    let app = TestApp::start_with(1, &[("VOICED_GENERATION_TIMEOUT_SECS", "1")]).await;
    let (account, secret) = app.pro_user().await;
    app.voice(&account, "Narrator", EngineId::Kokoro, "jf_alpha")
        .await;
    // Several sentences: loading the session and synthesizing them takes well over a second.
    let text = "This paragraph is long enough that the engine cannot finish it within one second. \
                It has a second sentence, and then a third one, so that the limit is surely passed.";
    let (status, accepted) = app
        .speak(&secret, json!({ "text": text, "voice_name": "Narrator" }))
        .await;
    assert_eq!(status, 202, "{accepted}");
    let generation = app
        .finished(&secret, accepted["id"].as_str().unwrap())
        .await;
    assert_eq!(generation["status"], "failed", "{generation}");
    assert!(
        generation["error"].as_str().unwrap().contains("time limit"),
        "{generation}"
    );
    assert!(generation.get("audio_url").is_none());
    let charged = fixtures::ledger(&app).await.len();
    assert_eq!(charged, 0);
    app.stop().await;
}

/// Downloads of one generation's audio are bounded per link (issue 23 item 9): with
/// `downloads_per_link` = 2, two downloads held open make the third 429 `rate_limit_exceeded`
/// with `Retry-After`; once one is dropped a download is served again, whole and exact across
/// the store's chunks (a 40 MiB file stands in for a long generation's).
#[tokio::test]
async fn downloads_of_one_link_are_bounded() {
    let app = TestApp::start_with(1, &[("VOICED_DOWNLOADS_PER_LINK", "2")]).await;
    let (account, secret) = app.pro_user().await;
    app.voice(&account, "Narrator", EngineId::Kokoro, "jf_alpha")
        .await;
    let (generation, _) = app
        .completed_audio(
            &secret,
            json!({ "text": SENTENCE, "voice_name": "Narrator", "response_format": "wav" }),
        )
        .await;
    let id = generation["id"].as_str().unwrap();
    let big: Vec<u8> = (0..40 * 1024 * 1024 + 7)
        .map(|i: usize| (i % 253) as u8 ^ (i >> 20) as u8)
        .collect();
    fixtures::corrupt_audio(&app, id, &big).await;
    let url = generation["audio_url"].as_str().unwrap();
    // Separate clients: each download on a connection of its own, its body left unread.
    let open = || async {
        reqwest::Client::new()
            .get(format!(
                "{}{}",
                app.base,
                &url[url.find("/v1/audio/").unwrap()..]
            ))
            .send()
            .await
            .unwrap()
    };
    let first = open().await;
    let second = open().await;
    assert_eq!(
        (first.status().as_u16(), second.status().as_u16()),
        (200, 200)
    );
    let refused = open().await;
    assert_eq!(refused.status(), 429);
    assert_eq!(refused.headers()["retry-after"], "1");
    let (_, body) = json(refused).await;
    assert_problem(
        &body,
        429,
        "rate_limit_exceeded",
        &format!("/v1/audio/{id}"),
    );

    drop(first);
    let third = common::poll_until(
        Duration::from_secs(30),
        "a place freed by the dropped download",
        || async {
            let response = open().await;
            (response.status() == 200).then_some(response)
        },
    )
    .await;
    assert_eq!(
        third.headers()["content-length"],
        big.len().to_string().as_str()
    );
    assert!(
        third.bytes().await.unwrap() == big,
        "the stored bytes, in order"
    );
    let whole = second.bytes().await.unwrap();
    assert!(whole == big);
    app.stop().await;
}

/// A failed generation's `error` is a fixed public sentence (issue 23 item 9): the engine's own
/// message, which names the models directory, stays in the log.
#[tokio::test]
async fn a_failed_generation_tells_a_fixed_sentence_not_the_engines_internals() {
    let app = TestApp::start_with_workers(1).await;
    let (account, secret) = app.pro_user().await;
    // Queued directly (admission may refuse an engine that is not installed): the worker's
    // answer is what is checked.
    let voice = app
        .voice(&account, "Qwen voice", EngineId::Qwen, "default")
        .await;
    let id = fixtures::enqueue_past_admission(&app, &account, None, &voice, "qwen", "Hello.").await;
    let failed = app.finished(&secret, &id).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    assert_eq!(
        failed["error"],
        "the engine of this voice is not installed on this deployment; nothing was charged"
    );
    app.stop().await;
}

/// Audio stored by a generation that is cancelled before it completes is deleted (issue 23
/// item 9): a trigger cancels the generation the moment its audio is stored, the last moment
/// before `complete`.
#[tokio::test]
async fn audio_of_a_generation_cancelled_after_it_was_stored_is_deleted() {
    let app = TestApp::start_with_workers(1).await;
    let (account, secret) = app.pro_user().await;
    app.voice(&account, "Narrator", EngineId::Kokoro, "jf_alpha")
        .await;
    fixtures::cancel_generations_as_their_audio_is_stored(&app).await;
    let (status, accepted) = app
        .speak(
            &secret,
            json!({ "text": SENTENCE, "voice_name": "Narrator", "response_format": "wav" }),
        )
        .await;
    assert_eq!(status, 202, "{accepted}");
    let id = accepted["id"].as_str().unwrap();
    let failed = app.finished(&secret, id).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    assert!(
        failed["error"].as_str().unwrap().starts_with("cancelled:"),
        "{failed}"
    );
    let blobs = || fixtures::blobs_ending_in(&app, id);
    // The deletion follows the `failed` notification: poll for it.
    common::poll_until(
        Duration::from_secs(30),
        "the orphaned audio to go",
        || async { (blobs().await == 0).then_some(()) },
    )
    .await;
    let charged = fixtures::ledger(&app).await.len();
    assert_eq!(charged, 0);
    app.stop().await;
}
