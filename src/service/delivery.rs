//! Delivering a synchronous generation's audio to its caller, for every door that answers with
//! audio as it is made (`POST /v1/audio/speech`, the console playground's streamed speech, and
//! the doors built later): waiting for it, streaming its chunks as a worker renders them (this
//! process's, or another's through Redis: `worker::relay`; else the stored file once it has
//! completed), cancelling it when the caller goes away,
//! at the time limit or at shutdown, and settling what it costs (docs/api.md, "Streaming").
//!
//! What is charged: a generation that completes is charged its whole audio by its completion
//! (`store::queue::complete`). One cancelled after its first chunk left is charged the audio
//! delivered: the audio rendered up to the end of the last chunk handed to the connection,
//! recorded with the cancellation and written in the statement that marks it `failed`
//! (migration 0024), once. One cancelled before any chunk left costs nothing. The door renders
//! a [`Delivery`] (headers, a body of bytes) and holds no rule.
//!
//! The rest of a generation's life after admission lives here too: cancelling it because its
//! account asked ([`cancel_by_request`]), the failed-generation sentence, and reading what a
//! speech request made ([`made`]).

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use sqlx::PgPool;

use super::Core;
use super::error::{ErrorCode, ServiceError};
use crate::domain::{CancelReason, GenerationStatus};
use crate::service::audio::StoredAudio;
use crate::service::principal::Principal;
use crate::store;
use crate::store::generations::GenerationRow;
use crate::worker::streams::{StreamEnd, StreamEvent, Subscription};

/// What a door sends: the audio's type, its length when it is a stored file, and its bytes. An
/// `Err` item ends the body before its end (the door closes the connection so that the client
/// sees an incomplete transfer, never a short file that looks whole).
pub struct Delivery {
    pub content_type: String,
    pub len: Option<u64>,
    pub body: BoxStream<'static, Result<Bytes, std::io::Error>>,
}

/// Delivers generation `id` (admitted for this request, or, `replayed`, a duplicate of the
/// request that made it: a replay only watches, it never cancels nor charges). Streamed as a
/// worker renders it (another process's through Redis, when `redis_url` is set); otherwise
/// (another process's worker without Redis, or a replay of a finished one) the stored file once
/// it has completed. Before the first chunk, a dropped
/// caller (the future is dropped), the time limit or shutdown cancel it at no charge; after,
/// the body's end settles it (see the module).
pub async fn deliver(core: &Core, id: &str, replayed: bool) -> Result<Delivery, ServiceError> {
    let mut hold = if replayed {
        CancelOnDrop::watching(&core.pool, id)
    } else {
        CancelOnDrop::new(&core.pool, id)
    };
    let mut stream = core.streams.subscribe(id);
    let mut stops = Stops::new(core);
    // Whether a worker of this process may still publish the audio.
    let mut published = true;
    let (reason, detail) = loop {
        tokio::select! {
            biased;
            event = stream.next(), if published => match event {
                StreamEvent::Chunk(first) => {
                    let content_type = stream
                        .content_type()
                        .ok_or_else(|| ServiceError::internal("stream without a content type"))?;
                    let tail = Tail {
                        stream,
                        first: Some(first),
                        hold,
                        stops,
                        id: id.to_owned(),
                        done: false,
                    };
                    return Ok(Delivery {
                        content_type,
                        len: None,
                        body: futures_util::stream::unfold(tail, Tail::next).boxed(),
                    });
                }
                // It failed (or was handed back) before any audio: its status says which.
                StreamEvent::End(_) => published = false,
            },
            // The wait rides on the durable queue's completion notifications.
            status = core.completions.wait(id, Duration::from_secs(5)) => {
                hold.disarm();
                return stored(core, id, status?).await;
            }
            stop = stops.next() => break stop,
        }
    };
    hold.cancel_now(reason).await?;
    Err(ServiceError::new(
        ErrorCode::ServiceUnavailable,
        format!("The generation {id} {detail} Nothing was charged."),
    )
    .with_retry_after(5))
}

/// The stored audio of the account's own completed generation `id`, for its owner signed in to
/// the console (any plan: the app's free use plays what it made); 404 `not_found` for another
/// account's, one without audio, or one not completed.
pub async fn owned(
    core: &Core,
    principal: &super::Principal,
    id: &str,
) -> Result<Delivery, ServiceError> {
    let row = super::reads::owned_generation(core, principal, None, id).await?;
    if row.status != GenerationStatus::Completed || !row.has_audio {
        return Err(ServiceError::not_found());
    }
    // The same bound as the signed link's downloads (`downloads_per_link`), held until the body
    // is finished or dropped.
    let slot = crate::service::audio::download_slot(core, id)?;
    let mut delivery = stored(core, id, row.status).await?;
    delivery.body = delivery
        .body
        .map(move |chunk| {
            let _held = &slot;
            chunk
        })
        .boxed();
    Ok(delivery)
}

/// The stored file of a generation that has ended (a failure names only its id).
async fn stored(core: &Core, id: &str, status: GenerationStatus) -> Result<Delivery, ServiceError> {
    if status != GenerationStatus::Completed {
        return Err(generation_failed(id, &format!("GET /v1/generations/{id}")));
    }
    // Streamed from the blob store a chunk at a time, never held whole (a replay included).
    let StoredAudio { key, head } = crate::service::audio::completed(core, id).await?;
    let body = store::blobs::stream(core.blobs.clone(), key, 0, head.len)
        .map(|chunk| chunk.map_err(std::io::Error::other));
    Ok(Delivery {
        content_type: head.content_type,
        len: Some(head.len),
        body: body.boxed(),
    })
}

/// What ends a synchronous request early: the server's time limit (counted from admission) and
/// the server's shutdown.
struct Stops {
    limit: Pin<Box<tokio::time::Sleep>>,
    shutting_down: Pin<Box<dyn Future<Output = ()> + Send>>,
}

impl Stops {
    fn new(core: &Core) -> Self {
        Self {
            limit: Box::pin(tokio::time::sleep(sync_wait_limit(core.request_timeout))),
            shutting_down: Box::pin(core.shutting_down()),
        }
    }

    /// Resolves with the cancellation reason and the client's message when either comes.
    async fn next(&mut self) -> (CancelReason, &'static str) {
        tokio::select! {
            () = &mut self.limit => (
                CancelReason::TimeLimit,
                "did not finish within the server's time limit and was cancelled.",
            ),
            () = &mut self.shutting_down => (
                CancelReason::Shutdown,
                "was cancelled because the server is shutting down. Retry.",
            ),
        }
    }
}

/// The streamed body after the first chunk: the worker's chunks as they come. It ends normally
/// only once the generation is stored, completed and charged; anything else (the generation
/// failed, the time limit, shutdown) ends it with an error. A chunk handed out moves the
/// delivered mark to its end, which is what a cancellation from then on charges.
struct Tail {
    stream: Subscription,
    first: Option<crate::worker::streams::AudioChunk>,
    /// Armed until the generation has completed: a caller that goes away mid-stream (the body
    /// is dropped) cancels it.
    hold: CancelOnDrop,
    stops: Stops,
    id: String,
    done: bool,
}

impl Tail {
    async fn next(mut self) -> Option<(Result<Bytes, std::io::Error>, Self)> {
        if self.done {
            return None;
        }
        if let Some(first) = self.first.take() {
            self.hold.delivered(first.end_ms);
            return Some((Ok(first.bytes), self));
        }
        let (reason, detail) = tokio::select! {
            biased;
            event = self.stream.next() => match event {
                StreamEvent::Chunk(chunk) => {
                    self.hold.delivered(chunk.end_ms);
                    return Some((Ok(chunk.bytes), self));
                }
                StreamEvent::End(StreamEnd::Completed) => {
                    self.hold.disarm();
                    return None;
                }
                StreamEvent::End(StreamEnd::Broken) => {
                    // It failed (its `error` says why) or was handed back; the connection
                    // closes, and the cancellation on drop settles a generation still running.
                    self.done = true;
                    let message = format!("generation {} ended before its audio did", self.id);
                    return Some((Err(std::io::Error::other(message)), self));
                }
            },
            stop = self.stops.next() => stop,
        };
        if let Err(err) = self.hold.cancel_now(reason).await {
            tracing::warn!(generation_id = %self.id, error = %err.detail, "could not cancel");
        }
        self.done = true;
        let message = format!("generation {} {detail}", self.id);
        Some((Err(std::io::Error::other(message)), self))
    }
}

/// A synchronous caller's hold on its generation: the one that made it cancels it when dropped
/// while armed (the request's future or body is dropped when its client disconnects, and this
/// is how the core hears of it) or when it gives up ([`CancelOnDrop::cancel_now`]), recording
/// the audio delivered so far, which the cancellation charges. A duplicate of that request (the
/// same `Idempotency-Key`, answered with the same generation) only watches: its hang-up, time
/// limit or shutdown never cancels the first caller's work and charges nothing.
pub struct CancelOnDrop {
    pool: PgPool,
    id: String,
    armed: bool,
    /// Milliseconds of audio that have left for the caller.
    delivered_ms: u64,
}

impl CancelOnDrop {
    /// The hold of the request that made the generation.
    pub fn new(pool: &PgPool, id: &str) -> Self {
        Self {
            pool: pool.clone(),
            id: id.to_owned(),
            armed: true,
            delivered_ms: 0,
        }
    }

    /// The hold of a duplicate (a replay): it never cancels.
    pub fn watching(pool: &PgPool, id: &str) -> Self {
        let mut hold = Self::new(pool, id);
        hold.armed = false;
        hold
    }

    pub fn disarm(&mut self) {
        self.armed = false;
    }

    /// The audio up to `end_ms` has been handed to the caller.
    pub fn delivered(&mut self, end_ms: u64) {
        self.delivered_ms = self.delivered_ms.max(end_ms);
    }

    /// The caller gives up (time limit, shutdown): the generation is cancelled with `reason`
    /// (and charged what was delivered) when this hold made it; a duplicate's hold only stops
    /// watching.
    pub async fn cancel_now(&mut self, reason: CancelReason) -> Result<(), ServiceError> {
        let armed = std::mem::replace(&mut self.armed, false);
        if armed {
            cancel(&self.pool, &self.id, reason, self.delivered_ms).await?;
        }
        Ok(())
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let (pool, id, delivered) = (
            self.pool.clone(),
            std::mem::take(&mut self.id),
            self.delivered_ms,
        );
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Err(err) = cancel(&pool, &id, CancelReason::Disconnected, delivered).await {
                    tracing::warn!(generation_id = %id, error = %err.detail, "could not cancel");
                }
            });
        }
    }
}

/// Cancels a generation whose caller is gone (or whose voice or account went): it never runs,
/// or stops within the piece it is rendering; it fails with `reason`, charged `delivered_ms`
/// (0: nothing reached the caller, nothing is charged).
pub async fn cancel(
    pool: &PgPool,
    id: &str,
    reason: CancelReason,
    delivered_ms: u64,
) -> Result<(), ServiceError> {
    store::queue::cancel(pool, id, reason, delivered_ms).await?;
    tracing::info!(
        generation_id = %id,
        reason = reason.as_str(),
        delivered_ms,
        "generation cancelled"
    );
    Ok(())
}

/// Waits for generation `id` to end, for at most `within`, and no longer than the server's
/// shutdown allows: its status once it has ended, `None` while it still runs (the caller then
/// answers with a way to poll). A generation waited on this way is an asynchronous one: it runs
/// on whether or not the caller stays (the agent's `speak`).
pub async fn wait(
    core: &Core,
    id: &str,
    within: Duration,
) -> Result<Option<GenerationStatus>, ServiceError> {
    // A missed notification is re-checked this often.
    const RECHECK: Duration = Duration::from_secs(5);
    tokio::select! {
        status = core.completions.wait(id, RECHECK) => Ok(Some(status?)),
        () = tokio::time::sleep(within) => Ok(None),
        () = core.shutting_down() => Ok(None),
    }
}

/// How long a synchronous request may wait for its generation: a little under the server's own
/// request time limit, so that the generation is cancelled with that reason before the limit
/// cuts the connection.
pub fn sync_wait_limit(request_timeout: Duration) -> Duration {
    request_timeout
        .saturating_sub(Duration::from_secs(1))
        .max(Duration::from_millis(500))
}

/// The refusal of a request whose generation failed: it names only the id, never the engine's
/// text (the reason stays in the generation's `error`, which `how_to_read` reads).
pub fn generation_failed(id: &str, how_to_read: &str) -> ServiceError {
    ServiceError::new(
        ErrorCode::InternalError,
        format!("The generation {id} failed; nothing was charged. {how_to_read} tells why."),
    )
}

/// How long a cancel by request waits for a running generation's worker to stop before it
/// answers with the generation as it stands (still `generating`, its stop on the way).
pub const CANCEL_WAIT: Duration = Duration::from_secs(5);

/// What a cancel by request left: the generation stopped (it now reads `failed`, "cancelled:
/// by request"), or its worker was told and has not stopped yet.
pub enum Cancelled {
    Stopped(GenerationRow),
    Stopping(GenerationRow),
}

/// Cancels the account's generation `id` because the account asked (`POST
/// /v1/generations/{id}/cancel`, the agent's `cancel_generation`): a queued one never runs, a
/// running one stops inside the piece it renders; it fails with "cancelled: by request",
/// nothing is charged and its reservation ends. Another account's id is 404 `not_found`; one
/// that had already completed or failed (before this request, or while it was on its way) is
/// 409 `generation_finished`. Cancelling one whose cancellation is under way is not an error.
pub async fn cancel_by_request(
    core: &Core,
    principal: &Principal,
    id: &str,
) -> Result<Cancelled, ServiceError> {
    crate::service::operations::Operation::CancelGeneration.check(principal)?;
    let row = super::reads::owned_generation(core, principal, None, id).await?;
    if row.status.is_finished() && !row.cancelled {
        return Err(finished(&row));
    }
    if !row.status.is_finished() {
        cancel(&core.pool, id, CancelReason::Request, 0).await?;
        // A missed notification is re-checked every half second.
        let _ = tokio::time::timeout(
            CANCEL_WAIT,
            core.completions.wait(id, Duration::from_millis(500)),
        )
        .await;
    }
    let row = super::reads::owned_generation(core, principal, None, id).await?;
    match row.status {
        GenerationStatus::Generating => Ok(Cancelled::Stopping(row)),
        GenerationStatus::Failed if row.cancelled => Ok(Cancelled::Stopped(row)),
        // It completed (or failed on its own) before the cancellation reached it.
        _ => Err(finished(&row)),
    }
}

fn finished(row: &GenerationRow) -> ServiceError {
    ServiceError::new(
        ErrorCode::GenerationFinished,
        format!(
            "The generation {} has already {}; there is nothing to cancel.",
            row.id,
            row.status.as_str()
        ),
    )
    .with_param("generationId")
}

/// The generation a speech request of this principal made (what MCP `speak` presents once it
/// has waited), read under the speech requirement: a principal that may speak sees what it
/// spoke without `voice:read`.
pub async fn made(
    core: &Core,
    principal: &Principal,
    id: &str,
) -> Result<GenerationRow, ServiceError> {
    crate::service::operations::Operation::CreateSpeech.check(principal)?;
    super::reads::owned_generation(core, principal, None, id).await
}
