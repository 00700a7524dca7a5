//! `speak`: `POST /v1/speech` and a bounded wait for the audio.
//!
//! The generation is created by `service::speech::create`, as on REST: the same admission
//! (allowance, key ceiling, pending cap), the same metering, and the same idempotency records
//! (the arguments are fingerprinted in `POST /v1/speech`'s form and the key stores the
//! accepted generation), so one `idempotency_key` makes one generation whichever door it is
//! sent through. The
//! tool then waits up to `wait_seconds` on the durable queue's completion notifications,
//! sending progress notifications when the caller asked for them. A generation not done by then
//! goes on; the result names its id for `get_generation`.

use std::time::Duration;

use base64::Engine as _;
use rmcp::model::{CallToolResult, ContentBlock, ProgressNotificationParam, ProgressToken};
use rmcp::service::RequestContext;
use rmcp::{Peer, RoleServer};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio::time::Instant;

use super::reads::audio_link;
use super::schemas::{
    DEFAULT_WAIT_SECONDS, MAX_WAIT_SECONDS, idempotency_key_schema, integer, number,
};
use super::{bounded, flag, idempotency_key, success};
use crate::domain::{GenerationStatus, MAX_SEED, MAX_TEXT_CHARS, Temperature};
use crate::http::error::{ErrorCode, ServiceError};
use crate::http::fields::{
    parse_format, parse_seed, parse_temperature, parse_text, parse_word_timestamps,
};
use crate::http::json::{Field, JsonObject};
use crate::http::models::Generation;
use crate::mcp::McpState;
use crate::service::Principal;
use crate::service::idempotency::{KeyUse, Keyed};
use crate::service::speech::{self as service, Fields, SpeechRequest, VoiceChoice};

/// Largest audio returned inline (base64 in the result) when `inline_audio` is asked for.
pub const MAX_INLINE_BYTES: u64 = 1024 * 1024;

/// The arguments of `speak`, and its input schema (`schemas::input`). Every member is a
/// [`Field`], so that the checks below run in a fixed order with the messages REST gives; any
/// other argument is refused, naming it.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct SpeakArguments {
    /// What to say, 1 to 10 000 characters.
    #[serde(default)]
    #[schemars(!default, with = "String", length(min = 1, max = MAX_TEXT_CHARS))]
    pub text: Field<String>,
    /// A voice profile's name or id (list_voices).
    #[serde(default)]
    #[schemars(!default, with = "String", length(min = 1))]
    pub voice: Field<String>,
    #[serde(default)]
    #[schemars(
        schema_with = "integer",
        range(min = 0, max = MAX_SEED),
        description = "Optional. The same seed, text and voice give the same audio; omitted: the \
            voice's pinned seed, else random."
    )]
    pub seed: Field<u64>,
    /// Optional, chatterbox voices only.
    #[serde(default)]
    #[schemars(schema_with = "number", range(min = Temperature::MIN, max = Temperature::MAX))]
    pub temperature: Field<f64>,
    /// Audio format: mp3, opus (Ogg Opus) or wav (16-bit PCM).
    #[serde(default)]
    #[schemars(with = "String", extend("enum" = ["mp3", "opus", "wav"], "default" = "mp3"))]
    pub format: Field<String>,
    /// How long to wait for the audio before returning the generation id to poll.
    #[serde(default)]
    #[schemars(
        schema_with = "integer",
        range(min = 0, max = MAX_WAIT_SECONDS),
        extend("default" = DEFAULT_WAIT_SECONDS)
    )]
    pub wait_seconds: Field<i64>,
    /// Also return the audio itself (base64) when it is under 1 MiB.
    #[serde(default)]
    #[schemars(with = "bool", extend("default" = false))]
    pub inline_audio: Field<bool>,
    #[serde(default)]
    #[schemars(schema_with = "idempotency_key_schema")]
    pub idempotency_key: Field<String>,
    #[serde(default)]
    #[schemars(
        with = "String",
        extend("enum" = ["none", "word"], "default" = "none"),
        description = "word: the result carries words, when each word is said (seconds) and which \
            characters of the text it reads. Kokoro voices only."
    )]
    pub timestamps: Field<String>,
}

/// Argument names for the service's errors.
const FIELDS_OF_SPEAK: Fields = Fields {
    text: "text",
    voice: "voice",
    temperature: "temperature",
    engine: "voice",
};

/// How often a waiting `speak` reports progress, when asked to.
const PROGRESS_EVERY: Duration = Duration::from_secs(1);

pub async fn speak(
    state: &McpState,
    principal: &Principal,
    args: JsonObject,
    context: &RequestContext<RoleServer>,
) -> Result<CallToolResult, ServiceError> {
    let arguments: SpeakArguments = args.decode()?;
    let text = parse_text(arguments.text, "text")?;
    let voice = arguments.voice.required("voice")?;
    if voice.trim().is_empty() {
        return Err(ServiceError::invalid("voice", "voice must not be empty"));
    }
    let seed = parse_seed(arguments.seed)?;
    let temperature = parse_temperature(arguments.temperature)?;
    let format = parse_format(arguments.format, "format")?;
    let word_timestamps = parse_word_timestamps(arguments.timestamps)?;
    let wait = bounded(arguments.wait_seconds, "wait_seconds", 0, MAX_WAIT_SECONDS)?
        .unwrap_or(DEFAULT_WAIT_SECONDS)
        .unsigned_abs();
    let inline = flag(arguments.inline_audio, "inline_audio")?.unwrap_or(false);
    let key = idempotency_key(arguments.idempotency_key)?;
    // Fingerprinted in `POST /v1/speech`'s form: one key answers for one request whichever door
    // sent it.
    let keyed = Keyed::json(KeyUse::Speech, key, &rest_form(&args));
    let request = SpeechRequest {
        text,
        voice: VoiceChoice::IdOrName(&voice),
        seed,
        temperature,
        format,
        word_timestamps,
    };
    let accepted = service::create(state, principal, request, FIELDS_OF_SPEAK, keyed).await?;
    let (id, replayed) = (accepted.generation_id, accepted.replayed);
    // Never past the server's own request time limit.
    let wait = Duration::from_secs(wait).min(crate::service::delivery::sync_wait_limit(
        state.request_timeout(),
    ));
    wait_for(state, &id, wait, context).await?;
    let row = crate::service::delivery::made(state, principal, &id)
        .await
        .map_err(|err| match err.code {
            ErrorCode::NotFound => ServiceError::internal("admitted generation not found"),
            _ => err,
        })?;
    let status = row.status;
    let generation = Generation::present(state, row);
    match status {
        GenerationStatus::Completed => completed(state, &generation, replayed, inline).await,
        GenerationStatus::Failed => Err(crate::service::delivery::generation_failed(
            &id,
            "get_generation with this id",
        )),
        GenerationStatus::Generating => Ok(pending(&generation, wait, replayed)),
    }
}

/// The arguments as `POST /v1/speech`'s body, for the fingerprint both doors share.
fn rest_form(args: &JsonObject) -> Value {
    let mut body = Map::new();
    for (ours, rest) in [
        ("text", "text"),
        ("voice", "voice_name"),
        ("seed", "seed"),
        ("temperature", "temperature"),
        ("format", "response_format"),
        ("timestamps", "timestamps"),
    ] {
        if let Some(value) = args.0.get(ours) {
            body.insert(rest.to_owned(), value.clone());
        }
    }
    Value::Object(body)
}

/// Waits until the generation has ended, `wait` has passed, the caller cancelled or went away,
/// or the server is shutting down, whichever comes first: the core's wait
/// (`service::delivery::wait`), with this door's progress notifications beside it.
async fn wait_for(
    state: &McpState,
    id: &str,
    wait: Duration,
    context: &RequestContext<RoleServer>,
) -> Result<(), ServiceError> {
    if wait.is_zero() {
        return Ok(());
    }
    let started = Instant::now();
    let mut progress = Progress::new(context, wait);
    progress
        .send(0.0, format!("Generation {id} accepted; generating."))
        .await;
    let ended = crate::service::delivery::wait(state, id, wait);
    tokio::pin!(ended);
    let mut ticker = tokio::time::interval_at(started + PROGRESS_EVERY, PROGRESS_EVERY);
    loop {
        tokio::select! {
            ended = &mut ended => {
                if let Some(status) = ended? {
                    progress.send(wait.as_secs_f64(), format!("Generation {id} {status}.")).await;
                }
                return Ok(());
            }
            () = context.ct.cancelled() => return Ok(()),
            _ = ticker.tick(), if progress.wanted() => {
                let elapsed = started.elapsed().as_secs_f64();
                progress.send(elapsed, format!("Generating ({elapsed:.0} s).")).await;
            }
        }
    }
}

/// Progress notifications for the request's `progressToken`, if it sent one: progress is the
/// seconds waited so far, out of `wait_seconds`.
struct Progress {
    token: Option<ProgressToken>,
    peer: Peer<RoleServer>,
    total: f64,
    last: Option<f64>,
}

impl Progress {
    fn new(context: &RequestContext<RoleServer>, wait: Duration) -> Self {
        Self {
            token: context.meta.get_progress_token(),
            peer: context.peer.clone(),
            total: wait.as_secs_f64(),
            last: None,
        }
    }

    fn wanted(&self) -> bool {
        self.token.is_some()
    }

    /// Sends one notification; progress must grow, so a value not above the last is skipped.
    async fn send(&mut self, progress: f64, message: String) {
        let Some(token) = &self.token else { return };
        if self.last.is_some_and(|last| progress <= last) {
            return;
        }
        self.last = Some(progress);
        let param = ProgressNotificationParam::new(token.clone(), progress)
            .with_total(self.total)
            .with_message(message);
        // A caller that went away is noticed by the wait itself.
        let _ = self.peer.notify_progress(param).await;
    }
}

async fn completed(
    state: &McpState,
    generation: &Generation,
    replayed: bool,
    inline: bool,
) -> Result<CallToolResult, ServiceError> {
    let url = generation
        .audio_url
        .clone()
        .ok_or_else(|| ServiceError::internal("completed generation without audio"))?;
    let duration_ms = generation.duration_ms.unwrap_or(0);
    let mut content = vec![ContentBlock::text(format!(
        "Spoke {:.1} s of audio ({}). Audio (signed link, valid about 15 minutes): {url}\ngeneration_id: {}",
        duration_ms as f64 / 1000.0,
        generation.format,
        generation.id
    ))];
    content.extend(audio_link(generation));
    if inline {
        content.push(inline_audio(state, &generation.id).await?);
    }
    let mut structured = json!({
        "generation_id": generation.id,
        "status": "completed",
        "duration_ms": duration_ms,
        "audio_url": url,
        "format": generation.format,
        "replayed": replayed,
    });
    if let Some(words) = &generation.words {
        structured["words"] = json!(words);
    }
    Ok(success(content, structured))
}

/// The audio itself, base64, when it is small enough; a note otherwise.
async fn inline_audio(state: &McpState, id: &str) -> Result<ContentBlock, ServiceError> {
    let blob = match crate::service::audio::small(state, id, MAX_INLINE_BYTES).await? {
        Ok(blob) => blob,
        Err(len) => {
            return Ok(ContentBlock::text(format!(
                "The audio is {len} bytes, over the 1 MiB inline limit: download it from the audio_url."
            )));
        }
    };
    let data = base64::engine::general_purpose::STANDARD.encode(&blob.bytes);
    Ok(ContentBlock::audio(data, blob.content_type))
}

fn pending(generation: &Generation, waited: Duration, replayed: bool) -> CallToolResult {
    let text = format!(
        "Generation {id} is still generating after {secs} s. Call get_generation with generation_id \"{id}\" to get the audio when it is ready.",
        id = generation.id,
        secs = waited.as_secs(),
    );
    success(
        vec![ContentBlock::text(text)],
        json!({
            "generation_id": generation.id,
            "status": "generating",
            "duration_ms": null,
            "audio_url": null,
            "format": generation.format,
            "replayed": replayed,
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_checked_in_order_whatever_order_they_come_in() {
        let args = JsonObject(
            json!({"format": "flac", "seed": "7", "text": 5, "voice": "v"})
                .as_object()
                .unwrap()
                .clone(),
        );
        let arguments: SpeakArguments = args.decode().unwrap();
        let err = parse_text(arguments.text, "text").unwrap_err();
        assert_eq!(err.param.as_deref(), Some("text"));
        assert_eq!(err.detail, "text must be a string");
        let unknown = JsonObject(json!({"txt": "hi"}).as_object().unwrap().clone())
            .decode::<SpeakArguments>()
            .unwrap_err();
        assert_eq!(unknown.param.as_deref(), Some("txt"));
        assert_eq!(
            unknown.detail,
            "Unknown field \"txt\"; accepted fields: text, voice, seed, temperature, format, \
             wait_seconds, inline_audio, idempotency_key, timestamps."
        );
    }
}
