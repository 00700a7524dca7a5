//! The generation queue: rows of `generations` in status `generating`, claimed with
//! `FOR UPDATE SKIP LOCKED` and held by a lease. A worker that dies leaves its lease to expire and
//! another worker claims the row again, up to `max_attempts` times.

use std::time::Duration;

use chrono::Utc;
use sqlx::{PgPool, Postgres, Transaction};

use super::usage::month_of;

/// Channel a new generation is announced on (payload: its id). Idle workers LISTEN on it.
pub const JOBS_CHANNEL: &str = "voiced_jobs";
/// Channel a finished generation (completed or failed) is announced on (payload: its id).
pub const DONE_CHANNEL: &str = "voiced_generation_done";

pub struct NewGeneration<'a> {
    pub id: &'a str,
    pub account_id: &'a str,
    pub api_key_id: &'a str,
    pub voice_id: &'a str,
    pub engine: &'a str,
    pub text: &'a str,
    pub seed: i64,
    pub temperature: Option<f32>,
    pub format: &'a str,
}

/// Inserts a generation and wakes a worker, in the caller's transaction (the notification is
/// delivered on commit).
pub async fn enqueue(
    tx: &mut Transaction<'_, Postgres>,
    generation: NewGeneration<'_>,
) -> sqlx::Result<()> {
    sqlx::query!(
        "INSERT INTO generations (id, account_id, api_key_id, voice_id, engine, text, seed,
                                  temperature, format, status)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'generating')",
        generation.id,
        generation.account_id,
        generation.api_key_id,
        generation.voice_id,
        generation.engine,
        generation.text,
        generation.seed,
        generation.temperature,
        generation.format
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
    pub text: String,
    pub seed: i64,
    pub temperature: Option<f32>,
    pub format: String,
    pub preset: Option<String>,
    pub language: String,
    pub attempts: i32,
}

/// Claims the oldest claimable generation for `worker`, or `None`.
pub async fn claim(pool: &PgPool, worker: &str, lease: Duration) -> sqlx::Result<Option<Job>> {
    sqlx::query_as!(
        Job,
        r#"WITH next AS (
               SELECT id FROM generations
               WHERE status = 'generating' AND attempts < max_attempts
                 AND (lease_expires_at IS NULL OR lease_expires_at < now())
               ORDER BY created_at
               FOR UPDATE SKIP LOCKED
               LIMIT 1)
           UPDATE generations g
           SET attempts = g.attempts + 1, lease_owner = $1,
               lease_expires_at = now() + make_interval(secs => $2),
               started_at = COALESCE(g.started_at, now()), updated_at = now()
           FROM next, voice_profiles v
           WHERE g.id = next.id AND v.id = g.voice_id
           RETURNING g.id, g.engine, g.text, g.seed, g.temperature, g.format, v.preset,
                     v.language, g.attempts"#,
        worker,
        lease.as_secs_f64()
    )
    .fetch_optional(pool)
    .await
}

/// Extends `worker`'s lease; `false` when the lease is no longer its own.
pub async fn renew(pool: &PgPool, id: &str, worker: &str, lease: Duration) -> sqlx::Result<bool> {
    let result = sqlx::query!(
        "UPDATE generations SET lease_expires_at = now() + make_interval(secs => $3)
         WHERE id = $1 AND lease_owner = $2 AND status = 'generating'",
        id,
        worker,
        lease.as_secs_f64()
    )
    .execute(pool)
    .await?;
    Ok(result.rows_affected() == 1)
}

/// Marks the generation completed and charges it, in one transaction: the ledger row, the
/// voice's generation count and the `completed` status commit together or not at all. `false`
/// when the lease was lost (another worker owns the row now; nothing is written).
pub async fn complete(
    pool: &PgPool,
    id: &str,
    worker: &str,
    audio_key: &str,
    duration_ms: i64,
) -> sqlx::Result<bool> {
    let mut tx = pool.begin().await?;
    let Some(row) = sqlx::query!(
        "UPDATE generations
         SET status = 'completed', audio_key = $3, duration_ms = $4, finished_at = now(),
             lease_owner = NULL, lease_expires_at = NULL, updated_at = now()
         WHERE id = $1 AND lease_owner = $2 AND status = 'generating'
         RETURNING account_id, api_key_id, voice_id",
        id,
        worker,
        audio_key,
        duration_ms
    )
    .fetch_optional(&mut *tx)
    .await?
    else {
        return Ok(false);
    };
    sqlx::query!(
        "INSERT INTO usage_ledger (account_id, api_key_id, generation_id, month, audio_ms)
         VALUES ($1, $2, $3, $4, $5)",
        row.account_id,
        row.api_key_id,
        id,
        month_of(Utc::now()),
        duration_ms
    )
    .execute(&mut *tx)
    .await?;
    sqlx::query!(
        "UPDATE voice_profiles SET generation_count = generation_count + 1 WHERE id = $1",
        row.voice_id
    )
    .execute(&mut *tx)
    .await?;
    sqlx::query!("SELECT pg_notify($1, $2)", DONE_CHANNEL, id)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(true)
}

/// Marks the generation failed with `error` (nothing is charged). `false` when the lease was lost.
pub async fn fail(pool: &PgPool, id: &str, worker: &str, error: &str) -> sqlx::Result<bool> {
    let mut tx = pool.begin().await?;
    let result = sqlx::query!(
        "UPDATE generations
         SET status = 'failed', error = $3, finished_at = now(), lease_owner = NULL,
             lease_expires_at = NULL, updated_at = now()
         WHERE id = $1 AND lease_owner = $2 AND status = 'generating'",
        id,
        worker,
        error
    )
    .execute(&mut *tx)
    .await?;
    if result.rows_affected() == 0 {
        return Ok(false);
    }
    sqlx::query!("SELECT pg_notify($1, $2)", DONE_CHANNEL, id)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(true)
}

/// Fails generations whose workers died on every attempt (their last lease expired with no
/// attempts left), so that they do not stay `generating` forever.
pub async fn fail_exhausted(pool: &PgPool) -> sqlx::Result<Vec<String>> {
    let mut tx = pool.begin().await?;
    let ids = sqlx::query_scalar!(
        "UPDATE generations
         SET status = 'failed', finished_at = now(), lease_owner = NULL, lease_expires_at = NULL,
             updated_at = now(),
             error = 'generation was interrupted ' || attempts || ' times (worker stopped); nothing was charged'
         WHERE status = 'generating' AND attempts >= max_attempts AND lease_expires_at < now()
         RETURNING id"
    )
    .fetch_all(&mut *tx)
    .await?;
    for id in &ids {
        sqlx::query!("SELECT pg_notify($1, $2)", DONE_CHANNEL, id)
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await?;
    Ok(ids)
}

/// Status of a generation, for waiters (`None`: no such generation).
pub async fn status(pool: &PgPool, id: &str) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar!("SELECT status FROM generations WHERE id = $1", id)
        .fetch_optional(pool)
        .await
}
