//! The reading half of a live transcription socket whose client sends binary audio and small
//! text controls (Deepgram's `/v1/listen`, the console's microphone): frames become the core
//! session's inputs, paced by the session (a send waits while it is behind). Once the session has
//! ended, what the client still sends is read and dropped until its close, so the socket is not
//! closed with unread data (which resets the connection and can lose the last messages on their
//! way to the client).
//!
//! Also the close frame that ends a speech socket ([`speech_close`]), the same for every speech
//! dialect.

use std::time::Duration;

use axum::extract::ws::{CloseFrame, Message, WebSocket};
use futures_util::StreamExt;
use futures_util::stream::SplitStream;
use tokio::task::JoinHandle;

use crate::service::live::{LiveInput, LiveInputs};
use crate::service::live_speech::EndReason;

/// How long the client's answer to the server's close is waited for.
const CLOSING: Duration = Duration::from_secs(5);

/// Reads `stream` into `inputs` until the client closes; `control` turns a text frame into an
/// input (`None`: ignored). A close, or the end of the stream, closes the session.
pub fn read_audio(
    mut stream: SplitStream<WebSocket>,
    inputs: LiveInputs,
    control: fn(&str) -> Option<LiveInput>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut open = true;
        while let Some(Ok(message)) = stream.next().await {
            if !open {
                continue;
            }
            let input = match message {
                Message::Binary(bytes) => LiveInput::Audio(bytes),
                Message::Text(text) => match control(text.as_str()) {
                    Some(input) => input,
                    None => continue,
                },
                Message::Close(_) => LiveInput::Close,
                Message::Ping(_) | Message::Pong(_) => continue,
            };
            let closing = matches!(input, LiveInput::Close);
            if !inputs.send(input).await || closing {
                open = false;
            }
        }
        if open {
            inputs.send(LiveInput::Close).await;
        }
    })
}

/// After the server's close: the client's answer, for a moment, then the reader is stopped.
pub async fn finish(mut reader: JoinHandle<()>) {
    if tokio::time::timeout(CLOSING, &mut reader).await.is_err() {
        reader.abort();
    }
}

/// The close frame that ends a speech socket (ElevenLabs', Cartesia's) for `reason`: 1000 for
/// the client's end and the idle timeout (`idle` says which setting, in the dialect's words),
/// 1001 at shutdown, 1008 for the longest length and a refusal (its error message came first).
pub fn speech_close(reason: EndReason, idle: &'static str) -> Message {
    let (code, text) = match reason {
        EndReason::Client => (1000, ""),
        EndReason::Idle => (1000, idle),
        EndReason::MaxDuration => (1008, "the socket reached its longest length"),
        EndReason::Shutdown => (1001, "the server is shutting down"),
        EndReason::Refused => (1008, "refused; see the error message"),
    };
    Message::Close(Some(CloseFrame {
        code,
        reason: text.into(),
    }))
}
