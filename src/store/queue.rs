//! The generation queue: rows of `generations` in status `generating`, claimed with
//! `FOR UPDATE SKIP LOCKED` and held by a lease. A worker that dies leaves its lease to expire and
//! another worker claims the row again, up to `max_attempts` times.

use std::time::Duration;

use chrono::Utc;
use sqlx::{PgConnection, PgPool, Postgres, Transaction};

use super::prints::PrintJob;
use super::usage::month_of;
use crate::domain::{CancelReason, GenerationStatus, VoiceKind};

/// Channel a new generation is announced on (payload: its id). Idle workers LISTEN on it.
pub const JOBS_CHANNEL: &str = "voiced_jobs";
/// Channel a finished generation (completed or failed) is announced on (payload: its id).
pub const DONE_CHANNEL: &str = "voiced_generation_done";
/// Channel a cancellation of a running generation is announced on (payload: its id); the worker
/// running it stops at the next sentence boundary.
pub const CANCEL_CHANNEL: &str = "voiced_generation_cancel";

pub struct NewGeneration<'a> {
    pub id: &'a str,
    pub account_id: &'a str,
    /// None when an OAuth access token, not a key, asked for it.
    pub api_key_id: Option<&'a str>,
    pub voice_id: &'a str,
    pub engine: &'a str,
    pub text: &'a str,
    /// `text` with the account's pronunciations written in, when they changed it.
    pub spoken_text: Option<&'a str>,
    /// `Some("word")`: the generation reports when each word is said.
    pub timestamps: Option<&'a str>,
    pub seed: i64,
    pub temperature: Option<f32>,
    pub format: &'a str,
    /// Estimated audio, reserved against the allowance and the key's ceiling while it waits.
    pub estimated_ms: i64,
}

/// Inserts a generation and wakes a worker, in the caller's transaction (the notification is
/// delivered on commit). The insert puts its account in the claim's order (`queue_accounts`,
/// trigger `generations_queue_turn` of migration 0023, so that every writer does).
pub async fn enqueue(
    tx: &mut Transaction<'_, Postgres>,
    generation: NewGeneration<'_>,
) -> sqlx::Result<()> {
    sqlx::query!(
        "INSERT INTO generations (id, account_id, api_key_id, voice_id, engine, text, seed,
                                  temperature, format, status, estimated_ms, spoken_text,
                                  timestamps)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'generating', $10, $11, $12)",
        generation.id,
        generation.account_id,
        generation.api_key_id,
        generation.voice_id,
        generation.engine,
        generation.text,
        generation.seed,
        generation.temperature,
        generation.format,
        generation.estimated_ms,
        generation.spoken_text,
        generation.timestamps
    )
    .execute(&mut **tx)
    .await?;
    sqlx::query!("SELECT pg_notify($1, $2)", JOBS_CHANNEL, generation.id)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// A claimed generation with what the engine needs.
#[derive(Debug, Clone)]
pub struct Job {
    pub id: String,
    pub engine: String,
    /// What the engine reads: the caller's text with the account's pronunciations written in.
    pub text: String,
    /// The caller's text as sent (word timestamps point into it).
    pub source_text: String,
    /// The request asked for word timestamps.
    pub wants_words: bool,
    pub seed: i64,
    pub temperature: Option<f32>,
    pub format: String,
    pub preset: Option<String>,
    pub language: String,
    pub attempts: i32,
    pub voice_type: VoiceKind,
    /// A cloned voice's print for this engine (stored once when the voice was cloned).
    pub voice_print: Option<Vec<u8>>,
    /// Why a cloned voice's print could not be computed.
    pub print_error: Option<String>,
    /// The voice profile's personality prompt as it is when the job is claimed (like its
    /// preset and language); engines whose model takes an instruction read it.
    pub personality: Option<String>,
}

/// A job a worker claimed.
#[derive(Debug, Clone)]
pub enum Claimed {
    Generation(Job),
    /// A cloned voice's print (`store::prints`).
    Print(PrintJob),
}

/// How many times one account's job is tried again in one claim when a concurrent write
/// (a cancellation, another claimer that committed first) took it between choosing and taking.
const RETRIES_PER_ACCOUNT: u32 = 3;

/// Claims the next job for `worker`, a generation or a voice print, or `None` when nothing
/// waits. Fair across accounts: the account served least recently goes first (whose last job,
/// of either kind, was claimed earliest; never served before any served, then the one waiting
/// longest), and within it its oldest job; so one account's burst delays another account's first
/// job by about one job per busy account, not by the whole burst, and one account's clones wait
/// their turn like its generations.
///
/// The order is kept, not computed: `queue_accounts` holds one row per account with work
/// (migration 0023). The claim locks the first ready account in the order through its index
/// (`FOR UPDATE SKIP LOCKED`: concurrent workers take different accounts), takes that account's
/// oldest claimable job through the per-account index, and marks the account served; its cost
/// does not grow with the queue's depth nor with the hour's throughput. The common case, a
/// generation, is one statement. Otherwise (a voice print, an account whose jobs all run or wait
/// on a print, a job taken meanwhile) the claim goes on in a transaction that holds each account's
/// lock while it looks: an account with no unfinished work left is marked idle until its next
/// enqueue, one whose jobs run is passed over (at most one account per running job). A cloned
/// voice's generations wait while its print is still being computed (`store::prints`).
pub async fn claim_next(
    pool: &PgPool,
    worker: &str,
    lease: Duration,
) -> sqlx::Result<Option<Claimed>> {
    match take_turn(pool, &[], worker, lease).await? {
        None => return Ok(None),
        Some(Turn::Claimed(job)) => return Ok(Some(Claimed::Generation(*job))),
        Some(_) => {}
    }
    let mut tx = pool.begin().await?;
    let mut passed: Vec<String> = Vec::new();
    let mut retries = 0;
    loop {
        let claimed = match take_turn(&mut *tx, &passed, worker, lease).await? {
            None => None,
            Some(Turn::Claimed(job)) => Some(Claimed::Generation(*job)),
            Some(Turn::Print {
                account_id,
                voice_id,
            }) => match super::prints::claim_in(&mut tx, &voice_id, worker, lease).await? {
                Some(job) => {
                    sqlx::query!(
                        "UPDATE queue_accounts SET last_served_at = now() WHERE account_id = $1",
                        account_id
                    )
                    .execute(&mut *tx)
                    .await?;
                    Some(Claimed::Print(job))
                }
                None => {
                    retries += 1;
                    if retries >= RETRIES_PER_ACCOUNT {
                        passed.push(account_id);
                        retries = 0;
                    }
                    continue;
                }
            },
            Some(Turn::Taken { account_id }) => {
                // Taken meanwhile: look at the same account again (its lock is ours).
                retries += 1;
                if retries >= RETRIES_PER_ACCOUNT {
                    passed.push(account_id);
                    retries = 0;
                }
                continue;
            }
            Some(Turn::Nothing { account_id }) => {
                // Nothing claimable: its jobs run, or wait on a print. With no unfinished work
                // at all it leaves the order until its next enqueue (which waits for this lock,
                // and this statement sees every enqueue committed before the lock was taken).
                sqlx::query!(
                    "UPDATE queue_accounts SET ready = false
                     WHERE account_id = $1
                       AND NOT EXISTS (SELECT 1 FROM generations g
                                       WHERE g.account_id = $1 AND g.status = 'generating')
                       AND NOT EXISTS (SELECT 1 FROM voice_prints p
                                       JOIN voice_profiles v ON v.id = p.voice_id
                                       WHERE v.account_id = $1
                                         AND p.print IS NULL AND p.error IS NULL)",
                    account_id
                )
                .execute(&mut *tx)
                .await?;
                passed.push(account_id);
                retries = 0;
                continue;
            }
        };
        tx.commit().await?;
        return Ok(claimed);
    }
}

/// What [`take_turn`] found at the head of the order.
enum Turn {
    /// The account's oldest job was a generation, claimed and the account marked served.
    Claimed(Box<Job>),
    /// The account's oldest job is a voice print (not claimed yet).
    Print {
        account_id: String,
        voice_id: String,
    },
    /// The account's oldest generation was taken by a concurrent write before this claim could.
    Taken { account_id: String },
    /// The account has nothing claimable now.
    Nothing { account_id: String },
}

/// Locks the first ready account in the fair order (skipping `passed`) and finds its oldest
/// claimable job; a generation is claimed for `worker` and the account marked served in the
/// same statement. `None`: no ready account is free.
///
/// The claim commits without waiting for the WAL flush (`synchronous_commit` off for its
/// transaction): a claim lost in a database crash leaves the job claimable again, as an expired
/// lease does, and the worker's durable completion flushes it with its own commit. One flush
/// fewer per job: the flushes, not the CPU, bound the jobs per second (docs/benchmarks.md).
async fn take_turn(
    db: impl sqlx::PgExecutor<'_>,
    passed: &[String],
    worker: &str,
    lease: Duration,
) -> sqlx::Result<Option<Turn>> {
    let Some(row) = sqlx::query!(
        r#"WITH turn AS (
               SELECT a.account_id, j.kind, j.id
               FROM set_config('synchronous_commit', 'off', true),
                    (SELECT account_id FROM queue_accounts
                     WHERE ready AND account_id <> ALL($1)
                     ORDER BY last_served_at NULLS FIRST, waiting_since, account_id
                     LIMIT 1 FOR UPDATE SKIP LOCKED) a
               LEFT JOIN LATERAL (
                   SELECT c.kind, c.id FROM (
                       (SELECT 'generation' AS kind, g.id, g.created_at FROM generations g
                        WHERE g.account_id = a.account_id AND g.status = 'generating'
                          AND g.attempts < g.max_attempts AND g.cancel_reason IS NULL
                          AND (g.lease_expires_at IS NULL OR g.lease_expires_at < now())
                          AND NOT EXISTS (SELECT 1 FROM voice_prints p WHERE p.voice_id = g.voice_id
                                            AND p.print IS NULL AND p.error IS NULL)
                        ORDER BY g.created_at, g.id LIMIT 1)
                       UNION ALL
                       (SELECT 'print' AS kind, p.voice_id, p.created_at FROM voice_prints p
                        JOIN voice_profiles v ON v.id = p.voice_id
                        WHERE v.account_id = a.account_id
                          AND p.print IS NULL AND p.error IS NULL AND p.attempts < p.max_attempts
                          AND (p.lease_expires_at IS NULL OR p.lease_expires_at < now())
                        ORDER BY p.created_at, p.voice_id LIMIT 1)) c
                   ORDER BY c.created_at LIMIT 1) j ON true),
           claimed AS (
               UPDATE generations g
               SET attempts = g.attempts + 1, lease_owner = $2,
                   lease_expires_at = now() + make_interval(secs => $3),
                   started_at = COALESCE(g.started_at, now()), updated_at = now()
               FROM turn, voice_profiles v
               WHERE turn.kind = 'generation' AND g.id = turn.id AND v.id = g.voice_id
                 AND g.status = 'generating' AND g.attempts < g.max_attempts
                 AND g.cancel_reason IS NULL
                 AND (g.lease_expires_at IS NULL OR g.lease_expires_at < now())
               RETURNING g.account_id, g.id, g.engine, COALESCE(g.spoken_text, g.text) AS text,
                         g.text AS source_text, g.timestamps IS NOT NULL AS wants_words, g.seed,
                         g.temperature, g.format, v.preset, v.language, g.attempts, v.voice_type,
                         (SELECT p.print FROM voice_prints p
                          WHERE p.voice_id = g.voice_id AND p.engine = g.engine) AS voice_print,
                         (SELECT p.error FROM voice_prints p WHERE p.voice_id = g.voice_id) AS print_error,
                         v.personality_prompt AS personality),
           served AS (
               UPDATE queue_accounts q SET last_served_at = now()
               FROM claimed WHERE q.account_id = claimed.account_id)
           SELECT turn.account_id AS "account_id!", turn.kind, turn.id,
                  claimed.id AS "claimed_id?", claimed.engine AS "engine?", claimed.text AS "text?",
                  claimed.source_text AS "source_text?", claimed.wants_words AS "wants_words?",
                  claimed.seed AS "seed?", claimed.temperature, claimed.format AS "format?",
                  claimed.preset, claimed.language AS "language?", claimed.attempts AS "attempts?",
                  claimed.voice_type AS "voice_type?: VoiceKind", claimed.voice_print,
                  claimed.print_error, claimed.personality
           FROM turn LEFT JOIN claimed ON true"#,
        passed,
        worker,
        lease.as_secs_f64()
    )
    .fetch_optional(db)
    .await?
    else {
        return Ok(None);
    };
    let account_id = row.account_id;
    Ok(Some(match (row.kind.as_deref(), row.id) {
        (Some("print"), Some(voice_id)) => Turn::Print {
            account_id,
            voice_id,
        },
        (Some(_), Some(_)) => match (
            row.claimed_id,
            row.engine,
            row.text,
            row.source_text,
            row.wants_words,
            row.seed,
            row.format,
            row.language,
            row.attempts,
            row.voice_type,
        ) {
            (
                Some(id),
                Some(engine),
                Some(text),
                Some(source_text),
                Some(wants_words),
                Some(seed),
                Some(format),
                Some(language),
                Some(attempts),
                Some(voice_type),
            ) => Turn::Claimed(Box::new(Job {
                id,
                engine,
                text,
                source_text,
                wants_words,
                seed,
                temperature: row.temperature,
                format,
                preset: row.preset,
                language,
                attempts,
                voice_type,
                voice_print: row.voice_print,
                print_error: row.print_error,
                personality: row.personality,
            })),
            _ => Turn::Taken { account_id },
        },
        _ => Turn::Nothing { account_id },
    }))
}

/// What a lease renewal found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lease {
    Held,
    /// Held, and the generation's caller asked for it to stop.
    CancelRequested,
    /// No longer this worker's (another worker owns the row now, or it finished).
    Lost,
}

/// Extends `worker`'s lease, and reports a cancellation request (the fallback for a missed
/// notification on [`CANCEL_CHANNEL`]).
pub async fn renew(pool: &PgPool, id: &str, worker: &str, lease: Duration) -> sqlx::Result<Lease> {
    let cancelled = sqlx::query_scalar!(
        r#"UPDATE generations SET lease_expires_at = now() + make_interval(secs => $3)
           WHERE id = $1 AND lease_owner = $2 AND status = 'generating'
           RETURNING cancel_reason IS NOT NULL AS "cancelled!""#,
        id,
        worker,
        lease.as_secs_f64()
    )
    .fetch_optional(pool)
    .await?;
    Ok(match cancelled {
        None => Lease::Lost,
        Some(true) => Lease::CancelRequested,
        Some(false) => Lease::Held,
    })
}

/// How [`complete`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Completion {
    /// Completed and charged.
    Completed,
    /// Its caller cancelled it before the audio was stored: failed, nothing charged.
    Cancelled,
    /// The lease was lost; nothing was written.
    LeaseLost,
}

/// Marks the generation completed and charges it, in one transaction: the ledger row, the
/// voice's generation count and the `completed` status commit together or not at all. `false`
/// A generation whose caller cancelled it meanwhile fails instead: audio nobody receives is
/// never charged.
pub async fn complete(
    pool: &PgPool,
    id: &str,
    worker: &str,
    audio_key: &str,
    duration_ms: i64,
    words: Option<&serde_json::Value>,
) -> sqlx::Result<Completion> {
    let mut tx = pool.begin().await?;
    // One statement for the status, the charge, the voice's count and the notification: a
    // statement is a round trip, and this runs once per generation.
    let completed = sqlx::query_scalar!(
        r#"WITH done AS (
               UPDATE generations
               SET status = 'completed', audio_key = $3, duration_ms = $4, finished_at = now(),
                   lease_owner = NULL, lease_expires_at = NULL, updated_at = now(), words = $5
               WHERE id = $1 AND lease_owner = $2 AND status = 'generating' AND cancel_reason IS NULL
               RETURNING id, account_id, api_key_id, voice_id),
           charged AS (
               INSERT INTO usage_ledger (account_id, api_key_id, generation_id, month, audio_ms)
               SELECT account_id, api_key_id, id, $6, $4 FROM done),
           counted AS (
               UPDATE voice_profiles v SET generation_count = generation_count + 1
               FROM done WHERE v.id = done.voice_id)
           SELECT done.id AS "id!" FROM done, pg_notify($7, done.id)"#,
        id,
        worker,
        audio_key,
        duration_ms,
        words,
        month_of(Utc::now()),
        DONE_CHANNEL
    )
    .fetch_optional(&mut *tx)
    .await?;
    if completed.is_none() {
        drop(tx);
        return Ok(if fail(pool, id, worker, "cancelled").await? {
            Completion::Cancelled
        } else {
            Completion::LeaseLost
        });
    }
    super::webhooks::generation_event(&mut tx, id, super::webhooks::GENERATION_COMPLETED).await?;
    tx.commit().await?;
    Ok(Completion::Completed)
}

/// Marks the generation failed with `error` (nothing is charged), or with its cancellation reason
/// when its caller cancelled it. `false` when the lease was lost.
pub async fn fail(pool: &PgPool, id: &str, worker: &str, error: &str) -> sqlx::Result<bool> {
    let write = async |db: &mut PgConnection| {
        let result = sqlx::query!(
        "UPDATE generations
         SET status = 'failed', error = COALESCE(cancel_reason, $3), finished_at = now(), lease_owner = NULL,
             lease_expires_at = NULL, updated_at = now()
         WHERE id = $1 AND lease_owner = $2 AND status = 'generating'",
            id,
            worker,
            error
        )
        .execute(&mut *db)
        .await?;
        Ok(result.rows_affected() > 0)
    };
    as_lease_holder(pool, write, async |db| announce_failed(db, id).await).await
}

/// A lease holder's write to its job, in one transaction: `write` says whether the lease was
/// still the worker's (`false`: nothing was written, and `false` is returned); then `announce`
/// tells the waiters, delivered on commit.
pub(super) async fn as_lease_holder(
    pool: &PgPool,
    write: impl AsyncFnOnce(&mut PgConnection) -> sqlx::Result<bool>,
    announce: impl AsyncFnOnce(&mut PgConnection) -> sqlx::Result<()>,
) -> sqlx::Result<bool> {
    let mut tx = pool.begin().await?;
    if !write(&mut *tx).await? {
        return Ok(false);
    }
    announce(&mut *tx).await?;
    tx.commit().await?;
    Ok(true)
}

/// Gives up on a queue's jobs whose workers died on every attempt, in one transaction: `expire`
/// ends them and returns their ids, and `announce` tells each one's waiters on commit.
pub(super) async fn give_up_exhausted(
    pool: &PgPool,
    expire: impl AsyncFnOnce(&mut PgConnection) -> sqlx::Result<Vec<String>>,
    announce: impl AsyncFn(&mut PgConnection, &str) -> sqlx::Result<()>,
) -> sqlx::Result<Vec<String>> {
    let mut tx = pool.begin().await?;
    let ids = expire(&mut *tx).await?;
    for id in &ids {
        announce(&mut *tx, id).await?;
    }
    tx.commit().await?;
    Ok(ids)
}

/// Tells the waiters of generation `id` that it failed: its `generation.failed` webhook and
/// [`DONE_CHANNEL`], both on commit.
async fn announce_failed(db: &mut PgConnection, id: &str) -> sqlx::Result<()> {
    super::webhooks::generation_event(db, id, super::webhooks::GENERATION_FAILED).await?;
    notify(db, DONE_CHANNEL, id).await
}

/// Wakes the listeners of `channel` with `id` (delivered when the transaction commits).
pub(super) async fn notify(db: &mut PgConnection, channel: &str, id: &str) -> sqlx::Result<()> {
    sqlx::query!("SELECT pg_notify($1, $2)", channel, id)
        .execute(db)
        .await?;
    Ok(())
}

/// Hands a claimed generation back to the queue (its worker is shutting down): the lease is
/// cleared, the attempt does not count, and idle workers are woken to take it. One whose caller
/// cancelled it meanwhile fails with that reason instead. `false` when the lease was no longer
/// this worker's.
pub async fn release(pool: &PgPool, id: &str, worker: &str) -> sqlx::Result<bool> {
    let mut tx = pool.begin().await?;
    let status = sqlx::query_scalar!(
        "UPDATE generations
         SET lease_owner = NULL, lease_expires_at = NULL, attempts = greatest(attempts - 1, 0),
             status = CASE WHEN cancel_reason IS NULL THEN status ELSE 'failed' END,
             error = COALESCE(cancel_reason, error),
             finished_at = CASE WHEN cancel_reason IS NULL THEN finished_at ELSE now() END,
             updated_at = now()
         WHERE id = $1 AND lease_owner = $2 AND status = 'generating'
         RETURNING status",
        id,
        worker
    )
    .fetch_optional(&mut *tx)
    .await?;
    match status.as_deref() {
        None => return Ok(false),
        Some("failed") => announce_failed(&mut tx, id).await?,
        Some(_) => notify(&mut tx, JOBS_CHANNEL, id).await?,
    }
    tx.commit().await?;
    Ok(true)
}

/// Fails generations whose workers died on every attempt (their last lease expired with no
/// attempts left), or died while a cancellation was pending, so that they do not stay
/// `generating` forever.
pub async fn fail_exhausted(pool: &PgPool) -> sqlx::Result<Vec<String>> {
    let expire = async |db: &mut PgConnection| {
        sqlx::query_scalar!(
        "UPDATE generations
         SET status = 'failed', finished_at = now(), lease_owner = NULL, lease_expires_at = NULL,
             updated_at = now(),
             error = COALESCE(cancel_reason,
                 'generation was interrupted ' || attempts || ' times (worker stopped); nothing was charged')
         WHERE status = 'generating' AND lease_expires_at < now()
           AND (attempts >= max_attempts OR cancel_reason IS NOT NULL)
         RETURNING id"
        )
        .fetch_all(db)
        .await
    };
    give_up_exhausted(pool, expire, announce_failed).await
}

/// Cancels a generation whose caller went away, recording `reason` in `cancel_reason` (what
/// "cancelled" means to every reader) and, once failed, as its `error`. One that no
/// worker is running fails at once; a running one is flagged and its worker is told on
/// [`CANCEL_CHANNEL`] (it stops at the next sentence boundary and fails it). Its reservation
/// ends with it. `delivered_ms`: the audio that had already reached the caller (0: none); the
/// statement that marks it `failed` charges that much, and nothing else is charged (migration
/// 0024). A finished generation is left as it is.
pub async fn cancel(
    pool: &PgPool,
    id: &str,
    reason: CancelReason,
    delivered_ms: u64,
) -> sqlx::Result<()> {
    let mut tx = pool.begin().await?;
    let state = sqlx::query_scalar!(
        r#"UPDATE generations
           SET cancel_reason = $2, delivered_ms = NULLIF($3::BIGINT, 0),
               status = CASE WHEN lease_owner IS NULL OR lease_expires_at < now()
                             THEN 'failed' ELSE status END,
               error = CASE WHEN lease_owner IS NULL OR lease_expires_at < now()
                            THEN $2 ELSE error END,
               finished_at = CASE WHEN lease_owner IS NULL OR lease_expires_at < now()
                                  THEN now() ELSE finished_at END,
               lease_owner = CASE WHEN lease_owner IS NULL OR lease_expires_at < now()
                                  THEN NULL ELSE lease_owner END,
               updated_at = now()
           WHERE id = $1 AND status = 'generating' AND cancel_reason IS NULL
           RETURNING status AS "status: GenerationStatus""#,
        id,
        reason.as_str(),
        i64::try_from(delivered_ms).unwrap_or(i64::MAX)
    )
    .fetch_optional(&mut *tx)
    .await?;
    match state {
        None => return Ok(()),
        Some(GenerationStatus::Failed) => announce_failed(&mut tx, id).await?,
        Some(_) => notify(&mut tx, CANCEL_CHANNEL, id).await?,
    }
    tx.commit().await
}

/// Records how much audio the worker `owner` has rendered of generation `id` (never less than
/// before); nothing when it no longer holds the lease.
pub async fn progress(pool: &PgPool, id: &str, owner: &str, rendered_ms: u64) -> sqlx::Result<()> {
    sqlx::query!(
        "UPDATE generations SET rendered_ms = GREATEST(rendered_ms, $3)
         WHERE id = $1 AND lease_owner = $2 AND status = 'generating'",
        id,
        owner,
        i64::try_from(rendered_ms).unwrap_or(i64::MAX)
    )
    .execute(pool)
    .await?;
    Ok(())
}

/// Status of a generation, for waiters (`None`: no such generation).
pub async fn status(pool: &PgPool, id: &str) -> sqlx::Result<Option<GenerationStatus>> {
    sqlx::query_scalar!(
        r#"SELECT status AS "status: GenerationStatus" FROM generations WHERE id = $1"#,
        id
    )
    .fetch_optional(pool)
    .await
}

/// The queue as metrics see it.
#[derive(Debug, Clone, Copy)]
pub struct Depth {
    /// Waiting for a worker (never claimed, handed back, or with an expired lease).
    pub queued: i64,
    /// Held by a worker now.
    pub running: i64,
    /// Age of the oldest waiting generation; 0 when none waits.
    pub oldest_queued_secs: f64,
}

pub async fn depth(pool: &PgPool) -> sqlx::Result<Depth> {
    let row = sqlx::query!(
        r#"SELECT count(*) FILTER (WHERE lease_expires_at IS NULL OR lease_expires_at < now()) AS "queued!",
                  count(*) FILTER (WHERE lease_expires_at >= now()) AS "running!",
                  COALESCE(EXTRACT(EPOCH FROM now() - min(created_at)
                      FILTER (WHERE lease_expires_at IS NULL OR lease_expires_at < now())), 0)::float8 AS "oldest!"
           FROM generations WHERE status = 'generating'"#
    )
    .fetch_one(pool)
    .await?;
    Ok(Depth {
        queued: row.queued,
        running: row.running,
        oldest_queued_secs: row.oldest,
    })
}
