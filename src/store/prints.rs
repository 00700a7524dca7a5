//! Cloned voices' reference clips and voice prints (`voice_samples`, `voice_prints`).
//!
//! A print that is not computed yet is a job: generation workers claim it like a generation
//! (`FOR UPDATE SKIP LOCKED`, a lease, `max_attempts`), run the engine's `voice_print` on the
//! stored reference and store the bytes. The voice's generations are not claimed while its
//! print is pending (see `queue::claim_next`); completing or failing a print wakes the workers.

use std::time::Duration;

use sqlx::{PgConnection, PgPool, Postgres, Transaction};

use super::queue::{JOBS_CHANNEL, as_lease_holder, give_up_exhausted, notify};

/// Stores reference clip number `ordinal` of a cloned voice.
pub async fn insert_sample(
    tx: &mut Transaction<'_, Postgres>,
    voice_id: &str,
    ordinal: i32,
    audio: &[u8],
    duration_ms: i32,
    transcript: Option<&str>,
) -> sqlx::Result<()> {
    sqlx::query!(
        "INSERT INTO voice_samples (voice_id, ordinal, audio, duration_ms, transcript)
         VALUES ($1, $2, $3, $4, $5)",
        voice_id,
        ordinal,
        audio,
        duration_ms,
        transcript
    )
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Stores the voice's print for `engine`, computed already (`Some`) or as a job for a worker
/// (`None`: the workers are woken on commit; trigger `voice_prints_queue_turn` of migration 0023
/// puts the account in the claim's order).
pub async fn insert_print(
    tx: &mut Transaction<'_, Postgres>,
    voice_id: &str,
    engine: &str,
    print: Option<&[u8]>,
) -> sqlx::Result<()> {
    sqlx::query!(
        "INSERT INTO voice_prints (voice_id, engine, print, computed_at)
         VALUES ($1, $2, $3, CASE WHEN $3::bytea IS NULL THEN NULL ELSE now() END)",
        voice_id,
        engine,
        print
    )
    .execute(&mut **tx)
    .await?;
    if print.is_none() {
        notify(tx, JOBS_CHANNEL, voice_id).await?;
    }
    Ok(())
}

/// Where a voice's print stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PrintState {
    /// Not computed yet: the voice's generations wait for it.
    Pending,
    Ready,
    /// It could not be computed; the voice cannot speak.
    Failed(String),
}

/// The state of the voice's print (`None`: the voice has none, it is a preset).
pub async fn state(
    db: impl sqlx::PgExecutor<'_>,
    voice_id: &str,
) -> sqlx::Result<Option<PrintState>> {
    let row = sqlx::query!(
        r#"SELECT print IS NOT NULL AS "ready!", error FROM voice_prints WHERE voice_id = $1"#,
        voice_id
    )
    .fetch_optional(db)
    .await?;
    Ok(row.map(|r| match (r.ready, r.error) {
        (true, _) => PrintState::Ready,
        (false, Some(error)) => PrintState::Failed(error),
        (false, None) => PrintState::Pending,
    }))
}

/// A print to compute, with what the engine needs.
#[derive(Debug, Clone)]
pub struct PrintJob {
    pub voice_id: String,
    pub engine: String,
    pub language: String,
    /// The first reference clip, as uploaded.
    pub audio: Vec<u8>,
    pub transcript: Option<String>,
    pub attempts: i32,
}

/// Takes the pending print of `voice_id` for `worker` if it is still claimable
/// (`queue::claim_next` chose it in the fair order); the claim counts as serving the account
/// (`started_at`, and `queue_accounts` in the claim), so its next job waits behind other
/// accounts'.
pub(super) async fn claim_in(
    tx: &mut Transaction<'_, Postgres>,
    voice_id: &str,
    worker: &str,
    lease: Duration,
) -> sqlx::Result<Option<PrintJob>> {
    sqlx::query_as!(
        PrintJob,
        r#"UPDATE voice_prints p
           SET attempts = p.attempts + 1, lease_owner = $2,
               lease_expires_at = now() + make_interval(secs => $3), started_at = now()
           FROM voice_profiles v, voice_samples s
           WHERE p.voice_id = $1 AND v.id = p.voice_id
             AND s.voice_id = p.voice_id AND s.ordinal = 0
             AND p.print IS NULL AND p.error IS NULL AND p.attempts < p.max_attempts
             AND (p.lease_expires_at IS NULL OR p.lease_expires_at < now())
           RETURNING p.voice_id, p.engine, v.language, s.audio, s.transcript, p.attempts"#,
        voice_id,
        worker,
        lease.as_secs_f64()
    )
    .fetch_optional(&mut **tx)
    .await
}

/// Stores the computed print and wakes the workers for the voice's waiting generations.
/// `false` when the lease was lost (another worker stores it).
pub async fn complete(
    pool: &PgPool,
    voice_id: &str,
    worker: &str,
    print: &[u8],
) -> sqlx::Result<bool> {
    finish(pool, voice_id, worker, Ok(print)).await
}

/// Records why the print cannot be computed; the voice's waiting generations then fail with it.
pub async fn fail(pool: &PgPool, voice_id: &str, worker: &str, error: &str) -> sqlx::Result<bool> {
    finish(pool, voice_id, worker, Err(error)).await
}

async fn finish(
    pool: &PgPool,
    voice_id: &str,
    worker: &str,
    outcome: Result<&[u8], &str>,
) -> sqlx::Result<bool> {
    let (print, error) = match outcome {
        Ok(print) => (Some(print), None),
        Err(error) => (None, Some(error)),
    };
    let write = async |db: &mut PgConnection| {
        let result = sqlx::query!(
            "UPDATE voice_prints
         SET print = $3, error = $4, computed_at = CASE WHEN $3::bytea IS NULL THEN NULL ELSE now() END,
             lease_owner = NULL, lease_expires_at = NULL
         WHERE voice_id = $1 AND lease_owner = $2 AND print IS NULL AND error IS NULL",
            voice_id,
            worker,
            print,
            error
        )
        .execute(&mut *db)
        .await?;
        Ok(result.rows_affected() > 0)
    };
    as_lease_holder(pool, write, async |db| {
        notify(db, JOBS_CHANNEL, voice_id).await
    })
    .await
}

/// Gives up on prints whose workers died on every attempt, so that their voices' generations
/// fail instead of waiting for ever.
pub async fn fail_exhausted(pool: &PgPool) -> sqlx::Result<Vec<String>> {
    let expire = async |db: &mut PgConnection| {
        sqlx::query_scalar!(
            "UPDATE voice_prints
         SET error = 'computing the voice print was interrupted ' || attempts || ' times (worker stopped)',
             lease_owner = NULL, lease_expires_at = NULL
         WHERE print IS NULL AND error IS NULL AND attempts >= max_attempts
           AND lease_expires_at < now()
         RETURNING voice_id"
        )
        .fetch_all(db)
        .await
    };
    give_up_exhausted(pool, expire, async |db, id| {
        notify(db, JOBS_CHANNEL, id).await
    })
    .await
}

/// The print state of each of the account's cloned voices (for the console's list).
pub async fn states(pool: &PgPool, account_id: &str) -> sqlx::Result<Vec<(String, PrintState)>> {
    let rows = sqlx::query!(
        r#"SELECT p.voice_id, p.print IS NOT NULL AS "ready!", p.error
           FROM voice_prints p JOIN voice_profiles v ON v.id = p.voice_id
           WHERE v.account_id = $1"#,
        account_id
    )
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| {
            let state = match (r.ready, r.error) {
                (true, _) => PrintState::Ready,
                (false, Some(error)) => PrintState::Failed(error),
                (false, None) => PrintState::Pending,
            };
            (r.voice_id, state)
        })
        .collect())
}
