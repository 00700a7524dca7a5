use chrono::{DateTime, Utc};
use sqlx::PgPool;

use super::keys::Checked;
use crate::domain::{EngineId, GenerationStatus};

/// A generation as the API shows it.
pub struct GenerationRow {
    pub id: String,
    pub voice_id: String,
    pub engine: EngineId,
    pub status: GenerationStatus,
    pub error: Option<String>,
    /// Failed because its caller went away or gave up (`cancel_reason`, never the error's
    /// text; migration 0014).
    pub cancelled: bool,
    pub seed: i64,
    pub format: String,
    pub duration_ms: Option<i64>,
    pub has_audio: bool,
    pub created_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
    /// Audio the worker has rendered so far (migration 0018) and the estimate admitted.
    pub rendered_ms: i64,
    pub estimated_ms: i64,
    /// Generating and held by no worker (never claimed, handed back, or its lease expired).
    pub queued: bool,
    /// When queued: the queued generations of every account created before it.
    pub queue_position: Option<i64>,
    /// Asked for word timestamps and completed: the words (`engines::text::timing::SpokenWord`
    /// as JSON, migration 0021).
    pub words: Option<serde_json::Value>,
}

/// The account's generation, or `None` when it does not exist or belongs to another account
/// (callers answer both the same way).
pub async fn find(
    pool: &PgPool,
    account_id: &str,
    id: &str,
) -> sqlx::Result<Option<GenerationRow>> {
    sqlx::query_as!(
        GenerationRow,
        r#"SELECT id, voice_id, engine AS "engine: EngineId",
                  status AS "status: GenerationStatus", error,
                  (status = 'failed' AND cancel_reason IS NOT NULL) AS "cancelled!",
                  seed, format, duration_ms, audio_key IS NOT NULL AS "has_audio!", created_at,
                  finished_at, rendered_ms, estimated_ms,
                  (status = 'generating' AND (lease_expires_at IS NULL OR lease_expires_at < now()))
                      AS "queued!",
                  CASE WHEN status = 'generating'
                            AND (lease_expires_at IS NULL OR lease_expires_at < now())
                       THEN generation_queue_position(created_at, id, queue_seq)
                  END AS queue_position, words
           FROM generations WHERE id = $1 AND account_id = $2"#,
        id,
        account_id
    )
    .fetch_optional(pool)
    .await
}

/// [`find`] for an API read, with the asking credential's fingerprint from the same statement
/// (`credential_fingerprints`, migration 0006).
pub async fn find_checked(
    connection: &mut sqlx::PgConnection,
    credential_sha256: &[u8],
    account_id: &str,
    id: &str,
) -> sqlx::Result<Checked<Option<GenerationRow>>> {
    let row = sqlx::query!(
        r#"SELECT f.fingerprint AS "fingerprint!", g.id AS "id?", g.voice_id AS "voice_id?",
                  g.engine AS "engine?: EngineId", g.status AS "status?: GenerationStatus",
                  g.error AS "error?",
                  (g.status = 'failed' AND g.cancel_reason IS NOT NULL) AS "cancelled?",
                  g.seed AS "seed?", g.format AS "format?", g.duration_ms AS "duration_ms?",
                  g.audio_key IS NOT NULL AS "has_audio?", g.created_at AS "created_at?",
                  g.finished_at AS "finished_at?", g.rendered_ms AS "rendered_ms?",
                  g.estimated_ms AS "estimated_ms?",
                  (g.status = 'generating'
                   AND (g.lease_expires_at IS NULL OR g.lease_expires_at < now())) AS "queued?",
                  CASE WHEN g.status = 'generating'
                            AND (g.lease_expires_at IS NULL OR g.lease_expires_at < now())
                       THEN generation_queue_position(g.created_at, g.id, g.queue_seq)
                  END AS "queue_position?", g.words AS "words?"
           FROM credential_fingerprints f
           LEFT JOIN generations g ON g.id = $2 AND g.account_id = $3
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
        Some(GenerationRow {
            id: r.id?,
            voice_id: r.voice_id?,
            engine: r.engine?,
            status: r.status?,
            error: r.error,
            cancelled: r.cancelled?,
            seed: r.seed?,
            format: r.format?,
            duration_ms: r.duration_ms,
            has_audio: r.has_audio?,
            created_at: r.created_at?,
            finished_at: r.finished_at,
            rendered_ms: r.rendered_ms?,
            estimated_ms: r.estimated_ms?,
            queued: r.queued?,
            queue_position: r.queue_position,
            words: r.words,
        })
    })();
    Ok(Checked {
        fingerprint: Some(r.fingerprint),
        value,
    })
}

/// Which of the account's generations a list shows: all, or those with `status`, or those of
/// one voice (`voice` is the profile's id or its name).
#[derive(Debug, Clone, Copy, Default)]
pub struct ListFilter<'a> {
    pub status: Option<GenerationStatus>,
    pub voice: Option<&'a str>,
}

/// One page of the account's generations matching `filter`, newest first, and how many match
/// (both read in one snapshot).
pub async fn list(
    pool: &PgPool,
    account_id: &str,
    filter: ListFilter<'_>,
    limit: i64,
    offset: i64,
) -> sqlx::Result<(Vec<GenerationRow>, i64)> {
    let status = filter.status.map(GenerationStatus::as_str);
    let mut tx = pool.begin().await?;
    sqlx::query!("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        .execute(&mut *tx)
        .await?;
    let rows = sqlx::query_as!(
        GenerationRow,
        r#"SELECT g.id, g.voice_id, g.engine AS "engine: EngineId",
                  g.status AS "status: GenerationStatus", g.error,
                  (g.status = 'failed' AND g.cancel_reason IS NOT NULL) AS "cancelled!",
                  g.seed, g.format, g.duration_ms, g.audio_key IS NOT NULL AS "has_audio!",
                  g.created_at, g.finished_at, g.rendered_ms, g.estimated_ms,
                  (g.status = 'generating'
                   AND (g.lease_expires_at IS NULL OR g.lease_expires_at < now())) AS "queued!",
                  CASE WHEN g.status = 'generating'
                            AND (g.lease_expires_at IS NULL OR g.lease_expires_at < now())
                       THEN generation_queue_position(g.created_at, g.id, g.queue_seq)
                  END AS queue_position, g.words
           FROM generations g JOIN voice_profiles v ON v.id = g.voice_id
           WHERE g.account_id = $1
             AND ($2::text IS NULL OR g.status = $2)
             AND ($3::text IS NULL OR v.id = $3 OR v.name = $3)
           ORDER BY g.created_at DESC, g.id DESC LIMIT $4 OFFSET $5"#,
        account_id,
        status,
        filter.voice,
        limit,
        offset
    )
    .fetch_all(&mut *tx)
    .await?;
    let total = sqlx::query_scalar!(
        r#"SELECT count(*) AS "count!"
           FROM generations g JOIN voice_profiles v ON v.id = g.voice_id
           WHERE g.account_id = $1
             AND ($2::text IS NULL OR g.status = $2)
             AND ($3::text IS NULL OR v.id = $3 OR v.name = $3)"#,
        account_id,
        status,
        filter.voice
    )
    .fetch_one(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok((rows, total))
}

/// What the signed download needs: the audio's key and the owner's plan.
pub struct DownloadRow {
    pub audio_key: Option<String>,
    pub plan: String,
}

pub async fn for_download(pool: &PgPool, id: &str) -> sqlx::Result<Option<DownloadRow>> {
    sqlx::query_as!(
        DownloadRow,
        "SELECT g.audio_key, a.plan FROM generations g JOIN accounts a ON a.id = g.account_id
         WHERE g.id = $1 AND g.status = 'completed'",
        id
    )
    .fetch_optional(pool)
    .await
}

/// A generation as the console's history shows it.
pub struct HistoryRow {
    pub id: String,
    pub excerpt: String,
    pub voice_name: String,
    pub status: GenerationStatus,
    pub error: Option<String>,
    pub duration_ms: Option<i64>,
    pub has_audio: bool,
    pub created_at: DateTime<Utc>,
}

/// One page of the account's generations, newest first, and the account's total.
pub async fn history(
    pool: &PgPool,
    account_id: &str,
    limit: i64,
    offset: i64,
) -> sqlx::Result<(Vec<HistoryRow>, i64)> {
    let mut tx = pool.begin().await?;
    sqlx::query!("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        .execute(&mut *tx)
        .await?;
    let rows = sqlx::query_as!(
        HistoryRow,
        r#"SELECT g.id, left(g.text, 160) AS "excerpt!", v.name AS voice_name,
                  g.status AS "status: GenerationStatus", g.error,
                  g.duration_ms, g.audio_key IS NOT NULL AS "has_audio!", g.created_at
           FROM generations g JOIN voice_profiles v ON v.id = g.voice_id
           WHERE g.account_id = $1
           ORDER BY g.created_at DESC, g.id DESC LIMIT $2 OFFSET $3"#,
        account_id,
        limit,
        offset
    )
    .fetch_all(&mut *tx)
    .await?;
    let total = sqlx::query_scalar!(
        r#"SELECT count(*) AS "count!" FROM generations WHERE account_id = $1"#,
        account_id
    )
    .fetch_one(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok((rows, total))
}

/// Where the account's generation `id` stands for deleting its audio: `None` when it has no
/// such generation, else whether it is still generating and the key of its audio blob.
pub async fn audio_of(
    pool: &PgPool,
    account_id: &str,
    id: &str,
) -> sqlx::Result<Option<(bool, Option<String>)>> {
    let row = sqlx::query!(
        r#"SELECT status = 'generating' AS "generating!", audio_key
           FROM generations WHERE id = $1 AND account_id = $2"#,
        id,
        account_id
    )
    .fetch_optional(pool)
    .await?;
    Ok(row.map(|r| (r.generating, r.audio_key)))
}

/// Forgets a finished generation's audio (the row stays, for metering and history, with
/// `has_audio` false), once its blob is deleted.
pub async fn forget_audio(pool: &PgPool, id: &str) -> sqlx::Result<()> {
    sqlx::query!(
        "UPDATE generations SET audio_key = NULL, updated_at = now()
         WHERE id = $1 AND status <> 'generating'",
        id
    )
    .execute(pool)
    .await?;
    Ok(())
}
