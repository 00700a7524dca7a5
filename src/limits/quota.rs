//! One named quota over arbitrary keys (`q` per `w`), with the API's GCRA: in this process
//! (`governor`), or in Redis when `redis_url` is set ([`SharedGcra`], the same script as the
//! API's limits; while Redis does not answer each process counts alone). The limiters of the
//! anonymous doors (console sign-in and sign-up, OAuth registration and metadata fetches) are
//! made of these, keyed on the client address of the client address (`http::client_addr`). Redis keys are
//! `voiced:<policy without dashes>:<SHA-256 of the key>` (`voiced:signin:…`): never the key
//! itself (an email, an address).

use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::{Duration, Instant};

use governor::clock::Clock;
use governor::middleware::NoOpMiddleware;
use governor::state::keyed::DefaultKeyedStateStore;
use governor::{Quota, RateLimiter};
use sha2::{Digest, Sha256};

use super::{Decision, LimiterClock, SharedGcra};
use crate::domain::Ipv6RatePrefix;

type Keyed = RateLimiter<
    String,
    DefaultKeyedStateStore<String>,
    LimiterClock,
    NoOpMiddleware<governor::nanos::Nanos>,
>;

/// `quota` requests per `window` per key; a full quota may be spent at once (burst).
pub struct NamedQuota {
    policy: &'static str,
    redis_prefix: String,
    quota: u32,
    window: Duration,
    local: Keyed,
    shared: Option<Arc<SharedGcra>>,
}

impl NamedQuota {
    /// `policy` names the quota in metrics and Redis keys; `quota` is at least 1.
    pub fn new(policy: &'static str, quota: u32, window: Duration, clock: LimiterClock) -> Self {
        let quota = quota.max(1);
        let governor_quota = Quota::with_period(window / quota)
            .expect("positive period")
            .allow_burst(NonZeroU32::new(quota).expect("positive"));
        Self {
            policy,
            redis_prefix: format!("voiced:{}", policy.replace('-', "")),
            quota,
            window,
            local: RateLimiter::dashmap_with_clock(governor_quota, clock),
            shared: None,
        }
    }

    /// The same on the real clock.
    pub fn real(policy: &'static str, quota: u32, window: Duration) -> Self {
        Self::new(policy, quota, window, LimiterClock::Real(Instant::now()))
    }

    /// Counts in Redis too (`redis_url`), falling back to this process's count.
    pub fn with_redis(mut self, shared: Option<Arc<SharedGcra>>) -> Self {
        self.shared = shared;
        self
    }

    pub fn quota(&self) -> u32 {
        self.quota
    }

    pub fn window(&self) -> Duration {
        self.window
    }

    /// Counts one request for `key`; `Err(wait)` when the key has none left, with how long
    /// until one comes back.
    pub async fn check(&self, key: &str) -> Result<(), Duration> {
        if let Some(shared) = &self.shared {
            let hashed = format!("{}:{:x}", self.redis_prefix, Sha256::digest(key.as_bytes()));
            match shared
                .decide(self.policy, hashed, self.quota, self.window)
                .await
            {
                Some(Decision::Allowed { .. }) => return Ok(()),
                Some(Decision::Refused { wait }) => return Err(wait.max(Duration::from_millis(1))),
                None => {}
            }
        }
        let now = self.local.clock().now();
        self.local
            .check_key(&key.to_owned())
            .map_err(|not_until| not_until.wait_time_from(now).max(Duration::from_millis(1)))
    }

    /// Drops state that has fully refilled; call periodically.
    pub fn shrink(&self) {
        self.local.retain_recent();
    }
}

/// Whole seconds for `Retry-After` (rounded up, at least 1).
pub fn retry_after_secs(wait: Duration) -> u64 {
    (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1)
}

/// The key of a client address in a quota: IPv4 as it is, IPv6 as its network of `prefix`
/// bits (setting `ipv6_rate_limit_prefix`), `unknown` when the server does not know it.
pub fn address_key(client: Option<std::net::IpAddr>, prefix: Ipv6RatePrefix) -> String {
    prefix.key(client)
}

#[cfg(test)]
mod tests {
    use super::*;
    use governor::clock::FakeRelativeClock;

    #[tokio::test]
    async fn a_key_spends_its_quota_then_waits_for_one_interval() {
        let clock = FakeRelativeClock::default();
        let quota = NamedQuota::new(
            "test",
            3,
            Duration::from_secs(30),
            LimiterClock::Manual(clock.clone()),
        );
        for _ in 0..3 {
            assert!(quota.check("a").await.is_ok());
        }
        assert_eq!(quota.check("a").await, Err(Duration::from_secs(10)));
        assert!(quota.check("b").await.is_ok());
        clock.advance(Duration::from_secs(10));
        assert!(quota.check("a").await.is_ok());
        assert_eq!(retry_after_secs(Duration::from_millis(1500)), 2);
        assert_eq!(retry_after_secs(Duration::ZERO), 1);
    }
}
