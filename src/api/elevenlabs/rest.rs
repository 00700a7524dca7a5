//! `POST /v1/text-to-speech/{voice_id}` and `…/stream`: JSON `{text, model_id,
//! voice_settings, …}`, `output_format` in the query; the audio streams as it is rendered
//! (both routes), in the asked format.

use std::sync::Arc;

use axum::Extension;
use axum::extract::{Path, RawQuery, State};
use axum::http::HeaderValue;
use axum::response::Response;
use serde_json::Value;

use super::FIELDS;
use super::params::{self, Route};
use crate::domain::{Seed, SpeechText};
use crate::http::auth::Principal;
use crate::http::error::ApiError;
use crate::http::json::JsonObject;
use crate::http::speech_delivery;
use crate::service::Core;
use crate::service::live_speech::{self, ConvertRequest};

/// The body's members (ElevenLabs'); others are refused naming them.
const MEMBERS: [&str; 12] = [
    "text",
    "model_id",
    "voice_settings",
    "language_code",
    "seed",
    "apply_text_normalization",
    "apply_language_text_normalization",
    "pronunciation_dictionary_locators",
    "previous_text",
    "next_text",
    "previous_request_ids",
    "next_request_ids",
];

pub async fn convert(
    State(core): State<Core>,
    Extension(principal): Extension<Arc<Principal>>,
    Path(voice): Path<String>,
    RawQuery(raw): RawQuery,
    body: JsonObject,
) -> Result<Response, ApiError> {
    let query = params::parse_query(raw.as_deref(), Route::Rest)?;
    body.only(&MEMBERS)?;
    let text = SpeechText::new(body.required_str("text")?)
        .map_err(|e| ApiError::invalid("text", format!("text {e}")))?;
    let mut engine = query.engine;
    if let Some(model) = body.optional("model_id") {
        let model = model
            .as_str()
            .ok_or_else(|| ApiError::invalid("model_id", "model_id must be a string"))?;
        engine = params::model_id(model)?;
    }
    if let Some(settings) = body.optional("voice_settings") {
        params::voice_settings(settings, "voice_settings")?;
    }
    if let Some(mode) = body.optional("apply_text_normalization") {
        params::text_normalization(mode.as_str().unwrap_or_default())?;
    }
    if let Some(flag) = body.optional("apply_language_text_normalization")
        && flag != &Value::Bool(false)
    {
        return Err(ApiError::invalid(
            "apply_language_text_normalization",
            "apply_language_text_normalization is not supported; the voice's language normalises its text",
        ));
    }
    if let Some(code) = body.optional("language_code")
        && !code.is_string()
    {
        return Err(ApiError::invalid(
            "language_code",
            "language_code must be a string",
        ));
    }
    // Context for prosody and pronunciation dictionaries change how the voice reads: not
    // offered (an empty one changes nothing).
    for member in [
        "pronunciation_dictionary_locators",
        "previous_text",
        "next_text",
        "previous_request_ids",
        "next_request_ids",
    ] {
        let empty = match body.optional(member) {
            None => true,
            Some(Value::String(s)) => s.is_empty(),
            Some(Value::Array(items)) => items.is_empty(),
            Some(_) => false,
        };
        if !empty {
            return Err(ApiError::invalid(
                member,
                format!(
                    "{member} is not supported (pronunciations: POST /v1/pronunciations, applied to every request)"
                ),
            ));
        }
    }
    let seed = match body.optional("seed") {
        None => None,
        Some(value) => Some(
            value
                .as_u64()
                .and_then(|s| Seed::new(s).ok())
                .ok_or_else(|| ApiError::invalid("seed", "seed must be 0 to 2^53-1"))?,
        ),
    };
    let request = ConvertRequest {
        text,
        voice: &voice,
        engine: engine.map(|e| (e, "model_id")),
        seed,
        output: query.output,
    };
    let (accepted, delivery) = live_speech::convert(&core, &principal, request, FIELDS).await?;
    let mut response = speech_delivery::render(delivery);
    response.headers_mut().insert(
        "x-service-generation-id",
        HeaderValue::from_str(&accepted.generation_id).map_err(ApiError::internal)?,
    );
    Ok(response)
}
