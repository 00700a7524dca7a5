//! Queue consumers: claim a generation, render it on the engine thread, store the audio, and
//! mark it completed (and charged) or failed. Used inside `voiced serve` and by `voiced worker`.
//!
//! Idle workers sleep on PostgreSQL `LISTEN` and wake on the notification a new generation
//! sends. A slow safety tick (one lease period) picks up what notifications cannot announce:
//! leases that expired because their worker died.

pub mod asr;
pub mod completions;
mod engine_thread;
pub mod health;
pub mod pieces;
pub mod relay;
pub mod streams;
pub mod webhooks;

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use sqlx::PgPool;
use sqlx::postgres::PgListener;
use tokio::sync::watch;
use tracing::Instrument;

use crate::domain::EngineId;
use crate::engines::Cancel;
use crate::engines::registry::EngineRegistry;
use crate::engines::text::{pronounce, timing};
use crate::store::blobs::{Blob, BlobStore};
use crate::store::prints::{self, PrintJob};
use crate::store::queue::{self, Claimed, Completion, Job, Lease};
pub use engine_thread::{
    ChunkSender, EngineThread, PrintError, RenderError, Rendered, compute_print,
};
use health::WorkerHealth;
use pieces::Board;
use streams::{StreamEnd, Streams};

/// What the process asks of its workers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shutdown {
    Running,
    /// Finish the job in hand, claim no more.
    Drain,
    /// The grace period is over: stop the job in hand (within its piece) and hand it back to
    /// the queue for another worker.
    Abort,
}

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
    pub health: Arc<WorkerHealth>,
    /// Where the audio of running generations is published as it is produced (shared with the
    /// process's synchronous requests).
    pub streams: Streams,
    /// The segments the process's engine threads share (one board per process).
    pub board: Arc<Board>,
}

/// Runs one worker until `shutdown` turns true. A job in progress is finished first.
pub async fn run(
    deps: WorkerDeps,
    options: WorkerOptions,
    mut shutdown: watch::Receiver<Shutdown>,
) -> anyhow::Result<()> {
    let mut engine = EngineThread::spawn(&options.name, deps.registry.clone(), deps.board.clone())?;
    let mut listener = PgListener::connect_with(&deps.pool).await?;
    listener
        .listen_all([queue::JOBS_CHANNEL, queue::CANCEL_CHANNEL])
        .await?;
    if !warm_up(&deps, &options, &mut engine, &mut shutdown).await {
        return Ok(());
    }
    tracing::info!(worker = %options.name, "worker started");
    // When this worker last looked for jobs whose every attempt died: once a lease period is
    // enough (a lease only expires that often), not twice per job.
    let mut swept: Option<std::time::Instant> = None;
    loop {
        if *shutdown.borrow() != Shutdown::Running {
            break;
        }
        if swept.is_none_or(|at| at.elapsed() >= options.lease) {
            swept = Some(std::time::Instant::now());
            sweep_exhausted(&deps.pool).await;
        }
        // Generations and voice prints share one fair order (`queue::claim_next`).
        match queue::claim_next(&deps.pool, &options.name, options.lease).await {
            Ok(Some(Claimed::Generation(job))) => {
                let mut control = Control {
                    engine: &mut engine,
                    listener: &mut listener,
                    shutdown: &mut shutdown,
                };
                process(&deps, &options, &mut control, job).await;
                continue;
            }
            Ok(Some(Claimed::Print(job))) => {
                process_print(&deps, &options, &mut engine, job).await;
                continue;
            }
            Ok(None) => {}
            Err(err) => {
                tracing::warn!(error = %err, "claim failed; retrying after a pause");
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_secs(1)) => {}
                    _ = shutdown.changed() => {}
                }
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

/// Fails the generations and voice prints whose workers died on every attempt.
async fn sweep_exhausted(pool: &PgPool) {
    match queue::fail_exhausted(pool).await {
        Ok(ids) if !ids.is_empty() => {
            tracing::warn!(?ids, "generations failed after repeated interruptions")
        }
        Ok(_) => {}
        Err(err) => tracing::warn!(error = %err, "could not check exhausted generations"),
    }
    match prints::fail_exhausted(pool).await {
        Ok(ids) if !ids.is_empty() => {
            tracing::warn!(?ids, "voice prints failed after repeated interruptions")
        }
        Ok(_) => {}
        Err(err) => tracing::warn!(error = %err, "could not check exhausted voice prints"),
    }
}

/// Loads every installed engine before the first claim. An engine that cannot start makes the
/// worker report it (so `/readyz` answers 503 with the reason) and retry with backoff, without
/// claiming jobs it would only fail. `false` when shutdown came first.
async fn warm_up(
    deps: &WorkerDeps,
    options: &WorkerOptions,
    engine: &mut EngineThread,
    shutdown: &mut watch::Receiver<Shutdown>,
) -> bool {
    let installed: Vec<EngineId> = EngineId::ALL
        .into_iter()
        .filter(|e| deps.registry.is_installed(*e))
        .collect();
    let mut backoff = Duration::from_secs(1);
    loop {
        let mut failure = None;
        for id in &installed {
            match engine.load(*id).await {
                Ok(()) => {}
                Err(err) => {
                    if err == RenderError::Panicked
                        && let Err(e) = engine.restart()
                    {
                        tracing::error!(error = %e, "cannot start an engine thread");
                    }
                    failure = Some((*id, err));
                    break;
                }
            }
        }
        let Some((id, err)) = failure else {
            deps.health.report(&options.name, None);
            return true;
        };
        tracing::error!(worker = %options.name, engine = %id, error = ?err, retry_in_secs = backoff.as_secs(), "engine cannot start");
        deps.health.report(
            &options.name,
            Some(format!(
                "the {id} engine cannot start on a generation worker (details in the server log); retrying"
            )),
        );
        tokio::select! {
            () = tokio::time::sleep(backoff) => {}
            _ = shutdown.changed() => {}
        }
        if *shutdown.borrow() != Shutdown::Running {
            return false;
        }
        backoff = (backoff * 2).min(Duration::from_secs(60));
    }
}

/// What a job in progress listens to besides its result.
struct Control<'a> {
    engine: &'a mut EngineThread,
    /// Cancellation notifications.
    listener: &'a mut PgListener,
    /// The process's shutdown state (an abort hands the job back).
    shutdown: &'a mut watch::Receiver<Shutdown>,
}

async fn process(deps: &WorkerDeps, options: &WorkerOptions, control: &mut Control<'_>, job: Job) {
    let span = tracing::info_span!("generation", generation_id = %job.id, engine = %job.engine, attempt = job.attempts);
    process_job(deps, options, control, job)
        .instrument(span)
        .await;
}

async fn process_job(
    deps: &WorkerDeps,
    options: &WorkerOptions,
    control: &mut Control<'_>,
    mut job: Job,
) {
    let Control {
        engine,
        listener,
        shutdown,
    } = control;
    // An engine that reads letters says an inline pronunciation's word as written.
    if let Ok(engine_id) = job.engine.parse::<EngineId>()
        && let Cow::Owned(text) = pronounce::for_engine(&job.text, engine_id)
    {
        job.text = text;
    }
    let id = job.id.clone();
    let engine_name = job.engine.clone();
    // Word timestamps point into the caller's text; the engine read `job.text`.
    let texts = job
        .wants_words
        .then(|| (job.source_text.clone(), job.text.clone()));
    let started = std::time::Instant::now();
    let cancel = Arc::new(Cancel::new());
    // Chunks go out to this process's streaming requests as the engine thread encodes them.
    // Dropped without `finish` (handed back, lease lost, time limit) the stream ends broken.
    let content_type = job
        .format
        .parse::<crate::audio::AudioFormat>()
        .map_or("application/octet-stream", |f| f.content_type());
    let publisher = deps.streams.publish(&id, content_type);
    let (chunks, mut produced) = tokio::sync::mpsc::unbounded_channel();
    let mut result = engine.submit_streaming(job, cancel.clone(), Some(chunks));
    let deadline = tokio::time::sleep(options.timeout);
    tokio::pin!(deadline);
    let mut renew = tokio::time::interval(options.lease / 3);
    renew.tick().await;
    // A broken listener (the database went away) answers at once, again and again: stop
    // listening for this job rather than spin; lease renewal still reports cancellations.
    let mut listening = true;
    let mut progress = ProgressReport::default();
    let outcome = loop {
        tokio::select! {
            rendered = &mut result => break rendered.unwrap_or(Err(RenderError::Panicked)),
            Some(chunk) = produced.recv() => {
                publisher.chunk(chunk);
                progress.report(deps, &id, &options.name, cancel.rendered_ms()).await;
            }
            changed = shutdown.changed() => {
                if changed.is_err() || *shutdown.borrow() == Shutdown::Abort {
                    // The grace period is over: the job goes back to the queue now, not to
                    // `failed`; the engine is told to stop, and nothing it still produces is
                    // written (the process is exiting).
                    cancel.cancel();
                    match queue::release(&deps.pool, &id, &options.name).await {
                        Ok(_) => tracing::info!("generation handed back to the queue (shutdown)"),
                        Err(err) => tracing::error!(error = %err, "handing back failed; its lease will expire"),
                    }
                    return;
                }
            }
            notification = listener.recv(), if listening => match notification {
                Ok(n) if n.channel() == queue::CANCEL_CHANNEL && n.payload() == id => {
                    cancel.cancel();
                }
                Ok(_) => {}
                Err(_) => listening = false,
            },
            _ = renew.tick() => {
                match queue::renew(&deps.pool, &id, &options.name, options.lease).await {
                    Ok(Lease::Held) => {}
                    Ok(Lease::CancelRequested) => cancel.cancel(),
                    Ok(Lease::Lost) => {
                        tracing::warn!("lease lost; another worker owns the generation");
                        cancel.cancel();
                        let _ = result.await;
                        return;
                    }
                    Err(err) => tracing::warn!(error = %err, "lease renewal failed"),
                }
            }
            () = &mut deadline => {
                let message = format!("generation ran past the time limit of {} s", options.timeout.as_secs());
                finish_failed(deps, options, &id, &engine_name, &message).await;
                // Stop the engine (inside its piece), and wait for it before the next job.
                cancel.cancel();
                if result.await.is_err() {
                    replace_engine(engine);
                }
                return;
            }
        }
    };
    // Every chunk was sent before the result.
    while let Ok(chunk) = produced.try_recv() {
        publisher.chunk(chunk);
    }
    match outcome {
        Ok(rendered) => {
            let key = deps.blobs.key_for(&format!("audio/{id}"));
            let blob = Blob {
                content_type: rendered.format.content_type().to_owned(),
                bytes: rendered.bytes,
            };
            if let Err(err) = deps.blobs.put(&key, &blob).await {
                // Leave the lease to expire: another attempt will store it.
                tracing::error!(error = %err, "storing audio failed");
                return;
            }
            let words = texts.map(|(source, read)| {
                serde_json::to_value(timing::with_sources(&source, &read, rendered.words))
                    .unwrap_or_default()
            });
            match queue::complete(
                &deps.pool,
                &id,
                &options.name,
                &key,
                rendered.duration_ms,
                words.as_ref(),
            )
            .await
            {
                Ok(Completion::Completed) => {
                    publisher.finish(StreamEnd::Completed);
                    tracing::info!(
                        audio_ms = rendered.duration_ms,
                        engine_ms = rendered.engine_ms as u64,
                        total_ms = started.elapsed().as_millis() as u64,
                        "generation completed"
                    );
                    completed_metrics(
                        &engine_name,
                        rendered.duration_ms,
                        rendered.engine_ms as f64,
                    );
                }
                Ok(Completion::Cancelled) => {
                    tracing::info!("generation cancelled by its caller; not charged");
                    // Its audio was stored before the cancellation was seen: nobody can
                    // download it (a failed generation has no audio link), so it goes. A lost
                    // lease keeps it: the worker that owns the row writes the same key.
                    if let Err(err) = deps.blobs.delete(&key).await {
                        tracing::warn!(error = %err, "could not delete the cancelled generation's audio");
                    }
                }
                Ok(Completion::LeaseLost) => {
                    tracing::warn!("lease lost before completion; result discarded")
                }
                Err(err) => tracing::error!(error = %err, "marking completed failed"),
            }
        }
        Err(RenderError::Cancelled) => {
            // `fail` records the cancellation's own reason.
            finish_failed(deps, options, &id, &engine_name, "cancelled").await;
        }
        Err(RenderError::Panicked) => {
            finish_failed(
                deps,
                options,
                &id,
                &engine_name,
                "the engine failed unexpectedly on this generation; nothing was charged",
            )
            .await;
            replace_engine(engine);
        }
        Err(RenderError::Failed(message)) => {
            finish_failed(deps, options, &id, &engine_name, &message).await
        }
    }
}

/// Computes a cloned voice's print on the engine thread and stores it (or why it failed: the
/// voice's generations then fail with that reason). Engine panics are failures too; the thread
/// is replaced.
/// Writes a running generation's rendered audio (`generations.rendered_ms`, read as its
/// `progress`) at most once a second, after a piece: a database write per second of work at
/// most, not per chunk.
#[derive(Default)]
struct ProgressReport {
    written_ms: u64,
    at: Option<std::time::Instant>,
}

impl ProgressReport {
    const EVERY: Duration = Duration::from_secs(1);

    async fn report(&mut self, deps: &WorkerDeps, id: &str, owner: &str, rendered_ms: u64) {
        if rendered_ms <= self.written_ms || self.at.is_some_and(|at| at.elapsed() < Self::EVERY) {
            return;
        }
        self.at = Some(std::time::Instant::now());
        match queue::progress(&deps.pool, id, owner, rendered_ms).await {
            Ok(()) => self.written_ms = rendered_ms,
            Err(err) => tracing::warn!(error = %err, "progress not recorded"),
        }
    }
}

async fn process_print(
    deps: &WorkerDeps,
    options: &WorkerOptions,
    engine: &mut EngineThread,
    job: PrintJob,
) {
    let span = tracing::info_span!("voice_print", voice_id = %job.voice_id, engine = %job.engine, attempt = job.attempts);
    let voice_id = job.voice_id.clone();
    async {
        let outcome = engine.print(job).await;
        if outcome == Err(RenderError::Panicked) {
            replace_engine(engine);
        }
        let stored = match &outcome {
            Ok(print) => prints::complete(&deps.pool, &voice_id, &options.name, print).await,
            Err(err) => {
                let message = match err {
                    RenderError::Failed(message) => message.as_str(),
                    _ => "the engine failed unexpectedly on this reference audio",
                };
                tracing::warn!(error = %message, "voice print failed");
                prints::fail(&deps.pool, &voice_id, &options.name, message).await
            }
        };
        match stored {
            Ok(true) if outcome.is_ok() => tracing::info!("voice print computed"),
            Ok(true) => {}
            Ok(false) => tracing::warn!("lease lost before the voice print was stored"),
            Err(err) => tracing::error!(error = %err, "storing the voice print failed"),
        }
    }
    .instrument(span)
    .await;
}

fn replace_engine(engine: &mut EngineThread) {
    if let Err(err) = engine.restart() {
        tracing::error!(error = %err, "cannot replace the engine thread");
    }
}

async fn finish_failed(
    deps: &WorkerDeps,
    options: &WorkerOptions,
    id: &str,
    engine: &str,
    message: &str,
) {
    tracing::warn!(error = %message, "generation failed");
    match queue::fail(&deps.pool, id, &options.name, message).await {
        Ok(true) => {
            metrics::counter!("voiced_generations_total", "engine" => engine.to_owned(), "outcome" => "failed")
                .increment(1)
        }
        Ok(false) => {}
        Err(err) => tracing::error!(error = %err, "marking failed failed"),
    }
}

/// A completed generation: counted by engine, its real-time factor (engine time / audio time),
/// and the audio charged.
fn completed_metrics(engine: &str, audio_ms: i64, engine_ms: f64) {
    let engine = engine.to_owned();
    metrics::counter!("voiced_generations_total", "engine" => engine.clone(), "outcome" => "completed")
        .increment(1);
    if audio_ms > 0 {
        metrics::histogram!("voiced_engine_real_time_factor", "engine" => engine)
            .record(engine_ms / audio_ms as f64);
    }
    metrics::counter!("voiced_usage_charged_ms_total")
        .increment(u64::try_from(audio_ms).unwrap_or(0));
}
