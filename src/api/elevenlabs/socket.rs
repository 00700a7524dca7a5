//! The sockets: the session is opened before the upgrade (so that every refusal is an HTTP
//! answer), then ElevenLabs' messages become [`SpeechInput`]s and the session's events become
//! ElevenLabs' messages (`audio` with `alignment` and `normalizedAlignment`, `isFinal`, and an
//! `error` message before the close of a socket a refusal ends).

use std::sync::Arc;

use axum::Extension;
use axum::extract::ws::{
    Message, WebSocket, WebSocketUpgrade, rejection::WebSocketUpgradeRejection,
};
use axum::extract::{Path, RawQuery, State};
use axum::response::Response;
use base64::Engine as _;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Map, Value, json};

use super::FIELDS;
use super::params::{self, Route};
use crate::http::auth::Principal;
use crate::http::error::ApiError;
use crate::service::Core;
use crate::service::live_speech::{
    self, CharTimes, EndReason, Params, SpeechEvent, SpeechInput, SpeechOptions,
};

/// The largest text message read (a message carries text in pieces; ElevenLabs' own limit on
/// one request's text is far below).
const MAX_MESSAGE: usize = 64 * 1024;

const PARAMS: Params = Params {
    speech: FIELDS,
    idle_timeout: "inactivity_timeout",
    schedule: "generation_config.chunk_length_schedule",
    context: "context_id",
};

/// `GET /v1/text-to-speech/{voice_id}/multi-stream-input`.
pub async fn multi_stream_input(
    state: State<Core>,
    principal: Extension<Arc<Principal>>,
    voice: Path<String>,
    raw: RawQuery,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Result<Response, ApiError> {
    open(state, principal, voice, raw, upgrade, true).await
}

/// `GET /v1/text-to-speech/{voice_id}/stream-input`: one context, no context ids.
pub async fn stream_input(
    state: State<Core>,
    principal: Extension<Arc<Principal>>,
    voice: Path<String>,
    raw: RawQuery,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Result<Response, ApiError> {
    open(state, principal, voice, raw, upgrade, false).await
}

async fn open(
    State(core): State<Core>,
    Extension(principal): Extension<Arc<Principal>>,
    Path(voice): Path<String>,
    RawQuery(raw): RawQuery,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
    multi: bool,
) -> Result<Response, ApiError> {
    let query = params::parse_query(raw.as_deref(), Route::Socket)?;
    let upgrade = upgrade.map_err(|_| {
        ApiError::invalid(
            "upgrade",
            "This route is a WebSocket: send the upgrade headers",
        )
    })?;
    let options = SpeechOptions {
        voice,
        engine: query.engine.map(|e| (e, "model_id")),
        output: query.output,
        idle_timeout_secs: query.inactivity_timeout,
        auto_mode: query.auto_mode,
        params: PARAMS,
    };
    let session = live_speech::open(&core, &principal, options).await?;
    Ok(upgrade
        .max_message_size(MAX_MESSAGE)
        .max_frame_size(MAX_MESSAGE)
        .on_upgrade(move |socket| serve(socket, session, multi)))
}

/// The context id of the single-context form.
const ONLY: &str = "";

/// Messages in → inputs (the reader waits while the session is behind); events → messages.
async fn serve(socket: WebSocket, session: live_speech::SpeechSession, multi: bool) {
    let (mut sink, mut stream) = socket.split();
    let live_speech::SpeechSession { inputs, mut events } = session;
    let reader = tokio::spawn(async move {
        while let Some(Ok(message)) = stream.next().await {
            let text = match message {
                Message::Text(text) => text,
                Message::Close(_) => break,
                _ => continue,
            };
            // A message the door cannot read ends the session with its refusal.
            let list = read(text.as_str(), multi).unwrap_or_else(|e| vec![SpeechInput::Refuse(e)]);
            for input in list {
                let ending = matches!(input, SpeechInput::Close | SpeechInput::Refuse(_));
                if !inputs.send(input).await || ending {
                    // The session finishes on its own; the socket stays open for its answer.
                    std::future::pending::<()>().await;
                }
            }
        }
        // The client left (or closed) before the session ended: dropping the inputs cancels
        // what is in flight.
    });
    while let Some(event) = events.next().await {
        let (message, end) = render(event, multi);
        if let Some(message) = message
            && sink
                .send(Message::Text(message.to_string().into()))
                .await
                .is_err()
        {
            // Gone: dropping the events stops the contexts (and charges what left).
            break;
        }
        if let Some(reason) = end {
            let _ = sink
                .send(crate::http::live_socket::speech_close(
                    reason,
                    "inactivity_timeout: no text received",
                ))
                .await;
            break;
        }
    }
    drop(events);
    reader.abort();
}

/// ElevenLabs' client message as inputs.
fn read(text: &str, multi: bool) -> Result<Vec<SpeechInput>, ApiError> {
    let value: Value = serde_json::from_str(text)
        .map_err(|_| ApiError::invalid("message", "every message must be a JSON object"))?;
    let Value::Object(message) = value else {
        return Err(ApiError::invalid(
            "message",
            "every message must be a JSON object",
        ));
    };
    const KNOWN: [&str; 9] = [
        "text",
        "flush",
        "context_id",
        "close_context",
        "close_socket",
        "voice_settings",
        "generation_config",
        "try_trigger_generation",
        "contextId",
    ];
    if let Some(unknown) = message.keys().find(|k| !KNOWN.contains(&k.as_str())) {
        let detail = match unknown.as_str() {
            "xi_api_key" | "authorization" => {
                "authenticate at the upgrade (the xi-api-key header), not in a message".to_owned()
            }
            _ => format!("{unknown} is not a field of this socket's messages"),
        };
        return Err(ApiError::invalid(unknown.clone(), detail));
    }
    if let Some(settings) = message.get("voice_settings") {
        params::voice_settings(settings, "voice_settings")?;
    }
    let config = match message.get("generation_config") {
        None | Some(Value::Null) => None,
        Some(Value::Object(config)) => Some(config),
        Some(_) => {
            return Err(ApiError::invalid(
                "generation_config",
                "generation_config must be an object",
            ));
        }
    };
    let schedule = params::generation_config(config)?;
    let context = if multi {
        string(&message, "context_id")?
            .or(string(&message, "contextId")?)
            .unwrap_or_default()
    } else {
        ONLY.to_owned()
    };
    let flag = |name: &str| -> Result<bool, ApiError> {
        match message.get(name) {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(ApiError::invalid(
                name,
                format!("{name} must be true or false"),
            )),
        }
    };
    flag("try_trigger_generation")?;
    let text = string(&message, "text")?;
    if flag("close_socket")? {
        return Ok(vec![SpeechInput::Close]);
    }
    if flag("close_context")? {
        return Ok(vec![SpeechInput::CloseContext { context }]);
    }
    let flush = flag("flush")?;
    // The single-context form ends with an empty text.
    if !multi && text.as_deref() == Some("") && !flush {
        return Ok(vec![SpeechInput::Close]);
    }
    Ok(vec![SpeechInput::Text {
        context,
        text: text.unwrap_or_default(),
        flush,
        schedule,
    }])
}

fn string(message: &Map<String, Value>, name: &str) -> Result<Option<String>, ApiError> {
    match message.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(ApiError::invalid(name, format!("{name} must be a string"))),
    }
}

fn times(t: &CharTimes) -> Value {
    json!({
        "chars": t.chars,
        "charStartTimesMs": t.starts_ms,
        "charDurationsMs": t.durations_ms,
    })
}

/// ElevenLabs' message for `event`, and whether (why) the socket ends after it.
fn render(event: SpeechEvent, multi: bool) -> (Option<Value>, Option<EndReason>) {
    let with_context = |mut value: Value, context: &str| {
        if multi {
            value["contextId"] = json!(context);
        }
        value
    };
    match event {
        SpeechEvent::Audio {
            context,
            generation_id,
            audio,
            alignment,
        } => {
            let (alignment, normalized) = match alignment {
                Some(a) => (times(&a.alignment), times(&a.normalized)),
                None => (Value::Null, Value::Null),
            };
            let message = json!({
                "audio": base64::engine::general_purpose::STANDARD.encode(&audio),
                "isFinal": null,
                "alignment": alignment,
                "normalizedAlignment": normalized,
                "generationId": generation_id,
            });
            (Some(with_context(message, &context)), None)
        }
        SpeechEvent::ContextDone { context } => {
            (Some(with_context(json!({"isFinal": true}), &context)), None)
        }
        SpeechEvent::Refused { context, error } => {
            let mut message = json!({
                "error": crate::http::error::elevenlabs_status(error.code),
                "message": error.detail,
                "code": error.code.as_str(),
            });
            if let Some(param) = &error.param {
                message["param"] = json!(param);
            }
            if let (true, Some(context)) = (multi, context) {
                message["contextId"] = json!(context);
            }
            (Some(message), None)
        }
        SpeechEvent::Ended(reason) => (None, Some(reason)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn livekits_messages_are_read() {
        let first = read(
            r#"{"text":" ","voice_settings":{},"context_id":"c1"}"#,
            true,
        )
        .unwrap();
        assert!(matches!(
            first.as_slice(),
            [SpeechInput::Text { context, text, flush: false, schedule: None }] if context == "c1" && text == " "
        ));
        let flushed = read(r#"{"text":"","context_id":"c1","flush":true}"#, true).unwrap();
        assert!(matches!(
            flushed.as_slice(),
            [SpeechInput::Text { flush: true, .. }]
        ));
        let close = read(r#"{"context_id":"c1","close_context":true}"#, true).unwrap();
        assert!(matches!(
            close.as_slice(),
            [SpeechInput::CloseContext { context }] if context == "c1"
        ));
        assert!(matches!(
            read(r#"{"close_socket":true}"#, true).unwrap().as_slice(),
            [SpeechInput::Close]
        ));
        // The single-context form ends with an empty text.
        assert!(matches!(
            read(r#"{"text":""}"#, false).unwrap().as_slice(),
            [SpeechInput::Close]
        ));
    }

    #[test]
    fn bad_messages_are_refused_naming_the_field() {
        for (message, param) in [
            (
                r#"{"text":"Hi ","voice_settings":{"style":0.4}}"#,
                "voice_settings.style",
            ),
            (r#"{"text":"Hi ","xi_api_key":"k"}"#, "xi_api_key"),
            (r#"{"text":5}"#, "text"),
            (
                r#"{"text":"Hi ","generation_config":{"chunk_length_schedule":"x"}}"#,
                "generation_config.chunk_length_schedule",
            ),
            ("[]", "message"),
        ] {
            let err = read(message, true).expect_err(message);
            assert_eq!(err.param.as_deref(), Some(param), "{message}");
        }
    }
}
