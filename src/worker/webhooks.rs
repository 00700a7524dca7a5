//! The webhook delivery loop (docs/webhooks.md), run by a process with generation workers
//! beside them (`app::spawn_webhooks`); the endpoint rules are the core's (`service::webhooks`).
//!
//! - Events go into an outbox in the transaction that records them (`store::webhooks`); [`run`]
//!   claims due deliveries (`FOR UPDATE SKIP LOCKED`, held while sent), posts them through the
//!   SSRF guard (`fetch::post_json`: no redirects, 10 s, a small read of the answer), at most
//!   [`Dispatcher::in_flight`] at once, apart from the generation workers.
//! - Fair and bounded: the claim takes accounts in turn (least recently served first) and,
//!   within one, its endpoints in turn, with at most [`IN_FLIGHT`] held at once (per endpoint
//!   and per account, across processes); pending deliveries of disabled endpoints are purged.
//! - 2xx ends a delivery; 410 disables the endpoint; anything else is retried on
//!   [`retry_delay`]'s schedule until [`RETRY_WINDOW`] after the event, with the same
//!   `webhook-id`. An endpoint whose attempts have all failed for [`DISABLE_AFTER`] is disabled.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use sha2::Sha256;
use sqlx::PgPool;
use tokio::sync::{Semaphore, watch};

use crate::fetch::{self, PostPolicy};
use crate::signing::Sealer;
use crate::store;
use crate::store::captures::CaptureDetail;
use crate::store::generations::GenerationRow;
use crate::store::webhooks::InFlightCaps;
use crate::worker::Shutdown;

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
}
