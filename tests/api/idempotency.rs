//! Idempotency records written before records stored outcomes (migration 0014 added the
//! `operation`/`outcome` columns; older records hold REST's HTTP answer) still replay during
//! their 48 h life, through every door that shares the key.

use serde_json::{Value, json};
use voiced::domain::EngineId;
use voiced::service::idempotency::fingerprint_json;
use voiced::store::idempotency::LegacyResponse;

use crate::common::fixtures;
use crate::common::{TestApp, json};

/// Writes a completed record in the old shape for `key`, as the code before migration 0014 did.
async fn legacy_record(
    app: &TestApp,
    account: &str,
    key: &str,
    operation: &str,
    body: &Value,
    response: LegacyResponse,
) {
    let fingerprint = fingerprint_json(operation, body);
    fixtures::legacy_idempotency_record(app, account, key, &fingerprint, &response).await;
    let stored = fixtures::idempotency_record(app, account, key).await;
    assert_eq!(
        (stored.operation, stored.outcome),
        (None, None),
        "the old shape"
    );
}

async fn generations(app: &TestApp, account: &str) -> usize {
    fixtures::generations_of(app, account).await.len()
}

#[tokio::test]
async fn records_in_the_old_shape_still_replay() {
    let app = TestApp::start_with_workers(1).await;
    let (account, secret) = app.pro_user().await;
    app.voice(&account, "Narrator", EngineId::Kokoro, "jf_alpha")
        .await;

    // POST /v1/speech: the old record is the 202 as sent; the replay is that answer, byte for
    // byte, and admits nothing.
    let body = json!({ "text": "Said before the upgrade.", "voice_name": "Narrator", "seed": 3 });
    let answer = br#"{"id":"gen_from_before","status":"generating","voice":"Narrator"}"#;
    legacy_record(
        &app,
        &account,
        "old-speech",
        "POST /v1/speech",
        &body,
        LegacyResponse {
            status: 202,
            headers: vec![
                ("content-type".into(), "application/json".into()),
                ("location".into(), "/v1/generations/gen_from_before".into()),
            ],
            body: answer.to_vec(),
            generation_id: None,
        },
    )
    .await;
    let before = generations(&app, &account).await;
    let replay = app
        .post("/v1/speech")
        .bearer_auth(&secret)
        .header("Idempotency-Key", "old-speech")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(replay.status(), 202);
    assert_eq!(replay.headers()["idempotent-replayed"], "true");
    assert_eq!(
        replay.headers()["location"],
        "/v1/generations/gen_from_before"
    );
    assert_eq!(replay.bytes().await.unwrap(), &answer[..], "byte for byte");
    assert_eq!(
        generations(&app, &account).await,
        before,
        "nothing admitted"
    );

    // POST /v1/voices: the old record is the 201 with the profile as it was added.
    let body = json!({"name": "Heart", "engine": "kokoro", "preset": "af_heart"});
    let added = json!({
        "id": "voice_from_before", "name": "Heart", "description": "", "language": "en-us",
        "voice_type": "preset", "default_engine": "kokoro", "has_personality": false,
        "generation_count": 0, "sample_count": 0,
        "created_at": "2026-11-20T10:00:00.123456Z", "updated_at": "2026-11-20T10:00:00.123456Z"
    });
    legacy_record(
        &app,
        &account,
        "old-voice",
        "POST /v1/voices",
        &body,
        LegacyResponse {
            status: 201,
            headers: vec![
                ("content-type".into(), "application/json".into()),
                ("location".into(), "/v1/voices".into()),
            ],
            body: serde_json::to_vec(&added).unwrap(),
            generation_id: None,
        },
    )
    .await;
    let replay = app
        .post("/v1/voices")
        .bearer_auth(&secret)
        .header("Idempotency-Key", "old-voice")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(replay.headers()["idempotent-replayed"], "true");
    let (status, replayed) = json(replay).await;
    assert_eq!(status, 201);
    assert_eq!(replayed, added);

    // POST /v1/audio/speech: the old record names the generation whose audio is the answer.
    let first = app
        .post("/v1/audio/speech")
        .bearer_auth(&secret)
        .json(&json!({ "model": "tts-1", "input": "Spoken once.", "voice": "Narrator", "response_format": "wav" }))
        .send()
        .await
        .unwrap();
    assert_eq!(first.status(), 200);
    let id = first.headers()["x-service-generation-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let audio = first.bytes().await.unwrap();
    let body = json!({ "model": "tts-1", "input": "Spoken once.", "voice": "Narrator", "response_format": "wav" });
    legacy_record(
        &app,
        &account,
        "old-sync",
        "POST /v1/audio/speech",
        &body,
        LegacyResponse {
            status: 200,
            headers: Vec::new(),
            body: Vec::new(),
            generation_id: Some(id.clone()),
        },
    )
    .await;
    let before = generations(&app, &account).await;
    let replay = app
        .post("/v1/audio/speech")
        .bearer_auth(&secret)
        .header("Idempotency-Key", "old-sync")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(replay.status(), 200);
    assert_eq!(replay.headers()["idempotent-replayed"], "true");
    assert_eq!(replay.headers()["x-service-generation-id"], id.as_str());
    assert_eq!(replay.bytes().await.unwrap(), audio, "the first audio");
    assert_eq!(
        generations(&app, &account).await,
        before,
        "nothing admitted"
    );
    app.stop().await;
}

/// A new record holds the operation and its outcome, not an HTTP answer.
#[tokio::test]
async fn new_records_hold_the_outcome() {
    let app = TestApp::start().await;
    let (account, secret) = app.pro_user().await;
    app.voice(&account, "Narrator", EngineId::Kokoro, "jf_alpha")
        .await;
    let response = app
        .post("/v1/speech")
        .bearer_auth(&secret)
        .header("Idempotency-Key", "new-speech")
        .json(&json!({ "text": "Hello.", "voice_name": "Narrator" }))
        .send()
        .await
        .unwrap();
    let (status, accepted) = json(response).await;
    assert_eq!(status, 202, "{accepted}");
    let stored = fixtures::idempotency_record(&app, &account, "new-speech").await;
    let (operation, outcome, body) = (stored.operation, stored.outcome, stored.response_body);
    assert_eq!(operation.as_deref(), Some("POST /v1/speech"));
    assert_eq!(
        outcome,
        Some(
            json!({"kind": "speech_accepted", "generation_id": accepted["id"], "voice": "Narrator"})
        )
    );
    assert_eq!(body, None, "no HTTP answer stored");
    app.stop().await;
}
