//! Request bodies at the edge: reading one up to a limit, and draining a refused upload behind
//! its answer (shared by `POST /v1/transcriptions` and the agent interface's gate).

use axum::body::{Body, Bytes};
use futures_util::StreamExt;

use super::error::ApiError;
use super::json;
use crate::audio;

/// Body limit of an audio upload (`POST /v1/transcriptions`, the agent's `transcribe`): 25 MiB
/// of audio as base64 (4/3 larger) plus a data-URL prefix and the JSON around it.
pub const AUDIO_UPLOAD_LIMIT: usize = audio::MAX_AUDIO_BYTES / 3 * 4 + 1024 * 1024;

/// Reads the body up to `limit` bytes (413 beyond).
pub async fn read_limited(body: Body, limit: usize) -> Result<Bytes, ApiError> {
    axum::body::to_bytes(body, limit).await.map_err(|err| {
        if err.into_inner().is::<http_body_util::LengthLimitError>() {
            json::too_large()
        } else {
            json::unreadable()
        }
    })
}

/// Reads and discards a refused upload after its answer has been sent: up to `limit` bytes
/// within `within`, nothing kept in memory.
pub fn discard(body: Body, limit: usize, within: std::time::Duration) {
    tokio::spawn(async move {
        let _ = tokio::time::timeout(within, drain(body, limit)).await;
    });
}

/// Reads and discards the body, up to `limit` bytes: nothing is kept in memory.
async fn drain(body: Body, limit: usize) {
    let mut stream = body.into_data_stream();
    let mut seen = 0usize;
    while let Some(Ok(chunk)) = stream.next().await {
        seen += chunk.len();
        if seen > limit {
            break;
        }
    }
}
