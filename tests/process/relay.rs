//! Audio across processes (issue 39, the scaled layout): a `voiced serve` with no engine threads
//! and a `voiced worker` that renders, on one PostgreSQL and one Redis. A synchronous
//! `/v1/audio/speech` request streams the worker's audio as it is rendered, through Redis
//! (`worker::relay`); a hang-up after the first bytes cancels the generation in the worker and
//! charges what was delivered; a worker killed mid-generation ends the stream with an error, not
//! a wait until the time limit. No timed assertions: every wait polls with a deadline, and
//! "streamed" is checked by the generation's status when the first bytes arrive.

use std::time::Duration;

use crate::common::child::ChildServer;
use crate::common::{TempDir, TestApp, fixtures, poll_until};

use super::scale::{Redis, Worker, assert_audio};

/// Eight sentences: several seconds of engine time, so that the worker is still rendering when
/// the first bytes arrive (and when the test hangs up or kills it).
fn long_text() -> String {
    "This sentence is one of eight that travel from a worker to a server through Redis. ".repeat(8)
}

/// `POST /v1/audio/speech` through `base`: the streamed response and its generation id.
async fn speech(
    client: &reqwest::Client,
    base: &str,
    secret: &str,
    format: &str,
) -> (reqwest::Response, String) {
    let response = client
        .post(format!("{base}/v1/audio/speech"))
        .bearer_auth(secret)
        .json(&serde_json::json!({
            "model": "kokoro", "input": long_text(), "voice": "Narrator",
            "response_format": format, "seed": 5,
        }))
        .send()
        .await
        .expect("the server answers");
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["transfer-encoding"], "chunked");
    let id = response.headers()["x-service-generation-id"]
        .to_str()
        .unwrap()
        .to_owned();
    (response, id)
}

/// Waits until generation `id` is no longer `generating`.
async fn ended(app: &TestApp, id: &str) -> fixtures::StoredGeneration {
    poll_until(Duration::from_secs(120), "the generation to end", || {
        let (app, id) = (app, id.to_owned());
        async move {
            let g = fixtures::generation(app, &id).await;
            (g.status != "generating").then_some(g)
        }
    })
    .await
}

/// The one row the ledger holds for generation `id` (charged once), in ms.
async fn charged(app: &TestApp, id: &str) -> i64 {
    let rows: Vec<i64> = fixtures::ledger(app)
        .await
        .into_iter()
        .filter(|row| row.generation_id == id)
        .map(|row| row.audio_ms)
        .collect();
    assert_eq!(rows.len(), 1, "{id} charged once: {rows:?}");
    rows[0]
}

#[tokio::test]
async fn speech_rendered_by_a_worker_process_streams_through_redis_to_a_serve_process() {
    let app = TestApp::start().await;
    let (account, secret) = app.pro_user().await;
    app.voice(
        &account,
        "Narrator",
        voiced::domain::EngineId::Kokoro,
        "af_heart",
    )
    .await;
    let redis_dir = TempDir::new("redis", 0o700);
    let redis = Redis::start(redis_dir.path()).await;
    let redis_url = redis.url();
    let env = [
        ("VOICED_REDIS_URL", redis_url.as_str()),
        ("VOICED_WHISPER_MODEL", "whisper-tiny.en"),
    ];
    let url = app.db.url();
    // No engine threads in the serve process (the harness's `VOICED_WORKERS=0`): only the
    // worker process renders, and only Redis can carry its audio here before it is stored.
    let serve = ChildServer::start(&url, &env).await;
    let mut worker = Worker::start(&url, &env);
    let client = crate::common::http_client();

    // Streamed: the first bytes arrive while the generation still runs in the worker; the
    // whole body is the stored file (its wav sizes filled in) and decodes to the whole audio.
    let (mut response, id) = speech(&client, &serve.base, &secret, "wav").await;
    let first = response.chunk().await.unwrap().expect("a first chunk");
    let at_first = fixtures::generation(&app, &id).await;
    assert_eq!(
        at_first.status, "generating",
        "the first bytes came before the generation completed"
    );
    let owner = at_first.lease_process().map(str::to_owned);
    assert_eq!(
        owner,
        Some(worker.0.id().to_string()),
        "the worker renders it"
    );
    let mut streamed = first.to_vec();
    while let Some(chunk) = response.chunk().await.expect("the stream ends cleanly") {
        streamed.extend_from_slice(&chunk);
    }
    let generation = ended(&app, &id).await;
    assert_eq!(generation.status, "completed", "{:?}", generation.error);
    let duration_ms = u64::try_from(generation.duration_ms.unwrap()).unwrap();
    assert_eq!(&streamed[4..8], &[0xFF; 4], "OpenAI's streaming wav header");
    let stored = client
        .get(format!("{}/v1/generations/{id}", serve.base))
        .bearer_auth(&secret)
        .send()
        .await
        .unwrap()
        .json::<serde_json::Value>()
        .await
        .unwrap();
    let audio_url = stored["audio_url"].as_str().unwrap();
    let stored = client
        .get(format!(
            "{}{}",
            serve.base,
            &audio_url[audio_url.find("/v1/audio/").unwrap()..]
        ))
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert_eq!(stored.len(), streamed.len());
    assert_eq!(
        &stored[44..],
        &streamed[44..],
        "the stored file is the stream"
    );
    let decoded_ms = assert_audio(&streamed, "the streamed audio");
    assert!(
        decoded_ms + 30 >= duration_ms && decoded_ms <= duration_ms + 30,
        "{decoded_ms} ms decoded of {duration_ms} ms"
    );
    assert_eq!(charged(&app, &id).await, generation.duration_ms.unwrap());
    // The stream is kept a while for late readers; the attempt's alive key went with its end.
    assert_eq!(redis.keys(&format!("voiced:audio:{id}")).await.len(), 1);
    assert!(
        redis
            .keys(&format!("voiced:audio:{id}:alive:*"))
            .await
            .is_empty()
    );

    // A hang-up after the first bytes: the serve process cancels, the worker process stops,
    // and what had left is charged, once.
    let (mut response, id) = speech(&client, &serve.base, &secret, "mp3").await;
    let first = response.chunk().await.unwrap().expect("a first chunk");
    assert!(!first.is_empty());
    assert_eq!(fixtures::generation(&app, &id).await.status, "generating");
    drop(response);
    let generation = ended(&app, &id).await;
    assert_eq!(generation.status, "failed");
    let error = generation.error.clone().unwrap_or_default();
    assert!(
        error.starts_with("cancelled: the client disconnected") && error.contains("charged"),
        "{error}"
    );
    let audio_ms = charged(&app, &id).await;
    assert_eq!(Some(audio_ms), generation.duration_ms);
    assert!(
        audio_ms > 0 && audio_ms < generation.estimated_ms,
        "{audio_ms} ms charged of about {}",
        generation.estimated_ms
    );

    // The worker killed mid-generation: its alive key expires with its lease, and the stream
    // ends with an error (an incomplete transfer) instead of waiting for the time limit (the
    // harness's 900 s). The generation is settled like a hang-up: what had left is charged.
    let (mut response, id) = speech(&client, &serve.base, &secret, "wav").await;
    let first = response.chunk().await.unwrap().expect("a first chunk");
    assert_eq!(
        fixtures::generation(&app, &id).await.status,
        "generating",
        "still rendering when the worker is killed"
    );
    worker.0.kill().expect("SIGKILL");
    worker.0.wait().unwrap();
    let mut received = first.len();
    let cut = loop {
        match response.chunk().await {
            Ok(Some(chunk)) => received += chunk.len(),
            Ok(None) => break false,
            Err(_) => break true,
        }
    };
    assert!(cut, "the stream ends with an error after {received} bytes");
    let generation = ended(&app, &id).await;
    assert_eq!(generation.status, "failed");
    let audio_ms = charged(&app, &id).await;
    assert!(
        audio_ms > 0 && audio_ms < generation.estimated_ms,
        "{audio_ms} ms charged of about {}",
        generation.estimated_ms
    );
    assert!(
        redis
            .keys(&format!("voiced:audio:{id}:alive:*"))
            .await
            .is_empty(),
        "the dead worker's alive key expired"
    );

    drop(serve);
    redis.stop();
    app.stop().await;
}
