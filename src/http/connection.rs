//! Bounds of one connection that `serve` applies before any route runs: the deadline of a
//! request's body (setting `body_read_timeout_secs`). The connection cap (`max_connections`)
//! is a semaphore in `serve` itself.
//!
//! A client that trickles its body (a byte a second) would otherwise hold its connection, its
//! task and whatever the handler buffered for as long as the request timeout allows. The body
//! is wrapped so that reading past the deadline fails; the handler's answer is then replaced by
//! 408 `request_timeout` with `Connection: close` ([`crate::http::error::render_errors`] writes
//! it), whatever the handler made of the failed read.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::body::{Body, HttpBody};
use axum::http::Request;
use futures_util::StreamExt;

/// Set on a request whose body read ran past its deadline (a request extension).
#[derive(Debug, Clone, Default)]
pub struct BodyDeadline(Arc<AtomicBool>);

impl BodyDeadline {
    pub fn passed(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// The request with its body bounded to `timeout` from now (requests without a body are left
/// as they are).
pub fn bound_body<B>(request: Request<B>, timeout: Duration) -> Request<Body>
where
    B: HttpBody<Data = axum::body::Bytes> + Send + 'static,
    B::Error: Into<axum::BoxError>,
{
    let (mut parts, body) = request.into_parts();
    if body.is_end_stream() {
        return Request::from_parts(parts, Body::new(body));
    }
    let deadline = BodyDeadline::default();
    parts.extensions.insert(deadline.clone());
    let chunks = Body::new(body).into_data_stream();
    let sleep = Box::pin(tokio::time::sleep(timeout));
    let timed = futures_util::stream::unfold(Some((chunks, sleep, deadline)), |state| async move {
        let (mut chunks, mut sleep, deadline) = state?;
        tokio::select! {
            biased;
            chunk = chunks.next() => {
                let chunk = chunk?;
                Some((chunk, Some((chunks, sleep, deadline))))
            }
            () = &mut sleep => {
                deadline.0.store(true, Ordering::Relaxed);
                let err = std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "the request body did not arrive in time",
                );
                Some((Err(axum::Error::new(err)), None))
            }
        }
    });
    Request::from_parts(parts, Body::from_stream(timed))
}
