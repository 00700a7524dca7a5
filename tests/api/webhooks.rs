//! Webhooks (issue 27 items 1 and 5) with real receivers on loopback ports, verified by the
//! `standardwebhooks` package (an implementation of the specification that is not ours): the
//! payload is the REST read's object, a failed attempt is retried with the same `webhook-id`, a
//! receiver that is down gets the event once it is back, a rotated secret signs beside the new
//! one, 410 disables the endpoint, an endpoint never sees another account's events, and a slow
//! receiver does not hold generation up.

use std::time::Duration;
use voiced::http::error::HttpStatus;

use crate::common::fixtures::{self, LeftGeneration, delivery_loop};
use crate::common::webhooks::{Receiver, Tarpit, subject_of, verifier, verify_independently};
use crate::common::{TestApp, json, poll_until, skip, tone_wav_base64};
use serde_json::{Value, json};
use voiced::domain::{EngineId, GenerationStatus};
use voiced::service::webhooks::{self, NewEndpoint};

const ALL: [&str; 3] = [
    "generation.completed",
    "generation.failed",
    "capture.created",
];

/// Registers an endpoint as the console and `voiced admin webhook create` do.
async fn endpoint(app: &TestApp, account: &str, url: &str, events: &[&str]) -> (String, String) {
    let events: Vec<String> = events.iter().map(|e| e.to_string()).collect();
    let (endpoint, secret) = fixtures::create_endpoint(
        app,
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
        app.completion(id, Duration::from_secs(1)),
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
    fixtures::delivery(app, endpoint, subject)
        .await
        .map(|d| (d.state, d.attempts))
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
    fixtures::failing_since(&app, &failing_hook, 3).await;
    // Bob's receiver, whose secret was rotated: both secrets sign for a day.
    let bobs = Receiver::start().await;
    let (bob_hook, bob_old) = endpoint(&app, &bob, &bobs.url(), &ALL).await;
    let bob_new = fixtures::rotate_secret(&app, &bob, &bob_hook).await;
    assert_ne!(bob_old, bob_new);

    let done = accepted(&app, &alice_key, "The webhook says hello.").await;
    assert_eq!(finished(&app, &done).await, GenerationStatus::Completed);
    // The receiver that was down: tried while down (an attempt that failed, not one still
    // connecting: the claim counts it before it is sent), delivered once it is back.
    poll_until(
        Duration::from_secs(60),
        "a failed attempt at the down receiver",
        || {
            let (app, hook, done) = (&app, down_hook.clone(), done.clone());
            async move {
                fixtures::delivery(app, &hook, &done)
                    .await
                    .filter(|d| d.last_error.is_some() || d.last_status.is_some())
                    .map(|_| ())
            }
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
            let app = &app;
            let (alice, gone_hook) = (alice.clone(), gone_hook.clone());
            async move {
                let listed = fixtures::endpoints_of(app, &alice).await;
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
            let app = &app;
            let hook = failing_hook.clone();
            async move {
                let stored = fixtures::endpoint(app, &hook).await;
                stored.disabled_reason.filter(|_| !stored.enabled)
            }
        },
    )
    .await;
    let reason = fixtures::endpoint(&app, &gone_hook).await.disabled_reason;
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
    let attempt_ended = fixtures::delivery(&app, &hook, &first)
        .await
        .and_then(|d| d.last_attempt_at);
    let third_finished = fixtures::generation(&app, &third)
        .await
        .finished_at
        .expect("the third finished");
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
    let account = fixtures::account_id(&app, "hooks@example.com").await;
    // Without a plan (sign-up's default here): refused, nothing registered.
    let page = browser
        .submit(
            "/console/webhooks",
            "/console/webhooks",
            &[
                ("url", "http://127.0.0.1:9/hooks"),
                ("generation.completed", "on"),
            ],
        )
        .await;
    assert_eq!(page.status, 403, "{}", page.body);
    assert!(page.body.contains("paid plan"), "{}", page.body);
    assert!(fixtures::endpoints_of(&app, &account).await.is_empty());
    assert!(fixtures::set_plan(&app, &account, voiced::domain::Plan::Pro).await);
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
    assert!(fixtures::endpoints_of(&app, &account).await.is_empty());

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
    let listed = fixtures::endpoints_of(&app, &account).await;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].events, ["capture.created"]);
    let endpoint = listed[0].id.clone();

    // An event in the outbox shows as a delivery that can be sent again.
    fixtures::account_event(&app, &account, "capture.created", "cap_test").await;
    fixtures::give_up_deliveries(&app, None).await;
    let [stored] = &fixtures::deliveries(&app).await[..] else {
        panic!("one delivery")
    };
    let delivery = stored.id.clone();
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
    let states: Vec<String> = fixtures::deliveries(&app)
        .await
        .into_iter()
        .map(|d| d.state)
        .collect();
    assert_eq!(states, ["pending"], "due again, same webhook-id");

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
    assert_eq!(fixtures::endpoints_of(&app, &account).await.len(), 10);

    let delete = format!("/console/webhooks/{endpoint}/delete");
    assert_eq!(
        browser
            .submit("/console/webhooks", &delete, &[])
            .await
            .status,
        303
    );
    let left = fixtures::endpoints_of(&app, &account).await;
    assert_eq!(left.len(), 9);
    assert!(left.iter().all(|e| e.id != endpoint));

    // Finished deliveries older than 30 days are deleted; pending ones stay.
    fixtures::account_event(&app, &account, "generation.failed", "gen_old").await;
    fixtures::month_old_deliveries(&app, &left[0].id).await;
    let purged = fixtures::purge_old_deliveries(&app).await;
    assert_eq!(purged, 8);
    let kept: Vec<String> = fixtures::deliveries(&app)
        .await
        .into_iter()
        .map(|d| d.state)
        .collect();
    assert_eq!(kept, ["pending"]);
    app.stop().await;
}

// Issue 36 item 6: webhooks are fair and bounded.

/// A failed generation of `account` (on `voice`) and its `generation.failed` event, recorded
/// as the cancellation path records it: a subject the delivery loop can read.
async fn failed_generation_event(app: &TestApp, account: &str, voice: &str) -> String {
    let cancelled = LeftGeneration {
        text: "cancelled",
        status: "failed",
        error: Some("cancelled: by request"),
        ..LeftGeneration::running(account, voice)
    };
    fixtures::left_generation(app, cancelled, true).await
}

/// Deliveries of `account` held by a sender now, per endpoint.
async fn held(app: &TestApp, account: &str) -> Vec<(String, i64)> {
    let mut held: std::collections::BTreeMap<String, i64> = Default::default();
    for d in fixtures::deliveries(app).await {
        if d.account_id == account && d.state == "pending" && d.held {
            *held.entry(d.endpoint_id).or_default() += 1;
        }
    }
    held.into_iter().collect()
}

/// The review's case: an account whose endpoints are tarpits (accept, never answer) with a
/// backlog older than everyone else's. It gets at most 2 attempts in flight per endpoint and 4
/// for the account, so another tenant's delivery arrives while every one of the tarpit's
/// attempts is still outstanding (none has run into its 10 s limit yet). Before, the tarpit's
/// backlog took every slot and the healthy delivery waited behind it.
#[tokio::test]
async fn a_tarpit_account_does_not_starve_another_tenants_deliveries() {
    let app = TestApp::start_with(0, &[("VOICED_WEBHOOKS_ALLOW_PRIVATE_ADDRESSES", "true")]).await;
    let (slow_account, _) = app.pro_user().await;
    let (healthy_account, _) = app.pro_user().await;
    let slow_voice = app
        .voice(&slow_account, "Narrator", EngineId::Kokoro, "af_heart")
        .await;
    let healthy_voice = app
        .voice(&healthy_account, "Narrator", EngineId::Kokoro, "af_heart")
        .await;
    let tarpit = Tarpit::start().await;
    for n in 0..3 {
        endpoint(&app, &slow_account, &tarpit.url(n), &["generation.failed"]).await;
    }
    // The backlog: 20 events, 60 deliveries, all older than the healthy tenant's.
    for _ in 0..20 {
        failed_generation_event(&app, &slow_account, &slow_voice).await;
    }
    let healthy = Receiver::start().await;
    endpoint(
        &app,
        &healthy_account,
        &healthy.url(),
        &["generation.failed"],
    )
    .await;

    // Eight slots: twice what one account may hold.
    let stop = delivery_loop(&app, 8);
    poll_until(
        Duration::from_secs(60),
        "the tarpit to hold the account's attempts",
        || {
            let accepted = tarpit.accepted();
            async move { (accepted >= 4).then_some(()) }
        },
    )
    .await;
    let wanted = failed_generation_event(&app, &healthy_account, &healthy_voice).await;
    let arrived = healthy.wait_for("generation.failed", &wanted).await;
    assert_eq!(arrived.json()["data"]["id"], wanted);

    let accepted = tarpit.accepted();
    let ended = fixtures::deliveries(&app)
        .await
        .iter()
        .filter(|d| d.account_id == slow_account && d.last_attempt_at.is_some())
        .count();
    assert_eq!(
        ended, 0,
        "the healthy delivery arrived while the tarpit's attempts were all outstanding"
    );
    assert_eq!(accepted, 4, "at most 4 in flight for one account");
    let held = held(&app, &slow_account).await;
    assert_eq!(
        held.len(),
        3,
        "every tarpit endpoint had its turn: {held:?}"
    );
    assert!(
        held.iter().all(|(_, n)| *n <= 2),
        "2 per endpoint: {held:?}"
    );
    let _ = stop.send(voiced::worker::Shutdown::Abort);
    app.stop().await;
}

/// The claim at the store: accounts take turns (a backlog does not go first because it is
/// older), an account's endpoints take turns, and the in-flight caps hold across turns until a
/// delivery ends.
#[tokio::test]
async fn claims_take_turns_across_accounts_and_endpoints_within_the_caps() {
    let app = TestApp::start_with(0, &[("VOICED_WEBHOOKS_ALLOW_PRIVATE_ADDRESSES", "true")]).await;
    let (busy, _) = app.pro_user().await;
    let (quiet, _) = app.pro_user().await;
    let (other, _) = app.pro_user().await;
    let mut busy_hooks = Vec::new();
    for n in 0..3 {
        let url = format!("http://127.0.0.1:9/busy/{n}");
        busy_hooks.push(endpoint(&app, &busy, &url, &["capture.created"]).await.0);
    }
    endpoint(
        &app,
        &quiet,
        "http://127.0.0.1:9/quiet",
        &["capture.created"],
    )
    .await;
    endpoint(
        &app,
        &other,
        "http://127.0.0.1:9/other",
        &["capture.created"],
    )
    .await;
    let event = |account: String, subject: String| {
        let app = &app;
        async move { fixtures::account_event(app, &account, "capture.created", &subject).await }
    };
    for n in 0..5 {
        event(busy.clone(), format!("cap_busy_{n}")).await;
    }
    event(quiet.clone(), "cap_quiet".into()).await;
    event(other.clone(), "cap_other".into()).await;

    let mut turns = Vec::new();
    while let Some(claimed) = fixtures::claim_delivery_turn(&app).await {
        assert!(turns.len() < 10, "the turns end: {turns:?}");
        turns.push(claimed);
    }
    let accounts: Vec<&str> = turns
        .iter()
        .map(|claimed| claimed[0].account_id.as_str())
        .collect();
    assert_eq!(accounts.len(), 3, "one turn each: {accounts:?}");
    for account in [&busy, &quiet, &other] {
        assert_eq!(
            accounts.iter().filter(|a| **a == account.as_str()).count(),
            1
        );
    }
    let busy_turn = turns.iter().find(|c| c[0].account_id == busy).unwrap();
    assert_eq!(busy_turn.len(), 4, "4 in flight per account");
    let mut endpoints: Vec<&str> = busy_turn.iter().map(|d| d.endpoint_id.as_str()).collect();
    endpoints.sort();
    endpoints.dedup();
    assert_eq!(endpoints.len(), 3, "the account's endpoints take turns");
    assert!(
        held(&app, &busy).await.iter().all(|(_, n)| *n <= 2),
        "2 in flight per endpoint"
    );

    // At its cap the busy account is not due; a delivery that ends frees one place.
    assert!(fixtures::claim_delivery_turn(&app).await.is_none());
    let done = &busy_turn[0];
    fixtures::delivered(&app, &done.id, &done.endpoint_id, 204).await;
    let next = fixtures::claim_delivery_turn(&app)
        .await
        .expect("the account is due again");
    assert_eq!(next.len(), 1, "one place was freed: {next:?}");
    assert_eq!(next[0].account_id, busy);
}

/// Registering an endpoint needs a paid plan, through the plan rule of the API: a free
/// account is refused `pro_plan_required` and nothing is registered; a trial may.
#[tokio::test]
async fn registering_an_endpoint_needs_a_paid_plan() {
    use voiced::domain::Plan;
    use voiced::service::ErrorCode;
    let app = TestApp::start_with(0, &[]).await;
    let free = app.account(Plan::None).await;
    let events = vec!["generation.failed".to_owned()];
    let new = || NewEndpoint {
        url: "https://hooks.example.com/x",
        events: &events,
        description: "",
    };
    let refused = fixtures::create_endpoint(&app, &free, new())
        .await
        .unwrap_err();
    assert_eq!(refused.code, ErrorCode::ProPlanRequired);
    assert_eq!(refused.code.status(), 403);
    assert!(fixtures::endpoints_of(&app, &free).await.is_empty());
    let trial = app.account(Plan::Trial).await;
    fixtures::create_endpoint(&app, &trial, new())
        .await
        .expect("a trial may register");
}

/// A resend keeps the event's 24-hour window (one attempt after it, then given up, not a new
/// day of retries), and an account may resend 20 deliveries a minute.
#[tokio::test]
async fn a_resend_keeps_the_events_window_and_is_rate_limited() {
    use voiced::service::ErrorCode;
    let app = TestApp::start_with(0, &[("VOICED_WEBHOOKS_ALLOW_PRIVATE_ADDRESSES", "true")]).await;
    let (account, _) = app.pro_user().await;
    let voice = app
        .voice(&account, "Narrator", EngineId::Kokoro, "af_heart")
        .await;
    let failing = Receiver::start().await;
    failing.answer(500);
    let (hook, _) = endpoint(&app, &account, &failing.url(), &["generation.failed"]).await;
    let subject = failed_generation_event(&app, &account, &voice).await;
    // Given up a day ago, for an event of 25 hours ago.
    fixtures::give_up_deliveries(&app, Some(&hook)).await;
    fixtures::age_deliveries(&app, &hook, 25).await;
    let [stored] = &fixtures::deliveries_to(&app, &hook).await[..] else {
        panic!("one delivery")
    };
    let delivery = stored.id.clone();
    fixtures::resend(&app, &account, &delivery).await.unwrap();

    let stop = delivery_loop(&app, 4);
    let recorded = poll_until(
        Duration::from_secs(60),
        "the resent delivery's attempt to be recorded",
        || {
            let (app, hook) = (&app, hook.clone());
            async move {
                fixtures::deliveries_to(app, &hook)
                    .await
                    .into_iter()
                    .find(|d| d.unlocked && d.attempts == 10)
                    .map(|d| (d.state, d.last_status))
            }
        },
    )
    .await;
    let _ = stop.send(voiced::worker::Shutdown::Abort);
    assert_eq!(
        recorded,
        ("failed".to_owned(), Some(500)),
        "one attempt, then given up: the window is the event's"
    );
    let received = failing.received();
    assert_eq!(received.len(), 1);
    assert_eq!(subject_of(&received[0].json()), subject);

    // 20 resends a minute per account (this minute has had 1); the 21st is refused with a wait.
    for n in 2..=20 {
        fixtures::resend(&app, &account, &delivery)
            .await
            .unwrap_or_else(|err| panic!("resend {n}: {err:?}"));
    }
    let refused = fixtures::resend(&app, &account, &delivery)
        .await
        .unwrap_err();
    assert_eq!(refused.code, ErrorCode::RateLimitExceeded);
    assert!(
        refused
            .retry_after_secs
            .is_some_and(|s| (1..=60).contains(&s))
    );
    // Another account cannot resend this account's delivery.
    let (stranger, _) = app.pro_user().await;
    let not_found = fixtures::resend(&app, &stranger, &delivery)
        .await
        .unwrap_err();
    assert_eq!(not_found.code, ErrorCode::NotFound);
    app.stop().await;
}

/// An endpoint has at most 1000 pending deliveries: an event beyond that is not written for
/// it (its other endpoints still get theirs). Pending deliveries of a disabled endpoint are
/// deleted by the outbox's housekeeping.
#[tokio::test]
async fn pending_deliveries_are_capped_and_those_of_disabled_endpoints_purged() {
    let app = TestApp::start_with(0, &[("VOICED_WEBHOOKS_ALLOW_PRIVATE_ADDRESSES", "true")]).await;
    let (account, _) = app.pro_user().await;
    let (full, _) = endpoint(
        &app,
        &account,
        "http://127.0.0.1:9/full",
        &["capture.created"],
    )
    .await;
    let (open, _) = endpoint(
        &app,
        &account,
        "http://127.0.0.1:9/open",
        &["capture.created"],
    )
    .await;
    fixtures::delivery_backlog(
        &app,
        &full,
        &account,
        webhooks::MAX_PENDING_PER_ENDPOINT as i32 - 1,
    )
    .await;
    let pending = |endpoint: String| {
        let app = &app;
        async move {
            fixtures::deliveries_to(app, &endpoint)
                .await
                .iter()
                .filter(|d| d.state == "pending")
                .count() as i64
        }
    };
    for subject in ["cap_last_place", "cap_one_too_many"] {
        fixtures::account_event(&app, &account, "capture.created", subject).await;
    }
    assert_eq!(
        pending(full.clone()).await,
        webhooks::MAX_PENDING_PER_ENDPOINT
    );
    let dropped = fixtures::deliveries(&app)
        .await
        .iter()
        .filter(|d| d.subject_id == "cap_one_too_many")
        .count();
    assert_eq!(dropped, 1, "only the endpoint with room got the event");
    assert_eq!(pending(open.clone()).await, 2);

    fixtures::disable_endpoint(&app, &full, "gone").await;
    fixtures::webhook_housekeeping(&app).await;
    assert_eq!(
        pending(full).await,
        0,
        "a disabled endpoint's pending are deleted"
    );
    assert_eq!(pending(open).await, 2, "an enabled endpoint's stay");
    app.stop().await;
}
