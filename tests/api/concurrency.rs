//! Concurrency (issue 9, item 2): one Idempotency-Key raced 50 times, the rate limiter's exact
//! quota under concurrency, and revocation while requests are in flight.

use std::time::Duration;

use crate::common::fixtures;
use crate::common::{TestApp, json, poll_until};
use futures_util::StreamExt;
use serde_json::json;
use voiced::domain::{EngineId, Scope};

#[tokio::test]
async fn fifty_identical_requests_with_one_key_generate_once() {
    let app = TestApp::start().await;
    let (account, secret) = app.pro_user().await;
    app.voice(&account, "Narrator", EngineId::Kokoro, "jf_alpha")
        .await;
    let body = json!({"text": "Once, whatever the race.", "voice_name": "Narrator"});
    let answers = futures_util::future::join_all((0..50).map(|_| async {
        let response = app
            .post("/v1/speech")
            .bearer_auth(&secret)
            .header("Idempotency-Key", "race-1")
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        (status, response.bytes().await.unwrap())
    }))
    .await;
    let originals: Vec<_> = answers.iter().filter(|(s, _)| *s == 202).collect();
    assert!(!originals.is_empty());
    for (status, bytes) in &answers {
        match status {
            202 => assert_eq!(bytes, &originals[0].1, "byte for byte"),
            409 => {
                let body: serde_json::Value = serde_json::from_slice(bytes).unwrap();
                assert_eq!(body["code"], "idempotency_key_in_use", "{body}");
            }
            other => panic!("unexpected {other}: {}", String::from_utf8_lossy(bytes)),
        }
    }
    let generations = fixtures::generations_of(&app, &account).await.len();
    assert_eq!(generations, 1);
    app.stop().await;
}

#[tokio::test]
async fn fifty_different_requests_with_one_key_admit_one() {
    let app = TestApp::start().await;
    let (account, secret) = app.pro_user().await;
    app.voice(&account, "Narrator", EngineId::Kokoro, "jf_alpha")
        .await;
    let answers = futures_util::future::join_all((0..50).map(|n| {
        let request = app
            .post("/v1/speech")
            .bearer_auth(&secret)
            .header("Idempotency-Key", "race-2")
            .json(&json!({"text": format!("Variant {n}."), "voice_name": "Narrator"}))
            .send();
        async move { json(request.await.unwrap()).await }
    }))
    .await;
    let accepted = answers.iter().filter(|(s, _)| *s == 202).count();
    assert_eq!(accepted, 1, "exactly one body wins the key");
    for (status, body) in answers.iter().filter(|(s, _)| *s != 202) {
        match status {
            409 => assert_eq!(body["code"], "idempotency_key_in_use", "{body}"),
            422 => assert_eq!(body["code"], "idempotency_key_reused", "{body}"),
            other => panic!("unexpected {other}: {body}"),
        }
    }
    let generations = fixtures::generations_of(&app, &account).await.len();
    assert_eq!(generations, 1);
    app.stop().await;
}

#[tokio::test]
async fn the_rate_limiter_admits_exactly_the_quota_under_concurrency() {
    // The test server's limiter clock stands still: no refill, so the count is exact.
    let app = TestApp::start().await;
    let (_, secret) = app.pro_user().await;
    let statuses: Vec<u16> = futures_util::stream::iter(0..350)
        .map(|_| {
            let request = app.get("/v1/voices").bearer_auth(&secret).send();
            async move { request.await.unwrap().status().as_u16() }
        })
        .buffer_unordered(100)
        .collect()
        .await;
    let ok = statuses.iter().filter(|s| **s == 200).count();
    let limited = statuses.iter().filter(|s| **s == 429).count();
    assert_eq!((ok, limited), (300, 50), "the read-burst quota, exactly");
    app.stop().await;
}

#[tokio::test]
async fn a_revoked_key_is_refused_on_its_next_request_while_others_are_in_flight() {
    let app = TestApp::start().await; // no workers: synchronous requests wait in flight
    let (account, _) = app.pro_user().await;
    app.voice(&account, "Narrator", EngineId::Kokoro, "jf_alpha")
        .await;
    let (key_id, secret) = app.key(&account, &Scope::ALL).await;
    let in_flight: Vec<_> = (0..20)
        .map(|n| {
            let request = app
                .post("/v1/audio/speech")
                .bearer_auth(&secret)
                .json(&json!({"model": "tts-1", "input": format!("In flight {n}."), "voice": "Narrator"}))
                .send();
            tokio::spawn(request)
        })
        .collect();
    poll_until(Duration::from_secs(60), "20 requests in flight", || {
        let app = &app;
        let key_id = key_id.clone();
        async move {
            let n = fixtures::all_generations(app)
                .await
                .iter()
                .filter(|g| g.api_key_id.as_deref() == Some(key_id.as_str()))
                .count();
            (n == 20).then_some(())
        }
    })
    .await;
    fixtures::revoke_key(&app, &key_id).await;
    let (status, body) = json(
        app.get("/v1/voices")
            .bearer_auth(&secret)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 401, "{body}");
    assert_eq!(body["code"], "invalid_api_key");
    for request in in_flight {
        request.abort();
    }
    app.stop().await;
}
