//! API keys: creation, shared by the console and `voiced admin key create`.

use sqlx::PgPool;

use super::error::ServiceError;
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
/// in whole minutes.
pub async fn create(
    pool: &PgPool,
    account_id: &str,
    name: &str,
    scopes: &[Scope],
    ceiling_minutes: Option<CeilingMinutes>,
) -> Result<CreatedKey, ServiceError> {
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
    store::keys::insert(
        pool,
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
    Ok(CreatedKey {
        id,
        prefix,
        secret,
        scopes: names,
    })
}
