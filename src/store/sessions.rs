//! Console sessions in PostgreSQL: a `tower-sessions` store over the `console_sessions` table.
//!
//! Ours rather than `tower-sessions-sqlx-store`, whose sqlx `time` feature would switch every
//! `query!` in this crate from chrono to `time` timestamps. The id is the row's key, the
//! record's data a JSON object.
//!
//! Only [`SessionStore::create`] inserts (a new id: sign-in and sign-up, which `cycle_id`);
//! [`SessionStore::save`] updates a row that is still there, so ending a session (deleting its
//! row) cannot be undone by a request of that session that was already running.

use chrono::{DateTime, Utc};
use sqlx::PgPool;
use tower_sessions::cookie::time::OffsetDateTime;
use tower_sessions::session::{Id, Record};
use tower_sessions::session_store::{self, SessionStore};

#[derive(Debug, Clone)]
pub struct PgSessionStore {
    pool: PgPool,
}

impl PgSessionStore {
    pub fn new(pool: PgPool) -> Self {
        Self { pool }
    }
}

fn backend(err: impl std::fmt::Display) -> session_store::Error {
    session_store::Error::Backend(err.to_string())
}

fn expiry(record: &Record) -> session_store::Result<DateTime<Utc>> {
    let nanos = record.expiry_date.unix_timestamp_nanos();
    i64::try_from(nanos)
        .map(DateTime::from_timestamp_nanos)
        .map_err(backend)
}

#[async_trait::async_trait]
impl SessionStore for PgSessionStore {
    async fn create(&self, record: &mut Record) -> session_store::Result<()> {
        // A new id until one is free (ids are 128 random bits: a clash is theoretical).
        loop {
            let data = serde_json::to_value(&record.data).map_err(backend)?;
            let inserted = sqlx::query!(
                "INSERT INTO console_sessions (id, data, expires_at) VALUES ($1, $2, $3)
                 ON CONFLICT (id) DO NOTHING",
                record.id.to_string(),
                data,
                expiry(record)?
            )
            .execute(&self.pool)
            .await
            .map_err(backend)?;
            if inserted.rows_affected() == 1 {
                return Ok(());
            }
            record.id = Id::default();
        }
    }

    /// An update of a live row, never an insert: a session ended while one of its requests
    /// was in flight (sign-out, a password change, the account deleted) stays ended when that
    /// request saves its record on the way out. A record with no row left is dropped silently:
    /// its cookie then names no session, and the browser is signed out.
    async fn save(&self, record: &Record) -> session_store::Result<()> {
        let data = serde_json::to_value(&record.data).map_err(backend)?;
        let updated = sqlx::query!(
            "UPDATE console_sessions SET data = $2, expires_at = $3
             WHERE id = $1 AND expires_at > now()",
            record.id.to_string(),
            data,
            expiry(record)?
        )
        .execute(&self.pool)
        .await
        .map_err(backend)?;
        if updated.rows_affected() == 0 {
            tracing::debug!("a session ended while its request ran was not saved back");
        }
        Ok(())
    }

    async fn load(&self, id: &Id) -> session_store::Result<Option<Record>> {
        let row = sqlx::query!(
            "SELECT data, expires_at FROM console_sessions WHERE id = $1 AND expires_at > now()",
            id.to_string()
        )
        .fetch_optional(&self.pool)
        .await
        .map_err(backend)?;
        let Some(row) = row else {
            return Ok(None);
        };
        let nanos = row
            .expires_at
            .timestamp_nanos_opt()
            .ok_or_else(|| backend("expiry"))?;
        Ok(Some(Record {
            id: *id,
            data: serde_json::from_value(row.data).map_err(backend)?,
            expiry_date: OffsetDateTime::from_unix_timestamp_nanos(i128::from(nanos))
                .map_err(backend)?,
        }))
    }

    async fn delete(&self, id: &Id) -> session_store::Result<()> {
        sqlx::query!("DELETE FROM console_sessions WHERE id = $1", id.to_string())
            .execute(&self.pool)
            .await
            .map_err(backend)?;
        Ok(())
    }
}

/// Ends every console session of `account_id` but `keep` (the session id that changed the
/// password); returns how many ended.
pub async fn end_others(
    conn: &mut sqlx::PgConnection,
    account_id: &str,
    keep: &str,
) -> sqlx::Result<u64> {
    let result = sqlx::query!(
        "DELETE FROM console_sessions WHERE data->>'account_id' = $1 AND id <> $2",
        account_id,
        keep
    )
    .execute(conn)
    .await?;
    Ok(result.rows_affected())
}

/// Ends every console session of `account_id` (an operator set its password).
pub async fn end_all(conn: &mut sqlx::PgConnection, account_id: &str) -> sqlx::Result<u64> {
    let result = sqlx::query!(
        "DELETE FROM console_sessions WHERE data->>'account_id' = $1",
        account_id
    )
    .execute(conn)
    .await?;
    Ok(result.rows_affected())
}

/// Deletes expired sessions (called every minute by `voiced serve`).
pub async fn delete_expired(pool: &PgPool) -> sqlx::Result<u64> {
    let result = sqlx::query!("DELETE FROM console_sessions WHERE expires_at <= now()")
        .execute(pool)
        .await?;
    Ok(result.rows_affected())
}
