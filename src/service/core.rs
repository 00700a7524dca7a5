//! The core: the shared handles every door's operations run on (TEI's `Infer`). A door holds a
//! `Core` (cheap to clone: handles and `Arc`s) and calls the operations of `service::*` with it;
//! it never reaches past the core into a store or an engine.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sqlx::PgPool;

use crate::config::Config;
use crate::engines::registry::EngineRegistry;
use crate::limits::RateLimits;
use crate::service::oauth::OAuthSettings;
use crate::service::oauth::clients::ClientDirectory;
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
/// for every request, so a clone is one reference count, not twenty. Its handles are private to
/// `service`: a door can only call the core's operations with it (`scripts/check-layers.py`).
#[derive(Clone)]
pub struct Core(Arc<Handles>);

/// What the process builds below the core before it has one (`app` assembles them; the
/// settings the core derives from configuration it reads itself, in [`Core::new`]).
pub struct Parts {
    pub pool: PgPool,
    pub signer: AudioSigner,
    pub limits: RateLimits,
    pub blobs: Arc<dyn BlobStore>,
    pub engines: Arc<EngineRegistry>,
    pub completions: Completions,
    pub asr: AsrService,
    /// What this process's generation workers report (for `/readyz`).
    pub health: Arc<WorkerHealth>,
    /// Set when the process is shutting down: the moment by which requests that wait on a
    /// generation must have answered.
    pub shutdown_deadline: tokio::sync::watch::Receiver<Option<tokio::time::Instant>>,
    /// The OAuth clients' directory (registrations and metadata documents).
    pub oauth_clients: ClientDirectory,
    /// Where running generations' audio is published as it is produced (through Redis too
    /// when `redis_url` is set: `worker::relay`).
    pub streams: Streams,
}

impl Core {
    pub fn new(config: &Config, parts: Parts) -> Self {
        let reads = Arc::new(ReadPool::new(parts.pool.clone()));
        Self(Arc::new(Handles {
            reads,
            pool: parts.pool,
            signer: parts.signer,
            public_base_url: config.public_base_url.as_str().into(),
            limits: Arc::new(parts.limits),
            request_timeout: Duration::from_secs(config.request_timeout_secs),
            blobs: parts.blobs,
            blob_redirect: config.blob_redirect,
            engines: parts.engines,
            completions: parts.completions,
            streams: parts.streams,
            asr: parts.asr,
            admission: AdmissionPolicy {
                max_pending_per_account: i64::from(config.max_pending_per_account),
                max_audio_per_request_ms: i64::try_from(config.max_audio_per_request_secs)
                    .unwrap_or(i64::MAX / 1000)
                    .saturating_mul(1000),
            },
            health: parts.health,
            shutdown_deadline: parts.shutdown_deadline,
            allow_loopback_fetch: config.oauth_allow_loopback_fetch,
            oauth: Arc::new(OAuthSettings::new(
                &config.public_base_url,
                parts.oauth_clients,
            )),
            principals: Arc::default(),
            downloads: Arc::new(Slots::new(config.downloads_per_link as usize)),
            uploads: Arc::new(Slots::new(MAX_UPLOADS_PER_ACCOUNT)),
            webhooks_allow_private: config.webhooks_allow_private_addresses,
            live: super::live::LiveSettings {
                models_dir: config.models_dir.clone(),
                max_session: Duration::from_secs(config.live_max_session_secs),
                idle_timeout: Duration::from_secs(config.live_idle_timeout_secs),
                interim_interval: Duration::from_millis(config.live_interim_interval_ms),
            },
            live_sessions: Arc::new(Slots::new(config.max_live_sessions as usize)),
            speech_sockets: Arc::new(super::live_speech::SpeechSockets::new(
                config.max_speech_sockets as usize,
                config.max_speech_sockets_per_account as usize,
                Duration::from_secs(config.speech_socket_max_session_secs),
            )),
        }))
    }
}

impl std::ops::Deref for Core {
    type Target = Handles;

    fn deref(&self) -> &Handles {
        &self.0
    }
}

/// The handles themselves (reached through [`Core`], by `service` only).
pub struct Handles {
    pub(in crate::service) pool: PgPool,
    pub(in crate::service) signer: AudioSigner,
    /// Shared: the core is cloned for every request.
    pub(in crate::service) public_base_url: Arc<str>,
    pub(in crate::service) limits: Arc<RateLimits>,
    pub(in crate::service) request_timeout: Duration,
    pub(in crate::service) blobs: Arc<dyn BlobStore>,
    /// Downloads of audio in S3 redirect to a presigned URL (`blob_redirect`).
    pub(in crate::service) blob_redirect: bool,
    pub(in crate::service) engines: Arc<EngineRegistry>,
    pub(in crate::service) completions: Completions,
    /// The audio of generations this process's workers are rendering, as it is produced.
    pub(in crate::service) streams: Streams,
    pub(in crate::service) asr: AsrService,
    pub(in crate::service) admission: AdmissionPolicy,
    pub(in crate::service) health: Arc<WorkerHealth>,
    pub(in crate::service) shutdown_deadline:
        tokio::sync::watch::Receiver<Option<tokio::time::Instant>>,
    /// Test allowance of the fetches of URLs a client names (OAuth client metadata documents,
    /// `transcribe`'s `audio_url`): `http` and loopback addresses (`oauth_allow_loopback_fetch`).
    pub(in crate::service) allow_loopback_fetch: bool,
    /// The OAuth authorization server's settings and state (`/oauth`, docs/oauth.md).
    pub(in crate::service) oauth: Arc<OAuthSettings>,
    /// Principals of recent keys, for reads (each read's statement confirms its principal).
    pub(in crate::service) principals: Arc<PrincipalCache>,
    /// Connections of the authenticated reads (one exchange per read).
    pub(in crate::service) reads: Arc<ReadPool>,
    /// Downloads in flight per audio link (`downloads_per_link`).
    pub(in crate::service) downloads: Arc<Slots>,
    /// Uploads in flight per account on the doors that take a file without a recogniser place
    /// (the console's clone form): [`MAX_UPLOADS_PER_ACCOUNT`].
    pub(in crate::service) uploads: Arc<Slots>,
    /// Webhook endpoints may be `http` and private addresses
    /// (`webhooks_allow_private_addresses`).
    pub(in crate::service) webhooks_allow_private: bool,
    /// Live transcription's settings (`max_live_sessions`, `live_*`).
    pub(in crate::service) live: super::live::LiveSettings,
    /// The process's live sessions (one key, `max_live_sessions` places).
    pub(in crate::service) live_sessions: Arc<Slots>,
    /// The process's speech sockets and their bounds (`max_speech_sockets`,
    /// `max_speech_sockets_per_account`, `speech_socket_max_session_secs`).
    pub(in crate::service) speech_sockets: Arc<super::live_speech::SpeechSockets>,
}

/// The handles the composition root (`app`) hands to what it starts beside the doors: the
/// generation workers, the webhook loop, the metrics listener, the recogniser's warm-up. Doors,
/// `http` and the admin CLI never ask for them (`scripts/check-layers.py`).
pub struct ProcessHandles {
    pub pool: PgPool,
    pub signer: AudioSigner,
    pub blobs: Arc<dyn BlobStore>,
    pub health: Arc<WorkerHealth>,
    pub streams: Streams,
    pub asr: AsrService,
    pub completions: Completions,
}

impl Core {
    pub fn process_handles(&self) -> ProcessHandles {
        ProcessHandles {
            pool: self.pool.clone(),
            signer: self.signer.clone(),
            blobs: self.blobs.clone(),
            health: self.health.clone(),
            streams: self.streams.clone(),
            asr: self.asr.clone(),
            completions: self.completions.clone(),
        }
    }

    /// How long a request may take (`request_timeout_secs`): also the bound of reading and
    /// discarding a refused body behind the answer.
    pub fn request_timeout(&self) -> Duration {
        self.request_timeout
    }

    /// The service's public base URL (`public_base_url`), as clients reach it.
    pub fn public_base_url(&self) -> &str {
        &self.public_base_url
    }

    /// The rate limits every door counts against (its route layers take them).
    pub fn limits(&self) -> &Arc<RateLimits> {
        &self.limits
    }

    /// The OAuth authorization server's settings (issuer, resources, pages).
    pub fn oauth(&self) -> &OAuthSettings {
        &self.oauth
    }

    /// Whether URLs a client names may be `http` and loopback (`oauth_allow_loopback_fetch`).
    pub fn allow_loopback_fetch(&self) -> bool {
        self.allow_loopback_fetch
    }
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
