//! Deepgram's live dialect: `GET /v1/listen` upgraded to a WebSocket. The door parses
//! Deepgram's query into [`LiveOptions`], opens a session of the core before it upgrades (so
//! that every refusal is an HTTP answer with voiced's `code` and Deepgram's `err_code`), then
//! translates frames into [`LiveInput`]s and the session's events into Deepgram's messages
//! (`Results`, `SpeechStarted`, `UtteranceEnd`, `Metadata`). The rules are the core's
//! (`service::live`); docs/live-transcription.md has the wire and the choices.
//!
//! `POST /v1/listen` is Deepgram's pre-recorded call on the same path and credentials: the
//! body is the audio file, the query is the live route's (the same acceptance and refusals),
//! and the core's file transcription (`service::transcription::run`, word timings) answers
//! in Deepgram's pre-recorded JSON.

use std::sync::Arc;
use std::time::Duration;

use axum::Extension;
use axum::Router;
use axum::extract::ws::{
    Message, WebSocket, WebSocketUpgrade, rejection::WebSocketUpgradeRejection,
};
use axum::extract::{DefaultBodyLimit, RawQuery, Request, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::middleware::{Next, from_fn};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};

use crate::audio::LiveEncoding;
use crate::domain::{RecognitionOptions, Timestamps, Word};
use crate::http;
use crate::http::auth::Principal;
use crate::http::error::{ApiError, ErrorCode};
use crate::http::models::Problem;
use crate::service::Core;
use crate::service::idempotency::{KeyUse, Keyed};
use crate::service::live::utterances::EndReason;
use crate::service::live::{
    self, CloseReason, Hypothesis, LiveEvent, LiveInput, LiveOptions, MAX_AUDIO_MESSAGE,
};
use crate::service::operations::Operation;
use crate::service::transcription::{self, Incoming, Transcribed};

/// The largest pre-recorded body: the file doors' 25 MiB of audio.
const BODY_LIMIT: usize = crate::audio::MAX_AUDIO_BYTES;

/// The route with its own stack, outermost first: Deepgram's credential forms → authenticate
/// (always looked up; the upgrade counts as one write) → rate limit → the operation's
/// requirement (`Operation::Transcribe`) → the handler.
pub fn router(core: Core) -> Router<Core> {
    let routes = Router::new()
        .route("/v1/listen", get(listen).post(prerecorded))
        .layer(DefaultBodyLimit::max(BODY_LIMIT));
    http::auth::writing_routes(routes, &core, Operation::Transcribe.requirement())
        .layer(from_fn(deepgram_credentials))
}

/// Deepgram's credential forms (both methods) as the ones `http::auth` reads: `Authorization: Token <key>`,
/// and the browser's `Sec-WebSocket-Protocol: token, <key>`, become `Authorization: Bearer`.
async fn deepgram_credentials(mut request: Request, next: Next) -> Response {
    let headers = request.headers_mut();
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("token"))
        .map(|(_, key)| key.trim().to_owned());
    let protocol = || {
        let offered = headers
            .get(header::SEC_WEBSOCKET_PROTOCOL)?
            .to_str()
            .ok()?
            .split(',')
            .map(str::trim)
            .collect::<Vec<_>>();
        match offered.as_slice() {
            ["token", key] => Some((*key).to_owned()),
            _ => None,
        }
    };
    let key = match token {
        Some(key) => Some(key),
        None if !http::auth::credential_sent(headers) => protocol(),
        None => None,
    };
    if let Some(value) = key.and_then(|k| HeaderValue::from_str(&format!("Bearer {k}")).ok()) {
        headers.insert(header::AUTHORIZATION, value);
    }
    next.run(request).await
}

/// Deepgram's query, parsed.
#[derive(Debug)]
struct Query {
    options: LiveOptions,
    vad_events: bool,
    model: String,
}

/// Parameters that ask for what voiced cannot do at all: refused at the upgrade when on.
const REFUSED: [&str; 11] = [
    "diarize",
    "multichannel",
    "redact",
    "detect_entities",
    "sentiment",
    "summarize",
    "topics",
    "intents",
    "search",
    "replace",
    "callback",
];

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

fn millis(param: &str, value: &str) -> Result<Duration, ApiError> {
    value
        .parse::<u64>()
        .ok()
        .filter(|ms| *ms <= 60_000)
        .map(Duration::from_millis)
        .ok_or_else(|| {
            ApiError::invalid(
                param,
                format!("{param} must be milliseconds from 0 to 60000"),
            )
        })
}

/// Deepgram's language tags: `en-US` is the recogniser's `en`; `multi` detects.
fn language(value: &str) -> Option<String> {
    let primary = value
        .split(['-', '_'])
        .next()
        .unwrap_or(value)
        .to_ascii_lowercase();
    (primary != "multi" && !primary.is_empty()).then_some(primary)
}

/// The live route's query: raw audio names its `encoding` (a `sample_rate` alone means
/// linear16); with neither, the audio is containerised, Opus in Ogg or WebM, as Deepgram reads an
/// omitted encoding.
fn parse_query(raw: Option<&str>) -> Result<Query, ApiError> {
    let (mut query, encoding, sample_rate) = parse_params(raw)?;
    match encoding {
        Some(encoding) => query.options.encoding = encoding,
        None if sample_rate.is_some() => {}
        None => query.options.encoding = LiveEncoding::Container,
    }
    query.options.sample_rate = sample_rate.unwrap_or(match query.options.encoding {
        LiveEncoding::Linear16 => 16_000,
        LiveEncoding::Mulaw | LiveEncoding::Alaw => 8_000,
        LiveEncoding::Container => 48_000,
    });
    Ok(query)
}

/// The pre-recorded route's query: the same parameters, refusals and defaults; the body is a
/// file whose container says its encoding, so raw `encoding`/`sample_rate` are refused.
fn parse_prerecorded_query(raw: Option<&str>) -> Result<Query, ApiError> {
    let (query, encoding, sample_rate) = parse_params(raw)?;
    if encoding.is_some() || sample_rate.is_some() {
        let param = if encoding.is_some() {
            "encoding"
        } else {
            "sample_rate"
        };
        return Err(ApiError::invalid(
            param,
            format!(
                "{param} is for raw audio, which POST /v1/listen does not read: send a wav, mp3, flac, ogg or webm file and omit {param}"
            ),
        ));
    }
    Ok(query)
}

/// Every parameter both routes share, with the encoding and sample rate as sent.
fn parse_params(raw: Option<&str>) -> Result<(Query, Option<LiveEncoding>, Option<u32>), ApiError> {
    // Percent-decoded as every dialect door reads its query (never a refusal in itself).
    let pairs: Vec<(String, String)> =
        url::form_urlencoded::parse(raw.unwrap_or_default().as_bytes())
            .into_owned()
            .collect();
    let mut encoding = None;
    let mut sample_rate = None;
    let mut query = Query {
        options: LiveOptions {
            encoding: LiveEncoding::Linear16,
            sample_rate: 16_000,
            interim_results: false,
            // Deepgram's default is 10 ms: the core's floor.
            endpointing: Some(live::MIN_ENDPOINTING),
            utterance_end: None,
            language: None,
            prompt: None,
            source: "api",
        },
        vad_events: false,
        model: "nova-3".to_owned(),
    };
    let mut keywords = Vec::new();
    for (name, value) in &pairs {
        let (name, value) = (name.as_str(), value.as_str());
        match name {
            "encoding" => {
                encoding = Some(match value {
                    "linear16" => LiveEncoding::Linear16,
                    "mulaw" => LiveEncoding::Mulaw,
                    "alaw" => LiveEncoding::Alaw,
                    _ => {
                        return Err(ApiError::invalid(
                            "encoding",
                            "encoding must be linear16, mulaw or alaw on the live route",
                        ));
                    }
                })
            }
            "sample_rate" => {
                sample_rate = Some(value.parse::<u32>().map_err(|_| {
                    ApiError::invalid("sample_rate", "sample_rate must be a whole number of Hz")
                })?)
            }
            "channels" if value != "1" => {
                return Err(ApiError::invalid("channels", "channels must be 1"));
            }
            "interim_results" => query.options.interim_results = flag(name, value)?,
            "vad_events" => query.vad_events = flag(name, value)?,
            "endpointing" => {
                query.options.endpointing = match value {
                    "false" => None,
                    "true" => Some(live::MIN_ENDPOINTING),
                    ms => Some(millis(name, ms)?),
                }
            }
            "utterance_end_ms" => query.options.utterance_end = Some(millis(name, value)?),
            "language" => query.options.language = language(value),
            "model" => query.model = value.to_owned(),
            "keywords" | "keyterm" => {
                // `word:boost` in Deepgram's older form: the word primes the recogniser.
                let word = value.split(':').next().unwrap_or(value).trim();
                if !word.is_empty() {
                    keywords.push(word.to_owned());
                }
            }
            refused if REFUSED.contains(&refused) && value != "false" => {
                return Err(ApiError::invalid(
                    refused,
                    format!("{refused} is not something this server can do"),
                ));
            }
            // Accepted and honoured as far as Whisper goes (docs/live-transcription.md):
            // punctuate, smart_format, filler_words, profanity_filter, numerals, no_delay,
            // mip_opt_out, tag, extra, version, tier, dictation, measurements, channels=1,
            // a refused feature set to false, and others.
            _ => {}
        }
    }
    if !keywords.is_empty() {
        query.options.prompt = Some(keywords.join(", "));
    }
    Ok((query, encoding, sample_rate))
}

/// The pre-recorded body must be audio: `audio/*`, `video/*` or `application/octet-stream`
/// (what Deepgram's SDKs send), else 415; a JSON body (Deepgram's `{"url": …}`) is a 400
/// naming `url`.
fn require_audio_body(headers: &HeaderMap) -> Result<(), ApiError> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    if content_type.starts_with("audio/")
        || content_type.starts_with("video/")
        || content_type == "application/octet-stream"
    {
        Ok(())
    } else if content_type == "application/json" {
        Err(ApiError::invalid(
            "url",
            "transcribing a URL is not supported: send the audio file as the body (Content-Type: audio/* or application/octet-stream)",
        ))
    } else {
        Err(ApiError::new(
            ErrorCode::UnsupportedMediaType,
            "Send the audio file as the body with Content-Type audio/* or application/octet-stream.",
        )
        .with_param("body"))
    }
}

/// The query both `/v1/listen` methods read (docs/live-transcription.md has every parameter and
/// what is best effort); declared for the OpenAPI document only, the routes parse the raw query
/// themselves so that unknown Deepgram parameters are accepted.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct ListenParams {
    /// Any Deepgram model name (`nova-3`, …): the server's recogniser answers.
    model: Option<String>,
    /// BCP 47 (`en-US`); `multi` or absent: detected.
    language: Option<String>,
    /// Live only: `linear16` or `mulaw` for raw audio; absent: Opus in Ogg or WebM.
    #[param(pattern = "^(linear16|mulaw)$")]
    encoding: Option<String>,
    /// Live only: Hz of raw audio.
    #[param(minimum = 8000, maximum = 384000)]
    sample_rate: Option<u32>,
    /// Live only: send interim results of the open utterance.
    interim_results: Option<bool>,
    /// Live only: milliseconds of silence that end an utterance (at least 300 are used), or `false`.
    endpointing: Option<String>,
    /// Live only: send `UtteranceEnd` after this much silence following the last word.
    utterance_end_ms: Option<u32>,
    /// Live only: send `SpeechStarted`.
    vad_events: Option<bool>,
    /// Words the recogniser is primed with (repeatable).
    keywords: Option<String>,
}

/// Deepgram's live transcription: `GET /v1/listen` upgraded to a WebSocket. Audio frames in;
/// `Results` (interim and final, with word timings), `SpeechStarted`, `UtteranceEnd` and
/// `Metadata` out; the finals stored as one capture (`source: api`). Credentials: `Authorization:
/// Token <key>` or `Bearer`, `x-api-key`, or the WebSocket subprotocol pair `token`, `<key>`.
/// Refusals come before the upgrade, as the problem document with Deepgram's `err_code`,
/// `err_msg` and `request_id` added.
#[utoipa::path(get, path = "/v1/listen", tag = "live",
    security(("api_key" = []), ("bearer" = [])),
    params(ListenParams),
    responses(
        (status = 101, description = "Switching Protocols: the session's WebSocket (docs/live-transcription.md)"),
        (status = 400, description = "`invalid_request` naming the parameter (`encoding`, `sample_rate`, `diarize`, …), or no upgrade headers (`upgrade`)", body = Problem, content_type = "application/json"),
        (status = 401, description = "`invalid_api_key`", body = Problem, content_type = "application/json"),
        (status = 403, description = "`pro_plan_required`, `insufficient_scope` (needs `voice:generate`) or `feature_not_enabled`", body = Problem, content_type = "application/json"),
        (status = 429, description = "`rate_limit_exceeded` (the upgrade counts as one write; see `Retry-After`)", body = Problem, content_type = "application/json"),
        (status = 503, description = "`service_unavailable`: every live or recogniser place is taken, or no model is installed", body = Problem, content_type = "application/json"),
    ))]
pub async fn listen_document() {}

/// Deepgram's pre-recorded call: the body is the audio file, transcribed with word timings,
/// stored as a capture (`source: api`) and answered in Deepgram's response shape.
#[utoipa::path(post, path = "/v1/listen", tag = "live",
    security(("api_key" = []), ("bearer" = [])),
    params(ListenParams),
    request_body(content = Vec<u8>, content_type = "application/octet-stream", description = "The audio file (wav, mp3, flac, ogg, webm; at most 25 MiB and 15 minutes), sent as `application/octet-stream` or with its own `audio/*` or `video/*` type"),
    responses(
        (status = 200, description = "Deepgram's pre-recorded response: `metadata` (`request_id` and `capture_id`: the capture) and `results.channels[0].alternatives[0]` with `transcript` and `words`", body = Object, content_type = "application/json"),
        (status = 400, description = "`invalid_request` naming the parameter, `url` (a JSON body: voiced does not fetch audio), or the audio", body = Problem, content_type = "application/json"),
        (status = 401, description = "`invalid_api_key`", body = Problem, content_type = "application/json"),
        (status = 403, description = "`pro_plan_required`, `insufficient_scope` (needs `voice:generate`) or `feature_not_enabled`", body = Problem, content_type = "application/json"),
        (status = 413, description = "`payload_too_large`: more than 25 MiB of audio", body = Problem, content_type = "application/json"),
        (status = 415, description = "`unsupported_media_type`: the body is not `audio/*`, `video/*` or `application/octet-stream`", body = Problem, content_type = "application/json"),
        (status = 429, description = "`rate_limit_exceeded` (see `Retry-After`)", body = Problem, content_type = "application/json"),
        (status = 503, description = "`service_unavailable`: the recogniser's queue is full (see `Retry-After`), or no model is installed", body = Problem, content_type = "application/json"),
    ))]
pub async fn prerecorded_document() {}

/// `POST /v1/listen`: the body transcribed with word timings, stored as a capture
/// (`source: api`) and answered as Deepgram's pre-recorded response.
async fn prerecorded(
    State(core): State<Core>,
    Extension(principal): Extension<Arc<Principal>>,
    RawQuery(raw): RawQuery,
    request: Request,
) -> Result<Response, ApiError> {
    let (parts, body) = request.into_parts();
    let refused = |err: ApiError, body: axum::body::Body| {
        http::body::discard(body, BODY_LIMIT, core.request_timeout());
        err
    };
    let query = match parse_prerecorded_query(raw.as_deref())
        .and_then(|q| require_audio_body(&parts.headers).map(|()| q))
    {
        Ok(query) => query,
        Err(err) => return Err(refused(err, body)),
    };
    // Admission before work: the place is taken before the upload is read.
    let place = match transcription::take_place(&core, &principal).await {
        Ok(place) => place,
        Err(err) => return Err(refused(err, body)),
    };
    let audio = http::body::read_limited(body, BODY_LIMIT).await?;
    let options = RecognitionOptions {
        language: query.options.language,
        prompt: query.options.prompt,
        timestamps: Timestamps::Word,
        ..RecognitionOptions::default()
    };
    let incoming = Incoming {
        audio: std::future::ready(Ok(audio.to_vec())),
        source: "api",
        param: "body",
        options,
        progress: None,
    };
    // Deepgram's dialect has no idempotency key.
    let keyed = Keyed {
        operation: KeyUse::Transcription,
        key: None,
        fingerprint: Vec::new(),
    };
    let done = transcription::run(&core, &principal, place, incoming, keyed).await?;
    let body = prerecorded_response(&done.transcribed, &query.model);
    Ok(axum::Json(body).into_response())
}

/// Deepgram's pre-recorded response for one channel.
fn prerecorded_response(t: &Transcribed, model: &str) -> Value {
    let words: Vec<Value> = t.words.iter().map(word).collect();
    let confidence = if t.words.is_empty() {
        0.0
    } else {
        t.words.iter().map(|w| w.probability).sum::<f32>() / t.words.len() as f32
    };
    // Deepgram names its model by a UUID; the capture's id stands in for it (stable per answer).
    let model_uuid = t.capture_id.clone();
    json!({
        "metadata": {
            "transaction_key": "deprecated",
            "request_id": t.capture_id,
            "created": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            "duration": round(t.duration),
            "channels": 1,
            "models": [model_uuid],
            "model_info": {
                model_uuid.as_str(): {"name": model, "version": env!("CARGO_PKG_VERSION"), "arch": "whisper"},
            },
            "capture_id": t.capture_id,
        },
        "results": {
            "channels": [{
                "detected_language": t.language,
                "alternatives": [{
                    "transcript": t.text.trim(),
                    "confidence": confidence,
                    "words": words,
                    "languages": [t.language],
                }],
            }],
        },
    })
}

/// One word as Deepgram writes it: `word` bare and lower-case, `punctuated_word` as spoken.
fn word(w: &Word) -> Value {
    let bare: String = w
        .word
        .trim()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == '\'' || *c == '-')
        .collect::<String>()
        .to_lowercase();
    json!({
        "word": bare,
        "start": round(w.start),
        "end": round(w.end),
        "confidence": w.probability,
        "punctuated_word": w.word.trim(),
    })
}

/// `GET /v1/listen`: the upgrade, once the session is open.
async fn listen(
    State(core): State<Core>,
    Extension(principal): Extension<Arc<Principal>>,
    RawQuery(raw): RawQuery,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Result<Response, ApiError> {
    let query = parse_query(raw.as_deref())?;
    let upgrade = upgrade.map_err(|_| {
        ApiError::invalid(
            "upgrade",
            "GET /v1/listen is a WebSocket: send the upgrade headers",
        )
    })?;
    let utterance_end = query.options.utterance_end.is_some();
    let session = live::open(&core, &principal, query.options).await?;
    let id = session.id().to_owned();
    let frame_limit = MAX_AUDIO_MESSAGE;
    Ok(upgrade
        .protocols(["token"])
        .max_message_size(frame_limit)
        .max_frame_size(frame_limit)
        .on_upgrade(move |socket| {
            serve(
                socket,
                session,
                Dialect {
                    request_id: id,
                    model: query.model,
                    vad_events: query.vad_events,
                    utterance_end,
                },
            )
        }))
}

/// What the rendering needs of the query.
struct Dialect {
    request_id: String,
    model: String,
    vad_events: bool,
    utterance_end: bool,
}

/// Frames in → inputs; events → frames out. The reader waits while the session is behind
/// (that is the pacing); the writer never waits for the reader.
async fn serve(socket: WebSocket, session: live::LiveSession, dialect: Dialect) {
    let (mut sink, stream) = socket.split();
    let (inputs, mut events) = session.split();
    let reader = http::live_socket::read_audio(stream, inputs, control);
    while let Some(event) = events.next().await {
        if let Some(message) = render(&event, &dialect) {
            // A client that is gone: the session still finishes and stores its finals.
            let _ = sink.send(Message::Text(message.to_string().into())).await;
        }
        if let LiveEvent::Ended(ending) = &event {
            let undecodable = ending
                .error
                .as_ref()
                .filter(|e| e.code == ErrorCode::InvalidRequest)
                .map(|e| format!("DATA-0000: {}", e.detail));
            let (code, reason) = match (ending.reason, undecodable) {
                // Deepgram's close for audio it cannot decode.
                (CloseReason::Failed, Some(reason)) => (1008, reason),
                (reason, _) => {
                    let (code, reason) = match reason {
                        CloseReason::Client => (1000, ""),
                        CloseReason::Idle => (1011, "NET-0001: no audio or KeepAlive received"),
                        CloseReason::MaxDuration => {
                            (1008, "the session reached its longest length")
                        }
                        CloseReason::Shutdown => (1001, "the server is shutting down"),
                        CloseReason::Failed => (1011, "the recogniser failed"),
                        CloseReason::FreeMinutesUsed => {
                            (1008, "the free transcription minutes are used up")
                        }
                    };
                    (code, reason.to_owned())
                }
            };
            let _ = sink
                .send(Message::Close(Some(axum::extract::ws::CloseFrame {
                    code,
                    reason: close_reason(reason).into(),
                })))
                .await;
            break;
        }
    }
    http::live_socket::finish(reader).await;
}

/// A close frame's reason is at most 123 bytes: longer ones are cut at a character boundary.
fn close_reason(mut reason: String) -> String {
    if reason.len() > 123 {
        let mut end = 123;
        while !reason.is_char_boundary(end) {
            end -= 1;
        }
        reason.truncate(end);
    }
    reason
}

/// A client's text frame: `KeepAlive`, `Finalize`, `CloseStream`; anything else is ignored.
fn control(text: &str) -> Option<LiveInput> {
    let value: Value = serde_json::from_str(text).ok()?;
    match value.get("type")?.as_str()? {
        "KeepAlive" => Some(LiveInput::KeepAlive),
        "Finalize" => Some(LiveInput::Finalize),
        "CloseStream" => Some(LiveInput::Close),
        _ => None,
    }
}

fn results(hypothesis: &Hypothesis, dialect: &Dialect, finals: Option<EndReason>) -> Value {
    let words: Vec<Value> = hypothesis.words.iter().map(word).collect();
    json!({
        "type": "Results",
        "channel_index": [0, 1],
        "duration": round(hypothesis.duration),
        "start": round(hypothesis.start),
        "is_final": finals.is_some(),
        "speech_final": matches!(finals, Some(EndReason::Endpoint | EndReason::Close)),
        "from_finalize": finals == Some(EndReason::Finalize),
        "channel": {
            "alternatives": [{
                "transcript": hypothesis.text,
                "confidence": hypothesis.confidence,
                "words": words,
                "languages": [hypothesis.language],
            }]
        },
        "metadata": {
            "request_id": dialect.request_id,
            "model_info": {"name": dialect.model, "version": env!("CARGO_PKG_VERSION"), "arch": "whisper"},
            "model_uuid": "",
        },
    })
}

fn round(seconds: f64) -> f64 {
    (seconds * 1000.0).round() / 1000.0
}

/// Deepgram's message for `event`, if it has one.
fn render(event: &LiveEvent, dialect: &Dialect) -> Option<Value> {
    Some(match event {
        LiveEvent::SpeechStarted { at } if dialect.vad_events => json!({
            "type": "SpeechStarted", "channel": [0, 1], "timestamp": round(*at),
        }),
        LiveEvent::Interim(hypothesis) => results(hypothesis, dialect, None),
        LiveEvent::Final { hypothesis, reason } => results(hypothesis, dialect, Some(*reason)),
        LiveEvent::UtteranceEnd { last_word_end } if dialect.utterance_end => json!({
            "type": "UtteranceEnd", "channel": [0, 1], "last_word_end": round(*last_word_end),
        }),
        LiveEvent::Ended(ending) => json!({
            "type": "Metadata",
            "transaction_key": "deprecated",
            "request_id": dialect.request_id,
            "created": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            "duration": round(ending.duration),
            "channels": 1,
            "capture_id": ending.capture_id,
        }),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn livekits_query_is_accepted_and_read() {
        let livekit = "model=nova-3&punctuate=true&smart_format=false&no_delay=true&interim_results=true&encoding=linear16&vad_events=true&sample_rate=16000&channels=1&endpointing=25&filler_words=true&profanity_filter=false&numerals=false&mip_opt_out=false&language=en-US";
        let query = parse_query(Some(livekit)).unwrap();
        assert!(query.options.interim_results);
        assert!(query.vad_events);
        assert_eq!(query.options.sample_rate, 16_000);
        assert_eq!(query.options.encoding, LiveEncoding::Linear16);
        assert_eq!(query.options.language.as_deref(), Some("en"));
        assert_eq!(query.options.endpointing, Some(Duration::from_millis(25)));
        assert_eq!(query.model, "nova-3");
    }

    #[test]
    fn what_cannot_be_done_is_refused_naming_it() {
        for (query, param) in [
            ("encoding=linear16&diarize=true", "diarize"),
            ("encoding=opus", "encoding"),
            ("encoding=linear16&channels=2", "channels"),
            ("encoding=linear16&interim_results=yes", "interim_results"),
            ("encoding=linear16&endpointing=soon", "endpointing"),
        ] {
            let err = parse_query(Some(query)).unwrap_err();
            assert_eq!(err.param.as_deref(), Some(param), "{query}");
        }
        // No encoding (and no sample rate): containerised audio, as Deepgram reads it.
        let query = parse_query(Some("punctuate=true")).unwrap();
        assert_eq!(query.options.encoding, LiveEncoding::Container);
        let query = parse_query(Some("encoding=mulaw&diarize=false&endpointing=false")).unwrap();
        assert_eq!(query.options.sample_rate, 8_000);
        assert_eq!(query.options.endpointing, None);
    }

    #[test]
    fn control_messages() {
        assert!(matches!(
            control(r#"{"type":"KeepAlive"}"#),
            Some(LiveInput::KeepAlive)
        ));
        assert!(matches!(
            control(r#"{"type":"Finalize"}"#),
            Some(LiveInput::Finalize)
        ));
        assert!(matches!(
            control(r#"{"type":"CloseStream"}"#),
            Some(LiveInput::Close)
        ));
        assert!(control("nonsense").is_none());
    }
}
