//! An account's data under its own control (issue 30 item 4): deleting a capture, and a
//! generation's stored audio, for every door (`DELETE /v1/captures/{id}`,
//! `DELETE /v1/generations/{id}/audio`), a voice profile and the whole account (console). What stays: the generation row and the usage ledger,
//! which metering and billing need (no text or audio in the ledger; docs/api.md "Your data").

use super::accounts::{self, PasswordGate};
use super::core::Core;
use super::error::{ErrorCode, ServiceError};
use super::principal::Principal;
use crate::domain::CancelReason;
use crate::service::operations::Operation;
use crate::store;

/// Deletes the account's capture `id` (its transcript and timings); 404 `not_found` when it has
/// none by that id.
pub async fn delete_capture(
    core: &Core,
    principal: &Principal,
    id: &str,
) -> Result<(), ServiceError> {
    Operation::DeleteCapture.check(principal)?;
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
    Operation::DeleteGenerationAudio.check(principal)?;
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

/// Deletes the account's voice profile `id` (the console's "Delete voice"): its reference
/// recordings and voice print go with it at once, its name is free again, and its generations
/// still waiting or rendering are cancelled ("cancelled: the voice was deleted", nothing
/// charged). Finished generations and their audio stay: they are the account's, listed in its
/// history under the deleted voice's name until deleted themselves. 404 `not_found` when the
/// account has no such voice.
pub async fn delete_voice(core: &Core, account_id: &str, id: &str) -> Result<(), ServiceError> {
    let mut tx = core.pool.begin().await?;
    let Some(pending) = store::voices::delete(&mut tx, account_id, id).await? else {
        return Err(ServiceError::not_found());
    };
    tx.commit().await?;
    for generation in &pending {
        super::delivery::cancel(&core.pool, generation, CancelReason::VoiceDeleted, 0).await?;
    }
    tracing::info!(voice_id = %id, cancelled = pending.len(), "voice deleted by its account");
    Ok(())
}

/// Deletes the whole account once `password` is its password (console): at once, in one
/// transaction, its keys and OAuth grants are revoked (refused from the next request, in every
/// process: the credential's fingerprint is gone), its console sessions end, its webhook
/// endpoints stop, and its email is free to sign up again; its running and waiting generations
/// are cancelled. Its content and audio are removed by [`purge_deleted_accounts`] (every
/// `voiced serve` runs it once a minute; docs/api.md "Your data" states the deadline).
/// `Ok(false)` for a wrong password, changing nothing.
pub async fn delete_account(
    core: &Core,
    gate: &PasswordGate,
    account_id: &str,
    password: String,
) -> Result<bool, ServiceError> {
    if !accounts::password_matches(&core.pool, gate, account_id, password).await? {
        return Ok(false);
    }
    let mut tx = core.pool.begin().await?;
    let Some(pending) = store::accounts::mark_deleted(&mut tx, account_id).await? else {
        return Err(ServiceError::not_found());
    };
    tx.commit().await?;
    for generation in &pending {
        super::delivery::cancel(&core.pool, generation, CancelReason::AccountDeleted, 0).await?;
    }
    tracing::info!(
        account_id,
        cancelled = pending.len(),
        "account deleted by its owner"
    );
    Ok(true)
}

/// Removes the content of deleted accounts: for each (one at a time, `SKIP LOCKED` so that
/// processes share the work), its generations' audio from whichever blob store holds it, then
/// its rows' content ([`store::accounts::purge`]). An account whose generation is still
/// stopping, or whose blob store does not answer, is left for the next pass. Returns how many
/// accounts were purged.
pub async fn purge_deleted_accounts(core: &Core) -> Result<usize, ServiceError> {
    let mut purged = 0;
    // Accounts this pass left for the next (few: one still stopping a generation).
    let mut skipped: Vec<String> = Vec::new();
    loop {
        let mut tx = core.pool.begin().await?;
        let Some(id) = store::accounts::next_to_purge(&mut tx, &skipped).await? else {
            return Ok(purged);
        };
        let mut keys = Vec::new();
        for (generation, recorded) in store::accounts::generation_blobs(&mut tx, &id).await? {
            let written = core.blobs.key_for(&format!("audio/{generation}"));
            keys.extend(recorded.filter(|k| *k != written));
            keys.push(written);
        }
        let mut blobs_gone = true;
        for key in &keys {
            if let Err(err) = core.blobs.delete(key).await {
                tracing::warn!(account_id = %id, error = %err, "deleting a deleted account's audio failed; retried on the next pass");
                blobs_gone = false;
                break;
            }
        }
        if blobs_gone && store::accounts::purge(&mut tx, &id).await? {
            tx.commit().await?;
            purged += 1;
            tracing::info!(account_id = %id, blobs = keys.len(), "deleted account purged");
        } else {
            tx.rollback().await?;
            skipped.push(id);
        }
    }
}
