//! The core: the shared handles every door's operations run on (TEI's `Infer`). A door holds a
//! `Core` (cheap to clone: handles and `Arc`s) and calls the operations of `service::*` with it;
//! it never reaches past the core into a store or an engine.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::FromRef;
use sqlx::PgPool;

use crate::engines::registry::EngineRegistry;
use crate::limits::RateLimits;
use crate::service::oauth::OAuthSettings;
use crate::service::principal_cache::PrincipalCache;
use crate::service::speech::AdmissionPolicy;
use crate::signing::AudioSigner;
use crate::store::blobs::BlobStore;
use crate::store::read_pool::ReadPool;
use crate::worker::asr::AsrService;
use crate::worker::completions::Completions;
use crate::worker::health::WorkerHealth;
use crate::worker::streams::Streams;

/// Everything the operations share, whatever door called them. One `Arc`: extractors clone it
/// for every request, so a clone is one reference count, not twenty.
#[derive(Clone)]
pub struct Core(Arc<Handles>);

impl Core {
    pub fn new(handles: Handles) -> Self {
        Self(Arc::new(handles))
    }
}

impl std::ops::Deref for Core {
    type Target = Handles;

    fn deref(&self) -> &Handles {
        &self.0
    }
}

/// The handles themselves (reached through [`Core`]).
pub struct Handles {
    pub pool: PgPool,
    pub signer: AudioSigner,
    /// Shared: the core is cloned for every request.
    pub public_base_url: Arc<str>,
    pub limits: Arc<RateLimits>,
    pub request_timeout: Duration,
    pub blobs: Arc<dyn BlobStore>,
    /// Downloads of audio in S3 redirect to a presigned URL (`blob_redirect`).
    pub blob_redirect: bool,
    pub engines: Arc<EngineRegistry>,
    pub completions: Completions,
    /// The audio of generations this process's workers are rendering, as it is produced.
    pub streams: Streams,
    pub asr: AsrService,
    pub admission: AdmissionPolicy,
    /// What this process's generation workers report (for `/readyz`).
    pub health: Arc<WorkerHealth>,
    /// Set when the process is shutting down: the moment by which requests that wait on a
    /// generation must have answered.
    pub shutdown_deadline: tokio::sync::watch::Receiver<Option<tokio::time::Instant>>,
    /// Test allowance of the fetches of URLs a client names (OAuth client metadata documents,
    /// `transcribe`'s `audio_url`): `http` and loopback addresses (`oauth_allow_loopback_fetch`).
    pub allow_loopback_fetch: bool,
    /// The OAuth authorization server's settings and state (`/oauth`, docs/oauth.md).
    pub oauth: Arc<OAuthSettings>,
    /// Principals of recent keys, for reads (each read's statement confirms its principal).
    pub principals: Arc<PrincipalCache>,
    /// Connections of the authenticated reads (one exchange per read).
    pub reads: Arc<ReadPool>,
    /// Downloads in flight per audio link (`downloads_per_link`).
    pub downloads: Arc<Slots>,
    /// Uploads in flight per account on the doors that take a file without a recogniser place
    /// (the console's clone form): [`MAX_UPLOADS_PER_ACCOUNT`].
    pub uploads: Arc<Slots>,
    /// Webhook endpoints may be `http` and private addresses
    /// (`webhooks_allow_private_addresses`).
    pub webhooks_allow_private: bool,
}

impl Core {
    /// Resolves when the process is shutting down and a request that waits on a generation must
    /// answer now (never, while it runs).
    pub fn shutting_down(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut shutdown = self.shutdown_deadline.clone();
        async move {
            let deadline = loop {
                if let Some(deadline) = *shutdown.borrow_and_update() {
                    break deadline;
                }
                if shutdown.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
            };
            tokio::time::sleep_until(deadline).await;
        }
    }
}

impl FromRef<Core> for PgPool {
    fn from_ref(core: &Core) -> Self {
        core.pool.clone()
    }
}

impl FromRef<Core> for Arc<RateLimits> {
    fn from_ref(core: &Core) -> Self {
        core.limits.clone()
    }
}

impl FromRef<Core> for Arc<ReadPool> {
    fn from_ref(core: &Core) -> Self {
        core.reads.clone()
    }
}

/// Uploads one account may have in flight at once in a process on a door that reads a file
/// before its work has a place of its own (the console's clone form); the transcription doors
/// bound theirs by the account's transcriptions in flight.
pub const MAX_UPLOADS_PER_ACCOUNT: usize = 2;

/// Things in flight at once per key, per process: downloads of one generation's audio
/// (`downloads_per_link`: parallel downloads of one link would otherwise take every blob-read
/// connection), uploads of one account. Beyond it the door refuses with 429
/// `rate_limit_exceeded`.
pub struct Slots {
    per_link: usize,
    busy: Arc<Mutex<HashMap<String, usize>>>,
}

/// One place; given back when dropped (a download's body finished or dropped, an upload read).
pub struct Slot {
    id: String,
    busy: Arc<Mutex<HashMap<String, usize>>>,
}

impl Slots {
    pub fn new(per_link: usize) -> Self {
        Self {
            per_link,
            busy: Arc::default(),
        }
    }

    /// A place for `id` (a generation's link, an account), or `None` when it has `per_link`
    /// already.
    pub fn take(&self, id: &str) -> Option<Slot> {
        let mut busy = self.busy.lock().expect("not poisoned");
        let count = busy.entry(id.to_owned()).or_default();
        if *count >= self.per_link {
            return None;
        }
        *count += 1;
        Some(Slot {
            id: id.to_owned(),
            busy: self.busy.clone(),
        })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut busy = self.busy.lock().expect("not poisoned");
        if let Some(count) = busy.get_mut(&self.id) {
            *count -= 1;
            if *count == 0 {
                busy.remove(&self.id);
            }
        }
    }
}
