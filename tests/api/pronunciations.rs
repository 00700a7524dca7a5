//! Pronunciation rules (issue 26 item 3): `GET|POST /v1/pronunciations`,
//! `DELETE /v1/pronunciations/{id}`, their refusals, and what they change in real speech, heard
//! back by Whisper: an alias rule and an inline `[word](/IPA/)` override.

use crate::common::{TestApp, assert_problem, json};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};
use voiced::domain::{Plan, Scope};

async fn rules(app: &TestApp, secret: &str) -> (u16, Value) {
    json(
        app.get("/v1/pronunciations")
            .bearer_auth(secret)
            .send()
            .await
            .unwrap(),
    )
    .await
}

async fn delete(app: &TestApp, secret: &str, id: &str) -> u16 {
    app.client
        .delete(format!("{}/v1/pronunciations/{id}", app.base))
        .bearer_auth(secret)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test]
async fn rules_are_added_listed_refused_and_deleted_per_account() {
    let app = TestApp::start().await;
    let (account, secret) = app.pro_user().await;
    let (status, alias) = app
        .post_json(
            "/v1/pronunciations",
            &secret,
            &json!({"text": " SQL ", "alias": "sequel", "language": "EN"}),
        )
        .await;
    assert_eq!(status, 201, "{alias}");
    assert!(alias["id"].as_str().unwrap().starts_with("pron_"));
    assert_eq!(alias["text"], "SQL");
    assert_eq!(alias["alias"], "sequel");
    assert_eq!(alias["language"], "en");
    assert_eq!(alias["case_sensitive"], false);
    assert!(alias.get("phonemes").is_none(), "{alias}");
    let (status, ipa) = app
        .post_json(
            "/v1/pronunciations",
            &secret,
            &json!({"text": "Kokoro", "phonemes": "ˈkoʊkəɹoʊ", "case_sensitive": true}),
        )
        .await;
    assert_eq!(status, 201, "{ipa}");
    assert_eq!(ipa["phonemes"], "ˈkoʊkəɹoʊ");
    assert_eq!(ipa["language"], Value::Null);
    assert!(ipa.get("alias").is_none(), "{ipa}");

    // A retry under the same Idempotency-Key answers the first rule and adds nothing.
    let keyed = || {
        app.post("/v1/pronunciations")
            .bearer_auth(&secret)
            .header("Idempotency-Key", "pron-retry-1")
            .json(&json!({"text": "GIF", "alias": "jif"}))
    };
    let first = keyed().send().await.unwrap();
    assert_eq!(first.status(), 201);
    let first: Value = first.json().await.unwrap();
    let again = keyed().send().await.unwrap();
    assert_eq!(again.status(), 201);
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    let again: Value = again.json().await.unwrap();
    assert_eq!(again["id"], first["id"]);
    assert_eq!(
        delete(&app, &secret, first["id"].as_str().unwrap()).await,
        204
    );

    let (status, list) = rules(&app, &secret).await;
    assert_eq!(status, 200, "{list}");
    assert_eq!(list["total"], 2);
    assert_eq!(list["data"][0]["id"], ipa["id"], "newest first");

    // Each refusal names the member at fault and stores nothing.
    for (body, param) in [
        (json!({"alias": "x"}), "text"),
        (json!({"text": "", "alias": "x"}), "text"),
        (json!({"text": "x".repeat(101), "alias": "x"}), "text"),
        (json!({"text": "a]b", "alias": "x"}), "text"),
        (json!({"text": "SQL"}), "alias"),
        (
            json!({"text": "SQL", "alias": "x", "phonemes": "ɛs"}),
            "phonemes",
        ),
        (json!({"text": "SQL", "alias": "x".repeat(201)}), "alias"),
        (json!({"text": "SQL", "phonemes": "k☃k"}), "phonemes"),
        (json!({"text": "SQL", "phonemes": "a/b"}), "phonemes"),
        (
            json!({"text": "SQL", "alias": "x", "language": "english"}),
            "language",
        ),
        (
            json!({"text": "SQL", "alias": "x", "case_sensitive": "yes"}),
            "case_sensitive",
        ),
        (json!({"text": "SQL", "alias": "x", "voice": "x"}), "voice"),
    ] {
        let (status, problem) = app.post_json("/v1/pronunciations", &secret, &body).await;
        assert_problem(&problem, 400, "invalid_request", "/v1/pronunciations");
        assert_eq!(status, 400);
        assert_eq!(problem["param"], param, "{body}: {problem}");
    }
    assert_eq!(rules(&app, &secret).await.1["total"], 2);

    // Another account neither sees nor deletes them; a read-only key cannot add one.
    let (_, other) = app.pro_user().await;
    assert_eq!(rules(&app, &other).await.1["total"], 0);
    let id = ipa["id"].as_str().unwrap();
    assert_eq!(delete(&app, &other, id).await, 404);
    let (_, reader) = app.key(&account, &[Scope::VoiceRead]).await;
    let (status, problem) = app
        .post_json(
            "/v1/pronunciations",
            &reader,
            &json!({"text": "a", "alias": "b"}),
        )
        .await;
    assert_eq!(status, 403, "{problem}");
    assert_eq!(problem["code"], "insufficient_scope");
    assert_eq!(rules(&app, &reader).await.0, 200);
    let none = app.account(Plan::None).await;
    let (_, unpaid) = app
        .key(&none, &[Scope::VoiceRead, Scope::VoiceGenerate])
        .await;
    assert_eq!(rules(&app, &unpaid).await.1["code"], "pro_plan_required");

    assert_eq!(delete(&app, &secret, id).await, 204);
    assert_eq!(delete(&app, &secret, id).await, 404);
    assert_eq!(rules(&app, &secret).await.1["total"], 1);
    app.stop().await;
}

#[tokio::test]
async fn speech_says_the_accounts_rules_and_inline_pronunciations() {
    let app = TestApp::start_with_workers(1).await;
    let (account, secret) = app.pro_user().await;
    app.voice(
        &account,
        "heart",
        voiced::domain::EngineId::Kokoro,
        "af_heart",
    )
    .await;
    let (status, rule) = app
        .post_json(
            "/v1/pronunciations",
            &secret,
            &json!({"text": "ACME", "alias": "bananas", "language": "en"}),
        )
        .await;
    assert_eq!(status, 201, "{rule}");

    // An inline override whose IPA no voice can say is refused before anything is queued;
    // brackets that are not exactly the pattern are text.
    let (status, problem) = app
        .speak(
            &secret,
            json!({"text": "A [pear](/p☃r/).", "voice_name": "heart"}),
        )
        .await;
    assert_eq!(status, 400, "{problem}");
    assert_eq!(problem["param"], "text");

    let text = "Please buy ACME and a [pear](/pˈɛɹ bənˈænə/) today.";
    let (generation, audio) = app
        .completed_audio(
            &secret,
            json!({"text": text, "voice_name": "heart", "seed": 7, "response_format": "wav"}),
        )
        .await;
    // The caller's text is kept as sent; the worker spoke it with the rules written in.
    let row = crate::common::fixtures::generation(&app, generation["id"].as_str().unwrap()).await;
    let (stored, spoken) = (row.text, row.spoken_text);
    assert_eq!(stored, text);
    assert_eq!(
        spoken.as_deref(),
        Some("Please buy bananas and a [pear](/pˈɛɹ bənˈænə/) today.")
    );
    let (status, capture) = app.transcribe(&secret, &STANDARD.encode(&audio)).await;
    assert_eq!(status, 200, "{capture}");
    let heard = capture["text"].as_str().unwrap().to_lowercase();
    println!("heard: {heard:?}");
    assert!(heard.contains("bananas"), "the alias is read: {heard:?}");
    assert!(!heard.contains("acme"), "{heard:?}");
    // "pear" written, "pair banana" spoken: without the override only the alias says banana.
    assert!(
        heard.matches("banana").count() >= 2,
        "the IPA is spoken: {heard:?}"
    );
    assert!(!heard.contains('['), "{heard:?}");
    app.stop().await;
}

/// Issue 36 item 4: rules multiply a text (a 200-character alias for a one-letter word), and
/// the text they make is bounded before anything phonemises it: 4 990 × "a" with such an alias
/// would be about a million characters; it is refused with 400 naming the text, on both speech
/// routes, and nothing is queued. A text the rules keep within the bound still speaks.
#[tokio::test]
async fn an_alias_bomb_is_refused_before_anything_reads_it() {
    let app = TestApp::start().await; // no workers: an admitted generation stays queued
    let (account, secret) = app.pro_user().await;
    app.voice(
        &account,
        "Narrator",
        voiced::domain::EngineId::Kokoro,
        "af_heart",
    )
    .await;
    let (status, rule) = app
        .post_json(
            "/v1/pronunciations",
            &secret,
            &json!({"text": "a", "alias": "alpha ".repeat(33).trim()}),
        )
        .await;
    assert_eq!(status, 201, "{rule}");
    let bomb = "a ".repeat(4990);
    let (status, problem) = app
        .speak(&secret, json!({"text": bomb, "voice_name": "Narrator"}))
        .await;
    assert_problem(&problem, 400, "invalid_request", "/v1/speech");
    assert_eq!(problem["param"], "text", "{problem}");
    assert!(
        problem["detail"].as_str().unwrap().contains("20000"),
        "{problem}"
    );
    assert_eq!(status, 400);
    let response = app
        .openai_speech(
            &secret,
            &json!({"model": "tts-1", "input": bomb, "voice": "Narrator"}),
        )
        .await;
    let (status, envelope) = json(response).await;
    assert_eq!(status, 400, "{envelope}");
    assert_eq!(envelope["error"]["param"], "input", "{envelope}");
    assert_eq!(envelope["error"]["code"], "invalid_request", "{envelope}");
    assert_eq!(app.generation_count().await, 0, "nothing was queued");
    // Ten of them stay within the bound (about 2 000 characters) and are admitted.
    let (status, accepted) = app
        .speak(
            &secret,
            json!({"text": "a ".repeat(10), "voice_name": "Narrator"}),
        )
        .await;
    assert_eq!(status, 202, "{accepted}");
    app.stop().await;
}
