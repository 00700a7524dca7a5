use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::PgPool;

use super::keys::Checked;

pub struct CaptureRow {
    pub id: String,
    pub source: String,
    pub language: String,
    pub duration_ms: i64,
    pub transcript_raw: String,
    pub transcript_refined: String,
    pub created_at: DateTime<Utc>,
}

/// One page of the account's captures, newest first, and the account's total.
pub async fn page(
    pool: &PgPool,
    account_id: &str,
    limit: i64,
    offset: i64,
) -> sqlx::Result<(Vec<CaptureRow>, i64)> {
    let mut tx = pool.begin().await?;
    // One snapshot for the page and the total, so they agree.
    sqlx::query!("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        .execute(&mut *tx)
        .await?;
    let rows = sqlx::query_as!(
        CaptureRow,
        "SELECT id, source, language, duration_ms, transcript_raw, transcript_refined, created_at
         FROM captures WHERE account_id = $1
         ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3",
        account_id,
        limit,
        offset
    )
    .fetch_all(&mut *tx)
    .await?;
    let total = sqlx::query_scalar!(
        r#"SELECT count(*) AS "count!" FROM captures WHERE account_id = $1"#,
        account_id
    )
    .fetch_one(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok((rows, total))
}

/// [`page`] for an API read, in one statement (one snapshot, so page and total agree) that also
/// returns the asking credential's fingerprint (`credential_fingerprints`, migration 0006).
pub async fn page_checked(
    connection: &mut sqlx::PgConnection,
    credential_sha256: &[u8],
    account_id: &str,
    limit: i64,
    offset: i64,
) -> sqlx::Result<Checked<(Vec<CaptureRow>, i64)>> {
    let rows = sqlx::query!(
        r#"SELECT f.fingerprint AS "fingerprint!",
                  (SELECT count(*) FROM captures WHERE account_id = $2) AS "total!",
                  p.id AS "id?", p.source AS "source?", p.language AS "language?",
                  p.duration_ms AS "duration_ms?", p.transcript_raw AS "transcript_raw?",
                  p.transcript_refined AS "transcript_refined?", p.created_at AS "created_at?"
           FROM credential_fingerprints f
           LEFT JOIN LATERAL (
               SELECT id, source, language, duration_ms, transcript_raw, transcript_refined,
                      created_at
               FROM captures WHERE account_id = $2
               ORDER BY created_at DESC, id DESC LIMIT $3 OFFSET $4
           ) p ON true
           WHERE f.credential_sha256 = $1
           ORDER BY p.created_at DESC, p.id DESC"#,
        credential_sha256,
        account_id,
        limit,
        offset
    )
    .fetch_all(connection)
    .await?;
    let fingerprint = rows.first().map(|r| r.fingerprint.clone());
    let total = rows.first().map_or(0, |r| r.total);
    // A page past the end gives one row whose capture columns are all NULL.
    let captures = rows
        .into_iter()
        .filter_map(|r| {
            Some(CaptureRow {
                id: r.id?,
                source: r.source?,
                language: r.language?,
                duration_ms: r.duration_ms?,
                transcript_raw: r.transcript_raw?,
                transcript_refined: r.transcript_refined?,
                created_at: r.created_at?,
            })
        })
        .collect();
    Ok(Checked {
        fingerprint,
        value: (captures, total),
    })
}

pub struct NewCapture<'a> {
    pub id: &'a str,
    pub account_id: &'a str,
    pub api_key_id: Option<&'a str>,
    pub source: &'a str,
    pub language: &'a str,
    pub duration_ms: i64,
    pub transcript_raw: &'a str,
    pub transcript_refined: &'a str,
    /// `transcribe` or `translate`.
    pub task: &'a str,
    /// `none`, `segment` or `word`: what was asked for.
    pub timestamps: &'a str,
    /// JSON arrays of `domain::Segment` and `domain::Word`, when asked for.
    pub segments: Option<Value>,
    pub words: Option<Value>,
}

/// Stores a capture; `None` (nothing stored) when its account was deleted meanwhile: the insert
/// reads the account under a share lock, so it either commits before the deletion's
/// transaction (and the purge removes it) or sees the deletion.
pub async fn insert<'c>(
    conn: impl sqlx::PgExecutor<'c>,
    capture: NewCapture<'_>,
) -> sqlx::Result<Option<DateTime<Utc>>> {
    sqlx::query_scalar!(
        r#"INSERT INTO captures (id, account_id, api_key_id, source, language, duration_ms,
                               transcript_raw, transcript_refined, task, timestamps, segments,
                               words)
           SELECT $1, a.id, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12
           FROM accounts a WHERE a.id = $2 AND a.deleted_at IS NULL FOR SHARE
           RETURNING created_at AS "created_at!""#,
        capture.id,
        capture.account_id,
        capture.api_key_id,
        capture.source,
        capture.language,
        capture.duration_ms,
        capture.transcript_raw,
        capture.transcript_refined,
        capture.task,
        capture.timestamps,
        capture.segments,
        capture.words
    )
    .fetch_optional(conn)
    .await
}

/// One capture with its timings.
pub struct CaptureDetail {
    pub capture: CaptureRow,
    pub task: String,
    pub timestamps: String,
    pub segments: Option<Value>,
    pub words: Option<Value>,
}

/// The account's capture `id` (another account's is absent).
pub async fn find(
    pool: &PgPool,
    account_id: &str,
    id: &str,
) -> sqlx::Result<Option<CaptureDetail>> {
    let row = sqlx::query!(
        "SELECT id, source, language, duration_ms, transcript_raw, transcript_refined,
                created_at, task, timestamps, segments, words
         FROM captures WHERE id = $1 AND account_id = $2",
        id,
        account_id
    )
    .fetch_optional(pool)
    .await?;
    Ok(row.map(|r| CaptureDetail {
        capture: CaptureRow {
            id: r.id,
            source: r.source,
            language: r.language,
            duration_ms: r.duration_ms,
            transcript_raw: r.transcript_raw,
            transcript_refined: r.transcript_refined,
            created_at: r.created_at,
        },
        task: r.task,
        timestamps: r.timestamps,
        segments: r.segments,
        words: r.words,
    }))
}

/// [`find`] for an API read, in one statement that also returns the asking credential's
/// fingerprint.
pub async fn find_checked(
    connection: &mut sqlx::PgConnection,
    credential_sha256: &[u8],
    account_id: &str,
    id: &str,
) -> sqlx::Result<Checked<Option<CaptureDetail>>> {
    let row = sqlx::query!(
        r#"SELECT f.fingerprint AS "fingerprint!", c.id AS "id?", c.source AS "source?",
                  c.language AS "language?", c.duration_ms AS "duration_ms?",
                  c.transcript_raw AS "transcript_raw?",
                  c.transcript_refined AS "transcript_refined?", c.created_at AS "created_at?",
                  c.task AS "task?", c.timestamps AS "timestamps?", c.segments, c.words
           FROM credential_fingerprints f
           LEFT JOIN captures c ON c.id = $2 AND c.account_id = $3
           WHERE f.credential_sha256 = $1"#,
        credential_sha256,
        id,
        account_id
    )
    .fetch_optional(connection)
    .await?;
    let Some(r) = row else {
        return Ok(Checked {
            fingerprint: None,
            value: None,
        });
    };
    let value = (|| {
        Some(CaptureDetail {
            capture: CaptureRow {
                id: r.id?,
                source: r.source?,
                language: r.language?,
                duration_ms: r.duration_ms?,
                transcript_raw: r.transcript_raw?,
                transcript_refined: r.transcript_refined?,
                created_at: r.created_at?,
            },
            task: r.task?,
            timestamps: r.timestamps?,
            segments: r.segments,
            words: r.words,
        })
    })();
    Ok(Checked {
        fingerprint: Some(r.fingerprint),
        value,
    })
}

/// How many captures the account made since `since`.
pub async fn count_since(
    pool: &PgPool,
    account_id: &str,
    since: DateTime<Utc>,
) -> sqlx::Result<i64> {
    sqlx::query_scalar!(
        r#"SELECT count(*) AS "count!" FROM captures WHERE account_id = $1 AND created_at >= $2"#,
        account_id,
        since
    )
    .fetch_one(pool)
    .await
}

/// Deletes the account's capture `id` and the idempotency outcomes that hold its transcript (a
/// replay of the request that made it must not give the text back); `false` when the account
/// has no such capture.
pub async fn delete(pool: &PgPool, account_id: &str, id: &str) -> sqlx::Result<bool> {
    let mut tx = pool.begin().await?;
    let deleted = sqlx::query!(
        "DELETE FROM captures WHERE id = $1 AND account_id = $2",
        id,
        account_id
    )
    .execute(&mut *tx)
    .await?
    .rows_affected();
    sqlx::query!(
        "DELETE FROM idempotency_records WHERE account_id = $1 AND outcome->>'capture_id' = $2",
        account_id,
        id
    )
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(deleted > 0)
}
