//! Idempotency records. The primary key (account, key) makes concurrent duplicates safe: exactly
//! one INSERT wins; the others read the winner's row.

use std::time::Duration;

use sqlx::PgPool;

/// How long a completed record answers replays. Older records are purged and the key is new again.
pub const RETENTION: Duration = Duration::from_secs(48 * 3600);

/// A record written before idempotency stored outcomes (migration 0014): the HTTP answer REST
/// sent. Still read (never written) until the last of them expires.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LegacyResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Set for a synchronous speech request: the answer is that generation's audio (the bytes
    /// live in the blob store, not here).
    pub generation_id: Option<String>,
}

/// What a completed record holds.
#[derive(Debug, Clone, PartialEq)]
pub enum Stored {
    /// The operation's name and its outcome (`service::idempotency::Outcome` as JSON).
    Outcome {
        operation: String,
        outcome: serde_json::Value,
    },
    /// A record in the shape before migration 0014.
    Legacy(LegacyResponse),
}

pub enum Begin {
    /// This request owns the key: run it, then `complete` or `abandon`.
    Proceed,
    /// The key's request finished before: answer with what it stored.
    Replay(Stored),
    /// The key's first request is still running.
    InUse,
    /// The key was used with a different request.
    Reused,
}

/// Claims `key` for a request whose fingerprint is `request_sha256`. An in-progress record older
/// than `abandoned_after` belongs to a process that died mid-request; it is taken over.
pub async fn begin(
    pool: &PgPool,
    account_id: &str,
    key: &str,
    request_sha256: &[u8],
    abandoned_after: Duration,
) -> sqlx::Result<Begin> {
    let retention_secs = RETENTION.as_secs_f64();
    // Two rounds at most: a stale record is removed, then the insert is tried again.
    for _ in 0..2 {
        // Never for a deleted account (read under a share lock: the record commits before the
        // deletion, and the purge removes it, or not at all).
        let inserted = sqlx::query!(
            "INSERT INTO idempotency_records (account_id, key, request_sha256, state)
             SELECT a.id, $2, $3, 'in_progress' FROM accounts a
             WHERE a.id = $1 AND a.deleted_at IS NULL FOR SHARE
             ON CONFLICT DO NOTHING",
            account_id,
            key,
            request_sha256
        )
        .execute(pool)
        .await?;
        if inserted.rows_affected() == 1 {
            return Ok(Begin::Proceed);
        }
        let Some(row) = sqlx::query!(
            r#"SELECT request_sha256, state, operation, outcome, response_status,
                      response_headers, response_body, generation_id,
                      created_at < now() - make_interval(secs => $3) AS "expired!",
                      created_at < now() - make_interval(secs => $4) AS "abandoned!"
               FROM idempotency_records WHERE account_id = $1 AND key = $2"#,
            account_id,
            key,
            retention_secs,
            abandoned_after.as_secs_f64()
        )
        .fetch_optional(pool)
        .await?
        else {
            continue; // deleted between our insert and select: try again
        };
        let abandoned = row.state == "in_progress" && row.abandoned;
        if row.expired || abandoned {
            sqlx::query!(
                "DELETE FROM idempotency_records WHERE account_id = $1 AND key = $2 AND state = $3",
                account_id,
                key,
                row.state
            )
            .execute(pool)
            .await?;
            continue;
        }
        if row.request_sha256 != request_sha256 {
            return Ok(Begin::Reused);
        }
        if row.state == "in_progress" {
            return Ok(Begin::InUse);
        }
        if let (Some(operation), Some(outcome)) = (row.operation, row.outcome) {
            return Ok(Begin::Replay(Stored::Outcome { operation, outcome }));
        }
        let headers: Vec<(String, String)> = row
            .response_headers
            .and_then(|h| serde_json::from_value(h).ok())
            .unwrap_or_default();
        return Ok(Begin::Replay(Stored::Legacy(LegacyResponse {
            status: row.response_status.unwrap_or(200) as u16,
            headers,
            body: row.response_body.unwrap_or_default(),
            generation_id: row.generation_id,
        })));
    }
    Ok(Begin::InUse)
}

/// Stores what the operation produced, for replays. Call it in the transaction that commits the
/// work (the generation or the capture), so that the record and the work commit together.
pub async fn complete<'c>(
    conn: impl sqlx::PgExecutor<'c>,
    account_id: &str,
    key: &str,
    operation: &str,
    outcome: &serde_json::Value,
) -> sqlx::Result<()> {
    sqlx::query!(
        "UPDATE idempotency_records SET state = 'completed', operation = $3, outcome = $4
         WHERE account_id = $1 AND key = $2",
        account_id,
        key,
        operation,
        outcome
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Completes a record in the shape written before migration 0014 (an HTTP answer), so that
/// tests can prove such records still replay.
pub async fn complete_legacy<'c>(
    conn: impl sqlx::PgExecutor<'c>,
    account_id: &str,
    key: &str,
    response: &LegacyResponse,
) -> sqlx::Result<()> {
    let headers = serde_json::to_value(&response.headers).unwrap_or_default();
    sqlx::query!(
        "UPDATE idempotency_records
         SET state = 'completed', response_status = $3, response_headers = $4, response_body = $5,
             generation_id = $6
         WHERE account_id = $1 AND key = $2",
        account_id,
        key,
        i32::from(response.status),
        headers,
        &response.body,
        response.generation_id
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Releases the key after a request that changed nothing (refused or failed), so that the
/// client may retry with the same key.
pub async fn abandon(pool: &PgPool, account_id: &str, key: &str) -> sqlx::Result<()> {
    sqlx::query!(
        "DELETE FROM idempotency_records WHERE account_id = $1 AND key = $2 AND state = 'in_progress'",
        account_id,
        key
    )
    .execute(pool)
    .await?;
    Ok(())
}

/// Deletes the key's record whatever its state (its answer must not be replayed, e.g. a
/// synchronous generation that was cancelled).
pub async fn forget(pool: &PgPool, account_id: &str, key: &str) -> sqlx::Result<()> {
    sqlx::query!(
        "DELETE FROM idempotency_records WHERE account_id = $1 AND key = $2",
        account_id,
        key
    )
    .execute(pool)
    .await?;
    Ok(())
}

/// Drops records past retention.
pub async fn purge(pool: &PgPool) -> sqlx::Result<u64> {
    let result = sqlx::query!(
        "DELETE FROM idempotency_records WHERE created_at < now() - make_interval(secs => $1)",
        RETENTION.as_secs_f64()
    )
    .execute(pool)
    .await?;
    Ok(result.rows_affected())
}
