//! The socket's conversation: client events read into the session's inputs (or refused with
//! an `error` event), and the session's events rendered as OpenAI's server events, each
//! utterance an item whose agreed words go out as deltas before it is committed and completed.

use base64::Engine as _;
use serde_json::{Value, json};

use super::config::Config;
use super::update::{beta_shape, dialect_param, updated};
use crate::domain::new_id;
use crate::http::error::{ErrorCode, openai_type};
use crate::service::live::utterances::EndReason;
use crate::service::live::{Hypothesis, LiveEvent, LiveInput, MAX_AUDIO_MESSAGE};

/// A client event's refusal: rendered as an `error` event; the socket stays open.
#[derive(Debug)]
pub(super) struct Refusal {
    code: &'static str,
    kind: &'static str,
    message: String,
    param: Option<String>,
}

impl Refusal {
    pub(super) fn invalid(param: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            code: ErrorCode::InvalidRequest.as_str(),
            kind: "invalid_request_error",
            message: message.into(),
            param: Some(param.into()),
        }
    }
}

/// An utterance the client knows by its item id.
#[derive(Debug)]
struct Item {
    id: String,
    /// Where its speech started (the core's `SpeechStarted`), seconds on the session's clock.
    speech_at: f64,
    stopped: bool,
    /// The words sent as deltas so far, normalised for comparison.
    sent: Vec<String>,
}

/// A word as compared between hypotheses: lower-case letters and digits.
fn normalised(word: &str) -> String {
    word.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// The words of `text` beyond those already `sent`, when `text` agrees with what was sent
/// (compared without case and punctuation); `hold_last`: an interim's last word may be cut off
/// mid-word and waits for a later hypothesis. `None` when nothing new can be sent.
fn extension(sent: &[String], text: &str, hold_last: bool) -> Option<(Vec<String>, String)> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let usable = if hold_last {
        words.len().saturating_sub(1)
    } else {
        words.len()
    };
    if usable <= sent.len()
        || sent
            .iter()
            .zip(&words)
            .any(|(sent, word)| *sent != normalised(word))
    {
        return None;
    }
    let new = &words[sent.len()..usable];
    let delta = if sent.is_empty() {
        new.join(" ")
    } else {
        format!(" {}", new.join(" "))
    };
    Some((new.iter().map(|w| normalised(w)).collect(), delta))
}

fn ms(seconds: f64) -> u64 {
    (seconds * 1000.0).round().max(0.0) as u64
}

/// The socket's state: the configuration, the items, the last committed item.
pub(super) struct Conversation {
    pub(super) config: Config,
    /// The client sent the beta update last: answer in beta names.
    beta: bool,
    items: Vec<Item>,
    last_committed: Option<String>,
    installed: String,
}

impl Conversation {
    pub(super) fn new(config: Config, installed: String) -> Self {
        Self {
            config,
            beta: false,
            items: Vec::new(),
            last_committed: None,
            installed,
        }
    }

    fn server_vad(&self) -> bool {
        self.config.turn.is_some()
    }

    /// The item whose speech started inside the hypothesis' audio.
    fn item_of(&self, h: &Hypothesis) -> Option<usize> {
        let (from, to) = (h.start - 1e-6, h.start + h.duration + 1e-6);
        self.items
            .iter()
            .position(|i| i.speech_at >= from && i.speech_at <= to)
    }

    /// Server events for one of the session's events.
    pub(super) fn render(&mut self, event: &LiveEvent) -> Vec<Value> {
        match event {
            LiveEvent::SpeechStarted { at } => {
                let id = new_id("item");
                self.items.push(Item {
                    id: id.clone(),
                    speech_at: *at,
                    stopped: false,
                    sent: Vec::new(),
                });
                if !self.server_vad() {
                    return Vec::new();
                }
                vec![json!({
                    "type": "input_audio_buffer.speech_started",
                    "audio_start_ms": ms(*at),
                    "item_id": id,
                })]
            }
            LiveEvent::SpeechStopped { at } => {
                let server_vad = self.server_vad();
                let Some(item) = self
                    .items
                    .iter_mut()
                    .rev()
                    .find(|i| !i.stopped && i.speech_at <= *at)
                else {
                    return Vec::new();
                };
                item.stopped = true;
                if !server_vad {
                    return Vec::new();
                }
                vec![json!({
                    "type": "input_audio_buffer.speech_stopped",
                    "audio_end_ms": ms(*at),
                    "item_id": item.id,
                })]
            }
            LiveEvent::Interim(h) => {
                let Some(n) = self.item_of(h) else {
                    return Vec::new(); // of an utterance the client cleared
                };
                let item = &mut self.items[n];
                match extension(&item.sent, &h.text, true) {
                    Some((words, delta)) => {
                        item.sent.extend(words);
                        vec![delta_event(&item.id, &delta)]
                    }
                    None => Vec::new(),
                }
            }
            LiveEvent::Final { hypothesis, reason } => self.completed(hypothesis, *reason),
            LiveEvent::UtteranceEnd { .. } => Vec::new(),
            LiveEvent::Ended(ending) => match &ending.error {
                Some(e) => vec![error_event(&Refusal {
                    code: e.code.as_str(),
                    kind: openai_type(e.code),
                    message: if e.code == ErrorCode::InternalError {
                        "The recogniser failed; the session ended.".to_owned()
                    } else {
                        e.detail.clone()
                    },
                    param: None,
                })],
                None => Vec::new(),
            },
        }
    }

    /// A final: the item is committed and completed (an empty commit is an error event).
    fn completed(&mut self, h: &Hypothesis, reason: EndReason) -> Vec<Value> {
        if h.duration <= 0.0 {
            if reason != EndReason::Finalize {
                return Vec::new();
            }
            return vec![error_event(&Refusal {
                code: "input_audio_buffer_commit_empty",
                kind: "invalid_request_error",
                message: "The input audio buffer holds no speech to commit.".to_owned(),
                param: None,
            })];
        }
        let item = match self.item_of(h) {
            Some(n) => self.items.remove(n),
            None => Item {
                id: new_id("item"),
                speech_at: h.start,
                stopped: true,
                sent: Vec::new(),
            },
        };
        // Speech that stopped before this utterance and got no final was a click or a breath.
        self.items.retain(|i| !(i.stopped && i.speech_at < h.start));
        let mut events = vec![json!({
            "type": "input_audio_buffer.committed",
            "item_id": item.id,
            "previous_item_id": self.last_committed,
        })];
        if let Some((_, delta)) = extension(&item.sent, &h.text, false) {
            events.push(delta_event(&item.id, &delta));
        }
        events.push(json!({
            "type": "conversation.item.input_audio_transcription.completed",
            "item_id": item.id,
            "content_index": 0,
            "transcript": h.text,
            "usage": {"type": "duration", "seconds": h.duration.ceil() as u64},
        }));
        self.last_committed = Some(item.id);
        events
    }

    pub(super) fn session_event(&self, kind: &str) -> Value {
        let (name, session) = if self.beta {
            (
                format!("transcription_session.{kind}"),
                self.config.beta_json(),
            )
        } else {
            (format!("session.{kind}"), self.config.ga_json())
        };
        json!({"type": name, "session": session})
    }

    /// A client event: what goes to the session, and what is answered at once.
    pub(super) fn client_event(&mut self, text: &str) -> (Vec<LiveInput>, Vec<Value>) {
        let refuse = |r: Refusal, event_id: Option<&str>| {
            let mut e = error_event(&r);
            e["error"]["event_id"] = json!(event_id);
            (Vec::new(), vec![e])
        };
        let Ok(event) = serde_json::from_str::<Value>(text) else {
            return refuse(Refusal::invalid("event", "the event is not JSON"), None);
        };
        let event_id = event
            .get("event_id")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let event_id = event_id.as_deref();
        let kind = event
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default();
        match kind {
            "input_audio_buffer.append" => {
                let Some(audio) = event.get("audio").and_then(Value::as_str) else {
                    return refuse(
                        Refusal::invalid("audio", "audio must be base64 of the audio bytes"),
                        event_id,
                    );
                };
                match base64::engine::general_purpose::STANDARD.decode(audio) {
                    Ok(bytes) => {
                        // Cut into the session's message size without copying the audio.
                        let bytes = bytes::Bytes::from(bytes);
                        let inputs = (0..bytes.len())
                            .step_by(MAX_AUDIO_MESSAGE)
                            .map(|at| {
                                LiveInput::Audio(
                                    bytes.slice(at..(at + MAX_AUDIO_MESSAGE).min(bytes.len())),
                                )
                            })
                            .collect();
                        (inputs, Vec::new())
                    }
                    Err(_) => refuse(
                        Refusal::invalid("audio", "audio is not valid base64"),
                        event_id,
                    ),
                }
            }
            "input_audio_buffer.commit" => (vec![LiveInput::Finalize], Vec::new()),
            "input_audio_buffer.clear" => {
                if let Some(n) = self.items.iter().rposition(|i| !i.stopped) {
                    self.items.remove(n);
                }
                (
                    vec![LiveInput::Clear],
                    vec![json!({"type": "input_audio_buffer.cleared"})],
                )
            }
            "session.update" | "transcription_session.update" => {
                let beta_event = kind == "transcription_session.update";
                let config = match updated(&event, &self.config, beta_event, &self.installed) {
                    Ok(config) => config,
                    Err(r) => return refuse(r, event_id),
                };
                let beta_answer = beta_shape(&event, beta_event);
                match config.tuning().check() {
                    Ok(tuned) => {
                        self.config = config;
                        self.beta = beta_answer;
                        (
                            vec![LiveInput::Tune(tuned)],
                            vec![self.session_event("updated")],
                        )
                    }
                    Err(e) => refuse(
                        Refusal::invalid(dialect_param(e.param.as_deref(), beta_answer), e.detail),
                        event_id,
                    ),
                }
            }
            "" => refuse(Refusal::invalid("type", "the event has no type"), event_id),
            other => refuse(
                Refusal::invalid(
                    "type",
                    format!(
                        "{other} is not an event of a transcription session: send session.update, \
                         input_audio_buffer.append, input_audio_buffer.commit or input_audio_buffer.clear"
                    ),
                ),
                event_id,
            ),
        }
    }
}

fn delta_event(item_id: &str, delta: &str) -> Value {
    json!({
        "type": "conversation.item.input_audio_transcription.delta",
        "item_id": item_id,
        "content_index": 0,
        "delta": delta,
    })
}

pub(super) fn error_event(r: &Refusal) -> Value {
    json!({
        "type": "error",
        "error": {
            "type": r.kind,
            "code": r.code,
            "message": r.message,
            "param": r.param,
            "event_id": Value::Null,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conversation() -> Conversation {
        Conversation::new(
            Config::new("gpt-4o-transcribe".to_owned()),
            "whisper-base".to_owned(),
        )
    }

    #[test]
    fn bad_events_are_error_events_naming_what_is_wrong() {
        let mut c = conversation();
        for (event, param) in [
            (r#"{"type":"response.create","event_id":"e1"}"#, "type"),
            ("not json", "event"),
            (
                r#"{"type":"input_audio_buffer.append","audio":"***"}"#,
                "audio",
            ),
            (
                r#"{"type":"session.update","session":{"type":"realtime"}}"#,
                "session.type",
            ),
            (
                r#"{"type":"session.update","session":{"type":"transcription","audio":{"input":{"format":{"type":"audio/pcm","rate":4000}}}}}"#,
                "session.audio.input.format.rate",
            ),
            (
                r#"{"type":"session.update","session":{"type":"transcription","audio":{"input":{"transcription":{"language":"xx"}}}}}"#,
                "session.audio.input.transcription.language",
            ),
            (
                r#"{"type":"session.update","session":{"type":"transcription","audio":{"input":{"turn_detection":{"type":"server_vad","threshold":2}}}}}"#,
                "session.audio.input.turn_detection.threshold",
            ),
        ] {
            let (inputs, replies) = c.client_event(event);
            assert!(inputs.is_empty(), "{event}");
            assert_eq!(replies[0]["type"], "error", "{event}");
            assert_eq!(
                replies[0]["error"]["param"], param,
                "{event}: {}",
                replies[0]
            );
        }
        let (_, replies) = c.client_event(r#"{"type":"response.create","event_id":"e1"}"#);
        assert_eq!(replies[0]["error"]["event_id"], "e1");
        // Nothing was changed by the refused updates.
        assert_eq!(c.config.rate, 24_000);
        assert!(c.config.language.is_none());
    }

    fn hypothesis(text: &str, start: f64, duration: f64) -> Hypothesis {
        Hypothesis {
            text: text.to_owned(),
            start,
            duration,
            words: Vec::new(),
            confidence: 0.9,
            language: "en".to_owned(),
        }
    }

    #[test]
    fn deltas_append_the_agreed_words_and_the_final_completes_the_item() {
        let mut c = conversation();
        let started = c.render(&LiveEvent::SpeechStarted { at: 1.0 });
        let item = started[0]["item_id"].as_str().unwrap().to_owned();
        // The last word waits; then a hypothesis that agrees extends it.
        let d = c.render(&LiveEvent::Interim(hypothesis("Ever tried. Ev", 0.7, 1.5)));
        assert_eq!(d[0]["delta"], "Ever tried.");
        let d = c.render(&LiveEvent::Interim(hypothesis(
            "Ever tried. Ever failed",
            0.7,
            2.5,
        )));
        assert_eq!(d[0]["delta"], " Ever");
        // A revision of sent words sends nothing.
        let d = c.render(&LiveEvent::Interim(hypothesis(
            "Never tried ever failed no",
            0.7,
            3.0,
        )));
        assert!(d.is_empty());
        let stopped = c.render(&LiveEvent::SpeechStopped { at: 3.2 });
        assert_eq!(stopped[0]["item_id"], item.as_str());
        let done = c.render(&LiveEvent::Final {
            hypothesis: hypothesis("Ever tried. Ever failed.", 0.7, 3.0),
            reason: EndReason::Endpoint,
        });
        let kinds: Vec<&str> = done.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(
            kinds,
            [
                "input_audio_buffer.committed",
                "conversation.item.input_audio_transcription.delta",
                "conversation.item.input_audio_transcription.completed"
            ]
        );
        assert_eq!(done[1]["delta"], " failed.");
        assert_eq!(done[2]["item_id"], item.as_str());
        assert_eq!(done[2]["transcript"], "Ever tried. Ever failed.");
        assert!(done[0]["previous_item_id"].is_null());
        // A blip (no final) is skipped; the next item follows the last committed one.
        c.render(&LiveEvent::SpeechStarted { at: 5.0 });
        c.render(&LiveEvent::SpeechStopped { at: 5.1 });
        let next = c.render(&LiveEvent::SpeechStarted { at: 7.0 });
        let next_id = next[0]["item_id"].as_str().unwrap().to_owned();
        let done = c.render(&LiveEvent::Final {
            hypothesis: hypothesis("No matter.", 6.7, 1.5),
            reason: EndReason::Finalize,
        });
        assert_eq!(done[0]["item_id"], next_id.as_str());
        assert_eq!(done[0]["previous_item_id"], item.as_str());
        assert!(c.items.is_empty(), "{:?}", c.items);
        // An empty commit.
        let empty = c.render(&LiveEvent::Final {
            hypothesis: hypothesis("", 9.0, 0.0),
            reason: EndReason::Finalize,
        });
        assert_eq!(empty[0]["error"]["code"], "input_audio_buffer_commit_empty");
    }
}
