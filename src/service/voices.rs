//! Preset voice profiles: adding one (`POST /v1/voices`, the console and `voiced admin voice
//! create`) and setting its pins and personality.

use super::core::Core;
use super::error::{ErrorCode, ServiceError};
use super::idempotency::{self, Claim, Keyed, Outcome, Ran};
use super::principal::Principal;
use crate::domain::{EngineId, Seed, Temperature, new_id};
use crate::service::operations::Operation;
use crate::store;

/// Longest personality prompt.
pub const MAX_PERSONALITY_CHARS: usize = 2000;

/// What a new preset voice is made of, unvalidated.
pub struct NewPresetVoice<'a> {
    pub name: &'a str,
    pub description: &'a str,
    /// ISO 639-1, optionally with a region (`en-gb`); empty: the preset's own language.
    pub language: &'a str,
    pub engine: EngineId,
    pub preset: &'a str,
    pub seed: Option<Seed>,
    pub temperature: Option<Temperature>,
    pub personality: Option<&'a str>,
}

/// Longest voice description.
pub const MAX_DESCRIPTION_CHARS: usize = 500;

/// Whether `language` is ISO 639-1, optionally with a two-letter region: `en`, `en-gb`, `pt-br`.
pub fn valid_language(language: &str) -> bool {
    let mut parts = language.split('-');
    let two = |p: Option<&str>| {
        p.is_some_and(|p| p.len() == 2 && p.bytes().all(|b| b.is_ascii_lowercase()))
    };
    two(parts.next())
        && match parts.next() {
            None => true,
            region => two(region) && parts.next().is_none(),
        }
}

/// Validates and adds a preset voice to the account; returns the stored profile. The engine
/// must be installed here and offer the preset; a duplicate name is 409 `conflict` naming
/// `name`. With a `claim`, the profile is stored as the key's outcome in the transaction that
/// adds the voice.
pub async fn create_preset(
    core: &Core,
    account_id: &str,
    voice: NewPresetVoice<'_>,
    claim: Option<&Claim>,
) -> Result<store::voices::VoiceRow, ServiceError> {
    let (pool, registry) = (&core.pool, &*core.engines);
    let name = check_name(voice.name)?;
    let description = check_description(voice.description)?;
    let language = check_language(voice.language)?;
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
    let Some(preset) = registry
        .presets()
        .into_iter()
        .find(|(id, _)| *id == voice.engine)
        .and_then(|(_, presets)| presets.into_iter().find(|p| p.name == voice.preset))
    else {
        return Err(ServiceError::invalid(
            "preset",
            format!(
                "The {} engine has no preset {:?}; GET /v1/voices/presets lists them.",
                voice.engine, voice.preset
            ),
        ));
    };
    let language = if language.is_empty() {
        preset.language.clone()
    } else {
        language
    };
    let id = new_id("voice");
    let mut tx = pool.begin().await?;
    store::voices::insert_preset(
        &mut *tx,
        store::voices::NewVoice {
            id: &id,
            account_id,
            name,
            description,
            language: &language,
            engine: voice.engine.as_str(),
            preset: voice.preset,
            pinned_seed: voice.seed.map(Seed::as_i64),
            pinned_temperature: voice.temperature.map(Temperature::get),
            personality_prompt: personality,
        },
    )
    .await
    .map_err(duplicate_name)?;
    let row = store::voices::find(&mut *tx, account_id, &id)
        .await?
        .ok_or_else(|| ServiceError::internal("the voice just added is not there"))?;
    if let Some(claim) = claim {
        claim
            .complete_in(&mut tx, &Outcome::VoiceCreated(Box::new(row.clone())))
            .await?;
    }
    tx.commit().await?;
    Ok(row)
}

/// A preset voice added by a request that may carry an `Idempotency-Key` (`POST /v1/voices`):
/// the profile, and whether it is a replay (the profile as the key's first request added it).
pub async fn add_preset(
    core: &Core,
    principal: &Principal,
    voice: NewPresetVoice<'_>,
    keyed: Keyed,
) -> Result<(store::voices::VoiceRow, bool), ServiceError> {
    Operation::CreateVoice.check(principal)?;
    let ran = idempotency::run(core, principal, keyed, |claim| async move {
        create_preset(core, &principal.account_id, voice, claim.as_ref()).await
    })
    .await?;
    match ran {
        Ran::Fresh(row) => Ok((row, false)),
        Ran::Replayed(Outcome::VoiceCreated(row)) => Ok((*row, true)),
        Ran::Replayed(other) => Err(ServiceError::internal(format!(
            "voice key holds another outcome: {other:?}"
        ))),
    }
}

/// The account's voices as the studio shows them: each profile, its personality prompt and,
/// for a cloned voice, the state of its print.
pub struct Studio {
    pub voices: Vec<store::voices::VoiceRow>,
    pub personalities: Vec<store::voices::Personality>,
    /// `(voice id, state)` of each cloned voice's print.
    pub prints: Vec<(String, store::prints::PrintState)>,
}

pub async fn studio(core: &Core, account_id: &str) -> Result<Studio, ServiceError> {
    let pool = &core.pool;
    Ok(Studio {
        voices: store::voices::list(pool, account_id).await?,
        personalities: store::voices::personalities(pool, account_id).await?,
        prints: store::prints::states(pool, account_id).await?,
    })
}

pub(super) fn check_name(name: &str) -> Result<&str, ServiceError> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 100 {
        return Err(ServiceError::invalid(
            "name",
            "A voice name has 1 to 100 characters.",
        ));
    }
    if name.chars().any(char::is_control) {
        return Err(ServiceError::invalid(
            "name",
            "A voice name has no control characters.",
        ));
    }
    Ok(name)
}

pub(super) fn check_description(description: &str) -> Result<&str, ServiceError> {
    let description = description.trim();
    if description.contains('\0') {
        return Err(ServiceError::invalid(
            "description",
            "A description has no NUL characters.",
        ));
    }
    if description.chars().count() > MAX_DESCRIPTION_CHARS {
        return Err(ServiceError::invalid(
            "description",
            format!("A description has at most {MAX_DESCRIPTION_CHARS} characters."),
        ));
    }
    Ok(description)
}

/// Lower case; empty when none was given.
pub(super) fn check_language(language: &str) -> Result<String, ServiceError> {
    let language = language.trim().to_ascii_lowercase();
    if !language.is_empty() && !valid_language(&language) {
        return Err(ServiceError::invalid(
            "language",
            "The language is an ISO 639-1 code such as en, optionally with a region: en-gb.",
        ));
    }
    Ok(language)
}

/// A duplicate voice name is 409 `conflict` naming `name`.
pub(super) fn duplicate_name(err: sqlx::Error) -> ServiceError {
    match &err {
        sqlx::Error::Database(db) if db.is_unique_violation() => ServiceError::new(
            ErrorCode::Conflict,
            "This account already has a voice with that name.",
        )
        .with_param("name"),
        _ => err.into(),
    }
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
    core: &Core,
    account_id: &str,
    voice_id: &str,
    seed: Option<Seed>,
    temperature: Option<Temperature>,
    prompt: Option<&str>,
) -> Result<bool, ServiceError> {
    let pool = &core.pool;
    let Some(voice) = store::voices::find(pool, account_id, voice_id).await? else {
        return Ok(false);
    };
    let engine = voice.engine;
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

/// The presets of each installed engine (no model is loaded).
pub fn presets(core: &Core) -> Vec<(EngineId, Vec<crate::engines::Preset>)> {
    core.engines.presets()
}

/// The engines installed here that can clone a voice.
pub fn cloners(core: &Core) -> Vec<EngineId> {
    EngineId::ALL
        .into_iter()
        .filter(|e| e.can_clone() && core.engines.is_installed(*e))
        .collect()
}

/// The names of the account's voice profiles (the console's voice menu).
pub async fn names(core: &Core, account_id: &str) -> Result<Vec<String>, ServiceError> {
    Ok(store::voices::list(&core.pool, account_id)
        .await?
        .into_iter()
        .map(|v| v.name)
        .collect())
}
