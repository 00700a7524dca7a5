//! Scale-out on real engines (issue 15): several `voiced serve` and `voiced worker` processes on
//! one PostgreSQL, one Redis (`redis_url`) and an S3-compatible server (`blob_store`). Loopback
//! only: Redis listens on a unix socket in a temp dir, moto and the servers on free loopback
//! ports; every wait polls with a deadline.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::common::child::ChildServer;
use crate::common::fixtures;
use crate::common::{TempDir, TestApp, poll_until};

/// A private `redis-server` (Debian's package; `scripts/install-deps.sh`) on a unix socket, no
/// TCP, no persistence. Killed when dropped.
pub(super) struct Redis {
    child: Child,
    socket: PathBuf,
}

impl Redis {
    pub(super) async fn start(dir: &Path) -> Redis {
        let socket = dir.join("redis.sock");
        let child = Command::new("redis-server")
            .args(["--port", "0", "--save", "", "--appendonly", "no"])
            .arg("--unixsocket")
            .arg(&socket)
            .arg("--dir")
            .arg(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server starts (scripts/install-deps.sh installs it)");
        let redis = Redis { child, socket };
        let url = redis.url();
        poll_until(Duration::from_secs(30), "redis-server to answer", || {
            let url = url.clone();
            async move {
                let client = redis::Client::open(url).ok()?;
                let mut connection = client.get_multiplexed_async_connection().await.ok()?;
                redis::cmd("PING")
                    .query_async::<String>(&mut connection)
                    .await
                    .ok()
            }
        })
        .await;
        redis
    }

    pub(super) fn url(&self) -> String {
        format!("unix://{}", self.socket.display())
    }

    /// Names of the keys matching `pattern`.
    pub(super) async fn keys(&self, pattern: &str) -> Vec<String> {
        let client = redis::Client::open(self.url()).expect("redis url");
        let mut connection = client
            .get_multiplexed_async_connection()
            .await
            .expect("redis answers");
        redis::cmd("KEYS")
            .arg(pattern)
            .query_async(&mut connection)
            .await
            .expect("KEYS")
    }

    /// Redis's clock (the one the GCRA script reads), in microseconds.
    async fn time_us(&self) -> u64 {
        let client = redis::Client::open(self.url()).expect("redis url");
        let mut connection = client
            .get_multiplexed_async_connection()
            .await
            .expect("redis answers");
        let (secs, micros): (u64, u64) = redis::cmd("TIME")
            .query_async(&mut connection)
            .await
            .expect("TIME");
        secs * 1_000_000 + micros
    }

    pub(super) fn stop(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.socket);
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `GET /v1/voices` through `base`: status and the `RateLimit` header.
async fn read(client: &reqwest::Client, base: &str, secret: &str) -> (u16, String) {
    let response = client
        .get(format!("{base}/v1/voices"))
        .bearer_auth(secret)
        .send()
        .await
        .expect("the server answers");
    let header = response
        .headers()
        .get("ratelimit")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    (response.status().as_u16(), header)
}

/// A write the limiter counts (`{}` is refused by validation afterwards): status and header.
async fn write(client: &reqwest::Client, base: &str, secret: &str) -> (u16, String) {
    let response = client
        .post(format!("{base}/v1/speech"))
        .bearer_auth(secret)
        .json(&serde_json::json!({}))
        .send()
        .await
        .expect("the server answers");
    let header = response
        .headers()
        .get("ratelimit")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    (response.status().as_u16(), header)
}

/// One console sign-in attempt with a wrong password through `base`, in a session of its own
/// (the form's cookie and CSRF token): the status.
async fn sign_in(base: &str, email: &str) -> u16 {
    let client = crate::common::http_client_builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let page = client
        .get(format!("{base}/console/sign-in"))
        .send()
        .await
        .unwrap();
    let cookie = page.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let html = page.text().await.unwrap();
    let marker = "name=\"csrf_token\" value=\"";
    let start = html.find(marker).expect("a form with a csrf_token") + marker.len();
    let token = &html[start..][..html[start..].find('"').unwrap()];
    client
        .post(format!("{base}/console/sign-in"))
        .header("cookie", cookie)
        .form(&[
            ("email", email),
            ("password", "not the password"),
            ("csrf_token", token),
        ])
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test]
async fn the_read_quota_is_shared_by_serve_processes_and_survives_a_redis_outage() {
    let app = TestApp::start().await;
    let (_account, secret) = app.pro_user().await;
    let redis_dir = TempDir::new("redis", 0o700);
    let redis = Redis::start(redis_dir.path()).await;
    // No models: these servers only answer reads (and start without loading Whisper).
    let no_models = TempDir::new("no-models", 0o755);
    // A write quota too small to refill during the test (one request per 10 minutes), and the
    // spec's read quota.
    let env = [
        ("VOICED_REDIS_URL", redis.url()),
        ("VOICED_MODELS_DIR", no_models.path().display().to_string()),
        ("VOICED_RATE_LIMIT_WRITES_PER_HOUR", "6".to_string()),
    ];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let url = app.db.url();
    // Process A serves Prometheus metrics on a listener of its own.
    let metrics_bind = format!("127.0.0.1:{}", common::child::free_port());
    let mut env_a = env.clone();
    env_a.push(("VOICED_METRICS_BIND", metrics_bind.as_str()));
    let (a, b) = tokio::join!(
        ChildServer::start(&url, &env_a),
        ChildServer::start(&url, &env)
    );
    let client = crate::common::http_client();

    // Six writes alternate between the processes; the remaining count is one count, and the
    // seventh is refused by either.
    for n in 0..6u32 {
        let base = if n % 2 == 0 { &a.base } else { &b.base };
        let (status, header) = write(&client, base, &secret).await;
        assert_ne!(status, 429, "write {n}: {header}");
        let expected = format!("\"writes\";r={};", 5 - n);
        assert!(
            header.starts_with(&expected),
            "write {n} through {base}: {header}"
        );
    }
    for base in [&a.base, &b.base] {
        let (status, header) = write(&client, base, &secret).await;
        assert_eq!(status, 429, "through {base}");
        assert!(header.starts_with("\"writes\";r=0;"), "{header}");
    }

    // Reads: 300 a minute for the key, not per process. Both processes are read from until each
    // has refused one; alone, each would have allowed 300 (600 in all). Shared, the total is
    // exactly what one GCRA allows: the 300 of the burst plus one cell per 200 ms since the
    // first read, on Redis's clock (read before the first request and after the last).
    let started_us = redis.time_us().await;
    let mut allowed = 0u32;
    let mut allowed_by = [0u32; 2];
    let mut refused = [false, false];
    let mut n = 0usize;
    while !(refused[0] && refused[1]) {
        let batch: Vec<_> = (0..16)
            .map(|i| {
                let side = (n + i) % 2;
                let base = if side == 0 { &a.base } else { &b.base };
                let request = client
                    .get(format!("{base}/v1/voices"))
                    .bearer_auth(&secret)
                    .send();
                async move { (side, request.await.expect("the server answers")) }
            })
            .collect();
        n += 16;
        for (side, response) in futures_util::future::join_all(batch).await {
            match response.status().as_u16() {
                200 => {
                    allowed += 1;
                    allowed_by[side] += 1;
                }
                429 => {
                    refused[side] = true;
                    let retry_after: u64 = response.headers()["retry-after"]
                        .to_str()
                        .unwrap()
                        .parse()
                        .unwrap();
                    assert!((1..=60).contains(&retry_after), "{retry_after}");
                }
                other => panic!("read answered {other}"),
            }
        }
        assert!(
            allowed < 600,
            "{allowed} reads allowed: the quota is not shared"
        );
    }
    let refilled = (redis.time_us().await - started_us) / 200_000;
    assert!(
        (300..=300 + refilled).contains(&u64::from(allowed)),
        "{allowed} reads allowed by the two processes; one shared quota allows 300 + {refilled}"
    );
    assert_eq!(redis.keys("voiced:ratelimit:read-burst:*").await.len(), 1);
    assert_eq!(redis.keys("voiced:ratelimit:writes:*").await.len(), 1);

    // Console sign-in attempts count in the same Redis: ten wrong passwords alternating between
    // the processes, and the eleventh is refused by either (10 per 15 minutes per email and per
    // address; no attempt comes back for 90 s).
    for n in 0..10 {
        let base = if n % 2 == 0 { &a.base } else { &b.base };
        assert_eq!(
            sign_in(base, "mallory@example.com").await,
            401,
            "attempt {n}"
        );
    }
    for base in [&a.base, &b.base] {
        assert_eq!(sign_in(base, "mallory@example.com").await, 429, "{base}");
    }
    // One key for the email, one for the address; neither names them.
    let signin_keys = redis.keys("voiced:signin:*").await;
    assert_eq!(signin_keys.len(), 2, "{signin_keys:?}");
    assert!(
        signin_keys
            .iter()
            .all(|k| !k.contains("mallory") && !k.contains("127.0.0.1"))
    );

    // Redis goes away: each process counts alone (its own fresh limiter), reads go on, and so do
    // sign-in attempts (fail open).
    redis.stop();
    let (status, header) = read(&client, &a.base, &secret).await;
    assert_eq!(status, 200, "{header}");
    assert!(header.starts_with("\"read-burst\";r=299;"), "{header}");
    assert_eq!(sign_in(&b.base, "mallory@example.com").await, 401);

    // Redis comes back (empty, on the same socket): the processes count there again by
    // themselves, without a restart.
    let redis = Redis::start(redis_dir.path()).await;
    poll_until(
        Duration::from_secs(60),
        "the serve process to count in Redis again",
        || {
            let (client, base, secret, redis) = (&client, &b.base, &secret, &redis);
            async move {
                let (status, _) = read(client, base, secret).await;
                assert_eq!(status, 200);
                (!redis.keys("voiced:ratelimit:read-burst:*").await.is_empty()).then_some(())
            }
        },
    )
    .await;

    // A's metrics: its requests by route template, the refusals and the fallback by policy, the
    // queue and the pool. Never on the public port.
    let public = client
        .get(format!("{}/metrics", a.base))
        .send()
        .await
        .unwrap();
    assert_eq!(public.status(), 404);
    let metrics = client
        .get(format!("http://{metrics_bind}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let value = |name: &str| -> f64 {
        metrics
            .lines()
            .find_map(|line| line.strip_prefix(name)?.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {name} in\n{metrics}"))
    };
    // A counted at least the reads it allowed in the shared-quota loop (the split between the
    // two processes varies with timing; the count does not).
    assert!(
        value("voiced_http_requests_total{route=\"/v1/voices\",method=\"GET\",status=\"200\"}")
            >= f64::from(allowed_by[0]),
        "{allowed_by:?}"
    );
    assert!(
        value("voiced_http_requests_total{route=\"/v1/speech\",method=\"POST\",status=\"429\"}")
            >= 1.0
    );
    assert!(
        value("voiced_http_request_duration_seconds_count{route=\"/v1/voices\",method=\"GET\"}")
            >= 150.0
    );
    assert_eq!(
        value("voiced_rate_limit_refusals_total{policy=\"writes\"}"),
        1.0
    );
    assert!(value("voiced_rate_limit_refusals_total{policy=\"read-burst\"}") >= 1.0);
    assert!(value("voiced_rate_limit_fallbacks_total{policy=\"read-burst\"}") >= 1.0);
    assert_eq!(value("voiced_queue_depth"), 0.0);
    assert_eq!(value("voiced_queue_oldest_age_seconds"), 0.0);
    assert!(value("voiced_db_pool_connections{state=\"idle\"}") >= 0.0);
    assert!(value("voiced_db_pool_connections{state=\"in_use\"}") >= 0.0);
    assert_eq!(value("voiced_recogniser_in_use"), 0.0);

    drop((a, b));
    redis.stop();
    app.stop().await;
}

/// Long enough (several seconds of engine time) that the worker is still rendering it when the
/// test kills it.
const LONG_TEXT: &str = "The first worker starts this paragraph and never finishes it. \
    It is stopped without warning in the middle of a sentence, and its lease runs out. \
    The second worker then claims the same generation and renders it from the beginning. \
    Nothing is lost, and nothing is charged twice. The caller only sees it take a little longer.";

/// A `voiced worker` process (one engine thread) with a short lease, so that a killed worker's
/// job is taken over quickly. Killed when dropped (a failing test leaves no process behind).
pub(super) struct Worker(pub(super) Child);

impl Worker {
    pub(super) fn start(database_url: &str, env: &[(&str, &str)]) -> Worker {
        let child = Command::new(env!("CARGO_BIN_EXE_voiced"))
            .args(["worker", "--count", "1"])
            .env("VOICED_DATABASE_URL", database_url)
            .env("VOICED_LEASE_SECS", "2")
            .env("VOICED_LOG", "error")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .expect("voiced worker starts");
        Worker(child)
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn speak(client: &reqwest::Client, base: &str, secret: &str, text: &str) -> String {
    let response = client
        .post(format!("{base}/v1/speech"))
        .bearer_auth(secret)
        .json(&serde_json::json!({"text": text, "voice_name": "Narrator"}))
        .send()
        .await
        .expect("the server answers");
    assert_eq!(response.status(), 202);
    let body: serde_json::Value = response.json().await.unwrap();
    body["id"].as_str().expect("an id").to_owned()
}

/// Polls the generation through `base` until it is no longer generating.
async fn finished(
    client: &reqwest::Client,
    base: &str,
    secret: &str,
    id: &str,
) -> serde_json::Value {
    poll_until(Duration::from_secs(300), "the generation to finish", || {
        let request = client
            .get(format!("{base}/v1/generations/{id}"))
            .bearer_auth(secret)
            .send();
        async move {
            let body: serde_json::Value = request.await.ok()?.json().await.ok()?;
            (body["status"] != "generating").then_some(body)
        }
    })
    .await
}

/// Decodes `bytes` as the API's audio (any of its formats) and checks that it is speech-like:
/// at least half a second long and not silent. Returns its duration in milliseconds.
pub(super) fn assert_audio(bytes: &[u8], what: &str) -> u64 {
    let decoded = voiced::audio::decode_for_asr(bytes.to_vec(), &Default::default())
        .unwrap_or_else(|e| panic!("{what}: the audio does not decode: {e}"));
    let samples = &decoded.samples_16k;
    let rms = (samples.iter().map(|s| s * s).sum::<f32>() / samples.len() as f32).sqrt();
    assert!(
        decoded.duration_ms >= 500,
        "{what}: {} ms",
        decoded.duration_ms
    );
    assert!(rms > 0.01, "{what}: silent (rms {rms})");
    decoded.duration_ms
}

/// The `/v1/audio/…` path of a completed generation's `audio_url`.
fn audio_path(generation: &serde_json::Value) -> String {
    let audio_url = generation["audio_url"].as_str().expect("an audio_url");
    audio_url[audio_url.find("/v1/audio/").unwrap()..].to_owned()
}

/// A local S3-compatible server for the `blob_store` test: moto (PyPI `moto[server]`, pinned in
/// `scripts/test.sh`, which installs it into a venv and names it in `VOICED_MOTO_SERVER`).
/// Chosen because it installs from PyPI with pip (no container, no compiler), speaks the S3 API
/// including ranged GETs, presigned URLs and object attributes, and keeps everything in memory.
/// Killed on drop.
struct S3Server {
    child: Child,
    endpoint: String,
}

impl S3Server {
    async fn start() -> S3Server {
        let program = std::env::var("VOICED_MOTO_SERVER").unwrap_or_else(|_| {
            let cache = std::env::var("VOICED_CACHE").unwrap_or_else(|_| {
                format!("{}/.cache/voiced", std::env::var("HOME").expect("HOME"))
            });
            format!("{cache}/venv-moto/bin/moto_server")
        });
        let port = common::child::free_port();
        let child = Command::new(&program)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("{program} starts ({e}); scripts/test.sh installs moto[server] there")
            });
        let server = S3Server {
            child,
            endpoint: format!("http://127.0.0.1:{port}"),
        };
        let client = crate::common::http_client();
        poll_until(Duration::from_secs(60), "the S3 server to answer", || {
            let request = client.get(format!("{}/", server.endpoint)).send();
            async move { request.await.ok().filter(|r| r.status() == 200).map(drop) }
        })
        .await;
        server
    }

    async fn create_bucket(&self, bucket: &str) {
        let response = crate::common::http_client()
            .put(format!("{}/{bucket}", self.endpoint))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "creating bucket {bucket}");
    }

    /// Whether `bucket` holds an object at `path`.
    async fn has_object(&self, bucket: &str, path: &str) -> bool {
        let store = object_store::aws::AmazonS3Builder::new()
            .with_endpoint(&self.endpoint)
            .with_allow_http(true)
            .with_access_key_id("test")
            .with_secret_access_key("test")
            .with_region("us-east-1")
            .with_bucket_name(bucket)
            .build()
            .unwrap();
        match object_store::ObjectStore::head(&store, &object_store::path::Path::from(path)).await {
            Ok(_) => true,
            Err(object_store::Error::NotFound { .. }) => false,
            Err(e) => panic!("asking the bucket for {path}: {e}"),
        }
    }

    /// The object at `path` in `bucket`: its bytes and content type.
    async fn object(&self, bucket: &str, path: &str) -> (axum::body::Bytes, Option<String>) {
        let store = object_store::aws::AmazonS3Builder::new()
            .with_endpoint(&self.endpoint)
            .with_allow_http(true)
            .with_access_key_id("test")
            .with_secret_access_key("test")
            .with_region("us-east-1")
            .with_bucket_name(bucket)
            .build()
            .unwrap();
        let stored = object_store::ObjectStore::get(&store, &object_store::path::Path::from(path))
            .await
            .unwrap_or_else(|e| panic!("{path} is in the bucket: {e}"));
        let content_type = stored
            .attributes
            .get(&object_store::Attribute::ContentType)
            .map(|v| v.to_string());
        (stored.bytes().await.unwrap(), content_type)
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The content type the API gives for the generation's format.
fn generation_content_type(generation: &serde_json::Value) -> &'static str {
    match generation["format"].as_str() {
        Some("wav") => "audio/wav",
        Some("opus") => "audio/ogg",
        _ => "audio/mpeg",
    }
}

/// The scaled layout of docs/deployment.md, whole: two `voiced serve` processes (no workers in
/// them) and two `voiced worker` processes on one PostgreSQL, one Redis and one S3-compatible
/// bucket. Serve process A streams audio through itself; B has `blob_redirect` and answers
/// downloads with a redirect to a presigned URL of the object.
/// Deletes `account` in the console of the serve process at `base`, signing in with a password
/// set for it first.
async fn delete_account(base: &str, app: &TestApp, account: &str) {
    let password = "a long enough passphrase";
    fixtures::set_password(app, account, password).await;
    let email = fixtures::stored_account(app, account).await.email;
    let client = crate::common::http_client_builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    // The cookies the console sets (the anonymous CSRF cookie, then the session).
    let mut jar: Vec<String> = Vec::new();
    let mut keep = |response: &reqwest::Response| {
        for set in response.headers().get_all("set-cookie") {
            let pair = set.to_str().unwrap().split(';').next().unwrap().to_owned();
            let name = pair.split('=').next().unwrap().to_owned();
            jar.retain(|c| !c.starts_with(&format!("{name}=")));
            jar.push(pair);
        }
        jar.join("; ")
    };
    let csrf = |html: String| {
        let marker = "name=\"csrf_token\" value=\"";
        let start = html.find(marker).expect("a form with a csrf_token") + marker.len();
        html[start..][..html[start..].find('"').unwrap()].to_owned()
    };
    let page = client
        .get(format!("{base}/console/sign-in"))
        .send()
        .await
        .unwrap();
    let cookie = keep(&page);
    let token = csrf(page.text().await.unwrap());
    let signed_in = client
        .post(format!("{base}/console/sign-in"))
        .header("cookie", cookie)
        .form(&[
            ("email", email.as_str()),
            ("password", password),
            ("csrf_token", &token),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(signed_in.status(), 303);
    let cookie = keep(&signed_in);
    let page = client
        .get(format!("{base}/console/account"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    let token = csrf(page.text().await.unwrap());
    let deleted = client
        .post(format!("{base}/console/account/delete"))
        .header("cookie", &cookie)
        .form(&[
            ("password", password),
            ("confirm", "yes"),
            ("csrf_token", &token),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 303);
}

#[tokio::test]
async fn two_serve_and_two_worker_processes_share_the_work_and_survive_losing_one_of_each() {
    let app = TestApp::start().await;
    let (account, secret) = app.pro_user().await;
    app.voice(
        &account,
        "Narrator",
        voiced::domain::EngineId::Kokoro,
        "jf_alpha",
    )
    .await;
    let redis_dir = TempDir::new("redis", 0o700);
    let redis = Redis::start(redis_dir.path()).await;
    let redis_url = redis.url();
    let s3 = S3Server::start().await;
    s3.create_bucket("voiced-audio").await;
    let storage = [
        ("VOICED_BLOB_STORE", "s3://voiced-audio/tenant-audio"),
        ("AWS_ENDPOINT_URL", s3.endpoint.as_str()),
        ("AWS_ALLOW_HTTP", "true"),
        ("AWS_ACCESS_KEY_ID", "test"),
        ("AWS_SECRET_ACCESS_KEY", "test"),
        ("AWS_REGION", "us-east-1"),
    ];
    let mut env = storage.to_vec();
    env.extend([
        ("VOICED_REDIS_URL", redis_url.as_str()),
        // The small Whisper model: the serve processes warm it at start.
        ("VOICED_WHISPER_MODEL", "whisper-tiny.en"),
        // The polls below would spend the spec's read quota, shared by both processes.
        ("VOICED_RATE_LIMIT_READS_PER_MINUTE", "100000"),
    ]);
    let mut env_b = env.clone();
    env_b.push(("VOICED_BLOB_REDIRECT", "true"));
    let url = app.db.url();
    let (a, b) = tokio::join!(
        ChildServer::start(&url, &env),
        ChildServer::start(&url, &env_b)
    );
    // Each worker reports its completions on a metrics listener of its own.
    let worker_metrics = [
        format!("127.0.0.1:{}", common::child::free_port()),
        format!("127.0.0.1:{}", common::child::free_port()),
    ];
    let mut workers = worker_metrics.each_ref().map(|bind| {
        let mut env = storage.to_vec();
        env.push(("VOICED_METRICS_BIND", bind.as_str()));
        Worker::start(&url, &env)
    });
    let client = crate::common::http_client();
    let no_redirects = crate::common::http_client_builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();

    // Generations submitted to either serve process are completed by the worker processes,
    // written to the bucket, and downloaded through both serve processes: streamed by A,
    // redirected by B to the bucket.
    let mut ids = Vec::new();
    for (n, base) in [&a.base, &b.base, &a.base, &b.base].into_iter().enumerate() {
        ids.push(speak(&client, base, &secret, &format!("Shared work, part {n}.")).await);
    }
    for id in &ids {
        let generation = finished(&client, &b.base, &secret, id).await;
        assert_eq!(generation["status"], "completed", "{generation}");
        let path = audio_path(&generation);
        let key = fixtures::generation(&app, id)
            .await
            .audio_key
            .expect("an audio key");
        assert_eq!(key, format!("s3:audio/{id}"), "S3 holds the audio");
        let (object, content_type) = s3
            .object("voiced-audio", &format!("tenant-audio/audio/{id}"))
            .await;
        assert_eq!(
            content_type.as_deref(),
            Some(generation_content_type(&generation))
        );

        let streamed = client
            .get(format!("{}{path}", a.base))
            .send()
            .await
            .unwrap();
        assert_eq!(streamed.status(), 200, "A streams {path}");
        assert_eq!(streamed.bytes().await.unwrap(), object);

        let redirect = no_redirects
            .get(format!("{}{path}", b.base))
            .send()
            .await
            .unwrap();
        assert_eq!(redirect.status(), 307, "B redirects {path}");
        assert_eq!(redirect.headers()["cache-control"], "no-store");
        let location = redirect.headers()["location"].to_str().unwrap().to_owned();
        assert!(location.starts_with(&s3.endpoint), "{location}");
        // SigV4 query signing, valid at most 5 minutes (the link has about 15 left).
        let expires: u64 = location
            .split(['?', '&'])
            .find_map(|p| p.strip_prefix("X-Amz-Expires="))
            .expect("a presigned URL")
            .parse()
            .unwrap();
        assert!((1..=300).contains(&expires), "{expires}");
        let followed = client
            .get(format!("{}{path}", b.base))
            .send()
            .await
            .unwrap();
        assert_eq!(followed.status(), 200);
        assert_eq!(followed.bytes().await.unwrap(), object);
        assert_audio(&object, id);
    }
    // Every one of them completed once, in the worker processes.
    let mut completed = 0.0;
    for bind in &worker_metrics {
        let text = client
            .get(format!("http://{bind}/metrics"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        completed += text
            .lines()
            .filter(|l| l.starts_with("voiced_generations_total{") && l.contains("completed"))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum::<f64>();
    }
    assert_eq!(completed, 4.0, "completions counted by the two workers");
    // The probes an orchestrator asks of a worker process, on the same listener.
    for bind in &worker_metrics {
        for (path, status) in [("healthz", "ok"), ("readyz", "ready")] {
            let response = client
                .get(format!("http://{bind}/{path}"))
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), 200, "worker {bind} /{path}");
            let body: serde_json::Value = response.json().await.unwrap();
            assert_eq!(body["status"], status, "worker {bind} /{path}");
        }
    }
    // PostgreSQL holds none of the audio.
    let in_pg = fixtures::blob_count(&app).await;
    assert_eq!(in_pg, 0);

    // Ranges: A reads them from the bucket with ranged GETs; B's redirect carries the client's
    // Range header to the bucket, which answers 206 itself. A HEAD is redirected to a URL signed
    // for HEAD.
    let generation = finished(&client, &b.base, &secret, &ids[0]).await;
    let path = audio_path(&generation);
    let (object, _) = s3
        .object("voiced-audio", &format!("tenant-audio/audio/{}", ids[0]))
        .await;
    for base in [&a.base, &b.base] {
        let part = client
            .get(format!("{base}{path}"))
            .header("range", "bytes=10-99")
            .send()
            .await
            .unwrap();
        assert_eq!(part.status(), 206, "{base}");
        assert_eq!(part.bytes().await.unwrap(), object.slice(10..100), "{base}");
        let head = client.head(format!("{base}{path}")).send().await.unwrap();
        assert_eq!(head.status(), 200, "HEAD through {base}");
        assert_eq!(
            head.headers()["content-length"].to_str().unwrap(),
            object.len().to_string()
        );
    }
    // Deleting a generation's audio (issue 30) removes the object from the bucket.
    let deleted = &ids[1];
    let status = client
        .delete(format!("{}/v1/generations/{deleted}/audio", b.base))
        .bearer_auth(&secret)
        .send()
        .await
        .unwrap()
        .status();
    assert_eq!(status, 204);
    assert!(
        !s3.has_object("voiced-audio", &format!("tenant-audio/audio/{deleted}"))
            .await,
        "the object is gone from the bucket"
    );
    let after = finished(&client, &a.base, &secret, deleted).await;
    assert_eq!(after["has_audio"], false, "{after}");

    // Audio kept in PostgreSQL (written before the move to S3: its key has no `s3:` mark) is
    // streamed by B all the same: there is no URL to hand out for it.
    let pg_key = format!("audio/{}", ids[0]);
    fixtures::put_blob(&app, &pg_key, generation_content_type(&generation), &object).await;
    fixtures::set_audio_key(&app, &ids[0], &pg_key).await;
    let streamed = no_redirects
        .get(format!("{}{path}", b.base))
        .send()
        .await
        .unwrap();
    assert_eq!(streamed.status(), 200, "PostgreSQL audio streams");
    assert_eq!(streamed.bytes().await.unwrap(), object);

    // A worker killed while it holds a job: the other worker completes it.
    let id = speak(&client, &a.base, &secret, LONG_TEXT).await;
    let owner_pid: String = poll_until(Duration::from_secs(120), "a worker to claim it", || {
        let (app, id) = (&app, id.clone());
        async move {
            let g = fixtures::generation(app, &id).await;
            (g.status == "generating" && g.leased)
                .then(|| g.lease_process().map(str::to_owned))
                .flatten()
        }
    })
    .await;
    let victim = workers
        .iter()
        .position(|w| w.0.id().to_string() == owner_pid)
        .expect("one of the two workers holds it");
    workers[victim].0.kill().expect("SIGKILL");
    workers[victim].0.wait().unwrap();
    let generation = finished(&client, &a.base, &secret, &id).await;
    assert_eq!(generation["status"], "completed", "{generation}");
    let attempts = fixtures::generation(&app, &id).await.attempts;
    assert_eq!(attempts, 2, "taken over after the kill");
    let audio = client
        .get(format!("{}{}", b.base, audio_path(&generation)))
        .send()
        .await
        .unwrap();
    assert_eq!(audio.status(), 200);
    let long_ms = assert_audio(&audio.bytes().await.unwrap(), "the taken-over generation");
    assert!(long_ms > 10_000, "the whole paragraph: {long_ms} ms");

    // A serve process killed: the other goes on serving, and its generations complete.
    drop(a);
    let id = speak(&client, &b.base, &secret, "Still served.").await;
    let generation = finished(&client, &b.base, &secret, &id).await;
    assert_eq!(generation["status"], "completed", "{generation}");
    let audio = client
        .get(format!("{}{}", b.base, audio_path(&generation)))
        .send()
        .await
        .unwrap();
    assert_eq!(audio.status(), 200);
    assert_audio(
        &audio.bytes().await.unwrap(),
        "after the serve process was killed",
    );

    // The account deleted in B's console (issue 30): its audio leaves the bucket when B's
    // housekeeping (once a minute) purges it.
    let in_bucket: Vec<String> = fixtures::generations_of(&app, &account)
        .await
        .into_iter()
        .filter_map(|g| g.audio_key)
        .filter(|key| key.starts_with("s3:"))
        .collect();
    assert!(!in_bucket.is_empty());
    delete_account(&b.base, &app, &account).await;
    poll_until(
        Duration::from_secs(150),
        "the deleted account to be purged",
        || {
            let (app, account) = (&app, account.clone());
            async move {
                fixtures::stored_account(app, &account)
                    .await
                    .purged
                    .then_some(())
            }
        },
    )
    .await;
    for key in &in_bucket {
        let object = format!("tenant-audio/{}", key.trim_start_matches("s3:"));
        assert!(
            !s3.has_object("voiced-audio", &object).await,
            "{object} is gone from the bucket"
        );
    }

    drop(workers);
    drop(b);
    redis.stop();
    app.stop().await;
}
