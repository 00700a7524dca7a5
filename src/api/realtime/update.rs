//! Reading `session.update` (GA: `session.type: transcription`, the audio settings under
//! `audio.input`) and `transcription_session.update` (beta: the settings at the session's top
//! level) into a new [`Config`]; a refusal names the field in the dialect the client used.

use serde_json::Value;

use super::config::{Config, Turn};
use super::conversation::Refusal;
use crate::api::openai_transcriptions::check_model;
use crate::audio::LiveEncoding;

fn field<'a>(value: &'a Value, key: &str) -> Option<&'a Value> {
    value.get(key).filter(|v| !v.is_null())
}

fn string(value: &Value, key: &str, path: &str) -> Result<Option<String>, Refusal> {
    match field(value, key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(Refusal::invalid(path, format!("{path} must be a string"))),
    }
}

/// `en`, `en-US` → `en`; empty → detected.
fn language(value: Option<String>) -> Option<String> {
    let value = value?;
    let primary = value
        .split(['-', '_'])
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    (!primary.is_empty()).then_some(primary)
}

fn millis(value: &Value, key: &str, path: &str) -> Result<Option<u64>, Refusal> {
    match field(value, key) {
        None => Ok(None),
        Some(v) => v
            .as_u64()
            .filter(|ms| *ms <= 60_000)
            .map(Some)
            .ok_or_else(|| {
                Refusal::invalid(path, format!("{path} must be milliseconds from 0 to 60000"))
            }),
    }
}

/// `turn_detection`: `null` is manual commits; `server_vad` (and `semantic_vad`, best effort:
/// its eagerness as a silence) with the fields sent over the current ones.
fn turn(value: &Value, current: Option<&Turn>, path: &str) -> Result<Option<Turn>, Refusal> {
    if value.is_null() {
        return Ok(None);
    }
    if !value.is_object() {
        return Err(Refusal::invalid(
            path,
            format!("{path} must be an object or null"),
        ));
    }
    let mut turn = current.cloned().unwrap_or_default();
    let kind = string(value, "type", &format!("{path}.type"))?.unwrap_or(turn.kind.clone());
    match kind.as_str() {
        "server_vad" => turn.eagerness = None,
        "semantic_vad" => {
            let eagerness = string(value, "eagerness", &format!("{path}.eagerness"))?
                .unwrap_or_else(|| "auto".to_owned());
            turn.silence_duration_ms = match eagerness.as_str() {
                "low" => 1500,
                "high" => 500,
                "medium" | "auto" => 800,
                _ => {
                    return Err(Refusal::invalid(
                        format!("{path}.eagerness"),
                        "eagerness must be low, medium, high or auto",
                    ));
                }
            };
            turn.eagerness = Some(eagerness);
        }
        _ => {
            return Err(Refusal::invalid(
                format!("{path}.type"),
                "turn_detection.type must be server_vad or semantic_vad (or turn_detection null for manual commits)",
            ));
        }
    }
    turn.kind = kind;
    if let Some(t) = field(value, "threshold") {
        turn.threshold = t
            .as_f64()
            .filter(|t| (0.0..=1.0).contains(t))
            .ok_or_else(|| {
                Refusal::invalid(
                    format!("{path}.threshold"),
                    "threshold must be a number from 0 to 1",
                )
            })?;
    }
    if let Some(ms) = millis(
        value,
        "prefix_padding_ms",
        &format!("{path}.prefix_padding_ms"),
    )? {
        if ms > 1000 {
            return Err(Refusal::invalid(
                format!("{path}.prefix_padding_ms"),
                "prefix_padding_ms is at most 1000",
            ));
        }
        turn.prefix_padding_ms = ms;
    }
    if let Some(ms) = millis(
        value,
        "silence_duration_ms",
        &format!("{path}.silence_duration_ms"),
    )? && turn.eagerness.is_none()
    {
        turn.silence_duration_ms = ms;
    }
    Ok(Some(turn))
}

/// `transcription` (GA) or `input_audio_transcription` (beta): `{model, language, prompt}`.
fn transcription(
    value: &Value,
    config: &mut Config,
    path: &str,
    installed: &str,
) -> Result<(), Refusal> {
    if value.is_null() {
        return Ok(());
    }
    if let Some(model) = string(value, "model", &format!("{path}.model"))? {
        check_model(Some(&model), installed)
            .map_err(|e| Refusal::invalid(format!("{path}.model"), e.detail))?;
        config.model = model;
    }
    if field(value, "language").is_some() {
        config.language = language(string(value, "language", &format!("{path}.language"))?);
    }
    if field(value, "prompt").is_some() {
        config.prompt =
            string(value, "prompt", &format!("{path}.prompt"))?.filter(|p| !p.trim().is_empty());
    }
    Ok(())
}

/// A GA format object: `audio/pcm` (with its `rate`, 24000 by default), `audio/pcmu`,
/// `audio/pcma`.
fn ga_format(value: &Value, config: &mut Config, path: &str) -> Result<(), Refusal> {
    let kind = string(value, "type", &format!("{path}.type"))?.unwrap_or_default();
    (config.encoding, config.rate) = match kind.as_str() {
        "audio/pcm" => {
            let rate = match field(value, "rate") {
                None => 24_000,
                Some(r) => r
                    .as_u64()
                    .and_then(|r| u32::try_from(r).ok())
                    .ok_or_else(|| {
                        Refusal::invalid(
                            format!("{path}.rate"),
                            "rate must be a whole number of Hz",
                        )
                    })?,
            };
            (LiveEncoding::Linear16, rate)
        }
        "audio/pcmu" => (LiveEncoding::Mulaw, 8_000),
        "audio/pcma" => (LiveEncoding::Alaw, 8_000),
        _ => {
            return Err(Refusal::invalid(
                format!("{path}.type"),
                "format.type must be audio/pcm, audio/pcmu or audio/pcma",
            ));
        }
    };
    Ok(())
}

/// Whether an update is in the beta shape: `transcription_session.update`, or a
/// `session.update` whose session has no `type` and carries the beta fields at its top level.
pub(super) fn beta_shape(event: &Value, beta_event: bool) -> bool {
    let session = &event["session"];
    beta_event
        || (field(session, "type").is_none()
            && [
                "input_audio_format",
                "input_audio_transcription",
                "turn_detection",
            ]
            .iter()
            .any(|k| session.get(*k).is_some()))
}

/// A `session.update` (GA, `session.type: transcription`; a session without `type` in the beta
/// shape is read as beta) or `transcription_session.update` (beta): the new configuration.
pub(super) fn updated(
    event: &Value,
    current: &Config,
    beta_event: bool,
    installed: &str,
) -> Result<Config, Refusal> {
    let session = field(event, "session")
        .filter(|s| s.is_object())
        .ok_or_else(|| Refusal::invalid("session", "session must be an object"))?;
    let mut config = current.clone();
    if beta_shape(event, beta_event) {
        if let Some(format) = string(session, "input_audio_format", "session.input_audio_format")? {
            (config.encoding, config.rate) = match format.as_str() {
                "pcm16" => (LiveEncoding::Linear16, 24_000),
                "g711_ulaw" => (LiveEncoding::Mulaw, 8_000),
                "g711_alaw" => (LiveEncoding::Alaw, 8_000),
                _ => {
                    return Err(Refusal::invalid(
                        "session.input_audio_format",
                        "input_audio_format must be pcm16, g711_ulaw or g711_alaw",
                    ));
                }
            };
        }
        if let Some(t) = session.get("input_audio_transcription") {
            transcription(
                t,
                &mut config,
                "session.input_audio_transcription",
                installed,
            )?;
        }
        if let Some(t) = session.get("turn_detection") {
            config.turn = turn(t, current.turn.as_ref(), "session.turn_detection")?;
        }
        if let Some(n) = session.get("input_audio_noise_reduction") {
            config.noise_reduction = n.clone();
        }
    } else {
        match string(session, "type", "session.type")?.as_deref() {
            Some("transcription") | None => {}
            Some(_) => {
                return Err(Refusal::invalid(
                    "session.type",
                    "only transcription sessions are served here: session.type must be transcription",
                ));
            }
        }
        let input = field(session, "audio")
            .and_then(|a| field(a, "input"))
            .cloned()
            .unwrap_or(Value::Null);
        if let Some(format) = field(&input, "format") {
            ga_format(format, &mut config, "session.audio.input.format")?;
        }
        if let Some(t) = input.get("transcription") {
            transcription(
                t,
                &mut config,
                "session.audio.input.transcription",
                installed,
            )?;
        }
        if let Some(t) = input.get("turn_detection") {
            config.turn = turn(
                t,
                current.turn.as_ref(),
                "session.audio.input.turn_detection",
            )?;
        }
        if let Some(n) = input.get("noise_reduction") {
            config.noise_reduction = n.clone();
        }
    }
    if let Some(include) = session.get("include") {
        config.include = include.clone();
    }
    Ok(config)
}

/// The dialect's name for a core parameter the core refused.
pub(super) fn dialect_param(core_param: Option<&str>, beta: bool) -> String {
    let (ga, old) = match core_param.unwrap_or_default() {
        "sample_rate" => (
            "session.audio.input.format.rate",
            "session.input_audio_format",
        ),
        "endpointing" => (
            "session.audio.input.turn_detection.silence_duration_ms",
            "session.turn_detection.silence_duration_ms",
        ),
        "threshold" => (
            "session.audio.input.turn_detection.threshold",
            "session.turn_detection.threshold",
        ),
        "pre_roll" => (
            "session.audio.input.turn_detection.prefix_padding_ms",
            "session.turn_detection.prefix_padding_ms",
        ),
        "language" => (
            "session.audio.input.transcription.language",
            "session.input_audio_transcription.language",
        ),
        "prompt" => (
            "session.audio.input.transcription.prompt",
            "session.input_audio_transcription.prompt",
        ),
        _ => ("session", "session"),
    };
    if beta { old } else { ga }.to_owned()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::super::conversation::Conversation;
    use super::*;
    use crate::service::live::LiveInput;

    const LIVEKIT: &str = r#"{"type":"session.update","session":{"type":"transcription","audio":{"input":{"format":{"type":"audio/pcm","rate":24000},"transcription":{"model":"gpt-4o-mini-transcribe","language":"en"},"turn_detection":{"type":"server_vad","threshold":0.5,"prefix_padding_ms":600,"silence_duration_ms":350}}}}}"#;

    fn conversation() -> Conversation {
        Conversation::new(
            Config::new("gpt-4o-transcribe".to_owned()),
            "whisper-base".to_owned(),
        )
    }

    #[test]
    fn livekits_session_update_is_read_and_echoed() {
        let mut c = conversation();
        let (inputs, replies) = c.client_event(LIVEKIT);
        assert!(matches!(inputs.as_slice(), [LiveInput::Tune(_)]));
        assert_eq!(replies[0]["type"], "session.updated");
        let input = &replies[0]["session"]["audio"]["input"];
        assert_eq!(input["format"], json!({"type": "audio/pcm", "rate": 24000}));
        assert_eq!(input["transcription"]["language"], "en");
        assert_eq!(input["turn_detection"]["silence_duration_ms"], 350);
        assert_eq!(input["turn_detection"]["prefix_padding_ms"], 600);
        let tuning = c.config.tuning();
        assert_eq!(tuning.endpointing, Some(Duration::from_millis(350)));
        assert_eq!(tuning.pre_roll, Some(Duration::from_millis(600)));
        assert_eq!(tuning.language.as_deref(), Some("en"));
    }

    #[test]
    fn beta_names_are_answered_in_beta_and_manual_mode_is_null() {
        let mut c = conversation();
        let (inputs, replies) = c.client_event(
            r#"{"type":"transcription_session.update","session":{"input_audio_format":"g711_alaw","input_audio_transcription":{"model":"whisper-1","prompt":"Beckett"},"turn_detection":null}}"#,
        );
        assert!(matches!(inputs.as_slice(), [LiveInput::Tune(_)]));
        assert_eq!(replies[0]["type"], "transcription_session.updated");
        assert_eq!(replies[0]["session"]["input_audio_format"], "g711_alaw");
        assert!(replies[0]["session"]["turn_detection"].is_null());
        let tuning = c.config.tuning();
        assert_eq!(
            (tuning.encoding, tuning.sample_rate),
            (LiveEncoding::Alaw, 8_000)
        );
        assert_eq!(tuning.endpointing, None);
        assert_eq!(tuning.prompt.as_deref(), Some("Beckett"));
    }
}
