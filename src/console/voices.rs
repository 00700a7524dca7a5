//! `/console/voices`: the account's voice profiles; add one from an installed engine's presets,
//! or clone one from an uploaded recording (with the speaker's consent confirmed); set or clear
//! its pinned seed, temperature (engines that take one) and personality prompt.

use askama::Template;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde::Deserialize;

use super::page::{
    Chrome, PageError, not_owned, render, see_other, shown_on_page, with_retry_after,
};
use super::session::{CsrfForm, CsrfOnly, SignedIn};
use super::upload::{self, FileRule, UploadForm};
use crate::console::ConsoleState;
use crate::domain::{EngineId, Seed, Temperature};
use crate::http::error::HttpStatus;
use crate::service::ServiceError;
use crate::service::cloning::{self, CloneRequest};
use crate::service::deletion;
use crate::service::views::{MAX_REFERENCE_BYTES, PrintState, VoiceRow};
use crate::service::voices::{self, NewPresetVoice};

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
    /// A cloned voice's state ("voice print being computed", …); empty for presets.
    pub status: String,
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
    /// Installed engines that clone.
    cloners: Vec<String>,
    max_megabytes: usize,
    error: String,
}

async fn page(
    state: &ConsoleState,
    user: &SignedIn,
    status: StatusCode,
    error: String,
) -> Result<Response, PageError> {
    let voices::Studio {
        voices: rows,
        personalities: prompts,
        prints,
    } = voices::studio(state, &user.account_id).await?;
    let voices = rows
        .into_iter()
        .rev()
        .map(|v| VoiceView {
            personality: prompts
                .iter()
                .find(|p| p.id == v.id)
                .map(|p| p.prompt.clone())
                .unwrap_or_default(),
            takes_temperature: v.engine.accepts_temperature(),
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
            status: match prints.iter().find(|(id, _)| *id == v.id).map(|(_, s)| s) {
                Some(PrintState::Pending) => "voice print being computed".to_owned(),
                Some(PrintState::Ready) => format!(
                    "cloned from {} recording{}",
                    v.sample_count,
                    if v.sample_count == 1 { "" } else { "s" }
                ),
                Some(PrintState::Failed(why)) => format!("could not be prepared: {why}"),
                None => String::new(),
            },
            id: v.id,
            name: v.name,
            description: v.description,
            language: v.language,
        })
        .collect();
    let presets = voices::presets(state)
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
    let cloners = voices::cloners(state)
        .into_iter()
        .map(|e| e.as_str().to_owned())
        .collect();
    Ok(render(
        status,
        &VoicesPage {
            chrome: Chrome::signed_in(user, "voices"),
            voices,
            presets,
            cloners,
            max_megabytes: MAX_REFERENCE_BYTES / (1024 * 1024),
            error,
        },
    ))
}

pub async fn list(
    State(state): State<ConsoleState>,
    user: SignedIn,
) -> Result<Response, PageError> {
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
}

pub async fn add(
    State(state): State<ConsoleState>,
    user: SignedIn,
    CsrfForm(form): CsrfForm<AddForm>,
) -> Result<Response, PageError> {
    let result = match form.preset.split_once(':') {
        Some((engine, preset)) => match engine.parse::<EngineId>() {
            Ok(engine) => {
                voices::create_preset(
                    &state,
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

/// Body limit of the clone form: the largest reference file and the other fields.
pub const CLONE_BODY_LIMIT: usize = MAX_REFERENCE_BYTES + 64 * 1024;

/// `POST /console/voices/clone`: admitted before the recording is read (one of the account's
/// uploads in flight, the plan, the feature, the account's caps), then the form read in order,
/// its CSRF token before the recording (`console::upload`); checks the form and the recording,
/// stores the voice and its recording, and leaves the voice print to a generation worker (the
/// voice's list entry says when it is ready; generations sent meanwhile wait for it).
pub async fn clone(
    State(state): State<ConsoleState>,
    user: SignedIn,
    request: axum::extract::Request,
) -> Result<Response, PageError> {
    let limits = state.console.clone_limits;
    let _slot = match cloning::admit_upload(&state, &user.account_id, limits).await {
        Ok(slot) => slot,
        Err(err) => {
            upload::refuse(request, CLONE_BODY_LIMIT, state.request_timeout());
            return refused(&state, &user, err).await;
        }
    };
    let rule = FileRule {
        field: "audio",
        max_bytes: MAX_REFERENCE_BYTES,
        too_large: format!(
            "The recording is larger than {} MiB; 30 seconds of speech fit well within it.",
            MAX_REFERENCE_BYTES / (1024 * 1024)
        ),
    };
    let form = match upload::read(&user.session, request, &state, &rule).await {
        Ok(form) => form,
        Err(PageError::Service(err)) => return refused(&state, &user, err).await,
        Err(err) => return Err(err),
    };
    match clone_from(&state, &user, form).await {
        Ok(_) => Ok(see_other("/console/voices")),
        Err(err) => refused(&state, &user, err).await,
    }
}

/// The page with a refusal's reason (a client error), or the error page (anything else).
async fn refused(
    state: &ConsoleState,
    user: &SignedIn,
    err: ServiceError,
) -> Result<Response, PageError> {
    let err = shown_on_page(err)?;
    let retry_after = err.retry_after_secs;
    let mut response = page(state, user, err.code.status(), err.detail).await?;
    with_retry_after(&mut response, retry_after);
    Ok(response)
}

async fn clone_from(
    state: &ConsoleState,
    user: &SignedIn,
    form: UploadForm,
) -> Result<VoiceRow, ServiceError> {
    if form.text("consent") != "yes" {
        return Err(ServiceError::invalid(
            "consent",
            "Confirm that you have the speaker's consent to clone their voice.",
        ));
    }
    let engine: EngineId = form
        .text("engine")
        .parse()
        .map_err(|_| ServiceError::invalid("engine", "Choose one of the engines listed."))?;
    let (name, language, description, transcript) = (
        form.text("name"),
        form.text("language"),
        form.text("description"),
        form.text("transcript"),
    );
    let audio = form.file;
    let request = CloneRequest {
        name,
        description,
        language,
        engine,
        audio,
        transcript: Some(transcript),
    };
    let limits = state.console.clone_limits;
    cloning::clone_voice(state, &user.account_id, limits, request).await
}

#[derive(Deserialize)]
pub struct PinsForm {
    #[serde(default)]
    seed: String,
    #[serde(default)]
    temperature: String,
    #[serde(default)]
    personality: String,
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
    State(state): State<ConsoleState>,
    user: SignedIn,
    Path(voice_id): Path<String>,
    CsrfForm(form): CsrfForm<PinsForm>,
) -> Result<Response, PageError> {
    let result = match pins(&form) {
        Ok((seed, temperature)) => {
            voices::set_pins(
                &state,
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

/// `POST /console/voices/{id}/delete`: deletes the voice (`service::deletion::delete_voice`:
/// its recordings and print go with it, its unfinished generations are cancelled) and shows
/// the list. Another account's voice, or one already deleted, is the not-found page.
pub async fn delete(
    State(state): State<ConsoleState>,
    user: SignedIn,
    Path(voice_id): Path<String>,
    CsrfForm(_): CsrfForm<CsrfOnly>,
) -> Result<Response, PageError> {
    deletion::delete_voice(&state, &user.account_id, &voice_id)
        .await
        .map_err(not_owned)?;
    Ok(see_other("/console/voices"))
}
