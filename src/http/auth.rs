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
//! Cookies are never read. Keys and tokens are looked up by their SHA-256 on every request, so a
//! revocation or a changed plan takes effect on the very next request.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sqlx::PgPool;

use super::AppState;
use super::error::{ApiError, ErrorCode};
use crate::domain::oauth::ACCESS_TOKEN_PREFIX;
use crate::domain::{Scope, SecretHash};
pub use crate::service::principal::{Credential, Principal, Requirement};
use crate::store;

/// The protected resource a request is for. An OAuth access token is accepted only when its
/// audience includes the resource's identifier (RFC 8707); API keys work on both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthResource {
    /// The REST API: `{public_base_url}/v1`.
    Api,
    /// The agent interface: `{public_base_url}/mcp`.
    Mcp,
}

impl AuthResource {
    fn path(self) -> &'static str {
        match self {
            AuthResource::Api => "/v1",
            AuthResource::Mcp => "/mcp",
        }
    }

    /// The resource identifier, e.g. `https://voice.example.com/v1`.
    pub fn identifier(self, public_base_url: &str) -> String {
        format!("{}{}", public_base_url.trim_end_matches('/'), self.path())
    }

    /// Its protected-resource metadata document (RFC 9728 §3.1: the path after the well-known
    /// name), e.g. `https://voice.example.com/.well-known/oauth-protected-resource/mcp`.
    pub fn metadata_url(self, public_base_url: &str) -> String {
        format!(
            "{}/.well-known/oauth-protected-resource{}",
            public_base_url.trim_end_matches('/'),
            self.path()
        )
    }
}

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

/// Whether the request carried any credential at all.
fn credential_sent(headers: &HeaderMap) -> bool {
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

/// Step 1: resolve the credential to a [`Principal`] in the request's extensions. Refusals
/// carry the `WWW-Authenticate` challenge; a token's 403 `insufficient_scope` carries one too.
pub async fn authenticate(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Response {
    let principal = match resolve_principal(&state, request.headers(), AuthResource::Api).await {
        Ok(principal) => principal,
        Err(err) => {
            let challenge = (err.code == ErrorCode::InvalidApiKey).then(|| {
                www_authenticate(
                    &state.public_base_url,
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
    request.extensions_mut().insert(Arc::new(principal));
    let mut response = next.run(request).await;
    if oauth
        && let Some(scope) = response
            .extensions()
            .get::<Arc<ApiError>>()
            .filter(|err| err.code == ErrorCode::InsufficientScope)
            .and_then(|err| err.required_scope)
    {
        let challenge =
            www_authenticate_insufficient_scope(&state.public_base_url, AuthResource::Api, scope);
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, challenge);
    }
    response
}

/// The caller of a request for `resource`: an API key (`x-api-key`, or `Authorization: Bearer
/// vk_…`), or an OAuth access token (`Authorization: Bearer vat_…`) that is live and whose
/// audience includes `resource`. Anything else is 401 `invalid_api_key` (without the
/// challenge header: see [`www_authenticate`]).
pub async fn resolve_principal(
    state: &AppState,
    headers: &HeaderMap,
    resource: AuthResource,
) -> Result<Principal, ApiError> {
    let presented = presented_credential(headers)?;
    if presented.starts_with(ACCESS_TOKEN_PREFIX) && !headers.contains_key("x-api-key") {
        let identifier = resource.identifier(&state.public_base_url);
        return crate::service::oauth::tokens::authenticate(
            &state.oauth,
            &state.pool,
            presented,
            &identifier,
        )
        .await?
        .ok_or_else(|| {
            ApiError::new(
                ErrorCode::InvalidApiKey,
                format!(
                    "The access token is unknown, expired or revoked, or was not issued for {identifier}."
                ),
            )
        });
    }
    resolve_key(&state.pool, presented).await
}

async fn resolve_key(pool: &PgPool, presented: &str) -> Result<Principal, ApiError> {
    let hash = SecretHash::of(presented);
    let record = store::keys::find_by_hash(pool, &hash)
        .await?
        .ok_or_else(ApiError::invalid_api_key)?;
    // The lookup was by hash; compare again in constant time so that correctness never rests
    // on the database's comparison.
    if !hash.matches(&record.secret_sha256) || record.revoked {
        return Err(ApiError::invalid_api_key());
    }
    touch_if_stale(pool, &record);
    Ok(Principal {
        account_id: record.account_id.clone(),
        scopes: record
            .scopes
            .iter()
            .filter_map(|s| s.parse().ok())
            .collect(),
        plan: record.plan.parse().map_err(ApiError::internal)?,
        features: record
            .features
            .iter()
            .filter_map(|f| f.parse().ok())
            .collect(),
        credential: Credential::ApiKey {
            key_id: record.key_id,
            ceiling_minutes: record.ceiling_minutes,
        },
    })
}

/// Keeps the key's "last used" (shown in the console) to the minute without a write per request:
/// only a stale time is updated, off the request path.
fn touch_if_stale(pool: &PgPool, record: &store::keys::KeyRecord) {
    let stale = record
        .last_used_at
        .is_none_or(|at| chrono::Utc::now() - at >= chrono::TimeDelta::minutes(1));
    if stale {
        let (pool, key_id) = (pool.clone(), record.key_id.clone());
        tokio::spawn(async move {
            if let Err(err) = store::keys::touch(&pool, &key_id).await {
                tracing::warn!(error = %err, "recording a key's last use failed");
            }
        });
    }
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
