//! A completed generation's audio, for every door that hands it out: the signed link
//! (`audio_url`), the stored file (`POST /v1/audio/speech`'s answer once the generation has
//! ended, the agent's inline audio).

use super::core::Core;
use super::error::ServiceError;
use crate::store;
use crate::store::blobs::BlobHead;

/// The signed, key-less link to generation `id`'s audio (`GET /v1/audio/{id}?sig=…`), valid
/// from now.
pub fn signed_url(core: &Core, id: &str) -> String {
    let sig = core.signer.sign(id, chrono::Utc::now().timestamp());
    format!("{}/v1/audio/{id}?sig={sig}", core.public_base_url)
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
