//! Authentication and authorization of `/v1` requests.
//!
//! Order of checks (documented in docs/api.md, "Order of checks"):
//! 1. credential (`x-api-key`, else `Authorization: Bearer`) → 401 `invalid_api_key`
//! 2. rate limit of the key's policy → 429 `rate_limit_exceeded` (see `rate_limit`)
//! 3. plan → 403 `pro_plan_required`
//! 4. scope of the route → 403 `insufficient_scope`
//! 5. feature of the route in the account's plan → 403 `feature_not_enabled`
//! 6. the request itself (handlers) → 400 …
//!
//! Cookies are never read. The key is looked up by its SHA-256 on every request, so a revoked
//! key or a changed plan takes effect on the very next request.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sqlx::PgPool;

use super::AppState;
use super::error::ApiError;
use crate::domain::SecretHash;
pub use crate::service::principal::{Principal, Requirement};
use crate::store;

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

/// What a credential is presented to: the REST API (`/v1`) or the agent interface (`/mcp`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthResource {
    Api,
    Mcp,
}

/// Step 1: resolve the credential to a [`Principal`] in the request's extensions.
pub async fn authenticate(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Response {
    let principal = match resolve_principal(&state, request.headers(), AuthResource::Api).await {
        Ok(principal) => principal,
        Err(err) => return err.into_response(),
    };
    tracing::Span::current().record("account_id", principal.account_id.as_str());
    request.extensions_mut().insert(Arc::new(principal));
    next.run(request).await
}

/// The credential of a request, resolved to the caller it stands for: one resolution for every
/// door that takes credentials. API keys are good for both resources (DECISIONS, "OAuth 2.1 and
/// the agent interface"); 401 `invalid_api_key` when the credential is missing or unusable.
pub async fn resolve_principal(
    state: &AppState,
    headers: &HeaderMap,
    resource: AuthResource,
) -> Result<Principal, ApiError> {
    match resource {
        AuthResource::Api | AuthResource::Mcp => resolve_key(&state.pool, headers).await,
    }
}

async fn resolve_key(pool: &PgPool, headers: &HeaderMap) -> Result<Principal, ApiError> {
    let presented = presented_credential(headers)?;
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
        key_id: record.key_id,
        account_id: record.account_id,
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
        ceiling_minutes: record.ceiling_minutes,
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
