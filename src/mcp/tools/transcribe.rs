//! `transcribe`: `POST /v1/transcriptions` for agents, storing a capture with `source = "agent"`.
//!
//! The same service call as REST: a place in the recogniser's queue first (taken by the gate,
//! `mcp::auth::admit`, before the message was read), then the
//! idempotency key, the audio (decoded from `audio_base64` under the same limits, or fetched
//! from `audio_url`), recognition and the capture. Base64 audio is fingerprinted exactly as REST
//! fingerprints its `audio` field, and the key stores the transcription, so a key answers for
//! the same clip through either door.

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Value, json};

use super::{idempotency_key, success};
use crate::audio::MAX_AUDIO_BYTES;
use crate::domain::{RecognitionOptions, Timestamps};
use crate::http::error::ServiceError;
use crate::http::json::{Field, JsonObject};
use crate::http::models::{TranscriptSegment, TranscriptWord};
use crate::mcp::McpState;
use crate::mcp::url_audio::fetch_audio_url;
use crate::service::Principal;
use crate::service::idempotency::{KeyUse, Keyed};
use crate::service::transcription::{self as service, Incoming, Place};

/// The capture `source` of everything this door transcribes.
pub const SOURCE: &str = "agent";

/// Where the audio comes from.
enum Audio {
    Base64(String),
    Url(String),
}

pub async fn transcribe(
    state: &McpState,
    principal: &Principal,
    mut args: JsonObject,
    reserved: Option<Place>,
) -> Result<CallToolResult, ServiceError> {
    args.only(&["audio_base64", "audio_url", "idempotency_key", "timestamps"])?;
    let key = idempotency_key(args.field("idempotency_key"))?;
    let timestamps = match args.field::<String>("timestamps") {
        Field::Absent | Field::Null => Timestamps::None,
        Field::Valid(value) => Timestamps::parse(&value).ok_or_else(timestamps_refusal)?,
        Field::Invalid => return Err(timestamps_refusal()),
    };
    let options = RecognitionOptions {
        timestamps,
        ..RecognitionOptions::default()
    };
    let tag_options = options.clone();
    let audio = source(&mut args, state.allow_loopback_fetch())?;
    // Admission before work: the gate took the place before it read the audio (a call it did
    // not see as `transcribe` takes one here, still before the audio is decoded or fetched).
    let place = match reserved {
        Some(place) => place,
        None => service::take_place(state, principal).await?,
    };
    let wants_fingerprint = key.is_some();
    let (incoming_audio, operation, fingerprint, param) = match audio {
        Audio::Base64(text) => {
            let (bytes, fingerprint) = tokio::task::spawn_blocking(move || {
                let fingerprint = if wants_fingerprint {
                    service::fingerprint(KeyUse::Transcription, text.as_bytes(), &tag_options)
                } else {
                    Vec::new()
                };
                service::decode_base64(&text, "audio_base64").map(|bytes| (bytes, fingerprint))
            })
            .await
            .map_err(ServiceError::internal)??;
            (
                Fetch::Ready(bytes),
                KeyUse::Transcription,
                fingerprint,
                "audio_base64",
            )
        }
        Audio::Url(url) => {
            let fingerprint = if wants_fingerprint {
                service::fingerprint(KeyUse::TranscriptionFromUrl, url.as_bytes(), &options)
            } else {
                Vec::new()
            };
            let allow_loopback = state.allow_loopback_fetch();
            (
                Fetch::Url(url, allow_loopback),
                KeyUse::TranscriptionFromUrl,
                fingerprint,
                "audio_url",
            )
        }
    };
    let keyed = Keyed {
        operation,
        key,
        fingerprint,
    };
    let incoming = Incoming {
        audio: incoming_audio.bytes(),
        source: SOURCE,
        param,
        options,
        progress: None,
    };
    let done = service::run(state, principal, place, incoming, keyed).await?;
    let result = &done.transcribed;
    let summary = format!(
        "Transcribed {:.1} s of audio (language {}) into capture {}:\n{}",
        result.duration_ms as f64 / 1000.0,
        result.language,
        result.capture_id,
        result.text
    );
    let mut structured = json!({
        "capture_id": result.capture_id,
        "text": result.text,
        "language": result.language,
        "duration_ms": result.duration_ms,
        "replayed": done.replayed,
    });
    if result.timestamps != Timestamps::None {
        let segments: Vec<TranscriptSegment> =
            result.segments.iter().cloned().map(Into::into).collect();
        structured["segments"] = json!(segments);
    }
    if result.timestamps.words() {
        let words: Vec<TranscriptWord> = result.words.iter().cloned().map(Into::into).collect();
        structured["words"] = json!(words);
    }
    Ok(success(vec![ContentBlock::text(summary)], structured))
}

fn timestamps_refusal() -> ServiceError {
    ServiceError::invalid("timestamps", "timestamps must be \"segment\" or \"word\"")
}

/// Exactly one of `audio_base64` and `audio_url` (https, or `http` under the test allowance,
/// which the fetch then holds to loopback addresses).
fn source(args: &mut JsonObject, allow_loopback: bool) -> Result<Audio, ServiceError> {
    let base64 = args.0.remove("audio_base64").filter(|v| !v.is_null());
    let url = args.0.remove("audio_url").filter(|v| !v.is_null());
    match (base64, url) {
        (Some(Value::String(text)), None) => Ok(Audio::Base64(text)),
        (Some(_), None) => Err(ServiceError::invalid(
            "audio_base64",
            "audio_base64 must be a base64 string",
        )),
        (None, Some(Value::String(url))) => {
            let is_https = url
                .get(..8)
                .is_some_and(|scheme| scheme.eq_ignore_ascii_case("https://"));
            // The test allowance also admits http (the fetch holds it to loopback).
            let admitted_http = allow_loopback
                && url
                    .get(..7)
                    .is_some_and(|scheme| scheme.eq_ignore_ascii_case("http://"));
            if !(is_https || admitted_http) {
                return Err(ServiceError::invalid(
                    "audio_url",
                    "audio_url must be an https:// URL",
                ));
            }
            Ok(Audio::Url(url))
        }
        (None, Some(_)) => Err(ServiceError::invalid(
            "audio_url",
            "audio_url must be an https:// URL",
        )),
        (Some(_), Some(_)) => Err(ServiceError::invalid(
            "audio_base64",
            "Send either audio_base64 or audio_url, not both.",
        )),
        (None, None) => Err(ServiceError::invalid(
            "audio_base64",
            "audio_base64 or audio_url is required",
        )),
    }
}

/// The audio's bytes, as they will be obtained: already decoded, or fetched only once the
/// idempotency key is known to need it.
enum Fetch {
    Ready(Vec<u8>),
    /// The URL, and whether the test allowance admits loopback.
    Url(String, bool),
}

impl Fetch {
    async fn bytes(self) -> Result<Vec<u8>, ServiceError> {
        match self {
            Fetch::Ready(bytes) => Ok(bytes),
            Fetch::Url(url, allow_loopback) => {
                fetch_audio_url(&url, MAX_AUDIO_BYTES, allow_loopback).await
            }
        }
    }
}
