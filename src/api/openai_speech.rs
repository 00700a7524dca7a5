//! `POST /v1/audio/speech`: OpenAI's text-to-speech contract, synchronous. Every parameter we
//! cannot honour is refused by name; nothing is accepted and ignored. Errors use OpenAI's
//! envelope (rendered in `error::render_errors` for this path).

use std::sync::Arc;

use axum::Extension;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Schema, Type};

use super::docs;
use crate::audio::AudioFormat;
use crate::domain::{EngineId, Seed, SpeechText, Temperature};
use crate::http::auth::Principal;
use crate::http::error::ApiError;
use crate::http::idempotency;
use crate::http::json::{Field, JsonObject};
use crate::http::speech_delivery;
use crate::service::Core;
use crate::service::idempotency::{KeyUse, Keyed};
use crate::service::speech::{self as service, Fields, SyncSpeechRequest};

/// Field names of this dialect for the service's errors.
const FIELDS_OF_OPENAI: Fields = Fields {
    text: "input",
    voice: "voice",
    temperature: "temperature",
    engine: "voice",
};

/// OpenAI model names that select nothing: the voice's default engine renders.
const OPENAI_MODELS: [&str; 3] = ["tts-1", "tts-1-hd", "gpt-4o-mini-tts"];
/// OpenAI's built-in voices: refused, because every voice here is a profile of the account.
const OPENAI_VOICES: [&str; 13] = [
    "alloy", "ash", "ballad", "cedar", "coral", "echo", "fable", "marin", "nova", "onyx", "sage",
    "shimmer", "verse",
];

// Every parameter of OpenAI's that cannot be honoured is refused by name, never accepted and
// ignored. Members are `Field`s, checked in a fixed order by `OpenAiSpeechInput::try_from`.
/// Request body. Any other member is refused (400 naming it).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OpenAiSpeechRequest {
    /// An engine id (e.g. `kokoro`) selects that engine; `tts-1`, `tts-1-hd`, `gpt-4o-mini-tts`
    /// use the voice's default engine. Echoed in `X-Service-Engine`.
    #[serde(default)]
    #[schema(value_type = String, required = true, example = "tts-1")]
    model: Field<String>,
    /// Text, 1 to 10 000 characters.
    #[serde(default)]
    #[schema(value_type = String, required = true, min_length = 1, max_length = 10000)]
    input: Field<String>,
    /// A voice profile id or name of this account (string, or an object `{"id": …}`). OpenAI's
    /// built-in voice names are refused.
    #[serde(default)]
    #[schema(value_type = VoiceRef, required = true)]
    voice: Field<VoiceRef>,
    /// `mp3` (default), `opus`, `wav`.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    response_format: Field<String>,
    /// Only 1.
    #[serde(default)]
    #[schema(value_type = Option<f64>, minimum = 1, maximum = 1)]
    speed: Field<f64>,
    // Refused whenever sent: not in the document, as no value is accepted.
    #[serde(default)]
    #[schema(ignore)]
    instructions: Field<Value>,
    /// Only `audio`.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    stream_format: Field<String>,
    /// Extension: 0 to 2^53−1.
    #[serde(default)]
    #[schema(value_type = Option<i64>, minimum = 0, maximum = 9007199254740991_i64)]
    seed: Field<u64>,
    /// Extension: 0.05 to 2, chatterbox engines only.
    #[serde(default)]
    #[schema(value_type = Option<f64>, minimum = 0.05, maximum = 2)]
    temperature: Field<f64>,
}

/// How `voice` names a profile.
#[derive(Debug)]
enum VoiceRef {
    /// A profile's name or id.
    Name(String),
    /// OpenAI's object form.
    Object { id: String },
}

/// Written out because the derive cannot bound a tuple variant's string: both forms refuse an
/// empty name ([`parse_voice`]).
impl utoipa::PartialSchema for VoiceRef {
    fn schema() -> RefOr<Schema> {
        let name = || {
            ObjectBuilder::new()
                .schema_type(Type::String)
                .min_length(Some(1))
        };
        OneOfBuilder::new()
            .item(name().description(Some("A profile's name or id.")))
            .item(
                ObjectBuilder::new()
                    .schema_type(Type::Object)
                    .description(Some("OpenAI's object form."))
                    .required("id")
                    .property("id", name()),
            )
            .description(Some("How `voice` names a profile."))
            .into()
    }
}

impl ToSchema for VoiceRef {
    fn name() -> std::borrow::Cow<'static, str> {
        "VoiceRef".into()
    }
}

/// A string, or an object whose only member is a string `id` (serde's derive of an untagged
/// enum cannot refuse the object's other members).
impl<'de> Deserialize<'de> for VoiceRef {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Value::deserialize(deserializer)? {
            Value::String(name) => Ok(VoiceRef::Name(name)),
            Value::Object(map) => match (map.len(), map.get("id")) {
                (1, Some(Value::String(id))) => Ok(VoiceRef::Object { id: id.clone() }),
                _ => Err(serde::de::Error::custom("an object with only a string id")),
            },
            _ => Err(serde::de::Error::custom("a string or {\"id\": …}")),
        }
    }
}

/// The body as the service's input: checked in the order callers have always seen.
struct OpenAiSpeechInput {
    model: String,
    choice: ModelChoice,
    text: SpeechText,
    voice_ref: String,
    format: AudioFormat,
    seed: Option<Seed>,
    temperature: Option<Temperature>,
}

impl TryFrom<OpenAiSpeechRequest> for OpenAiSpeechInput {
    type Error = ApiError;

    fn try_from(body: OpenAiSpeechRequest) -> Result<Self, ApiError> {
        let (model, choice) = parse_model(body.model)?;
        let text = crate::http::fields::parse_text(body.input, "input")?;
        let voice_ref = parse_voice(body.voice)?;
        let format = crate::http::fields::parse_format(body.response_format, "response_format")?;
        refuse_unsupported(&body.instructions, body.speed, body.stream_format)?;
        Ok(Self {
            model,
            choice,
            text,
            voice_ref,
            format,
            seed: crate::http::fields::parse_seed(body.seed)?,
            temperature: crate::http::fields::parse_temperature(body.temperature)?,
        })
    }
}

/// The engine a `model` value selects, if it names one.
#[derive(Clone, Copy)]
enum ModelChoice {
    Engine(EngineId),
    VoiceDefault,
}

fn parse_model(model: Field<String>) -> Result<(String, ModelChoice), ApiError> {
    let model = model.required("model")?;
    if OPENAI_MODELS.contains(&model.as_str()) {
        return Ok((model, ModelChoice::VoiceDefault));
    }
    match model.parse::<EngineId>() {
        Ok(engine) => Ok((model, ModelChoice::Engine(engine))),
        Err(_) => Err(ApiError::invalid(
            "model",
            format!(
                "Unknown model {model:?}: use an engine id (kokoro, chatterbox, …) or tts-1, tts-1-hd, gpt-4o-mini-tts."
            ),
        )),
    }
}

fn parse_voice(voice: Field<VoiceRef>) -> Result<String, ApiError> {
    let invalid = || {
        ApiError::invalid(
            "voice",
            "voice must be a voice profile id or name, or {\"id\": …}",
        )
    };
    let voice = match voice {
        Field::Absent | Field::Null => return Err(ApiError::invalid("voice", "voice is required")),
        Field::Valid(VoiceRef::Name(s) | VoiceRef::Object { id: s }) => s,
        Field::Invalid => return Err(invalid()),
    };
    if OPENAI_VOICES.contains(&voice.as_str()) {
        return Err(ApiError::invalid(
            "voice",
            format!(
                "{voice:?} is one of OpenAI's built-in voices; use the name or id of one of your voice profiles (GET /v1/voices)."
            ),
        ));
    }
    if voice.trim().is_empty() {
        return Err(invalid());
    }
    Ok(voice)
}

/// OpenAI's parameters that only one value of can be honoured: `instructions` is refused
/// whenever it is sent (`null` included), `speed` unless it is 1, `stream_format` unless it is
/// `audio`.
fn refuse_unsupported(
    instructions: &Field<Value>,
    speed: Field<f64>,
    stream_format: Field<String>,
) -> Result<(), ApiError> {
    if !matches!(instructions, Field::Absent) {
        return Err(ApiError::invalid(
            "instructions",
            "instructions are not supported.",
        ));
    }
    if !matches!(speed, Field::Absent | Field::Valid(1.0)) {
        return Err(ApiError::invalid("speed", "Only speed 1 is supported."));
    }
    if !matches!(&stream_format, Field::Absent) && stream_format != Field::Valid("audio".into()) {
        return Err(ApiError::invalid(
            "stream_format",
            "Only stream_format \"audio\" is supported.",
        ));
    }
    Ok(())
}

/// Speaks `input` and streams the audio as it is produced (OpenAI-compatible).
///
/// The text is rendered sentence by sentence and each sentence's encoded audio is sent as soon as
/// it exists (chunked transfer; wav with OpenAI's streaming header, sizes `0xFFFFFFFF`, when the
/// audio comes in more than one piece). The generation's stored file is the bytes received,
/// finished: exact wav sizes, the mp3's LAME/Info tag in front of the same frames.
/// A failure after the first byte closes the connection before the end of the chunked body (an
/// incomplete transfer); the generation is then `failed` and not charged. A client that
/// disconnects, or a request that runs past the server's time limit, cancels the generation: it
/// never runs, or stops inside the piece it is rendering, and is not charged. A duplicate of the
/// request (the same `Idempotency-Key` while the first runs) answers with the same audio and never
/// cancels it.
#[utoipa::path(post, path = "/v1/audio/speech", tag = "speech",
    security(("api_key" = []), ("bearer" = [])),
    params(("Idempotency-Key" = Option<String>, Header, max_length = 255,
        description = "Same key and body within 48 h answers with the first request's audio without generating again")),
    request_body(content = OpenAiSpeechRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "The audio, streamed as it is produced (chunked); the stored file with Content-Length when another process rendered it or it had already finished (a replay)", content((Vec<u8> = "audio/mpeg"), (Vec<u8> = "audio/ogg"), (Vec<u8> = "audio/wav")),
            headers(
                ("X-Service-Generation-Id" = String, description = "The generation, readable at GET /v1/generations/{id}"),
                ("X-Service-Engine" = String, description = "The `model` value as sent"),
            )),
        (status = 400, description = "`invalid_request` (`error.param` names the field)", body = crate::http::models::OpenAiError),
        (status = 500, description = "`internal_error`: the generation failed (the message names only the generation id)", body = crate::http::models::OpenAiError),
        (status = 503, description = "`service_unavailable`: database unavailable, or the generation ran past the server's time limit (it is cancelled)", body = crate::http::models::OpenAiError),
        docs::OpenAi<docs::Speak>,
    ))]
pub async fn create_openai_speech(
    State(state): State<Core>,
    Extension(principal): Extension<Arc<Principal>>,
    headers: HeaderMap,
    body: JsonObject,
) -> Result<Response, ApiError> {
    let key = idempotency::key_from(&headers)?;
    let OpenAiSpeechInput {
        model,
        choice,
        text,
        voice_ref,
        format,
        seed,
        temperature,
    } = body.decode::<OpenAiSpeechRequest>()?.try_into()?;
    let keyed = Keyed::json(KeyUse::SyncSpeech, key, &body.value());
    let engine = match choice {
        ModelChoice::Engine(engine) => Some((engine, "model")),
        ModelChoice::VoiceDefault => None,
    };
    let request = SyncSpeechRequest {
        text,
        voice: &voice_ref,
        engine,
        seed,
        temperature,
        format,
    };
    let accepted =
        service::create_sync(&state, &principal, request, FIELDS_OF_OPENAI, keyed).await?;
    speech_delivery::deliver(
        &state,
        &accepted.generation_id,
        Some(&model),
        accepted.replayed,
    )
    .await
}
