//! A completed generation's audio, for every door that hands it out: the signed link
//! (`audio_url`), the stored file (`POST /v1/audio/speech`'s answer once the generation has
//! ended, the agent's inline audio).

use super::core::Core;
use super::error::{ErrorCode, ServiceError};
use crate::domain::Plan;
use crate::store;
use crate::store::blobs::BlobHead;

/// The signed, key-less link to generation `id`'s audio (`GET /v1/audio/{id}?sig=…`), valid
/// from now.
pub fn signed_url(core: &Core, id: &str) -> String {
    signed_link(&core.signer, &core.public_base_url, id)
}

/// Same, from the signer and the public base URL alone (the webhook deliveries of a
/// `voiced worker` process, which has no [`Core`]).
pub fn signed_link(signer: &crate::signing::AudioSigner, base_url: &str, id: &str) -> String {
    let sig = signer.sign(id, chrono::Utc::now().timestamp());
    format!("{base_url}/v1/audio/{id}?sig={sig}")
}

/// One of generation `id`'s downloads in flight (`downloads_per_link`, every door that hands
/// its audio out: the signed link, the console's own route): 429 `rate_limit_exceeded` with
/// `Retry-After` beyond. Hold it until the body is finished or dropped.
pub fn download_slot(core: &Core, id: &str) -> Result<super::core::Slot, ServiceError> {
    core.downloads.take(id).ok_or_else(|| {
        ServiceError::new(
            ErrorCode::RateLimitExceeded,
            "This audio link already has as many downloads in flight as the server allows; retry when one has finished.",
        )
        .with_retry_after(1)
    })
}

/// Where a completed generation's audio is stored, and its length and type.
pub struct StoredAudio {
    pub key: String,
    pub head: BlobHead,
}

/// The stored audio of completed generation `id` (an internal error when it has none: a
/// generation completes with its audio stored).
pub async fn completed(core: &Core, id: &str) -> Result<StoredAudio, ServiceError> {
    let key = store::generations::for_download(&core.pool, id)
        .await?
        .and_then(|d| d.audio_key)
        .ok_or_else(|| ServiceError::internal("completed generation without audio"))?;
    let head = core
        .blobs
        .head(&key)
        .await
        .map_err(ServiceError::internal)?
        .ok_or_else(|| ServiceError::internal("audio blob missing"))?;
    Ok(StoredAudio { key, head })
}

/// The audio behind a signed link (`GET /v1/audio/{id}?sig=…`, no key): what it is stored as,
/// when the link expires, and the time it was checked at.
pub struct LinkedAudio {
    pub key: String,
    pub expires: i64,
    pub now: i64,
}

/// Checks a signed link: its signature and expiry (`invalid_signature`), a generation with
/// stored audio (`not_found`), and its account's plan, which must still allow the API
/// (`pro_plan_required`).
pub async fn by_link(
    core: &Core,
    id: &str,
    sig: Option<&str>,
) -> Result<LinkedAudio, ServiceError> {
    let invalid_signature = || {
        ServiceError::new(
            ErrorCode::InvalidSignature,
            "The audio link is missing its signature, was altered, or has expired; poll the generation for a fresh audio_url.",
        )
    };
    let sig = sig.ok_or_else(invalid_signature)?;
    let now = chrono::Utc::now().timestamp();
    let expires = core
        .signer
        .verify(id, sig, now)
        .map_err(|_| invalid_signature())?;
    let row = store::generations::for_download(&core.pool, id)
        .await?
        .ok_or_else(ServiceError::not_found)?;
    let plan: Plan = row.plan.parse().map_err(ServiceError::internal)?;
    if !plan.allows_api() {
        return Err(ServiceError::pro_plan_required());
    }
    let key = row.audio_key.ok_or_else(ServiceError::not_found)?;
    Ok(LinkedAudio { key, expires, now })
}
