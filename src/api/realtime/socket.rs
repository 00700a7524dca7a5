//! The socket's serving loop: the reader turns frames into the session's inputs (waiting while
//! the session is behind) and answers client events; the writer sends those answers and the
//! session's events, and closes the socket with a code for the session's ending.

use std::sync::Arc;

use axum::extract::ws::{Message, WebSocket};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::config::Config;
use super::conversation::{Conversation, Refusal, error_event};
use crate::domain::new_id;
use crate::service::live::{self, CloseReason, LiveEvent, LiveInput};

/// Frames in → inputs; events → frames out, every server event with its `event_id`. The
/// reader waits while the session is behind (the pacing); its answers to client events go to
/// the writer through a bounded channel.
pub(super) async fn serve(
    socket: WebSocket,
    session: live::LiveSession,
    mut config: Config,
    installed: String,
) {
    config.id = session.id().to_owned();
    let (mut sink, mut stream) = socket.split();
    let (inputs, mut events) = session.split();
    let conversation = Arc::new(tokio::sync::Mutex::new(Conversation::new(
        config, installed,
    )));
    let (answers_tx, mut answers) = mpsc::channel::<Value>(16);
    let (created, defaults) = {
        let c = conversation.lock().await;
        (c.session_event("created"), c.config.tuning().check())
    };
    // OpenAI's defaults for what the core's options do not carry (threshold, padding).
    if let Ok(tuned) = defaults {
        inputs.send(LiveInput::Tune(tuned)).await;
    }
    let _ = send(&mut sink, created).await;
    let reader_state = conversation.clone();
    let reader = tokio::spawn(async move {
        while let Some(Ok(message)) = stream.next().await {
            let (sends, replies) = match message {
                Message::Text(text) => reader_state.lock().await.client_event(text.as_str()),
                Message::Binary(_) => (
                    Vec::new(),
                    vec![error_event(&Refusal::invalid(
                        "event",
                        "send events as JSON text frames (audio as base64 in input_audio_buffer.append)",
                    ))],
                ),
                Message::Close(_) => break,
                Message::Ping(_) | Message::Pong(_) => continue,
            };
            for reply in replies {
                if answers_tx.send(reply).await.is_err() {
                    return;
                }
            }
            for input in sends {
                if !inputs.send(input).await {
                    return;
                }
            }
        }
        inputs.send(LiveInput::Close).await;
    });
    loop {
        let out = tokio::select! {
            biased;
            Some(answer) = answers.recv() => vec![answer],
            event = events.next() => {
                let Some(event) = event else { break };
                let mut out = conversation.lock().await.render(&event);
                if let LiveEvent::Ended(ending) = &event {
                    for e in out.drain(..) {
                        let _ = send(&mut sink, e).await;
                    }
                    let (code, reason) = match ending.reason {
                        CloseReason::Client => (1000, ""),
                        CloseReason::Idle => (1011, "no audio or event received"),
                        CloseReason::MaxDuration => (1008, "the session reached its longest length"),
                        CloseReason::Shutdown => (1001, "the server is shutting down"),
                        CloseReason::Failed => (1011, "the recogniser failed"),
                        CloseReason::FreeMinutesUsed => {
                            (1008, "the free transcription minutes are used up")
                        }
                    };
                    let _ = sink
                        .send(Message::Close(Some(axum::extract::ws::CloseFrame {
                            code,
                            reason: reason.into(),
                        })))
                        .await;
                    break;
                }
                out
            }
        };
        for e in out {
            // A client that is gone: the session still finishes and stores its finals.
            let _ = send(&mut sink, e).await;
        }
    }
    reader.abort();
}

async fn send(
    sink: &mut futures_util::stream::SplitSink<WebSocket, Message>,
    mut event: Value,
) -> Result<(), axum::Error> {
    event["event_id"] = json!(new_id("event"));
    sink.send(Message::Text(event.to_string().into())).await
}
