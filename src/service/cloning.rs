//! Cloned voices: a profile made from the account's own reference recording. The console's
//! upload form and `voiced admin voice clone` come through here; the API never clones (spec:
//! `voice:generate` "cannot clone a real person's voice").
//!
//! Cloning is a plan feature (`cloning`) and each account has at most
//! `max_cloned_voices_per_account` cloned voices, and makes at most
//! `max_clones_per_account_per_month` clones a calendar month (UTC), deleted ones included
//! ([`admit`], [`CloneLimits`]): every clone costs a voice-print job on a generation worker,
//! and deleting a voice frees a place under the first cap but not under the second, so
//! deleting and cloning again cannot churn that work without bound.
//!
//! The request is checked first ([`check`]: name, engine, language, and the reference audio
//! decoded and checked — 5 to 30 s, not silent, not clipped), then stored in one transaction
//! ([`store`]): the profile (`voice_type = "cloned"`, `sample_count` = clips), the clip as
//! uploaded, and the voice print — computed already by the caller where the engine runs, or
//! left as a job for a generation worker (the voice's generations wait for it). Nothing that
//! was accepted is lost: the job is a row, claimed with a lease like a generation.

use sqlx::PgPool;

use super::error::{ErrorCode, ServiceError};
use super::voices::{check_description, check_language, check_name, duplicate_name};
use crate::domain::{EngineId, Feature, Plan, new_id};
use crate::engines::reference;
use crate::engines::registry::EngineRegistry;
use crate::store;
use crate::store::voices::VoiceRow;

/// Longest transcript of a reference clip.
pub const MAX_TRANSCRIPT_CHARS: usize = 2000;

/// What a clone request is made of, unvalidated.
pub struct NewClone<'a> {
    pub name: &'a str,
    pub description: &'a str,
    /// ISO 639-1, optionally with a region; empty: `en`.
    pub language: &'a str,
    pub engine: EngineId,
    /// The reference clip as uploaded (any format voiced's decoder reads).
    pub audio: &'a [u8],
    /// What is said in the clip (engines that use one; optional).
    pub transcript: Option<&'a str>,
}

/// A clone request that passed [`check`].
#[derive(Debug, Clone)]
pub struct CheckedClone {
    pub name: String,
    pub description: String,
    pub language: String,
    pub engine: EngineId,
    pub transcript: Option<String>,
    pub duration_ms: i32,
}

/// Validates a clone request and decodes and checks its reference audio (CPU work: run it off
/// the async threads). 400 `invalid_request` naming the field at fault.
pub fn check(
    registry: &EngineRegistry,
    clone: &NewClone<'_>,
) -> Result<CheckedClone, ServiceError> {
    let name = check_name(clone.name)?.to_owned();
    let description = check_description(clone.description)?.to_owned();
    let language = match check_language(clone.language)? {
        language if language.is_empty() => "en".to_owned(),
        language => language,
    };
    let engine = clone.engine;
    if !engine.can_clone() {
        let able: Vec<&str> = EngineId::ALL
            .into_iter()
            .filter(|e| e.can_clone())
            .map(EngineId::as_str)
            .collect();
        return Err(ServiceError::invalid(
            "engine",
            format!(
                "The {engine} engine cannot clone a voice; engines that can: {}.",
                able.join(", ")
            ),
        ));
    }
    if !EngineRegistry::is_available(engine) || !registry.is_installed(engine) {
        return Err(ServiceError::invalid(
            "engine",
            format!("The {engine} engine is not installed on this deployment."),
        ));
    }
    registry
        .readable(engine, &language, "")
        .map_err(|reason| ServiceError::invalid("language", reason))?;
    let transcript = clone
        .transcript
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_owned);
    if let Some(t) = &transcript {
        if t.contains('\0') {
            return Err(ServiceError::invalid(
                "transcript",
                "A transcript has no NUL characters.",
            ));
        }
        if t.chars().count() > MAX_TRANSCRIPT_CHARS {
            return Err(ServiceError::invalid(
                "transcript",
                format!("A transcript has at most {MAX_TRANSCRIPT_CHARS} characters."),
            ));
        }
    }
    if clone.audio.is_empty() {
        return Err(ServiceError::invalid(
            "audio",
            "Choose a reference recording (5 to 30 seconds of the speaker's voice).",
        ));
    }
    let duration_ms = reference::check(clone.audio)
        .map_err(|e| ServiceError::invalid("audio", format!("{}.", capitalized(&e.to_string()))))?;
    Ok(CheckedClone {
        name,
        description,
        language,
        engine,
        transcript,
        duration_ms: i32::try_from(duration_ms).unwrap_or(i32::MAX),
    })
}

/// The two caps of cloning (settings `max_cloned_voices_per_account` and
/// `max_clones_per_account_per_month`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CloneLimits {
    /// Cloned voices one account may have (live ones).
    pub max_voices: u32,
    /// Clones one account may make per calendar month (UTC), deleted ones included.
    pub max_per_month: u32,
}

impl Default for CloneLimits {
    fn default() -> Self {
        Self {
            max_voices: 20,
            max_per_month: 20,
        }
    }
}

/// Whether the account may clone one more voice: it needs a plan (403 `pro_plan_required`)
/// that includes cloning (403 `feature_not_enabled`), fewer than `limits.max_voices` cloned
/// voices (409 `conflict`), and fewer than `limits.max_per_month` clones made this calendar
/// month, deleted ones included (429 `rate_limit_exceeded`, `Retry-After` until the month
/// turns). Cheap: doors call it before they decode the recording or compute a print, and
/// [`store`] checks it again in its transaction, under the account's lock, so concurrent
/// clones cannot pass a cap together.
pub async fn admit(
    db: &mut sqlx::PgConnection,
    account_id: &str,
    limits: CloneLimits,
) -> Result<(), ServiceError> {
    let max_per_account = limits.max_voices;
    let month_start = store::usage::month_of(chrono::Utc::now())
        .and_hms_opt(0, 0, 0)
        .expect("midnight exists")
        .and_utc();
    let standing = store::voices::cloning_standing(&mut *db, account_id, month_start)
        .await?
        .ok_or_else(|| ServiceError::internal("cloning for an account that does not exist"))?;
    let plan: Plan = standing.plan.parse().map_err(ServiceError::internal)?;
    if !plan.allows_api() {
        return Err(ServiceError::pro_plan_required());
    }
    if !standing
        .features
        .iter()
        .any(|f| f == Feature::Cloning.as_str())
    {
        return Err(ServiceError::feature_not_enabled(Feature::Cloning));
    }
    if standing.cloned >= i64::from(max_per_account) {
        return Err(ServiceError::new(
            ErrorCode::Conflict,
            format!(
                "This account has {} cloned voices, the most this deployment allows ({max_per_account}); no other voice can be cloned.",
                standing.cloned
            ),
        ));
    }
    if standing.cloned_this_month >= i64::from(limits.max_per_month) {
        let now = chrono::Utc::now();
        let next_month = store::usage::month_of(now)
            .checked_add_months(chrono::Months::new(1))
            .and_then(|d| d.and_hms_opt(0, 0, 0))
            .map(|d| d.and_utc());
        let wait = next_month.map_or(3600, |next| {
            u64::try_from((next - now).num_seconds()).unwrap_or(1)
        });
        return Err(ServiceError::new(
            ErrorCode::RateLimitExceeded,
            format!(
                "This account has made {} voice clones this month (UTC), deleted ones included, \
                 the most this deployment allows ({}); cloning is possible again next month.",
                standing.cloned_this_month, limits.max_per_month
            ),
        )
        .with_retry_after(wait));
    }
    Ok(())
}

/// Stores a checked clone for the account, with its `print` when the caller computed it, or a
/// print job for the workers, after [`admit`] (again, under the account's lock). A duplicate
/// name is 409 `conflict` naming `name`.
pub async fn store(
    pool: &PgPool,
    account_id: &str,
    limits: CloneLimits,
    clone: &CheckedClone,
    audio: &[u8],
    print: Option<&[u8]>,
) -> Result<VoiceRow, ServiceError> {
    let id = new_id("voice");
    let mut tx = pool.begin().await?;
    admit(&mut tx, account_id, limits).await?;
    store::voices::insert_cloned(
        &mut *tx,
        store::voices::NewClonedVoice {
            id: &id,
            account_id,
            name: &clone.name,
            description: &clone.description,
            language: &clone.language,
            engine: clone.engine.as_str(),
            sample_count: 1,
        },
    )
    .await
    .map_err(duplicate_name)?;
    store::prints::insert_sample(
        &mut tx,
        &id,
        0,
        audio,
        clone.duration_ms,
        clone.transcript.as_deref(),
    )
    .await?;
    store::prints::insert_print(&mut tx, &id, clone.engine.as_str(), print).await?;
    let row = store::voices::find(&mut *tx, account_id, &id)
        .await?
        .ok_or_else(|| ServiceError::internal("the voice just cloned is not there"))?;
    tx.commit().await?;
    tracing::info!(voice_id = %id, engine = %clone.engine, computed = print.is_some(), "voice cloned");
    Ok(row)
}

fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// A clone request whose fields are owned (its checks run on the blocking pool).
pub struct CloneRequest {
    pub name: String,
    pub description: String,
    pub language: String,
    pub engine: EngineId,
    pub audio: Vec<u8>,
    pub transcript: Option<String>,
}

/// Clones a voice for `account_id` (the console's studio): the plan, the feature and the
/// account's cap first, then the request and its recording checked off the async workers, then
/// the voice stored; its print is computed by a worker (the voice shows "being computed").
pub async fn clone_voice(
    core: &crate::service::Core,
    account_id: &str,
    limits: CloneLimits,
    request: CloneRequest,
) -> Result<VoiceRow, ServiceError> {
    // Before the recording is decoded.
    admit(&mut *core.pool.acquire().await?, account_id, limits).await?;
    let registry = core.engines.clone();
    let (checked, request) = tokio::task::spawn_blocking(move || {
        let checked = check(
            &registry,
            &NewClone {
                name: &request.name,
                description: &request.description,
                language: &request.language,
                engine: request.engine,
                audio: &request.audio,
                transcript: request.transcript.as_deref(),
            },
        );
        (checked, request)
    })
    .await
    .map_err(ServiceError::internal)?;
    store(
        &core.pool,
        account_id,
        limits,
        &checked?,
        &request.audio,
        None,
    )
    .await
}

/// One of the account's upload places ([`crate::service::core::MAX_UPLOADS_PER_ACCOUNT`]), or
/// `None` when it has them all; given back when dropped.
pub fn upload_slot(
    core: &crate::service::Core,
    account_id: &str,
) -> Option<crate::service::core::Slot> {
    core.uploads.take(account_id)
}

/// The console's clone upload, admitted before its recording is read: one of the account's
/// [`super::core::MAX_UPLOADS_PER_ACCOUNT`] uploads in flight (429 `rate_limit_exceeded`
/// beyond), then the plan, the feature and the account's caps ([`admit`]). Hold the slot until
/// the recording has been read and checked.
pub async fn admit_upload(
    core: &crate::service::Core,
    account_id: &str,
    limits: CloneLimits,
) -> Result<super::core::Slot, ServiceError> {
    let slot = upload_slot(core, account_id).ok_or_else(|| {
        ServiceError::new(
            ErrorCode::RateLimitExceeded,
            format!(
                "This account already has {} uploads in progress, the most it may have at once; retry when one has finished.",
                super::core::MAX_UPLOADS_PER_ACCOUNT
            ),
        )
        .with_retry_after(5)
    })?;
    admit(&mut *core.pool.acquire().await?, account_id, limits).await?;
    Ok(slot)
}

/// Clones a voice at once, in this process (`voiced admin voice clone`): the same admission
/// (plan, feature, the account's caps) before any engine is loaded, the same checks of the
/// request and its reference audio; then the engine is loaded here and the voice print computed,
/// and the voice is stored with it, so that it can speak as soon as this returns.
pub async fn clone_now(
    core: &crate::service::Core,
    account_id: &str,
    limits: CloneLimits,
    clone: NewClone<'_>,
) -> Result<VoiceRow, ServiceError> {
    admit(&mut *core.pool.acquire().await?, account_id, limits).await?;
    let checked = check(&core.engines, &clone)?;
    let registry = core.engines.clone();
    let (engine, audio, transcript, language) = (
        checked.engine,
        clone.audio.to_vec(),
        checked.transcript.clone(),
        checked.language.clone(),
    );
    let print = tokio::task::spawn_blocking(move || {
        let mut loaded = registry.load(engine).map_err(|e| {
            ServiceError::new(
                ErrorCode::ServiceUnavailable,
                format!("the {engine} engine cannot start here: {e}"),
            )
        })?;
        crate::worker::compute_print(loaded.as_mut(), &audio, transcript.as_deref(), &language)
            .map_err(|e| {
                ServiceError::new(
                    ErrorCode::InternalError,
                    format!("computing the voice print failed: {e}"),
                )
            })
    })
    .await
    .map_err(ServiceError::internal)??;
    store(
        &core.pool,
        account_id,
        limits,
        &checked,
        clone.audio,
        Some(&print),
    )
    .await
}
