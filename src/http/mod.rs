//! Edge plumbing shared by every door, with no state of its own: error rendering, JSON bodies,
//! authentication extractors and challenges, the rate-limit middleware, client addresses,
//! request metrics and spans, and `serve` (the listener with its connection limits).

pub mod auth;
pub mod body;
pub mod client_addr;
pub mod connection;
pub mod error;
pub mod fields;
pub mod idempotency;
pub mod json;
pub mod live_socket;
pub mod models;
pub mod principal_check;
pub mod rate_limit;
pub mod speech_delivery;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{MatchedPath, Request};
use axum::http::{HeaderName, Method};
use tokio::net::TcpListener;

/// Largest JSON body on routes that do not say otherwise.
pub const DEFAULT_BODY_LIMIT: usize = 1024 * 1024;

/// The request id header, set on every request and echoed on its answer.
pub const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// 302 to `location`, never cached (OAuth's redirects back to a client); `None` when the
/// location cannot be a header value.
pub fn found_no_store(location: &str) -> Option<axum::response::Response> {
    use axum::http::{HeaderValue, StatusCode, header};
    use axum::response::IntoResponse;
    let value = HeaderValue::from_str(location).ok()?;
    Some(
        (
            StatusCode::FOUND,
            [
                (header::LOCATION, value),
                (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
            ],
        )
            .into_response(),
    )
}

/// Request metrics (`metrics_bind`): count and latency by route template (never the raw path),
/// method and status. Without a metrics listener the recorder is absent and this costs little.
pub async fn record_request(
    request: Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or("unmatched", |p| p.as_str())
        .to_owned();
    let method = match *request.method() {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    };
    let started = std::time::Instant::now();
    let response = next.run(request).await;
    let status = response.status().as_u16().to_string();
    metrics::counter!("voiced_http_requests_total", "route" => route.clone(), "method" => method, "status" => status)
        .increment(1);
    metrics::histogram!("voiced_http_request_duration_seconds", "route" => route, "method" => method)
        .record(started.elapsed().as_secs_f64());
    response
}

/// Spans are named by route template, never the raw path (ids would explode cardinality).
/// Headers are not recorded: they carry credentials. `client` is the client address
/// (`client_addr`: the forwarded one behind a trusted proxy).
pub fn make_span(request: &Request) -> tracing::Span {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or("unmatched", |p| p.as_str());
    let request_id = request
        .headers()
        .get(REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let client = request
        .extensions()
        .get::<client_addr::ClientAddr>()
        .and_then(|c| c.0)
        .map(tracing::field::display);
    tracing::info_span!(
        "request",
        method = %request.method(),
        route,
        request_id,
        client,
        account_id = tracing::field::Empty,
    )
}

/// Connection-level limits of the listener.
#[derive(Debug, Clone, Copy)]
pub struct ServeOptions {
    /// A client must send its whole request head within this time, or the connection is closed
    /// (a slow-header client cannot hold a connection, or anything else, for long).
    pub header_read_timeout: Duration,
    /// After `shutdown`, in-flight requests get this long to finish; then connections are cut.
    pub grace: Duration,
    /// A request's whole body must arrive within this time of its head (408 and the connection
    /// closed otherwise; see [`connection`]).
    pub body_read_timeout: Duration,
    /// Connections served at once; the next is accepted only when one closes (meanwhile it
    /// waits in the kernel's listen backlog). A connection that sends nothing within
    /// `header_read_timeout` is closed, so that silent connections cannot hold the places.
    pub max_connections: usize,
}

impl ServeOptions {
    pub fn from_config(config: &crate::config::Config) -> Self {
        Self {
            header_read_timeout: Duration::from_secs(config.header_read_timeout_secs),
            grace: Duration::from_secs(config.shutdown_grace_secs),
            body_read_timeout: Duration::from_secs(config.body_read_timeout_secs),
            max_connections: config.max_connections as usize,
        }
    }
}

/// Largest request head (request line and headers) accepted: 16 KiB. hyper answers a larger one
/// with 431 before any of it reaches a handler.
pub const MAX_HEAD_BYTES: usize = 16 * 1024;

/// Serves until `shutdown` resolves, then stops accepting, lets in-flight requests finish for
/// up to `options.grace`, and returns (graceful shutdown).
pub async fn serve(
    listener: TcpListener,
    app: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
    options: ServeOptions,
) -> std::io::Result<()> {
    use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
    use hyper_util::server::conn::auto::Builder;
    use hyper_util::server::graceful::GracefulShutdown;
    use hyper_util::service::TowerToHyperService;

    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(options.header_read_timeout)
        .max_buf_size(MAX_HEAD_BYTES);
    let graceful = GracefulShutdown::new();
    let connections = Arc::new(tokio::sync::Semaphore::new(options.max_connections));
    tokio::pin!(shutdown);
    loop {
        // At the cap, accept nothing until a connection closes: new ones wait in the backlog.
        let permit = tokio::select! {
            permit = connections.clone().acquire_owned() => permit.expect("the semaphore is never closed"),
            () = &mut shutdown => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(err) => {
                    // Out of file descriptors and the like: back off briefly, keep serving.
                    tracing::warn!(error = %err, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        // The client address, for handlers that key on it (the console's sign-in limiter).
        let app = tower::Layer::layer(
            &axum::Extension(axum::extract::ConnectInfo(peer)),
            app.clone(),
        );
        let body_read_timeout = options.body_read_timeout;
        let app = tower::ServiceExt::map_request(app, move |request| {
            connection::bound_body::<hyper::body::Incoming>(request, body_read_timeout)
        });
        let service = TowerToHyperService::new(app);
        let (builder, watcher) = (builder.clone(), graceful.watcher());
        let first_byte_timeout = options.header_read_timeout;
        tokio::spawn(async move {
            // A connection holds its place from accept: one that sends nothing gets the head's
            // time limit to start (hyper's header timer starts with the first byte), so silent
            // connections cannot keep the places for ever.
            let mut first = [0u8; 1];
            match tokio::time::timeout(first_byte_timeout, stream.peek(&mut first)).await {
                Ok(Ok(n)) if n > 0 => {}
                _ => return,
            }
            let connection = builder
                .serve_connection_with_upgrades(TokioIo::new(stream), service)
                .into_owned();
            let _ = watcher.watch(connection).await;
            drop(permit);
        });
    }
    drop(listener);
    if tokio::time::timeout(options.grace, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(
            grace_secs = options.grace.as_secs(),
            "requests still in flight after the grace period; closing their connections"
        );
    }
    Ok(())
}
