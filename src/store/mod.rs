//! PostgreSQL storage: small query functions over a pool or a transaction. Every multi-statement
//! write runs in one transaction.

pub mod accounts;
pub mod blobs;
pub mod captures;
pub mod embedded;
pub mod generations;
pub mod idempotency;
pub mod keys;
pub mod prints;
pub mod oauth;
pub mod queue;
pub mod sessions;
pub mod usage;
pub mod voices;

use std::time::Duration;

use sqlx::PgPool;
use sqlx::postgres::PgPoolOptions;

pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// Opens a pool and brings the schema up to date.
pub async fn connect_and_migrate(url: &str, max_connections: u32) -> anyhow::Result<PgPool> {
    let pool = PgPoolOptions::new()
        .max_connections(max_connections)
        // During a database outage a request waits at most this long for a connection, then
        // answers 503 (docs/reliability.md).
        .acquire_timeout(Duration::from_secs(3))
        .connect(url)
        .await
        .map_err(|e| anyhow::anyhow!("cannot connect to PostgreSQL: {e}"))?;
    MIGRATOR
        .run(&pool)
        .await
        .map_err(|e| anyhow::anyhow!("database migration failed: {e}"))?;
    Ok(pool)
}
