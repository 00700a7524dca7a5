//! Start-up: the database (embedded or given), the signing secret, the application state, and
//! `voiced serve`.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

mod application;
mod router;
mod state;

pub use application::{Application, Parts};
pub use router::router;
pub use state::AppState;

use anyhow::Context;
use rand::RngCore;
use sqlx::PgPool;

use crate::config::Config;
use crate::console::limiter::SignInLimiter;
use crate::engines::registry::EngineRegistry;
use crate::engines::whisper::{ComputeType, WhisperConfig};
use crate::http::error::ErrorLinks;
use crate::limits::RateLimits;
use crate::models::whisper::WhisperModel;
use crate::service::Core;
use crate::signing::AudioSigner;
use crate::store;
use crate::store::blobs::{BlobStore, PgBlobStore, RoutedBlobStore, S3BlobStore};
use crate::store::embedded::{EmbeddedConfig, EmbeddedPostgres};
use crate::worker::asr::AsrService;
use crate::worker::completions::Completions;
use crate::worker::health::WorkerHealth;
use crate::worker::streams::Streams;
use crate::worker::{self, Shutdown, WorkerDeps, WorkerOptions};

/// The database the process uses, and the private cluster behind it when it is the embedded one.
pub struct Database {
    pub pool: PgPool,
    embedded: Option<EmbeddedPostgres>,
}

impl Database {
    /// Connects to `database_url`, or starts (first time: creates) the private cluster under the
    /// data dir; migrates either way.
    pub async fn open(config: &Config, max_connections: u32) -> anyhow::Result<Self> {
        let (url, embedded) = match &config.database_url {
            Some(url) => (url.clone(), None),
            None => {
                let cluster = EmbeddedPostgres::start(&EmbeddedConfig {
                    data_dir: config.data_dir.clone(),
                    pg_bin: std::env::var_os("VOICED_PG_BIN").map(Into::into),
                })
                .await?;
                (cluster.database_url("voiced"), Some(cluster))
            }
        };
        let pool = store::connect_and_migrate(&url, max_connections).await?;
        Ok(Self { pool, embedded })
    }

    /// Closes the pool. `voiced serve` stops the private cluster always (it owns it); short
    /// commands (`admin`, `migrate`) stop it only when they started it, so that they never stop
    /// a cluster a running `voiced serve` uses.
    pub async fn close(self, owner: bool) -> anyhow::Result<()> {
        self.pool.close().await;
        if let Some(cluster) = self.embedded
            && (owner || !cluster.reused())
        {
            cluster.stop().await?;
        }
        Ok(())
    }
}

/// The audio-link secret: configured, or created once in `data_dir/signing.key` (mode 0600).
pub fn signing_secret(config: &Config) -> anyhow::Result<Vec<u8>> {
    if let Some(secret) = &config.signing_secret {
        return Ok(secret.as_bytes().to_vec());
    }
    let path = config.data_dir.join("signing.key");
    if let Ok(existing) = std::fs::read(&path) {
        anyhow::ensure!(
            existing.len() >= 32,
            "{} is shorter than 32 bytes; delete it to make a new one",
            path.display()
        );
        return Ok(existing);
    }
    let mut secret = vec![0u8; 32];
    rand::rng().fill_bytes(&mut secret);
    write_private(&path, &secret)?;
    Ok(secret)
}

fn write_private(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("creating {}", path.display()))?;
    file.write_all(bytes)?;
    Ok(())
}

/// The engines this deployment has (from `models_dir`).
pub fn engines(config: &Config) -> Arc<EngineRegistry> {
    Arc::new(EngineRegistry::new(
        config.models_dir.clone(),
        config.engine_threads as usize,
    ))
}

/// The recogniser threads for the configured Whisper model (loaded on first use).
pub fn asr(config: &Config) -> anyhow::Result<AsrService> {
    let model = WhisperModel::from_name(&config.whisper_model).ok_or_else(|| {
        anyhow::anyhow!(
            "setting whisper_model: unknown model {}",
            config.whisper_model
        )
    })?;
    let whisper = WhisperConfig {
        model_dir: model.dir(&config.models_dir),
        threads: 1,
        compute_type: ComputeType::Int8,
    };
    let asr = AsrService::start(
        whisper,
        config.asr_threads as usize,
        config.asr_queue as usize,
    )
    .context("starting recogniser threads")?;
    Ok(asr.with_max_per_account(config.max_transcriptions_per_account as usize))
}

/// Builds the application state from configuration and an open pool.
pub async fn state(
    config: &Config,
    pool: PgPool,
    signer: AudioSigner,
    limits: RateLimits,
    shutdown_deadline: tokio::sync::watch::Receiver<Option<tokio::time::Instant>>,
) -> anyhow::Result<AppState> {
    let health = Arc::new(WorkerHealth::default());
    let completions = Completions::start(pool.clone())
        .await
        .context("listening for generation completions")?;
    // Sign-in attempts count where the API's limits do (Redis when `redis_url` is set).
    let sign_in_limiter = SignInLimiter::default()
        .with_ipv6_prefix(config.ipv6_rate_limit_prefix)
        .with_redis(limits.redis());
    let sign_up_limiter = crate::console::limiter::SignUpLimiter::new(
        config.signup_per_address_per_hour,
        config.signup_per_hour,
        crate::limits::LimiterClock::Real(std::time::Instant::now()),
    )
    .with_ipv6_prefix(config.ipv6_rate_limit_prefix)
    .with_redis(limits.redis());
    let clients = crate::service::oauth::clients::ClientDirectory::new(
        config.oauth_allow_loopback_fetch,
        crate::service::oauth::clients::ClientLimits {
            registrations_per_hour: config.oauth_registrations_per_hour,
            registrations_per_address_per_day: config.oauth_registrations_per_address_per_day,
            registrations_per_day: config.oauth_registrations_per_day,
            fetches_in_flight: config.oauth_metadata_fetches_in_flight,
            fetches_per_address_per_hour: config.oauth_metadata_fetches_per_address_per_hour,
            ipv6_prefix: config.ipv6_rate_limit_prefix,
        },
    )
    .with_redis(limits.redis());
    let csrf_key = signer.derive_key("console anonymous csrf");
    let flash_key = signer.derive_key("console key flash");
    let core = Core::new(
        config,
        crate::service::core::Parts {
            asr: asr(config)?,
            blobs: blob_store(config, &pool)?,
            engines: engines(config),
            completions,
            pool,
            signer,
            limits,
            health,
            shutdown_deadline,
            oauth_clients: clients,
            streams: streams(config)?,
        },
    );
    Ok(AppState {
        core,
        links: Arc::new(ErrorLinks {
            errors_url: config.errors_url.clone(),
            billing_url: config.billing_url.clone(),
            console_url: config.console_url.clone(),
        }),
        console: Arc::new(crate::console::ConsoleSettings {
            signup: config.signup,
            signup_plan: config.signup_plan,
            billing_contact: config.billing_contact.clone(),
            secure_cookies: config.public_base_url.starts_with("https://"),
            sign_in_limiter,
            sign_up_limiter,
            passwords: crate::service::accounts::PasswordGate::new(
                config.password_hashes_in_flight,
                config.password_hash_queue,
            ),
            csrf_key,
            flash_key,
            clone_limits: crate::service::cloning::CloneLimits {
                max_voices: config.max_cloned_voices_per_account,
                max_per_month: config.max_clones_per_account_per_month,
            },
            max_keys: config.max_keys_per_account,
            free: crate::service::principal::FreeAllowance {
                speech_minutes: config.app_free_minutes,
                transcription_minutes: config.app_free_transcription_minutes,
            },
        }),
        trusted_proxies: Arc::new(config.trusted_proxies.clone()),
    })
}

/// The core of an operator's command (`voiced admin`): the operations the doors use, on the
/// database `pool`. Nothing is started that the commands do not use (the recogniser and the
/// engines load on first use, and no command uses them but `voice clone`).
pub async fn operator_core(config: &Config, pool: PgPool) -> anyhow::Result<Core> {
    let signer = AudioSigner::new(signing_secret(config)?);
    let limits = RateLimits::real(
        config.rate_limit_writes_per_hour,
        config.rate_limit_reads_per_minute,
    );
    let (_, never) = tokio::sync::watch::channel(None);
    Ok(state(config, pool, signer, limits, never)
        .await?
        .core
        .clone())
}

/// Starts `count` generation workers; they drain, then stop, when `shutdown` says so.
pub fn spawn_workers(
    config: &Config,
    deps: &WorkerDeps,
    count: u32,
    shutdown: &tokio::sync::watch::Receiver<Shutdown>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "local".into());
    (0..count)
        .map(|n| {
            let options = WorkerOptions {
                name: format!("{host}:{}:{n}", std::process::id()),
                lease: Duration::from_secs(config.lease_secs),
                timeout: Duration::from_secs(config.generation_timeout_secs),
            };
            let (deps, shutdown) = (deps.clone(), shutdown.clone());
            tokio::spawn(async move {
                if let Err(err) = worker::run(deps, options, shutdown).await {
                    tracing::error!(error = %err, "worker stopped with an error");
                }
            })
        })
        .collect()
}

/// Starts the webhook delivery loop of a process that runs generation workers
/// (`worker::webhooks::run`); it stops when `shutdown` leaves `Running`. The payload's `data`
/// is the REST read's object (`http::models`), with a fresh signed `audio_url`.
pub fn spawn_webhooks(
    config: &Config,
    pool: &PgPool,
    signer: &AudioSigner,
    shutdown: &tokio::sync::watch::Receiver<Shutdown>,
) -> tokio::task::JoinHandle<()> {
    use crate::worker::webhooks::{Dispatcher, Subject};
    let link_signer = signer.clone();
    let base_url: Arc<str> = config.public_base_url.as_str().into();
    let render: crate::worker::webhooks::Render = Arc::new(move |subject| match subject {
        Subject::Generation(row) => {
            serde_json::to_value(crate::http::models::Generation::present_with(row, |id| {
                crate::service::audio::signed_link(&link_signer, &base_url, id)
            }))
            .ok()
        }
        Subject::Capture(detail) => crate::http::models::CaptureDetail::try_from(detail)
            .ok()
            .and_then(|d| serde_json::to_value(d).ok()),
    });
    let dispatcher = Dispatcher {
        pool: pool.clone(),
        sealer: crate::signing::Sealer::new(signer),
        render,
        allow_private: config.webhooks_allow_private_addresses,
        retry_base: Duration::from_millis(config.webhooks_retry_base_ms),
        in_flight: config.webhooks_deliveries_in_flight as usize,
    };
    tokio::spawn(crate::worker::webhooks::run(dispatcher, shutdown.clone()))
}

/// Audio in PostgreSQL, and in S3 when `blob_store` is set (new audio then goes there).
pub fn blob_store(config: &Config, pool: &PgPool) -> anyhow::Result<Arc<dyn BlobStore>> {
    let s3 = match &config.blob_store {
        Some(url) => Some(S3BlobStore::from_url(url).context("setting blob_store")?),
        None => None,
    };
    // Downloads and synchronous answers read audio through a small pool of their own
    // (`download_connections`, opened lazily), never taking the main pool's connections.
    let reads = sqlx::postgres::PgPoolOptions::new()
        .max_connections(config.download_connections)
        .acquire_timeout(pool.options().get_acquire_timeout())
        .connect_lazy_with((*pool.connect_options()).clone());
    Ok(Arc::new(RoutedBlobStore::new(
        PgBlobStore::new(pool.clone()).with_read_pool(reads),
        s3,
    )))
}

/// The registry of running generations' audio: relayed through Redis when `redis_url` is set,
/// so that a worker process's audio reaches a serve process's requests as it is rendered.
pub fn streams(config: &Config) -> anyhow::Result<Streams> {
    Ok(match &config.redis_url {
        Some(url) => Streams::relayed(
            crate::worker::relay::Relay::open(url, Duration::from_secs(config.lease_secs))
                .map_err(|e| anyhow::anyhow!("setting redis_url: {e}"))?,
        ),
        None => Streams::default(),
    })
}

/// What the process's workers share. `streams` is the one the process's requests read (a
/// `voiced worker` process has none reading it).
pub fn worker_deps(
    config: &Config,
    pool: &PgPool,
    blobs: Arc<dyn BlobStore>,
    health: Arc<WorkerHealth>,
    streams: Streams,
) -> WorkerDeps {
    WorkerDeps {
        pool: pool.clone(),
        blobs,
        registry: engines(config),
        health,
        streams,
        board: Arc::default(),
    }
}

/// `voiced worker`: generation workers only, until SIGINT/SIGTERM; then the jobs in hand finish
/// within the grace period, or are handed back to the queue.
pub async fn run_workers(config: Config, count: u32) -> anyhow::Result<()> {
    let database = Database::open(&config, 2 * count + 2).await?;
    let health: Arc<WorkerHealth> = Arc::default();
    if let Some(addr) = config.metrics_bind {
        crate::telemetry::metrics_listener::spawn(
            addr,
            database.pool.clone(),
            None,
            health.clone(),
        )
        .await?;
    }
    let (stop, shutdown) = tokio::sync::watch::channel(Shutdown::Running);
    // Webhook deliveries sign audio links and open endpoint secrets with the signing secret,
    // which must be the one `voiced serve` uses (setting `signing_secret`, or the same data dir).
    let hooks = match signing_secret(&config) {
        Ok(secret) => Some(spawn_webhooks(
            &config,
            &database.pool,
            &AudioSigner::new(secret),
            &shutdown,
        )),
        Err(err) => {
            tracing::error!(error = %err, "no signing secret: this worker delivers no webhooks");
            None
        }
    };
    let mut workers = spawn_workers(
        &config,
        &worker_deps(
            &config,
            &database.pool,
            blob_store(&config, &database.pool)?,
            health,
            streams(&config)?,
        ),
        count,
        &shutdown,
    );
    workers.extend(hooks);
    shutdown_signal().await;
    let grace = Duration::from_secs(config.shutdown_grace_secs).saturating_sub(CLOSING_TIME);
    stop_workers(&stop, workers, tokio::time::Instant::now() + grace).await;
    database.close(false).await
}

/// What shutdown keeps of the grace period for closing connections and the database.
const CLOSING_TIME: Duration = Duration::from_millis(500);

/// Drains the workers (no new claims; the jobs in hand go on) until `deadline`, then aborts what
/// still runs (stopped at a sentence boundary and handed back to the queue).
async fn stop_workers(
    stop: &tokio::sync::watch::Sender<Shutdown>,
    workers: Vec<tokio::task::JoinHandle<()>>,
    deadline: tokio::time::Instant,
) {
    let _ = stop.send(Shutdown::Drain);
    let mut all = futures_util::future::join_all(workers);
    if tokio::time::timeout_at(deadline, &mut all).await.is_err() {
        tracing::warn!(
            "generations still running at the end of the grace period: handing them back"
        );
        let _ = stop.send(Shutdown::Abort);
        all.await;
    }
}

/// `voiced serve`: until SIGINT/SIGTERM, then drain and stop the private cluster.
pub async fn serve(config: Config) -> anyhow::Result<()> {
    Application::build(config)
        .await?
        .run_until_stopped(shutdown_signal())
        .await
}

/// Resolves on SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
}
