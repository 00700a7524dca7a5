//! Authentication: a presented credential (an API key or an OAuth access token) resolved to the
//! request's [`Principal`] for a protected resource, the same for every door. The doors read the
//! credential from their transport (`http::auth`) and render the refusals.

use std::sync::Arc;

use sqlx::PgPool;

use crate::domain::SecretHash;
use crate::domain::oauth::ACCESS_TOKEN_PREFIX;
use crate::service::principal::{Credential, Principal};
use crate::service::principal_cache::CredentialCheck;
use crate::service::{Core, ErrorCode, ServiceError};
use crate::store;

/// The protected resource a request is for. An OAuth access token is accepted only when its
/// audience includes the resource's identifier (RFC 8707); API keys work on both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    /// The REST API: `{public_base_url}/v1`.
    Api,
    /// The agent interface: `{public_base_url}/mcp`.
    Mcp,
}

impl Resource {
    fn path(self) -> &'static str {
        match self {
            Resource::Api => "/v1",
            Resource::Mcp => "/mcp",
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

/// A credential's "last used" (shown in the console) is kept to the minute without a write per
/// request: only a time a minute old or more (or none) is updated, off the request path.
pub fn stale(last_used_at: Option<chrono::DateTime<chrono::Utc>>) -> bool {
    last_used_at.is_none_or(|at| chrono::Utc::now() - at >= chrono::TimeDelta::minutes(1))
}

/// A principal and what confirms it for reads.
pub type Resolved = (Arc<Principal>, Arc<CredentialCheck>);

/// The caller presenting `presented` for `resource`: an API key, or (when it came as the only
/// bearer) an OAuth access token that is live and whose audience includes `resource`. Reads
/// (`reading`) may start from the principal kept in memory; their statement confirms it.
pub async fn resolve(
    state: &Core,
    presented: &str,
    bearer_only: bool,
    resource: Resource,
    reading: bool,
) -> Result<Resolved, ServiceError> {
    if presented.starts_with(ACCESS_TOKEN_PREFIX) && bearer_only {
        let identifier = resource.identifier(&state.public_base_url);
        let principal = crate::service::oauth::tokens::authenticate(
            &state.oauth,
            &state.pool,
            presented,
            &identifier,
        )
        .await?
        .ok_or_else(|| {
            ServiceError::new(
                ErrorCode::InvalidApiKey,
                format!(
                    "The access token is unknown, expired or revoked, or was not issued for {identifier}."
                ),
            )
        })?;
        // Checked in the database just now: a read only needs the token to be live still.
        let check = CredentialCheck::verified(&SecretHash::of(presented));
        return Ok((Arc::new(principal), Arc::new(check)));
    }
    let hash = SecretHash::of(presented);
    // Only reads start from memory: their statement confirms the principal (`confirm_reads`).
    if reading && let Some(entry) = state.principals.get(&hash) {
        if entry.take_stale_use(chrono::Utc::now())
            && let Some(key_id) = entry.principal.api_key_id()
        {
            touch(&state.pool, key_id);
        }
        let check = CredentialCheck::cached(&hash, &entry);
        return Ok((entry.principal.clone(), Arc::new(check)));
    }
    resolve_key(state, &hash).await
}

/// Looks the key up in the database and keeps the principal in `cache` for later reads.
pub async fn resolve_key(core: &Core, hash: &SecretHash) -> Result<Resolved, ServiceError> {
    let (pool, cache) = (&core.pool, &*core.principals);
    let record = store::keys::find_by_hash(pool, hash).await?;
    // The lookup was by hash; compare again in constant time so that correctness never rests
    // on the database's comparison. A revoked key has no fingerprint.
    let Some((record, fingerprint)) = record
        .filter(|r| hash.matches(&r.secret_sha256) && !r.revoked)
        .and_then(|r| r.fingerprint.clone().map(|f| (r, f)))
    else {
        cache.remove(&hash.0);
        return Err(ServiceError::invalid_api_key());
    };
    let last_used = touch_if_stale(pool, &record);
    let principal = Arc::new(principal_of(&record)?);
    cache.insert(hash, principal.clone(), &fingerprint, last_used);
    Ok((
        principal,
        Arc::new(CredentialCheck::fresh(hash, &fingerprint)),
    ))
}

fn principal_of(record: &store::keys::KeyRecord) -> Result<Principal, ServiceError> {
    Principal::from_row(
        &record.account_id,
        &record.scopes,
        &record.plan,
        &record.features,
        Credential::ApiKey {
            key_id: record.key_id.clone(),
            ceiling_minutes: record.ceiling_minutes,
        },
    )
}

/// Keeps the key's "last used" (shown in the console) to the minute without a write per request:
/// only a stale time is updated, off the request path. Returns the time now on record.
fn touch_if_stale(
    pool: &PgPool,
    record: &store::keys::KeyRecord,
) -> Option<chrono::DateTime<chrono::Utc>> {
    if stale(record.last_used_at) {
        touch(pool, &record.key_id);
        return Some(chrono::Utc::now());
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

/// Forgets the principal kept for `credential` (its next use looks the key up again).
pub fn forget(core: &Core, credential: &[u8; 32]) {
    core.principals.remove(credential);
}
