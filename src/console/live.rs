//! `GET /console/playground/listen`: the playground's live microphone panel, the console's own
//! WebSocket over the core's live session (`service::live::open`, `source: "app"`, the console
//! principal, so the app's free use and its free transcription minutes apply). voiced's own
//! small JSON protocol; docs/console.md ("Listening live") has the wire.
//!
//! Before any audio is read the upgrade must come from this console: the session cookie (a
//! key never authenticates here), the `Origin` header equal to the public base URL's origin
//! (cookies ride along on a cross-site upgrade), and the session's CSRF token in the query.
//! Those refusals are HTTP answers (the console's sign-in redirect, 403 pages). The core's
//! refusals (the plan, the free minutes, the places, the console's rate limit) come after the
//! upgrade as an `error` message and a close, so that the page's script can show them.

use std::time::Duration;

use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Query, State};
use axum::http::{HeaderMap, header};
use axum::response::Response;
use futures_util::{SinkExt, StreamExt};
use serde::Deserialize;
use serde_json::{Value, json};

use super::page::PageError;
use super::session::{SignedIn, check_csrf};
use crate::audio::LiveEncoding;
use crate::console::ConsoleState;
use crate::http;
use crate::http::error::HttpStatus;
use crate::service::ServiceError;
use crate::service::live::utterances::EndReason;
use crate::service::live::{
    self, CloseReason, Hypothesis, LiveEvent, LiveInput, LiveOptions, LiveSession,
    MAX_AUDIO_MESSAGE,
};

/// The audio the page sends: 16-bit little-endian PCM, mono, at this rate.
pub const SAMPLE_RATE: u32 = 16_000;
/// Silence that settles what was said (a person at a microphone pauses longer than an agent's
/// 300 ms between phrases of one thought).
const ENDPOINTING: Duration = Duration::from_millis(500);

#[derive(Deserialize)]
pub struct Params {
    #[serde(default)]
    csrf_token: String,
}

/// The upgrade: signed in, from this console's origin, with the session's CSRF token; then the
/// core's session is opened and the socket served (or told why it was refused).
pub async fn listen(
    State(state): State<ConsoleState>,
    user: SignedIn,
    headers: HeaderMap,
    Query(params): Query<Params>,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Result<Response, PageError> {
    if !same_origin(&headers, state.public_base_url()) {
        return Err(PageError::Csrf);
    }
    check_csrf(&user.session, &params.csrf_token).await?;
    let upgrade = upgrade.map_err(|_| {
        PageError::Service(ServiceError::invalid(
            "upgrade",
            "/console/playground/listen is a WebSocket: send the upgrade headers",
        ))
    })?;
    let opened = open(&state, &user).await;
    Ok(upgrade
        .max_message_size(MAX_AUDIO_MESSAGE)
        .max_frame_size(MAX_AUDIO_MESSAGE)
        .on_upgrade(move |socket| async move {
            match opened {
                Ok(session) => serve(socket, session).await,
                Err(err) => refuse(socket, err).await,
            }
        }))
}

/// Whether the request's `Origin` is the console's public origin (scheme, host and port of
/// `public_base_url`). A browser always sends `Origin` on a WebSocket upgrade; none is refused.
fn same_origin(headers: &HeaderMap, public_base_url: &str) -> bool {
    let Some(sent) = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let origin = |raw: &str| {
        url::Url::parse(raw)
            .ok()
            .map(|u| u.origin())
            .filter(url::Origin::is_tuple)
    };
    match (origin(sent), origin(public_base_url)) {
        (Some(sent), Some(ours)) => sent == ours,
        _ => false,
    }
}

/// The upgrade counts as one of the account's console actions; then the core's session.
async fn open(state: &ConsoleState, user: &SignedIn) -> Result<LiveSession, ServiceError> {
    crate::service::rates::console_action(state, &user.account_id).await?;
    let principal = super::playground::principal(state, user)?;
    let options = LiveOptions {
        encoding: LiveEncoding::Linear16,
        sample_rate: SAMPLE_RATE,
        interim_results: true,
        endpointing: Some(ENDPOINTING),
        utterance_end: None,
        language: None,
        prompt: None,
        source: "app",
    };
    live::open(state, &principal, options).await
}

/// A refusal after the upgrade: `{"type":"error", status, code, detail, retry_after}`, then a
/// close with code 4000 + the status (4429, 4403, 4503, …).
async fn refuse(mut socket: WebSocket, err: ServiceError) {
    let status = err.code.status().as_u16();
    let message = json!({
        "type": "error",
        "status": status,
        "code": err.code.as_str(),
        "detail": err.detail,
        "retry_after": err.retry_after_secs,
    });
    let _ = socket.send(Message::Text(message.to_string().into())).await;
    let _ = socket
        .send(Message::Close(Some(CloseFrame {
            code: 4000 + status,
            reason: err.code.as_str().into(),
        })))
        .await;
}

/// Frames in → inputs; events → messages out. The reader waits while the session is behind
/// (the core's pacing); the writer never waits for the reader.
async fn serve(socket: WebSocket, session: LiveSession) {
    let (mut sink, stream) = socket.split();
    let ready = json!({"type": "ready", "session_id": session.id(), "sample_rate": SAMPLE_RATE});
    let (inputs, mut events) = session.split();
    let _ = sink.send(Message::Text(ready.to_string().into())).await;
    let reader = http::live_socket::read_audio(stream, inputs, control);
    while let Some(event) = events.next().await {
        if let Some(message) = render(&event) {
            // A page that went away: the session still finishes and stores its finals.
            let _ = sink.send(Message::Text(message.to_string().into())).await;
        }
        if let LiveEvent::Ended(ending) = &event {
            let code = match ending.reason {
                CloseReason::Client | CloseReason::Idle => 1000,
                CloseReason::MaxDuration | CloseReason::FreeMinutesUsed => 1008,
                CloseReason::Shutdown => 1001,
                CloseReason::Failed => 1011,
            };
            let _ = sink
                .send(Message::Close(Some(CloseFrame {
                    code,
                    reason: reason(ending.reason).into(),
                })))
                .await;
            break;
        }
    }
    http::live_socket::finish(reader).await;
}

/// The page's text frames: `{"type":"stop"}` (no more audio: settle, store, end),
/// `{"type":"finalize"}` (settle what is open now), `{"type":"keepalive"}`; others are ignored.
fn control(text: &str) -> Option<LiveInput> {
    let value: Value = serde_json::from_str(text).ok()?;
    match value.get("type")?.as_str()? {
        "stop" => Some(LiveInput::Close),
        "finalize" => Some(LiveInput::Finalize),
        "keepalive" => Some(LiveInput::KeepAlive),
        _ => None,
    }
}

fn reason(reason: CloseReason) -> &'static str {
    match reason {
        CloseReason::Client => "stopped",
        CloseReason::Idle => "idle",
        CloseReason::MaxDuration => "max_duration",
        CloseReason::Shutdown => "shutdown",
        CloseReason::Failed => "failed",
        CloseReason::FreeMinutesUsed => "free_minutes_used",
    }
}

fn round(seconds: f64) -> f64 {
    (seconds * 1000.0).round() / 1000.0
}

fn hypothesis(kind: &str, h: &Hypothesis) -> Value {
    json!({
        "type": kind,
        "text": h.text,
        "start": round(h.start),
        "end": round(h.start + h.duration),
    })
}

/// The page's message for `event`, if it has one.
fn render(event: &LiveEvent) -> Option<Value> {
    Some(match event {
        LiveEvent::SpeechStarted { at } => json!({"type": "speech_started", "at": round(*at)}),
        LiveEvent::SpeechStopped { at } => json!({"type": "speech_stopped", "at": round(*at)}),
        LiveEvent::Interim(h) => hypothesis("interim", h),
        LiveEvent::Final {
            hypothesis: h,
            reason,
        } => {
            let mut message = hypothesis("final", h);
            message["reason"] = json!(match reason {
                EndReason::Endpoint => "pause",
                EndReason::Finalize => "finalize",
                EndReason::MaxLength => "max_length",
                EndReason::Close => "stop",
            });
            message["words"] = h
                .words
                .iter()
                .map(|w| json!({"word": w.word, "start": w.start, "end": w.end}))
                .collect();
            message
        }
        LiveEvent::UtteranceEnd { .. } => return None,
        LiveEvent::Ended(ending) => {
            let mut message = json!({
                "type": "ended",
                "reason": reason(ending.reason),
                "duration": round(ending.duration),
                "capture_id": ending.capture_id,
            });
            if let Some(err) = ending.reason.refusal() {
                message["code"] = json!(err.code.as_str());
                message["detail"] = json!(err.detail);
            } else if ending.error.is_some() {
                message["code"] = json!("internal_error");
                message["detail"] = json!(
                    "Something went wrong on our side; what was said before it is kept when a capture is named."
                );
            }
            message
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_consoles_own_origin_may_upgrade() {
        let with = |origin: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::ORIGIN, origin.parse().unwrap());
            headers
        };
        let ours = "https://voice.example.com/";
        assert!(same_origin(&with("https://voice.example.com"), ours));
        assert!(same_origin(&with("https://voice.example.com:443"), ours));
        assert!(!same_origin(&with("https://evil.example.com"), ours));
        assert!(!same_origin(&with("http://voice.example.com"), ours));
        assert!(!same_origin(&with("https://voice.example.com:8443"), ours));
        assert!(!same_origin(&with("null"), ours));
        assert!(!same_origin(&HeaderMap::new(), ours));
    }

    #[test]
    fn control_messages() {
        assert!(matches!(
            control(r#"{"type":"stop"}"#),
            Some(LiveInput::Close)
        ));
        assert!(matches!(
            control(r#"{"type":"finalize"}"#),
            Some(LiveInput::Finalize)
        ));
        assert!(matches!(
            control(r#"{"type":"keepalive"}"#),
            Some(LiveInput::KeepAlive)
        ));
        assert!(control(r#"{"type":"CloseStream"}"#).is_none());
        assert!(control("stop").is_none());
    }
}
