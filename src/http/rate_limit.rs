//! Per-key request rate limits with `governor` (GCRA), and the IETF draft's `RateLimit` /
//! `RateLimit-Policy` headers (structured fields, DECISIONS "HTTP").
//!
//! Two independent policies per key: `writes` (600 per hour: POST, PUT, PATCH, DELETE) and
//! `read-burst` (300 per minute: everything else). A request counts against exactly one.

use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use governor::clock::{Clock, FakeRelativeClock};
use governor::middleware::StateInformationMiddleware;
use governor::nanos::Nanos;
use governor::state::keyed::DefaultKeyedStateStore;
use governor::{Quota, RateLimiter};

use super::auth::Principal;
use super::error::{ApiError, ErrorCode};

/// The limiter's time source. Tests use a manual clock so that no quota refills while they
/// count requests (no timing in tests).
#[derive(Debug, Clone)]
pub enum LimiterClock {
    Real(Instant),
    Manual(FakeRelativeClock),
}

impl Clock for LimiterClock {
    type Instant = Nanos;

    fn now(&self) -> Nanos {
        match self {
            LimiterClock::Real(origin) => Nanos::from(origin.elapsed()),
            LimiterClock::Manual(clock) => clock.now(),
        }
    }
}

type KeyedLimiter =
    RateLimiter<String, DefaultKeyedStateStore<String>, LimiterClock, StateInformationMiddleware>;

/// One named quota: `q` requests per `w` seconds.
struct Policy {
    name: &'static str,
    quota: u32,
    window_secs: u64,
    limiter: KeyedLimiter,
}

impl Policy {
    fn new(name: &'static str, quota: u32, window_secs: u64, clock: LimiterClock) -> Self {
        let burst = NonZeroU32::new(quota).expect("quotas are positive constants");
        let period = Duration::from_secs(window_secs) / quota;
        let governor_quota = Quota::with_period(period)
            .expect("period is positive")
            .allow_burst(burst);
        let limiter = RateLimiter::dashmap_with_clock(governor_quota, clock)
            .with_middleware::<StateInformationMiddleware>();
        Self {
            name,
            quota,
            window_secs,
            limiter,
        }
    }

    /// Seconds until the whole quota is available again, given `remaining`.
    fn reset_secs(&self, remaining: u32) -> u64 {
        let used = u64::from(self.quota - remaining.min(self.quota));
        (used * self.window_secs).div_ceil(u64::from(self.quota))
    }
}

pub struct RateLimits {
    writes: Policy,
    reads: Policy,
    policy_header: HeaderValue,
}

impl RateLimits {
    pub const WRITES_PER_HOUR: u32 = 600;
    pub const READS_PER_MINUTE: u32 = 300;

    /// The spec's quotas.
    pub fn new(clock: LimiterClock) -> Self {
        Self::with_quotas(clock, Self::WRITES_PER_HOUR, Self::READS_PER_MINUTE)
    }

    /// Operator-set quotas (`rate_limit_*` settings); both must be positive.
    pub fn with_quotas(clock: LimiterClock, writes_per_hour: u32, reads_per_minute: u32) -> Self {
        let writes = Policy::new("writes", writes_per_hour, 3600, clock.clone());
        let reads = Policy::new("read-burst", reads_per_minute, 60, clock);
        let policy_header = HeaderValue::from_str(&format!(
            "\"{}\";q={};w={}, \"{}\";q={};w={}",
            writes.name,
            writes.quota,
            writes.window_secs,
            reads.name,
            reads.quota,
            reads.window_secs
        ))
        .expect("ASCII header");
        Self {
            writes,
            reads,
            policy_header,
        }
    }

    pub fn real(writes_per_hour: u32, reads_per_minute: u32) -> Self {
        Self::with_quotas(
            LimiterClock::Real(Instant::now()),
            writes_per_hour,
            reads_per_minute,
        )
    }

    /// Drops per-key state that has fully refilled; call periodically.
    pub fn shrink(&self) {
        self.writes.limiter.retain_recent();
        self.reads.limiter.retain_recent();
    }

    fn policy_for(&self, method: &Method) -> &Policy {
        match *method {
            Method::GET | Method::HEAD | Method::OPTIONS => &self.reads,
            _ => &self.writes,
        }
    }
}

/// Counts the request against its key's policy and writes the headers on whatever answer
/// follows. Runs after authentication; requests without a principal pass untouched.
pub async fn rate_limit(
    State(limits): State<Arc<RateLimits>>,
    request: Request,
    next: Next,
) -> Response {
    let Some(key_id) = request
        .extensions()
        .get::<Arc<Principal>>()
        .map(|p| p.key_id.clone())
    else {
        return next.run(request).await;
    };
    let policy = limits.policy_for(request.method());
    let (mut response, remaining, reset) = match policy.limiter.check_key(&key_id) {
        Ok(snapshot) => {
            let remaining = snapshot.remaining_burst_capacity();
            let response = next.run(request).await;
            (response, remaining, policy.reset_secs(remaining))
        }
        Err(not_until) => {
            let wait = not_until.wait_time_from(policy.limiter.clock().now());
            let retry_after = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
            let response = ApiError::new(
                ErrorCode::RateLimitExceeded,
                format!(
                    "This key made more than {} requests in {} seconds ({} policy); retry after {} seconds.",
                    policy.quota, policy.window_secs, policy.name, retry_after.max(1)
                ),
            )
            .with_retry_after(retry_after)
            .into_response();
            (response, 0, policy.reset_secs(0))
        }
    };
    let headers = response.headers_mut();
    headers.insert("ratelimit-policy", limits.policy_header.clone());
    let value = format!("\"{}\";r={};t={}", policy.name, remaining, reset);
    headers.insert(
        "ratelimit",
        HeaderValue::from_str(&value).expect("ASCII header"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_writes_are_separate_and_exact_with_a_still_clock() {
        let clock = FakeRelativeClock::default();
        let limits = RateLimits::new(LimiterClock::Manual(clock.clone()));
        let key = "key_a".to_string();
        for i in 0..RateLimits::READS_PER_MINUTE {
            let snap = limits.reads.limiter.check_key(&key).expect("within quota");
            assert_eq!(
                snap.remaining_burst_capacity(),
                RateLimits::READS_PER_MINUTE - 1 - i
            );
        }
        assert!(limits.reads.limiter.check_key(&key).is_err());
        // Writes are untouched by reads, and other keys by this one.
        assert!(limits.writes.limiter.check_key(&key).is_ok());
        assert!(limits.reads.limiter.check_key(&"key_b".to_string()).is_ok());
        // One cell refills every 60/300 s.
        clock.advance(Duration::from_millis(200));
        assert!(limits.reads.limiter.check_key(&key).is_ok());
        assert_eq!(limits.reads.reset_secs(0), 60);
        assert_eq!(limits.reads.reset_secs(299), 1);
        assert_eq!(limits.reads.reset_secs(300), 0);
    }
}
