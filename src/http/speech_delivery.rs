//! Delivering a synchronous generation's audio over HTTP, for every door that speaks
//! synchronously (`POST /v1/audio/speech`, the console playground's streamed speech): streamed
//! as this process's worker produces it, or the stored file once it has completed; a client
//! that goes away, the time limit and shutdown cancel it (docs/api.md, "Streaming").

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::domain::{CancelReason, GenerationStatus};
use crate::http::error::{ApiError, ErrorCode};
use crate::service::Core;
use crate::service::audio::StoredAudio;
use crate::service::speech::{self as service, CancelOnDrop};
use crate::worker::streams::{StreamEnd, StreamEvent, Subscription};

/// Answers with the generation's audio: streamed as the worker produces it when a worker of this
/// process renders it, otherwise (another process's worker, or a replay of a finished one) the
/// stored file once it has completed. While waiting or streaming, a dropped request (the client
/// disconnected) cancels the generation; so does running past the time limit, or the server
/// shutting down.
///
/// `model`: what `X-Service-Engine` echoes (the OpenAI dialect's `model`), if anything.
pub async fn deliver(
    state: &Core,
    id: &str,
    model: Option<&str>,
    replayed: bool,
) -> Result<Response, ApiError> {
    // A replay is a duplicate of the request that made the generation: it only watches.
    let mut cancel_on_drop = if replayed {
        CancelOnDrop::watching(&state.pool, id)
    } else {
        CancelOnDrop::new(&state.pool, id)
    };
    let mut stream = state.streams.subscribe(id);
    let mut stops = Stops::new(state);
    // Whether a worker of this process may still publish the audio.
    let mut published = true;
    let (reason, detail) = loop {
        tokio::select! {
            biased;
            event = stream.next(), if published => match event {
                StreamEvent::Chunk(first) => {
                    let content_type = stream
                        .content_type()
                        .ok_or_else(|| ApiError::internal("stream without a content type"))?;
                    let tail = Tail {
                        stream,
                        first: Some(first),
                        cancel_on_drop,
                        stops,
                        id: id.to_owned(),
                        done: false,
                    };
                    let body = Body::from_stream(futures_util::stream::unfold(tail, Tail::next));
                    return audio_response(id, model, replayed, &content_type, body);
                }
                // It failed (or was handed back) before any audio: its status says which.
                StreamEvent::End(_) => published = false,
            },
            // The wait rides on the durable queue's completion notifications.
            status = state.completions.wait(id, Duration::from_secs(5)) => {
                cancel_on_drop.disarm();
                return answer(state, id, model, replayed, status?).await;
            }
            stop = stops.next() => break stop,
        }
    };
    cancel_on_drop.cancel_now(reason).await?;
    Err(ApiError::new(
        ErrorCode::ServiceUnavailable,
        format!("The generation {id} {detail}"),
    )
    .with_retry_after(5))
}

/// What ends a synchronous request early: the server's time limit (counted from admission) and
/// the server's shutdown.
struct Stops {
    limit: Pin<Box<tokio::time::Sleep>>,
    shutting_down: Pin<Box<dyn Future<Output = ()> + Send>>,
}

impl Stops {
    fn new(state: &Core) -> Self {
        Self {
            limit: Box::pin(tokio::time::sleep(service::sync_wait_limit(
                state.request_timeout,
            ))),
            shutting_down: Box::pin(state.shutting_down()),
        }
    }

    /// Resolves with the cancellation reason and the client's message when either comes.
    async fn next(&mut self) -> (CancelReason, &'static str) {
        tokio::select! {
            () = &mut self.limit => (
                CancelReason::TimeLimit,
                "did not finish within the server's time limit and was cancelled; nothing was charged.",
            ),
            () = &mut self.shutting_down => (
                CancelReason::Shutdown,
                "was cancelled because the server is shutting down; nothing was charged. Retry.",
            ),
        }
    }
}

/// The streamed body after the first chunk: the worker's chunks as they come. The body ends
/// normally only once the generation is stored, completed and charged; anything else (the
/// generation failed, the time limit, shutdown) ends it with an error, which closes the
/// connection before the chunked body's end, so that the client sees an incomplete transfer,
/// never a short file that looks whole. The generation is then `failed` and not charged.
struct Tail {
    stream: Subscription,
    first: Option<Bytes>,
    /// Armed until the generation has completed: a client that goes away mid-stream (the body
    /// is dropped) cancels it.
    cancel_on_drop: CancelOnDrop,
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
            return Some((Ok(first), self));
        }
        let (reason, detail) = tokio::select! {
            biased;
            event = self.stream.next() => match event {
                StreamEvent::Chunk(chunk) => return Some((Ok(chunk), self)),
                StreamEvent::End(StreamEnd::Completed) => {
                    self.cancel_on_drop.disarm();
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
        if let Err(err) = self.cancel_on_drop.cancel_now(reason).await {
            tracing::warn!(generation_id = %self.id, error = %err.detail, "could not cancel");
        }
        self.done = true;
        let message = format!("generation {} {detail}", self.id);
        Some((Err(std::io::Error::other(message)), self))
    }
}

fn audio_response(
    id: &str,
    model: Option<&str>,
    replayed: bool,
    content_type: &str,
    body: Body,
) -> Result<Response, ApiError> {
    let mut response = (StatusCode::OK, body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_str(content_type).map_err(ApiError::internal)?,
    );
    headers.insert(
        "x-service-generation-id",
        HeaderValue::from_str(id).map_err(ApiError::internal)?,
    );
    if let Some(model) = model {
        headers.insert(
            "x-service-engine",
            HeaderValue::from_str(model).map_err(ApiError::internal)?,
        );
    }
    if replayed {
        headers.insert("idempotent-replayed", HeaderValue::from_static("true"));
    }
    Ok(response)
}

/// The answer once the generation has ended: its audio, or a failure naming only its id.
async fn answer(
    state: &Core,
    id: &str,
    model: Option<&str>,
    replayed: bool,
    status: GenerationStatus,
) -> Result<Response, ApiError> {
    if status != GenerationStatus::Completed {
        return Err(service::generation_failed(
            id,
            &format!("GET /v1/generations/{id}"),
        ));
    }
    // Streamed from the blob store a chunk at a time, never held whole (a replay included).
    let StoredAudio { key, head } = crate::service::audio::completed(state, id).await?;
    let body = Body::from_stream(crate::store::blobs::stream(
        state.blobs.clone(),
        key,
        0,
        head.len,
    ));
    let mut response = audio_response(id, model, replayed, &head.content_type, body)?;
    response
        .headers_mut()
        .insert(header::CONTENT_LENGTH, HeaderValue::from(head.len));
    Ok(response)
}
