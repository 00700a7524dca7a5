//! The session as the client configured it: what the core's session opens with, the
//! [`Tuning`] an update sends, and the session object echoed in `session.created`/`updated`
//! (GA) or `transcription_session.*` (beta).

use std::time::Duration;

use serde_json::{Value, json};

use crate::audio::LiveEncoding;
use crate::service::live::{LiveOptions, Tuning};

/// The session's turn detection as the client set it.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Turn {
    pub(super) kind: String,
    pub(super) threshold: f64,
    pub(super) prefix_padding_ms: u64,
    pub(super) silence_duration_ms: u64,
    /// `semantic_vad`'s, echoed.
    pub(super) eagerness: Option<String>,
}

impl Default for Turn {
    /// OpenAI's defaults for a transcription session.
    fn default() -> Self {
        Self {
            kind: "server_vad".to_owned(),
            threshold: 0.5,
            prefix_padding_ms: 300,
            silence_duration_ms: 500,
            eagerness: None,
        }
    }
}

/// The session as the client configured it (echoed in `session.created`/`updated`).
#[derive(Debug, Clone)]
pub(super) struct Config {
    pub(super) id: String,
    pub(super) encoding: LiveEncoding,
    pub(super) rate: u32,
    pub(super) model: String,
    pub(super) language: Option<String>,
    pub(super) prompt: Option<String>,
    /// `None`: manual commits.
    pub(super) turn: Option<Turn>,
    pub(super) noise_reduction: Value,
    pub(super) include: Value,
}

impl Config {
    pub(super) fn new(model: String) -> Self {
        Self {
            id: String::new(),
            encoding: LiveEncoding::Linear16,
            rate: 24_000,
            model,
            language: None,
            prompt: None,
            turn: Some(Turn::default()),
            noise_reduction: Value::Null,
            include: Value::Null,
        }
    }

    /// What the core's session opens with (OpenAI's defaults).
    pub(super) fn options(&self) -> LiveOptions {
        let tuning = self.tuning();
        LiveOptions {
            encoding: tuning.encoding,
            sample_rate: tuning.sample_rate,
            interim_results: true,
            endpointing: tuning.endpointing,
            utterance_end: None,
            language: None,
            prompt: None,
            source: "api",
        }
    }

    pub(super) fn tuning(&self) -> Tuning {
        Tuning {
            encoding: self.encoding,
            sample_rate: self.rate,
            endpointing: self
                .turn
                .as_ref()
                .map(|t| Duration::from_millis(t.silence_duration_ms)),
            threshold: self.turn.as_ref().map(|t| t.threshold as f32),
            pre_roll: self
                .turn
                .as_ref()
                .map(|t| Duration::from_millis(t.prefix_padding_ms)),
            language: self.language.clone(),
            prompt: self.prompt.clone(),
        }
    }

    fn turn_json(&self) -> Value {
        match &self.turn {
            None => Value::Null,
            Some(t) => {
                let mut v = json!({
                    "type": t.kind,
                    "threshold": t.threshold,
                    "prefix_padding_ms": t.prefix_padding_ms,
                    "silence_duration_ms": t.silence_duration_ms,
                });
                if let Some(e) = &t.eagerness {
                    v["eagerness"] = json!(e);
                }
                v
            }
        }
    }

    fn transcription_json(&self) -> Value {
        json!({"model": self.model, "language": self.language, "prompt": self.prompt})
    }

    /// The GA session object.
    pub(super) fn ga_json(&self) -> Value {
        let format = match self.encoding {
            LiveEncoding::Linear16 => json!({"type": "audio/pcm", "rate": self.rate}),
            LiveEncoding::Mulaw => json!({"type": "audio/pcmu"}),
            LiveEncoding::Alaw => json!({"type": "audio/pcma"}),
            LiveEncoding::Container => unreachable!("the realtime dialect names raw formats only"),
        };
        json!({
            "type": "transcription",
            "object": "realtime.transcription_session",
            "id": self.id,
            "audio": {"input": {
                "format": format,
                "transcription": self.transcription_json(),
                "turn_detection": self.turn_json(),
                "noise_reduction": self.noise_reduction,
            }},
            "include": self.include,
        })
    }

    /// The beta session object.
    pub(super) fn beta_json(&self) -> Value {
        let format = match self.encoding {
            LiveEncoding::Linear16 => "pcm16",
            LiveEncoding::Mulaw => "g711_ulaw",
            LiveEncoding::Alaw => "g711_alaw",
            LiveEncoding::Container => unreachable!("the realtime dialect names raw formats only"),
        };
        json!({
            "id": self.id,
            "object": "realtime.transcription_session",
            "modalities": ["text"],
            "input_audio_format": format,
            "input_audio_transcription": self.transcription_json(),
            "turn_detection": self.turn_json(),
            "input_audio_noise_reduction": self.noise_reduction,
            "include": self.include,
        })
    }
}
