//! The OAuth 2.1 authorization server's endpoints and the discovery documents (docs/oauth.md):
//!
//! - `GET /.well-known/oauth-authorization-server` (RFC 8414)
//! - `GET /.well-known/oauth-protected-resource`, `…/v1`, `…/mcp` (RFC 9728)
//! - `POST /oauth/register` (RFC 7591), `GET /oauth/authorize`, `POST /oauth/token`,
//!   `POST /oauth/revoke` (RFC 7009)
//!
//! A thin door over `service::oauth`. Every URL in the documents is built from the configured
//! public base URL (the issuer), never from the request's Host header. Token, revocation and
//! registration answers are JSON with `Cache-Control: no-store`; their errors are RFC 6749
//! `{"error", "error_description"}` bodies (marked [`OwnFormat`] so that the API's problem
//! documents leave them alone).

use axum::Router;
use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use base64::Engine as _;
use serde_json::{Value, json};

use crate::domain::Scope;
use crate::http::auth::AuthResource;
use crate::http::client_addr::ClientAddr;
use crate::http::error::OwnFormat;
use crate::service::Core;
use crate::service::oauth::authorize::{self, RequestError, Shown};
use crate::service::oauth::{OAuthError, tokens};

/// What the OAuth door shows through the console, where the session lives (`app/` wires it):
/// the consent page's path, and the HTML page for a request that cannot go back to its client.
#[derive(Clone, Copy)]
pub struct Pages {
    pub consent_path: &'static str,
    pub error_page: fn(&str) -> Response,
}

/// The routes, merged into the application by `app::router`.
pub fn router(core: Core, pages: Pages) -> Router {
    Router::new()
        .route(
            "/.well-known/oauth-authorization-server",
            get(authorization_server_metadata),
        )
        .route(
            "/.well-known/oauth-protected-resource",
            get(|State(state): State<Core>| async move {
                protected_resource(&state, state.oauth().issuer.clone(), "voiced")
            }),
        )
        .route(
            "/.well-known/oauth-protected-resource/v1",
            get(|State(state): State<Core>| async move {
                let resource = AuthResource::Api.identifier(state.public_base_url());
                protected_resource(&state, resource, "voiced API")
            }),
        )
        .route(
            "/.well-known/oauth-protected-resource/mcp",
            get(|State(state): State<Core>| async move {
                let resource = AuthResource::Mcp.identifier(state.public_base_url());
                protected_resource(&state, resource, "voiced agent interface (MCP)")
            }),
        )
        .route("/oauth/register", post(register))
        .route(
            "/oauth/authorize",
            get(move |state, client, query| authorize(state, client, query, pages)),
        )
        .route("/oauth/token", post(token))
        .route("/oauth/revoke", post(revoke))
        .with_state(core)
}

fn scopes_supported() -> Vec<&'static str> {
    Scope::ALL.iter().map(|s| s.as_str()).collect()
}

/// A JSON answer that is public and may be cached briefly (the discovery documents).
fn document(value: Value) -> Response {
    (
        [(header::CACHE_CONTROL, "public, max-age=300")],
        axum::Json(value),
    )
        .into_response()
}

async fn authorization_server_metadata(State(state): State<Core>) -> Response {
    let issuer = &state.oauth().issuer;
    document(json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}/oauth/authorize"),
        "token_endpoint": format!("{issuer}/oauth/token"),
        "registration_endpoint": format!("{issuer}/oauth/register"),
        "revocation_endpoint": format!("{issuer}/oauth/revoke"),
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"],
        "revocation_endpoint_auth_methods_supported": ["none"],
        "scopes_supported": scopes_supported(),
        "authorization_response_iss_parameter_supported": true,
        "client_id_metadata_document_supported": true,
    }))
}

/// RFC 9728 §2: `resource` is the identifier the document's address was made from.
fn protected_resource(state: &Core, resource: String, name: &str) -> Response {
    document(json!({
        "resource": resource,
        "resource_name": name,
        "authorization_servers": [state.oauth().issuer],
        "scopes_supported": scopes_supported(),
        "bearer_methods_supported": ["header"],
    }))
}

/// A token, revocation or registration answer: JSON, never stored by caches.
fn no_store(status: StatusCode, value: &Value) -> Response {
    let mut response = (
        status,
        [
            (header::CACHE_CONTROL, "no-store"),
            (header::PRAGMA, "no-cache"),
        ],
        axum::Json(value),
    )
        .into_response();
    response.extensions_mut().insert(OwnFormat);
    response
}

/// The HTTP status of an OAuth error code (RFC 6749 §5.2: 400 but for a client that failed to
/// authenticate; RFC 7591 §3.2.2: 400), and of this server's own refusals.
fn oauth_status(error: &str) -> StatusCode {
    match error {
        "invalid_client" => StatusCode::UNAUTHORIZED,
        "rate_limit_exceeded" => StatusCode::TOO_MANY_REQUESTS,
        "temporarily_unavailable" => StatusCode::SERVICE_UNAVAILABLE,
        "server_error" => StatusCode::INTERNAL_SERVER_ERROR,
        _ => StatusCode::BAD_REQUEST,
    }
}

impl IntoResponse for OAuthError {
    fn into_response(self) -> Response {
        let status = oauth_status(self.error);
        let mut response = no_store(
            status,
            &json!({"error": self.error, "error_description": self.description}),
        );
        if let Some(secs) = self.retry_after_secs {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        if status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Basic"));
        }
        response
    }
}

fn form_content(headers: &HeaderMap) -> Result<(), OAuthError> {
    let form = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';').next().is_some_and(|t| {
                t.trim()
                    .eq_ignore_ascii_case("application/x-www-form-urlencoded")
            })
        });
    if form {
        Ok(())
    } else {
        Err(OAuthError::invalid_request(
            "Send the parameters as application/x-www-form-urlencoded.",
        ))
    }
}

/// The client id of an HTTP Basic `Authorization` header (RFC 6749 §2.3.1: form-encoded, then
/// base64). Public clients have no secret; one sent along is not checked.
fn basic_client_id(headers: &HeaderMap) -> Result<Option<String>, OAuthError> {
    let Some(value) = headers.get(header::AUTHORIZATION) else {
        return Ok(None);
    };
    let bad =
        || OAuthError::invalid_client("The Authorization header is not valid Basic credentials.");
    let value = value.to_str().map_err(|_| bad())?;
    let (scheme, encoded) = value.split_once(' ').ok_or_else(bad)?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return Err(bad());
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .map_err(|_| bad())?;
    let decoded = String::from_utf8(decoded).map_err(|_| bad())?;
    let id = decoded.split(':').next().unwrap_or_default();
    let id = url::form_urlencoded::parse(format!("id={id}").as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default();
    Ok(Some(id).filter(|id| !id.is_empty()))
}

async fn token(State(state): State<Core>, headers: HeaderMap, body: Bytes) -> Response {
    let result = async {
        form_content(&headers)?;
        let basic = basic_client_id(&headers)?;
        tokens::token(&state, &body, basic).await
    }
    .await;
    match result {
        Ok(value) => no_store(StatusCode::OK, &value),
        Err(err) => err.into_response(),
    }
}

async fn revoke(State(state): State<Core>, headers: HeaderMap, body: Bytes) -> Response {
    let result = async {
        form_content(&headers)?;
        tokens::revoke(&state, &body).await
    }
    .await;
    match result {
        Ok(()) => no_store(StatusCode::OK, &json!({})),
        Err(err) => err.into_response(),
    }
}

async fn register(
    State(state): State<Core>,
    ClientAddr(client): ClientAddr,
    body: Bytes,
) -> Response {
    match crate::service::oauth::clients::register(&state, client, &body).await {
        Ok(value) => no_store(StatusCode::CREATED, &value),
        Err(err) => err.into_response(),
    }
}

/// Checks the request (an error page for any fault: the user has seen no consent page yet, so
/// nothing is redirected), then hands over to the console, where the session lives.
async fn authorize(
    State(state): State<Core>,
    ClientAddr(client): ClientAddr,
    RawQuery(query): RawQuery,
    pages: Pages,
) -> Response {
    let query = query.unwrap_or_default();
    // The user has seen no consent page yet: every fault is told on the error page.
    match authorize::validate(&state, &query, client, Shown::Nothing).await {
        Ok(_) => Redirect::to(&format!("{}?{query}", pages.consent_path)).into_response(),
        Err(RequestError::Page(message)) => (pages.error_page)(&message),
        Err(RequestError::Redirect(location)) => crate::http::found_no_store(&location)
            .unwrap_or_else(|| (pages.error_page)(authorize::BAD_REDIRECT_URI)),
    }
}
