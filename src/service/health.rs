//! Readiness, for `/readyz`: this process's generation workers have their engines, and the
//! database answers.

use super::Core;
use super::error::{ErrorCode, ServiceError};
use crate::store;

/// `Ok` when ready; 503 `service_unavailable` with `Retry-After` and what is wrong otherwise.
pub async fn ready(core: &Core) -> Result<(), ServiceError> {
    if let Some(problem) = core.health.problem() {
        return Err(ServiceError::new(
            ErrorCode::ServiceUnavailable,
            format!("Not ready: {problem}."),
        )
        .with_retry_after(5));
    }
    store::ping(&core.pool).await.map_err(|err| {
        tracing::warn!(error = %err, "readiness check failed");
        ServiceError::unavailable(5)
    })
}
