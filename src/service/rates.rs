//! The request-rate rule for the doors that are not behind `http::rate_limit` (which counts the
//! API's and `/mcp`'s requests by key): the console's actions count against the same limiter
//! and write policy (`rate_limit_writes_per_hour`, 600 by default), under the account's own key
//! `console:<account id>` (the console principal's rate key), apart from its keys' counts.

use super::Core;
use super::error::{ErrorCode, ServiceError};
use crate::limits::Decision;

/// Counts one console action (a form sent) of `account_id`: 429 `rate_limit_exceeded` with
/// `Retry-After` past the write policy.
pub async fn console_action(core: &Core, account_id: &str) -> Result<(), ServiceError> {
    let policy = core.limits.writes();
    match core
        .limits
        .decide(policy, &format!("console:{account_id}"))
        .await
    {
        Decision::Allowed { .. } => Ok(()),
        Decision::Refused { wait } => {
            let retry_after = (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1);
            Err(ServiceError::new(
                ErrorCode::RateLimitExceeded,
                format!(
                    "This account sent more than {} forms in {} seconds from the console; retry after {retry_after} seconds.",
                    policy.quota, policy.window_secs
                ),
            )
            .with_retry_after(retry_after))
        }
    }
}
