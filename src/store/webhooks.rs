//! Webhook endpoints and the outbox of their deliveries (migration 0019). The rules (what an
//! endpoint may be, when to retry, when to give up) are `service::webhooks`'.

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool};

/// The events an endpoint can ask for.
pub const GENERATION_COMPLETED: &str = "generation.completed";
pub const GENERATION_FAILED: &str = "generation.failed";
pub const CAPTURE_CREATED: &str = "capture.created";

/// An endpoint as the account sees it (its secrets stay sealed here).
#[derive(Debug, Clone)]
pub struct EndpointRow {
    pub id: String,
    pub url: String,
    pub events: Vec<String>,
    pub description: String,
    pub enabled: bool,
    pub disabled_reason: Option<String>,
    pub failing_since: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
}

pub struct NewEndpoint<'a> {
    pub id: &'a str,
    pub account_id: &'a str,
    pub url: &'a str,
    pub events: &'a [String],
    pub description: &'a str,
    pub secret_sealed: &'a [u8],
}

/// Records `event_type` about generation `generation_id` for every enabled endpoint of the
/// generation's account that wants it: call inside the transaction that records the event.
pub async fn generation_event(
    conn: &mut PgConnection,
    generation_id: &str,
    event_type: &str,
) -> sqlx::Result<()> {
    sqlx::query!(
        "INSERT INTO webhook_deliveries (id, endpoint_id, account_id, event_type, subject_id, event_at)
         SELECT 'msg_' || replace(gen_random_uuid()::text, '-', ''), e.id, e.account_id, $2, g.id, now()
         FROM generations g JOIN webhook_endpoints e ON e.account_id = g.account_id
         WHERE g.id = $1 AND e.enabled AND $2 = ANY (e.events)",
        generation_id,
        event_type
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Records `event_type` about `subject_id` of `account_id` for every enabled endpoint of the
/// account that wants it: call inside the transaction that records the event.
pub async fn account_event(
    conn: &mut PgConnection,
    account_id: &str,
    event_type: &str,
    subject_id: &str,
) -> sqlx::Result<()> {
    sqlx::query!(
        "INSERT INTO webhook_deliveries (id, endpoint_id, account_id, event_type, subject_id, event_at)
         SELECT 'msg_' || replace(gen_random_uuid()::text, '-', ''), e.id, e.account_id, $2, $3, now()
         FROM webhook_endpoints e
         WHERE e.account_id = $1 AND e.enabled AND $2 = ANY (e.events)",
        account_id,
        event_type,
        subject_id
    )
    .execute(conn)
    .await?;
    Ok(())
}

pub async fn count(conn: &mut PgConnection, account_id: &str) -> sqlx::Result<i64> {
    sqlx::query_scalar!(
        r#"SELECT count(*) AS "n!" FROM webhook_endpoints WHERE account_id = $1"#,
        account_id
    )
    .fetch_one(conn)
    .await
}

/// Takes the account's row lock, so that two creations cannot both pass the endpoint limit.
pub async fn lock_account(conn: &mut PgConnection, account_id: &str) -> sqlx::Result<bool> {
    Ok(sqlx::query_scalar!(
        "SELECT id FROM accounts WHERE id = $1 FOR UPDATE",
        account_id
    )
    .fetch_optional(conn)
    .await?
    .is_some())
}

pub async fn insert(
    conn: &mut PgConnection,
    endpoint: NewEndpoint<'_>,
) -> sqlx::Result<DateTime<Utc>> {
    sqlx::query_scalar!(
        "INSERT INTO webhook_endpoints (id, account_id, url, events, description, secret_sealed)
         VALUES ($1, $2, $3, $4, $5, $6) RETURNING created_at",
        endpoint.id,
        endpoint.account_id,
        endpoint.url,
        endpoint.events,
        endpoint.description,
        endpoint.secret_sealed
    )
    .fetch_one(conn)
    .await
}

/// The account's endpoints, oldest first.
pub async fn list(pool: &PgPool, account_id: &str) -> sqlx::Result<Vec<EndpointRow>> {
    sqlx::query_as!(
        EndpointRow,
        "SELECT id, url, events, description, enabled, disabled_reason, failing_since, created_at
         FROM webhook_endpoints WHERE account_id = $1 ORDER BY created_at, id",
        account_id
    )
    .fetch_all(pool)
    .await
}

/// The account's endpoint `id` (another account's is absent).
pub async fn find(pool: &PgPool, account_id: &str, id: &str) -> sqlx::Result<Option<EndpointRow>> {
    sqlx::query_as!(
        EndpointRow,
        "SELECT id, url, events, description, enabled, disabled_reason, failing_since, created_at
         FROM webhook_endpoints WHERE account_id = $1 AND id = $2",
        account_id,
        id
    )
    .fetch_optional(pool)
    .await
}

/// Deletes the account's endpoint `id` and its deliveries; `false` when it has none such.
pub async fn delete(pool: &PgPool, account_id: &str, id: &str) -> sqlx::Result<bool> {
    let done = sqlx::query!(
        "DELETE FROM webhook_endpoints WHERE account_id = $1 AND id = $2",
        account_id,
        id
    )
    .execute(pool)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Replaces the endpoint's secret; the current one keeps signing until `previous_until`.
/// `false` when the account has no endpoint `id`.
pub async fn rotate(
    pool: &PgPool,
    account_id: &str,
    id: &str,
    sealed: &[u8],
    previous_until: DateTime<Utc>,
) -> sqlx::Result<bool> {
    let done = sqlx::query!(
        "UPDATE webhook_endpoints
         SET previous_sealed = secret_sealed, previous_expires_at = $4, secret_sealed = $3
         WHERE account_id = $1 AND id = $2",
        account_id,
        id,
        sealed,
        previous_until
    )
    .execute(pool)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// A delivery claimed for one attempt, with what sending it needs.
#[derive(Debug)]
pub struct DueDelivery {
    pub id: String,
    pub endpoint_id: String,
    pub account_id: String,
    pub event_type: String,
    pub subject_id: String,
    pub event_at: DateTime<Utc>,
    /// This attempt's number (1 for the first).
    pub attempts: i32,
    pub created_at: DateTime<Utc>,
    pub url: String,
    pub secret_sealed: Vec<u8>,
    pub previous_sealed: Option<Vec<u8>>,
    pub previous_expires_at: Option<DateTime<Utc>>,
}

/// Claims up to `limit` due deliveries of enabled endpoints for `hold_secs` (another worker
/// skips them meanwhile; one whose worker died is due again after it), counting the attempt.
pub async fn claim_due(
    pool: &PgPool,
    limit: i64,
    hold_secs: f64,
) -> sqlx::Result<Vec<DueDelivery>> {
    sqlx::query_as!(
        DueDelivery,
        r#"WITH due AS (
               SELECT d.id FROM webhook_deliveries d
               JOIN webhook_endpoints e ON e.id = d.endpoint_id
               WHERE d.state = 'pending' AND d.next_attempt_at <= now()
                 AND (d.locked_until IS NULL OR d.locked_until < now()) AND e.enabled
               ORDER BY d.next_attempt_at
               LIMIT $1
               FOR UPDATE OF d SKIP LOCKED
           )
           UPDATE webhook_deliveries d
           SET locked_until = now() + make_interval(secs => $2), attempts = d.attempts + 1
           FROM due, webhook_endpoints e
           WHERE d.id = due.id AND e.id = d.endpoint_id
           RETURNING d.id, d.endpoint_id, d.account_id, d.event_type, d.subject_id, d.event_at,
                     d.attempts, d.created_at, e.url, e.secret_sealed, e.previous_sealed,
                     e.previous_expires_at"#,
        limit,
        hold_secs
    )
    .fetch_all(pool)
    .await
}

/// A 2xx came back: the delivery is done and its endpoint is no longer failing.
pub async fn delivered(
    pool: &PgPool,
    id: &str,
    endpoint_id: &str,
    status: i32,
) -> sqlx::Result<()> {
    let mut tx = pool.begin().await?;
    sqlx::query!(
        "UPDATE webhook_deliveries
         SET state = 'delivered', last_status = $2, last_error = NULL, last_attempt_at = now(),
             locked_until = NULL
         WHERE id = $1",
        id,
        status
    )
    .execute(&mut *tx)
    .await?;
    sqlx::query!(
        "UPDATE webhook_endpoints SET failing_since = NULL WHERE id = $1",
        endpoint_id
    )
    .execute(&mut *tx)
    .await?;
    tx.commit().await
}

/// An attempt failed: the delivery is tried again at `next` (or, with `None`, given up), and
/// the endpoint counts as failing since its first failure after a success (returned).
pub async fn attempt_failed(
    pool: &PgPool,
    id: &str,
    endpoint_id: &str,
    status: Option<i32>,
    error: &str,
    next: Option<DateTime<Utc>>,
) -> sqlx::Result<DateTime<Utc>> {
    let mut tx = pool.begin().await?;
    sqlx::query!(
        "UPDATE webhook_deliveries
         SET state = CASE WHEN $4::timestamptz IS NULL THEN 'failed' ELSE 'pending' END,
             next_attempt_at = COALESCE($4, next_attempt_at), last_status = $2, last_error = $3,
             last_attempt_at = now(), locked_until = NULL
         WHERE id = $1",
        id,
        status,
        error,
        next
    )
    .execute(&mut *tx)
    .await?;
    let since = sqlx::query_scalar!(
        r#"UPDATE webhook_endpoints SET failing_since = COALESCE(failing_since, now())
           WHERE id = $1 RETURNING failing_since AS "since!""#,
        endpoint_id
    )
    .fetch_optional(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(since.unwrap_or_else(Utc::now))
}

/// Disables the endpoint (`reason`: `gone` or `failing`); its pending deliveries wait.
pub async fn disable(pool: &PgPool, endpoint_id: &str, reason: &str) -> sqlx::Result<()> {
    sqlx::query!(
        "UPDATE webhook_endpoints SET enabled = false, disabled_reason = $2 WHERE id = $1",
        endpoint_id,
        reason
    )
    .execute(pool)
    .await?;
    Ok(())
}

/// One delivery as the console lists it.
#[derive(Debug, Clone)]
pub struct DeliveryRow {
    pub id: String,
    pub event_type: String,
    pub subject_id: String,
    pub state: String,
    pub attempts: i32,
    pub last_status: Option<i32>,
    pub last_error: Option<String>,
    pub next_attempt_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
}

/// The endpoint's most recent deliveries, newest first (the account's endpoint only).
pub async fn recent(
    pool: &PgPool,
    account_id: &str,
    endpoint_id: &str,
    limit: i64,
) -> sqlx::Result<Vec<DeliveryRow>> {
    sqlx::query_as!(
        DeliveryRow,
        r#"SELECT id, event_type, subject_id, state, attempts, last_status, last_error,
                  CASE WHEN state = 'pending' THEN next_attempt_at END AS next_attempt_at,
                  created_at
           FROM webhook_deliveries
           WHERE account_id = $1 AND endpoint_id = $2
           ORDER BY created_at DESC, id DESC LIMIT $3"#,
        account_id,
        endpoint_id,
        limit
    )
    .fetch_all(pool)
    .await
}

/// Makes the account's delivery `id` due now again (same `webhook-id`); `false` when it has
/// none such.
pub async fn resend(pool: &PgPool, account_id: &str, id: &str) -> sqlx::Result<bool> {
    let done = sqlx::query!(
        "UPDATE webhook_deliveries
         SET state = 'pending', next_attempt_at = now(), locked_until = NULL, created_at = now()
         WHERE account_id = $1 AND id = $2",
        account_id,
        id
    )
    .execute(pool)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Deletes finished deliveries (delivered or given up) recorded more than `days` days ago;
/// returns how many.
pub async fn purge(pool: &PgPool, days: i32) -> sqlx::Result<u64> {
    let done = sqlx::query!(
        "DELETE FROM webhook_deliveries
         WHERE state <> 'pending' AND created_at < now() - make_interval(days => $1)",
        days
    )
    .execute(pool)
    .await?;
    Ok(done.rows_affected())
}
