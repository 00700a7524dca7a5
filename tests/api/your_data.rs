//! An account's data under its own control (issue 30 item 4): `DELETE /v1/captures/{id}` and
//! `DELETE /v1/generations/{id}/audio`, through the API, with what stays (the generation row
//! and its metering) and what goes (the transcript, the audio blob, a replayable answer); a
//! voice profile and the whole account deleted from the console.

use std::time::Duration;

use crate::asr;
use crate::common::browser::{Browser, PASSWORD};
use crate::common::{TestApp, json, poll_until};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::json;
use voiced::domain::{EngineId, Plan, Scope};

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

async fn account_of(app: &TestApp, email: &str) -> String {
    voiced::store::accounts::find_id(&app.pool, email)
        .await
        .unwrap()
        .expect("account exists")
}

#[tokio::test]
async fn a_voice_deleted_in_the_console_takes_its_recordings_and_cancels_its_waiting_work() {
    // No workers: the generation stays queued until the voice goes.
    let app = TestApp::start().await;
    let mut browser = Browser::new(&app);
    assert_eq!(browser.sign_up("voices@example.com").await.status, 303);
    let account = account_of(&app, "voices@example.com").await;
    voiced::store::accounts::set_plan(&app.pool, &account, Plan::Pro)
        .await
        .unwrap();
    let (_, secret) = app
        .key(&account, &[Scope::VoiceGenerate, Scope::VoiceRead])
        .await;
    let voice = app
        .voice(&account, "heart", EngineId::Kokoro, "af_heart")
        .await;
    // A cloned voice's recording and print, as the console's clone form leaves them.
    sqlx::query("UPDATE voice_profiles SET voice_type = 'cloned', preset = NULL, sample_count = 1 WHERE id = $1")
        .bind(&voice)
        .execute(&app.pool)
        .await
        .unwrap();
    sqlx::query("INSERT INTO voice_samples (voice_id, ordinal, audio, duration_ms) VALUES ($1, 0, '\\x00', 5000)")
        .bind(&voice)
        .execute(&app.pool)
        .await
        .unwrap();
    sqlx::query(
        "INSERT INTO voice_prints (voice_id, engine, print) VALUES ($1, 'kokoro', '\\x01')",
    )
    .bind(&voice)
    .execute(&app.pool)
    .await
    .unwrap();
    let (status, queued) = app
        .speak(
            &secret,
            json!({"text": "Never spoken.", "voice_name": "heart"}),
        )
        .await;
    assert_eq!(status, 202, "{queued}");
    let queued = queued["id"].as_str().unwrap().to_owned();

    // Another account cannot delete it: the not-found page, nothing changed.
    let mut stranger = Browser::new(&app);
    assert_eq!(stranger.sign_up("stranger@example.com").await.status, 303);
    let refused = stranger
        .submit(
            "/console/voices",
            &format!("/console/voices/{voice}/delete"),
            &[],
        )
        .await;
    assert_eq!(refused.status, 404, "{}", refused.body);

    let deleted = browser
        .submit(
            "/console/voices",
            &format!("/console/voices/{voice}/delete"),
            &[],
        )
        .await;
    assert_eq!(deleted.status, 303, "{}", deleted.body);
    let page = browser.get("/console/voices").await;
    assert!(
        !page
            .body
            .contains(&format!("/console/voices/{voice}/delete")),
        "{}",
        page.body
    );
    for table in ["voice_samples", "voice_prints"] {
        let sql = format!("SELECT count(*) FROM {table} WHERE voice_id = $1");
        assert_eq!(count(&app, &sql, &voice).await, 0, "{table}");
    }
    // The API no longer knows it, and its waiting generation failed, uncharged.
    let (_, voices) = json(
        app.get("/v1/voices")
            .bearer_auth(&secret)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert!(!voices.to_string().contains(&voice), "{voices}");
    let (status, generation) = app.generation(&secret, &queued).await;
    assert_eq!(status, 200);
    assert_eq!(generation["status"], "failed", "{generation}");
    assert_eq!(generation["error"], "cancelled: the voice was deleted");
    let (status, problem) = app
        .speak(&secret, json!({"text": "Gone?", "voice_name": "heart"}))
        .await;
    assert_eq!(
        (status, problem["param"].as_str()),
        (400, Some("voice_name")),
        "{problem}"
    );
    // Deleting it again is not found; its name is free for a new voice.
    let again = browser
        .submit(
            "/console/voices",
            &format!("/console/voices/{voice}/delete"),
            &[],
        )
        .await;
    assert_eq!(again.status, 404);
    app.voice(&account, "heart", EngineId::Kokoro, "af_bella")
        .await;
    app.stop().await;
}

#[tokio::test]
async fn a_deleted_account_is_locked_out_at_once_and_purged_in_the_background() {
    let app = TestApp::start_with_workers(1).await;
    let email = "leaving@example.com";
    let mut browser = Browser::new(&app);
    assert_eq!(browser.sign_up(email).await.status, 303);
    let account = account_of(&app, email).await;
    voiced::store::accounts::set_plan(&app.pool, &account, Plan::Pro)
        .await
        .unwrap();
    let (_, secret) = app
        .key(&account, &[Scope::VoiceGenerate, Scope::VoiceRead])
        .await;
    app.voice(&account, "heart", EngineId::Kokoro, "af_heart")
        .await;
    let (generation, _) = app
        .completed_audio(
            &secret,
            json!({"text": "Remember me not.", "voice_name": "heart"}),
        )
        .await;
    let generation = generation["id"].as_str().unwrap().to_owned();
    let audio =
        STANDARD.encode(std::fs::read(asr::espeak_wav("en-us", "A private note.")).unwrap());
    let (status, capture) = json(
        app.post("/v1/transcriptions")
            .bearer_auth(&secret)
            .json(&json!({ "audio": audio }))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{capture}");
    let (status, rule) = json(
        app.post("/v1/pronunciations")
            .bearer_auth(&secret)
            .json(&json!({"text": "ACME", "alias": "acme"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 201, "{rule}");

    // A wrong password, or no confirmation, deletes nothing.
    let wrong = browser
        .submit(
            "/console/account",
            "/console/account/delete",
            &[("password", "not the password"), ("confirm", "yes")],
        )
        .await;
    assert_eq!(wrong.status, 400, "{}", wrong.body);
    assert!(wrong.body.contains("nothing was deleted"), "{}", wrong.body);
    let unconfirmed = browser
        .submit(
            "/console/account",
            "/console/account/delete",
            &[("password", PASSWORD)],
        )
        .await;
    assert_eq!(unconfirmed.status, 400, "{}", unconfirmed.body);
    let (status, _) = app.generation(&secret, &generation).await;
    assert_eq!(status, 200, "the key still works");

    let deleted = browser
        .submit(
            "/console/account",
            "/console/account/delete",
            &[("password", PASSWORD), ("confirm", "yes")],
        )
        .await;
    assert_eq!(deleted.status, 303, "{}", deleted.body);
    assert_eq!(
        deleted.location.as_deref(),
        Some("/console/sign-in?deleted=1")
    );
    // At once: the key is refused, the session is gone, the email is free.
    let (status, problem) = app.generation(&secret, &generation).await;
    assert_eq!(
        (status, problem["code"].as_str()),
        (401, Some("invalid_api_key"))
    );
    let page = browser.get("/console/keys").await;
    assert_eq!(page.status, 303, "signed out");
    let mut again = Browser::new(&app);
    assert_eq!(
        again.sign_in(email, PASSWORD).await.status,
        401,
        "the old password signs nothing in"
    );
    assert_eq!(
        again.sign_up(email).await.status,
        303,
        "the email signs up again"
    );
    let fresh = account_of(&app, email).await;
    assert_ne!(fresh, account);

    // In the background (every minute in `voiced serve`; called here to not wait): the audio
    // leaves the blob store, the content leaves the rows, the metering stays.
    voiced::service::deletion::purge_deleted_accounts(&app.core)
        .await
        .unwrap();
    poll_until(Duration::from_secs(30), "the account to be purged", || {
        let pool = app.pool.clone();
        let account = account.clone();
        async move {
            sqlx::query_scalar::<_, bool>(
                "SELECT purged_at IS NOT NULL FROM accounts WHERE id = $1",
            )
            .bind(account)
            .fetch_one(&pool)
            .await
            .unwrap()
            .then_some(())
        }
    })
    .await;
    let key = format!("audio/{generation}");
    assert_eq!(
        count(&app, "SELECT count(*) FROM blobs WHERE key = $1", &key).await,
        0
    );
    for (table, column) in [
        ("captures", "account_id"),
        ("pronunciations", "account_id"),
        ("idempotency_records", "account_id"),
    ] {
        let sql = format!("SELECT count(*) FROM {table} WHERE {column} = $1");
        assert_eq!(count(&app, &sql, &account).await, 0, "{table}");
    }
    let text: String = sqlx::query_scalar("SELECT text FROM generations WHERE id = $1")
        .bind(&generation)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(text, "", "what was said is gone");
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM usage_ledger WHERE account_id = $1",
            &account
        )
        .await,
        1,
        "the usage record stays for billing"
    );
    let email_left: String = sqlx::query_scalar("SELECT email FROM accounts WHERE id = $1")
        .bind(&account)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(email_left, format!("{account}@deleted.invalid"));
    app.stop().await;
}

/// Issue 36 item 7: an account deleted while its transcription and its generation run keeps
/// nothing: the capture that finishes after the deletion is refused under the account's lock,
/// the generation is cancelled, and the purge removes every blob a generation of the account
/// could have written (one a worker stored and never recorded, as after a lost lease,
/// included), its rows' content and its names.
#[tokio::test]
async fn an_account_deleted_mid_work_keeps_nothing_after_the_purge() {
    let app = TestApp::start_with_workers(1).await;
    let email = "midway@example.com";
    let mut browser = Browser::new(&app);
    assert_eq!(browser.sign_up(email).await.status, 303);
    let account = account_of(&app, email).await;
    voiced::store::accounts::set_plan(&app.pool, &account, Plan::Pro)
        .await
        .unwrap();
    let (key_id, secret) = app
        .key(&account, &[Scope::VoiceGenerate, Scope::VoiceRead])
        .await;
    sqlx::query("UPDATE api_keys SET name = 'my laptop' WHERE id = $1")
        .bind(&key_id)
        .execute(&app.pool)
        .await
        .unwrap();
    let voice = app
        .voice(&account, "Private name", EngineId::Kokoro, "af_heart")
        .await;
    let long = "This sentence belongs to an account that is about to leave. ".repeat(12);
    let (status, accepted) = app
        .speak(&secret, json!({"text": long, "voice_name": "Private name"}))
        .await;
    assert_eq!(status, 202, "{accepted}");
    let generation = accepted["id"].as_str().unwrap().to_owned();
    // A blob under the key a worker writes, never recorded on its row (a lost lease).
    let orphan = "gen_orphan_of_midway";
    sqlx::query(
        "INSERT INTO generations (id, account_id, voice_id, engine, text, seed, format, status, error, finished_at)
         VALUES ($1, $2, $3, 'kokoro', 'lost', 1, 'wav', 'failed', 'interrupted', now())",
    )
    .bind(orphan)
    .bind(&account)
    .bind(&voice)
    .execute(&app.pool)
    .await
    .unwrap();
    sqlx::query("INSERT INTO blobs (key, content_type, bytes) VALUES ($1, 'audio/wav', 'RIFF')")
        .bind(format!("audio/{orphan}"))
        .execute(&app.pool)
        .await
        .unwrap();

    // A transcription in flight beside the running generation.
    let clip = STANDARD.encode(
        std::fs::read(asr::espeak_wav(
            "en-us",
            &"Whatever is said here must not outlive the account. ".repeat(6),
        ))
        .unwrap(),
    );
    let request = app
        .post("/v1/transcriptions")
        .bearer_auth(&secret)
        .json(&json!({ "audio": clip }))
        .send();
    let transcription = tokio::spawn(request);
    poll_until(Duration::from_secs(120), "both to be under way", || {
        let (pool, generation, asr) = (app.pool.clone(), generation.clone(), app.asr.clone());
        async move {
            let started: bool =
                sqlx::query_scalar("SELECT started_at IS NOT NULL FROM generations WHERE id = $1")
                    .bind(&generation)
                    .fetch_one(&pool)
                    .await
                    .unwrap();
            (started && asr.in_use() > 0).then_some(())
        }
    })
    .await;
    // An OAuth code issued to the account and not yet redeemed.
    sqlx::query(
        "INSERT INTO oauth_codes (code_sha256, account_id, client_id, client_name, redirect_uri,
                                  code_challenge, scopes, resources, expires_at)
         VALUES ('\\x01', $1, 'client', 'An app', 'https://app.example/cb', 'x',
                 '{voice:read}', '{}', now() + interval '1 minute')",
    )
    .bind(&account)
    .execute(&app.pool)
    .await
    .unwrap();
    let deleted = browser
        .submit(
            "/console/account",
            "/console/account/delete",
            &[("password", PASSWORD), ("confirm", "yes")],
        )
        .await;
    assert_eq!(deleted.status, 303, "{}", deleted.body);
    // At once, before any purge: its codes are gone, and nothing new is written for it, under
    // the account's lock (a capture, a queued generation, an idempotency claim).
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM oauth_codes WHERE account_id = $1",
            &account
        )
        .await,
        0,
        "codes die with the account"
    );
    let late = voiced::store::captures::insert(
        &app.pool,
        voiced::store::captures::NewCapture {
            id: "cap_too_late",
            account_id: &account,
            api_key_id: None,
            source: "api",
            language: "en",
            duration_ms: 1000,
            transcript_raw: "late",
            transcript_refined: "late",
            task: "transcribe",
            timestamps: "none",
            segments: None,
            words: None,
        },
    )
    .await
    .unwrap();
    assert_eq!(
        late, None,
        "a capture finishing after the deletion is not stored"
    );
    let mut tx = app.pool.begin().await.unwrap();
    let month = voiced::store::usage::month_of(chrono::Utc::now());
    let load = voiced::store::usage::lock_for_admission(&mut tx, &account, None, month)
        .await
        .unwrap();
    assert!(
        load.is_none(),
        "no generation is admitted for a deleted account"
    );
    drop(tx);
    let claim = voiced::store::idempotency::begin(
        &app.pool,
        &account,
        "key-after-deletion",
        b"request",
        Duration::from_secs(60),
    )
    .await
    .unwrap();
    assert!(
        !matches!(claim, voiced::store::idempotency::Begin::Proceed),
        "no idempotency claim for a deleted account"
    );
    let answered = transcription.await.unwrap().unwrap().status().as_u16();
    assert!(
        matches!(answered, 200 | 401),
        "finished before the deletion, or refused: {answered}"
    );

    poll_until(Duration::from_secs(120), "the account to be purged", || {
        let (app, account) = (&app, account.clone());
        async move {
            voiced::service::deletion::purge_deleted_accounts(&app.core)
                .await
                .unwrap();
            sqlx::query_scalar::<_, bool>(
                "SELECT purged_at IS NOT NULL FROM accounts WHERE id = $1",
            )
            .bind(account)
            .fetch_one(&app.pool)
            .await
            .unwrap()
            .then_some(())
        }
    })
    .await;
    for (sql, what) in [
        (
            "SELECT count(*) FROM captures WHERE account_id = $1",
            "captures",
        ),
        (
            "SELECT count(*) FROM generations WHERE account_id = $1 AND text <> ''",
            "what generations said",
        ),
        (
            "SELECT count(*) FROM blobs b JOIN generations g ON b.key = 'audio/' || g.id
             WHERE g.account_id = $1",
            "audio blobs",
        ),
        (
            "SELECT count(*) FROM voice_profiles WHERE account_id = $1 AND name <> id",
            "voice names",
        ),
        (
            "SELECT count(*) FROM api_keys WHERE account_id = $1 AND name <> ''",
            "key names",
        ),
        (
            "SELECT count(*) FROM idempotency_records WHERE account_id = $1",
            "stored answers",
        ),
        (
            "SELECT count(*) FROM oauth_codes WHERE account_id = $1",
            "OAuth codes",
        ),
    ] {
        assert_eq!(count(&app, sql, &account).await, 0, "{what}");
    }
    let status: String = sqlx::query_scalar("SELECT status FROM generations WHERE id = $1")
        .bind(&generation)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(status, "failed", "the running generation was cancelled");
    app.stop().await;
}
