//! Queue consumers: claim a generation, render it on the engine thread, store the audio, and
//! mark it completed (and charged) or failed. Used inside `voiced serve` and by `voiced worker`.
//!
//! Idle workers sleep on PostgreSQL `LISTEN` and wake on the notification a new generation
//! sends. A slow safety tick (one lease period) picks up what notifications cannot announce:
//! leases that expired because their worker died.

pub mod asr;
pub mod completions;
mod engine_thread;

use std::sync::Arc;
use std::time::Duration;

use sqlx::PgPool;
use sqlx::postgres::PgListener;
use tokio::sync::watch;
use tracing::Instrument;

use crate::engines::registry::EngineRegistry;
use crate::store::blobs::{Blob, BlobStore};
use crate::store::queue::{self, Job};
pub use engine_thread::{EngineThread, Rendered};

#[derive(Debug, Clone)]
pub struct WorkerOptions {
    /// Unique name of this worker (lease owner), e.g. `host:pid:1`.
    pub name: String,
    pub lease: Duration,
    pub timeout: Duration,
}

/// Everything a worker needs, shared by all workers of a process.
#[derive(Clone)]
pub struct WorkerDeps {
    pub pool: PgPool,
    pub blobs: Arc<dyn BlobStore>,
    pub registry: Arc<EngineRegistry>,
}

/// Runs one worker until `shutdown` turns true. A job in progress is finished first.
pub async fn run(
    deps: WorkerDeps,
    options: WorkerOptions,
    mut shutdown: watch::Receiver<bool>,
) -> anyhow::Result<()> {
    let engine = EngineThread::spawn(&options.name, deps.registry.clone())?;
    let mut listener = PgListener::connect_with(&deps.pool).await?;
    listener.listen(queue::JOBS_CHANNEL).await?;
    tracing::info!(worker = %options.name, "worker started");
    loop {
        if *shutdown.borrow() {
            break;
        }
        match queue::fail_exhausted(&deps.pool).await {
            Ok(ids) if !ids.is_empty() => {
                tracing::warn!(?ids, "generations failed after repeated interruptions")
            }
            Ok(_) => {}
            Err(err) => tracing::warn!(error = %err, "could not check exhausted generations"),
        }
        match queue::claim(&deps.pool, &options.name, options.lease).await {
            Ok(Some(job)) => {
                process(&deps, &options, &engine, job).await;
                continue;
            }
            Ok(None) => {}
            Err(err) => {
                tracing::warn!(error = %err, "claim failed; retrying after a pause");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        }
        tokio::select! {
            notification = listener.recv() => {
                if let Err(err) = notification {
                    tracing::warn!(error = %err, "listener interrupted; reconnecting");
                }
            }
            () = tokio::time::sleep(options.lease) => {}
            _ = shutdown.changed() => {}
        }
    }
    tracing::info!(worker = %options.name, "worker stopped");
    Ok(())
}

async fn process(deps: &WorkerDeps, options: &WorkerOptions, engine: &EngineThread, job: Job) {
    let span = tracing::info_span!("generation", generation_id = %job.id, engine = %job.engine, attempt = job.attempts);
    process_job(deps, options, engine, job)
        .instrument(span)
        .await;
}

async fn process_job(deps: &WorkerDeps, options: &WorkerOptions, engine: &EngineThread, job: Job) {
    let id = job.id.clone();
    let started = std::time::Instant::now();
    let mut result = engine.submit(job);
    let deadline = tokio::time::sleep(options.timeout);
    tokio::pin!(deadline);
    let mut renew = tokio::time::interval(options.lease / 3);
    renew.tick().await;
    let outcome = loop {
        tokio::select! {
            rendered = &mut result => break rendered.unwrap_or_else(|_| Err("engine thread stopped".into())),
            _ = renew.tick() => {
                match queue::renew(&deps.pool, &id, &options.name, options.lease).await {
                    Ok(true) => {}
                    Ok(false) => {
                        tracing::warn!("lease lost; another worker owns the generation");
                        let _ = result.await;
                        return;
                    }
                    Err(err) => tracing::warn!(error = %err, "lease renewal failed"),
                }
            }
            () = &mut deadline => {
                let message = format!("generation ran past the time limit of {} s", options.timeout.as_secs());
                finish_failed(deps, options, &id, &message).await;
                // The engine cannot be interrupted mid-inference: wait for it before the next job.
                let _ = result.await;
                return;
            }
        }
    };
    match outcome {
        Ok(rendered) => {
            let key = format!("audio/{id}");
            let blob = Blob {
                content_type: rendered.format.content_type().to_owned(),
                bytes: rendered.bytes,
            };
            if let Err(err) = deps.blobs.put(&key, &blob).await {
                // Leave the lease to expire: another attempt will store it.
                tracing::error!(error = %err, "storing audio failed");
                return;
            }
            match queue::complete(&deps.pool, &id, &options.name, &key, rendered.duration_ms).await
            {
                Ok(true) => tracing::info!(
                    audio_ms = rendered.duration_ms,
                    engine_ms = rendered.engine_ms as u64,
                    total_ms = started.elapsed().as_millis() as u64,
                    "generation completed"
                ),
                Ok(false) => tracing::warn!("lease lost before completion; result discarded"),
                Err(err) => tracing::error!(error = %err, "marking completed failed"),
            }
        }
        Err(message) => finish_failed(deps, options, &id, &message).await,
    }
}

async fn finish_failed(deps: &WorkerDeps, options: &WorkerOptions, id: &str, message: &str) {
    tracing::warn!(error = %message, "generation failed");
    if let Err(err) = queue::fail(&deps.pool, id, &options.name, message).await {
        tracing::error!(error = %err, "marking failed failed");
    }
}
