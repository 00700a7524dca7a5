//! The core's once-a-minute upkeep (`app` calls [`tick`]): limiter state that has refilled is
//! dropped, expired OAuth codes and tokens, console sessions and idempotency records are purged,
//! and deleted accounts' content and audio removed.

use crate::service::Core;
use crate::store;

pub async fn tick(core: &Core) {
    core.limits.shrink();
    core.oauth.clients.shrink();
    let pool = &core.pool;
    if let Err(err) = store::oauth::purge_expired(pool).await {
        tracing::warn!(error = %err, "deleting expired OAuth codes and tokens failed");
    }
    if let Err(err) = store::sessions::delete_expired(pool).await {
        tracing::warn!(error = %err, "deleting expired console sessions failed");
    }
    if let Err(err) = store::idempotency::purge(pool).await {
        tracing::warn!(error = %err, "purging idempotency records failed");
    }
    if let Err(err) = crate::service::deletion::purge_deleted_accounts(core).await {
        tracing::warn!(error = %err.detail, "purging deleted accounts failed");
    }
}
