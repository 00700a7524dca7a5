//! A `voiced worker` process killed with SIGKILL in the middle of a job: its lease expires, a
//! second worker takes the job over, and it is completed and charged exactly once.

use crate::common;

use std::process::{Child, Command, Stdio};
use std::time::Duration;

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
            let (pool, id) = (app.pool.clone(), id.clone());
            async move {
                sqlx::query_scalar::<_, Option<String>>(
                    "SELECT lease_owner FROM generations WHERE id = $1",
                )
                .bind(id)
                .fetch_one(&pool)
                .await
                .unwrap()
            }
        },
    )
    .await;
    first.kill().expect("SIGKILL");
    first.wait().unwrap();
    let status: String = sqlx::query_scalar("SELECT status FROM generations WHERE id = $1")
        .bind(&id)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(status, "generating", "killed before it could finish");

    let mut second = worker(&url);
    let outcome = tokio::time::timeout(
        Duration::from_secs(600),
        app.completions.wait(&id, Duration::from_secs(2)),
    )
    .await
    .expect("the second worker finishes the job")
    .unwrap();
    second.kill().unwrap();
    second.wait().unwrap();
    assert_eq!(outcome, voiced::domain::GenerationStatus::Completed);

    let (attempts, finished_by): (i32, Option<String>) =
        sqlx::query_as("SELECT attempts, lease_owner FROM generations WHERE id = $1")
            .bind(&id)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(attempts, 2, "claimed twice: once by each worker");
    assert!(finished_by.is_none());
    assert_ne!(claimed_by, "");
    let charges: Vec<i64> =
        sqlx::query_scalar("SELECT audio_ms FROM usage_ledger WHERE generation_id = $1")
            .bind(&id)
            .fetch_all(&app.pool)
            .await
            .unwrap();
    assert_eq!(charges.len(), 1, "charged exactly once");
    assert!(charges[0] > 3000, "{charges:?}");
    app.stop().await;
}
