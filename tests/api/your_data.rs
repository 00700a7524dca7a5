//! An account's data under its own control (issue 30 item 4): `DELETE /v1/captures/{id}` and
//! `DELETE /v1/generations/{id}/audio`, through the API, with what stays (the generation row
//! and its metering) and what goes (the transcript, the audio blob, a replayable answer).

use crate::asr;
use crate::common::{TestApp, json};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::json;
use voiced::domain::{EngineId, Scope};

async fn delete(app: &TestApp, secret: &str, path: &str) -> u16 {
    app.client
        .delete(format!("{}{path}", app.base))
        .bearer_auth(secret)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

async fn count(app: &TestApp, sql: &str, bind: &str) -> i64 {
    sqlx::query_scalar(sql)
        .bind(bind)
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_captures_transcript_is_deleted_with_its_replayable_answer() {
    let app = TestApp::start().await;
    let (account, secret) = app.pro_user().await;
    let audio =
        STANDARD.encode(std::fs::read(asr::espeak_wav("en-us", "Please forget me.")).unwrap());
    let send = || {
        app.post("/v1/transcriptions")
            .bearer_auth(&secret)
            .header("Idempotency-Key", "forget-1")
            .json(&json!({ "audio": audio }))
            .send()
    };
    let (status, first) = json(send().await.unwrap()).await;
    assert_eq!(status, 200, "{first}");
    let id = first["id"].as_str().unwrap().to_owned();
    let path = format!("/v1/captures/{id}");

    // Another account, and a key without voice:generate, cannot.
    let (_, other) = app.pro_user().await;
    assert_eq!(delete(&app, &other, &path).await, 404);
    let (_, reader) = app.key(&account, &[Scope::VoiceRead]).await;
    assert_eq!(delete(&app, &reader, &path).await, 403);

    assert_eq!(delete(&app, &secret, &path).await, 204);
    let (status, problem) = json(app.get(&path).bearer_auth(&secret).send().await.unwrap()).await;
    assert_eq!((status, problem["code"].as_str()), (404, Some("not_found")));
    assert_eq!(delete(&app, &secret, &path).await, 404);
    assert_eq!(
        count(&app, "SELECT count(*) FROM captures WHERE id = $1", &id).await,
        0
    );
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM idempotency_records WHERE outcome::text LIKE '%' || $1 || '%'",
            &id
        )
        .await,
        0,
        "no stored answer keeps the transcript"
    );
    // The same key now transcribes again: a new capture, not the deleted one's text.
    let (status, again) = json(send().await.unwrap()).await;
    assert_eq!(status, 200, "{again}");
    assert_ne!(again["id"], first["id"]);
    app.stop().await;
}

#[tokio::test]
async fn a_generations_audio_is_deleted_from_the_blob_store_and_the_row_stays() {
    let app = TestApp::start_with_workers(1).await;
    let (account, secret) = app.pro_user().await;
    app.voice(&account, "heart", EngineId::Kokoro, "af_heart")
        .await;
    let (generation, _) = app
        .completed_audio(
            &secret,
            json!({"text": "Delete this audio.", "voice_name": "heart"}),
        )
        .await;
    let id = generation["id"].as_str().unwrap().to_owned();
    let link = generation["audio_url"].as_str().unwrap().to_owned();
    let key = format!("audio/{id}");
    assert_eq!(
        count(&app, "SELECT count(*) FROM blobs WHERE key = $1", &key).await,
        1
    );
    let path = format!("/v1/generations/{id}/audio");

    let (_, other) = app.pro_user().await;
    assert_eq!(delete(&app, &other, &path).await, 404);
    assert_eq!(delete(&app, &secret, &path).await, 204);
    assert_eq!(
        count(&app, "SELECT count(*) FROM blobs WHERE key = $1", &key).await,
        0
    );
    let (status, after) = app.generation(&secret, &id).await;
    assert_eq!(status, 200);
    assert_eq!(after["status"], "completed");
    assert_eq!(after["has_audio"], false);
    assert!(after.get("audio_url").is_none(), "{after}");
    assert_eq!(after["duration_ms"], generation["duration_ms"]);
    // The link handed out before no longer reaches anything; metering is untouched.
    let response = app.download(&link).await;
    assert_eq!(response.status(), 404);
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM usage_ledger WHERE generation_id = $1",
            &id
        )
        .await,
        1
    );
    assert_eq!(
        delete(&app, &secret, &path).await,
        204,
        "deleting again is fine"
    );
    app.stop().await;

    // A generation still queued has no audio to delete yet.
    let app = TestApp::start().await;
    let (account, secret) = app.pro_user().await;
    app.voice(&account, "heart", EngineId::Kokoro, "af_heart")
        .await;
    let (status, accepted) = app
        .speak(&secret, json!({"text": "Not yet.", "voice_name": "heart"}))
        .await;
    assert_eq!(status, 202, "{accepted}");
    let queued = format!("/v1/generations/{}/audio", accepted["id"].as_str().unwrap());
    let (status, problem) = json(
        app.client
            .delete(format!("{}{queued}", app.base))
            .bearer_auth(&secret)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!((status, problem["code"].as_str()), (409, Some("conflict")));
    app.stop().await;
}
