//! Preset voice profiles: adding one (the console and `voiced admin voice create`) and setting
//! its pins and personality.

use sqlx::PgPool;

use super::error::ServiceError;
use crate::domain::{EngineId, Seed, Temperature, new_id};
use crate::engines::registry::EngineRegistry;
use crate::store;

/// Longest personality prompt.
pub const MAX_PERSONALITY_CHARS: usize = 2000;

/// What a new preset voice is made of, unvalidated.
pub struct NewPresetVoice<'a> {
    pub name: &'a str,
    pub description: &'a str,
    pub language: &'a str,
    pub engine: EngineId,
    pub preset: &'a str,
    pub seed: Option<Seed>,
    pub temperature: Option<Temperature>,
    pub personality: Option<&'a str>,
}

/// Validates and adds a preset voice to the account; returns its id. The engine must be
/// installed here and offer the preset; a duplicate name is refused naming `name`.
pub async fn create_preset(
    pool: &PgPool,
    registry: &EngineRegistry,
    account_id: &str,
    voice: NewPresetVoice<'_>,
) -> Result<String, ServiceError> {
    let name = voice.name.trim();
    if name.is_empty() || name.chars().count() > 100 {
        return Err(ServiceError::invalid(
            "name",
            "A voice name has 1 to 100 characters.",
        ));
    }
    let language = voice.language.trim();
    if language.len() != 2 || !language.chars().all(|c| c.is_ascii_lowercase()) {
        return Err(ServiceError::invalid(
            "language",
            "The language is an ISO 639-1 code such as en.",
        ));
    }
    check_temperature(voice.engine, voice.temperature)?;
    let personality = personality(voice.personality)?;
    if !registry.is_installed(voice.engine) {
        return Err(ServiceError::invalid(
            "engine",
            format!(
                "The {} engine is not installed on this deployment.",
                voice.engine
            ),
        ));
    }
    let offered = registry
        .presets()
        .into_iter()
        .find(|(id, _)| *id == voice.engine)
        .is_some_and(|(_, presets)| presets.iter().any(|p| p.name == voice.preset));
    if !offered {
        return Err(ServiceError::invalid(
            "preset",
            format!(
                "The {} engine has no preset {:?}.",
                voice.engine, voice.preset
            ),
        ));
    }
    let id = new_id("voice");
    store::voices::insert_preset(
        pool,
        store::voices::NewVoice {
            id: &id,
            account_id,
            name,
            description: voice.description.trim(),
            language,
            engine: voice.engine.as_str(),
            preset: voice.preset,
            pinned_seed: voice.seed.map(Seed::as_i64),
            pinned_temperature: voice.temperature.map(Temperature::get),
            personality_prompt: personality,
        },
    )
    .await
    .map_err(|err| match &err {
        sqlx::Error::Database(db) if db.is_unique_violation() => {
            ServiceError::invalid("name", "This account already has a voice with that name.")
        }
        _ => err.into(),
    })?;
    Ok(id)
}

fn check_temperature(
    engine: EngineId,
    temperature: Option<Temperature>,
) -> Result<(), ServiceError> {
    if temperature.is_some() && !engine.accepts_temperature() {
        return Err(ServiceError::invalid(
            "temperature",
            format!(
                "The {engine} engine takes no temperature; only chatterbox and chatterbox_turbo do."
            ),
        ));
    }
    Ok(())
}

/// A trimmed prompt, `None` when empty.
fn personality(prompt: Option<&str>) -> Result<Option<&str>, ServiceError> {
    let prompt = prompt.map(str::trim).filter(|p| !p.is_empty());
    if prompt.is_some_and(|p| p.chars().count() > MAX_PERSONALITY_CHARS) {
        return Err(ServiceError::invalid(
            "personality",
            format!("A personality prompt has at most {MAX_PERSONALITY_CHARS} characters."),
        ));
    }
    Ok(prompt)
}

/// Sets (or with `None`, clears) the voice's pinned seed, temperature and personality prompt.
/// `Ok(false)` when the account has no such voice.
pub async fn set_pins(
    pool: &PgPool,
    account_id: &str,
    voice_id: &str,
    seed: Option<Seed>,
    temperature: Option<Temperature>,
    prompt: Option<&str>,
) -> Result<bool, ServiceError> {
    let Some(voice) = store::voices::find(pool, account_id, voice_id).await? else {
        return Ok(false);
    };
    let engine: EngineId = voice.engine.parse().map_err(ServiceError::internal)?;
    check_temperature(engine, temperature)?;
    let prompt = personality(prompt)?;
    Ok(store::voices::set_pins(
        pool,
        account_id,
        &voice.id,
        seed.map(Seed::as_i64),
        temperature.map(Temperature::get),
        prompt,
    )
    .await?)
}
