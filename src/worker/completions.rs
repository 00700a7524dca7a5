//! Wake-ups for requests that wait on a generation (`POST /v1/audio/speech`): one `LISTEN`
//! connection per process fans the completion notifications out to the waiting requests.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sqlx::PgPool;
use sqlx::postgres::PgListener;
use tokio::sync::oneshot;

use crate::domain::GenerationStatus;
use crate::store::queue;

/// Per generation id, the waiting requests: each with its own number, so that one that stops
/// waiting (time limit, disconnect) removes exactly its own entry.
type WaiterMap = HashMap<String, Vec<(u64, oneshot::Sender<()>)>>;
type Waiters = Arc<Mutex<WaiterMap>>;

#[derive(Clone)]
pub struct Completions {
    pool: PgPool,
    waiters: Waiters,
}

impl Completions {
    /// Connects the listener and starts fanning out notifications.
    pub async fn start(pool: PgPool) -> sqlx::Result<Self> {
        let mut listener = PgListener::connect_with(&pool).await?;
        listener.listen(queue::DONE_CHANNEL).await?;
        let waiters: Waiters = Arc::default();
        let fan_out = waiters.clone();
        let closing = pool.clone();
        tokio::spawn(async move {
            loop {
                let received = listener.try_recv().await;
                if closing.is_closed() {
                    // Shutting down: release the connection so that `PgPool::close` can finish.
                    break;
                }
                match received {
                    Ok(Some(notification)) => {
                        let senders = lock(&fan_out).remove(notification.payload());
                        for (_, sender) in senders.into_iter().flatten() {
                            let _ = sender.send(());
                        }
                    }
                    // Connection lost (and re-established on the next call): notifications may
                    // have been missed, so every waiter re-checks its generation.
                    Ok(None) | Err(_) => {
                        let all: Vec<_> = lock(&fan_out).drain().collect();
                        for (_, senders) in all {
                            for (_, sender) in senders {
                                let _ = sender.send(());
                            }
                        }
                        tokio::time::sleep(Duration::from_millis(200)).await;
                    }
                }
            }
        });
        Ok(Self { pool, waiters })
    }

    /// Waits until generation `id` is no longer `generating`; returns its final status.
    /// `recheck` bounds how long a missed notification could delay the answer. A waiter that is
    /// dropped (its request timed out or its client went away) leaves nothing behind.
    pub async fn wait(&self, id: &str, recheck: Duration) -> sqlx::Result<GenerationStatus> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        loop {
            let (sender, receiver) = oneshot::channel();
            let ticket = NEXT.fetch_add(1, Ordering::Relaxed);
            lock(&self.waiters)
                .entry(id.to_owned())
                .or_default()
                .push((ticket, sender));
            let _registered = Registered {
                waiters: &self.waiters,
                id,
                ticket,
            };
            // Subscribed first, then read: a completion in between is not missed.
            match queue::status(&self.pool, id).await? {
                Some(status) if status.is_finished() => return Ok(status),
                None => return Err(sqlx::Error::RowNotFound),
                Some(_) => {}
            }
            let _ = tokio::time::timeout(recheck, receiver).await;
        }
    }

    /// How many waiters are registered (for tests: none may be left behind).
    pub fn waiting(&self) -> usize {
        lock(&self.waiters).values().map(Vec::len).sum()
    }
}

/// Removes its waiter's entry when the wait ends, however it ends.
struct Registered<'a> {
    waiters: &'a Waiters,
    id: &'a str,
    ticket: u64,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        let mut waiters = lock(self.waiters);
        if let Some(entries) = waiters.get_mut(self.id) {
            entries.retain(|(ticket, _)| *ticket != self.ticket);
            if entries.is_empty() {
                waiters.remove(self.id);
            }
        }
    }
}

fn lock(waiters: &Waiters) -> std::sync::MutexGuard<'_, WaiterMap> {
    waiters
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
