//! The audio of running generations across processes, through Redis (`redis_url`): a
//! generation rendered by a `voiced worker` reaches the synchronous request that waits for it in
//! a `voiced serve` process as it is rendered, the way [`super::streams`] carries it inside one
//! process. [`super::streams::Streams`] uses this when Redis is configured; its interface (and
//! so every door's) is the same either way.
//!
//! One Redis stream per generation, `voiced:audio:{id}`, written by the worker that runs it
//! (`XADD`, in order, on one connection), read from its first entry by every subscriber
//! (`XREAD BLOCK`, each on a connection of its own). Entries:
//! - `k=s`: an attempt starts: `a` (the attempt's random token), `t` (the content type);
//! - `k=c`: a chunk of that attempt: `a`, `n` (its number from 0), `b` (the bytes), `m` (the
//!   audio rendered up to its end, ms: what a delivery cut short after it charges), `w` (the
//!   words its piece says, JSON `[[text, start, end], …]`, for the live speech socket's
//!   alignment);
//! - `k=e`: the attempt ends: `a`, `x` (`completed` or `broken`).
//!
//! Bounds: the stream keeps at most [`MAX_ENTRIES`] entries (`MAXLEN ~`) and expires
//! [`KEEP`] after its last write or read (a subscriber that reads refreshes it, as an
//! in-process entry lives while a request listens). A subscriber holds at most
//! [`READ_COUNT`] entries at a time, read as its caller asks for them: a slow reader holds
//! nothing more. While an attempt runs, its worker keeps `voiced:audio:{id}:alive:{token}` alive
//! (refreshed every third of its time to live, which is 1.5 leases: it outlives the
//! generation's lease). A subscriber that hears nothing for [`BLOCK`] checks it: gone (the
//! worker died) ends the stream broken, as the lease's expiry ends the attempt. A new attempt's
//! start after chunks of an earlier one, or a gap in the chunk numbers (entries trimmed under a
//! subscriber that lagged by more than [`MAX_ENTRIES`]), end it broken too; a subscriber that
//! has seen no chunk yet follows the newest attempt instead.
//!
//! Redis failing never fails a generation: the worker stops relaying it (logged) and renders on;
//! a subscriber whose Redis fails falls back to this process's stream, and the caller to the
//! stored file ([`super::streams`]).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use redis::aio::{ConnectionManager, MultiplexedConnection};

mod inbox;
mod outbox;

pub(in crate::worker) use self::inbox::Inbox;
pub(in crate::worker) use self::outbox::Outbox;

/// Entries a generation's stream keeps at most (approximate trimming): start, end and the
/// chunks, one per rendered segment.
pub const MAX_ENTRIES: usize = 4096;
/// How long a stream is kept after its last write or read.
pub const KEEP: Duration = Duration::from_secs(60);
/// How long a subscriber's `XREAD` waits before it checks that the worker is alive.
pub const BLOCK: Duration = Duration::from_secs(1);
/// Entries one `XREAD` returns at most.
pub const READ_COUNT: usize = 16;
/// Idle subscriber connections kept for the next subscriber.
const IDLE_READERS: usize = 32;

/// Redis for this process's streams (cheap to clone).
#[derive(Clone)]
pub struct Relay(Arc<Inner>);

struct Inner {
    client: redis::Client,
    /// The connection every publisher of the process writes on (made on first need).
    writer: tokio::sync::OnceCell<ConnectionManager>,
    /// Subscribers' connections whose last command has answered.
    idle: Mutex<Vec<MultiplexedConnection>>,
    /// Time to live of an attempt's alive key.
    alive: Duration,
}

impl Relay {
    /// Redis at `url` (`redis://…`, `rediss://…`, `unix:///path`); only the URL is checked
    /// here. `lease` is the generations' lease (`lease_secs`): the alive key outlives it.
    pub fn open(url: &str, lease: Duration) -> Result<Self, redis::RedisError> {
        Ok(Self(Arc::new(Inner {
            client: redis::Client::open(url)?,
            writer: tokio::sync::OnceCell::new(),
            idle: Mutex::new(Vec::new()),
            alive: (lease + lease / 2).max(Duration::from_millis(300)),
        })))
    }

    /// Starts relaying an attempt at generation `id`: what the returned outbox is given goes to
    /// Redis in order, on a task of its own (the worker never waits for Redis).
    pub(super) fn publish(&self, id: &str, content_type: &str) -> Outbox {
        outbox::publish(self.0.clone(), id, content_type)
    }

    /// Reads generation `id`'s stream from its first entry.
    pub(super) fn subscribe(&self, id: &str) -> Inbox {
        Inbox::new(self.clone(), id)
    }
}

fn stream_key(id: &str) -> String {
    format!("voiced:audio:{id}")
}

fn alive_key(id: &str, attempt: &str) -> String {
    format!("voiced:audio:{id}:alive:{attempt}")
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
