//! The composition: every door's routes merged, and the middleware stack around them. The only
//! module that names every door.

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderName, Method, StatusCode, header};
use axum::middleware::from_fn_with_state;
use tower::ServiceBuilder;
use tower_http::cors::{AllowHeaders, Any, CorsLayer};
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;

use super::AppState;
use crate::console::ConsoleState;
use crate::http;
use crate::mcp::McpState;

/// The whole application: every door plus the middleware stack, and the OpenAPI document.
///
/// Stack, outermost first: request id (set, then propagated to the response) → client address →
/// request metrics → trace span named by the route template → error rendering (problem
/// documents / OpenAI envelope) → CORS → timeout → body limit → the door's own gate (the REST
/// door's per-route authentication and rate limit, `crate::api::router`; `/mcp`'s gate,
/// `crate::mcp`) → handler.
pub fn router(state: &AppState) -> (Router, utoipa::openapi::OpenApi) {
    let (api, document) = crate::api::router(state.core.clone());
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
            http::REQUEST_ID,
            HeaderName::from_static("x-service-engine"),
            HeaderName::from_static("x-service-generation-id"),
        ]);

    let app = api
        .merge(crate::console::router(ConsoleState {
            core: state.core.clone(),
            console: state.console.clone(),
        }))
        .merge(crate::oauth::router(
            state.core.clone(),
            crate::oauth::Pages {
                consent_path: crate::console::oauth::CONSENT_PATH,
                error_page: crate::console::oauth::error_page,
            },
        ))
        .merge(crate::mcp::router(McpState {
            core: state.core.clone(),
            links: state.links.clone(),
        }))
        .fallback(|| async { StatusCode::NOT_FOUND })
        .layer(
            ServiceBuilder::new()
                .layer(SetRequestIdLayer::new(http::REQUEST_ID, MakeRequestUuid))
                .layer(PropagateRequestIdLayer::new(http::REQUEST_ID))
                .layer(from_fn_with_state(
                    state.trusted_proxies.clone(),
                    http::client_addr::resolve,
                ))
                .layer(axum::middleware::from_fn(http::record_request))
                .layer(TraceLayer::new_for_http().make_span_with(http::make_span))
                .layer(from_fn_with_state(
                    state.links.clone(),
                    http::error::render_errors,
                ))
                .layer(cors)
                .layer(TimeoutLayer::with_status_code(
                    StatusCode::REQUEST_TIMEOUT,
                    state.request_timeout(),
                ))
                .layer(DefaultBodyLimit::max(http::DEFAULT_BODY_LIMIT)),
        );
    (app, document)
}
