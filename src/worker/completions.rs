//! Wake-ups for requests that wait on a generation (`POST /v1/audio/speech`): one `LISTEN`
//! connection per process fans the completion notifications out to the waiting requests.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sqlx::PgPool;
use sqlx::postgres::PgListener;
use tokio::sync::oneshot;

use crate::store::queue;

type Waiters = Arc<Mutex<HashMap<String, Vec<oneshot::Sender<()>>>>>;

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
                        for sender in senders.into_iter().flatten() {
                            let _ = sender.send(());
                        }
                    }
                    // Connection lost (and re-established on the next call): notifications may
                    // have been missed, so every waiter re-checks its generation.
                    Ok(None) | Err(_) => {
                        let all: Vec<_> = lock(&fan_out).drain().collect();
                        for (_, senders) in all {
                            for sender in senders {
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
    /// `recheck` bounds how long a missed notification could delay the answer.
    pub async fn wait(&self, id: &str, recheck: Duration) -> sqlx::Result<String> {
        loop {
            let (sender, receiver) = oneshot::channel();
            lock(&self.waiters)
                .entry(id.to_owned())
                .or_default()
                .push(sender);
            // Subscribed first, then read: a completion in between is not missed.
            match queue::status(&self.pool, id).await? {
                Some(status) if status != "generating" => return Ok(status),
                None => return Err(sqlx::Error::RowNotFound),
                Some(_) => {}
            }
            let _ = tokio::time::timeout(recheck, receiver).await;
        }
    }
}

fn lock(waiters: &Waiters) -> std::sync::MutexGuard<'_, HashMap<String, Vec<oneshot::Sender<()>>>> {
    waiters
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
