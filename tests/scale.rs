//! Scale-out on real engines (issue 15): several `voiced serve` and `voiced worker` processes on
//! one PostgreSQL, one Redis (`redis_url`) and an S3-compatible server (`blob_store`). Loopback
//! only: Redis listens on a unix socket in a temp dir, moto and the servers on free loopback
//! ports; every wait polls with a deadline.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::child::ChildServer;
use common::{TempDir, TestApp, poll_until};

/// A private `redis-server` (Debian's package; `scripts/install-deps.sh`) on a unix socket, no
/// TCP, no persistence. Killed when dropped.
struct Redis {
    child: Child,
    socket: PathBuf,
}

impl Redis {
    async fn start(dir: &Path) -> Redis {
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

    fn url(&self) -> String {
        format!("unix://{}", self.socket.display())
    }

    /// Names of the keys matching `pattern`.
    async fn keys(&self, pattern: &str) -> Vec<String> {
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

    fn stop(mut self) {
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
    let client = reqwest::Client::new();

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
    // 300 plus the cells refilled meanwhile (one per 200 ms).
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
    assert!(allowed >= 300, "{allowed}");
    assert_eq!(redis.keys("voiced:ratelimit:read-burst:*").await.len(), 1);
    assert_eq!(redis.keys("voiced:ratelimit:writes:*").await.len(), 1);

    // Redis goes away: each process counts alone (its own fresh limiter), reads go on.
    redis.stop();
    let (status, header) = read(&client, &a.base, &secret).await;
    assert_eq!(status, 200, "{header}");
    assert!(header.starts_with("\"read-burst\";r=299;"), "{header}");

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
struct Worker(Child);

impl Worker {
    fn start(database_url: &str) -> Worker {
        let child = Command::new(env!("CARGO_BIN_EXE_voiced"))
            .args(["worker", "--count", "1"])
            .env("VOICED_DATABASE_URL", database_url)
            .env("VOICED_LEASE_SECS", "2")
            .env("VOICED_LOG", "error")
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
    // The small Whisper model: the serve processes warm it at start.
    let env = [
        ("VOICED_REDIS_URL", redis_url.as_str()),
        ("VOICED_WHISPER_MODEL", "whisper-tiny.en"),
        // The polls below would spend the spec's read quota, shared by both processes.
        ("VOICED_RATE_LIMIT_READS_PER_MINUTE", "100000"),
    ];
    let url = app.db.url();
    let (a, b) = tokio::join!(
        ChildServer::start(&url, &env),
        ChildServer::start(&url, &env)
    );
    let mut workers = [Worker::start(&url), Worker::start(&url)];
    let client = reqwest::Client::new();

    // Generations submitted to either serve process are completed by the workers, read back
    // and downloaded through both.
    let mut ids = Vec::new();
    for (n, base) in [&a.base, &b.base, &a.base, &b.base].into_iter().enumerate() {
        ids.push(speak(&client, base, &secret, &format!("Shared work, part {n}.")).await);
    }
    for id in &ids {
        let generation = finished(&client, &b.base, &secret, id).await;
        assert_eq!(generation["status"], "completed", "{generation}");
        let audio_url = generation["audio_url"].as_str().unwrap();
        let path = &audio_url[audio_url.find("/v1/audio/").unwrap()..];
        let mut bodies = Vec::new();
        for base in [&a.base, &b.base] {
            let response = client.get(format!("{base}{path}")).send().await.unwrap();
            assert_eq!(response.status(), 200, "{base}{path}");
            bodies.push(response.bytes().await.unwrap());
        }
        assert!(bodies[0].len() > 1000);
        assert_eq!(bodies[0], bodies[1]);
    }

    // A worker killed while it holds a job: the other worker completes it.
    let id = speak(&client, &a.base, &secret, LONG_TEXT).await;
    let owner_pid: String = poll_until(Duration::from_secs(120), "a worker to claim it", || {
        let (pool, id) = (app.pool.clone(), id.clone());
        async move {
            sqlx::query_scalar::<_, String>(
                "SELECT split_part(lease_owner, ':', 2) FROM generations
                 WHERE id = $1 AND status = 'generating' AND lease_expires_at > now()",
            )
            .bind(id)
            .fetch_optional(&pool)
            .await
            .unwrap()
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
    let attempts: i32 = sqlx::query_scalar("SELECT attempts FROM generations WHERE id = $1")
        .bind(&id)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(attempts, 2, "taken over after the kill");

    // A serve process killed: the other goes on serving, and its generations complete.
    drop(a);
    let id = speak(&client, &b.base, &secret, "Still served.").await;
    let generation = finished(&client, &b.base, &secret, &id).await;
    assert_eq!(generation["status"], "completed", "{generation}");

    drop(workers);
    drop(b);
    redis.stop();
    app.stop().await;
}

/// A local S3-compatible server for the `blob_store` test: moto (PyPI `moto[server]`, pinned in
/// `scripts/test.sh`, which installs it into a venv and names it in `VOICED_MOTO_SERVER`).
/// Chosen because it installs from PyPI with pip (no container, no compiler), speaks the S3 API
/// including ranged GETs and object attributes, and keeps everything in memory. Killed on drop.
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
        let client = reqwest::Client::new();
        poll_until(Duration::from_secs(60), "the S3 server to answer", || {
            let request = client.get(format!("{}/", server.endpoint)).send();
            async move { request.await.ok().filter(|r| r.status() == 200).map(drop) }
        })
        .await;
        server
    }

    async fn create_bucket(&self, bucket: &str) {
        let response = reqwest::Client::new()
            .put(format!("{}/{bucket}", self.endpoint))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "creating bucket {bucket}");
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test]
async fn audio_in_s3_is_written_by_a_worker_and_streams_from_every_serve_process() {
    let app = TestApp::start().await;
    let (account, secret) = app.pro_user().await;
    app.voice(
        &account,
        "Narrator",
        voiced::domain::EngineId::Kokoro,
        "jf_alpha",
    )
    .await;
    let s3 = S3Server::start().await;
    s3.create_bucket("voiced-audio").await;
    let env = [
        ("VOICED_BLOB_STORE", "s3://voiced-audio/tenant-audio"),
        ("AWS_ENDPOINT_URL", s3.endpoint.as_str()),
        ("AWS_ALLOW_HTTP", "true"),
        ("AWS_ACCESS_KEY_ID", "test"),
        ("AWS_SECRET_ACCESS_KEY", "test"),
        ("AWS_REGION", "us-east-1"),
        ("VOICED_WHISPER_MODEL", "whisper-tiny.en"),
    ];
    let mut with_worker = env.to_vec();
    with_worker.push(("VOICED_WORKERS", "1"));
    let url = app.db.url();
    let (a, b) = tokio::join!(
        ChildServer::start(&url, &with_worker),
        ChildServer::start(&url, &env)
    );
    let client = reqwest::Client::new();

    let id = speak(&client, &b.base, &secret, "Stored in the bucket.").await;
    let generation = finished(&client, &b.base, &secret, &id).await;
    assert_eq!(generation["status"], "completed", "{generation}");

    // The generation records that S3 holds its audio; PostgreSQL holds none of it.
    let key: String = sqlx::query_scalar("SELECT audio_key FROM generations WHERE id = $1")
        .bind(&id)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(key, format!("s3:audio/{id}"));
    let in_pg: i64 = sqlx::query_scalar("SELECT count(*) FROM blobs")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(in_pg, 0);

    // The object is in the bucket under the prefix, and both processes stream it, whole and in
    // ranges (ranged GETs to S3).
    let bucket = object_store::aws::AmazonS3Builder::new()
        .with_endpoint(&s3.endpoint)
        .with_allow_http(true)
        .with_access_key_id("test")
        .with_secret_access_key("test")
        .with_region("us-east-1")
        .with_bucket_name("voiced-audio")
        .build()
        .unwrap();
    let stored = object_store::ObjectStore::get(
        &bucket,
        &object_store::path::Path::from(format!("tenant-audio/audio/{id}")),
    )
    .await
    .expect("the object is in the bucket under the prefix");
    assert_eq!(
        stored
            .attributes
            .get(&object_store::Attribute::ContentType)
            .map(|v| v.to_string()),
        Some(generation_content_type(&generation).to_owned())
    );
    let object = stored.bytes().await.unwrap();
    assert!(object.len() > 1000);
    let audio_url = generation["audio_url"].as_str().unwrap();
    let path = &audio_url[audio_url.find("/v1/audio/").unwrap()..];
    for base in [&a.base, &b.base] {
        let whole = client.get(format!("{base}{path}")).send().await.unwrap();
        assert_eq!(whole.status(), 200);
        assert_eq!(whole.bytes().await.unwrap(), object);
        let part = client
            .get(format!("{base}{path}"))
            .header("range", "bytes=10-99")
            .send()
            .await
            .unwrap();
        assert_eq!(part.status(), 206);
        assert_eq!(part.bytes().await.unwrap(), object.slice(10..100));
    }
    drop((a, b));
    app.stop().await;
}

/// The content type the API gives for the generation's format.
fn generation_content_type(generation: &serde_json::Value) -> &'static str {
    match generation["format"].as_str() {
        Some("wav") => "audio/wav",
        Some("opus") => "audio/ogg",
        _ => "audio/mpeg",
    }
}
