//! Speech admission, shared by `POST /v1/speech`, `POST /v1/audio/speech` and every later door.
//!
//! A request is admitted (one transaction, under the account's admission lock) when:
//! - the account has fewer than `max_pending_per_account` generations queued or running
//!   (429 `rate_limit_exceeded` otherwise);
//! - its charged audio plus the estimated audio of its queued and running generations (the
//!   reservations) is below the plan's allowance (429 `quota_exhausted`);
//! - the same for the key against its ceiling (429 `key_ceiling_exceeded`).
//!
//! The new generation's own estimate need not fit: a key may overshoot by what is in flight at
//! the crossing (spec §8.4), but never by an unbounded queue. Completion replaces the estimate by
//! the measured charge in one transaction; failure or cancellation releases it.

use sqlx::PgPool;

use super::core::Core;
use super::error::{ErrorCode, ServiceError, SettingsPage};
use super::idempotency::{self, Claim, KeyUse, Keyed, Outcome, Ran, failpoint};
use super::principal::Principal;
use super::pronunciations;
use crate::audio::AudioFormat;
use crate::domain::{EngineId, Seed, SpeechText, Temperature, VoiceKind, new_id};
use crate::engines::registry::EngineRegistry;
use crate::engines::text::pronounce;
use crate::store;
use crate::store::voices::VoiceRow;

/// The admission settings (`max_pending_per_account`, `max_audio_per_request_secs`).
#[derive(Debug, Clone, Copy)]
pub struct AdmissionPolicy {
    pub max_pending_per_account: i64,
    /// The most audio one request may produce: a text whose estimate alone is longer is refused
    /// (400 `invalid_request` naming the text) before anything is queued.
    pub max_audio_per_request_ms: i64,
}

/// Names of the request fields errors point at (they differ between the two speech dialects).
#[derive(Debug, Clone, Copy)]
pub struct Fields {
    pub text: &'static str,
    pub voice: &'static str,
    pub temperature: &'static str,
    /// What chose the engine: the voice (`voice`, `voice_name`), or on `/v1/audio/speech` a
    /// `model` that names an engine.
    pub engine: &'static str,
}

/// A validated speech request, whichever door it came through.
pub struct SpeechOrder {
    pub text: SpeechText,
    pub voice: VoiceRow,
    /// The engine that renders it (the voice's default unless the request chose one).
    pub engine: EngineId,
    pub seed: Option<Seed>,
    pub temperature: Option<Temperature>,
    pub format: AudioFormat,
    /// Report when each word is said (`timestamps: "word"`).
    pub word_timestamps: bool,
}

/// An admitted generation.
#[derive(Debug, Clone)]
pub struct Admitted {
    pub id: String,
    pub voice_name: String,
    pub engine: EngineId,
    pub estimated_ms: i64,
}

/// How a door names the voice of a request.
#[derive(Debug, Clone, Copy)]
pub enum VoiceChoice<'a> {
    /// A profile's name only (`POST /v1/speech`'s `voice_name`).
    Name(&'a str),
    /// A profile's id or its name (the agent's `speak`).
    IdOrName(&'a str),
}

/// An asynchronous speech request, as its door parsed it.
pub struct SpeechRequest<'a> {
    pub text: SpeechText,
    pub voice: VoiceChoice<'a>,
    pub seed: Option<Seed>,
    pub temperature: Option<Temperature>,
    pub format: AudioFormat,
    /// `timestamps: "word"`: the generation carries `words`.
    pub word_timestamps: bool,
}

/// A generation a speech request was answered with.
#[derive(Debug, Clone)]
pub struct Accepted {
    pub generation_id: String,
    /// The voice profile's name.
    pub voice: String,
    /// The request's `Idempotency-Key` had already answered for the same request: this is that
    /// request's generation (nothing was admitted again).
    pub replayed: bool,
}

/// An asynchronous speech request from any door (`POST /v1/speech`, the agent's `speak`): the
/// idempotency key is claimed, the voice looked up, the generation admitted and the key's
/// outcome stored in the same transaction; a refusal releases the key. Both doors fingerprint
/// `POST /v1/speech`'s canonical body, so one key answers for one request whichever door sent
/// it, and the generation is made (and metered) once.
pub async fn create(
    core: &Core,
    principal: &Principal,
    request: SpeechRequest<'_>,
    fields: Fields,
    keyed: Keyed,
) -> Result<Accepted, ServiceError> {
    super::operations::Operation::CreateSpeech.check(principal)?;
    let ran = idempotency::run(core, principal, keyed, |claim| async move {
        let voice = find_voice(core, principal, request.voice, fields.voice).await?;
        let engine: EngineId = voice.engine;
        let order = SpeechOrder {
            text: request.text,
            voice,
            engine,
            seed: request.seed,
            temperature: request.temperature,
            format: request.format,
            word_timestamps: request.word_timestamps,
        };
        admit(core, principal, order, fields, claim.as_ref()).await
    })
    .await?;
    match ran {
        Ran::Fresh(admitted) => Ok(Accepted {
            generation_id: admitted.id,
            voice: admitted.voice_name,
            replayed: false,
        }),
        Ran::Replayed(Outcome::SpeechAccepted {
            generation_id,
            voice,
        }) => Ok(Accepted {
            generation_id,
            voice,
            replayed: true,
        }),
        Ran::Replayed(other) => Err(ServiceError::internal(format!(
            "speech key holds another outcome: {other:?}"
        ))),
    }
}

/// The account's voice named by `choice`, or 400 `invalid_request` naming `field` (the one rule
/// for every door's "voice by id or name").
pub async fn find_voice(
    core: &Core,
    principal: &Principal,
    choice: VoiceChoice<'_>,
    field: &'static str,
) -> Result<VoiceRow, ServiceError> {
    let pool = &core.pool;
    // No profile's name or id holds a NUL, and PostgreSQL cannot take one as a parameter.
    let value = match choice {
        VoiceChoice::Name(v) | VoiceChoice::IdOrName(v) => v,
    };
    if value.contains('\0') {
        return Err(ServiceError::invalid(
            field,
            "No voice profile of this account has that name.",
        ));
    }
    match choice {
        VoiceChoice::Name(name) => store::voices::find(pool, &principal.account_id, name)
            .await?
            .filter(|v| v.name == name)
            .ok_or_else(|| {
                ServiceError::invalid(field, "No voice profile of this account has that name.")
            }),
        VoiceChoice::IdOrName(value) => store::voices::find(pool, &principal.account_id, value)
            .await?
            .ok_or_else(|| {
                ServiceError::invalid(
                    field,
                    format!("No voice profile of this account has the id or name {value:?}."),
                )
            }),
    }
}

/// A synchronous speech request (`POST /v1/audio/speech`), as its door parsed it.
pub struct SyncSpeechRequest<'a> {
    pub text: SpeechText,
    /// A profile's id or name.
    pub voice: &'a str,
    /// The engine the request chose (OpenAI's `model` naming an engine), if any, and the field
    /// that chose it: it must be the voice's own engine. `None`: the voice's engine renders.
    pub engine: Option<(EngineId, &'static str)>,
    pub seed: Option<Seed>,
    pub temperature: Option<Temperature>,
    pub format: AudioFormat,
}

/// A synchronous speech request from any door: the idempotency key is claimed, the voice looked
/// up by id or name, its engine matched against the one the request chose, and the generation
/// admitted with the key's outcome. A replay answers with the first request's generation,
/// unless that generation was cancelled (its client left, or the server stopped): that does not
/// use the key up, and the retry is a new request. The door then delivers the audio.
pub async fn create_sync(
    core: &Core,
    principal: &Principal,
    request: SyncSpeechRequest<'_>,
    fields: Fields,
    keyed: Keyed,
) -> Result<Accepted, ServiceError> {
    super::operations::Operation::CreateSpeech.check(principal)?;
    let key = keyed.key.clone();
    let keyed = || keyed.clone();
    let mut request = Some(request);
    // Twice at most: a replay of a cancelled generation forgets the record and runs again.
    for _ in 0..2 {
        let ran = idempotency::run(core, principal, keyed(), |claim| {
            let request = request.take();
            async move {
                let request =
                    request.ok_or_else(|| ServiceError::internal("sync speech ran twice"))?;
                admit_sync(core, principal, request, fields, claim.as_ref()).await
            }
        })
        .await?;
        let generation_id = match ran {
            Ran::Fresh(admitted) => {
                return Ok(Accepted {
                    generation_id: admitted.id,
                    voice: admitted.voice_name,
                    replayed: false,
                });
            }
            Ran::Replayed(Outcome::SpeechSync { generation_id }) => generation_id,
            Ran::Replayed(other) => {
                return Err(ServiceError::internal(format!(
                    "sync speech key holds another outcome: {other:?}"
                )));
            }
        };
        if !was_cancelled(core, principal, &generation_id).await? {
            return Ok(Accepted {
                generation_id,
                voice: String::new(),
                replayed: true,
            });
        }
        if let Some(key) = &key {
            idempotency::forget(&core.pool, &principal.account_id, key).await?;
        }
    }
    Err(ServiceError::internal("idempotency record came back"))
}

async fn admit_sync(
    core: &Core,
    principal: &Principal,
    request: SyncSpeechRequest<'_>,
    fields: Fields,
    claim: Option<&Claim>,
) -> Result<Admitted, ServiceError> {
    let voice = find_voice(
        core,
        principal,
        VoiceChoice::IdOrName(request.voice),
        fields.voice,
    )
    .await?;
    let voice_engine: EngineId = voice.engine;
    let (engine, fields) = match request.engine {
        None => (voice_engine, fields),
        Some((engine, field)) if engine == voice_engine => (
            engine,
            // An engine that is not installed is refused by admission, naming what chose it.
            Fields {
                engine: field,
                ..fields
            },
        ),
        Some((engine, field)) => {
            return Err(ServiceError::invalid(
                field,
                format!(
                    "Voice {:?} is a preset of the {voice_engine} engine; model {engine} cannot render it. Use model {voice_engine} or tts-1.",
                    voice.name
                ),
            ));
        }
    };
    let order = SpeechOrder {
        text: request.text,
        voice,
        engine,
        seed: request.seed,
        temperature: request.temperature,
        format: request.format,
        word_timestamps: false,
    };
    admit(core, principal, order, fields, claim).await
}

/// One phrase of a live speech session (`service::live_speech`), admitted as every speech
/// request is (`admit`: engine installed, readability, pronunciations and normalisation, the
/// estimate and one request's bound, pending cap, allowance and ceiling, the fair queue), with
/// no idempotency key: the voice by id or name, rendered by its own engine as 16-bit wav (the
/// session encodes what it delivers), with word timings where the engine has durations.
pub(in crate::service) async fn admit_phrase(
    core: &Core,
    principal: &Principal,
    voice: &str,
    text: SpeechText,
    fields: Fields,
) -> Result<Admitted, ServiceError> {
    super::operations::Operation::CreateSpeech.check(principal)?;
    let voice = find_voice(core, principal, VoiceChoice::IdOrName(voice), fields.voice).await?;
    let engine: EngineId = voice.engine;
    let order = SpeechOrder {
        text,
        voice,
        engine,
        seed: None,
        temperature: None,
        format: AudioFormat::Wav,
        word_timestamps: engine.reports_word_timings(),
    };
    admit(core, principal, order, fields, None).await
}

/// Whether the account's generation `id` was cancelled (its synchronous caller left, ran past
/// the time limit, or the server stopped).
pub async fn was_cancelled(
    core: &Core,
    principal: &Principal,
    id: &str,
) -> Result<bool, ServiceError> {
    Ok(
        store::generations::find(&core.pool, &principal.account_id, id)
            .await?
            .is_some_and(|g| g.cancelled),
    )
}

/// Checks what depends on the voice before anything is queued: whether its engine exists on
/// any deployment (tada does not) and is installed on this one, the temperature (request or pin)
/// against the engine, and whether the voice's language can read the text (so that input the
/// engine cannot speak is a 400 now, not a failed generation later).
pub fn check_order(
    engines: &EngineRegistry,
    order: &SpeechOrder,
    fields: Fields,
) -> Result<Option<Temperature>, ServiceError> {
    refuse_unavailable(order.engine, &order.voice.name, fields.voice)?;
    if !engines.is_installed(order.engine) {
        return Err(ServiceError::invalid(
            fields.engine,
            format!(
                "The voice {:?} uses the {} engine, which is not installed on this deployment.",
                order.voice.name, order.engine
            ),
        ));
    }
    let pinned = order
        .voice
        .pinned_temperature
        .and_then(|t| Temperature::new(f64::from(t)).ok());
    let temperature = order.temperature.or(pinned);
    if temperature.is_some() && !order.engine.accepts_temperature() {
        let source = if order.temperature.is_some() {
            ""
        } else {
            " (pinned on the voice)"
        };
        return Err(ServiceError::invalid(
            fields.temperature,
            format!(
                "The {} engine takes no temperature{source}; only chatterbox and chatterbox_turbo do.",
                order.engine
            ),
        ));
    }
    readable(engines, order, order.text.as_str(), fields)?;
    if order.word_timestamps && !order.engine.reports_word_timings() {
        return Err(ServiceError::invalid(
            "timestamps",
            format!(
                "Word timestamps come from the durations Kokoro predicts for each phoneme; the voice {:?} uses the {} engine, which has none. Ask without timestamps, or use a kokoro voice.",
                order.voice.name, order.engine
            ),
        ));
    }
    Ok(temperature)
}

/// Whether the voice's language can read `text`, inline pronunciations read as their words
/// (their IPA is checked on its own, [`pronunciations::spoken_text`]).
fn readable(
    engines: &EngineRegistry,
    order: &SpeechOrder,
    text: &str,
    fields: Fields,
) -> Result<(), ServiceError> {
    let words = pronounce::words_only(text);
    engines
        .readable(order.engine, &order.voice.language, &words)
        .map_err(|reason| ServiceError::invalid(fields.text, reason))
}

/// Refuses a voice whose engine exists on no deployment (tada: no ONNX export), naming the
/// voice, before anything else about the request is looked at.
pub fn refuse_unavailable(
    engine: EngineId,
    voice_name: &str,
    field: &'static str,
) -> Result<(), ServiceError> {
    if EngineRegistry::is_available(engine) {
        return Ok(());
    }
    Err(ServiceError::invalid(
        field,
        format!(
            "The voice {voice_name:?} uses the {engine} engine: {}.",
            crate::engines::registry::TADA_UNAVAILABLE
        ),
    ))
}

/// Admission and enqueue (see the module docs), in one transaction with the idempotency record
/// when the caller holds a claim.
async fn admit(
    core: &Core,
    principal: &Principal,
    order: SpeechOrder,
    fields: Fields,
    claim: Option<&Claim>,
) -> Result<Admitted, ServiceError> {
    let (pool, engines, policy) = (&core.pool, &*core.engines, core.admission);
    let temperature = check_order(engines, &order, fields)?;
    refuse_unprepared(pool, &order.voice, fields.voice).await?;
    let pinned_seed = order
        .voice
        .pinned_seed
        .and_then(|s| Seed::new(s as u64).ok());
    let seed = order.seed.or(pinned_seed).unwrap_or_else(Seed::random);
    let spoken = pronunciations::spoken_text(
        pool,
        &principal.account_id,
        &order.voice.language,
        order.text.as_str(),
        fields.text,
    )
    .await?;
    if let Some(spoken) = &spoken {
        readable(engines, &order, spoken, fields)?;
    }
    let estimated_ms = estimate(engines, &order, spoken.as_deref()).await?;
    refuse_too_long(policy, estimated_ms, fields.text)?;

    let mut tx = pool.begin().await?;
    let month = store::usage::month_of(chrono::Utc::now());
    let load = store::usage::lock_for_admission(
        &mut tx,
        &principal.account_id,
        principal.api_key_id(),
        month,
    )
    .await?
    // Deleted while this request was on its way: nothing is queued.
    .ok_or_else(ServiceError::invalid_api_key)?;
    refuse_over_limits(principal, policy, &load, estimated_ms)?;

    let admitted = Admitted {
        id: new_id("gen"),
        voice_name: order.voice.name.clone(),
        engine: order.engine,
        estimated_ms,
    };
    store::queue::enqueue(
        &mut tx,
        store::queue::NewGeneration {
            id: &admitted.id,
            account_id: &principal.account_id,
            api_key_id: principal.api_key_id(),
            voice_id: &order.voice.id,
            engine: order.engine.as_str(),
            text: order.text.as_str(),
            spoken_text: spoken.as_deref(),
            timestamps: order.word_timestamps.then_some("word"),
            seed: seed.as_i64(),
            temperature: temperature.map(Temperature::get),
            format: order.format.as_str(),
            estimated_ms,
        },
    )
    .await?;
    if let Some(claim) = claim {
        let outcome = match claim.operation() {
            KeyUse::SyncSpeech => Outcome::SpeechSync {
                generation_id: admitted.id.clone(),
            },
            _ => Outcome::SpeechAccepted {
                generation_id: admitted.id.clone(),
                voice: admitted.voice_name.clone(),
            },
        };
        claim.complete_in(&mut tx, &outcome).await?;
    }
    tx.commit().await?;
    failpoint("after_speech_commit");
    tracing::info!(generation_id = %admitted.id, engine = %order.engine, estimated_ms, "generation accepted");
    metrics::counter!("voiced_generations_total", "engine" => order.engine.as_str(), "outcome" => "accepted")
        .increment(1);
    Ok(admitted)
}

/// The audio `order` is expected to make, in milliseconds: what admission reserves against the
/// allowance and the key's ceiling until the measured duration replaces it, and what
/// `max_audio_per_request_secs` bounds. Computed from the text the engine will read (kokoro:
/// normalised and phonemized, see [`EngineRegistry::estimated_audio_ms`]); phonemizing runs a
/// program, so it runs on the blocking pool, never on the async workers. `spoken`: the text with
/// the account's pronunciations written in, when they changed it.
pub async fn estimate(
    engines: &EngineRegistry,
    order: &SpeechOrder,
    spoken: Option<&str>,
) -> Result<i64, ServiceError> {
    let engines = engines.clone();
    let engine = order.engine;
    let text = spoken.unwrap_or(order.text.as_str()).to_owned();
    let language = order.voice.language.clone();
    let preset = order.voice.preset.clone().unwrap_or_default();
    tokio::task::spawn_blocking(move || {
        engines.estimated_audio_ms(engine, &language, &preset, &text)
    })
    .await
    .map_err(ServiceError::internal)
}

/// Refuses a text whose estimate alone is beyond what one request may produce.
fn refuse_too_long(
    policy: AdmissionPolicy,
    estimated_ms: i64,
    field: &'static str,
) -> Result<(), ServiceError> {
    if estimated_ms <= policy.max_audio_per_request_ms {
        return Ok(());
    }
    let minutes = |ms: i64| ms as f64 / 60_000.0;
    Err(ServiceError::invalid(
        field,
        format!(
            "This text would make about {:.1} minutes of audio (estimated from what will be spoken: numbers, dates and symbols read out); one request may make at most {:.1}. Split it into several requests.",
            minutes(estimated_ms),
            minutes(policy.max_audio_per_request_ms)
        ),
    ))
}

/// Refuses a cloned voice whose print could not be computed (it cannot speak; its generations
/// would only fail). A print still being computed is fine: the generation waits for it.
async fn refuse_unprepared(
    pool: &PgPool,
    voice: &VoiceRow,
    field: &'static str,
) -> Result<(), ServiceError> {
    if voice.voice_type != VoiceKind::Cloned {
        return Ok(());
    }
    match store::prints::state(pool, &voice.id).await? {
        Some(store::prints::PrintState::Failed(reason)) => Err(ServiceError::invalid(
            field,
            format!(
                "The voice {:?} could not be prepared from its reference audio ({reason}); clone it again.",
                voice.name
            ),
        )),
        _ => Ok(()),
    }
}

/// The pending cap, the allowance and the key's ceiling. A paid account may overshoot its
/// allowance by what is in flight when it is crossed (spec §8); the app's free minutes may not:
/// there the request's own estimate must fit what is left.
fn refuse_over_limits(
    principal: &Principal,
    policy: AdmissionPolicy,
    load: &store::usage::AdmissionLoad,
    estimated_ms: i64,
) -> Result<(), ServiceError> {
    if load.account_pending >= policy.max_pending_per_account {
        // About one generation's time frees a place; the engines run near real time.
        let retry_after =
            (load.account_reserved_ms / load.account_pending.max(1) / 1000).clamp(1, 60);
        return Err(ServiceError::new(
            ErrorCode::RateLimitExceeded,
            format!(
                "This account already has {} generations queued or running (the limit is {}); retry when some have finished.",
                load.account_pending, policy.max_pending_per_account
            ),
        )
        .with_retry_after(retry_after as u64));
    }
    let allowance_ms = principal.monthly_allowance_ms();
    let used_ms = load.account_charged_ms + load.account_reserved_ms;
    if principal.on_free_allowance()
        && used_ms < allowance_ms
        && used_ms + estimated_ms > allowance_ms
    {
        let left = (allowance_ms - used_ms) as f64 / 1000.0;
        return Err(ServiceError::new(
            ErrorCode::QuotaExhausted,
            format!(
                "This text would make about {:.0} s of audio and {left:.0} s of this month's free minutes are left; speak a shorter text, or subscribe to a plan for more and for the API.",
                estimated_ms as f64 / 1000.0
            ),
        )
        .with_settings(SettingsPage::Billing));
    }
    if used_ms >= allowance_ms {
        let detail = if principal.on_free_allowance() {
            "This month's free minutes in the playground are used up; they renew on the 1st (UTC), or subscribe to a plan for more and for the API."
        } else if load.account_charged_ms >= allowance_ms {
            "This month's audio allowance is used up; it renews on the 1st (UTC) or with an upgrade."
        } else {
            "This month's audio allowance is taken by what was generated and what is still queued or running; it renews on the 1st (UTC) or with an upgrade."
        };
        return Err(ServiceError::new(ErrorCode::QuotaExhausted, detail)
            .with_settings(SettingsPage::Billing));
    }
    if let Some(minutes) = principal.ceiling_minutes()
        && load.key_charged_ms + load.key_reserved_ms >= i64::from(minutes) * 60_000
    {
        return Err(ServiceError::new(
            ErrorCode::KeyCeilingExceeded,
            format!(
                "This key reached its ceiling of {minutes} minutes this month (counting generations still queued or running); raise or remove it in the console."
            ),
        )
        .with_settings(SettingsPage::Console));
    }
    Ok(())
}
