//! Logging. Credentials never reach a log line: spans record no headers, and the auth layer
//! records only the account id.

use tracing_subscriber::EnvFilter;

use crate::config::LogFormat;

/// Logs to stderr. `VOICED_LOG` overrides the filter; without it services log at info and
/// one-shot commands (`admin`, `migrate`) only warnings, so that their output stays readable.
pub fn init(format: LogFormat) {
    // symphonia warns once per junk region of a hostile upload: a flood, not news.
    init_with_default(format, "info,sqlx=warn,tower_http=info,symphonia=error");
}

pub fn init_with_default(format: LogFormat, default_filter: &str) {
    let filter =
        EnvFilter::try_from_env("VOICED_LOG").unwrap_or_else(|_| EnvFilter::new(default_filter));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    // A second init (tests) keeps the first subscriber.
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}

/// Prometheus metrics (`metrics_bind`): the process-wide recorder, and a listener apart from
/// the public one. Names and labels are listed in docs/deployment.md ("Metrics").
pub mod metrics_listener {
    use std::net::SocketAddr;
    use std::sync::{Arc, OnceLock};

    use anyhow::Context;
    use axum::Json;
    use axum::Router;
    use axum::extract::State;
    use axum::http::{StatusCode, header};
    use axum::routing::get;
    use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
    use serde_json::{Value, json};
    use sqlx::PgPool;

    use crate::worker::asr::AsrService;
    use crate::worker::health::WorkerHealth;

    /// Seconds buckets of the latency and real-time-factor histograms.
    const LATENCY_BUCKETS: &[f64] = &[
        0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0,
    ];
    const RTF_BUCKETS: &[f64] = &[0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 4.0];

    /// Installs the recorder once per process; later calls return the same handle.
    pub fn recorder() -> anyhow::Result<PrometheusHandle> {
        static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
        if let Some(handle) = HANDLE.get() {
            return Ok(handle.clone());
        }
        let handle = PrometheusBuilder::new()
            .set_buckets_for_metric(
                metrics_exporter_prometheus::Matcher::Full(
                    "voiced_http_request_duration_seconds".into(),
                ),
                LATENCY_BUCKETS,
            )?
            .set_buckets_for_metric(
                metrics_exporter_prometheus::Matcher::Full("voiced_engine_real_time_factor".into()),
                RTF_BUCKETS,
            )?
            .install_recorder()
            .context("installing the metrics recorder")?;
        Ok(HANDLE.get_or_init(|| handle).clone())
    }

    /// What the scrape reads live (gauges set at scrape time), and what the probes report.
    #[derive(Clone)]
    struct Sources {
        handle: PrometheusHandle,
        pool: PgPool,
        asr: Option<AsrService>,
        health: Arc<WorkerHealth>,
    }

    /// Binds `addr` and serves `GET /metrics`, `GET /healthz` and `GET /readyz` until the
    /// process ends. The probes are what an orchestrator asks of a `voiced worker`, which has no
    /// public listener: `/readyz` is 503 while the database does not answer or one of the
    /// process's workers cannot start its engine (the same rule as the public `/readyz`).
    pub async fn spawn(
        addr: SocketAddr,
        pool: PgPool,
        asr: Option<AsrService>,
        health: Arc<WorkerHealth>,
    ) -> anyhow::Result<()> {
        let handle = recorder()?;
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("cannot listen on {addr} (setting metrics_bind)"))?;
        tracing::info!(address = %listener.local_addr()?, "metrics listening");
        let app = Router::new()
            .route("/metrics", get(scrape))
            .route("/healthz", get(healthz))
            .route("/readyz", get(readyz))
            .with_state(Sources {
                handle,
                pool,
                asr,
                health,
            });
        tokio::spawn(async move {
            if let Err(err) = axum::serve(listener, app).await {
                tracing::error!(error = %err, "metrics listener stopped");
            }
        });
        Ok(())
    }

    async fn healthz() -> Json<Value> {
        Json(json!({"status": "ok"}))
    }

    async fn readyz(State(sources): State<Sources>) -> (StatusCode, Json<Value>) {
        if let Some(problem) = sources.health.problem() {
            return (
                StatusCode::SERVICE_UNAVAILABLE,
                Json(json!({"status": "not ready", "detail": problem})),
            );
        }
        match sqlx::query_scalar!("SELECT 1 AS one")
            .fetch_one(&sources.pool)
            .await
        {
            Ok(_) => (StatusCode::OK, Json(json!({"status": "ready"}))),
            Err(err) => {
                tracing::warn!(error = %err, "readiness check failed");
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    Json(json!({"status": "not ready", "detail": "the database does not answer"})),
                )
            }
        }
    }

    async fn scrape(State(sources): State<Sources>) -> impl axum::response::IntoResponse {
        let pool = &sources.pool;
        let idle = pool.num_idle() as f64;
        metrics::gauge!("voiced_db_pool_connections", "state" => "idle").set(idle);
        metrics::gauge!("voiced_db_pool_connections", "state" => "in_use")
            .set(f64::from(pool.size()) - idle);
        match crate::store::queue::depth(pool).await {
            Ok(depth) => {
                metrics::gauge!("voiced_queue_depth").set(depth.queued as f64);
                metrics::gauge!("voiced_queue_running").set(depth.running as f64);
                metrics::gauge!("voiced_queue_oldest_age_seconds").set(depth.oldest_queued_secs);
            }
            Err(err) => tracing::warn!(error = %err, "reading the queue depth for metrics failed"),
        }
        if let Some(asr) = &sources.asr {
            metrics::gauge!("voiced_recogniser_in_use").set(asr.in_use() as f64);
        }
        (
            [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
            sources.handle.render(),
        )
    }
}
