//! `POST /v1/voices` (add a preset voice) and `GET /v1/voices/presets` (what can be added).
//! Adding is the service core's (`service::voices::create_preset`, shared with the console);
//! cloning is never done through the API.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::docs;
use crate::domain::EngineId;
use crate::http::auth::Principal;
use crate::http::error::ApiError;
use crate::http::idempotency;
use crate::http::json::{Field, JsonObject};
use crate::http::models::{Problem, Voice};
use crate::service::Core;
use crate::service::idempotency::{KeyUse, Keyed};
use crate::service::principal_cache::CredentialCheck;
use crate::service::reads;
use crate::service::voices::{self as service, NewPresetVoice};

/// Request body of `POST /v1/voices`. Any other member is refused (400 naming it).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateVoiceRequest {
    /// 1 to 100 characters, unique in the account; requests name the voice by it.
    #[serde(default)]
    #[schema(value_type = String, required = true, min_length = 1, max_length = 100, example = "narrator")]
    name: Field<String>,
    /// An installed engine (`GET /v1/voices/presets`).
    #[serde(default)]
    #[schema(value_type = String, required = true, example = "kokoro")]
    engine: Field<String>,
    /// One of the engine's presets (`GET /v1/voices/presets`).
    #[serde(default)]
    #[schema(value_type = String, required = true, example = "af_heart")]
    preset: Field<String>,
    /// ISO 639-1, optionally with a region (`en-gb`). Omitted: the preset's language.
    #[serde(default)]
    #[schema(value_type = Option<String>, example = "en-us")]
    language: Field<String>,
    /// Up to 500 characters.
    #[serde(default)]
    #[schema(value_type = Option<String>, max_length = 500)]
    description: Field<String>,
}

/// `POST /v1/voices`'s body, checked member by member in this order (an empty `language` or
/// `description` is the service's "omitted").
struct CreateVoiceInput {
    name: String,
    engine: EngineId,
    preset: String,
    language: String,
    description: String,
}

impl TryFrom<CreateVoiceRequest> for CreateVoiceInput {
    type Error = ApiError;

    fn try_from(body: CreateVoiceRequest) -> Result<Self, ApiError> {
        Ok(Self {
            name: body.name.required("name")?,
            engine: body
                .engine
                .required("engine")?
                .parse()
                .map_err(|m: String| ApiError::invalid("engine", m))?,
            preset: body.preset.required("preset")?,
            language: body.language.optional_str("language")?,
            description: body.description.optional_str("description")?,
        })
    }
}

/// A preset an installed engine offers (item of `GET /v1/voices/presets`).
#[derive(Debug, Serialize, ToSchema)]
pub struct VoicePreset {
    #[schema(example = "kokoro")]
    pub engine: String,
    #[schema(example = "af_heart")]
    pub preset: String,
    /// ISO 639-1, with the region where the engine distinguishes it (`en-us`, `en-gb`, `pt-br`).
    #[schema(example = "en-us")]
    pub language: String,
    #[schema(example = "Heart: American English female voice (Kokoro-82M)")]
    pub description: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct VoicePresetList {
    pub data: Vec<VoicePreset>,
    pub total: i64,
}

/// Field names that would carry reference audio: cloning is not done through the API.
fn is_reference_audio(field: &str) -> bool {
    let field = field.to_ascii_lowercase();
    ["audio", "sample", "reference", "clone", "recording"]
        .iter()
        .any(|w| field.contains(w))
}

/// Adds one of an installed engine's preset voices to the account as a voice profile.
/// Cloned voices are made in the studio, never through the API.
#[utoipa::path(post, path = "/v1/voices", tag = "voices",
    security(("api_key" = []), ("bearer" = [])),
    params(("Idempotency-Key" = Option<String>, Header, max_length = 255,
        description = "Same key and body within 48 h returns the first answer without adding again")),
    request_body(content = CreateVoiceRequest, content_type = "application/json"),
    responses(
        (status = 201, description = "The voice profile added; `Location` points at the voice list", body = Voice,
            headers(("Location" = String, description = "/v1/voices"))),
        (status = 400, description = "`invalid_request` (`param` names the field: an unknown engine or preset, a bad language, or any reference-audio field)", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "`conflict` (the account has a voice of that name; `param` is `name`) or `idempotency_key_in_use`", body = Problem, content_type = "application/problem+json"),
        docs::Write, docs::KeyReused, docs::TooLarge, docs::NotJson,
    ))]
pub async fn create_voice(
    State(state): State<Core>,
    Extension(principal): Extension<Arc<Principal>>,
    headers: HeaderMap,
    body: JsonObject,
) -> Result<Response, ApiError> {
    let key = idempotency::key_from(&headers)?;
    if let Some(field) = body.0.keys().find(|k| is_reference_audio(k)) {
        return Err(ApiError::invalid(
            field.clone(),
            "Voices are not cloned through the API (make cloned voices in the studio); \
             POST /v1/voices adds an engine's preset voice: {name, engine, preset, language?, \
             description?}.",
        ));
    }
    let CreateVoiceInput {
        name,
        engine,
        preset,
        language,
        description,
    } = body.decode::<CreateVoiceRequest>()?.try_into()?;
    let keyed = Keyed::json(KeyUse::AddVoice, key, &body.value());
    let voice = NewPresetVoice {
        name: &name,
        description: &description,
        language: &language,
        engine,
        preset: &preset,
        seed: None,
        temperature: None,
        personality: None,
    };
    let (row, replayed) = service::add_preset(&state, &principal, voice, keyed).await?;
    Ok(idempotency::json_answer(
        StatusCode::CREATED,
        &[("location", "/v1/voices".to_owned())],
        &Voice::from(row),
        replayed,
    ))
}

/// Lists the preset voices of the engines installed on this deployment.
#[utoipa::path(get, path = "/v1/voices/presets", tag = "voices",
    security(("api_key" = []), ("bearer" = [])),
    responses(
        (status = 200, description = "Every installed engine's presets", body = VoicePresetList),
        docs::Read,
    ))]
pub async fn list_presets(
    State(state): State<Core>,
    Extension(check): Extension<Arc<CredentialCheck>>,
) -> Result<Json<VoicePresetList>, ApiError> {
    // Nothing to read from the database but the key's own state (one round trip).
    reads::confirm_credential(&state, &check).await?;
    let data: Vec<VoicePreset> = crate::service::voices::presets(&state)
        .into_iter()
        .flat_map(|(engine, presets)| {
            presets.into_iter().map(move |p| VoicePreset {
                engine: engine.as_str().to_owned(),
                preset: p.name,
                language: p.language,
                description: p.description,
            })
        })
        .collect();
    Ok(Json(VoicePresetList {
        total: data.len() as i64,
        data,
    }))
}
