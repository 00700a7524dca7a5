//! OpenAI's realtime transcription: `GET /v1/realtime?intent=transcription` upgraded to a
//! WebSocket. The door opens a session of the core before it upgrades (every refusal is an HTTP
//! answer in OpenAI's error envelope with voiced's `code`), then translates OpenAI's client
//! events into [`LiveInput`]s (`session.update` → a checked [`Tuning`], `input_audio_buffer.*`
//! → audio, Finalize, Clear) and the session's events into OpenAI's server events (speech
//! started and stopped, `committed`, transcription `delta` and `completed`). The rules are the
//! core's (`service::live`); docs/live-transcription.md has the wire and the choices.

use std::sync::Arc;
use std::time::Duration;

use axum::Extension;
use axum::Router;
use axum::extract::ws::{
    Message, WebSocket, WebSocketUpgrade, rejection::WebSocketUpgradeRejection,
};
use axum::extract::{RawQuery, Request, State};
use axum::http::{HeaderValue, header};
use axum::middleware::{Next, from_fn, from_fn_with_state};
use axum::response::Response;
use axum::routing::get;
use base64::Engine as _;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::openai_transcriptions::check_model;
use crate::audio::LiveEncoding;
use crate::domain::new_id;
use crate::http;
use crate::http::auth::Principal;
use crate::http::error::{ApiError, ErrorCode, openai_type};
use crate::service::Core;
use crate::service::live::utterances::EndReason;
use crate::service::live::{
    self, CloseReason, Hypothesis, LiveEvent, LiveInput, LiveOptions, MAX_AUDIO_MESSAGE, Tuning,
};
use crate::service::operations::Operation;

/// The largest client event: 1 MiB of JSON (about 768 KiB of audio), handed to the session in
/// pieces of at most [`MAX_AUDIO_MESSAGE`].
const MAX_EVENT: usize = 1024 * 1024;
/// The browser's credential: the subprotocol `openai-insecure-api-key.<key>` beside `realtime`.
const KEY_PROTOCOL: &str = "openai-insecure-api-key.";

/// The route with its own stack, outermost first: the browser's credential form →
/// authenticate (always looked up; the upgrade counts as one write) → rate limit → the
/// operation's requirement (`Operation::Transcribe`) → the handler.
pub fn router(core: Core) -> Router<Core> {
    Router::new()
        .route("/v1/realtime", get(realtime))
        .layer(from_fn_with_state(
            Operation::Transcribe.requirement(),
            http::auth::authorize,
        ))
        .layer(from_fn_with_state(
            core.limits().clone(),
            http::rate_limit::rate_limit,
        ))
        .layer(from_fn_with_state(
            core.clone(),
            http::auth::authenticate_write,
        ))
        .layer(from_fn(protocol_credential))
}

/// Browsers cannot set headers on a WebSocket: OpenAI's browser clients offer the subprotocols
/// `realtime, openai-insecure-api-key.<key>`; the key becomes `Authorization: Bearer` when no
/// other credential was sent.
async fn protocol_credential(mut request: Request, next: Next) -> Response {
    let headers = request.headers_mut();
    if !http::auth::credential_sent(headers) {
        let key = headers
            .get(header::SEC_WEBSOCKET_PROTOCOL)
            .and_then(|v| v.to_str().ok())
            .and_then(|offered| {
                offered
                    .split(',')
                    .map(str::trim)
                    .find_map(|p| p.strip_prefix(KEY_PROTOCOL))
                    .map(str::to_owned)
            });
        if let Some(value) = key.and_then(|k| HeaderValue::from_str(&format!("Bearer {k}")).ok()) {
            headers.insert(header::AUTHORIZATION, value);
        }
    }
    next.run(request).await
}

/// `intent` must be `transcription` (a conversation session is not something voiced holds);
/// `model`, when sent, an OpenAI transcription model or the installed recogniser.
fn parse_query(raw: Option<&str>, installed: &str) -> Result<Option<String>, ApiError> {
    let unreadable = || ApiError::invalid("query", "the query string could not be read");
    let uri: axum::http::Uri = format!("/?{}", raw.unwrap_or_default())
        .parse()
        .map_err(|_| unreadable())?;
    let axum::extract::Query(pairs) =
        axum::extract::Query::<Vec<(String, String)>>::try_from_uri(&uri)
            .map_err(|_| unreadable())?;
    let value = |name: &str| {
        pairs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    };
    if value("intent") != Some("transcription") {
        return Err(ApiError::invalid(
            "intent",
            "only transcription sessions are served here: connect with ?intent=transcription",
        ));
    }
    match value("model") {
        None => Ok(None),
        Some(model) => {
            check_model(Some(model), installed)?;
            Ok(Some(model.to_owned()))
        }
    }
}

/// OpenAI's realtime transcription: `GET /v1/realtime?intent=transcription` upgraded to a
/// WebSocket of OpenAI's realtime events (`session.update`, `input_audio_buffer.append` /
/// `commit` / `clear` in; `session.created`, speech started and stopped, `…transcription.delta`
/// and `.completed`, `error` out; GA and beta names), the finals stored as one capture
/// (`source: api`). Credentials: `Authorization: Bearer <key>`, `x-api-key`, or the subprotocols
/// `realtime, openai-insecure-api-key.<key>`. Refusals come before the upgrade, in OpenAI's
/// error envelope with voiced's `code`.
#[utoipa::path(get, path = "/v1/realtime", tag = "live",
    security(("api_key" = []), ("bearer" = [])),
    params(
        ("intent" = String, Query, pattern = "^transcription$", description = "`transcription` (a conversation session is not offered)"),
        ("model" = Option<String>, Query, description = "`whisper-1`, `gpt-4o-transcribe`, `gpt-4o-mini-transcribe`, `gpt-transcribe` or the installed recogniser: the server's recogniser answers"),
    ),
    responses(
        (status = 101, description = "Switching Protocols: the session's WebSocket (docs/live.md)"),
        (status = 400, description = "`invalid_request` naming `intent`, `model`, or `upgrade` (no upgrade headers)", body = crate::http::models::OpenAiError),
        (status = 401, description = "`invalid_api_key`", body = crate::http::models::OpenAiError),
        (status = 403, description = "`pro_plan_required`, `insufficient_scope` (needs `voice:generate`) or `feature_not_enabled`", body = crate::http::models::OpenAiError),
        (status = 429, description = "`rate_limit_exceeded` (the upgrade counts as one write; see `Retry-After`)", body = crate::http::models::OpenAiError),
        (status = 503, description = "`service_unavailable`: every live or recogniser place is taken, or no model is installed", body = crate::http::models::OpenAiError),
    ))]
pub async fn realtime_document() {}

/// `GET /v1/realtime`: the upgrade, once the session is open.
async fn realtime(
    State(core): State<Core>,
    Extension(principal): Extension<Arc<Principal>>,
    RawQuery(raw): RawQuery,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Result<Response, ApiError> {
    let installed = crate::service::transcription::model_name(&core);
    let model = parse_query(raw.as_deref(), &installed)?;
    let upgrade = upgrade.map_err(|_| {
        ApiError::invalid(
            "upgrade",
            "GET /v1/realtime is a WebSocket: send the upgrade headers",
        )
    })?;
    let config = Config::new(model.unwrap_or_else(|| "gpt-4o-transcribe".to_owned()));
    let session = live::open(&core, &principal, config.options()).await?;
    Ok(upgrade
        .protocols(["realtime"])
        .max_message_size(MAX_EVENT)
        .max_frame_size(MAX_EVENT)
        .on_upgrade(move |socket| serve(socket, session, config, installed)))
}

/// The session's turn detection as the client set it.
#[derive(Debug, Clone, PartialEq)]
struct Turn {
    kind: String,
    threshold: f64,
    prefix_padding_ms: u64,
    silence_duration_ms: u64,
    /// `semantic_vad`'s, echoed.
    eagerness: Option<String>,
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
struct Config {
    id: String,
    encoding: LiveEncoding,
    rate: u32,
    model: String,
    language: Option<String>,
    prompt: Option<String>,
    /// `None`: manual commits.
    turn: Option<Turn>,
    noise_reduction: Value,
    include: Value,
}

impl Config {
    fn new(model: String) -> Self {
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
    fn options(&self) -> LiveOptions {
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

    fn tuning(&self) -> Tuning {
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
    fn ga_json(&self) -> Value {
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
    fn beta_json(&self) -> Value {
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

/// A client event's refusal: rendered as an `error` event; the socket stays open.
#[derive(Debug)]
struct Refusal {
    code: &'static str,
    kind: &'static str,
    message: String,
    param: Option<String>,
}

impl Refusal {
    fn invalid(param: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            code: ErrorCode::InvalidRequest.as_str(),
            kind: "invalid_request_error",
            message: message.into(),
            param: Some(param.into()),
        }
    }
}

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
fn beta_shape(event: &Value, beta_event: bool) -> bool {
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
fn updated(
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
fn dialect_param(core_param: Option<&str>, beta: bool) -> String {
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
struct Conversation {
    config: Config,
    /// The client sent the beta update last: answer in beta names.
    beta: bool,
    items: Vec<Item>,
    last_committed: Option<String>,
    installed: String,
}

impl Conversation {
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
    fn render(&mut self, event: &LiveEvent) -> Vec<Value> {
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

    fn session_event(&self, kind: &str) -> Value {
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
    fn client_event(&mut self, text: &str) -> (Vec<LiveInput>, Vec<Value>) {
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
                    Ok(bytes) => (
                        bytes
                            .chunks(MAX_AUDIO_MESSAGE)
                            .map(|c| LiveInput::Audio(c.to_vec()))
                            .collect(),
                        Vec::new(),
                    ),
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

fn error_event(r: &Refusal) -> Value {
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

/// Frames in → inputs; events → frames out, every server event with its `event_id`. The
/// reader waits while the session is behind (the pacing); its answers to client events go to
/// the writer through a bounded channel.
async fn serve(
    socket: WebSocket,
    session: live::LiveSession,
    mut config: Config,
    installed: String,
) {
    config.id = session.id().to_owned();
    let (mut sink, mut stream) = socket.split();
    let (inputs, mut events) = session.split();
    let conversation = Arc::new(tokio::sync::Mutex::new(Conversation {
        config,
        beta: false,
        items: Vec::new(),
        last_committed: None,
        installed,
    }));
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

#[cfg(test)]
mod tests {
    use super::*;

    const LIVEKIT: &str = r#"{"type":"session.update","session":{"type":"transcription","audio":{"input":{"format":{"type":"audio/pcm","rate":24000},"transcription":{"model":"gpt-4o-mini-transcribe","language":"en"},"turn_detection":{"type":"server_vad","threshold":0.5,"prefix_padding_ms":600,"silence_duration_ms":350}}}}}"#;

    fn conversation() -> Conversation {
        Conversation {
            config: Config::new("gpt-4o-transcribe".to_owned()),
            beta: false,
            items: Vec::new(),
            last_committed: None,
            installed: "whisper-base".to_owned(),
        }
    }

    #[test]
    fn the_query_needs_the_transcription_intent_and_a_known_model() {
        assert_eq!(
            parse_query(
                Some("intent=transcription&model=gpt-4o-mini-transcribe"),
                "whisper-base"
            )
            .unwrap()
            .as_deref(),
            Some("gpt-4o-mini-transcribe")
        );
        assert!(
            parse_query(Some("intent=transcription"), "whisper-base")
                .unwrap()
                .is_none()
        );
        for (query, param) in [
            ("model=gpt-realtime", "intent"),
            ("intent=conversation", "intent"),
            ("intent=transcription&model=gpt-realtime", "model"),
        ] {
            let err = parse_query(Some(query), "whisper-base").unwrap_err();
            assert_eq!(err.param.as_deref(), Some(param), "{query}");
        }
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
