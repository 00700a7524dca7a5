//! A `voiced worker` process killed with SIGKILL in the middle of a job: its lease expires, a
//! second worker takes the job over, and it is completed and charged exactly once.

use crate::common;

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::common::fixtures;
use crate::common::{TestApp, json};
use serde_json::json;
use voiced::domain::EngineId;

fn worker(database_url: &str) -> Child {
    Command::new(env!("CARGO_BIN_EXE_voiced"))
        .arg("worker")
        .env("VOICED_DATABASE_URL", database_url)
        .env("VOICED_LEASE_SECS", "2")
        .env("VOICED_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("voiced worker starts")
}

#[tokio::test]
async fn a_killed_worker_loses_its_job_to_another_and_it_is_charged_once() {
    let app = TestApp::start().await;
    let (account, secret) = app.pro_user().await;
    app.voice(&account, "Narrator", EngineId::Kokoro, "jf_alpha")
        .await;
    // Long enough that the first worker is surely still synthesizing when it is killed.
    let text = "The first worker will not live to finish this sentence, but nothing that was accepted is ever lost. \
                A second worker picks the job up once the lease of the first has expired.";
    let (status, accepted) = json(
        app.post("/v1/speech")
            .bearer_auth(&secret)
            .json(&json!({ "text": text, "voice_name": "Narrator", "seed": 5, "response_format": "wav" }))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 202, "{accepted}");
    let id = accepted["id"].as_str().unwrap().to_owned();

    let url = app.db.url();
    let mut first = worker(&url);
    // Wait (on the database, by notification-free polling of a row the worker writes) until the
    // first worker has claimed the job: LISTEN cannot tell us, claims do not notify. The worker
    // loads and warms its engines first, which took over 60 s once on a loaded 2-core machine:
    // the bound only stops a hang.
    let claimed_by = common::poll_until(
        Duration::from_secs(240),
        "the first worker to claim the job",
        || {
            let (app, id) = (&app, id.clone());
            async move { fixtures::generation(app, &id).await.lease_owner }
        },
    )
    .await;
    first.kill().expect("SIGKILL");
    first.wait().unwrap();
    let status = fixtures::generation(&app, &id).await.status;
    assert_eq!(status, "generating", "killed before it could finish");

    let mut second = worker(&url);
    let outcome = tokio::time::timeout(
        Duration::from_secs(600),
        app.completion(&id, Duration::from_secs(2)),
    )
    .await
    .expect("the second worker finishes the job")
    .unwrap();
    second.kill().unwrap();
    second.wait().unwrap();
    assert_eq!(outcome, voiced::domain::GenerationStatus::Completed);

    let stored = fixtures::generation(&app, &id).await;
    let (attempts, finished_by) = (stored.attempts, stored.lease_owner);
    assert_eq!(attempts, 2, "claimed twice: once by each worker");
    assert!(finished_by.is_none());
    assert_ne!(claimed_by, "");
    let charges: Vec<i64> = fixtures::ledger(&app)
        .await
        .iter()
        .filter(|row| row.generation_id == id)
        .map(|row| row.audio_ms)
        .collect();
    assert_eq!(charges.len(), 1, "charged exactly once");
    assert!(charges[0] > 3000, "{charges:?}");
    app.stop().await;
}

/// A `voiced worker` with webhook delivery on, for the loopback receivers of these tests.
fn delivering_worker(database_url: &str, public_base_url: &str) -> Child {
    Command::new(env!("CARGO_BIN_EXE_voiced"))
        .arg("worker")
        .env("VOICED_DATABASE_URL", database_url)
        .env("VOICED_PUBLIC_BASE_URL", public_base_url)
        .env(
            "VOICED_SIGNING_SECRET",
            std::str::from_utf8(common::SIGNING_SECRET).unwrap(),
        )
        .env("VOICED_WEBHOOKS_ALLOW_PRIVATE_ADDRESSES", "true")
        .env("VOICED_WEBHOOKS_RETRY_BASE_MS", "200")
        .env("VOICED_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("voiced worker starts")
}

/// Issue 27 item 5: a worker SIGKILLed after completing a generation and before its event was
/// delivered (the receiver was down) leaves the event in the outbox; after a restart it is
/// delivered, under one `webhook-id`, and the independent verifier accepts it.
#[tokio::test]
async fn a_worker_killed_before_delivering_delivers_after_restart_under_one_webhook_id() {
    use crate::common::webhooks::{Receiver, verifier, verify_independently};
    let test = "worker_crash::a_worker_killed_before_delivering_delivers_after_restart_under_one_webhook_id";
    let Some(python) = verifier() else {
        return common::skip(
            test,
            "no Python with standardwebhooks (scripts/test.sh installs it)",
        );
    };
    let app = TestApp::start_with(0, &[("VOICED_WEBHOOKS_ALLOW_PRIVATE_ADDRESSES", "true")]).await;
    let (account, secret) = app.pro_user().await;
    app.voice(&account, "Narrator", EngineId::Kokoro, "jf_alpha")
        .await;
    let receiver = Receiver::start().await;
    let addr = receiver.addr;
    receiver.stop().await; // down until the worker has been killed
    let (endpoint, hook_secret) = fixtures::create_endpoint(
        &app,
        &account,
        voiced::service::webhooks::NewEndpoint {
            url: &format!("http://{addr}/hooks"),
            events: &["generation.completed".to_owned()],
            description: "",
        },
    )
    .await
    .unwrap();
    let (status, accepted) = json(
        app.post("/v1/speech")
            .bearer_auth(&secret)
            .json(&json!({ "text": "Delivered after a crash.", "voice_name": "Narrator" }))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 202, "{accepted}");
    let id = accepted["id"].as_str().unwrap().to_owned();

    let url = app.db.url();
    let mut first = delivering_worker(&url, &app.base);
    let outcome = tokio::time::timeout(
        Duration::from_secs(300),
        app.completion(&id, Duration::from_secs(2)),
    )
    .await
    .expect("the first worker completes the generation")
    .unwrap();
    assert_eq!(outcome, voiced::domain::GenerationStatus::Completed);
    // Completed, its event tried at least once (refused: the receiver is down), not delivered.
    common::poll_until(Duration::from_secs(60), "a first delivery attempt", || {
        let (app, id) = (&app, id.clone());
        async move {
            fixtures::deliveries(app)
                .await
                .into_iter()
                .find(|d| d.subject_id == id && d.attempts >= 1 && d.last_attempt_at.is_some())
                .map(|d| d.attempts)
        }
    })
    .await;
    first.kill().expect("SIGKILL");
    first.wait().unwrap();

    let receiver = Receiver::start_on(addr).await;
    let mut second = delivering_worker(&url, &app.base);
    let delivered = receiver.wait_for("generation.completed", &id).await;
    common::poll_until(
        Duration::from_secs(60),
        "the delivery to be recorded",
        || {
            let (app, endpoint) = (&app, endpoint.id.clone());
            async move {
                fixtures::deliveries_to(app, &endpoint)
                    .await
                    .into_iter()
                    .find(|d| d.state == "delivered")
                    .map(|d| d.state)
            }
        },
    )
    .await;
    second.kill().unwrap();
    second.wait().unwrap();
    let mut ids: Vec<String> = receiver.received().into_iter().map(|r| r.id).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 1, "exactly one webhook-id: {ids:?}");
    assert_eq!(ids[0], delivered.id);
    let rows = fixtures::deliveries(&app)
        .await
        .iter()
        .filter(|d| d.subject_id == id)
        .count();
    assert_eq!(rows, 1, "one outbox row for the one event");
    verify_independently(&python, &[(hook_secret, delivered)]);
    app.stop().await;
}
