//! The HTTP layer: state, routes, the middleware stack, OpenAPI, and `serve`.

pub mod auth;
pub mod client_addr;
pub mod connection;
pub mod error;
pub mod idempotency;
pub mod json;
pub mod models;
pub mod principal_check;
pub mod rate_limit;
pub mod routes;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{DefaultBodyLimit, FromRef, MatchedPath, Request};
use axum::http::{HeaderName, Method, StatusCode, header};
use axum::middleware::from_fn_with_state;
use axum::routing::get;
use sqlx::PgPool;
use tokio::net::TcpListener;
use tower::ServiceBuilder;
use tower_http::cors::{AllowHeaders, Any, CorsLayer};
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;
use utoipa::OpenApi;
use utoipa::openapi::security::{
    ApiKey, ApiKeyValue, AuthorizationCode, Flow, HttpAuthScheme, HttpBuilder, OAuth2, Scopes,
    SecurityScheme,
};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::domain::{Feature, Scope};
use crate::engines::registry::EngineRegistry;
use crate::limits::RateLimits;
use crate::service::speech::AdmissionPolicy;
use crate::signing::AudioSigner;
use crate::store::blobs::BlobStore;
use crate::worker::asr::AsrService;
use crate::worker::completions::Completions;
use crate::worker::health::WorkerHealth;
use crate::worker::streams::Streams;
use auth::Requirement;
use error::ErrorLinks;

/// Largest JSON body on routes that do not say otherwise.
pub const DEFAULT_BODY_LIMIT: usize = 1024 * 1024;

const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// Everything handlers share. Sub-states are reached with `FromRef`.
#[derive(Clone)]
pub struct AppState {
    pub pool: PgPool,
    pub signer: AudioSigner,
    /// Shared: the state is cloned for every request.
    pub public_base_url: Arc<str>,
    pub links: Arc<ErrorLinks>,
    pub limits: Arc<RateLimits>,
    pub request_timeout: Duration,
    pub blobs: Arc<dyn BlobStore>,
    /// Downloads of audio in S3 redirect to a presigned URL (`blob_redirect`).
    pub blob_redirect: bool,
    pub engines: Arc<EngineRegistry>,
    pub completions: Completions,
    /// The audio of generations this process's workers are rendering, as it is produced.
    pub streams: Streams,
    pub asr: AsrService,
    pub admission: AdmissionPolicy,
    /// What this process's generation workers report (for `/readyz`).
    pub health: Arc<WorkerHealth>,
    /// Set when the process is shutting down: the moment by which requests that wait on a
    /// generation must have answered.
    pub shutdown_deadline: tokio::sync::watch::Receiver<Option<tokio::time::Instant>>,
    /// The developer console's settings (`/console`).
    pub console: Arc<crate::console::ConsoleSettings>,
    /// Test allowance of the fetches of URLs a client names (OAuth client metadata documents,
    /// `transcribe`'s `audio_url`): `http` and loopback addresses (`oauth_allow_loopback_fetch`).
    pub allow_loopback_fetch: bool,
    /// The OAuth authorization server's settings and state (`/oauth`, docs/oauth.md).
    pub oauth: Arc<crate::service::oauth::OAuthSettings>,
    /// Principals of recent keys, for reads (each read's statement confirms its principal).
    pub principals: Arc<crate::service::principal_cache::PrincipalCache>,
    /// Connections of the authenticated reads (one exchange per read).
    pub reads: Arc<crate::store::read_pool::ReadPool>,
    /// Whose forwarding headers give the client address (`trusted_proxies`).
    pub trusted_proxies: Arc<client_addr::TrustedProxies>,
    /// Downloads in flight per audio link (`downloads_per_link`).
    pub downloads: Arc<routes::audio::DownloadSlots>,
}

impl AppState {
    /// Where asynchronous speech is admitted (`service::speech::create`, for every door).
    pub fn speech_desk(&self) -> crate::service::speech::Desk<'_> {
        crate::service::speech::Desk {
            pool: &self.pool,
            engines: &self.engines,
            policy: self.admission,
            abandoned_after: self.request_timeout,
        }
    }

    /// Where transcriptions run (`service::transcription::run`, for every door).
    pub fn transcription_desk(&self) -> crate::service::transcription::Desk<'_> {
        crate::service::transcription::Desk {
            pool: &self.pool,
            asr: &self.asr,
            abandoned_after: self.request_timeout,
        }
    }

    /// Resolves when the process is shutting down and a request that waits on a generation must
    /// answer now (never, while it runs).
    pub fn shutting_down(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut shutdown = self.shutdown_deadline.clone();
        async move {
            let deadline = loop {
                if let Some(deadline) = *shutdown.borrow_and_update() {
                    break deadline;
                }
                if shutdown.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
            };
            tokio::time::sleep_until(deadline).await;
        }
    }
}

impl FromRef<AppState> for PgPool {
    fn from_ref(state: &AppState) -> Self {
        state.pool.clone()
    }
}

impl FromRef<AppState> for Arc<RateLimits> {
    fn from_ref(state: &AppState) -> Self {
        state.limits.clone()
    }
}

impl FromRef<AppState> for Arc<crate::store::read_pool::ReadPool> {
    fn from_ref(state: &AppState) -> Self {
        state.reads.clone()
    }
}

impl FromRef<AppState> for Arc<ErrorLinks> {
    fn from_ref(state: &AppState) -> Self {
        state.links.clone()
    }
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "voiced",
        description = "Speech generation in your voice profiles, transcription into stored captures, \
                       and reads of voices, generations and captures. Errors are RFC 9457 problem \
                       documents (OpenAI's error envelope on POST /v1/audio/speech).",
        version = "1.0.0",
        license(name = "MIT")
    ),
    modifiers(&SecuritySchemes),
    tags(
        (name = "voices", description = "Voice profiles"),
        (name = "speech", description = "Speech generation"),
        (name = "captures", description = "Transcriptions stored as captures"),
        (name = "health", description = "Liveness and readiness"),
    )
)]
struct ApiDoc;

struct SecuritySchemes;

impl utoipa::Modify for SecuritySchemes {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "api_key",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::new("x-api-key"))),
        );
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "An API key (vk_…) or an OAuth 2.1 access token (vat_…, see the oauth2 \
                         scheme and docs/oauth.md). Responses to tokens carry no RateLimit headers.",
                    ))
                    .build(),
            ),
        );
        // How third-party software gets an access token (sent as `bearer`). URLs are relative
        // to the server; discovery: /.well-known/oauth-authorization-server.
        components.add_security_scheme(
            "oauth2",
            SecurityScheme::OAuth2(OAuth2::with_description(
                [Flow::AuthorizationCode(
                    AuthorizationCode::with_refresh_url(
                        "/oauth/authorize",
                        "/oauth/token",
                        Scopes::from_iter(Scope::ALL.map(|s| {
                            (
                                s.as_str(),
                                match s {
                                    Scope::VoiceRead => {
                                        "Read voice profiles, captures, past generations"
                                    }
                                    Scope::VoiceGenerate => {
                                        "Generate speech, transcribe audio, add preset voices"
                                    }
                                },
                            )
                        })),
                        "/oauth/token",
                    ),
                )],
                "Authorization code with PKCE (S256), public clients registered at /oauth/register \
                 or identified by a client ID metadata document URL.",
            )),
        );
    }
}

/// The `/v1` routes, grouped by what they require of the key. Each group carries its
/// plan/scope/feature check; authentication and rate limiting wrap them all in [`router`].
fn v1_routes() -> OpenApiRouter<AppState> {
    let reads = OpenApiRouter::new()
        .routes(routes!(routes::reads::list_voices))
        .routes(routes!(routes::voices::list_presets))
        .routes(routes!(routes::reads::list_captures))
        .routes(routes!(routes::generations::get_generation))
        .layer(from_fn_with_state(Requirement::read(), auth::authorize));
    let speech = OpenApiRouter::new()
        .routes(routes!(routes::speech::create_speech))
        .routes(routes!(routes::openai_speech::create_openai_speech))
        .layer(from_fn_with_state(
            Requirement::generate(Feature::Speech),
            auth::authorize,
        ));
    // Adding a preset voice needs `voice:generate` (spec: "add built-in preset voices") and no
    // plan feature: it generates nothing.
    let voices = OpenApiRouter::new()
        .routes(routes!(routes::voices::create_voice))
        .layer(from_fn_with_state(
            Requirement::scope(Scope::VoiceGenerate),
            auth::authorize,
        ));
    let transcription = OpenApiRouter::new()
        .routes(routes!(routes::transcriptions::create_transcription))
        .layer(DefaultBodyLimit::max(routes::transcriptions::BODY_LIMIT))
        .layer(from_fn_with_state(
            Requirement::generate(Feature::Transcription),
            auth::authorize,
        ));
    OpenApiRouter::new()
        .merge(reads)
        .merge(speech)
        .merge(voices)
        .merge(transcription)
}

/// All documented routes around `v1` (health, and the signed audio download, which takes no
/// key), with the OpenAPI document they make.
fn documented(v1: OpenApiRouter<AppState>) -> (Router<AppState>, utoipa::openapi::OpenApi) {
    let (router, mut openapi) = OpenApiRouter::with_openapi(ApiDoc::openapi())
        .merge(v1)
        .routes(routes!(routes::audio::download_audio))
        .routes(routes!(routes::health::healthz))
        .routes(routes!(routes::health::readyz))
        .split_for_parts();
    openapi.info.version = env!("CARGO_PKG_VERSION").to_owned();
    (router, openapi)
}

/// The whole application: routes plus the middleware stack, and its OpenAPI document.
///
/// Stack, outermost first: request id (set, then propagated to the response) → trace span named
/// by the route template → error rendering (problem documents / OpenAI envelope) → CORS →
/// timeout → body limit → [per route: authenticate → (confirm refusals) rate limit → confirm
/// reads → plan, scope, feature] → handler.
/// `/mcp` has its own gate (credential, the called tool's scope) before the same rate limit; see
/// `crate::mcp`.
pub fn router(state: AppState) -> (Router, utoipa::openapi::OpenApi) {
    // Layers wrap what is above them: authenticate runs first, then the rate limit, then the
    // check that a read made with a principal from memory was confirmed by its statement.
    let auth_state = Arc::new(auth::AuthState::of(&state));
    let v1 = v1_routes()
        .layer(from_fn_with_state(
            auth_state.clone(),
            principal_check::confirm_reads,
        ))
        .layer(from_fn_with_state(
            state.limits.clone(),
            rate_limit::rate_limit,
        ))
        .layer(from_fn_with_state(
            auth_state.clone(),
            principal_check::confirm_refusals,
        ))
        .layer(from_fn_with_state(auth_state, auth::authenticate));
    let (api, document) = documented(v1);
    let spec_json = Arc::new(document.to_pretty_json().expect("OpenAPI serialises"));

    // Any request header, echoed back: SDKs add their own (the OpenAI JS SDK sends
    // `x-stainless-*`), and a `*` would not cover `Authorization` in browsers. Credentials are
    // never cookies, so a permissive policy leaks nothing.
    let cors = CorsLayer::new()
        .allow_origin(Any)
        .allow_methods([Method::GET, Method::POST, Method::OPTIONS])
        .allow_headers(AllowHeaders::mirror_request())
        .expose_headers([
            HeaderName::from_static("ratelimit"),
            HeaderName::from_static("ratelimit-policy"),
            header::RETRY_AFTER,
            // Browser-based OAuth clients discover the authorization server from the 401.
            header::WWW_AUTHENTICATE,
            header::LOCATION,
            header::CONTENT_RANGE,
            header::ACCEPT_RANGES,
            HeaderName::from_static("idempotent-replayed"),
            REQUEST_ID,
            HeaderName::from_static("x-service-engine"),
            HeaderName::from_static("x-service-generation-id"),
        ]);

    let app = api
        .route(
            "/openapi.json",
            get(move || {
                let spec = spec_json.clone();
                async move {
                    (
                        [(header::CONTENT_TYPE, "application/json")],
                        (*spec).clone(),
                    )
                }
            }),
        )
        .merge(crate::console::router(
            state.pool.clone(),
            state.console.secure_cookies,
        ))
        .merge(crate::oauth::router())
        .merge(crate::mcp::router(&state))
        .fallback(|| async { StatusCode::NOT_FOUND })
        .layer(
            ServiceBuilder::new()
                .layer(SetRequestIdLayer::new(REQUEST_ID, MakeRequestUuid))
                .layer(PropagateRequestIdLayer::new(REQUEST_ID))
                .layer(from_fn_with_state(
                    state.trusted_proxies.clone(),
                    client_addr::resolve,
                ))
                .layer(axum::middleware::from_fn(record_request))
                .layer(TraceLayer::new_for_http().make_span_with(make_span))
                .layer(from_fn_with_state(
                    state.links.clone(),
                    error::render_errors,
                ))
                .layer(cors)
                .layer(TimeoutLayer::with_status_code(
                    StatusCode::REQUEST_TIMEOUT,
                    state.request_timeout,
                ))
                .layer(DefaultBodyLimit::max(DEFAULT_BODY_LIMIT)),
        )
        .with_state(state);
    (app, document)
}

/// The OpenAPI document alone (for `voiced openapi` and the committed copy); layers do not
/// change it, so it needs no live state.
pub fn openapi_document() -> utoipa::openapi::OpenApi {
    documented(v1_routes()).1
}

/// Request metrics (`metrics_bind`): count and latency by route template (never the raw path),
/// method and status. Without a metrics listener the recorder is absent and this costs little.
async fn record_request(
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
fn make_span(request: &Request) -> tracing::Span {
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
