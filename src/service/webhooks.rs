//! Webhooks (docs/webhooks.md): an account's endpoints, the Standard Webhooks signature, the
//! retry schedule, and the delivery loop the generation workers' process runs.
//!
//! - Endpoints: an `https` URL (any scheme and address with `webhooks_allow_private_addresses`),
//!   1 to 3 known events, a description up to [`MAX_DESCRIPTION_CHARS`], at most
//!   [`MAX_ENDPOINTS_PER_ACCOUNT`] per account. The secret (`whsec_` + base64 of 32 random
//!   bytes) is shown once and stored sealed (AES-256-GCM under a key derived from the signing
//!   secret, the endpoint id as associated data). A rotation keeps the previous secret signing
//!   for [`ROTATION_OVERLAP`].
//! - Events go into an outbox in the transaction that records them (`store::webhooks`); this
//!   module's [`run`] claims due deliveries (`FOR UPDATE SKIP LOCKED`, held while sent), posts
//!   them through the SSRF guard (`fetch::post_json`: no redirects, 10 s, a small read of the
//!   answer), at most [`Dispatcher::in_flight`] at once, apart from the generation workers.
//! - Fair and bounded (issue 36 item 6): the claim takes accounts in turn (least recently
//!   served first) and, within one, its endpoints in turn, with at most [`IN_FLIGHT`] held at
//!   once (per endpoint and per account, across processes); an endpoint has at most
//!   [`MAX_PENDING_PER_ENDPOINT`] pending (an event beyond that is not written for it); pending
//!   deliveries of disabled endpoints are purged; registering needs a paid plan; a resend is
//!   limited to [`RESENDS_PER_MINUTE`] per account and keeps the event's retry window.
//! - 2xx ends a delivery; 410 disables the endpoint; anything else is retried on
//!   [`retry_delay`]'s schedule until [`RETRY_WINDOW`] after the event, with the same
//!   `webhook-id`. An endpoint whose attempts have all failed for [`DISABLE_AFTER`] is disabled.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use rand::RngCore;
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use serde::Serialize;
use sha2::Sha256;
use sqlx::PgPool;
use tokio::sync::{Semaphore, watch};
use url::{Host, Url};

use super::error::{ErrorCode, ServiceError};
use super::fetch::{self, PostPolicy};
use super::principal::require_paid_plan;
use crate::signing::AudioSigner;
use crate::store;
use crate::store::captures::CaptureDetail;
use crate::store::generations::GenerationRow;
pub use crate::store::webhooks::MAX_PENDING_PER_ENDPOINT;
use crate::store::webhooks::{DeliveryRow, EndpointRow, InFlightCaps};
use crate::worker::Shutdown;

/// The events an endpoint may ask for.
pub const EVENTS: [&str; 3] = [
    store::webhooks::GENERATION_COMPLETED,
    store::webhooks::GENERATION_FAILED,
    store::webhooks::CAPTURE_CREATED,
];
pub const MAX_ENDPOINTS_PER_ACCOUNT: i64 = 10;
pub const MAX_URL_BYTES: usize = 2048;
pub const MAX_DESCRIPTION_CHARS: usize = 200;
/// How long the previous secret keeps signing after a rotation.
pub const ROTATION_OVERLAP: Duration = Duration::from_secs(24 * 3600);
/// How long after its event a delivery is retried (a resend does not extend it).
pub const RETRY_WINDOW: Duration = Duration::from_secs(24 * 3600);
/// An endpoint whose attempts all failed for this long is disabled.
pub const DISABLE_AFTER: Duration = Duration::from_secs(3 * 24 * 3600);
/// The longest wait between two attempts.
pub const MAX_RETRY_DELAY: Duration = Duration::from_secs(6 * 3600);
/// Time limit of one attempt (connection, request and the read of the answer).
pub const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);
/// How much of a receiver's answer is read.
pub const ANSWER_BYTES: usize = 4096;
/// Deliveries in flight at once, across every process: per endpoint (a slow receiver holds at
/// most 2 places) and per account (one account holds at most 4 of a process's slots).
pub const IN_FLIGHT: InFlightCaps = InFlightCaps {
    per_endpoint: 2,
    per_account: 4,
};
/// Resends an account may ask for per minute (a fixed one-minute window).
pub const RESENDS_PER_MINUTE: i32 = 20;
/// Turns one pass of the delivery loop takes at most before it pauses (a bound on the work a
/// pass does when many accounts are due but few have anything claimable).
const TURNS_PER_PASS: usize = 64;
/// How long a claimed delivery is held by the worker sending it.
const HOLD_SECS: f64 = 30.0;
/// How often the outbox is checked for due deliveries.
const POLL: Duration = Duration::from_millis(500);
/// Finished deliveries are kept this many days (the console lists recent ones), then deleted.
pub const KEEP_DAYS: i32 = 30;
/// How often finished deliveries past [`KEEP_DAYS`] are deleted.
const PURGE_EVERY: Duration = Duration::from_secs(3600);
const SECRET_PREFIX: &str = "whsec_";

/// A webhook endpoint (DECISIONS, "Wave 3 decisions").
#[derive(Debug, Clone, Serialize)]
pub struct Endpoint {
    pub id: String,
    pub url: String,
    pub events: Vec<String>,
    pub description: String,
    pub enabled: bool,
    pub created_at: DateTime<Utc>,
    /// Why it is disabled (`gone`: the receiver answered 410; `failing`: 3 days of failures).
    #[serde(skip)]
    pub disabled_reason: Option<String>,
}

impl From<EndpointRow> for Endpoint {
    fn from(row: EndpointRow) -> Self {
        Self {
            id: row.id,
            url: row.url,
            events: row.events,
            description: row.description,
            enabled: row.enabled,
            created_at: row.created_at,
            disabled_reason: row.disabled_reason,
        }
    }
}

/// Seals and opens endpoint secrets (AES-256-GCM under a key derived from the signing secret).
#[derive(Clone)]
pub struct Sealer(Arc<LessSafeKey>);

impl Sealer {
    pub fn new(signer: &AudioSigner) -> Self {
        let key = signer.derive_key("webhook endpoint secrets");
        Self(Arc::new(LessSafeKey::new(
            UnboundKey::new(&AES_256_GCM, &key).expect("a 256-bit key"),
        )))
    }

    fn seal(&self, endpoint_id: &str, secret: &[u8]) -> Vec<u8> {
        let mut nonce = [0u8; NONCE_LEN];
        rand::rng().fill_bytes(&mut nonce);
        let mut data = secret.to_vec();
        self.0
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(endpoint_id.as_bytes()),
                &mut data,
            )
            .expect("sealing a short secret");
        let mut out = nonce.to_vec();
        out.extend_from_slice(&data);
        out
    }

    fn open(&self, endpoint_id: &str, sealed: &[u8]) -> Option<Vec<u8>> {
        if sealed.len() < NONCE_LEN {
            return None;
        }
        let (nonce, data) = sealed.split_at(NONCE_LEN);
        let mut data = data.to_vec();
        let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
        let plain = self
            .0
            .open_in_place(nonce, Aad::from(endpoint_id.as_bytes()), &mut data)
            .ok()?;
        Some(plain.to_vec())
    }
}

/// A new secret: its raw bytes and how it is shown (`whsec_` + base64).
fn new_secret() -> (Vec<u8>, String) {
    let mut bytes = vec![0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    let shown = format!("{SECRET_PREFIX}{}", STANDARD.encode(&bytes));
    (bytes, shown)
}

/// A checked endpoint URL: absolute, `https` (or `http` with `allow_private`), no user info, at
/// most [`MAX_URL_BYTES`]; an address written in it must be public unless `allow_private`.
/// Names are resolved and vetted again on every attempt.
pub fn check_url(raw: &str, allow_private: bool) -> Result<String, ServiceError> {
    let refuse = |why: &str| ServiceError::invalid("url", why.to_owned());
    let raw = raw.trim();
    if raw.is_empty() || raw.len() > MAX_URL_BYTES {
        return Err(refuse(&format!(
            "url must be an https URL of 1 to {MAX_URL_BYTES} bytes"
        )));
    }
    let url = Url::parse(raw).map_err(|_| refuse("url must be an absolute https URL"))?;
    match url.scheme() {
        "https" => {}
        "http" if allow_private => {}
        _ => return Err(refuse("url must be an https URL")),
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(refuse("url must not carry a user name or password"));
    }
    let public = match url.host() {
        None => return Err(refuse("url must name a host")),
        Some(Host::Ipv4(ip)) => fetch::is_public(ip.into()),
        Some(Host::Ipv6(ip)) => fetch::is_public(ip.into()),
        Some(Host::Domain(name)) => {
            let name = name.to_ascii_lowercase();
            !(name == "localhost" || name.ends_with(".localhost"))
        }
    };
    if !public && !allow_private {
        return Err(refuse(
            "url must point at a public address (private, loopback and link-local addresses are refused)",
        ));
    }
    Ok(url.to_string())
}

/// Checked events: 1 to 3 of [`EVENTS`], each once (order kept).
pub fn check_events<S: AsRef<str>>(events: &[S]) -> Result<Vec<String>, ServiceError> {
    let mut out: Vec<String> = Vec::new();
    for event in events {
        let event = event.as_ref().trim();
        if !EVENTS.contains(&event) {
            return Err(ServiceError::invalid(
                "events",
                format!(
                    "unknown event {:?}: events are {}",
                    event.chars().take(64).collect::<String>(),
                    EVENTS.join(", ")
                ),
            ));
        }
        if !out.iter().any(|e| e == event) {
            out.push(event.to_owned());
        }
    }
    if out.is_empty() {
        return Err(ServiceError::invalid(
            "events",
            format!("name at least one event: {}", EVENTS.join(", ")),
        ));
    }
    Ok(out)
}

/// A checked description: at most [`MAX_DESCRIPTION_CHARS`] characters, no control characters.
pub fn check_description(raw: &str) -> Result<String, ServiceError> {
    let text = raw.trim();
    if text.chars().count() > MAX_DESCRIPTION_CHARS || text.chars().any(char::is_control) {
        return Err(ServiceError::invalid(
            "description",
            format!(
                "description must be at most {MAX_DESCRIPTION_CHARS} characters, without control characters"
            ),
        ));
    }
    Ok(text.to_owned())
}

/// What registering an endpoint takes.
pub struct NewEndpoint<'a> {
    pub url: &'a str,
    pub events: &'a [String],
    pub description: &'a str,
}

/// Registers an endpoint for `account_id`; returns it and its secret (shown this once). The
/// account needs a paid plan (403 `pro_plan_required`, the API's own plan rule).
pub async fn create(
    pool: &PgPool,
    sealer: &Sealer,
    allow_private: bool,
    account_id: &str,
    new: NewEndpoint<'_>,
) -> Result<(Endpoint, String), ServiceError> {
    let url = check_url(new.url, allow_private)?;
    let events = check_events(new.events)?;
    let description = check_description(new.description)?;
    let id = crate::domain::new_id("whep");
    let (secret, shown) = new_secret();
    let sealed = sealer.seal(&id, &secret);
    let mut tx = pool.begin().await?;
    let Some(plan) = store::webhooks::lock_account(&mut tx, account_id).await? else {
        return Err(ServiceError::not_found());
    };
    require_paid_plan(plan.parse().map_err(ServiceError::internal)?)?;
    if store::webhooks::count(&mut tx, account_id).await? >= MAX_ENDPOINTS_PER_ACCOUNT {
        return Err(ServiceError::new(
            ErrorCode::Conflict,
            format!(
                "An account has at most {MAX_ENDPOINTS_PER_ACCOUNT} webhook endpoints; delete one first."
            ),
        ));
    }
    let created_at = store::webhooks::insert(
        &mut tx,
        store::webhooks::NewEndpoint {
            id: &id,
            account_id,
            url: &url,
            events: &events,
            description: &description,
            secret_sealed: &sealed,
        },
    )
    .await?;
    tx.commit().await?;
    Ok((
        Endpoint {
            id,
            url,
            events,
            description,
            enabled: true,
            created_at,
            disabled_reason: None,
        },
        shown,
    ))
}

/// The account's endpoints, oldest first.
pub async fn list(pool: &PgPool, account_id: &str) -> Result<Vec<Endpoint>, ServiceError> {
    Ok(store::webhooks::list(pool, account_id)
        .await?
        .into_iter()
        .map(Endpoint::from)
        .collect())
}

/// Deletes the account's endpoint `id` (its pending deliveries with it); 404 for another
/// account's or a missing one.
pub async fn delete(pool: &PgPool, account_id: &str, id: &str) -> Result<(), ServiceError> {
    if store::webhooks::delete(pool, account_id, id).await? {
        Ok(())
    } else {
        Err(ServiceError::not_found())
    }
}

/// Gives the account's endpoint `id` a new secret (returned, shown this once); the previous one
/// keeps signing for [`ROTATION_OVERLAP`].
pub async fn rotate_secret(
    pool: &PgPool,
    sealer: &Sealer,
    account_id: &str,
    id: &str,
) -> Result<String, ServiceError> {
    let (secret, shown) = new_secret();
    let sealed = sealer.seal(id, &secret);
    let until = Utc::now() + ROTATION_OVERLAP;
    if store::webhooks::rotate(pool, account_id, id, &sealed, until).await? {
        Ok(shown)
    } else {
        Err(ServiceError::not_found())
    }
}

/// The most recent deliveries of the account's endpoint `id`, newest first.
pub async fn deliveries(
    pool: &PgPool,
    account_id: &str,
    endpoint_id: &str,
    limit: i64,
) -> Result<Vec<DeliveryRow>, ServiceError> {
    Ok(store::webhooks::recent(pool, account_id, endpoint_id, limit).await?)
}

/// Sends the account's delivery `id` again, now, with the same `webhook-id`, within the retry
/// window of its event (a resend after the window gets this one attempt). At most
/// [`RESENDS_PER_MINUTE`] per account (429 `rate_limit_exceeded`); one being sent at the moment
/// is left to that attempt.
pub async fn resend(pool: &PgPool, account_id: &str, id: &str) -> Result<(), ServiceError> {
    // The delivery's row first, then the account's (the order in which an attempt being
    // recorded takes them, so the two never wait for each other).
    let mut tx = pool.begin().await?;
    match store::webhooks::resend(&mut tx, account_id, id).await? {
        None => return Err(ServiceError::not_found()),
        // Being sent now: nothing made due, nothing counted.
        Some(true) => return Ok(()),
        Some(false) => {}
    }
    if !store::webhooks::take_resend(&mut tx, account_id, RESENDS_PER_MINUTE).await? {
        let wait = store::webhooks::resend_wait_secs(&mut tx, account_id).await?;
        return Err(ServiceError::new(
            ErrorCode::RateLimitExceeded,
            format!("At most {RESENDS_PER_MINUTE} deliveries can be sent again per minute."),
        )
        .with_retry_after(u64::try_from(wait).unwrap_or(60)));
    }
    Ok(tx.commit().await?)
}

/// One Standard Webhooks signature: `v1,` + base64(HMAC-SHA256(secret, "id.timestamp.body")).
pub fn sign(secret: &[u8], msg_id: &str, timestamp: i64, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes any key");
    mac.update(msg_id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
}

/// The wait before attempt `attempt + 1` after `attempt` failed: `base` × 4^(attempt−1), at
/// most [`MAX_RETRY_DELAY`], scaled by a jitter factor in [0.8, 1.2) (`jitter` in [0, 1)).
pub fn retry_delay(attempt: i32, base: Duration, jitter: f64) -> Duration {
    let exponent = u32::try_from(attempt.saturating_sub(1).clamp(0, 20)).unwrap_or(0);
    let raw = base.saturating_mul(4u32.saturating_pow(exponent));
    raw.min(MAX_RETRY_DELAY)
        .mul_f64(0.8 + 0.4 * jitter.clamp(0.0, 1.0))
}

/// When to try again after attempt `attempt` failed at `now`, or `None` once that would be more
/// than [`RETRY_WINDOW`] after the event (`event_at`; a resend does not move it).
pub fn next_attempt(
    event_at: DateTime<Utc>,
    now: DateTime<Utc>,
    attempt: i32,
    base: Duration,
    jitter: f64,
) -> Option<DateTime<Utc>> {
    let next = now + retry_delay(attempt, base, jitter);
    (next <= event_at + RETRY_WINDOW).then_some(next)
}

/// What an event is about, read fresh for each attempt.
pub enum Subject {
    Generation(GenerationRow),
    Capture(CaptureDetail),
}

/// Renders a subject as the API's read returns it (the door that owns the representation
/// supplies it: `app` wires in the REST models), `None` when it cannot.
pub type Render = Arc<dyn Fn(Subject) -> Option<serde_json::Value> + Send + Sync>;

/// What the delivery loop needs.
#[derive(Clone)]
pub struct Dispatcher {
    pub pool: PgPool,
    pub sealer: Sealer,
    pub render: Render,
    pub allow_private: bool,
    /// First retry delay (`webhooks_retry_base_ms`).
    pub retry_base: Duration,
    /// Deliveries sent at once by this process.
    pub in_flight: usize,
}

/// Sends due deliveries until `shutdown` leaves `Running` (a send in progress when it does is
/// abandoned; its hold lapses and another worker sends it again: at least once).
pub async fn run(dispatcher: Dispatcher, mut shutdown: watch::Receiver<Shutdown>) {
    let slots = Arc::new(Semaphore::new(dispatcher.in_flight.max(1)));
    let mut pause = POLL;
    let mut purged = tokio::time::Instant::now();
    tracing::info!("webhook delivery started");
    loop {
        if *shutdown.borrow() != Shutdown::Running {
            break;
        }
        if purged.elapsed() >= PURGE_EVERY {
            purged = tokio::time::Instant::now();
            purge(&dispatcher.pool).await;
        }
        // Turns until nothing is due, the slots are taken, or the pass has had its turns.
        let mut more = false;
        for turn in 1..=TURNS_PER_PASS {
            let free = slots.available_permits();
            if free == 0 {
                break;
            }
            match store::webhooks::claim_turn(&dispatcher.pool, free as i64, IN_FLIGHT, HOLD_SECS)
                .await
            {
                Ok(None) => break,
                Ok(Some(due)) => {
                    for delivery in due {
                        let Ok(slot) = slots.clone().acquire_owned().await else {
                            break;
                        };
                        let dispatcher = dispatcher.clone();
                        tokio::spawn(async move {
                            attempt(&dispatcher, delivery).await;
                            drop(slot);
                        });
                    }
                    more = turn == TURNS_PER_PASS;
                }
                Err(err) => {
                    // The database is away: say so once per pause, and wait longer.
                    tracing::warn!(error = %err, "claiming webhook deliveries failed");
                    pause = Duration::from_secs(5);
                    break;
                }
            }
        }
        if more {
            tokio::task::yield_now().await;
            continue;
        }
        tokio::select! {
            () = tokio::time::sleep(std::mem::replace(&mut pause, POLL)) => {}
            _ = shutdown.changed() => {}
        }
    }
    tracing::info!("webhook delivery stopped");
}

/// Housekeeping of the outbox: finished deliveries past [`KEEP_DAYS`], and the pending ones of
/// disabled endpoints (never to be sent).
pub async fn purge(pool: &PgPool) {
    if let Err(err) = store::webhooks::purge(pool, KEEP_DAYS).await {
        tracing::warn!(error = %err, "deleting old webhook deliveries failed");
    }
    match store::webhooks::purge_disabled(pool).await {
        Ok(0) => {}
        Ok(n) => tracing::info!(
            deleted = n,
            "pending deliveries of disabled webhook endpoints deleted"
        ),
        Err(err) => tracing::warn!(error = %err, "deleting disabled endpoints' deliveries failed"),
    }
}

/// The outcome of one attempt, before it is recorded.
enum Outcome {
    Delivered(u16),
    Gone,
    Failed(Option<u16>, String),
    /// Nothing can be sent (the subject or the secret is gone): given up at once.
    Abandoned(String),
}

async fn attempt(dispatcher: &Dispatcher, delivery: store::webhooks::DueDelivery) {
    let outcome = send(dispatcher, &delivery).await;
    let pool = &dispatcher.pool;
    let recorded = match outcome {
        Outcome::Delivered(status) => {
            store::webhooks::delivered(pool, &delivery.id, &delivery.endpoint_id, status.into())
                .await
        }
        Outcome::Gone => {
            let failed = store::webhooks::attempt_failed(
                pool,
                &delivery.id,
                &delivery.endpoint_id,
                Some(410),
                "the receiver answered 410 Gone: endpoint disabled",
                None,
            )
            .await;
            match failed {
                Ok(_) => store::webhooks::disable(pool, &delivery.endpoint_id, "gone").await,
                Err(err) => Err(err),
            }
        }
        Outcome::Abandoned(why) => store::webhooks::attempt_failed(
            pool,
            &delivery.id,
            &delivery.endpoint_id,
            None,
            &why,
            None,
        )
        .await
        .map(|_| ()),
        Outcome::Failed(status, why) => {
            let now = Utc::now();
            let next = next_attempt(
                delivery.event_at,
                now,
                delivery.attempts,
                dispatcher.retry_base,
                rand::random::<f64>(),
            );
            match store::webhooks::attempt_failed(
                pool,
                &delivery.id,
                &delivery.endpoint_id,
                status.map(i32::from),
                &why,
                next,
            )
            .await
            {
                Ok(since) if (now - since).to_std().is_ok_and(|d| d >= DISABLE_AFTER) => {
                    store::webhooks::disable(pool, &delivery.endpoint_id, "failing").await
                }
                Ok(_) => Ok(()),
                Err(err) => Err(err),
            }
        }
    };
    if let Err(err) = recorded {
        tracing::warn!(error = %err, delivery = %delivery.id, "recording a webhook attempt failed");
    }
}

async fn send(dispatcher: &Dispatcher, delivery: &store::webhooks::DueDelivery) -> Outcome {
    let pool = &dispatcher.pool;
    let subject = match delivery.event_type.as_str() {
        store::webhooks::CAPTURE_CREATED => {
            store::captures::find(pool, &delivery.account_id, &delivery.subject_id)
                .await
                .map(|found| found.map(Subject::Capture))
        }
        _ => store::generations::find(pool, &delivery.account_id, &delivery.subject_id)
            .await
            .map(|found| found.map(Subject::Generation)),
    };
    let subject = match subject {
        Ok(Some(subject)) => subject,
        Ok(None) => return Outcome::Abandoned("the event's subject no longer exists".into()),
        Err(err) => return Outcome::Failed(None, format!("database: {err}")),
    };
    let Some(data) = (dispatcher.render)(subject) else {
        return Outcome::Abandoned("the event's subject could not be rendered".into());
    };
    let body = serde_json::json!({
        "type": delivery.event_type,
        "timestamp": delivery.event_at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        "data": data,
    });
    let body = serde_json::to_vec(&body).expect("JSON serialises");
    let now = Utc::now();
    let mut secrets = Vec::new();
    match dispatcher
        .sealer
        .open(&delivery.endpoint_id, &delivery.secret_sealed)
    {
        Some(secret) => secrets.push(secret),
        None => {
            return Outcome::Abandoned(
                "the endpoint's secret cannot be opened (was the signing secret changed?)".into(),
            );
        }
    }
    if let (Some(previous), Some(until)) = (&delivery.previous_sealed, delivery.previous_expires_at)
        && until > now
        && let Some(secret) = dispatcher.sealer.open(&delivery.endpoint_id, previous)
    {
        secrets.push(secret);
    }
    let timestamp = now.timestamp();
    let signature = secrets
        .iter()
        .map(|secret| sign(secret, &delivery.id, timestamp, &body))
        .collect::<Vec<_>>()
        .join(" ");
    let headers = [
        ("webhook-id", delivery.id.clone()),
        ("webhook-timestamp", timestamp.to_string()),
        ("webhook-signature", signature),
    ];
    let policy = PostPolicy {
        max_bytes: ANSWER_BYTES,
        timeout: ATTEMPT_TIMEOUT,
        allow_private: dispatcher.allow_private,
    };
    match fetch::post_json(&delivery.url, &headers, body, &policy).await {
        Ok(posted) if (200..300).contains(&posted.status) => Outcome::Delivered(posted.status),
        Ok(posted) if posted.status == 410 => Outcome::Gone,
        Ok(posted) => Outcome::Failed(
            Some(posted.status),
            format!("the receiver answered {}", posted.status),
        ),
        Err(err) => Outcome::Failed(None, err.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signature_matches_the_specifications_example() {
        // The Standard Webhooks specification's test vector.
        let secret = STANDARD.decode("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        let body = br#"{"test": 2432232314}"#;
        assert_eq!(
            sign(&secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
    }

    #[test]
    fn the_schedule_grows_by_four_is_capped_and_ends_after_a_day() {
        let base = Duration::from_secs(30);
        assert_eq!(retry_delay(1, base, 0.5), Duration::from_secs(30));
        assert_eq!(retry_delay(2, base, 0.5), Duration::from_secs(120));
        assert_eq!(retry_delay(3, base, 0.5), Duration::from_secs(480));
        assert_eq!(retry_delay(9, base, 0.5), MAX_RETRY_DELAY);
        assert_eq!(retry_delay(1, base, 0.0), Duration::from_secs(24));
        assert!(retry_delay(1, base, 0.999) < Duration::from_secs(36));
        let start = Utc::now();
        let (mut now, mut attempt) = (start, 1);
        while let Some(next) = next_attempt(start, now, attempt, base, 0.5) {
            now = next;
            attempt += 1;
        }
        assert_eq!(attempt, 9, "attempts in the 24-hour window");
        assert!(now - start <= chrono::Duration::hours(24));
    }

    #[test]
    fn the_window_is_the_events_so_a_late_resend_gets_one_attempt() {
        let base = Duration::from_secs(30);
        let now = Utc::now();
        let event = now - chrono::Duration::hours(25);
        assert_eq!(next_attempt(event, now, 10, base, 0.5), None);
        let recent = now - chrono::Duration::hours(1);
        assert!(next_attempt(recent, now, 1, base, 0.5).is_some());
    }

    #[test]
    fn urls_events_and_descriptions_are_checked() {
        assert!(check_url("https://hooks.example.com/voiced", false).is_ok());
        for bad in [
            "http://hooks.example.com/x",
            "https://127.0.0.1/x",
            "https://10.0.0.1/x",
            "https://[::1]/x",
            "https://localhost/x",
            "https://user:pw@example.com/x",
            "ftp://example.com/x",
            "not a url",
            "",
        ] {
            let err = check_url(bad, false).unwrap_err();
            assert_eq!(err.param.as_deref(), Some("url"), "{bad}");
        }
        assert!(check_url("http://127.0.0.1:9/x", true).is_ok());
        assert_eq!(
            check_events(&["generation.completed", "generation.completed"]).unwrap(),
            ["generation.completed"]
        );
        assert!(check_events::<&str>(&[]).is_err());
        assert!(check_events(&["generation.started"]).is_err());
        assert!(check_description(&"x".repeat(MAX_DESCRIPTION_CHARS + 1)).is_err());
        assert!(check_description("line\nbreak").is_err());
        assert_eq!(
            check_description("  Billing hook ").unwrap(),
            "Billing hook"
        );
    }

    #[test]
    fn secrets_open_only_for_their_endpoint() {
        let sealer = Sealer::new(&AudioSigner::new(vec![7u8; 32]));
        let sealed = sealer.seal("whep_a", b"secret bytes");
        assert_eq!(sealer.open("whep_a", &sealed).unwrap(), b"secret bytes");
        assert!(sealer.open("whep_b", &sealed).is_none());
        let other = Sealer::new(&AudioSigner::new(vec![8u8; 32]));
        assert!(other.open("whep_a", &sealed).is_none());
        let (bytes, shown) = new_secret();
        assert_eq!(bytes.len(), 32);
        assert_eq!(
            STANDARD
                .decode(shown.strip_prefix("whsec_").unwrap())
                .unwrap(),
            bytes
        );
    }
}
