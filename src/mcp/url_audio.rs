//! Audio for `transcribe` given as an https URL.
//!
//! STAND-IN, to be wired at merge: the fetch belongs to `crate::service::fetch::fetch_audio_url`
//! (the SSRF-guarded fetch written with the OAuth work). Until it is wired here, an `audio_url`
//! is refused with 400 `invalid_request` naming `audio_url`, and nothing is fetched.

use crate::service::ServiceError;

/// The bytes at `url`, at most `max_bytes` of them, fetched through the SSRF guard.
pub async fn fetch_audio_url(url: &str, max_bytes: usize) -> Result<Vec<u8>, ServiceError> {
    let _ = (url, max_bytes);
    Err(ServiceError::invalid(
        "audio_url",
        "audio_url is not available yet; send the audio as audio_base64.",
    ))
}
