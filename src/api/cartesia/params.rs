//! Cartesia's parameters: the upgrade's query and `Cartesia-Version`, and the client's
//! messages. Each field is accepted where it only shapes delivery, accepted at the value that
//! changes nothing, and refused naming it where it would change the voice in a way voiced
//! cannot (docs/live-speech.md, "Cartesia's dialect").

use axum::http::HeaderMap;
use serde_json::{Map, Value};

use crate::audio::{OutputEncoding, OutputFormat};
use crate::domain::EngineId;
use crate::http::error::ApiError;
use crate::service::live_speech::ContextVoice;

/// The upgrade's `Cartesia-Version` (header) or `cartesia_version` (query): any version
/// written as a date is accepted (voiced answers every version with the same messages, the
/// ones the pinned SDK and LiveKit read); none is accepted too.
pub fn check_upgrade(headers: &HeaderMap, raw: Option<&str>) -> Result<(), ApiError> {
    let mut version = headers
        .get("cartesia-version")
        .map(|v| v.to_str().unwrap_or("?").to_owned());
    for (name, value) in url::form_urlencoded::parse(raw.unwrap_or_default().as_bytes()) {
        match name.as_ref() {
            "cartesia_version" => version = Some(value.into_owned()),
            // Read by the credential layer.
            "api_key" => {}
            other => {
                return Err(ApiError::invalid(
                    other,
                    format!("{other} is not a parameter of /tts/websocket"),
                ));
            }
        }
    }
    if let Some(version) = version
        && !is_date(&version)
    {
        return Err(ApiError::invalid(
            "cartesia_version",
            "Cartesia-Version must be a version date such as 2025-04-16",
        ));
    }
    Ok(())
}

fn is_date(value: &str) -> bool {
    let parts: Vec<&str> = value.split('-').collect();
    matches!(parts.as_slice(), [y, m, d] if y.len() == 4 && m.len() == 2 && d.len() == 2
        && parts.iter().all(|p| p.chars().all(|c| c.is_ascii_digit())))
}

/// One client message, read.
#[derive(Debug)]
pub enum Message {
    /// `{"context_id", "cancel": true}`.
    Cancel {
        context: String,
    },
    Generate(Generation),
}

/// A generation request: text for a context.
#[derive(Debug)]
pub struct Generation {
    pub context: String,
    pub transcript: String,
    /// `continue`: more text follows for this context.
    pub more: bool,
    pub flush: bool,
    /// `max_buffer_delay_ms: 0`: each message's text is spoken at once.
    pub immediate: bool,
    /// The voice, model and format the message names (a context keeps its first message's).
    pub speaker: Option<ContextVoice>,
    pub timestamps: Timestamps,
}

/// Which word timestamps a context gets (its first message's choice).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Timestamps {
    None,
    /// The words as written.
    Original,
    /// The words as spoken (`use_normalized_timestamps`: numbers read out).
    Normalized,
}

const KNOWN: [&str; 17] = [
    "context_id",
    "cancel",
    "model_id",
    "transcript",
    "continue",
    "voice",
    "output_format",
    "add_timestamps",
    "add_phoneme_timestamps",
    "use_normalized_timestamps",
    "language",
    "max_buffer_delay_ms",
    "flush",
    "duration",
    "speed",
    "generation_config",
    "pronunciation_dict_id",
];

pub fn read(text: &str) -> Result<Message, ApiError> {
    let not_object = || ApiError::invalid("message", "every message must be a JSON object");
    let Value::Object(message) = serde_json::from_str(text).map_err(|_| not_object())? else {
        return Err(not_object());
    };
    if let Some(unknown) = message.keys().find(|k| !KNOWN.contains(&k.as_str())) {
        let detail = match unknown.as_str() {
            "api_key" | "authorization" => {
                "authenticate at the upgrade (the X-API-Key header), not in a message".to_owned()
            }
            _ => format!("{unknown} is not a field of this socket's messages"),
        };
        return Err(ApiError::invalid(unknown.clone(), detail));
    }
    let context = string(&message, "context_id")?
        .ok_or_else(|| ApiError::invalid("context_id", "every message names its context_id"))?;
    if flag(&message, "cancel")? {
        return Ok(Message::Cancel { context });
    }
    if flag(&message, "add_phoneme_timestamps")? {
        return Err(ApiError::invalid(
            "add_phoneme_timestamps",
            "Phoneme timestamps are not offered: use add_timestamps (words).",
        ));
    }
    if let Some(language) = string(&message, "language")?
        && (language.is_empty()
            || language.len() > 16
            || !language
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-'))
    {
        return Err(ApiError::invalid(
            "language",
            "language must be a language code such as en",
        ));
    }
    let immediate = match message.get("max_buffer_delay_ms") {
        None | Some(Value::Null) => false,
        Some(value) => match value.as_u64() {
            Some(ms) if ms <= 5000 => ms == 0,
            _ => {
                return Err(ApiError::invalid(
                    "max_buffer_delay_ms",
                    "max_buffer_delay_ms must be 0 to 5000",
                ));
            }
        },
    };
    neutral(&message)?;
    let engine = match string(&message, "model_id")? {
        Some(model) => model_id(&model)?,
        None => None,
    };
    let speaker = match message.get("voice") {
        None | Some(Value::Null) => None,
        Some(voice) => {
            let format = message.get("output_format").ok_or_else(|| {
                ApiError::invalid("output_format", "output_format is required with voice")
            })?;
            Some(ContextVoice {
                voice: voice_id(voice)?,
                engine: engine.map(|e| (e, "model_id")),
                output: output_format(format)?,
            })
        }
    };
    if speaker.is_none()
        && let Some(format) = message.get("output_format")
    {
        output_format(format)?;
    }
    let timestamps = match (
        flag(&message, "add_timestamps")?,
        flag(&message, "use_normalized_timestamps")?,
    ) {
        (false, _) => Timestamps::None,
        (true, false) => Timestamps::Original,
        (true, true) => Timestamps::Normalized,
    };
    Ok(Message::Generate(Generation {
        context,
        transcript: string(&message, "transcript")?.unwrap_or_default(),
        // Cartesia's default: a message without `continue` is the context's last.
        more: flag(&message, "continue")?,
        flush: flag(&message, "flush")?,
        immediate,
        speaker,
        timestamps,
    }))
}

/// The members that would change the voice, accepted only at the value that changes nothing.
fn neutral(message: &Map<String, Value>) -> Result<(), ApiError> {
    let changes = |field: &str, what: &str| {
        ApiError::invalid(
            field,
            format!(
                "{field} {what}; leave it out. A voice profile's character is set when it is made."
            ),
        )
    };
    match message.get("duration") {
        None | Some(Value::Null) => {}
        Some(_) => {
            return Err(changes(
                "duration",
                "would stretch the speech, which voiced's engines cannot",
            ));
        }
    }
    match message.get("speed") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) if s == "normal" => {}
        Some(_) => {
            return Err(changes(
                "speed",
                "other than normal would change the voice's pace, which voiced's engines cannot here",
            ));
        }
    }
    match message.get("pronunciation_dict_id") {
        None | Some(Value::Null) => {}
        Some(_) => {
            return Err(ApiError::invalid(
                "pronunciation_dict_id",
                "Cartesia's pronunciation dictionaries are not read here: the account's pronunciations (POST /v1/pronunciations) apply to every phrase.",
            ));
        }
    }
    match message.get("generation_config") {
        None | Some(Value::Null) => {}
        Some(Value::Object(config)) => {
            for (name, value) in config {
                let field = format!("generation_config.{name}");
                let ok = match name.as_str() {
                    "speed" | "volume" => {
                        value.is_null() || value.as_f64().is_some_and(|v| (v - 1.0).abs() < 1e-9)
                    }
                    "emotion" => value.is_null(),
                    _ => {
                        return Err(ApiError::invalid(
                            &field,
                            format!("{field} is not supported"),
                        ));
                    }
                };
                if !ok {
                    return Err(changes(&field, "would change the voice"));
                }
            }
        }
        Some(_) => {
            return Err(ApiError::invalid(
                "generation_config",
                "generation_config must be an object",
            ));
        }
    }
    Ok(())
}

/// `model_id`: an engine id picks that engine (it must be the voice's); a Cartesia model name
/// (`sonic`, `sonic-2`, `sonic-3`, `sonic-turbo`, `sonic-latest`, dated ones, …) picks the
/// voice's own engine.
pub fn model_id(value: &str) -> Result<Option<EngineId>, ApiError> {
    if value == "sonic" || value.starts_with("sonic-") {
        return Ok(None);
    }
    value.parse::<EngineId>().map(Some).map_err(|_| {
        ApiError::invalid(
            "model_id",
            format!(
                "Unknown model_id {value:?}: use an engine id (kokoro, chatterbox, …) or a Cartesia model name such as sonic-3 (the voice's engine renders)."
            ),
        )
    })
}

/// `voice`: `{"mode": "id", "id"}` (LiveKit, Pipecat), `{"id"}` or the id alone (the SDK);
/// the id is a voice profile's id or name.
fn voice_id(voice: &Value) -> Result<String, ApiError> {
    let voice = match voice {
        Value::String(id) => return Ok(id.clone()),
        Value::Object(voice) => voice,
        _ => return Err(ApiError::invalid("voice", "voice must be an object")),
    };
    // The mode first: an embedding voice names its other members after it.
    match voice.get("mode") {
        None | Some(Value::Null) => {}
        Some(Value::String(mode)) if mode == "id" => {}
        Some(_) => {
            return Err(ApiError::invalid(
                "voice.mode",
                "voice.mode must be id: voiced speaks its voice profiles (an embedding cannot be read here; POST /v1/voices makes a profile).",
            ));
        }
    }
    for (name, value) in voice {
        match (name.as_str(), value) {
            ("id" | "mode", _) => {}
            ("__experimental_controls", Value::Object(c)) if c.is_empty() => {}
            ("__experimental_controls", Value::Null) => {}
            (other, _) => {
                let field = format!("voice.{other}");
                return Err(ApiError::invalid(
                    &field,
                    format!(
                        "{field} would change the voice in a way voiced's engines cannot; leave it out."
                    ),
                ));
            }
        }
    }
    match voice.get("id") {
        Some(Value::String(id)) if !id.is_empty() => Ok(id.clone()),
        _ => Err(ApiError::invalid(
            "voice.id",
            "voice.id must name a voice profile (its id or name)",
        )),
    }
}

/// `output_format`: `{"container": "raw", "encoding", "sample_rate"}`; `pcm_s16le` and
/// `pcm_f32le` at 8, 16, 22.05, 24, 44.1 or 48 kHz, `pcm_mulaw` at 8 kHz.
pub fn output_format(value: &Value) -> Result<OutputFormat, ApiError> {
    let Value::Object(format) = value else {
        return Err(ApiError::invalid(
            "output_format",
            "output_format must be an object",
        ));
    };
    let mut encoding = None;
    let mut rate = None;
    for (name, value) in format {
        match name.as_str() {
            "container" => {
                if value.as_str() != Some("raw") {
                    return Err(ApiError::invalid(
                        "output_format.container",
                        "output_format.container must be raw on this socket",
                    ));
                }
            }
            "encoding" => {
                encoding = Some(match value.as_str() {
                    Some("pcm_s16le") => OutputEncoding::Pcm16,
                    Some("pcm_f32le") => OutputEncoding::PcmF32,
                    Some("pcm_mulaw") => OutputEncoding::Mulaw,
                    _ => {
                        return Err(ApiError::invalid(
                            "output_format.encoding",
                            "output_format.encoding must be pcm_s16le, pcm_f32le or pcm_mulaw",
                        ));
                    }
                });
            }
            "sample_rate" => {
                rate = Some(
                    value
                        .as_u64()
                        .and_then(|r| u32::try_from(r).ok())
                        .ok_or_else(|| {
                            ApiError::invalid(
                                "output_format.sample_rate",
                                "output_format.sample_rate must be a whole number of hertz",
                            )
                        })?,
                );
            }
            other => {
                let field = format!("output_format.{other}");
                return Err(ApiError::invalid(
                    &field,
                    format!("{field} is not a member of a raw output format"),
                ));
            }
        }
    }
    let encoding = encoding.ok_or_else(|| {
        ApiError::invalid(
            "output_format.encoding",
            "output_format.encoding is required",
        )
    })?;
    let rate = rate.ok_or_else(|| {
        ApiError::invalid(
            "output_format.sample_rate",
            "output_format.sample_rate is required",
        )
    })?;
    OutputFormat::new(encoding, rate).ok_or_else(|| {
        ApiError::invalid(
            "output_format.sample_rate",
            format!(
                "output_format.sample_rate {rate} is not offered for this encoding: pcm_s16le and pcm_f32le at 8000, 16000, 22050, 24000, 44100 or 48000, pcm_mulaw at 8000."
            ),
        )
    })
}

fn string(message: &Map<String, Value>, name: &str) -> Result<Option<String>, ApiError> {
    match message.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(ApiError::invalid(name, format!("{name} must be a string"))),
    }
}

fn flag(message: &Map<String, Value>, name: &str) -> Result<bool, ApiError> {
    match message.get(name) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(ApiError::invalid(
            name,
            format!("{name} must be true or false"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// LiveKit Agents 1.8.9's two messages (../shared/notes/wave4-facts.md).
    const LIVEKIT_FIRST: &str = r#"{"model_id":"sonic-3","voice":{"mode":"id","id":"Agent"},"output_format":{"container":"raw","encoding":"pcm_s16le","sample_rate":24000},"language":"en","add_timestamps":true,"max_buffer_delay_ms":0,"context_id":"c1","transcript":"Hello there. ","continue":true}"#;
    const LIVEKIT_LAST: &str = r#"{"model_id":"sonic-3","voice":{"mode":"id","id":"Agent"},"output_format":{"container":"raw","encoding":"pcm_s16le","sample_rate":24000},"language":"en","add_timestamps":true,"max_buffer_delay_ms":0,"context_id":"c1","transcript":" ","continue":false}"#;

    #[test]
    fn livekits_messages_are_read() {
        let Message::Generate(first) = read(LIVEKIT_FIRST).unwrap() else {
            panic!("a generation")
        };
        assert_eq!(first.context, "c1");
        assert!(first.more && first.immediate && !first.flush);
        assert_eq!(first.timestamps, Timestamps::Original);
        let speaker = first.speaker.unwrap();
        assert_eq!(speaker.voice, "Agent");
        assert!(speaker.engine.is_none());
        assert_eq!(
            speaker.output,
            OutputFormat::new(OutputEncoding::Pcm16, 24_000).unwrap()
        );
        let Message::Generate(last) = read(LIVEKIT_LAST).unwrap() else {
            panic!("a generation")
        };
        assert!(!last.more && last.transcript == " ");
        assert!(matches!(
            read(r#"{"context_id":"c1","cancel":true}"#).unwrap(),
            Message::Cancel { context } if context == "c1"
        ));
        // The SDK's forms: the voice as `{"id"}` or the id alone, float PCM.
        let sdk = r#"{"context_id":"x","model_id":"sonic-latest","transcript":"Hi","voice":"Agent","output_format":{"container":"raw","encoding":"pcm_f32le","sample_rate":44100},"continue":true,"flush":true}"#;
        let Message::Generate(sdk) = read(sdk).unwrap() else {
            panic!("a generation")
        };
        assert!(sdk.flush && !sdk.immediate);
        assert_eq!(sdk.speaker.unwrap().output.encoding, OutputEncoding::PcmF32);
    }

    #[test]
    fn what_cannot_be_honoured_is_refused_naming_the_field() {
        let with = |extra: &str| {
            format!(
                r#"{{"context_id":"c","model_id":"sonic-3","transcript":"Hi","voice":{{"mode":"id","id":"A"}},"output_format":{{"container":"raw","encoding":"pcm_s16le","sample_rate":24000}}{extra}}}"#
            )
        };
        for (message, param) in [
            (with(r#","speed":"fast""#), "speed"),
            (with(r#","duration":3"#), "duration"),
            (with(r#","add_phoneme_timestamps":true"#), "add_phoneme_timestamps"),
            (with(r#","generation_config":{"emotion":"angry"}"#), "generation_config.emotion"),
            (with(r#","max_buffer_delay_ms":9000"#), "max_buffer_delay_ms"),
            (with(r#","pronunciation_dict_id":"d""#), "pronunciation_dict_id"),
            (with(r#","whatever":1"#), "whatever"),
            (
                r#"{"context_id":"c","model_id":"gpt-4","voice":{"id":"A"},"output_format":{"container":"raw","encoding":"pcm_s16le","sample_rate":24000}}"#.to_owned(),
                "model_id",
            ),
            (
                r#"{"context_id":"c","voice":{"mode":"embedding","embedding":[0.1]},"output_format":{"container":"raw","encoding":"pcm_s16le","sample_rate":24000}}"#.to_owned(),
                "voice.mode",
            ),
            (
                r#"{"context_id":"c","voice":{"id":"A"},"output_format":{"container":"raw","encoding":"pcm_s16le","sample_rate":11025}}"#.to_owned(),
                "output_format.sample_rate",
            ),
            (
                r#"{"context_id":"c","voice":{"id":"A"},"output_format":{"container":"raw","encoding":"pcm_alaw","sample_rate":8000}}"#.to_owned(),
                "output_format.encoding",
            ),
            (
                r#"{"context_id":"c","voice":{"id":"A"},"output_format":{"container":"mp3","encoding":"pcm_s16le","sample_rate":8000}}"#.to_owned(),
                "output_format.container",
            ),
            (r#"{"transcript":"Hi"}"#.to_owned(), "context_id"),
            ("[]".to_owned(), "message"),
        ] {
            let err = read(&message).expect_err(&message);
            assert_eq!(err.param.as_deref(), Some(param), "{message}");
        }
        assert!(
            read(&with(
                r#","speed":"normal","generation_config":{"speed":1.0,"volume":1}"#
            ))
            .is_ok()
        );
    }

    #[test]
    fn versions_are_dates() {
        let headers = HeaderMap::new();
        assert!(check_upgrade(&headers, Some("cartesia_version=2025-04-16")).is_ok());
        assert!(check_upgrade(&headers, Some("cartesia_version=2024-11-13&api_key=k")).is_ok());
        assert!(check_upgrade(&headers, None).is_ok());
        let err = check_upgrade(&headers, Some("cartesia_version=latest")).unwrap_err();
        assert_eq!(err.param.as_deref(), Some("cartesia_version"));
        let err = check_upgrade(&headers, Some("voice=x")).unwrap_err();
        assert_eq!(err.param.as_deref(), Some("voice"));
    }
}
