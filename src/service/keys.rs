//! API keys: creation (shared by the console and `voiced admin key create`), the account's
//! list, revocation and the monthly ceiling.
//!
//! An account holds at most `max_keys_per_account` live keys (default 50): each key has its own
//! request-rate policies, so unlimited keys would multiply them without bound. One more is
//! refused with 409 `conflict` (the account's state is in the way; revoking a key frees a
//! place), counted under the account's lock so that concurrent creations cannot pass it.

use crate::service::Core;

use super::error::{ErrorCode, ServiceError};
use crate::domain::{ApiKeySecret, CeilingMinutes, Scope, new_id};
use crate::store;

/// A key just made. `secret` is shown once and never stored.
pub struct CreatedKey {
    pub id: String,
    pub prefix: String,
    pub secret: ApiKeySecret,
    pub scopes: Vec<String>,
}

/// Longest key name.
pub const MAX_NAME_CHARS: usize = 100;

/// Creates a key for `account_id` with `scopes` (at least one) and an optional monthly ceiling
/// in whole minutes, unless the account already holds `max_per_account` live keys (409
/// `conflict`).
pub async fn create(
    core: &Core,
    max_per_account: u32,
    account_id: &str,
    name: &str,
    scopes: &[Scope],
    ceiling_minutes: Option<CeilingMinutes>,
) -> Result<CreatedKey, ServiceError> {
    let pool = &core.pool;
    let name = name.trim();
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(ServiceError::invalid(
            "name",
            format!("A key name has at most {MAX_NAME_CHARS} characters."),
        ));
    }
    if scopes.is_empty() {
        return Err(ServiceError::invalid(
            "scopes",
            "Choose at least one scope.",
        ));
    }
    let ceiling = ceiling_minutes.map(CeilingMinutes::get);
    let secret = ApiKeySecret::generate();
    let id = new_id("key");
    let prefix = secret.prefix();
    let mut names: Vec<String> = Vec::new();
    for scope in scopes {
        if !names.iter().any(|n| n == scope.as_str()) {
            names.push(scope.as_str().to_owned());
        }
    }
    let mut tx = pool.begin().await?;
    if !store::accounts::lock(&mut tx, account_id).await? {
        return Err(ServiceError::not_found());
    }
    let live = store::keys::count_live(&mut tx, account_id).await?;
    if live >= i64::from(max_per_account) {
        return Err(ServiceError::new(
            ErrorCode::Conflict,
            format!(
                "This account has {live} live API keys, the most this deployment allows \
                 ({max_per_account}); revoke one it no longer uses to create another."
            ),
        ));
    }
    store::keys::insert(
        &mut *tx,
        store::keys::NewKey {
            id: &id,
            account_id,
            name,
            prefix: &prefix,
            hash: &secret.hash(),
            scopes: &names,
            ceiling_minutes: ceiling,
        },
    )
    .await?;
    tx.commit().await?;
    Ok(CreatedKey {
        id,
        prefix,
        secret,
        scopes: names,
    })
}

/// The account's keys, oldest first, with what each used this month.
pub async fn list(
    core: &Core,
    account_id: &str,
) -> Result<Vec<store::keys::KeySummary>, ServiceError> {
    let pool = &core.pool;
    let month = store::usage::month_of(chrono::Utc::now());
    Ok(store::keys::list(pool, account_id, month).await?)
}

/// Revokes the account's key `key_id` (from its next request); 404 `not_found` when the account
/// has no such key.
pub async fn revoke(core: &Core, account_id: &str, key_id: &str) -> Result<(), ServiceError> {
    let pool = &core.pool;
    if !store::keys::revoke_owned(pool, account_id, key_id).await? {
        return Err(ServiceError::not_found());
    }
    Ok(())
}

/// Sets, changes or (`None`) removes the monthly ceiling of the account's key `key_id`; it
/// takes effect on the key's next request. 404 `not_found` when the account has no such key.
pub async fn set_ceiling(
    core: &Core,
    account_id: &str,
    key_id: &str,
    ceiling_minutes: Option<i32>,
) -> Result<(), ServiceError> {
    let pool = &core.pool;
    if !store::keys::set_ceiling_owned(pool, account_id, key_id, ceiling_minutes).await? {
        return Err(ServiceError::not_found());
    }
    Ok(())
}

/// The operator's revocation (`voiced admin key revoke`): the key's own account's
/// [`revoke`], so both doors share one operation. 404 `not_found` for an unknown key.
pub async fn revoke_any(core: &Core, key_id: &str) -> Result<(), ServiceError> {
    let pool = &core.pool;
    let account = store::keys::owner(pool, key_id)
        .await?
        .ok_or_else(ServiceError::not_found)?;
    revoke(core, &account, key_id).await
}

/// The operator's ceiling (`voiced admin key set-ceiling`): the key's own account's
/// [`set_ceiling`]. 404 `not_found` for an unknown key.
pub async fn set_ceiling_any(
    core: &Core,
    key_id: &str,
    ceiling: Option<CeilingMinutes>,
) -> Result<(), ServiceError> {
    let pool = &core.pool;
    let account = store::keys::owner(pool, key_id)
        .await?
        .ok_or_else(ServiceError::not_found)?;
    set_ceiling(core, &account, key_id, ceiling.map(CeilingMinutes::get)).await
}
