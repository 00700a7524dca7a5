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
//! Cookies are never read. Writes look the key up by its SHA-256 on every request. Reads may
//! start from the principal kept in memory ([`PrincipalCache`]): their own statement rechecks
//! the key's fingerprint, and an answer it does not confirm is replaced by a fresh lookup's
//! (`principal_check::confirm_reads`). Either way a revoked key or a changed plan takes effect on
//! the very next request.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sqlx::PgPool;

use super::error::ApiError;
use crate::domain::SecretHash;
pub use crate::service::principal::{Principal, Requirement};
use crate::service::principal_cache::{CredentialCheck, PrincipalCache};
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

/// What authentication needs: the database and this process's principals. Its own small state
/// (one `Arc` per request), not the whole [`AppState`](super::AppState).
pub struct AuthState {
    pub pool: PgPool,
    pub principals: Arc<PrincipalCache>,
}

/// Step 1: resolve the credential to a [`Principal`] in the request's extensions, with the
/// [`CredentialCheck`] that read statements confirm it by.
pub async fn authenticate(
    State(state): State<Arc<AuthState>>,
    mut request: Request,
    next: Next,
) -> Response {
    let reading = matches!(*request.method(), Method::GET | Method::HEAD);
    let (principal, check) = match resolve(&state, request.headers(), reading).await {
        Ok(resolved) => resolved,
        Err(err) => return err.into_response(),
    };
    tracing::Span::current().record("account_id", principal.account_id.as_str());
    request.extensions_mut().insert(principal);
    request.extensions_mut().insert(check);
    next.run(request).await
}

type Resolved = (Arc<Principal>, Arc<CredentialCheck>);

async fn resolve(
    state: &AuthState,
    headers: &HeaderMap,
    reading: bool,
) -> Result<Resolved, ApiError> {
    let presented = presented_credential(headers)?;
    let hash = SecretHash::of(presented);
    // Only reads start from memory: their statement confirms the principal (`confirm_reads`).
    if reading && let Some(entry) = state.principals.get(&hash) {
        if entry.take_stale_use(chrono::Utc::now()) {
            touch(&state.pool, &entry.principal.key_id);
        }
        let check = CredentialCheck::cached(&hash, &entry);
        return Ok((entry.principal.clone(), Arc::new(check)));
    }
    resolve_key(&state.pool, &state.principals, &hash).await
}

/// Looks the key up in the database and keeps the principal in `cache` for later reads.
pub(crate) async fn resolve_key(
    pool: &PgPool,
    cache: &PrincipalCache,
    hash: &SecretHash,
) -> Result<Resolved, ApiError> {
    let record = store::keys::find_by_hash(pool, hash).await?;
    // The lookup was by hash; compare again in constant time so that correctness never rests
    // on the database's comparison. A revoked key has no fingerprint.
    let Some((record, fingerprint)) = record
        .filter(|r| hash.matches(&r.secret_sha256) && !r.revoked)
        .and_then(|r| r.fingerprint.clone().map(|f| (r, f)))
    else {
        cache.remove(&hash.0);
        return Err(ApiError::invalid_api_key());
    };
    let last_used = touch_if_stale(pool, &record);
    let principal = Arc::new(principal_of(&record)?);
    cache.insert(hash, principal.clone(), &fingerprint, last_used);
    Ok((
        principal,
        Arc::new(CredentialCheck::fresh(hash, &fingerprint)),
    ))
}

fn principal_of(record: &store::keys::KeyRecord) -> Result<Principal, ApiError> {
    Ok(Principal {
        key_id: record.key_id.clone(),
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
        ceiling_minutes: record.ceiling_minutes,
    })
}

/// Keeps the key's "last used" (shown in the console) to the minute without a write per request:
/// only a stale time is updated, off the request path. Returns the time now on record.
fn touch_if_stale(
    pool: &PgPool,
    record: &store::keys::KeyRecord,
) -> Option<chrono::DateTime<chrono::Utc>> {
    let now = chrono::Utc::now();
    let stale = record
        .last_used_at
        .is_none_or(|at| now - at >= chrono::TimeDelta::minutes(1));
    if stale {
        touch(pool, &record.key_id);
        return Some(now);
    }
    record.last_used_at
}

fn touch(pool: &PgPool, key_id: &str) {
    let (pool, key_id) = (pool.clone(), key_id.to_owned());
    tokio::spawn(async move {
        if let Err(err) = store::keys::touch(&pool, &key_id).await {
            tracing::warn!(error = %err, "recording a key's last use failed");
        }
    });
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
