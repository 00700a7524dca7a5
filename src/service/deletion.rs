//! An account's data under its own control (issue 30 item 4): deleting a capture, and a
//! generation's stored audio, for every door (`DELETE /v1/captures/{id}`,
//! `DELETE /v1/generations/{id}/audio`). What stays: the generation row and the usage ledger,
//! which metering and billing need (no text or audio in the ledger; docs/api.md "Your data").

use super::core::Core;
use super::error::{ErrorCode, ServiceError};
use super::principal::Principal;
use crate::store;

/// Deletes the account's capture `id` (its transcript and timings); 404 `not_found` when it has
/// none by that id.
pub async fn delete_capture(
    core: &Core,
    principal: &Principal,
    id: &str,
) -> Result<(), ServiceError> {
    if store::captures::delete(&core.pool, &principal.account_id, id).await? {
        tracing::info!(capture_id = %id, "capture deleted by its account");
        Ok(())
    } else {
        Err(ServiceError::not_found())
    }
}

/// Deletes the stored audio of the account's generation `id` from the blob store that holds it;
/// the generation stays, with `has_audio` false and no `audio_url`. Deleting audio that is
/// already gone (or never made: a failed generation) succeeds. 404 `not_found` for an id the
/// account does not have; 409 `conflict` while it is still generating (cancel it first).
pub async fn delete_generation_audio(
    core: &Core,
    principal: &Principal,
    id: &str,
) -> Result<(), ServiceError> {
    let Some((generating, key)) =
        store::generations::audio_of(&core.pool, &principal.account_id, id).await?
    else {
        return Err(ServiceError::not_found());
    };
    if generating {
        return Err(ServiceError::new(
            ErrorCode::Conflict,
            format!(
                "Generation {id} is still generating; cancel it (POST /v1/generations/{id}/cancel) or delete its audio once it has finished."
            ),
        ));
    }
    if let Some(key) = key {
        // The blob first: should forgetting it fail, the row still names it and a retry
        // deletes it; the other order could leave audio nobody can reach or delete.
        core.blobs.delete(&key).await.map_err(|err| {
            tracing::error!(generation_id = %id, error = %err, "deleting a generation's audio blob failed");
            ServiceError::unavailable(5)
        })?;
        store::generations::forget_audio(&core.pool, id).await?;
        tracing::info!(generation_id = %id, "generation audio deleted by its account");
    }
    Ok(())
}
