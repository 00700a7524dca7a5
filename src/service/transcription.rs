//! Transcription, shared by every door: a place in the recogniser's bounded queue is taken
//! FIRST (before the upload is read, parsed or decoded), then the audio is decoded off the async
//! workers, recognised on a recogniser thread, and stored as a capture in one transaction with
//! the request's idempotency record.

use std::time::Duration;

use sqlx::PgPool;

use super::core::Core;
use super::error::{ErrorCode, ServiceError};
use super::idempotency::{self, Claim, KeyUse, Keyed, Outcome, Ran, failpoint};
use super::principal::Principal;
use crate::audio::{self, Base64Error, DecodeError, DecodeLimits};
use crate::domain::{RecognitionOptions, Segment, Task, Timestamps, Word, new_id};
use crate::store;
use crate::worker::asr::{AsrService, Failure, NoTicket, Ticket};

/// Longest clip accepted (DECISIONS: 15 minutes).
pub const MAX_DURATION: Duration = Duration::from_secs(15 * 60);

/// A transcription's places (the recogniser's, the account's, the free use's), taken before the
/// upload is read and handed to the recogniser thread with the job, which gives them back when
/// it is done. Dropped before that (a refusal, a client that went away), it gives them back.
pub struct Place {
    pub(super) ticket: Ticket,
    /// The app's free use: its free transcription minutes left when the place was taken (one
    /// transcription of such an account at a time, so nothing else spends them meanwhile).
    /// A live session caps its audio at it (`service::live`).
    pub(super) free_left_ms: Option<i64>,
}

/// Seconds an account over its cap of transcriptions in flight is told to wait.
const ACCOUNT_RETRY_AFTER_SECS: u64 = 5;

/// Takes a place for `principal`'s account, before any of the upload is looked at: 429
/// `rate_limit_exceeded` with `Retry-After` when the account already has
/// `max_transcriptions_per_account` transcriptions in flight in this process (the app's free
/// use: one), 503 with `Retry-After` while the recogniser's queue is full (or no model is
/// installed, or the places the free use may hold are taken), and for the app's free use 429
/// `quota_exhausted` when this month's free transcription minutes are used up. Every door
/// (`POST /v1/transcriptions`, OpenAI's dialect, the agent's `transcribe`, the playground)
/// takes its place here.
pub async fn take_place(core: &Core, principal: &Principal) -> Result<Place, ServiceError> {
    super::operations::Operation::Transcribe.check(principal)?;
    let asr = &core.asr;
    if !asr.is_installed() {
        tracing::error!("transcription requested but no Whisper model is installed");
        return Err(ServiceError::unavailable(60));
    }
    let free = principal.on_free_allowance();
    let ticket = asr
        .try_ticket(&principal.account_id, free)
        .map_err(|refused| match refused {
            NoTicket::Account { max } => {
                metrics::counter!("voiced_transcription_account_refusals_total").increment(1);
                ServiceError::new(
                    ErrorCode::RateLimitExceeded,
                    format!(
                        "This account already has {max} transcription{} in progress, the most it may \
                         have at once; retry when one has finished.",
                        if max == 1 { "" } else { "s" }
                    ),
                )
                .with_retry_after(ACCOUNT_RETRY_AFTER_SECS)
            }
            NoTicket::Busy => {
                metrics::counter!("voiced_recogniser_refusals_total").increment(1);
                ServiceError::new(
                    ErrorCode::ServiceUnavailable,
                    "The recogniser is busy with other transcriptions; retry shortly.",
                )
                .with_retry_after(2)
            }
        })?;
    let free_left_ms = if free {
        Some(free_minutes_left(&core.pool, principal).await?)
    } else {
        None
    };
    Ok(Place {
        ticket,
        free_left_ms,
    })
}

/// The app's free transcription allowance left this month, in milliseconds of audio: what the
/// account transcribed on it this month (the transcription ledger, deleted captures included)
/// counts against it. Used up: 429 `quota_exhausted`.
async fn free_minutes_left(pool: &PgPool, principal: &Principal) -> Result<i64, ServiceError> {
    let month = store::usage::month_of(chrono::Utc::now());
    let used = store::usage::free_transcribed_ms(pool, &principal.account_id, month).await?;
    let left = principal.free_transcription_ms() - used;
    if left <= 0 {
        return Err(free_minutes_used_up());
    }
    Ok(left)
}

/// 429 `quota_exhausted`: this month's free transcription minutes are used up. The refusal of a
/// transcription's start, and the reason a live session of the app's free use ends.
pub fn free_minutes_used_up() -> ServiceError {
    ServiceError::new(
        ErrorCode::QuotaExhausted,
        "This month's free transcription minutes in the playground are used up; they renew on the 1st (UTC), or subscribe to a plan for more and for the API.",
    )
    .with_settings(super::SettingsPage::Billing)
}

/// The `audio` field's base64 → file bytes. CPU work: call it off the async workers.
pub fn decode_base64(audio_b64: &str, param: &str) -> Result<Vec<u8>, ServiceError> {
    if audio_b64.trim().is_empty() {
        return Err(ServiceError::invalid(param, "audio must not be empty"));
    }
    audio::decode_base64_audio(audio_b64, audio::MAX_AUDIO_BYTES).map_err(|e| match e {
        Base64Error::TooLarge { .. } => ServiceError::new(
            ErrorCode::PayloadTooLarge,
            "audio is larger than 25 MiB once decoded.",
        )
        .with_param(param),
        Base64Error::Invalid(_) => {
            ServiceError::invalid(param, "audio must be base64 (standard alphabet)")
        }
    })
}

/// What a transcription created. (Records written before issue 25 lack the fields with
/// defaults: they were transcriptions without timestamps.)
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Transcribed {
    pub capture_id: String,
    /// The transcript (English when `task` is translate).
    pub text: String,
    /// ISO 639-1 code of the language spoken.
    pub language: String,
    pub duration_ms: i64,
    #[serde(default)]
    pub task: Task,
    #[serde(default)]
    pub timestamps: Timestamps,
    /// Seconds of audio.
    #[serde(default)]
    pub duration: f64,
    /// The segments, when timestamps were asked for (empty otherwise).
    #[serde(default)]
    pub segments: Vec<Segment>,
    /// The words, when word timestamps were asked for (empty otherwise).
    #[serde(default)]
    pub words: Vec<Word>,
}

/// Segments (and words) as they are decoded, for a streamed answer.
pub type Progress = tokio::sync::mpsc::UnboundedSender<(Segment, Vec<Word>)>;

/// An upload to transcribe.
pub struct Upload<'a> {
    /// The file's bytes (wav, mp3, flac, ogg, webm).
    pub audio: Vec<u8>,
    /// The capture's `source`: `api`, `app` or `agent` (OpenAI's dialect stores `api`, DECISIONS).
    pub source: &'a str,
    /// The request field errors about the audio name.
    pub param: &'a str,
    pub options: RecognitionOptions,
    pub progress: Option<Progress>,
}

/// The fingerprint of an upload's audio (its text as sent: base64, a URL, or the file's bytes)
/// and its options. Options at their defaults add nothing, so a key answers for the same clip
/// through every door that sends none.
pub fn fingerprint(operation: KeyUse, audio: &[u8], options: &RecognitionOptions) -> Vec<u8> {
    if *options == RecognitionOptions::default() {
        return idempotency::fingerprint(operation.name(), &[audio]);
    }
    let tag = format!(
        "language={:?};task={};prompt={:?};temperature={};timestamps={}",
        options.language,
        options.task.as_str(),
        options.prompt,
        options.temperature,
        options.timestamps.as_str()
    );
    idempotency::fingerprint(operation.name(), &[audio, tag.as_bytes()])
}

/// What [`run`] did.
pub struct Done {
    pub transcribed: Transcribed,
    /// The request's `Idempotency-Key` had already answered for the same request: this is
    /// that request's transcription (nothing was transcribed again).
    pub replayed: bool,
}

/// An upload whose bytes are still to be obtained (decoded, or fetched).
pub struct Incoming<'a, F> {
    pub audio: F,
    /// The capture's `source`: `api`, `app` or `agent` (OpenAI's dialect stores `api`, DECISIONS).
    pub source: &'a str,
    /// The request field errors about the audio name.
    pub param: &'a str,
    /// Language, task, prompt, temperature and timestamps (already checked).
    pub options: RecognitionOptions,
    /// Where segments go as they are decoded (a streamed answer); a replay sends none.
    pub progress: Option<Progress>,
}

/// A transcription request from any door (`POST /v1/transcriptions`, the agent's `transcribe`):
/// the idempotency key is claimed, then the audio obtained (`incoming.audio` runs only for a
/// fresh request, so a replay never fetches or decodes again), recognised and stored with the
/// key's outcome; a failure releases the key.
pub async fn run<F>(
    core: &Core,
    principal: &Principal,
    place: Place,
    incoming: Incoming<'_, F>,
    keyed: Keyed,
) -> Result<Done, ServiceError>
where
    F: Future<Output = Result<Vec<u8>, ServiceError>>,
{
    let ran = idempotency::run(core, principal, keyed, |claim| async move {
        let upload = Upload {
            audio: incoming.audio.await?,
            source: incoming.source,
            param: incoming.param,
            options: incoming.options,
            progress: incoming.progress,
        };
        transcribe(
            &core.pool,
            &core.asr,
            principal,
            place,
            upload,
            claim.as_ref(),
        )
        .await
    })
    .await?;
    match ran {
        Ran::Fresh(transcribed) => Ok(Done {
            transcribed,
            replayed: false,
        }),
        Ran::Replayed(Outcome::Transcribed(transcribed)) => Ok(Done {
            transcribed,
            replayed: true,
        }),
        Ran::Replayed(other) => Err(ServiceError::internal(format!(
            "transcription key holds another outcome: {other:?}"
        ))),
    }
}

/// Decodes the upload, recognises it and stores the capture, with the idempotency record in the
/// same transaction when there is a claim.
pub async fn transcribe(
    pool: &PgPool,
    asr: &AsrService,
    principal: &Principal,
    place: Place,
    upload: Upload<'_>,
    claim: Option<&Claim>,
) -> Result<Transcribed, ServiceError> {
    let Upload {
        audio,
        source,
        param,
        options,
        progress,
    } = upload;
    let param_owned = param.to_owned();
    let decoded = tokio::task::spawn_blocking(move || decode_audio(audio, &param_owned))
        .await
        .map_err(ServiceError::internal)??;
    // The app's free use: the clip must fit what was left when the place was taken.
    if let Some(left) = place.free_left_ms
        && i64::try_from(decoded.duration_ms).unwrap_or(i64::MAX) > left
    {
        return Err(ServiceError::new(
                ErrorCode::QuotaExhausted,
                format!(
                    "This clip is {:.0} s long and {:.0} s of this month's free transcription minutes in the playground are left; send a shorter clip, or subscribe to a plan for more and for the API.",
                    decoded.duration_ms as f64 / 1000.0,
                    left as f64 / 1000.0
                ),
            )
            .with_settings(super::SettingsPage::Billing));
    }
    let (task, timestamps) = (options.task, options.timestamps);
    let transcript = asr
        .recognize(decoded.samples_16k, options, progress, Some(place.ticket))
        .await
        .map_err(|e| match e {
            Failure::Refused { param, message } => ServiceError::invalid(param, message),
            Failure::Failed(e) => ServiceError::internal(format!("recogniser: {e}")),
            // Nobody is waiting for this answer any more.
            Failure::Stopped => ServiceError::internal("recogniser: its caller went away"),
        })?;
    let asked = timestamps != Timestamps::None;
    let done = Transcribed {
        capture_id: new_id("cap"),
        text: transcript.text,
        language: transcript.language,
        duration_ms: i64::try_from(decoded.duration_ms).unwrap_or(i64::MAX),
        task,
        timestamps,
        duration: decoded.duration_ms as f64 / 1000.0,
        segments: if asked {
            transcript.segments
        } else {
            Vec::new()
        },
        words: transcript.words,
    };
    store_capture(pool, principal, source, &done, claim).await?;
    failpoint("after_capture_commit");
    Ok(done)
}

/// Stores `done` as a capture of `principal`'s account (with its transcription ledger entry, its
/// `capture.created` webhook and, when there is a claim, the idempotency record) in one
/// transaction. A deleted account keeps nothing: 401 `invalid_api_key`.
pub(super) async fn store_capture(
    pool: &PgPool,
    principal: &Principal,
    source: &str,
    done: &Transcribed,
    claim: Option<&Claim>,
) -> Result<(), ServiceError> {
    let (task, timestamps) = (done.task, done.timestamps);
    let asked = timestamps != Timestamps::None;
    let refined = crate::engines::whisper::refine(&done.text);
    let (segments, words) = if asked {
        let segments = serde_json::to_value(&done.segments).map_err(ServiceError::internal)?;
        let words = if timestamps.words() {
            Some(serde_json::to_value(&done.words).map_err(ServiceError::internal)?)
        } else {
            None
        };
        (Some(segments), words)
    } else {
        (None, None)
    };
    let mut tx = pool.begin().await?;
    let stored = store::captures::insert(
        &mut *tx,
        store::captures::NewCapture {
            id: &done.capture_id,
            account_id: &principal.account_id,
            api_key_id: principal.api_key_id(),
            source,
            language: &done.language,
            duration_ms: done.duration_ms,
            transcript_raw: &done.text,
            transcript_refined: &refined,
            task: task.as_str(),
            timestamps: timestamps.as_str(),
            segments,
            words,
        },
    )
    .await?;
    if stored.is_none() {
        // The account was deleted while this ran: nothing of it is kept.
        return Err(ServiceError::invalid_api_key());
    }
    store::usage::record_transcription(
        &mut tx,
        &principal.account_id,
        &done.capture_id,
        done.duration_ms,
        principal.on_free_allowance(),
    )
    .await?;
    // The `capture.created` webhooks go out of the outbox written with the capture.
    store::webhooks::account_event(
        &mut tx,
        &principal.account_id,
        store::webhooks::CAPTURE_CREATED,
        &done.capture_id,
    )
    .await?;
    if let Some(claim) = claim {
        claim
            .complete_in(&mut tx, &Outcome::Transcribed(done.clone()))
            .await?;
    }
    tx.commit().await?;
    Ok(())
}

fn decode_audio(bytes: Vec<u8>, param: &str) -> Result<audio::DecodedAudio, ServiceError> {
    let limits = DecodeLimits {
        max_duration: MAX_DURATION,
        ..DecodeLimits::default()
    };
    audio::decode_for_asr(bytes, &limits).map_err(|e| match e {
        DecodeError::TooLong { max_seconds } => ServiceError::invalid(
            param,
            format!("audio is longer than {} minutes", max_seconds / 60),
        ),
        DecodeError::Undecodable(reason) => {
            tracing::info!(%reason, "undecodable upload");
            ServiceError::invalid(
                param,
                "audio could not be decoded: send base64 of a wav, mp3, flac, ogg (vorbis or opus) or webm/opus clip",
            )
        }
    })
}

/// The name of the recogniser's model (`whisper_model`), as the file dialect reports it.
pub fn model_name(core: &Core) -> String {
    core.asr.model_name()
}
