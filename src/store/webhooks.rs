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

/// Pending deliveries an endpoint may have; an event that finds its endpoint with this many
/// is not written for it (docs/webhooks.md, "Fairness and bounds"). A constant of the store
/// because the event's writers (`store::queue`, `service::transcription`) call it directly.
pub const MAX_PENDING_PER_ENDPOINT: i64 = 1000;

/// Records `event_type` about generation `generation_id` for every enabled endpoint of the
/// generation's account that wants it and has fewer than [`MAX_PENDING_PER_ENDPOINT`] pending:
/// call inside the transaction that records the event.
pub async fn generation_event(
    conn: &mut PgConnection,
    generation_id: &str,
    event_type: &str,
) -> sqlx::Result<()> {
    sqlx::query!(
        "INSERT INTO webhook_deliveries (id, endpoint_id, account_id, event_type, subject_id, event_at)
         SELECT 'msg_' || replace(gen_random_uuid()::text, '-', ''), e.id, e.account_id, $2, g.id, now()
         FROM generations g JOIN webhook_endpoints e ON e.account_id = g.account_id
         WHERE g.id = $1 AND e.enabled AND $2 = ANY (e.events)
           AND (SELECT count(*) FROM (
                    SELECT 1 FROM webhook_deliveries p
                    WHERE p.endpoint_id = e.id AND p.state = 'pending' LIMIT $3) backlog) < $3",
        generation_id,
        event_type,
        MAX_PENDING_PER_ENDPOINT
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Records `event_type` about `subject_id` of `account_id` for every enabled endpoint of the
/// account that wants it and has fewer than [`MAX_PENDING_PER_ENDPOINT`] pending: call inside
/// the transaction that records the event.
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
         WHERE e.account_id = $1 AND e.enabled AND $2 = ANY (e.events)
           AND (SELECT count(*) FROM (
                    SELECT 1 FROM webhook_deliveries p
                    WHERE p.endpoint_id = e.id AND p.state = 'pending' LIMIT $4) backlog) < $4",
        account_id,
        event_type,
        subject_id,
        MAX_PENDING_PER_ENDPOINT
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

/// Takes the account's row lock, so that two creations cannot both pass the endpoint limit;
/// returns its plan (`None`: no such account).
pub async fn lock_account(
    conn: &mut PgConnection,
    account_id: &str,
) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar!(
        "SELECT plan FROM accounts WHERE id = $1 FOR UPDATE",
        account_id
    )
    .fetch_optional(conn)
    .await
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

/// How many deliveries may be held (in flight) at once, across every process.
#[derive(Debug, Clone, Copy)]
pub struct InFlightCaps {
    pub per_endpoint: i64,
    pub per_account: i64,
}

/// One turn of the claim (migration 0025): the account whose turn it is (due, served least
/// recently) and up to `limit` of its due deliveries within `caps`, each held for
/// `hold_secs` (another worker skips them meanwhile; one whose worker died is due again after
/// it), the attempt counted. `None` when no account is due. The account goes to the back of
/// the turns whether or not it had anything claimable.
pub async fn claim_turn(
    pool: &PgPool,
    limit: i64,
    caps: InFlightCaps,
    hold_secs: f64,
) -> sqlx::Result<Option<Vec<DueDelivery>>> {
    let mut tx = pool.begin().await?;
    let Some(account_id) = next_turn(&mut tx).await? else {
        return Ok(None);
    };
    let due = claim_for(&mut tx, &account_id, limit, caps, hold_secs).await?;
    end_turn(&mut tx, &account_id, caps).await?;
    tx.commit().await?;
    Ok(Some(due))
}

/// The due account served least recently, locked for the turn (`SKIP LOCKED`: concurrent
/// claimers take different accounts; writers of its deliveries wait for the turn to end).
async fn next_turn(conn: &mut PgConnection) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar!(
        "SELECT account_id FROM webhook_accounts WHERE due_at <= now()
         ORDER BY last_served_at NULLS FIRST, account_id LIMIT 1 FOR UPDATE SKIP LOCKED"
    )
    .fetch_optional(conn)
    .await
}

/// Claims up to `limit` due deliveries of the account's enabled endpoints: each endpoint's
/// oldest first, round robin from the endpoint served least recently, within `caps`.
async fn claim_for(
    conn: &mut PgConnection,
    account_id: &str,
    limit: i64,
    caps: InFlightCaps,
    hold_secs: f64,
) -> sqlx::Result<Vec<DueDelivery>> {
    sqlx::query_as!(
        DueDelivery,
        r#"WITH ep AS (
               SELECT e.id, e.last_served_at,
                      (SELECT count(*) FROM webhook_deliveries h
                       WHERE h.endpoint_id = e.id AND h.state = 'pending'
                         AND h.locked_until > now()) AS held
               FROM webhook_endpoints e
               WHERE e.account_id = $1 AND e.enabled
               FOR UPDATE OF e SKIP LOCKED
           ),
           account_held AS (
               SELECT count(*) AS n FROM webhook_endpoints e
               JOIN webhook_deliveries h ON h.endpoint_id = e.id
               WHERE e.account_id = $1 AND h.state = 'pending' AND h.locked_until > now()
           ),
           due AS (
               SELECT d.id, ep.id AS endpoint_id, ep.last_served_at, ep.held,
                      row_number() OVER (PARTITION BY ep.id ORDER BY d.next_attempt_at, d.id) AS nth
               FROM ep CROSS JOIN LATERAL (
                   SELECT d.id, d.next_attempt_at FROM webhook_deliveries d
                   WHERE d.endpoint_id = ep.id AND d.state = 'pending' AND d.next_attempt_at <= now()
                     AND (d.locked_until IS NULL OR d.locked_until <= now())
                   ORDER BY d.next_attempt_at, d.id
                   LIMIT $3
                   FOR UPDATE SKIP LOCKED
               ) d
           ),
           chosen AS (
               SELECT ranked.id, ranked.endpoint_id FROM (
                   SELECT due.id, due.endpoint_id,
                          row_number() OVER (ORDER BY due.nth, due.last_served_at NULLS FIRST,
                                                      due.endpoint_id) AS k
                   FROM due WHERE due.nth <= $3 - due.held
               ) ranked, account_held
               WHERE ranked.k <= LEAST($2, $4 - account_held.n)
           ),
           served AS (
               UPDATE webhook_endpoints e SET last_served_at = now()
               WHERE e.id IN (SELECT endpoint_id FROM chosen)
           ),
           claimed AS (
               UPDATE webhook_deliveries d
               SET locked_until = now() + make_interval(secs => $5), attempts = d.attempts + 1
               FROM chosen WHERE d.id = chosen.id
               RETURNING d.id, d.endpoint_id, d.account_id, d.event_type, d.subject_id,
                         d.event_at, d.attempts, d.created_at
           )
           SELECT c.id AS "id!", c.endpoint_id AS "endpoint_id!", c.account_id AS "account_id!",
                  c.event_type AS "event_type!", c.subject_id AS "subject_id!",
                  c.event_at AS "event_at!", c.attempts AS "attempts!",
                  c.created_at AS "created_at!", e.url AS "url!",
                  e.secret_sealed AS "secret_sealed!", e.previous_sealed, e.previous_expires_at
           FROM claimed c JOIN webhook_endpoints e ON e.id = c.endpoint_id"#,
        account_id,
        limit,
        caps.per_endpoint,
        caps.per_account,
        hold_secs
    )
    .fetch_all(conn)
    .await
}

/// Ends the account's turn: to the back of the turns, due again at the earliest of its
/// endpoints' next attempts, or, for an endpoint (or the whole account) at its cap, when its
/// first hold lapses (a hold that ends sooner makes it due at once: migration 0025's trigger).
async fn end_turn(
    conn: &mut PgConnection,
    account_id: &str,
    caps: InFlightCaps,
) -> sqlx::Result<()> {
    sqlx::query!(
        "UPDATE webhook_accounts a SET last_served_at = now(), due_at = (
             SELECT CASE WHEN sum(ep.held)::bigint >= $3 THEN min(ep.released)
                         ELSE min(CASE WHEN ep.held >= $2 THEN ep.released
                                       ELSE LEAST(ep.due, ep.released) END)
                    END
             FROM (
                 SELECT
                     (SELECT count(*) FROM webhook_deliveries h
                      WHERE h.endpoint_id = e.id AND h.state = 'pending'
                        AND h.locked_until > now()) AS held,
                     (SELECT min(h.locked_until) FROM webhook_deliveries h
                      WHERE h.endpoint_id = e.id AND h.state = 'pending'
                        AND h.locked_until > now()) AS released,
                     (SELECT min(d.next_attempt_at) FROM webhook_deliveries d
                      WHERE d.endpoint_id = e.id AND d.state = 'pending'
                        AND (d.locked_until IS NULL OR d.locked_until <= now())) AS due
                 FROM webhook_endpoints e WHERE e.account_id = $1 AND e.enabled
             ) ep
         )
         WHERE a.account_id = $1",
        account_id,
        caps.per_endpoint,
        caps.per_account
    )
    .execute(conn)
    .await?;
    Ok(())
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

/// Disables the endpoint (`reason`: `gone` or `failing`): the claim skips it, and its pending
/// deliveries are deleted by the next [`purge_disabled`].
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

/// Counts one resend against the account's one-minute window (a fixed window: a new one
/// starts with the first resend a minute or more after the last window began); `false` when
/// the window already holds `per_minute`. Takes the turn row's lock: concurrent resends of one
/// account count one after the other.
pub async fn take_resend(
    conn: &mut PgConnection,
    account_id: &str,
    per_minute: i32,
) -> sqlx::Result<bool> {
    Ok(sqlx::query_scalar!(
        "INSERT INTO webhook_accounts (account_id, resends_since, resends) VALUES ($1, now(), 1)
         ON CONFLICT (account_id) DO UPDATE
         SET resends_since = CASE WHEN webhook_accounts.resends_since <= now() - interval '1 minute'
                                  THEN now() ELSE webhook_accounts.resends_since END,
             resends = CASE WHEN webhook_accounts.resends_since <= now() - interval '1 minute'
                            THEN 1 ELSE webhook_accounts.resends + 1 END
         WHERE webhook_accounts.resends_since <= now() - interval '1 minute'
            OR webhook_accounts.resends < $2
         RETURNING account_id",
        account_id,
        per_minute
    )
    .fetch_optional(conn)
    .await?
    .is_some())
}

/// Whole seconds until the account's resend window ends (at least 1).
pub async fn resend_wait_secs(conn: &mut PgConnection, account_id: &str) -> sqlx::Result<i64> {
    Ok(sqlx::query_scalar!(
        r#"SELECT GREATEST(1, ceil(extract(epoch FROM
                      resends_since + interval '1 minute' - now())))::bigint AS "secs!"
           FROM webhook_accounts WHERE account_id = $1"#,
        account_id
    )
    .fetch_optional(conn)
    .await?
    .unwrap_or(60))
}

/// Makes the account's delivery `id` due now again (same `webhook-id`, same event time, so the
/// same retry window). `None` when the account has none such; `Some(true)` when it is being
/// sent now (left as is: the send in progress counts), `Some(false)` when it was made due.
pub async fn resend(
    conn: &mut PgConnection,
    account_id: &str,
    id: &str,
) -> sqlx::Result<Option<bool>> {
    sqlx::query_scalar!(
        r#"WITH target AS (
               SELECT id, (state = 'pending' AND COALESCE(locked_until > now(), false)) AS held
               FROM webhook_deliveries WHERE account_id = $1 AND id = $2 FOR UPDATE
           ),
           made_due AS (
               UPDATE webhook_deliveries d
               SET state = 'pending', next_attempt_at = now(), locked_until = NULL
               FROM target WHERE d.id = target.id AND NOT target.held
           )
           SELECT held AS "held!" FROM target"#,
        account_id,
        id
    )
    .fetch_optional(conn)
    .await
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

/// Deletes the pending deliveries of disabled endpoints (disabled by the receiver, by 3 days of
/// failures, or with their deleted account): they would never be sent. Returns how many.
pub async fn purge_disabled(pool: &PgPool) -> sqlx::Result<u64> {
    let done = sqlx::query!(
        "DELETE FROM webhook_deliveries
         WHERE state = 'pending'
           AND endpoint_id IN (SELECT id FROM webhook_endpoints WHERE NOT enabled)"
    )
    .execute(pool)
    .await?;
    Ok(done.rows_affected())
}
