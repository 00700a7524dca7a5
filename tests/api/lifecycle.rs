//! The async lifecycle (issue 27): the list of an account's generations with its filters, and
//! cancellation by request of a queued, a running and a finished generation.

use std::time::{Duration, Instant};

use crate::common::fixtures;
use crate::common::{TestApp, assert_problem, json};
use serde_json::{Value, json};
use voiced::domain::{CancelReason, EngineId, Plan, Scope};

async fn list(app: &TestApp, secret: &str, query: &str) -> (u16, Value) {
    json(
        app.get(&format!("/v1/generations{query}"))
            .bearer_auth(secret)
            .send()
            .await
            .unwrap(),
    )
    .await
}

async fn cancel(app: &TestApp, secret: &str, id: &str) -> (u16, Value) {
    json(
        app.post(&format!("/v1/generations/{id}/cancel"))
            .bearer_auth(secret)
            .send()
            .await
            .unwrap(),
    )
    .await
}

async fn ledger_rows(app: &TestApp, account: &str) -> usize {
    fixtures::ledger_of(app, account).await.len()
}

async fn accepted(app: &TestApp, secret: &str, voice: &str, text: &str) -> String {
    let (status, body) = app
        .speak(secret, json!({"text": text, "voice_name": voice}))
        .await;
    assert_eq!(status, 202, "{body}");
    body["id"].as_str().unwrap().to_owned()
}

fn ids(page: &Value) -> Vec<&str> {
    page["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["id"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn generations_are_listed_newest_first_and_filtered() {
    let app = TestApp::start().await; // no workers: what is accepted stays queued
    let (account, secret) = app.pro_user().await;
    let narrator = app
        .voice(&account, "Narrator", EngineId::Kokoro, "af_heart")
        .await;
    app.voice(&account, "Guide", EngineId::Kokoro, "jf_alpha")
        .await;
    let first = accepted(&app, &secret, "Narrator", "The first one.").await;
    let second = accepted(&app, &secret, "Guide", "The second one.").await;
    let third = accepted(&app, &secret, "Narrator", "The third one.").await;
    let (status, _) = cancel(&app, &secret, &second).await;
    assert_eq!(status, 200);

    let (status, page) = list(&app, &secret, "").await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(ids(&page), [&third, &second, &first]);
    assert_eq!(
        (&page["total"], &page["limit"], &page["offset"]),
        (&json!(3), &json!(50), &json!(0))
    );
    // Each item is what the single read returns.
    for item in page["data"].as_array().unwrap() {
        let (_, one) = app.generation(&secret, item["id"].as_str().unwrap()).await;
        assert_eq!(item, &one);
    }

    // Queued ones show progress 0 and how many queued generations are ahead; the cancelled one
    // neither.
    let by_id = |id: &str| {
        page["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["id"] == id)
            .unwrap()
            .clone()
    };
    assert_eq!(
        (&by_id(&first)["progress"], &by_id(&first)["queue_position"]),
        (&json!(0.0), &json!(0))
    );
    assert_eq!(
        (&by_id(&third)["progress"], &by_id(&third)["queue_position"]),
        (&json!(0.0), &json!(1))
    );
    assert!(by_id(&second).get("progress").is_none());
    assert!(by_id(&second).get("queue_position").is_none());

    let (_, page) = list(&app, &secret, "?status=failed").await;
    assert_eq!(ids(&page), [&second]);
    assert_eq!(page["total"], 1);
    let (_, page) = list(&app, &secret, "?status=generating").await;
    assert_eq!(ids(&page), [&third, &first]);
    let (_, page) = list(&app, &secret, "?voice=Narrator").await;
    assert_eq!(ids(&page), [&third, &first]);
    let (_, page) = list(
        &app,
        &secret,
        &format!("?voice={narrator}&status=generating"),
    )
    .await;
    assert_eq!(ids(&page), [&third, &first]);
    for voice in ["Nobody", "Narr%00ator"] {
        let (status, page) = list(&app, &secret, &format!("?voice={voice}")).await;
        assert_eq!(status, 200, "{page}");
        assert_eq!((ids(&page).len(), &page["total"]), (0, &json!(0)));
    }
    let (_, page) = list(&app, &secret, "?limit=1&offset=1").await;
    assert_eq!(ids(&page), [&second]);
    assert_eq!(page["total"], 3);

    // Bad filters are refused naming the parameter.
    for (query, param) in [
        ("?status=done", "status"),
        ("?status=", "status"),
        ("?limit=0", "limit"),
        ("?limit=201", "limit"),
        ("?offset=-1", "offset"),
        ("?voice=", "voice"),
        (&format!("?voice={}", "v".repeat(201)), "voice"),
    ] {
        let (status, problem) = list(&app, &secret, query).await;
        assert_eq!(status, 400, "{query}: {problem}");
        assert_problem(&problem, 400, "invalid_request", "/v1/generations");
        assert_eq!(problem["param"], param, "{query}");
    }

    // Another account sees none of them; a key needs voice:read.
    let (_, other) = app.pro_user().await;
    let (_, page) = list(&app, &other, "").await;
    assert_eq!((ids(&page).len(), &page["total"]), (0, &json!(0)));
    let (_, writer) = app.key(&account, &[Scope::VoiceGenerate]).await;
    let (status, problem) = list(&app, &writer, "").await;
    assert_eq!(status, 403);
    assert_eq!(problem["code"], "insufficient_scope");
    app.stop().await;
}

#[tokio::test]
async fn a_queued_generation_cancelled_never_runs_and_costs_nothing() {
    let app = TestApp::start().await; // no workers: the generation waits in the queue
    let (account, secret) = app.pro_user().await;
    app.voice(&account, "Narrator", EngineId::Kokoro, "af_heart")
        .await;
    let id = accepted(&app, &secret, "Narrator", "Never to be spoken.").await;

    // A read-only key, another account and an unknown id cannot cancel it.
    let (_, reader) = app.key(&account, &[Scope::VoiceRead]).await;
    let (status, problem) = cancel(&app, &reader, &id).await;
    assert_eq!(status, 403, "{problem}");
    assert_eq!(problem["code"], "insufficient_scope");
    let (_, other) = app.pro_user().await;
    let (status, problem) = cancel(&app, &other, &id).await;
    assert_eq!(status, 404, "{problem}");
    assert_problem(
        &problem,
        404,
        "not_found",
        &format!("/v1/generations/{id}/cancel"),
    );
    let (status, _) = cancel(&app, &secret, "gen_unknown").await;
    assert_eq!(status, 404);
    let (status, problem) = cancel(&app, &secret, &"g".repeat(201)).await;
    assert_eq!((status, &problem["param"]), (400, &json!("generationId")));
    let (_, still) = app.generation(&secret, &id).await;
    assert_eq!(still["status"], "generating");

    let (status, cancelled) = cancel(&app, &secret, &id).await;
    assert_eq!(status, 200, "{cancelled}");
    assert_eq!(cancelled["status"], "failed");
    assert_eq!(cancelled["error"], CancelReason::Request.as_str());
    assert_eq!(cancelled["error"], "cancelled: by request");
    let (_, read) = app.generation(&secret, &id).await;
    assert_eq!(read, cancelled);
    // Cancelling it again is not an error: it is cancelled.
    let (status, again) = cancel(&app, &secret, &id).await;
    assert_eq!((status, &again), (200, &cancelled));
    // Nothing charged, nothing pending: its reservation ended with it.
    assert_eq!(ledger_rows(&app, &account).await, 0);
    let pending = fixtures::generations_of(&app, &account)
        .await
        .iter()
        .filter(|g| g.status == "generating")
        .count();
    assert_eq!(pending, 0);
    app.stop().await;
}

/// A running generation stops inside the piece it renders; a completed one is 409
/// `generation_finished` and stays charged. The time from the cancel request to its answer is
/// printed for docs/api.md (`cargo test --test api -- --nocapture lifecycle::`).
#[tokio::test]
async fn a_running_generation_stops_and_a_finished_one_is_409() {
    let app = TestApp::start_with_workers(1).await;
    let (account, secret) = app.pro_user().await;
    app.voice(&account, "Narrator", EngineId::Kokoro, "af_heart")
        .await;

    let done = accepted(&app, &secret, "Narrator", "Short and done.").await;
    let finished = app.finished(&secret, &done).await;
    assert_eq!(finished["status"], "completed", "{finished}");
    let (status, problem) = cancel(&app, &secret, &done).await;
    assert_eq!(status, 409, "{problem}");
    assert_problem(
        &problem,
        409,
        "generation_finished",
        &format!("/v1/generations/{done}/cancel"),
    );
    let (_, still) = app.generation(&secret, &done).await;
    assert_eq!(still["status"], "completed");
    assert_eq!(ledger_rows(&app, &account).await, 1);

    // Long text without punctuation: one long piece, so the stop must come from inside it.
    let text = "and on and on the road went through the hills and over the rivers past the farms "
        .repeat(30);
    let id = accepted(&app, &secret, "Narrator", text.trim_end()).await;
    crate::common::poll_until(Duration::from_secs(120), "the worker to take it", || {
        let app = &app;
        let id = id.clone();
        async move {
            let started = fixtures::all_generations(app)
                .await
                .iter()
                .any(|g| g.id == id && g.started_at.is_some());
            started.then_some(())
        }
    })
    .await;
    let asked = Instant::now();
    let (status, cancelled) = cancel(&app, &secret, &id).await;
    let answered = asked.elapsed();
    assert_eq!(status, 200, "{cancelled}");
    assert_eq!(cancelled["status"], "failed");
    assert_eq!(cancelled["error"], "cancelled: by request");
    assert!(cancelled.get("audio_url").is_none());
    assert_eq!(
        ledger_rows(&app, &account).await,
        1,
        "only the first is charged"
    );
    println!(
        "cancel of a running generation → failed: {} ms",
        answered.as_millis()
    );
    // An account on no plan cannot reach it (plan before scope).
    let free = app.account(Plan::None).await;
    let (_, free_secret) = app.key(&free, &Scope::ALL).await;
    let (status, problem) = cancel(&app, &free_secret, &id).await;
    assert_eq!(
        (status, &problem["code"]),
        (403, &json!("pro_plan_required"))
    );
    app.stop().await;
}

/// While it renders, a generation's `progress` grows from 0 towards 1 and never goes back;
/// once running it has no `queue_position`, and once completed neither.
#[tokio::test]
async fn progress_grows_while_a_generation_renders() {
    let app = TestApp::start_with_workers(1).await;
    let (account, secret) = app.pro_user().await;
    app.voice(&account, "Narrator", EngineId::Kokoro, "af_heart")
        .await;
    let text = (1..=6)
        .map(|n| format!("This is sentence number {n} of a text that takes a while to speak."))
        .collect::<Vec<_>>()
        .join(" ");
    let id = accepted(&app, &secret, "Narrator", &text).await;
    let mut seen: Vec<f64> = Vec::new();
    let finished = loop {
        let (_, generation) = app.generation(&secret, &id).await;
        if generation["status"] != "generating" {
            break generation;
        }
        let progress = generation["progress"]
            .as_f64()
            .expect("progress while generating");
        assert!((0.0..1.0).contains(&progress), "{generation}");
        if progress > 0.0 {
            assert!(generation.get("queue_position").is_none(), "{generation}");
        }
        if let Some(last) = seen.last() {
            assert!(
                progress >= *last,
                "progress went back: {seen:?} then {progress}"
            );
        }
        seen.push(progress);
        // Within the read quota (300 a minute) however long it renders.
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    assert_eq!(finished["status"], "completed", "{finished}");
    assert!(finished.get("progress").is_none());
    assert!(
        seen.iter().any(|p| *p > 0.0 && *p < 1.0),
        "no poll saw it part-way: {seen:?}"
    );
    println!("progress seen: {seen:?}");
    app.stop().await;
}
