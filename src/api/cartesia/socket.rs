//! The socket: the session is opened before the upgrade (so that the key, the plan and the
//! socket caps are refused as HTTP answers), then Cartesia's messages become [`SpeechInput`]s
//! and the session's events become Cartesia's messages. What the door keeps per context is
//! delivery bookkeeping only: the timestamps the context asked for, the audio it was sent (so
//! that word times count from the start of the context's audio, as Cartesia's do) and its
//! flush count (`flush_id`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::Extension;
use axum::extract::ws::{
    Message, WebSocket, WebSocketUpgrade, rejection::WebSocketUpgradeRejection,
};
use axum::extract::{RawQuery, State};
use axum::http::HeaderMap;
use axum::response::Response;
use base64::Engine as _;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::time::Instant;

use super::FIELDS;
use super::params::{self, Generation, Timestamps};
use crate::audio::{OutputEncoding, OutputFormat};
use crate::http::auth::Principal;
use crate::http::error::{ApiError, HttpStatus};
use crate::service::Core;
use crate::service::live_speech::{
    self, CharTimes, Delivered, EndReason, Params, PerContextOptions, SpeechEvent, SpeechInput,
};

/// The largest text message read (a message carries text in pieces).
const MAX_MESSAGE: usize = 64 * 1024;

const PARAMS: Params = Params {
    speech: FIELDS,
    idle_timeout: "idle_timeout",
    schedule: "transcript",
    context: "context_id",
};

/// `GET /tts/websocket`.
pub async fn websocket(
    State(core): State<Core>,
    Extension(principal): Extension<Arc<Principal>>,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Result<Response, ApiError> {
    params::check_upgrade(&headers, raw.as_deref())?;
    let upgrade = upgrade.map_err(|_| {
        ApiError::invalid(
            "upgrade",
            "This route is a WebSocket: send the upgrade headers",
        )
    })?;
    let options = PerContextOptions {
        // Cartesia closes idle sockets after 5 minutes; the core's longest is this.
        idle_timeout_secs: Some(live_speech::MAX_IDLE_SECS),
        // Phrases at sentence ends (ElevenLabs' chunk schedule is not Cartesia's).
        auto_mode: true,
        params: PARAMS,
    };
    let session = live_speech::open_per_context(&core, &principal, options).await?;
    Ok(upgrade
        .max_message_size(MAX_MESSAGE)
        .max_frame_size(MAX_MESSAGE)
        .on_upgrade(move |socket| serve(socket, session)))
}

/// A context's delivery bookkeeping.
struct Context {
    timestamps: Timestamps,
    output: Option<OutputFormat>,
    /// Bytes of audio sent for the context so far.
    sent: u64,
    /// Flushes asked for (the reader's count) and the `flush_id` of the chunks now sent.
    flushes: u64,
    flush_id: u64,
    last: Instant,
}

/// Contexts as both halves of the door see them (at most the session's few open contexts:
/// an entry is made by a message that opens one and dropped at its `done`).
type Contexts = Arc<Mutex<HashMap<String, Context>>>;

fn contexts(shared: &Contexts) -> std::sync::MutexGuard<'_, HashMap<String, Context>> {
    shared
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Messages in → inputs (the reader waits while the session is behind); events → messages.
async fn serve(socket: WebSocket, session: live_speech::SpeechSession) {
    let (mut sink, mut stream) = socket.split();
    let live_speech::SpeechSession { inputs, mut events } = session;
    let shared: Contexts = Arc::default();
    let reading = shared.clone();
    let reader = tokio::spawn(async move {
        while let Some(Ok(message)) = stream.next().await {
            let text = match message {
                Message::Text(text) => text,
                Message::Close(_) => break,
                _ => continue,
            };
            // A message the door cannot read ends the session with its refusal.
            let list = params::read(text.as_str())
                .map(|m| inputs_for(m, &reading))
                .unwrap_or_else(|e| vec![SpeechInput::Refuse(e)]);
            for input in list {
                let ending = matches!(input, SpeechInput::Refuse(_));
                if !inputs.send(input).await || ending {
                    // The session finishes on its own; the socket stays open for its answer.
                    std::future::pending::<()>().await;
                }
            }
        }
        // The client left (or closed): dropping the inputs cancels what is in flight.
    });
    while let Some(delivered) = events.next_delivered().await {
        let (messages, end) = render(delivered, &shared);
        let mut gone = false;
        for message in messages {
            if sink
                .send(Message::Text(message.to_string().into()))
                .await
                .is_err()
            {
                gone = true;
                break;
            }
        }
        // Gone: dropping the events stops the contexts (and charges what left).
        if gone {
            break;
        }
        if let Some(reason) = end {
            let _ = sink
                .send(crate::http::live_socket::speech_close(
                    reason,
                    "idle: no text received",
                ))
                .await;
            break;
        }
    }
    drop(events);
    reader.abort();
}

/// A Cartesia message as the session's inputs: the context's voice, its text (flushed when
/// the client flushes, ends the context, or asked for no buffering), a mark for a flush, and
/// the context's end after its last message (`continue: false`).
fn inputs_for(message: params::Message, shared: &Contexts) -> Vec<SpeechInput> {
    let generation = match message {
        params::Message::Cancel { context } => {
            contexts(shared).remove(&context);
            return vec![SpeechInput::Cancel { context }];
        }
        params::Message::Generate(generation) => generation,
    };
    let Generation {
        context,
        transcript,
        more,
        flush,
        immediate,
        speaker,
        timestamps,
    } = generation;
    let opens = !transcript.is_empty() || flush || !more;
    let mut mark = None;
    {
        let mut open = contexts(shared);
        if opens && !open.contains_key(&context) {
            open.insert(
                context.clone(),
                Context {
                    timestamps,
                    output: speaker.as_ref().map(|s| s.output),
                    sent: 0,
                    flushes: 0,
                    flush_id: 1,
                    last: Instant::now(),
                },
            );
        }
        if flush && let Some(state) = open.get_mut(&context) {
            state.flushes += 1;
            mark = Some(state.flushes);
        }
    }
    let mut list = Vec::with_capacity(4);
    if let Some(speaker) = speaker {
        list.push(SpeechInput::Speaker {
            context: context.clone(),
            speaker,
        });
    }
    list.push(SpeechInput::Text {
        context: context.clone(),
        text: transcript,
        flush: flush || immediate || !more,
        schedule: None,
    });
    if let Some(mark) = mark {
        list.push(SpeechInput::Mark {
            context: context.clone(),
            mark,
        });
    }
    if !more {
        list.push(SpeechInput::CloseContext { context });
    }
    list
}

/// Bytes of one second of audio in `format` (raw formats only on this socket).
fn bytes_per_sec(format: OutputFormat) -> f64 {
    let width = match format.encoding {
        OutputEncoding::Pcm16 => 2.0,
        OutputEncoding::PcmF32 => 4.0,
        OutputEncoding::Mulaw | OutputEncoding::Mp3 { .. } => 1.0,
    };
    width * f64::from(format.sample_rate)
}

/// The words of a chunk's characters (runs between whitespace that say something), each from
/// its first character's start to its last one's end, in seconds from `offset_ms`.
fn words(times: &CharTimes, offset_ms: f64) -> Value {
    let (mut words, mut starts, mut ends) = (Vec::new(), Vec::new(), Vec::new());
    let mut word = String::new();
    let (mut start, mut end) = (0.0, 0.0);
    let secs = |ms: f64| ((offset_ms + ms) / 1000.0 * 1000.0).round() / 1000.0;
    let mut finish = |word: &mut String, start: f64, end: f64| {
        if word.chars().any(char::is_alphanumeric) {
            words.push(std::mem::take(word));
            starts.push(secs(start));
            ends.push(secs(end));
        }
        word.clear();
    };
    for (i, c) in times.chars.iter().enumerate() {
        let at = times.starts_ms.get(i).copied().unwrap_or_default() as f64;
        let until = at + times.durations_ms.get(i).copied().unwrap_or_default() as f64;
        if c.chars().all(char::is_whitespace) {
            finish(&mut word, start, end);
            continue;
        }
        if word.is_empty() {
            start = at;
        }
        word.push_str(c);
        end = until;
    }
    finish(&mut word, start, end);
    json!({ "words": words, "start": starts, "end": ends })
}

/// Cartesia's messages for what the session delivered, and whether (why) the socket ends.
fn render(delivered: Delivered, shared: &Contexts) -> (Vec<Value>, Option<EndReason>) {
    let event = match delivered {
        Delivered::Mark { context, mark } => {
            if let Some(state) = contexts(shared).get_mut(&context) {
                state.flush_id = mark + 1;
            }
            let message = json!({
                "type": "flush_done",
                "done": false,
                "flush_done": true,
                "flush_id": mark,
                "status_code": 206,
                "context_id": context,
            });
            return (vec![message], None);
        }
        Delivered::Event(event) => event,
    };
    match event {
        SpeechEvent::Audio {
            context,
            generation_id,
            audio,
            alignment,
        } => {
            let mut open = contexts(shared);
            let state = open.get_mut(&context);
            let (offset_ms, flush_id, step_ms, timestamps) = match state {
                Some(state) => {
                    let offset_ms = state
                        .output
                        .map_or(0.0, |f| state.sent as f64 * 1000.0 / bytes_per_sec(f));
                    state.sent += audio.len() as u64;
                    let step = state.last.elapsed().as_secs_f64() * 1000.0;
                    state.last = Instant::now();
                    (offset_ms, state.flush_id, step, state.timestamps)
                }
                None => (0.0, 1, 0.0, Timestamps::None),
            };
            drop(open);
            let mut messages = Vec::with_capacity(2);
            if !audio.is_empty() {
                messages.push(json!({
                    "type": "chunk",
                    "data": base64::engine::general_purpose::STANDARD.encode(&audio),
                    "done": false,
                    "status_code": 206,
                    "step_time": (step_ms * 1000.0).round() / 1000.0,
                    "flush_id": flush_id,
                    "context_id": context,
                    "generation_id": generation_id,
                }));
            }
            let times = match (timestamps, &alignment) {
                (Timestamps::Original, Some(a)) => Some(&a.alignment),
                (Timestamps::Normalized, Some(a)) => Some(&a.normalized),
                _ => None,
            };
            if let Some(times) = times.filter(|t| !t.is_empty()) {
                let words = words(times, offset_ms);
                if words["words"].as_array().is_some_and(|w| !w.is_empty()) {
                    messages.push(json!({
                        "type": "timestamps",
                        "done": false,
                        "status_code": 206,
                        "flush_id": flush_id,
                        "context_id": context,
                        "word_timestamps": words,
                    }));
                }
            }
            (messages, None)
        }
        SpeechEvent::ContextDone { context } => {
            contexts(shared).remove(&context);
            let message = json!({
                "type": "done",
                "done": true,
                "status_code": 200,
                "context_id": context,
            });
            (vec![message], None)
        }
        SpeechEvent::Refused { context, error } => {
            let mut message = json!({
                "type": "error",
                "done": true,
                "status_code": error.code.status().as_u16(),
                "title": error.code.title(),
                "message": error.detail,
                "error": error.detail,
                "error_code": error.code.as_str(),
                "code": error.code.as_str(),
            });
            if let Some(param) = &error.param {
                message["param"] = json!(param);
            }
            if let Some(context) = context {
                message["context_id"] = json!(context);
            }
            (vec![message], None)
        }
        SpeechEvent::Ended(reason) => (Vec::new(), Some(reason)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_the_runs_that_say_something_in_seconds() {
        let times = CharTimes {
            chars: "Hi, you .".chars().map(String::from).collect(),
            starts_ms: vec![100, 150, 200, 250, 300, 350, 400, 450, 450],
            durations_ms: vec![50, 50, 50, 50, 50, 50, 50, 0, 0],
        };
        let words = words(&times, 1000.0);
        assert_eq!(words["words"], json!(["Hi,", "you"]));
        assert_eq!(words["start"], json!([1.1, 1.3]));
        assert_eq!(words["end"], json!([1.25, 1.45]));
    }

    #[test]
    fn livekits_last_message_flushes_and_ends_its_context() {
        let shared = Contexts::default();
        let message = params::read(r#"{"model_id":"sonic-3","voice":{"mode":"id","id":"A"},"output_format":{"container":"raw","encoding":"pcm_s16le","sample_rate":24000},"language":"en","add_timestamps":true,"max_buffer_delay_ms":0,"context_id":"c","transcript":" ","continue":false}"#).unwrap();
        let inputs = inputs_for(message, &shared);
        assert!(matches!(
            inputs.as_slice(),
            [
                SpeechInput::Speaker { .. },
                SpeechInput::Text { flush: true, .. },
                SpeechInput::CloseContext { context }
            ] if context == "c"
        ));
        let flush =
            params::read(r#"{"context_id":"d","transcript":"","continue":true,"flush":true}"#)
                .unwrap();
        assert!(matches!(
            inputs_for(flush, &shared).as_slice(),
            [
                SpeechInput::Text { flush: true, .. },
                SpeechInput::Mark { mark: 1, .. }
            ]
        ));
    }
}
