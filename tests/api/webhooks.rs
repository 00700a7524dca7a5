//! Webhooks (issue 27 items 1 and 5) with real receivers on loopback ports, verified by the
//! `standardwebhooks` package (an implementation of the specification that is not ours): the
//! payload is the REST read's object, a failed attempt is retried with the same `webhook-id`, a
//! receiver that is down gets the event once it is back, a rotated secret signs beside the new
//! one, 410 disables the endpoint, an endpoint never sees another account's events, and a slow
//! receiver does not hold generation up.

use std::time::Duration;

use crate::common::webhooks::{Receiver, subject_of, verifier, verify_independently};
use crate::common::{SIGNING_SECRET, TestApp, json, poll_until, skip, tone_wav_base64};
use serde_json::{Value, json};
use voiced::domain::{EngineId, GenerationStatus};
use voiced::service::webhooks::{self, NewEndpoint, Sealer};
use voiced::signing::AudioSigner;

const ALL: [&str; 3] = [
    "generation.completed",
    "generation.failed",
    "capture.created",
];

fn sealer() -> Sealer {
    Sealer::new(&AudioSigner::new(SIGNING_SECRET.to_vec()))
}

/// Registers an endpoint as the console and `voiced admin webhook create` do.
async fn endpoint(app: &TestApp, account: &str, url: &str, events: &[&str]) -> (String, String) {
    let events: Vec<String> = events.iter().map(|e| e.to_string()).collect();
    let (endpoint, secret) = webhooks::create(
        &app.pool,
        &sealer(),
        true,
        account,
        NewEndpoint {
            url,
            events: &events,
            description: "test receiver",
        },
    )
    .await
    .expect("endpoint created");
    assert!(endpoint.id.starts_with("whep_"), "{}", endpoint.id);
    assert!(secret.starts_with("whsec_"), "{secret}");
    (endpoint.id, secret)
}

async fn accepted(app: &TestApp, secret: &str, text: &str) -> String {
    let (status, body) = app
        .speak(secret, json!({"text": text, "voice_name": "Narrator"}))
        .await;
    assert_eq!(status, 202, "{body}");
    body["id"].as_str().unwrap().to_owned()
}

async fn finished(app: &TestApp, id: &str) -> GenerationStatus {
    tokio::time::timeout(
        Duration::from_secs(300),
        app.completions.wait(id, Duration::from_secs(1)),
    )
    .await
    .expect("the generation finishes")
    .unwrap()
}

async fn read(app: &TestApp, secret: &str, path: &str) -> Value {
    let (status, body) = json(app.get(path).bearer_auth(secret).send().await.unwrap()).await;
    assert_eq!(status, 200, "{body}");
    body
}

/// `value` without `audio_url` (signed afresh on every read).
fn unsigned(mut value: Value) -> Value {
    value.as_object_mut().unwrap().remove("audio_url");
    value
}

async fn delivery_state(app: &TestApp, endpoint: &str, subject: &str) -> Option<(String, i32)> {
    sqlx::query_as(
        "SELECT state, attempts FROM webhook_deliveries WHERE endpoint_id = $1 AND subject_id = $2",
    )
    .bind(endpoint)
    .bind(subject)
    .fetch_optional(&app.pool)
    .await
    .unwrap()
}

#[tokio::test]
async fn deliveries_are_signed_retried_isolated_and_verified_independently() {
    let test = "webhooks::deliveries_are_signed_retried_isolated_and_verified_independently";
    let Some(python) = verifier() else {
        return skip(
            test,
            "no Python with standardwebhooks (scripts/test.sh installs it)",
        );
    };
    // Self-addressed: the delivered audio_url is fetched from this server.
    let app = TestApp::start_self_addressed_with(
        1,
        &[
            ("VOICED_WEBHOOKS_ALLOW_PRIVATE_ADDRESSES", "true"),
            ("VOICED_WEBHOOKS_RETRY_BASE_MS", "200"),
        ],
    )
    .await;
    let (alice, alice_key) = app.pro_user().await;
    let (bob, bob_key) = app.pro_user().await;
    app.voice(&alice, "Narrator", EngineId::Kokoro, "af_heart")
        .await;
    app.voice(&bob, "Narrator", EngineId::Kokoro, "af_heart")
        .await;

    // Alice's main receiver answers its first request with 500: that one is tried again.
    let main = Receiver::start().await;
    main.fail_next(1);
    let (_, main_secret) = endpoint(&app, &alice, &main.url(), &ALL).await;
    // A receiver that is down (its port refuses connections) until it comes back.
    let down = Receiver::start().await;
    let down_addr = down.addr;
    down.stop().await;
    let (down_hook, down_secret) = endpoint(
        &app,
        &alice,
        &format!("http://{down_addr}/hooks"),
        &["generation.completed"],
    )
    .await;
    // A receiver that answers 410: its endpoint is disabled.
    let gone = Receiver::start().await;
    gone.answer(410);
    let (gone_hook, _) = endpoint(&app, &alice, &gone.url(), &["generation.completed"]).await;
    // A receiver that has failed for 3 days already: its next failure disables it.
    let failing = Receiver::start().await;
    failing.answer(503);
    let (failing_hook, _) = endpoint(&app, &alice, &failing.url(), &["generation.completed"]).await;
    sqlx::query(
        "UPDATE webhook_endpoints SET failing_since = now() - interval '3 days' WHERE id = $1",
    )
    .bind(&failing_hook)
    .execute(&app.pool)
    .await
    .unwrap();
    // Bob's receiver, whose secret was rotated: both secrets sign for a day.
    let bobs = Receiver::start().await;
    let (bob_hook, bob_old) = endpoint(&app, &bob, &bobs.url(), &ALL).await;
    let bob_new = webhooks::rotate_secret(&app.pool, &sealer(), &bob, &bob_hook)
        .await
        .unwrap();
    assert_ne!(bob_old, bob_new);

    let done = accepted(&app, &alice_key, "The webhook says hello.").await;
    assert_eq!(finished(&app, &done).await, GenerationStatus::Completed);
    // The receiver that was down: tried while down, delivered once it is back.
    poll_until(
        Duration::from_secs(60),
        "an attempt at the down receiver",
        || {
            let state = delivery_state(&app, &down_hook, &done);
            async move { state.await.filter(|(_, attempts)| *attempts >= 1) }
        },
    )
    .await;
    let back = Receiver::start_on(down_addr).await;
    let late = back.wait_for("generation.completed", &done).await;
    let attempts = poll_until(
        Duration::from_secs(60),
        "the delivery to be recorded",
        || {
            let state = delivery_state(&app, &down_hook, &done);
            async move {
                state
                    .await
                    .filter(|(state, _)| state == "delivered")
                    .map(|(_, attempts)| attempts)
            }
        },
    )
    .await;
    assert!(
        attempts >= 2,
        "failed while down, then delivered: {attempts}"
    );

    let bob_done = accepted(&app, &bob_key, "Bob's own generation.").await;
    assert_eq!(finished(&app, &bob_done).await, GenerationStatus::Completed);
    let cancelled = accepted(&app, &alice_key, "This one is cancelled.").await;
    let (status, _) = json(
        app.post(&format!("/v1/generations/{cancelled}/cancel"))
            .bearer_auth(&alice_key)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(finished(&app, &cancelled).await, GenerationStatus::Failed);
    let (status, transcribed) = app.transcribe(&alice_key, &tone_wav_base64()).await;
    assert_eq!(status, 200, "{transcribed}");
    let capture = transcribed["id"].as_str().unwrap().to_owned();

    // Each event arrives, its data exactly what the API's read returns.
    let completed = main.wait_for("generation.completed", &done).await.json();
    assert_eq!(
        completed.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["data", "timestamp", "type"]
    );
    let polled = read(&app, &alice_key, &format!("/v1/generations/{done}")).await;
    assert_eq!(unsigned(completed["data"].clone()), unsigned(polled));
    let audio_url = completed["data"]["audio_url"]
        .as_str()
        .expect("a signed audio_url");
    let audio = app.client.get(audio_url).send().await.unwrap();
    assert_eq!(audio.status(), 200, "the delivered audio_url works");
    assert!(!audio.bytes().await.unwrap().is_empty());
    let failed = main.wait_for("generation.failed", &cancelled).await.json();
    assert_eq!(failed["data"]["status"], "failed");
    assert_eq!(failed["data"]["error"], "cancelled: by request");
    let created = main.wait_for("capture.created", &capture).await.json();
    let stored = read(&app, &alice_key, &format!("/v1/captures/{capture}")).await;
    assert_eq!(created["data"], stored);

    // The first request failed (500) and was tried again with the same webhook-id and event.
    let received = main.received();
    let first = &received[0];
    let again: Vec<_> = received.iter().filter(|r| r.id == first.id).collect();
    assert!(again.len() >= 2, "the 500 was retried: {received:?}");
    for retry in &again {
        assert!(retry.id.starts_with("msg_"), "{}", retry.id);
        assert_eq!(retry.json()["type"], first.json()["type"]);
        assert_eq!(subject_of(&retry.json()), subject_of(&first.json()));
    }

    // Bob's receiver gets Bob's event, signed by both of his secrets; Alice's never sees it.
    let bobs_event = bobs.wait_for("generation.completed", &bob_done).await;
    assert_eq!(
        bobs_event.signature.split(' ').count(),
        2,
        "old and new secret sign"
    );
    for r in bobs.received() {
        assert_eq!(
            subject_of(&r.json()),
            bob_done,
            "only Bob's events reach Bob"
        );
    }
    for r in main.received() {
        assert_ne!(
            subject_of(&r.json()),
            bob_done,
            "Bob's event never reaches Alice"
        );
    }

    // 410 disables the endpoint, and it shows as such.
    poll_until(
        Duration::from_secs(60),
        "the 410 endpoint to be disabled",
        || {
            let pool = app.pool.clone();
            let (alice, gone_hook) = (alice.clone(), gone_hook.clone());
            async move {
                let listed = webhooks::list(&pool, &alice).await.unwrap();
                listed
                    .iter()
                    .any(|e| e.id == gone_hook && !e.enabled)
                    .then_some(())
            }
        },
    )
    .await;
    assert_eq!(gone.received().len(), 1, "410 is not retried");
    poll_until(
        Duration::from_secs(60),
        "the failing endpoint to be disabled",
        || {
            let pool = app.pool.clone();
            let hook = failing_hook.clone();
            async move {
                sqlx::query_scalar::<_, String>(
                    "SELECT disabled_reason FROM webhook_endpoints WHERE id = $1 AND NOT enabled",
                )
                .bind(hook)
                .fetch_optional(&pool)
                .await
                .unwrap()
            }
        },
    )
    .await;
    let reason: Option<String> =
        sqlx::query_scalar("SELECT disabled_reason FROM webhook_endpoints WHERE id = $1")
            .bind(&gone_hook)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(reason.as_deref(), Some("gone"));

    // The independent verifier accepts every delivery (and refuses altered bodies).
    let mut all: Vec<(String, _)> = main
        .received()
        .into_iter()
        .map(|r| (main_secret.clone(), r))
        .collect();
    for r in bobs.received() {
        all.push((bob_old.clone(), r.clone()));
        all.push((bob_new.clone(), r));
    }
    all.push((down_secret.clone(), late));
    verify_independently(&python, &all);
    app.stop().await;
}

#[tokio::test]
async fn a_slow_receiver_does_not_hold_generation_up() {
    let app = TestApp::start_with(
        1,
        &[
            ("VOICED_WEBHOOKS_ALLOW_PRIVATE_ADDRESSES", "true"),
            // One delivery at a time: the slow receiver takes the only one.
            ("VOICED_WEBHOOKS_DELIVERIES_IN_FLIGHT", "1"),
        ],
    )
    .await;
    let (account, key) = app.pro_user().await;
    app.voice(&account, "Narrator", EngineId::Kokoro, "af_heart")
        .await;
    let slow = Receiver::start().await;
    slow.hold(Duration::from_secs(30));
    let (hook, _) = endpoint(&app, &account, &slow.url(), &["generation.completed"]).await;

    let first = accepted(&app, &key, "First.").await;
    assert_eq!(finished(&app, &first).await, GenerationStatus::Completed);
    poll_until(
        Duration::from_secs(60),
        "the receiver to hold a delivery",
        || {
            let holding = slow.holding();
            async move { (holding > 0).then_some(()) }
        },
    )
    .await;
    // While the first delivery hangs, more generations are accepted and completed.
    let second = accepted(&app, &key, "Second.").await;
    let third = accepted(&app, &key, "Third.").await;
    assert_eq!(finished(&app, &second).await, GenerationStatus::Completed);
    assert_eq!(finished(&app, &third).await, GenerationStatus::Completed);
    let (attempt_ended, third_finished): (
        Option<chrono::DateTime<chrono::Utc>>,
        chrono::DateTime<chrono::Utc>,
    ) = sqlx::query_as(
        "SELECT (SELECT last_attempt_at FROM webhook_deliveries
                     WHERE endpoint_id = $1 AND subject_id = $2),
                    (SELECT finished_at FROM generations WHERE id = $3)",
    )
    .bind(&hook)
    .bind(&first)
    .bind(&third)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert!(
        attempt_ended.is_none_or(|ended| ended > third_finished),
        "generation went on while the first delivery hung ({attempt_ended:?} vs {third_finished})"
    );
    app.stop().await;
}

fn webhook_secret_of(html: &str) -> Option<String> {
    let start = html.find("whsec_")?;
    Some(
        html[start..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '+' | '/' | '='))
            .collect(),
    )
}

/// The console's Webhooks page: register (secret shown once), a refused form registers
/// nothing, recent deliveries with "send again", rotate, delete, and another account's
/// endpoints and deliveries are out of reach.
#[tokio::test]
async fn the_console_manages_endpoints_and_their_deliveries() {
    use crate::common::browser::Browser;
    let app = TestApp::start_with(0, &[("VOICED_WEBHOOKS_ALLOW_PRIVATE_ADDRESSES", "true")]).await;
    let mut browser = Browser::new(&app);
    assert_eq!(browser.sign_up("hooks@example.com").await.status, 303);
    let account = voiced::store::accounts::find_id(&app.pool, "hooks@example.com")
        .await
        .unwrap()
        .unwrap();
    let page = browser
        .submit(
            "/console/webhooks",
            "/console/webhooks",
            &[
                ("url", "ftp://hooks.example.com/x"),
                ("generation.completed", "on"),
            ],
        )
        .await;
    assert_eq!(page.status, 400, "{}", page.body);
    assert!(page.body.contains("https URL"), "{}", page.body);
    assert!(
        webhooks::list(&app.pool, &account)
            .await
            .unwrap()
            .is_empty()
    );

    let page = browser
        .submit(
            "/console/webhooks",
            "/console/webhooks",
            &[
                ("url", "http://127.0.0.1:9/hooks"),
                ("capture.created", "on"),
                ("description", "Transcripts"),
            ],
        )
        .await;
    assert_eq!(page.status, 303, "{}", page.body);
    let page = browser.get("/console/webhooks").await;
    let first_secret = webhook_secret_of(&page.body).expect("the secret, shown once");
    assert!(page.body.contains("Transcripts"));
    let again = browser.get("/console/webhooks").await;
    assert!(webhook_secret_of(&again.body).is_none(), "shown only once");
    let listed = webhooks::list(&app.pool, &account).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].events, ["capture.created"]);
    let endpoint = listed[0].id.clone();

    // An event in the outbox shows as a delivery that can be sent again.
    let mut tx = app.pool.begin().await.unwrap();
    voiced::store::webhooks::account_event(&mut tx, &account, "capture.created", "cap_test")
        .await
        .unwrap();
    tx.commit().await.unwrap();
    sqlx::query("UPDATE webhook_deliveries SET state = 'failed', attempts = 9, last_status = 500")
        .execute(&app.pool)
        .await
        .unwrap();
    let delivery: String = sqlx::query_scalar("SELECT id FROM webhook_deliveries")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let page = browser.get("/console/webhooks").await;
    for shown in [
        "capture.created",
        "cap_test",
        "500",
        "Send again",
        &delivery,
    ] {
        assert!(page.body.contains(shown), "{shown}: {}", page.body);
    }

    // Another account reaches none of it.
    let mut intruder = Browser::new(&app);
    assert_eq!(intruder.sign_up("mallory@example.com").await.status, 303);
    for action in [
        format!("/console/webhooks/{endpoint}/rotate"),
        format!("/console/webhooks/{endpoint}/delete"),
        format!("/console/webhooks/deliveries/{delivery}/resend"),
    ] {
        let page = intruder.submit("/console/webhooks", &action, &[]).await;
        assert_eq!(page.status, 404, "{action}");
    }
    assert!(
        !intruder
            .get("/console/webhooks")
            .await
            .body
            .contains(&endpoint)
    );

    let resend = format!("/console/webhooks/deliveries/{delivery}/resend");
    assert_eq!(
        browser
            .submit("/console/webhooks", &resend, &[])
            .await
            .status,
        303
    );
    let state: String = sqlx::query_scalar("SELECT state FROM webhook_deliveries")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(state, "pending", "due again, same webhook-id");

    let rotate = format!("/console/webhooks/{endpoint}/rotate");
    assert_eq!(
        browser
            .submit("/console/webhooks", &rotate, &[])
            .await
            .status,
        303
    );
    let page = browser.get("/console/webhooks").await;
    let rotated = webhook_secret_of(&page.body).expect("the new secret, shown once");
    assert_ne!(rotated, first_secret);

    // At most 10 endpoints per account: the 11th is refused and registers nothing.
    for n in 1..10 {
        let url = format!("https://hooks{n}.example.com/x");
        let page = browser
            .submit(
                "/console/webhooks",
                "/console/webhooks",
                &[("url", &url), ("generation.failed", "on")],
            )
            .await;
        assert_eq!(page.status, 303, "{n}: {}", page.body);
    }
    let page = browser
        .submit(
            "/console/webhooks",
            "/console/webhooks",
            &[
                ("url", "https://one-too-many.example.com/x"),
                ("generation.failed", "on"),
            ],
        )
        .await;
    assert_eq!(page.status, 400);
    assert!(page.body.contains("at most 10"), "{}", page.body);
    assert_eq!(webhooks::list(&app.pool, &account).await.unwrap().len(), 10);

    let delete = format!("/console/webhooks/{endpoint}/delete");
    assert_eq!(
        browser
            .submit("/console/webhooks", &delete, &[])
            .await
            .status,
        303
    );
    let left = webhooks::list(&app.pool, &account).await.unwrap();
    assert_eq!(left.len(), 9);
    assert!(left.iter().all(|e| e.id != endpoint));

    // Finished deliveries older than 30 days are deleted; pending ones stay.
    let mut tx = app.pool.begin().await.unwrap();
    voiced::store::webhooks::account_event(&mut tx, &account, "generation.failed", "gen_old")
        .await
        .unwrap();
    tx.commit().await.unwrap();
    sqlx::query(
        "UPDATE webhook_deliveries SET created_at = now() - interval '31 days',
                state = CASE WHEN endpoint_id = $1 THEN 'pending' ELSE 'delivered' END",
    )
    .bind(&left[0].id)
    .execute(&app.pool)
    .await
    .unwrap();
    let purged = voiced::store::webhooks::purge(&app.pool, webhooks::KEEP_DAYS)
        .await
        .unwrap();
    assert_eq!(purged, 8);
    let kept: Vec<String> = sqlx::query_scalar("SELECT state FROM webhook_deliveries")
        .fetch_all(&app.pool)
        .await
        .unwrap();
    assert_eq!(kept, ["pending"]);
    app.stop().await;
}
