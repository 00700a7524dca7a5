//! What only the operator does (`voiced admin`): find an account by id or email, change its plan
//! and features, and read accounts and keys as the database holds them (never a secret or its
//! hash; a key shows only its stored prefix). The operator's other commands use the operations
//! the console uses (`accounts::create`, `keys::create`, `webhooks::create`, …), with their
//! validation.

use chrono::{NaiveDate, Utc};

use crate::domain::{Feature, Plan};
use crate::service::{Core, ServiceError};
use crate::store;

pub use crate::service::views::{AccountDetail, AccountSummary, KeySummary};

/// The id of the account named by its id or its email.
pub async fn find_account(core: &Core, id_or_email: &str) -> Result<Option<String>, ServiceError> {
    Ok(store::accounts::find_id(&core.pool, id_or_email.trim()).await?)
}

/// Puts the account on `plan` (its features are reset to the plan's); false when there is no
/// such account.
pub async fn set_plan(core: &Core, account_id: &str, plan: Plan) -> Result<bool, ServiceError> {
    Ok(store::accounts::set_plan(&core.pool, account_id, plan).await?)
}

/// Grants exactly `features`; false when there is no such account.
pub async fn set_features(
    core: &Core,
    account_id: &str,
    features: &[Feature],
) -> Result<bool, ServiceError> {
    Ok(store::accounts::set_features(&core.pool, account_id, features).await?)
}

/// Accounts whose email matches the SQL `ILIKE` pattern (all without one).
pub async fn accounts(
    core: &Core,
    email_like: Option<&str>,
) -> Result<Vec<AccountSummary>, ServiceError> {
    Ok(store::accounts::list(&core.pool, email_like).await?)
}

/// This month (UTC) in the form the usage figures are kept by.
pub fn this_month() -> NaiveDate {
    store::usage::month_of(Utc::now())
}

/// The account with its usage in `month`, and its keys with theirs.
pub async fn account(
    core: &Core,
    account_id: &str,
    month: NaiveDate,
) -> Result<Option<(AccountDetail, Vec<KeySummary>)>, ServiceError> {
    let Some(detail) = store::accounts::detail(&core.pool, account_id, month).await? else {
        return Ok(None);
    };
    let keys = store::keys::list(&core.pool, account_id, month).await?;
    Ok(Some((detail, keys)))
}

/// The account's keys with their usage in `month`.
pub async fn keys(
    core: &Core,
    account_id: &str,
    month: NaiveDate,
) -> Result<Vec<KeySummary>, ServiceError> {
    Ok(store::keys::list(&core.pool, account_id, month).await?)
}
