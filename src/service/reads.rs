//! Reads of the account's voices, captures and generations, for every door (`GET /v1/voices`,
//! `/v1/captures`, `/v1/generations`, `/v1/generations/{id}`, the agent's `list_voices`, `list_captures`,
//! `get_generation`, `speak`'s result).
//!
//! A REST read holds a [`CredentialCheck`]: one statement confirms the key and reads, on the
//! read pool (docs/architecture.md). A door whose principal is already confirmed for this
//! request (the agent interface, the console's session) reads without one.

use crate::service::operations::Operation;
use sqlx::PgConnection;

use super::core::Core;
use super::error::{ErrorCode, ServiceError};
use super::principal::Principal;
use super::principal_cache::CredentialCheck;
use crate::domain::{CaptionFormat, GenerationStatus, Segment};
use crate::engines::text::timing::SpokenWord;
use crate::store;
use crate::store::captures::{CaptureDetail, CaptureRow};
use crate::store::generations::{GenerationRow, ListFilter};
use crate::store::keys::Checked;
use crate::store::voices::VoiceRow;

/// One page of the account's captures, newest first, and how many there are.
pub struct CapturePage {
    pub rows: Vec<CaptureRow>,
    pub total: i64,
}

/// The account's voice profiles.
pub async fn voices(
    core: &Core,
    principal: &Principal,
    check: Option<&CredentialCheck>,
) -> Result<Vec<VoiceRow>, ServiceError> {
    Operation::ListVoices.check(principal)?;
    let account = principal.account_id.as_str();
    read(
        core,
        check,
        store::voices::list(&core.pool, account),
        async |db, credential| store::voices::list_checked(db, credential, account).await,
    )
    .await
}

/// One read for a door. With a [`CredentialCheck`], the `checked` statement on the read pool
/// reads and confirms the credential at once (its answer stands only if the credential still
/// authorizes it); without one (the principal is confirmed for this request already), the
/// `unchecked` statement on the main pool. `unchecked` is not run when there is a check.
async fn read<T>(
    core: &Core,
    check: Option<&CredentialCheck>,
    unchecked: impl Future<Output = sqlx::Result<T>>,
    checked: impl AsyncFnOnce(&mut PgConnection, &[u8]) -> sqlx::Result<Checked<T>>,
) -> Result<T, ServiceError> {
    match check {
        None => Ok(unchecked.await?),
        Some(check) => read_checked(core, check, checked).await,
    }
}

/// The `checked` statement on the read pool, its answer confirmed by `check`.
async fn read_checked<T>(
    core: &Core,
    check: &CredentialCheck,
    checked: impl AsyncFnOnce(&mut PgConnection, &[u8]) -> sqlx::Result<Checked<T>>,
) -> Result<T, ServiceError> {
    let mut connection = core.reads.acquire().await?;
    let read = checked(connection.get(), check.credential()).await?;
    connection.finish();
    check.confirm(read)
}

/// [`read`] of one row of the principal's account: a row of another account reads as none,
/// and none is 404 `not_found`, so that another account's id and a missing one look alike.
async fn read_owned<T>(
    core: &Core,
    check: Option<&CredentialCheck>,
    unchecked: impl Future<Output = sqlx::Result<Option<T>>>,
    checked: impl AsyncFnOnce(&mut PgConnection, &[u8]) -> sqlx::Result<Checked<Option<T>>>,
) -> Result<T, ServiceError> {
    read(core, check, unchecked, checked)
        .await?
        .ok_or_else(ServiceError::not_found)
}

/// One page of the account's captures (`limit` and `offset` already within their bounds).
pub async fn captures(
    core: &Core,
    principal: &Principal,
    check: Option<&CredentialCheck>,
    limit: i64,
    offset: i64,
) -> Result<CapturePage, ServiceError> {
    Operation::ListCaptures.check(principal)?;
    let account = principal.account_id.as_str();
    let (rows, total) = read(
        core,
        check,
        store::captures::page(&core.pool, account, limit, offset),
        async |db, credential| {
            store::captures::page_checked(db, credential, account, limit, offset).await
        },
    )
    .await?;
    Ok(CapturePage { rows, total })
}

/// The account's capture `id` with its timings; another account's is 404 `not_found`, exactly
/// like a missing one.
pub async fn capture(
    core: &Core,
    principal: &Principal,
    check: Option<&CredentialCheck>,
    id: &str,
) -> Result<CaptureDetail, ServiceError> {
    Operation::GetCapture.check(principal)?;
    let account = principal.account_id.as_str();
    read_owned(
        core,
        check,
        store::captures::find(&core.pool, account, id),
        async |db, credential| store::captures::find_checked(db, credential, account, id).await,
    )
    .await
}

/// The captions of the account's capture `id`, from its stored segments: 409
/// `timestamps_unavailable` when it was made without timestamps.
pub async fn captions(
    core: &Core,
    principal: &Principal,
    check: Option<&CredentialCheck>,
    id: &str,
    format: CaptionFormat,
) -> Result<String, ServiceError> {
    Operation::GetCaptions.check(principal)?;
    let detail = capture(core, principal, check, id).await?;
    let Some(stored) = detail.segments else {
        return Err(ServiceError::new(
            ErrorCode::TimestampsUnavailable,
            format!(
                "Capture {id} was made without timestamps, so it has no captions; transcribe \
                 the clip again with \"timestamps\": \"segment\" (or \"word\")."
            ),
        ));
    };
    let segments: Vec<Segment> = serde_json::from_value(stored).map_err(ServiceError::internal)?;
    Ok(crate::domain::captions(&segments, format))
}

/// The account's generation `id`; another account's is 404 `not_found`, exactly like a missing
/// one.
pub async fn generation(
    core: &Core,
    principal: &Principal,
    check: Option<&CredentialCheck>,
    id: &str,
) -> Result<GenerationRow, ServiceError> {
    Operation::GetGeneration.check(principal)?;
    owned_generation(core, principal, check, id).await
}

/// The read of [`generation`] for the operations whose own requirement covers reading the
/// generation they act on (cancelling it, delivering the audio `speak` made).
pub(in crate::service) async fn owned_generation(
    core: &Core,
    principal: &Principal,
    check: Option<&CredentialCheck>,
    id: &str,
) -> Result<GenerationRow, ServiceError> {
    let account = principal.account_id.as_str();
    read_owned(
        core,
        check,
        store::generations::find(&core.pool, account, id),
        async |db, credential| store::generations::find_checked(db, credential, account, id).await,
    )
    .await
}

/// The most words in one caption cue of generated speech, and the most characters.
const CUE_WORDS: usize = 7;
const CUE_CHARS: usize = 42;
/// A silence this long between two words starts a new cue (seconds).
const CUE_GAP: f64 = 0.5;

/// The captions of the account's generation `id`, from its word timestamps: cues of up to seven
/// words and 42 characters, a new cue after a pause of half a second. 409
/// `timestamps_unavailable` when it was asked for without timestamps, or has not completed.
pub async fn generation_captions(
    core: &Core,
    principal: &Principal,
    check: Option<&CredentialCheck>,
    id: &str,
    format: CaptionFormat,
) -> Result<String, ServiceError> {
    Operation::GetGenerationCaptions.check(principal)?;
    let row = generation(core, principal, check, id).await?;
    let words: Vec<SpokenWord> = match (&row.words, row.status) {
        (Some(words), GenerationStatus::Completed) => {
            serde_json::from_value(words.clone()).map_err(ServiceError::internal)?
        }
        (_, GenerationStatus::Generating) => {
            return Err(ServiceError::new(
                ErrorCode::TimestampsUnavailable,
                format!(
                    "Generation {id} is still generating; its captions exist once it completes."
                ),
            ));
        }
        _ => {
            return Err(ServiceError::new(
                ErrorCode::TimestampsUnavailable,
                format!(
                    "Generation {id} has no word timestamps (it was asked for without \"timestamps\": \"word\", or did not complete), so it has no captions."
                ),
            ));
        }
    };
    let mut cues: Vec<Segment> = Vec::new();
    let mut count = 0;
    for word in words {
        let joins = cues.last().is_some_and(|cue| {
            count < CUE_WORDS
                && cue.text.chars().count() + 1 + word.text.chars().count() <= CUE_CHARS
                && word.start - cue.end <= CUE_GAP
        });
        match cues.last_mut() {
            Some(cue) if joins => {
                cue.text.push(' ');
                cue.text.push_str(&word.text);
                cue.end = word.end;
                count += 1;
            }
            _ => {
                cues.push(Segment {
                    id: cues.len() as u32,
                    seek: 0,
                    start: word.start,
                    end: word.end,
                    text: word.text,
                    tokens: Vec::new(),
                    temperature: 0.0,
                    avg_logprob: 0.0,
                    compression_ratio: 0.0,
                    no_speech_prob: 0.0,
                });
                count = 1;
            }
        }
    }
    Ok(crate::domain::captions(&cues, format))
}

/// The longest `voice` filter of a generation list: a profile's id or name (names are at most
/// 100 characters).
pub const VOICE_FILTER_MAX: usize = 200;

/// One page of the account's generations, newest first, and how many match the filter.
pub struct GenerationPage {
    pub rows: Vec<GenerationRow>,
    pub total: i64,
}

/// One page of the account's generations matching `filter` (`limit` and `offset` already
/// within their bounds). With a [`CredentialCheck`] the credential is confirmed first, in its
/// own statement on the read pool; the page is read in one snapshot on the main pool.
pub async fn generations(
    core: &Core,
    principal: &Principal,
    check: Option<&CredentialCheck>,
    filter: ListFilter<'_>,
    limit: i64,
    offset: i64,
) -> Result<GenerationPage, ServiceError> {
    Operation::ListGenerations.check(principal)?;
    if let Some(voice) = filter.voice
        && (voice.is_empty() || voice.len() > VOICE_FILTER_MAX)
    {
        return Err(ServiceError::invalid(
            "voice",
            format!("voice must be a voice profile's id or name, 1 to {VOICE_FILTER_MAX} bytes"),
        ));
    }
    if let Some(check) = check {
        confirm_credential(core, check).await?;
    }
    // No voice profile's id or name holds a NUL character (PostgreSQL text cannot): such a
    // filter matches nothing.
    if filter.voice.is_some_and(|v| v.contains('\0')) {
        return Ok(GenerationPage {
            rows: Vec::new(),
            total: 0,
        });
    }
    let (rows, total) =
        store::generations::list(&core.pool, &principal.account_id, filter, limit, offset).await?;
    Ok(GenerationPage { rows, total })
}

/// Confirms the request's credential when the read needs nothing else from the database
/// (`GET /v1/voices/presets`: one round trip).
pub async fn confirm_credential(core: &Core, check: &CredentialCheck) -> Result<(), ServiceError> {
    read_checked(core, check, async |db, credential| {
        store::keys::fingerprint(db, credential).await
    })
    .await
}
