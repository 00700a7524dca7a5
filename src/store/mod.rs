//! PostgreSQL storage: small query functions over a pool or a transaction. Every multi-statement
//! write runs in one transaction.

pub mod accounts;
pub mod blobs;
pub mod captures;
pub mod embedded;
pub mod generations;
pub mod idempotency;
pub mod keys;
pub mod oauth;
pub mod prints;
pub mod pronunciations;
pub mod queue;
pub mod read_pool;
pub mod sessions;
pub mod usage;
pub mod voices;
pub mod webhooks;

use std::time::Duration;

use sqlx::PgPool;
use sqlx::postgres::PgPoolOptions;

pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// A pooled connection idle longer than this is pinged before it is handed out; one in use
/// more recently is not (sqlx pings every connection it gets back, after the request).
const PING_IF_IDLE_FOR: Duration = Duration::from_secs(5);

/// One round trip to the database (readiness).
pub async fn ping(pool: &PgPool) -> sqlx::Result<()> {
    sqlx::query_scalar!("SELECT 1 AS one")
        .fetch_one(pool)
        .await?;
    Ok(())
}

/// Opens a pool and brings the schema up to date.
pub async fn connect_and_migrate(url: &str, max_connections: u32) -> anyhow::Result<PgPool> {
    let pool = PgPoolOptions::new()
        .max_connections(max_connections)
        // During a database outage a request waits at most this long for a connection, then
        // answers 503 (docs/reliability.md).
        .acquire_timeout(Duration::from_secs(3))
        // One round trip per read (docs/architecture.md): a busy connection is not pinged before
        // each statement. A connection that sat idle is, so that one left broken by a database
        // restart is replaced before a request sees it.
        .test_before_acquire(false)
        .before_acquire(|connection, meta| {
            Box::pin(async move {
                if meta.idle_for >= PING_IF_IDLE_FOR {
                    sqlx::Connection::ping(connection).await?;
                }
                Ok(true)
            })
        })
        .connect(url)
        .await
        .map_err(|e| anyhow::anyhow!("cannot connect to PostgreSQL: {e}"))?;
    MIGRATOR
        .run(&pool)
        .await
        .map_err(|e| anyhow::anyhow!("database migration failed: {e}"))?;
    Ok(pool)
}
