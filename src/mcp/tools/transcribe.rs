//! `transcribe`: `POST /v1/transcriptions` for agents, storing a capture with `source = "agent"`.
//!
//! The same service call as REST: a place in the recogniser's queue first (taken by the gate,
//! `mcp::auth::admit`, before the message was read), then the
//! idempotency key, the audio (decoded from `audio_base64` under the same limits, or fetched
//! from `audio_url`), recognition and the capture. Base64 audio is fingerprinted exactly as REST
//! fingerprints its `audio` field, and the key stores the transcription, so a key answers for
//! the same clip through either door.

use rmcp::model::{CallToolResult, ContentBlock};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::schemas::idempotency_key_schema;
use super::{idempotency_key, success};
use crate::audio::MAX_AUDIO_BYTES;
use crate::domain::{RecognitionOptions, Timestamps};
use crate::http::error::ServiceError;
use crate::http::json::{Field, JsonObject, fields_of};
use crate::http::models::{TranscriptSegment, TranscriptWord};
use crate::mcp::McpState;
use crate::mcp::url_audio::fetch_audio_url;
use crate::service::Principal;
use crate::service::idempotency::{KeyUse, Keyed};
use crate::service::transcription::{self as service, Incoming, Place};

/// The capture `source` of everything this door transcribes.
pub const SOURCE: &str = "agent";

/// The arguments of `transcribe`, and its input schema (`schemas::input`): exactly one of
/// `audio_base64` and `audio_url`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("oneOf" = [{"required": ["audio_base64"]}, {"required": ["audio_url"]}]))]
pub(super) struct TranscribeArguments {
    /// The clip as base64 (standard alphabet; a data: URL prefix is accepted).
    #[serde(default)]
    #[schemars(with = "String", length(min = 1))]
    pub audio_base64: Field<String>,
    /// An https URL of the clip, fetched by the server.
    #[serde(default)]
    #[schemars(with = "String", url, pattern("^https://"))]
    pub audio_url: Field<String>,
    #[serde(default)]
    #[schemars(schema_with = "idempotency_key_schema")]
    pub idempotency_key: Field<String>,
    #[serde(default)]
    #[schemars(
        with = "String",
        extend("enum" = ["segment", "word"]),
        description = "segment: the result carries segments with start and end (seconds); word: \
            also each word's start and end (slower)."
    )]
    pub timestamps: Field<String>,
}

/// Where the audio comes from.
enum Audio {
    Base64(String),
    Url(String),
}

pub async fn transcribe(
    state: &McpState,
    principal: &Principal,
    args: JsonObject,
    reserved: Option<Place>,
) -> Result<CallToolResult, ServiceError> {
    let arguments = decode(args)?;
    let key = idempotency_key(arguments.idempotency_key)?;
    let timestamps = match arguments.timestamps {
        Field::Absent | Field::Null => Timestamps::None,
        Field::Valid(value) => Timestamps::parse(&value).ok_or_else(timestamps_refusal)?,
        Field::Invalid => return Err(timestamps_refusal()),
    };
    let options = RecognitionOptions {
        timestamps,
        ..RecognitionOptions::default()
    };
    let tag_options = options.clone();
    let audio = source(
        arguments.audio_base64,
        arguments.audio_url,
        state.allow_loopback_fetch(),
    )?;
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

/// The arguments as [`TranscribeArguments`], as `JsonObject::decode` decodes them but taking
/// the object, so that a clip of up to 25 MiB is moved into its field rather than copied.
fn decode(args: JsonObject) -> Result<TranscribeArguments, ServiceError> {
    args.only(fields_of::<TranscribeArguments>())?;
    // Every member is a `Field`, which takes any JSON value: with no unknown member left,
    // decoding cannot fail.
    serde_json::from_value(Value::Object(args.0)).map_err(ServiceError::internal)
}

/// Exactly one of `audio_base64` and `audio_url` (https, or `http` under the test allowance,
/// which the fetch then holds to loopback addresses).
fn source(
    base64: Field<String>,
    url: Field<String>,
    allow_loopback: bool,
) -> Result<Audio, ServiceError> {
    match (base64, url) {
        (base64, url) if base64.sent() && url.sent() => Err(ServiceError::invalid(
            "audio_base64",
            "Send either audio_base64 or audio_url, not both.",
        )),
        (Field::Valid(text), _) => Ok(Audio::Base64(text)),
        (Field::Invalid, _) => Err(ServiceError::invalid(
            "audio_base64",
            "audio_base64 must be a base64 string",
        )),
        (_, Field::Valid(url)) => {
            let is_https = url
                .get(..8)
                .is_some_and(|scheme| scheme.eq_ignore_ascii_case("https://"));
            // The test allowance also admits http (the fetch holds it to loopback).
            let admitted_http = allow_loopback
                && url
                    .get(..7)
                    .is_some_and(|scheme| scheme.eq_ignore_ascii_case("http://"));
            if !(is_https || admitted_http) {
                return Err(https_refusal());
            }
            Ok(Audio::Url(url))
        }
        (_, Field::Invalid) => Err(https_refusal()),
        _ => Err(ServiceError::invalid(
            "audio_base64",
            "audio_base64 or audio_url is required",
        )),
    }
}

fn https_refusal() -> ServiceError {
    ServiceError::invalid("audio_url", "audio_url must be an https:// URL")
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

#[cfg(test)]
mod tests {
    use super::*;

    fn args(value: Value) -> JsonObject {
        JsonObject(value.as_object().unwrap().clone())
    }

    /// The refusals of the audio arguments, each naming its argument, as before they were
    /// decoded through `TranscribeArguments`.
    #[test]
    fn the_audio_is_exactly_one_string_argument() {
        let refusal = |value: Value| {
            let arguments = decode(args(value)).unwrap();
            let err = source(arguments.audio_base64, arguments.audio_url, false)
                .err()
                .unwrap();
            (err.param.unwrap(), err.detail)
        };
        let cases = [
            (
                json!({}),
                "audio_base64",
                "audio_base64 or audio_url is required",
            ),
            (
                json!({"audio_base64": null, "audio_url": null}),
                "audio_base64",
                "audio_base64 or audio_url is required",
            ),
            (
                json!({"audio_base64": 5}),
                "audio_base64",
                "audio_base64 must be a base64 string",
            ),
            (
                json!({"audio_base64": 5, "audio_url": null}),
                "audio_base64",
                "audio_base64 must be a base64 string",
            ),
            (
                json!({"audio_base64": "AAAA", "audio_url": 5}),
                "audio_base64",
                "Send either audio_base64 or audio_url, not both.",
            ),
            (
                json!({"audio_url": ["x"]}),
                "audio_url",
                "audio_url must be an https:// URL",
            ),
            (
                json!({"audio_url": "http://127.0.0.1/a.wav"}),
                "audio_url",
                "audio_url must be an https:// URL",
            ),
        ];
        for (value, param, detail) in cases {
            assert_eq!(
                refusal(value.clone()),
                (param.to_owned(), detail.to_owned()),
                "{value}"
            );
        }
        let arguments = decode(args(json!({"audio_url": "HTTPS://a.example/x.wav"}))).unwrap();
        assert!(matches!(
            source(arguments.audio_base64, arguments.audio_url, false),
            Ok(Audio::Url(_))
        ));
        let arguments = decode(args(json!({"audio_base64": "AAAA", "audio_url": null}))).unwrap();
        assert!(matches!(
            source(arguments.audio_base64, arguments.audio_url, false),
            Ok(Audio::Base64(text)) if text == "AAAA"
        ));
        let unknown = decode(args(json!({"audio": "AAAA"}))).err().unwrap();
        assert_eq!(
            unknown.detail,
            "Unknown field \"audio\"; accepted fields: audio_base64, audio_url, \
             idempotency_key, timestamps."
        );
    }
}
