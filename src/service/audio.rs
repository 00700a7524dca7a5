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
struct LinkedAudio {
    key: String,
    expires: i64,
    now: i64,
}

/// Longest life of a presigned URL handed out by a redirect (`blob_redirect`): it is followed at
/// once; a player that comes back later goes through the signed link again.
const PRESIGNED_MAX_SECS: i64 = 5 * 60;

/// A signed link's download, opened.
pub enum Download {
    /// The audio is in S3 and the operator set `blob_redirect`: a presigned URL of the object,
    /// valid at most 5 minutes and never past the link's expiry.
    Redirect(String),
    /// The stored object, to be read in the ranges the client asks for.
    Object(AudioObject),
}

/// A stored audio object, with one of its link's download places (`downloads_per_link`) held
/// until its bytes are read or dropped.
pub struct AudioObject {
    pub content_type: String,
    pub len: u64,
    key: String,
    blobs: std::sync::Arc<dyn crate::store::blobs::BlobStore>,
    slot: super::core::Slot,
}

impl AudioObject {
    /// Bytes `start..end`, read from the store a chunk at a time as they are taken (a large file
    /// is never held whole); the place is given back when the stream ends or is dropped.
    pub fn read(
        self,
        start: u64,
        end: u64,
    ) -> impl futures_util::Stream<Item = anyhow::Result<bytes::Bytes>> + Send + 'static {
        use futures_util::StreamExt;
        let slot = self.slot;
        store::blobs::stream(self.blobs, self.key, start, end).map(move |chunk| {
            let _held = &slot;
            chunk
        })
    }
}

/// Opens the download of a signed link (`GET|HEAD /v1/audio/{id}?sig=…`): the link's checks
/// ([`by_link`]), then a redirect to the object where the operator asked for them, else the
/// object with one of the link's download places.
pub async fn download(
    core: &Core,
    id: &str,
    sig: Option<&str>,
    head_only: bool,
) -> Result<Download, ServiceError> {
    let LinkedAudio { key, expires, now } = by_link(core, id, sig).await?;
    if core.blob_redirect {
        let life = (expires - now).clamp(1, PRESIGNED_MAX_SECS);
        let presigned = core
            .blobs
            .presigned(
                &key,
                head_only,
                std::time::Duration::from_secs(life.unsigned_abs()),
            )
            .await
            .map_err(ServiceError::internal)?;
        // Audio in PostgreSQL has no such URL: it is read below.
        if let Some(url) = presigned {
            return Ok(Download::Redirect(url));
        }
    }
    let slot = download_slot(core, id)?;
    let head = core
        .blobs
        .head(&key)
        .await
        .map_err(ServiceError::internal)?
        .ok_or_else(|| ServiceError::internal(format!("audio blob {key} is missing")))?;
    Ok(Download::Object(AudioObject {
        content_type: head.content_type,
        len: head.len,
        key,
        blobs: core.blobs.clone(),
        slot,
    }))
}

/// The audio of completed generation `id` as bytes when it is at most `max_bytes` long (MCP
/// `speak` inlines small audio), else its length.
pub async fn small(
    core: &Core,
    id: &str,
    max_bytes: u64,
) -> Result<Result<crate::store::blobs::Blob, u64>, ServiceError> {
    let StoredAudio { key, head } = completed(core, id).await?;
    if head.len > max_bytes {
        return Ok(Err(head.len));
    }
    let blob = core
        .blobs
        .get(&key)
        .await
        .map_err(ServiceError::internal)?
        .ok_or_else(|| ServiceError::internal("audio blob missing"))?;
    Ok(Ok(blob))
}

/// Checks a signed link: its signature and expiry (`invalid_signature`), a generation with
/// stored audio (`not_found`), and its account's plan, which must still allow the API
/// (`pro_plan_required`).
async fn by_link(core: &Core, id: &str, sig: Option<&str>) -> Result<LinkedAudio, ServiceError> {
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
