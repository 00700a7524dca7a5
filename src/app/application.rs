//! `Application`: the process `voiced serve` runs, built the same way by the tests (z2p's
//! `Application::build` / `run_until_stopped`).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use axum::Router;
use sqlx::PgPool;
use tokio::net::TcpListener;

use super::{
    AppState, CLOSING_TIME, Database, router, signing_secret, spawn_workers, state, stop_workers,
    worker_deps,
};
use crate::config::Config;
use crate::http;
use crate::limits::RateLimits;
use crate::signing::AudioSigner;
use crate::worker::{Shutdown, WorkerDeps};

/// What a caller may hand in instead of what the configuration would make: the tests' fresh
/// database, fixed signing secret, still-clock rate limits and port-0 listener.
#[derive(Default)]
pub struct Parts {
    /// An open, migrated pool (the caller closes it); otherwise `database_url` or the embedded
    /// cluster, opened (and closed) by the application.
    pub pool: Option<PgPool>,
    pub signer: Option<AudioSigner>,
    pub limits: Option<RateLimits>,
    /// A bound listener; otherwise the application binds `bind`.
    pub listener: Option<TcpListener>,
    /// Skip loading the recogniser and the password hasher before serving (they load on first
    /// use instead): the tests start hundreds of servers.
    pub cold: bool,
}

/// A built application: state made, recogniser warmed, listener bound, nothing served yet.
pub struct Application {
    config: Config,
    state: AppState,
    listener: TcpListener,
    /// The database the application opened itself (closed when it stops).
    database: Option<Database>,
    announce_shutdown: tokio::sync::watch::Sender<Option<tokio::time::Instant>>,
    workers: WorkerDeps,
}

impl Application {
    /// Everything from the configuration (`voiced serve`).
    pub async fn build(config: Config) -> anyhow::Result<Self> {
        Self::build_with(config, Parts::default()).await
    }

    /// The same, with some parts handed in (the tests).
    pub async fn build_with(config: Config, parts: Parts) -> anyhow::Result<Self> {
        let (pool, database) = match parts.pool {
            Some(pool) => (pool, None),
            None => {
                let database = Database::open(&config, 16 + 2 * config.workers).await?;
                (database.pool.clone(), Some(database))
            }
        };
        let signer = match parts.signer {
            Some(signer) => signer,
            None => AudioSigner::new(signing_secret(&config)?),
        };
        let limits = match parts.limits {
            Some(limits) => limits,
            None => {
                let limits = RateLimits::real(
                    config.rate_limit_writes_per_hour,
                    config.rate_limit_reads_per_minute,
                );
                match &config.redis_url {
                    Some(url) => limits
                        .shared(url)
                        .map_err(|e| anyhow::anyhow!("setting redis_url: {e}"))?,
                    None => limits,
                }
            }
        };
        let (announce_shutdown, shutdown_deadline) = tokio::sync::watch::channel(None);
        let state = state(&config, pool.clone(), signer, limits, shutdown_deadline).await?;
        let handles = state.process_handles();
        if let Some(addr) = config.metrics_bind {
            crate::telemetry::metrics_listener::spawn(
                addr,
                pool.clone(),
                Some(handles.asr.clone()),
                handles.health.clone(),
            )
            .await?;
        }
        if !handles.asr.is_installed() {
            tracing::warn!(model = %config.whisper_model, "no Whisper model installed: POST /v1/transcriptions answers 503 (run `voiced models fetch {}`)", config.whisper_model);
        } else if !parts.cold {
            // Load and warm the recogniser before the listener binds.
            if let Err(err) = handles.asr.transcribe(vec![0.0; 16_000]).await {
                tracing::error!(error = %err, "the Whisper model does not load; transcriptions will fail");
            }
        }
        let workers = worker_deps(
            &config,
            &pool,
            handles.blobs.clone(),
            handles.health.clone(),
            handles.streams.clone(),
        );
        if !parts.cold {
            crate::service::accounts::warm_up().await;
        }
        let listener = match parts.listener {
            Some(listener) => listener,
            None => TcpListener::bind(config.bind)
                .await
                .with_context(|| format!("cannot listen on {} (setting bind)", config.bind))?,
        };
        Ok(Self {
            config,
            state,
            listener,
            database,
            announce_shutdown,
            workers,
        })
    }

    /// The address the listener is bound to.
    pub fn local_addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .expect("a bound listener has an address")
    }

    pub fn port(&self) -> u16 {
        self.local_addr().port()
    }

    /// The state the doors share (the tests read the core's handles from it).
    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// What this process's generation workers share (the tests watch their board).
    pub fn worker_deps(&self) -> &WorkerDeps {
        &self.workers
    }

    /// The composed router alone, for requests without a listener (`tower::ServiceExt::oneshot`).
    pub fn router(&self) -> Router {
        router(&self.state).0
    }

    /// Serves, with `workers` generation workers, until `shutdown` resolves; then stops
    /// accepting, gives in-flight requests and running generations `shutdown_grace_secs`
    /// between them, hands back what still runs, and closes what it opened.
    pub async fn run_until_stopped(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        let Self {
            config,
            state,
            listener,
            database,
            announce_shutdown,
            workers: deps,
        } = self;
        let (stop, worker_shutdown) = tokio::sync::watch::channel(Shutdown::Running);
        let mut workers = spawn_workers(&config, &deps, config.workers, &worker_shutdown);
        // A process that runs generation workers delivers webhooks too (docs/webhooks.md).
        if config.workers > 0 {
            let handles = state.process_handles();
            workers.push(crate::app::spawn_webhooks(
                &config,
                &handles.pool,
                &handles.signer,
                &worker_shutdown,
            ));
        }
        let housekeeping = tokio::spawn(housekeeping(state.clone()));
        let (app, _) = router(&state);
        tracing::info!(address = %listener.local_addr()?, "voiced listening");
        let signalled = Arc::new(tokio::sync::Notify::new());
        let on_signal = signalled.clone();
        let signal = async move {
            shutdown.await;
            on_signal.notify_one();
        };
        // Work stops a little before the grace ends, so that closing the database and the
        // private cluster still fits inside `shutdown_grace_secs`.
        let grace = Duration::from_secs(config.shutdown_grace_secs).saturating_sub(CLOSING_TIME);
        let draining = {
            let signalled = signalled.clone();
            tokio::spawn(async move {
                signalled.notified().await;
                tracing::info!(grace_secs = grace.as_secs(), "shutting down");
                // Requests waiting on a generation answer (503) a second before the grace ends.
                let _ = announce_shutdown.send(Some(
                    tokio::time::Instant::now() + grace.saturating_sub(Duration::from_secs(1)),
                ));
                stop_workers(&stop, workers, tokio::time::Instant::now() + grace).await;
            })
        };
        let options = http::ServeOptions {
            grace,
            ..http::ServeOptions::from_config(&config)
        };
        let served = http::serve(listener, app, signal, options).await;
        signalled.notify_one(); // in case serving ended without a signal
        housekeeping.abort();
        let _ = draining.await;
        if let Some(database) = database {
            database.close(true).await?;
        }
        served.context("server error")
    }
}

/// Once a minute: drop limiter state that has refilled, purge expired OAuth codes and tokens,
/// console sessions and idempotency records, and remove deleted accounts' content and audio.
async fn housekeeping(state: AppState) {
    let mut tick = tokio::time::interval(Duration::from_secs(60));
    loop {
        tick.tick().await;
        state.console.sign_in_limiter.shrink();
        state.console.sign_up_limiter.shrink();
        crate::service::housekeeping::tick(&state.core).await;
    }
}
