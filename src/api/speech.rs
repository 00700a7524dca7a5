//! `POST /v1/speech` (asynchronous), and the field parsing both speech endpoints share.
//! Admission is the service core's (`service::speech`).

use std::sync::Arc;

use axum::Extension;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::docs;
use crate::audio::AudioFormat;
use crate::domain::{Seed, SpeechText, Temperature};
use crate::http::auth::Principal;
use crate::http::error::ApiError;
use crate::http::fields::{
    parse_format, parse_seed, parse_temperature, parse_text, parse_word_timestamps,
};
use crate::http::idempotency;
use crate::http::json::{Field, JsonObject};
use crate::http::models::Problem;
use crate::service::Core;
use crate::service::idempotency::{KeyUse, Keyed};
use crate::service::speech::{self as service, Accepted, Fields, VoiceChoice};

/// Answer of `POST /v1/speech`.
#[derive(Debug, Serialize, ToSchema)]
pub struct SpeechAccepted {
    #[schema(example = "gen_0192f0c1a2b37c0d8e9f0a1b2c3d4e5f")]
    pub id: String,
    #[schema(example = "generating")]
    pub status: String,
    /// Name of the voice profile.
    pub voice: String,
}

// Members are `Field`s, checked in a fixed order by `SpeechInput::try_from`, each refusal
// naming its member whatever order the client wrote them in.
/// Request body of `POST /v1/speech`. Any other member is refused (400 naming it).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SpeechRequest {
    /// 1 to 10 000 characters after trimming.
    #[serde(default)]
    #[schema(value_type = String, required = true, min_length = 1, max_length = 10000)]
    text: Field<String>,
    /// Name of one of the account's voice profiles.
    #[serde(default)]
    #[schema(value_type = String, required = true, min_length = 1)]
    voice_name: Field<String>,
    /// 0 to 2^53−1. Omitted: the voice's pinned seed, else random. Same seed, text and voice →
    /// the same audio.
    #[serde(default)]
    #[schema(value_type = Option<i64>, minimum = 0, maximum = 9007199254740991_i64)]
    seed: Field<u64>,
    /// 0.05 to 2, chatterbox engines only.
    #[serde(default)]
    #[schema(value_type = Option<f64>, minimum = 0.05, maximum = 2.0)]
    temperature: Field<f64>,
    /// `mp3` (default), `opus` (Ogg Opus) or `wav` (16-bit PCM).
    #[serde(default)]
    #[schema(value_type = Option<String>, example = "mp3")]
    response_format: Field<String>,
    /// `word`: the completed generation carries `words` (when each word is said, and which
    /// characters of `text` it reads), and `GET /v1/generations/{id}/captions` renders them.
    /// Kokoro voices only. `none` or omitted: no timestamps.
    #[serde(default)]
    #[schema(value_type = Option<SpeechTimestamps>)]
    timestamps: Field<String>,
}

/// What `timestamps` may ask of `POST /v1/speech`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum SpeechTimestamps {
    None,
    Word,
}

/// `POST /v1/speech`'s body as the service's input (the voice still named, not found).
pub struct SpeechInput {
    pub text: SpeechText,
    pub voice_name: String,
    pub seed: Option<Seed>,
    pub temperature: Option<Temperature>,
    pub format: AudioFormat,
    pub word_timestamps: bool,
}

impl TryFrom<SpeechRequest> for SpeechInput {
    type Error = ApiError;

    fn try_from(body: SpeechRequest) -> Result<Self, ApiError> {
        Ok(Self {
            text: parse_text(body.text, "text")?,
            voice_name: body.voice_name.required("voice_name")?,
            seed: parse_seed(body.seed)?,
            temperature: parse_temperature(body.temperature)?,
            format: parse_format(body.response_format, "response_format")?,
            word_timestamps: parse_word_timestamps(body.timestamps)?,
        })
    }
}

/// Starts a speech generation; poll `GET /v1/generations/{id}` for the audio.
#[utoipa::path(post, path = "/v1/speech", tag = "speech",
    security(("api_key" = []), ("bearer" = [])),
    params(("Idempotency-Key" = Option<String>, Header, max_length = 255,
        description = "Same key and body within 48 h returns the first answer without generating again")),
    request_body(content = SpeechRequest, content_type = "application/json"),
    responses(
        (status = 202, description = "Accepted; `Location` points at the generation", body = SpeechAccepted,
            headers(("Location" = String, description = "/v1/generations/{id}"))),
        (status = 400, description = "`invalid_request` (`param` names the field)", body = Problem, content_type = "application/problem+json"),
        docs::Speak, docs::Unavailable,
    ))]
pub async fn create_speech(
    State(state): State<Core>,
    Extension(principal): Extension<Arc<Principal>>,
    headers: HeaderMap,
    body: JsonObject,
) -> Result<Response, ApiError> {
    let key = idempotency::key_from(&headers)?;
    let SpeechInput {
        text,
        voice_name,
        seed,
        temperature,
        format,
        word_timestamps,
    } = body.decode::<SpeechRequest>()?.try_into()?;
    let keyed = Keyed::json(KeyUse::Speech, key, &body.value());
    let request = service::SpeechRequest {
        text,
        voice: VoiceChoice::Name(&voice_name),
        seed,
        temperature,
        format,
        word_timestamps,
    };
    let accepted = service::create(&state, &principal, request, FIELDS_OF_SPEECH, keyed).await?;
    Ok(accepted_answer(&accepted))
}

/// The answer of `POST /v1/speech`, the first time and (byte for byte, marked replayed) on a
/// replay through either door (REST or the agent's `speak`).
fn accepted_answer(accepted: &Accepted) -> Response {
    idempotency::json_answer(
        StatusCode::ACCEPTED,
        &[(
            "location",
            format!("/v1/generations/{}", accepted.generation_id),
        )],
        &SpeechAccepted {
            id: accepted.generation_id.clone(),
            status: "generating".into(),
            voice: accepted.voice.clone(),
        },
        accepted.replayed,
    )
}

/// Field names of `POST /v1/speech` for the service's errors.
const FIELDS_OF_SPEECH: Fields = Fields {
    text: "text",
    voice: "voice_name",
    temperature: "temperature",
    engine: "voice_name",
};

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn input(body: serde_json::Value) -> Result<SpeechInput, ApiError> {
        JsonObject(body.as_object().unwrap().clone())
            .decode::<SpeechRequest>()?
            .try_into()
    }

    /// The first refusal is the first member in the documented order, not in the body's.
    #[test]
    fn members_are_checked_in_a_fixed_order() {
        let err = input(json!({"response_format": "flac", "seed": -1, "voice_name": 3}))
            .err()
            .unwrap();
        assert_eq!(
            (err.param.as_deref(), err.detail.as_str()),
            (Some("text"), "text is required")
        );
        let err =
            input(json!({"response_format": "flac", "seed": 1.5, "text": "hi", "voice_name": "v"}))
                .err()
                .unwrap();
        assert_eq!(err.param.as_deref(), Some("seed"));
        assert_eq!(err.detail, Seed::REFUSAL);
        let err = input(json!({"text": "hi", "voice_name": "v", "temperature": "hot"}))
            .err()
            .unwrap();
        assert_eq!(err.detail, "temperature must be a number from 0.05 to 2");
        let err = input(json!({"text": "hi", "voice_name": "v", "response_format": 1}))
            .err()
            .unwrap();
        assert_eq!(err.detail, "response_format must be one of mp3, opus, wav");
        let ok = input(
            json!({"text": " hi ", "voice_name": "v", "seed": null, "response_format": "wav"}),
        )
        .ok()
        .unwrap();
        assert_eq!(ok.text.as_str(), "hi");
        assert_eq!((ok.seed, ok.format), (None, AudioFormat::Wav));
    }
}
