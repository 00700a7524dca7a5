//! Shared test set-up: a fresh migrated database per test, the real router on a port-0
//! listener, and account/key/voice set-up through the same store functions `voiced admin` uses.
//! The database itself is private to this module: suites set up and read what no door reaches
//! through [`fixtures`], by name, and never write SQL.
#![allow(dead_code)]

pub mod browser;
pub mod child;
pub mod client;
pub mod db;
pub mod fixtures;
pub mod vendor_sdk;
pub mod webhooks;
pub mod ws;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use governor::clock::FakeRelativeClock;
use reqwest::{Client, RequestBuilder, Response};
use serde_json::Value;
use sqlx::PgPool;
use tokio::sync::oneshot;

use voiced::config::Config;
use voiced::domain::{ApiKeySecret, EngineId, Plan, Scope, new_id};
use voiced::limits::{LimiterClock, RateLimits};
use voiced::signing::AudioSigner;
use voiced::store;

pub const SIGNING_SECRET: &[u8] = b"test-signing-secret-0123456789abcdef";

pub struct TestApp {
    pub base: String,
    /// The test's database: only `tests/common` (its [`fixtures`]) reaches it.
    pool: PgPool,
    pub client: Client,
    pub clock: FakeRelativeClock,
    pub config: Config,
    pub db: db::TestDb,
    /// The server's own completion notifications ([`TestApp::completion`]).
    completions: voiced::worker::completions::Completions,
    /// The server's recogniser, to fill its queue in admission tests.
    pub asr: voiced::worker::asr::AsrService,
    /// The audio its workers publish as they render ([`TestApp::open_streams`]).
    streams: voiced::worker::streams::Streams,
    /// The segments its workers' engine threads share ([`TestApp::helped_pieces`]).
    board: std::sync::Arc<voiced::worker::pieces::Board>,
    /// The router the server serves, for requests sent without a socket ([`TestApp::oneshot`]).
    router: axum::Router,
    /// The server's core, for calling what its background tasks call (the account purge).
    pub core: voiced::service::Core,
    shutdown: Option<oneshot::Sender<()>>,
    server: Option<tokio::task::JoinHandle<()>>,
}

/// Default configuration, the models dir from the environment, and `extra` settings.
pub fn test_config(extra: &[(&str, &str)]) -> Config {
    let mut env: Vec<(String, String)> = std::env::vars()
        .filter(|(k, _)| k == "VOICED_MODELS_DIR")
        .collect();
    env.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    Config::from_sources(&env).expect("test config")
}

impl TestApp {
    /// A server on a fresh database, with a still rate-limit clock (tests advance it) and no
    /// generation workers.
    pub async fn start() -> TestApp {
        Self::start_with_workers(0).await
    }

    /// Same, with `workers` in-process generation workers on the real models
    /// (`VOICED_MODELS_DIR`, default `~/.cache/voiced/models`).
    pub async fn start_with_workers(workers: u32) -> TestApp {
        Self::start_with(workers, &[]).await
    }

    /// Same, with `extra` settings (e.g. `("VOICED_GENERATION_TIMEOUT_SECS", "1")`).
    pub async fn start_with(workers: u32, extra: &[(&str, &str)]) -> TestApp {
        Self::start_inner(workers, extra, false).await
    }

    /// No workers, `extra` settings, and `public_base_url` set to the server's own address
    /// (the OAuth tests follow the links the server hands out: issuer, metadata, resources).
    pub async fn start_self_addressed(extra: &[(&str, &str)]) -> TestApp {
        Self::start_inner(0, extra, true).await
    }

    /// Same, with `workers` in-process generation workers on the real models.
    pub async fn start_self_addressed_with(workers: u32, extra: &[(&str, &str)]) -> TestApp {
        Self::start_inner(workers, extra, true).await
    }

    async fn start_inner(workers: u32, extra: &[(&str, &str)], self_addressed: bool) -> TestApp {
        if std::env::var_os("VOICED_LOG").is_some() {
            voiced::telemetry::init(voiced::config::LogFormat::Text);
        }
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let (pool, db) = db::fresh_database().await;
        let mut settings = extra.to_vec();
        if self_addressed {
            settings.push(("VOICED_PUBLIC_BASE_URL", &base));
        }
        let mut config = test_config(&settings);
        config.workers = workers;
        let clock = FakeRelativeClock::default();
        // Built as `voiced serve` builds it, with the test's database, secret, still-clock limits
        // and port-0 listener handed in.
        let application = voiced::app::Application::build_with(
            config.clone(),
            voiced::app::Parts {
                pool: Some(pool.clone()),
                signer: Some(AudioSigner::new(SIGNING_SECRET.to_vec())),
                limits: Some(RateLimits::new(LimiterClock::Manual(clock.clone()))),
                listener: Some(listener),
                cold: true,
            },
        )
        .await
        .expect("application");
        let state = application.state();
        let core = state.core.clone();
        let handles = state.process_handles();
        let (completions, asr, streams) = (handles.completions, handles.asr, handles.streams);
        let board = application.worker_deps().board.clone();
        let router = application.router();
        let (tx, rx) = oneshot::channel();
        let server = tokio::spawn(async move {
            application
                .run_until_stopped(async {
                    let _ = rx.await;
                })
                .await
                .expect("server runs");
        });
        TestApp {
            base,
            pool,
            // No idle connection is kept (see `http_client`).
            client: http_client_builder()
                .timeout(Duration::from_secs(120))
                .build()
                .expect("client"),
            clock,
            config,
            db,
            completions,
            asr,
            streams,
            board,
            router,
            core,
            shutdown: Some(tx),
            server: Some(server),
        }
    }

    /// Waits on the server's own notification that generation `id` has finished (checking the
    /// database every `recheck`); its final status.
    pub async fn completion(
        &self,
        id: &str,
        recheck: Duration,
    ) -> sqlx::Result<voiced::domain::GenerationStatus> {
        self.completions.wait(id, recheck).await
    }

    /// How many waits on a completion are registered (none may be left behind).
    pub fn completion_waiters(&self) -> usize {
        self.completions.waiting()
    }

    /// How many renderings publish audio as they go (none may be left behind).
    pub fn open_streams(&self) -> usize {
        self.streams.open()
    }

    /// How many pieces the workers' engine threads rendered for one another.
    pub fn helped_pieces(&self) -> u64 {
        self.board.helped()
    }

    pub fn get(&self, path: &str) -> RequestBuilder {
        self.client.get(format!("{}{path}", self.base))
    }

    pub fn post(&self, path: &str) -> RequestBuilder {
        self.client.post(format!("{}{path}", self.base))
    }

    pub async fn stop(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(server) = self.server.take() {
            let _ = server.await;
        }
        self.pool.close().await;
        self.db.cleanup().await;
    }

    pub async fn account(&self, plan: Plan) -> String {
        let id = new_id("acct");
        store::accounts::insert(&self.pool, &id, &format!("{id}@example.com"), plan)
            .await
            .expect("account");
        id
    }

    /// A key for `account` with `scopes`; returns (key id, secret).
    pub async fn key(&self, account: &str, scopes: &[Scope]) -> (String, String) {
        self.key_with_ceiling(account, scopes, None).await
    }

    pub async fn key_with_ceiling(
        &self,
        account: &str,
        scopes: &[Scope],
        ceiling_minutes: Option<i32>,
    ) -> (String, String) {
        let secret = ApiKeySecret::generate();
        let id = new_id("key");
        let names: Vec<String> = scopes.iter().map(|s| s.as_str().to_owned()).collect();
        store::keys::insert(
            &self.pool,
            store::keys::NewKey {
                id: &id,
                account_id: account,
                name: "test",
                prefix: &secret.prefix(),
                hash: &secret.hash(),
                scopes: &names,
                ceiling_minutes,
            },
        )
        .await
        .expect("key");
        (id, secret.expose().to_owned())
    }

    /// A pro account with a key holding both scopes; returns (account, secret).
    pub async fn pro_user(&self) -> (String, String) {
        let account = self.account(Plan::Pro).await;
        let (_, secret) = self.key(&account, &Scope::ALL).await;
        (account, secret)
    }

    /// Charges `audio_ms` of completed audio on `voice` to the account (and the key, when
    /// given) this month: one completed generation and its ledger row.
    pub async fn charge(&self, account: &str, key_id: Option<&str>, voice: &str, audio_ms: i64) {
        fixtures::charge(self, account, key_id, voice, audio_ms).await;
    }

    pub async fn voice(&self, account: &str, name: &str, engine: EngineId, preset: &str) -> String {
        let id = new_id("voice");
        store::voices::insert_preset(
            &self.pool,
            store::voices::NewVoice {
                id: &id,
                account_id: account,
                name,
                description: "",
                language: "en",
                engine: engine.as_str(),
                preset,
                pinned_seed: None,
                pinned_temperature: None,
                personality_prompt: None,
            },
        )
        .await
        .expect("voice");
        id
    }
}

/// An HTTP client that keeps no idle connection: a server closes a connection idle for
/// `header_read_timeout_secs`, and a request written into one as it closes fails (HTTP/1.1's
/// keep-alive race, met under load when a step between two requests outlasts it).
pub fn http_client() -> reqwest::Client {
    http_client_builder().build().expect("client")
}

/// [`http_client`]'s builder, for a client that needs more settings.
pub fn http_client_builder() -> reqwest::ClientBuilder {
    reqwest::Client::builder().pool_max_idle_per_host(0)
}

/// Polls `check` until it yields a value, at most `within` (then the test fails naming `what`).
/// The pause between polls is short and bounded by the deadline: tests never wait a fixed time.
pub async fn poll_until<T, F, Fut>(within: Duration, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + within;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out after {within:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A one-second 440 Hz tone as WAV, base64-encoded (a valid clip for the recogniser).
pub fn tone_wav_base64() -> String {
    use base64::Engine as _;
    let mut cursor = std::io::Cursor::new(Vec::new());
    let spec = hound::WavSpec {
        channels: 1,
        sample_rate: 16_000,
        bits_per_sample: 16,
        sample_format: hound::SampleFormat::Int,
    };
    let mut writer = hound::WavWriter::new(&mut cursor, spec).unwrap();
    for n in 0..16_000 {
        let t = n as f32 / 16_000.0;
        writer
            .write_sample(((t * 440.0 * std::f32::consts::TAU).sin() * 8000.0) as i16)
            .unwrap();
    }
    writer.finalize().unwrap();
    base64::engine::general_purpose::STANDARD.encode(cursor.into_inner())
}

/// Status and JSON body of a response.
pub async fn json(response: Response) -> (u16, Value) {
    let status = response.status().as_u16();
    let body = response.json::<Value>().await.expect("JSON body");
    (status, body)
}

/// Asserts a problem document with `code`, `status`, and the instance `path`.
pub fn assert_problem(body: &Value, status: u16, code: &str, path: &str) {
    assert_eq!(body["status"], status, "{body}");
    assert_eq!(body["code"], code, "{body}");
    assert_eq!(
        body["type"],
        format!("http://127.0.0.1:8080/errors/{code}"),
        "{body}"
    );
    assert_eq!(body["instance"], path, "{body}");
    assert!(
        body["title"].as_str().is_some_and(|t| !t.is_empty()),
        "{body}"
    );
    assert!(
        body["detail"].as_str().is_some_and(|t| !t.is_empty()),
        "{body}"
    );
}

/// A directory under the system temp dir, removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    /// `mode` matters as root: the cluster's `postgres` account must be able to search it.
    pub fn new(label: &str, mode: u32) -> Self {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "voiced-{label}-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).expect("creating a temp dir");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(mode))
            .expect("setting a temp dir's mode");
        Self(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Says that `test` did not exercise its subject, and why, on the real standard error (a
/// `SKIPPED:` line that `cargo test` shows even when it captures the test's output).
pub fn skip(test: &str, reason: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "SKIPPED: {test}: {reason}");
}

/// Whether a root-only `test` can run here. When not root it is skipped visibly, or fails where
/// `VOICED_REQUIRE_ROOT_TESTS=1` says that root-only tests must run (a CI job as root).
pub fn root_or_skip(test: &str) -> bool {
    if running_as_root() {
        return true;
    }
    assert!(
        std::env::var("VOICED_REQUIRE_ROOT_TESTS").as_deref() != Ok("1"),
        "{test} needs root, and VOICED_REQUIRE_ROOT_TESTS=1 requires it to run"
    );
    skip(
        test,
        "needs root (set VOICED_REQUIRE_ROOT_TESTS=1 to fail instead)",
    );
    false
}

pub fn running_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|ids| ids.split_whitespace().nth(1).map(|id| id == "0"))
        })
        .unwrap_or(false)
}
