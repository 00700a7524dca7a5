//! Faults survived (issue 9): workers killed over and over under a steady stream of speech, a
//! PostgreSQL outage under reads, speech and transcriptions, a restart with work queued, and
//! SIGTERM under load. Loopback only; every wait polls with a deadline.

use crate::common;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::child::ChildServer;
use crate::common::fixtures;
use crate::common::{TempDir, TestApp, json, poll_until};
use serde_json::{Value, json};
use voiced::domain::{ApiKeySecret, EngineId, Plan, Scope, new_id};
use voiced::store::embedded::{EmbeddedConfig, EmbeddedPostgres};

fn worker(database_url: &str) -> Child {
    Command::new(env!("CARGO_BIN_EXE_voiced"))
        .args(["worker", "--count", "1"])
        .env("VOICED_DATABASE_URL", database_url)
        .env("VOICED_LEASE_SECS", "2")
        .env("VOICED_LOG", "error")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .expect("voiced worker starts")
}

async fn speak(client: &reqwest::Client, base: &str, secret: &str, text: &str) -> (u16, Value) {
    json(
        client
            .post(format!("{base}/v1/speech"))
            .bearer_auth(secret)
            .json(&json!({"text": text, "voice_name": "Narrator"}))
            .send()
            .await
            .unwrap(),
    )
    .await
}

#[tokio::test]
async fn twenty_worker_kills_lose_and_double_charge_nothing() {
    // The API only (the workers are separate processes), with room for the whole stream: the
    // pending cap is not what this test is about.
    let app = TestApp::start_with(0, &[("VOICED_MAX_PENDING_PER_ACCOUNT", "1000")]).await;
    let (account, secret) = app.pro_user().await;
    app.voice(&account, "Narrator", EngineId::Kokoro, "jf_alpha")
        .await;
    let url = app.db.url();
    let mut workers = [worker(&url), worker(&url)];
    let mut accepted = 0;
    for round in 0..20 {
        // A steady stream: three short generations a round.
        for n in 0..3 {
            let (status, body) = speak(
                &app.client,
                &app.base,
                &secret,
                &format!("Round {round}, take {n}."),
            )
            .await;
            assert_eq!(status, 202, "{body}");
            accepted += 1;
        }
        // Kill, mid-job, the worker of this round (they alternate), but only while it holds a
        // job on its first attempt: every job is killed at most once, so none runs out of its
        // three attempts, and the proof is about loss and double charges, not about bad luck.
        let victim = round % 2;
        let pid = workers[victim].id().to_string();
        let held = poll_until(Duration::from_secs(120), "the victim to hold a job", || {
            let (app, pid) = (&app, pid.clone());
            async move {
                fixtures::all_generations(app)
                    .await
                    .into_iter()
                    .find(|g| {
                        g.status == "generating"
                            && g.attempts == 1
                            && g.leased
                            && g.lease_process() == Some(pid.as_str())
                    })
                    .map(|g| g.id)
            }
        })
        .await;
        assert!(held.starts_with("gen_"));
        workers[victim].kill().expect("SIGKILL");
        workers[victim].wait().unwrap();
        workers[victim] = worker(&url);
    }
    fixtures::drained(&app, &account, Duration::from_secs(600)).await;
    for mut w in workers {
        let _ = w.kill();
        let _ = w.wait();
    }
    fixtures::all_completed_and_charged_once(&app, &account, accepted).await;
    app.stop().await;
}

/// A one-second 440 Hz tone as WAV, base64 in the request body.
fn tone_body() -> Value {
    json!({"audio": common::tone_wav_base64()})
}

/// An account with a pro plan, a key and a Kokoro voice, written straight to `pool`.
async fn pro_user(pool: &sqlx::PgPool) -> (String, String) {
    let account = new_id("acct");
    voiced::store::accounts::insert(pool, &account, &format!("{account}@example.com"), Plan::Pro)
        .await
        .unwrap();
    let secret = ApiKeySecret::generate();
    let scopes: Vec<String> = Scope::ALL.iter().map(|s| s.as_str().to_owned()).collect();
    voiced::store::keys::insert(
        pool,
        voiced::store::keys::NewKey {
            id: &new_id("key"),
            account_id: &account,
            name: "faults",
            prefix: &secret.prefix(),
            hash: &secret.hash(),
            scopes: &scopes,
            ceiling_minutes: None,
        },
    )
    .await
    .unwrap();
    voiced::store::voices::insert_preset(
        pool,
        voiced::store::voices::NewVoice {
            id: &new_id("voice"),
            account_id: &account,
            name: "Narrator",
            description: "",
            language: "en",
            engine: "kokoro",
            preset: "jf_alpha",
            pinned_seed: None,
            pinned_temperature: None,
            personality_prompt: None,
        },
    )
    .await
    .unwrap();
    (account, secret.expose().to_owned())
}

#[tokio::test]
async fn a_postgres_outage_answers_503_and_the_same_server_recovers() {
    // A private cluster: stopping the shared test cluster would fail every other test.
    let dir = TempDir::new("outage", 0o755);
    let config = EmbeddedConfig {
        data_dir: dir.path().to_path_buf(),
        pg_bin: None,
    };
    let cluster = EmbeddedPostgres::start(&config)
        .await
        .expect("private cluster");
    let url = cluster.database_url(voiced::store::embedded::APP_DATABASE);
    let server =
        ChildServer::start(&url, &[("VOICED_WORKERS", "1"), ("VOICED_LEASE_SECS", "2")]).await;
    let pool = voiced::store::connect_and_migrate(&url, 2).await.unwrap();
    let (account, secret) = pro_user(&pool).await;
    let client = crate::common::http_client_builder()
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    let long = "A long sentence keeps the worker busy while the database goes away. ".repeat(3);
    let mut accepted = 0;
    for text in [long.as_str(), "Queued one.", "Queued two."] {
        let (status, body) = speak(&client, &server.base, &secret, text).await;
        assert_eq!(status, 202, "{body}");
        accepted += 1;
    }
    poll_until(
        Duration::from_secs(120),
        "a generation to be running",
        || fixtures::running_generation_on(&pool),
    )
    .await;
    pool.close().await;

    cluster
        .stop_immediately()
        .await
        .expect("pg_ctl stop -m immediate");
    // During the outage: a 503 with Retry-After for every kind of request, each within the
    // client's 5 s timeout (a hang would be an error here), never a 500.
    for round in 0..3 {
        for (method, path, body) in [
            ("GET", "/v1/voices", None),
            (
                "POST",
                "/v1/speech",
                Some(json!({"text": "During.", "voice_name": "Narrator"})),
            ),
            ("POST", "/v1/transcriptions", Some(tone_body())),
            ("GET", "/readyz", None),
        ] {
            let started = Instant::now();
            // A fresh connection each time: the server may close one whose upload it refused
            // unread (the 503 comes from authentication, before the body).
            let client = crate::common::http_client_builder()
                .timeout(Duration::from_secs(5))
                .pool_max_idle_per_host(0)
                .build()
                .unwrap();
            let mut request = client
                .request(method.parse().unwrap(), format!("{}{path}", server.base))
                .bearer_auth(&secret);
            if let Some(body) = body {
                request = request.json(&body);
            }
            let response = request
                .send()
                .await
                .unwrap_or_else(|e| panic!("round {round} {path}: no answer within 5 s: {e}"));
            assert!(response.headers().get("retry-after").is_some(), "{path}");
            let (status, body) = json(response).await;
            assert_eq!(status, 503, "round {round} {path}: {body}");
            assert_eq!(body["code"], "service_unavailable", "{path}: {body}");
            println!("outage: {method} {path} → 503 in {:?}", started.elapsed());
        }
    }

    let cluster = EmbeddedPostgres::start(&config).await.expect("restart");
    // The same process serves again, with no restart.
    poll_until(Duration::from_secs(60), "the server to serve again", || {
        let request = client
            .get(format!("{}/v1/voices", server.base))
            .bearer_auth(&secret)
            .send();
        async move { (request.await.ok()?.status() == 200).then_some(()) }
    })
    .await;
    let (status, body) = speak(&client, &server.base, &secret, "After.").await;
    assert_eq!(status, 202, "{body}");
    accepted += 1;
    let pool = voiced::store::connect_and_migrate(&url, 2).await.unwrap();
    fixtures::drained_on(&pool, &account, Duration::from_secs(300)).await;
    fixtures::all_completed_and_charged_once_on(&pool, &account, accepted).await;
    pool.close().await;
    drop(server);
    cluster.stop().await.unwrap();
}

#[tokio::test]
async fn generations_queued_across_a_restart_all_complete() {
    let app = TestApp::start().await;
    let (account, secret) = app.pro_user().await;
    app.voice(&account, "Narrator", EngineId::Kokoro, "jf_alpha")
        .await;
    let url = app.db.url();
    let server = ChildServer::start(&url, &[]).await; // no workers: the work stays queued
    for n in 0..10 {
        let (status, body) = speak(
            &app.client,
            &server.base,
            &secret,
            &format!("Queued number {n}."),
        )
        .await;
        assert_eq!(status, 202, "{body}");
    }
    drop(server); // killed with ten generations queued
    let _server = ChildServer::start(&url, &[("VOICED_WORKERS", "1")]).await;
    fixtures::drained(&app, &account, Duration::from_secs(300)).await;
    fixtures::all_completed_and_charged_once(&app, &account, 10).await;
    app.stop().await;
}

#[tokio::test]
async fn sigterm_under_load_finishes_or_hands_back_and_exits_zero() {
    let app = TestApp::start().await;
    let (account, secret) = app.pro_user().await;
    app.voice(&account, "Narrator", EngineId::Kokoro, "jf_alpha")
        .await;
    let url = app.db.url();
    let mut server = ChildServer::start(
        &url,
        &[("VOICED_WORKERS", "1"), ("VOICED_SHUTDOWN_GRACE_SECS", "3")],
    )
    .await;
    let long = "This generation is still running when the server is told to stop. ".repeat(6);
    let mut accepted = 0;
    for text in [long.as_str(), "Short one.", "Short two."] {
        let (status, body) = speak(&app.client, &server.base, &secret, text).await;
        assert_eq!(status, 202, "{body}");
        accepted += 1;
    }
    // Synchronous requests and reads in flight when SIGTERM arrives.
    let mut in_flight = Vec::new();
    for n in 0..3 {
        let request = app
            .client
            .post(format!("{}/v1/audio/speech", server.base))
            .bearer_auth(&secret)
            .json(&json!({"model": "tts-1", "input": format!("In flight {n}. {long}"), "voice": "Narrator"}))
            .send();
        in_flight.push(tokio::spawn(async move {
            request.await.map(|r| r.status().as_u16())
        }));
    }
    for _ in 0..10 {
        let request = app
            .client
            .get(format!("{}/v1/voices", server.base))
            .bearer_auth(&secret)
            .send();
        in_flight.push(tokio::spawn(async move {
            request.await.map(|r| r.status().as_u16())
        }));
    }
    poll_until(
        Duration::from_secs(120),
        "a generation to be running",
        || {
            let app = &app;
            async move {
                fixtures::all_generations(app)
                    .await
                    .into_iter()
                    .find(|g| g.leased && g.status == "generating")
                    .map(|g| g.id)
            }
        },
    )
    .await;
    let signalled = Instant::now();
    let status = Command::new("kill")
        .args(["-TERM", &server.pid().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let exit = server.exited().await;
    println!(
        "SIGTERM → exit {exit} after {:?} (grace 3 s)",
        signalled.elapsed()
    );
    assert!(exit.success(), "exits 0: {exit}");
    for request in in_flight {
        let status = request
            .await
            .unwrap()
            .expect("every in-flight request is answered");
        assert!(matches!(status, 200 | 503), "{status}");
    }
    // Nothing half-written: no completed generation without its charge and audio, and nothing
    // left leased to the process that exited.
    let generations = fixtures::generations_of(&app, &account).await;
    let half = generations
        .iter()
        .filter(|g| g.status == "completed" && (g.audio_key.is_none() || g.charged_ms.is_none()))
        .count();
    assert_eq!(half, 0);
    let leased = generations
        .iter()
        .filter(|g| g.status == "generating" && g.lease_owner.is_some())
        .count();
    assert_eq!(leased, 0, "running work was finished or handed back");
    // The synchronous requests that were answered 503 had their generations cancelled, free;
    // one cut while streaming is charged what it had delivered, nothing more (issue 36).
    let cancelled_charged = generations
        .iter()
        .filter(|g| {
            g.status == "failed"
                && g.charged_ms.is_some()
                && (g.delivered_ms.is_none() || g.charged_ms != g.delivered_ms)
        })
        .count();
    assert_eq!(cancelled_charged, 0);
    drop(server);

    // A new process completes every accepted asynchronous generation.
    let _server = ChildServer::start(&url, &[("VOICED_WORKERS", "1")]).await;
    fixtures::drained(&app, &account, Duration::from_secs(300)).await;
    let done = fixtures::generations_of(&app, &account)
        .await
        .iter()
        .filter(|g| g.status == "completed" && !g.text.starts_with("In flight"))
        .count();
    assert_eq!(
        done, accepted,
        "every accepted asynchronous generation completed"
    );
    app.stop().await;
}

/// The read path's connections (`store::read_pool`) skip sqlx's ping on release, so a read whose
/// caller went away mid-statement (a client that disconnected) must never lend its connection
/// to the next read: that one gets another backend, and finished reads share one.
#[tokio::test]
async fn a_cancelled_read_never_lends_its_connection_to_the_next() {
    let (pool, db) = common::db::fresh_database().await;
    let reads = voiced::store::read_pool::ReadPool::new(pool.clone());
    let first = backend_of_a_read(&reads).await;
    assert_eq!(
        backend_of_a_read(&reads).await,
        first,
        "a finished read's connection is reused"
    );

    // A read cancelled while its statement runs: dropped as soon as the statement is seen
    // running (no timing involved).
    let slow = async {
        let mut connection = reads.acquire().await.unwrap();
        fixtures::slow_statement(connection.get()).await;
        connection.finish();
        unreachable!("the sleep was cancelled");
    };
    let running = poll_until(Duration::from_secs(30), "the slow read to run", || {
        fixtures::backend_running_slow_statement(&pool)
    });
    let sleeping = tokio::select! {
        () = slow => unreachable!(),
        pid = running => pid,
    };
    assert_eq!(sleeping, first, "the slow read took the idle connection");
    let next = backend_of_a_read(&reads).await;
    assert_ne!(
        next, sleeping,
        "a cancelled read's connection was lent again"
    );
    pool.close().await;
    db.cleanup().await;
}

/// The PostgreSQL backend that serves one finished read.
async fn backend_of_a_read(reads: &voiced::store::read_pool::ReadPool) -> i32 {
    let mut connection = reads.acquire().await.unwrap();
    let pid = fixtures::backend_pid(connection.get()).await;
    connection.finish();
    pid
}
