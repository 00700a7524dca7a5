//! Audio for `transcribe` given as an https URL, fetched through the SSRF guard that OAuth
//! client metadata documents use ([`crate::fetch`]): https only, every address the host
//! resolves to public (no private, loopback or link-local), the connection pinned to the vetted
//! addresses, no redirects, at most the REST audio limit, one time limit for the whole exchange.
//!
//! The test allowance is the same setting as the metadata documents' (`oauth_allow_loopback_fetch`,
//! default false): `http` and loopback addresses, nothing else. Never in production.

use std::time::Duration;

use crate::fetch::{FetchError, FetchPolicy, fetch};
use crate::service::ServiceError;

/// The whole exchange (connect, headers, body) within this time.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(30);

/// The bytes at `url`, at most `max_bytes` of them, fetched through the SSRF guard. Every refusal
/// is 400 `invalid_request` naming `audio_url`, with what was wrong (never the server's answer).
pub async fn fetch_audio_url(
    url: &str,
    max_bytes: usize,
    allow_loopback: bool,
) -> Result<Vec<u8>, ServiceError> {
    let policy = FetchPolicy {
        max_bytes,
        timeout: FETCH_TIMEOUT,
        allow_loopback,
    };
    match fetch(url, "audio/*, application/octet-stream;q=0.5", &policy).await {
        Ok(fetched) => Ok(fetched.body),
        Err(err) => Err(ServiceError::invalid("audio_url", detail(&err))),
    }
}

fn detail(err: &FetchError) -> String {
    match err {
        FetchError::TooLarge(limit) => format!(
            "The audio at audio_url is larger than {} MiB, the most a transcription takes.",
            limit / (1024 * 1024)
        ),
        other => format!("audio_url could not be fetched: {other}."),
    }
}
