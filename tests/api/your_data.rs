//! An account's data under its own control (issue 30 item 4): `DELETE /v1/captures/{id}` and
//! `DELETE /v1/generations/{id}/audio`, through the API, with what stays (the generation row
//! and its metering) and what goes (the transcript, the audio blob, a replayable answer); a
//! voice profile and the whole account deleted from the console.

use std::time::Duration;

use crate::asr;
use crate::common::browser::{Browser, PASSWORD};
use crate::common::fixtures;
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
        fixtures::captures(&app)
            .await
            .iter()
            .filter(|c| c.id == id)
            .count(),
        0
    );
    assert_eq!(
        fixtures::answers_mentioning(&app, &id).await,
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
    assert!(fixtures::blob_exists(&app, &key).await);
    let path = format!("/v1/generations/{id}/audio");

    let (_, other) = app.pro_user().await;
    assert_eq!(delete(&app, &other, &path).await, 404);
    assert_eq!(delete(&app, &secret, &path).await, 204);
    assert!(!fixtures::blob_exists(&app, &key).await);
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
        fixtures::ledger(&app)
            .await
            .iter()
            .filter(|row| row.generation_id == id)
            .count(),
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
    fixtures::account_id(app, email).await
}

#[tokio::test]
async fn a_voice_deleted_in_the_console_takes_its_recordings_and_cancels_its_waiting_work() {
    // No workers: the generation stays queued until the voice goes.
    let app = TestApp::start().await;
    let mut browser = Browser::new(&app);
    assert_eq!(browser.sign_up("voices@example.com").await.status, 303);
    let account = account_of(&app, "voices@example.com").await;
    fixtures::set_plan(&app, &account, Plan::Pro).await;
    let (_, secret) = app
        .key(&account, &[Scope::VoiceGenerate, Scope::VoiceRead])
        .await;
    let voice = app
        .voice(&account, "heart", EngineId::Kokoro, "af_heart")
        .await;
    // A cloned voice's recording and print, as the console's clone form leaves them.
    fixtures::make_cloned(&app, &voice).await;
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
    assert_eq!(
        fixtures::voice_recordings(&app, &voice).await,
        (0, 0),
        "samples and prints"
    );
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
    fixtures::set_plan(&app, &account, Plan::Pro).await;
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
        let (app, account) = (&app, account.clone());
        async move {
            fixtures::stored_account(app, &account)
                .await
                .purged
                .then_some(())
        }
    })
    .await;
    let key = format!("audio/{generation}");
    assert!(!fixtures::blob_exists(&app, &key).await);
    let left = fixtures::leftovers(&app, &account).await;
    assert_eq!(left.captures, 0, "captures");
    assert_eq!(left.pronunciations, 0, "pronunciations");
    assert_eq!(left.stored_answers, 0, "idempotency_records");
    let text = fixtures::generation(&app, &generation).await.text;
    assert_eq!(text, "", "what was said is gone");
    assert_eq!(left.usage_rows, 1, "the usage record stays for billing");
    let email_left = fixtures::stored_account(&app, &account).await.email;
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
    fixtures::set_plan(&app, &account, Plan::Pro).await;
    let (key_id, secret) = app
        .key(&account, &[Scope::VoiceGenerate, Scope::VoiceRead])
        .await;
    fixtures::rename_key(&app, &key_id, "my laptop").await;
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
    let lost = fixtures::LeftGeneration {
        text: "lost",
        status: "failed",
        error: Some("interrupted"),
        ..fixtures::LeftGeneration::running(&account, &voice)
    };
    let orphan = fixtures::left_generation(&app, lost, false).await;
    fixtures::put_blob(&app, &format!("audio/{orphan}"), "audio/wav", b"RIFF").await;

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
        let (app, generation, asr) = (&app, generation.clone(), app.asr.clone());
        async move {
            let started = fixtures::generation(app, &generation)
                .await
                .started_at
                .is_some();
            (started && asr.in_use() > 0).then_some(())
        }
    })
    .await;
    // An OAuth code issued to the account and not yet redeemed.
    fixtures::unredeemed_oauth_code(&app, &account).await;
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
        fixtures::leftovers(&app, &account).await.oauth_codes,
        0,
        "codes die with the account"
    );
    let late = fixtures::store_capture(&app, &account, "cap_too_late", "late").await;
    assert_eq!(
        late, None,
        "a capture finishing after the deletion is not stored"
    );
    assert!(
        !fixtures::admits_generations(&app, &account).await,
        "no generation is admitted for a deleted account"
    );
    assert!(
        !fixtures::idempotency_claim_proceeds(&app, &account, "key-after-deletion").await,
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
            fixtures::stored_account(app, &account)
                .await
                .purged
                .then_some(())
        }
    })
    .await;
    let left = fixtures::leftovers(&app, &account).await;
    for (count, what) in [
        (left.captures, "captures"),
        (left.generation_texts, "what generations said"),
        (left.audio_blobs, "audio blobs"),
        (left.voice_names, "voice names"),
        (left.key_names, "key names"),
        (left.stored_answers, "stored answers"),
        (left.oauth_codes, "OAuth codes"),
    ] {
        assert_eq!(count, 0, "{what}");
    }
    let status = fixtures::generation(&app, &generation).await.status;
    assert_eq!(status, "failed", "the running generation was cancelled");
    app.stop().await;
}
