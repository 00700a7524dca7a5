//! Authentication and authorization of `/v1` requests, and [`resolve_principal`], which the
//! agent interface (`/mcp`) calls too.
//!
//! Order of checks (documented in docs/api.md, "Order of checks"):
//! 1. credential (`x-api-key`, else `Authorization: Bearer` with a key or an OAuth access token
//!    `vat_…` whose audience includes the API) → 401 `invalid_api_key` with a
//!    `WWW-Authenticate` challenge naming the protected-resource metadata
//! 2. rate limit of the key's (or the token's authorization's) policy → 429
//!    `rate_limit_exceeded` (see `rate_limit`)
//! 3. plan → 403 `pro_plan_required`
//! 4. scope of the route → 403 `insufficient_scope`
//! 5. feature of the route in the account's plan → 403 `feature_not_enabled`
//! 6. the request itself (handlers) → 400 …
//!
//! Cookies are never read. Writes look the key up by its SHA-256 on every request. Reads may
//! start from the principal kept in memory ([`PrincipalCache`]): their own statement rechecks
//! the key's fingerprint, and an answer it does not confirm is replaced by a fresh lookup's
//! (`principal_check::confirm_reads`). OAuth access tokens are looked up on every request (reads
//! included: two round trips). Either way a revoked key or token, or a changed plan, takes
//! effect on the very next request.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::{ApiError, ErrorCode};
use crate::domain::Scope;
use crate::service::Core;
use crate::service::auth;
pub use crate::service::auth::{Resource as AuthResource, resolve_key};
pub use crate::service::principal::{Credential, Principal, Requirement};
use crate::service::principal_cache::CredentialCheck;

/// The `WWW-Authenticate` challenge of a 401 (RFC 6750 §3, RFC 9728 §5.1):
/// `Bearer resource_metadata="…", scope="voice:read voice:generate"`, plus
/// `error="invalid_token"` when a credential was sent (and refused).
pub fn www_authenticate(
    public_base_url: &str,
    resource: AuthResource,
    token_sent: bool,
) -> HeaderValue {
    let mut value = format!(
        "Bearer resource_metadata=\"{}\", scope=\"{}\"",
        resource.metadata_url(public_base_url),
        Scope::ALL.map(Scope::as_str).join(" ")
    );
    if token_sent {
        value.push_str(", error=\"invalid_token\"");
    }
    HeaderValue::from_str(&value).unwrap_or_else(|_| HeaderValue::from_static("Bearer"))
}

/// The challenge of a 403 for a token that lacks `scope` (RFC 6750 §3.1):
/// `Bearer error="insufficient_scope", scope="voice:generate", resource_metadata="…"`.
pub fn www_authenticate_insufficient_scope(
    public_base_url: &str,
    resource: AuthResource,
    scope: Scope,
) -> HeaderValue {
    let value = format!(
        "Bearer error=\"insufficient_scope\", scope=\"{}\", resource_metadata=\"{}\"",
        scope.as_str(),
        resource.metadata_url(public_base_url)
    );
    HeaderValue::from_str(&value).unwrap_or_else(|_| HeaderValue::from_static("Bearer"))
}

/// Whether the request carried any credential at all (every door's challenge asks this).
pub fn credential_sent(headers: &HeaderMap) -> bool {
    headers.contains_key("x-api-key") || headers.contains_key(header::AUTHORIZATION)
}

/// The credential as sent, if any. `Err` when a credential header is present but unusable.
fn presented_credential(headers: &HeaderMap) -> Result<&str, ApiError> {
    if let Some(value) = headers.get("x-api-key") {
        let key = value
            .to_str()
            .map_err(|_| ApiError::invalid_api_key())?
            .trim();
        return if key.is_empty() {
            Err(ApiError::invalid_api_key())
        } else {
            Ok(key)
        };
    }
    let value = headers
        .get(header::AUTHORIZATION)
        .ok_or_else(ApiError::invalid_api_key)?
        .to_str()
        .map_err(|_| ApiError::invalid_api_key())?;
    let (scheme, token) = value.split_once(' ').unwrap_or((value, ""));
    let token = token.trim();
    if !scheme.eq_ignore_ascii_case("bearer") || token.is_empty() {
        return Err(ApiError::invalid_api_key());
    }
    Ok(token)
}

/// The stack of a dialect door's own routes, outermost first: authenticate (the credential
/// always looked up; every request counts as a write, a live socket's `GET` upgrade included)
/// → rate limit → `requirement` (plan, scope, feature) → the routes. The door adds its own
/// credential forms outside it (rewritten into the headers [`authenticate`] reads).
pub fn writing_routes(
    routes: axum::Router<Core>,
    core: &Core,
    requirement: Requirement,
) -> axum::Router<Core> {
    use axum::middleware::from_fn_with_state;
    routes
        .layer(from_fn_with_state(requirement, authorize))
        .layer(from_fn_with_state(
            core.limits().clone(),
            super::rate_limit::rate_limit,
        ))
        .layer(from_fn_with_state(core.clone(), authenticate_write))
}

/// Step 1: resolve the credential to a [`Principal`] in the request's extensions. Refusals
/// carry the `WWW-Authenticate` challenge; a token's 403 `insufficient_scope` carries one too.
pub async fn authenticate(State(state): State<Core>, request: Request, next: Next) -> Response {
    let reading = matches!(*request.method(), Method::GET | Method::HEAD);
    authenticate_as(&state, request, next, reading).await
}

/// Step 1 for a route that writes whatever its method (a live session's upgrade is a `GET`):
/// the credential is always looked up (never a principal from memory), and the request counts
/// against the write policy.
pub async fn authenticate_write(
    State(state): State<Core>,
    mut request: Request,
    next: Next,
) -> Response {
    request
        .extensions_mut()
        .insert(crate::limits::RateClass::Write);
    authenticate_as(&state, request, next, false).await
}

async fn authenticate_as(
    state: &Core,
    mut request: Request,
    next: Next,
    reading: bool,
) -> Response {
    let resolved = resolve(state, request.headers(), AuthResource::Api, reading).await;
    let (principal, check) = match resolved {
        Ok(resolved) => resolved,
        Err(err) => {
            let challenge = (err.code == ErrorCode::InvalidApiKey).then(|| {
                www_authenticate(
                    state.public_base_url(),
                    AuthResource::Api,
                    credential_sent(request.headers()),
                )
            });
            let mut response = err.into_response();
            if let Some(challenge) = challenge {
                response
                    .headers_mut()
                    .insert(header::WWW_AUTHENTICATE, challenge);
            }
            return response;
        }
    };
    tracing::Span::current().record("account_id", principal.account_id.as_str());
    let oauth = principal.is_oauth();
    request.extensions_mut().insert(principal);
    request.extensions_mut().insert(check);
    let mut response = next.run(request).await;
    if oauth
        && let Some(scope) = response
            .extensions()
            .get::<Arc<ApiError>>()
            .filter(|err| err.code == ErrorCode::InsufficientScope)
            .and_then(|err| err.required_scope)
    {
        let challenge =
            www_authenticate_insufficient_scope(state.public_base_url(), AuthResource::Api, scope);
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, challenge);
    }
    response
}

/// The caller of a request for `resource`: an API key (`x-api-key`, or `Authorization: Bearer
/// vk_…`), or an OAuth access token (`Authorization: Bearer vat_…`) that is live and whose
/// audience includes `resource`. Anything else is 401 `invalid_api_key` (without the
/// challenge header: see [`www_authenticate`]). Always looked up in the database.
pub async fn resolve_principal(
    state: &Core,
    headers: &HeaderMap,
    resource: AuthResource,
) -> Result<Principal, ApiError> {
    let (principal, _) = resolve(state, headers, resource, false).await?;
    Ok((*principal).clone())
}

type Resolved = (Arc<Principal>, Arc<CredentialCheck>);

/// The credential of `headers` resolved for `resource` (`service::auth::resolve`).
async fn resolve(
    state: &Core,
    headers: &HeaderMap,
    resource: AuthResource,
    reading: bool,
) -> Result<Resolved, ApiError> {
    let presented = presented_credential(headers)?;
    // A bearer that looks like an access token is one, unless an API key header came too.
    let bearer_only = !headers.contains_key("x-api-key");
    auth::resolve(state, presented, bearer_only, resource, reading).await
}

/// Steps 3–5 for one group of routes.
pub async fn authorize(
    State(requirement): State<Requirement>,
    request: Request,
    next: Next,
) -> Response {
    let Some(principal) = request.extensions().get::<Arc<Principal>>() else {
        return ApiError::invalid_api_key().into_response();
    };
    if let Err(err) = principal.authorize(requirement) {
        return err.into_response();
    }
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::error::ErrorCode;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn challenges() {
        let base = "https://voice.example.com";
        assert_eq!(
            www_authenticate(base, AuthResource::Api, false),
            "Bearer resource_metadata=\"https://voice.example.com/.well-known/oauth-protected-resource/v1\", scope=\"voice:read voice:generate\""
        );
        assert_eq!(
            www_authenticate(base, AuthResource::Mcp, true),
            "Bearer resource_metadata=\"https://voice.example.com/.well-known/oauth-protected-resource/mcp\", scope=\"voice:read voice:generate\", error=\"invalid_token\""
        );
        assert_eq!(
            www_authenticate_insufficient_scope(base, AuthResource::Mcp, Scope::VoiceGenerate),
            "Bearer error=\"insufficient_scope\", scope=\"voice:generate\", resource_metadata=\"https://voice.example.com/.well-known/oauth-protected-resource/mcp\""
        );
        assert_eq!(
            AuthResource::Mcp.identifier("https://voice.example.com/"),
            "https://voice.example.com/mcp"
        );
    }

    #[test]
    fn credential_forms() {
        assert_eq!(
            presented_credential(&headers(&[("x-api-key", "vk_a")])).unwrap(),
            "vk_a"
        );
        assert_eq!(
            presented_credential(&headers(&[("authorization", "Bearer vk_b")])).unwrap(),
            "vk_b"
        );
        assert_eq!(
            presented_credential(&headers(&[("authorization", "bearer  vk_c ")])).unwrap(),
            "vk_c"
        );
        for bad in [
            headers(&[]),
            headers(&[("authorization", "Basic dXNlcjpwYXNz")]),
            headers(&[("authorization", "Bearer ")]),
            headers(&[("authorization", "Bearer")]),
            headers(&[("x-api-key", "  ")]),
            headers(&[("cookie", "session=vk_a")]),
        ] {
            let err = presented_credential(&bad).unwrap_err();
            assert_eq!(err.code, ErrorCode::InvalidApiKey);
        }
    }
}
