//! `/console/voices`: the account's voice profiles; add one from an installed engine's presets;
//! set or clear its pinned seed, temperature (engines that take one) and personality prompt.
//! Cloning is not here: it comes with the cloning engines.

use askama::Template;
use axum::Form;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde::Deserialize;

use super::page::{Chrome, PageError, render, see_other};
use super::session::{SignedIn, check_csrf};
use crate::domain::{EngineId, Seed, Temperature};
use crate::http::AppState;
use crate::service::ServiceError;
use crate::service::voices::{self, NewPresetVoice};
use crate::store;

pub struct VoiceView {
    pub id: String,
    pub name: String,
    pub description: String,
    pub language: String,
    pub source: String,
    pub seed: String,
    pub temperature: String,
    pub takes_temperature: bool,
    pub personality: String,
    pub generations: i64,
}

pub struct PresetOption {
    pub value: String,
    pub label: String,
}

#[derive(Template)]
#[template(path = "console/voices.html")]
struct VoicesPage {
    chrome: Chrome,
    voices: Vec<VoiceView>,
    presets: Vec<PresetOption>,
    error: String,
}

async fn page(
    state: &AppState,
    user: &SignedIn,
    status: StatusCode,
    error: String,
) -> Result<Response, PageError> {
    let rows = store::voices::list(&state.pool, &user.account_id).await?;
    let prompts = store::voices::personalities(&state.pool, &user.account_id).await?;
    let voices = rows
        .into_iter()
        .rev()
        .map(|v| VoiceView {
            personality: prompts
                .iter()
                .find(|p| p.id == v.id)
                .map(|p| p.prompt.clone())
                .unwrap_or_default(),
            takes_temperature: v
                .engine
                .parse::<EngineId>()
                .is_ok_and(EngineId::accepts_temperature),
            source: match &v.preset {
                Some(preset) => format!("{} · {preset}", v.engine),
                None => format!("{} · {}", v.engine, v.voice_type),
            },
            seed: v.pinned_seed.map(|s| s.to_string()).unwrap_or_default(),
            temperature: v
                .pinned_temperature
                .map(|t| format!("{t:.2}"))
                .unwrap_or_default(),
            generations: v.generation_count,
            id: v.id,
            name: v.name,
            description: v.description,
            language: v.language,
        })
        .collect();
    let presets = state
        .engines
        .presets()
        .into_iter()
        .flat_map(|(engine, presets)| {
            presets.into_iter().map(move |p| PresetOption {
                value: format!("{}:{}", engine.as_str(), p.name),
                label: format!(
                    "{} · {} ({}) {}",
                    engine.as_str(),
                    p.name,
                    p.language,
                    p.description
                ),
            })
        })
        .collect();
    Ok(render(
        status,
        &VoicesPage {
            chrome: Chrome::signed_in(user, "voices"),
            voices,
            presets,
            error,
        },
    ))
}

pub async fn list(State(state): State<AppState>, user: SignedIn) -> Result<Response, PageError> {
    page(&state, &user, StatusCode::OK, String::new()).await
}

#[derive(Deserialize)]
pub struct AddForm {
    #[serde(default)]
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    language: String,
    /// `engine:preset`
    #[serde(default)]
    preset: String,
    #[serde(default)]
    csrf_token: String,
}

pub async fn add(
    State(state): State<AppState>,
    user: SignedIn,
    Form(form): Form<AddForm>,
) -> Result<Response, PageError> {
    check_csrf(&user.session, &form.csrf_token).await?;
    let result = match form.preset.split_once(':') {
        Some((engine, preset)) => match engine.parse::<EngineId>() {
            Ok(engine) => {
                voices::create_preset(
                    &state.pool,
                    &state.engines,
                    &user.account_id,
                    NewPresetVoice {
                        name: &form.name,
                        description: &form.description,
                        language: &form.language,
                        engine,
                        preset,
                        seed: None,
                        temperature: None,
                        personality: None,
                    },
                    None,
                )
                .await
            }
            Err(_) => Err(ServiceError::invalid(
                "engine",
                "Choose one of the presets.",
            )),
        },
        None => Err(ServiceError::invalid(
            "preset",
            "Choose one of the presets.",
        )),
    };
    match result {
        Ok(_) => Ok(see_other("/console/voices")),
        Err(err) if err.param.is_some() => {
            page(&state, &user, StatusCode::BAD_REQUEST, err.detail).await
        }
        Err(err) => Err(err.into()),
    }
}

#[derive(Deserialize)]
pub struct PinsForm {
    #[serde(default)]
    seed: String,
    #[serde(default)]
    temperature: String,
    #[serde(default)]
    personality: String,
    #[serde(default)]
    csrf_token: String,
}

fn pins(form: &PinsForm) -> Result<(Option<Seed>, Option<Temperature>), ServiceError> {
    let seed = match form.seed.trim() {
        "" => None,
        s => Some(
            s.parse::<u64>()
                .map_err(|_| "a whole number from 0".to_string())
                .and_then(Seed::new)
                .map_err(|e| ServiceError::invalid("seed", format!("Seed: {e}.")))?,
        ),
    };
    let temperature = match form.temperature.trim() {
        "" => None,
        t => Some(
            t.parse::<f64>()
                .map_err(|_| "a number from 0.05 to 2".to_string())
                .and_then(Temperature::new)
                .map_err(|e| ServiceError::invalid("temperature", format!("Temperature: {e}.")))?,
        ),
    };
    Ok((seed, temperature))
}

/// Empty fields clear the pin or the prompt.
pub async fn update(
    State(state): State<AppState>,
    user: SignedIn,
    Path(voice_id): Path<String>,
    Form(form): Form<PinsForm>,
) -> Result<Response, PageError> {
    check_csrf(&user.session, &form.csrf_token).await?;
    let result = match pins(&form) {
        Ok((seed, temperature)) => {
            voices::set_pins(
                &state.pool,
                &user.account_id,
                &voice_id,
                seed,
                temperature,
                Some(&form.personality),
            )
            .await
        }
        Err(err) => Err(err),
    };
    match result {
        Ok(true) => Ok(see_other("/console/voices")),
        Ok(false) => Err(PageError::NotFound),
        Err(err) if err.param.is_some() => {
            page(&state, &user, StatusCode::BAD_REQUEST, err.detail).await
        }
        Err(err) => Err(err.into()),
    }
}
