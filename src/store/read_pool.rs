//! Connections for the authenticated read path, so that a read is one exchange with PostgreSQL
//! (docs/architecture.md, "Authentication on the read path").
//!
//! sqlx's pool pings every connection it gets back (a second exchange, after the response: a
//! write and a read on both sides, and a context switch each way) to find connections left
//! half-used by a cancelled statement. Here a connection goes back to the idle list only when
//! its statement finished ([`ReadConnection::finish`]); one whose statement failed or was
//! cancelled (the client went away) is closed instead, so there is nothing to find. A
//! connection idle for 5 s or more is pinged before use, so one broken by a database restart is
//! replaced before a request sees it. At most [`ReadPool::MAX`] connections, beside the pool's.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sqlx::{Connection, PgConnection, PgPool};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Idle longer than this, a connection is pinged before use (as the main pool does).
const PING_IF_IDLE_FOR: Duration = Duration::from_secs(5);
/// How long a read waits for a connection before 503 (as the main pool: docs/reliability.md).
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(3);

pub struct ReadPool {
    /// Where new connections go: the main pool's settings.
    pool: PgPool,
    idle: Mutex<Vec<(PgConnection, Instant)>>,
    permits: Arc<Semaphore>,
}

/// A connection lent to one read; back to the idle list only through [`ReadConnection::finish`].
pub struct ReadConnection<'a> {
    owner: &'a ReadPool,
    connection: Option<PgConnection>,
    _permit: OwnedSemaphorePermit,
}

impl ReadPool {
    /// Connections open at once, at most.
    pub const MAX: usize = 8;

    pub fn new(pool: PgPool) -> Self {
        Self {
            pool,
            idle: Mutex::new(Vec::new()),
            permits: Arc::new(Semaphore::new(Self::MAX)),
        }
    }

    pub async fn acquire(&self) -> sqlx::Result<ReadConnection<'_>> {
        let deadline = tokio::time::Instant::now() + ACQUIRE_TIMEOUT;
        let permit = tokio::time::timeout_at(deadline, self.permits.clone().acquire_owned())
            .await
            .map_err(|_| sqlx::Error::PoolTimedOut)?
            .map_err(|_| sqlx::Error::PoolClosed)?;
        loop {
            let idle = self.idle.lock().expect("not poisoned").pop();
            let Some((mut connection, since)) = idle else {
                break;
            };
            if since.elapsed() < PING_IF_IDLE_FOR || connection.ping().await.is_ok() {
                return Ok(self.lend(connection, permit));
            }
            // Broken while idle (a database restart): closed by dropping it; try the next.
        }
        let options = self.pool.connect_options();
        let connection = tokio::time::timeout_at(deadline, PgConnection::connect_with(&options))
            .await
            .map_err(|_| sqlx::Error::PoolTimedOut)??;
        Ok(self.lend(connection, permit))
    }

    fn lend(&self, connection: PgConnection, permit: OwnedSemaphorePermit) -> ReadConnection<'_> {
        ReadConnection {
            owner: self,
            connection: Some(connection),
            _permit: permit,
        }
    }
}

impl ReadConnection<'_> {
    pub fn get(&mut self) -> &mut PgConnection {
        self.connection.as_mut().expect("present until finished")
    }

    /// The statement is done: the connection is clean and goes back to the idle list.
    pub fn finish(mut self) {
        if let Some(connection) = self.connection.take() {
            let mut idle = self.owner.idle.lock().expect("not poisoned");
            idle.push((connection, Instant::now()));
        }
    }
}

// Dropped without `finish` (an error, or a cancelled request): the connection may hold half a
// conversation, so it is closed (by being dropped) rather than reused.
