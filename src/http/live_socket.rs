//! The reading half of a live transcription socket whose client sends binary audio and small
//! text controls (Deepgram's `/v1/listen`, the console's microphone): frames become the core
//! session's inputs, paced by the session (a send waits while it is behind). Once the session has
//! ended, what the client still sends is read and dropped until its close, so the socket is not
//! closed with unread data (which resets the connection and can lose the last messages on their
//! way to the client).

use std::time::Duration;

use axum::extract::ws::{Message, WebSocket};
use futures_util::StreamExt;
use futures_util::stream::SplitStream;
use tokio::task::JoinHandle;

use crate::service::live::{LiveInput, LiveInputs};

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
