//! ElevenLabs' parameters: the query of every route, `voice_settings`, `generation_config`.
//! Each is accepted where it only shapes delivery, accepted at the value that changes nothing,
//! and refused naming it where it would change the voice in a way voiced cannot
//! (docs/live-speech.md, "Decisions per field").

use serde_json::{Map, Value};

use crate::audio::{OutputEncoding, OutputFormat};
use crate::domain::EngineId;
use crate::http::error::ApiError;

/// The query, parsed.
#[derive(Debug)]
pub struct Query {
    /// The engine `model_id` named (`None`: an ElevenLabs model name, or absent).
    pub engine: Option<EngineId>,
    pub output: OutputFormat,
    pub inactivity_timeout: Option<u64>,
    pub auto_mode: bool,
}

/// Which route the query is for (the sockets take more parameters).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    Socket,
    Rest,
}

/// LiveKit's default format (and the sockets' default).
const SOCKET_DEFAULT: &str = "mp3_22050_32";
/// The REST routes' default (ElevenLabs').
const REST_DEFAULT: &str = "mp3_44100_128";

fn flag(param: &str, value: &str) -> Result<bool, ApiError> {
    match value {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(ApiError::invalid(
            param,
            format!("{param} must be true or false"),
        )),
    }
}

pub fn parse_query(raw: Option<&str>, route: Route) -> Result<Query, ApiError> {
    let mut query = Query {
        engine: None,
        output: output_format(match route {
            Route::Socket => SOCKET_DEFAULT,
            Route::Rest => REST_DEFAULT,
        })?,
        inactivity_timeout: None,
        auto_mode: false,
    };
    let pairs = url::form_urlencoded::parse(raw.unwrap_or_default().as_bytes());
    for (name, value) in pairs {
        let value = value.as_ref();
        match (name.as_ref(), route) {
            ("model_id", _) => query.engine = model_id(value)?,
            ("output_format", _) => query.output = output_format(value)?,
            ("inactivity_timeout", Route::Socket) => {
                query.inactivity_timeout = Some(value.parse().map_err(|_| {
                    ApiError::invalid(
                        "inactivity_timeout",
                        "inactivity_timeout must be a whole number of seconds",
                    )
                })?);
            }
            ("auto_mode", Route::Socket) => query.auto_mode = flag("auto_mode", value)?,
            // Alignment is sent with the audio it describes whenever the engine times its
            // words: sync or not, the same messages.
            ("sync_alignment", Route::Socket) => {
                flag("sync_alignment", value)?;
            }
            // Generations are stored as every generation is, logging or not.
            ("enable_logging", _) => {
                flag("enable_logging", value)?;
            }
            ("enable_ssml_parsing", Route::Socket) => {
                if flag("enable_ssml_parsing", value)? {
                    return Err(ApiError::invalid(
                        "enable_ssml_parsing",
                        "SSML is not parsed here: send plain text (inline pronunciations use [word](/IPA/)).",
                    ));
                }
            }
            ("apply_text_normalization", _) => text_normalization(value)?,
            // The voice profile's language reads the text; a code is accepted as a hint.
            ("language_code", _) => {
                if value.is_empty()
                    || value.len() > 16
                    || !value.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                {
                    return Err(ApiError::invalid(
                        "language_code",
                        "language_code must be a language code such as en",
                    ));
                }
            }
            // Latency tuning: the audio streams as it is rendered anyway.
            ("optimize_streaming_latency", _) => {
                if !matches!(value, "0" | "1" | "2" | "3" | "4") {
                    return Err(ApiError::invalid(
                        "optimize_streaming_latency",
                        "optimize_streaming_latency must be 0 to 4",
                    ));
                }
            }
            (other, _) => {
                return Err(ApiError::invalid(
                    other,
                    format!("{other} is not a parameter this route accepts"),
                ));
            }
        }
    }
    Ok(query)
}

/// `model_id`: an engine id picks that engine (it must be the voice's); an ElevenLabs model
/// name (`eleven_…`) picks the voice's own engine.
pub fn model_id(value: &str) -> Result<Option<EngineId>, ApiError> {
    if value.starts_with("eleven_") {
        return Ok(None);
    }
    value.parse::<EngineId>().map(Some).map_err(|_| {
        ApiError::invalid(
            "model_id",
            format!(
                "Unknown model_id {value:?}: use an engine id (kokoro, chatterbox, …) or an ElevenLabs model name such as eleven_turbo_v2_5 (the voice's engine renders)."
            ),
        )
    })
}

/// `output_format`: `pcm_<rate>`, `ulaw_8000`, `mp3_<rate>_<kbps>` as ElevenLabs lists them.
pub fn output_format(value: &str) -> Result<OutputFormat, ApiError> {
    let refused = || {
        ApiError::invalid(
            "output_format",
            format!(
                "output_format {value:?} is not offered: use pcm_8000, pcm_16000, pcm_22050, pcm_24000, pcm_44100, pcm_48000, ulaw_8000, mp3_22050_32, or mp3_44100_32/64/96/128/192."
            ),
        )
    };
    let parts: Vec<&str> = value.split('_').collect();
    let number = |s: &str| s.parse::<u32>().map_err(|_| refused());
    let format = match parts.as_slice() {
        ["pcm", rate] => OutputFormat::new(OutputEncoding::Pcm16, number(rate)?),
        ["ulaw", rate] => OutputFormat::new(OutputEncoding::Mulaw, number(rate)?),
        ["mp3", rate, kbps] => {
            let (rate, kbps) = (number(rate)?, number(kbps)?);
            // ElevenLabs' list: 22.05 kHz at 32 kbit/s, 44.1 kHz at each rate.
            (rate == 44_100 || (rate == 22_050 && kbps == 32))
                .then(|| OutputFormat::new(OutputEncoding::Mp3 { kbps }, rate))
                .flatten()
        }
        _ => None,
    };
    format.ok_or_else(refused)
}

/// `apply_text_normalization`: voiced always reads numbers, dates and symbols out; `off`
/// cannot be honoured.
pub fn text_normalization(value: &str) -> Result<(), ApiError> {
    match value {
        "auto" | "on" => Ok(()),
        _ => Err(ApiError::invalid(
            "apply_text_normalization",
            "apply_text_normalization must be auto or on: voiced always normalises text (numbers, dates and symbols are read out).",
        )),
    }
}

/// `voice_settings`: each member at the value that changes nothing is accepted (ElevenLabs'
/// defaults: stability 0.5, similarity_boost 0.75, style 0, use_speaker_boost true, speed 1);
/// any other value would change the voice in a way voiced's engines cannot, and is refused
/// naming it. `{}` (what LiveKit sends) and `null` are accepted.
pub fn voice_settings(value: &Value, prefix: &str) -> Result<(), ApiError> {
    let settings = match value {
        Value::Null => return Ok(()),
        Value::Object(settings) => settings,
        _ => {
            return Err(ApiError::invalid(
                prefix,
                format!("{prefix} must be an object"),
            ));
        }
    };
    for (name, value) in settings {
        let field = format!("{prefix}.{name}");
        let neutral = match name.as_str() {
            "stability" => number_is(value, 0.5),
            "similarity_boost" => number_is(value, 0.75),
            "style" => number_is(value, 0.0),
            "speed" => number_is(value, 1.0),
            "use_speaker_boost" => matches!(value, Value::Bool(true) | Value::Null),
            _ => {
                return Err(ApiError::invalid(
                    &field,
                    format!("{field} is not a voice setting"),
                ));
            }
        };
        if !neutral {
            return Err(ApiError::invalid(
                &field,
                format!(
                    "{field} would change the voice in a way voiced's engines cannot; leave it out (or at ElevenLabs' default). A voice profile's character is set when it is made."
                ),
            ));
        }
    }
    Ok(())
}

fn number_is(value: &Value, neutral: f64) -> bool {
    value.is_null() || value.as_f64().is_some_and(|v| (v - neutral).abs() < 1e-9)
}

/// `generation_config`: only `chunk_length_schedule` (how text is cut into phrases: delivery
/// only). `None` when absent.
pub fn generation_config(
    config: Option<&Map<String, Value>>,
) -> Result<Option<Vec<usize>>, ApiError> {
    let Some(config) = config else {
        return Ok(None);
    };
    let mut schedule = None;
    for (name, value) in config {
        match name.as_str() {
            "chunk_length_schedule" => {
                let field = "generation_config.chunk_length_schedule";
                let list = value
                    .as_array()
                    .and_then(|items| {
                        items
                            .iter()
                            .map(|n| n.as_u64().map(|n| n as usize))
                            .collect::<Option<Vec<usize>>>()
                    })
                    .ok_or_else(|| {
                        ApiError::invalid(field, format!("{field} must be a list of numbers"))
                    })?;
                schedule = Some(list);
            }
            other => {
                let field = format!("generation_config.{other}");
                return Err(ApiError::invalid(
                    &field,
                    format!("{field} is not supported"),
                ));
            }
        }
    }
    Ok(schedule)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn livekits_query_is_accepted() {
        let livekit = "model_id=eleven_turbo_v2_5&output_format=mp3_22050_32&enable_ssml_parsing=false&enable_logging=true&inactivity_timeout=180&apply_text_normalization=auto&sync_alignment=true&auto_mode=true";
        let query = parse_query(Some(livekit), Route::Socket).unwrap();
        assert_eq!(query.engine, None);
        assert_eq!(query.inactivity_timeout, Some(180));
        assert!(query.auto_mode);
        assert_eq!(
            query.output,
            OutputFormat::new(OutputEncoding::Mp3 { kbps: 32 }, 22_050).unwrap()
        );
    }

    #[test]
    fn every_listed_format_is_offered_and_others_are_refused() {
        for format in [
            "pcm_8000",
            "pcm_16000",
            "pcm_22050",
            "pcm_24000",
            "pcm_44100",
            "pcm_48000",
            "ulaw_8000",
            "mp3_22050_32",
            "mp3_44100_32",
            "mp3_44100_64",
            "mp3_44100_96",
            "mp3_44100_128",
            "mp3_44100_192",
        ] {
            assert!(output_format(format).is_ok(), "{format}");
        }
        for format in [
            "opus_48000_64",
            "pcm_11025",
            "mp3_22050_64",
            "wav",
            "ulaw_16000",
        ] {
            let err = output_format(format).unwrap_err();
            assert_eq!(err.param.as_deref(), Some("output_format"), "{format}");
        }
    }

    #[test]
    fn what_cannot_be_honoured_is_refused_naming_it() {
        for (query, param) in [
            ("enable_ssml_parsing=true", "enable_ssml_parsing"),
            ("apply_text_normalization=off", "apply_text_normalization"),
            ("model_id=gpt-4", "model_id"),
            ("auto_mode=maybe", "auto_mode"),
            ("whatever=1", "whatever"),
        ] {
            let err = parse_query(Some(query), Route::Socket).unwrap_err();
            assert_eq!(err.param.as_deref(), Some(param), "{query}");
        }
        assert!(voice_settings(&json!({}), "voice_settings").is_ok());
        assert!(voice_settings(&json!({"speed": 1.0, "stability": 0.5}), "voice_settings").is_ok());
        let err = voice_settings(&json!({"stability": 0.2}), "voice_settings").unwrap_err();
        assert_eq!(err.param.as_deref(), Some("voice_settings.stability"));
        let err = voice_settings(&json!({"speed": 1.2}), "voice_settings").unwrap_err();
        assert_eq!(err.param.as_deref(), Some("voice_settings.speed"));
        let config = json!({"chunk_length_schedule": [120, 160]});
        assert_eq!(
            generation_config(config.as_object()).unwrap(),
            Some(vec![120, 160])
        );
    }
}
