//! Sign-in attempts: at most 10 per 15 minutes per email and per client address (`governor`,
//! as the API's rate limits). Counted before the password is checked, so a guesser is slowed
//! whatever the answer.
//!
//! With `redis_url` set the attempts are counted in Redis, with the API's GCRA script, so that
//! every serve process shares the count; while Redis does not answer each process counts alone
//! (fail open, as the API's limits: `voiced_rate_limit_fallbacks_total{policy="sign-in"}`).
//! Redis keys carry a SHA-256 of the email or address, never the email itself.

use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use governor::clock::Clock;
use governor::middleware::NoOpMiddleware;
use governor::state::keyed::DefaultKeyedStateStore;
use governor::{Quota, RateLimiter};

use crate::http::rate_limit::{Decision, LimiterClock, SharedGcra};

pub const ATTEMPTS: u32 = 10;
pub const WINDOW: Duration = Duration::from_secs(15 * 60);

type Keyed = RateLimiter<
    String,
    DefaultKeyedStateStore<String>,
    LimiterClock,
    NoOpMiddleware<governor::nanos::Nanos>,
>;

pub struct SignInLimiter {
    limiter: Keyed,
    shared: Option<Arc<SharedGcra>>,
}

impl Default for SignInLimiter {
    fn default() -> Self {
        Self::new(LimiterClock::Real(Instant::now()))
    }
}

impl SignInLimiter {
    pub fn new(clock: LimiterClock) -> Self {
        let quota = Quota::with_period(WINDOW / ATTEMPTS)
            .expect("positive period")
            .allow_burst(NonZeroU32::new(ATTEMPTS).expect("positive"));
        Self {
            limiter: RateLimiter::dashmap_with_clock(quota, clock),
            shared: None,
        }
    }

    /// Counts in Redis too (`redis_url`), falling back to this process's count.
    pub fn with_redis(mut self, shared: Option<Arc<SharedGcra>>) -> Self {
        self.shared = shared;
        self
    }

    /// Counts one attempt for `email` from `client`; `Err(wait)` when either has no attempt
    /// left, with how long until one comes back.
    pub async fn check(&self, email: &str, client: Option<IpAddr>) -> Result<(), Duration> {
        let mut wait = Duration::ZERO;
        let keys = [
            Some(format!("email:{}", email.trim().to_lowercase())),
            client.map(|ip| format!("ip:{ip}")),
        ];
        for key in keys.into_iter().flatten() {
            if let Some(shared) = &self.shared {
                let hashed = format!("voiced:signin:{:x}", Sha256::digest(key.as_bytes()));
                match shared.decide("sign-in", hashed, ATTEMPTS, WINDOW).await {
                    Some(Decision::Allowed { .. }) => continue,
                    Some(Decision::Refused { wait: not_until }) => {
                        wait = wait.max(not_until);
                        continue;
                    }
                    None => {}
                }
            }
            let now = self.limiter.clock().now();
            if let Err(not_until) = self.limiter.check_key(&key) {
                wait = wait.max(not_until.wait_time_from(now));
            }
        }
        if wait.is_zero() { Ok(()) } else { Err(wait) }
    }

    /// Drops state that has fully refilled; call periodically.
    pub fn shrink(&self) {
        self.limiter.retain_recent();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use governor::clock::FakeRelativeClock;

    #[tokio::test]
    async fn ten_attempts_per_email_and_per_address() {
        let clock = FakeRelativeClock::default();
        let limiter = SignInLimiter::new(LimiterClock::Manual(clock.clone()));
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let b: IpAddr = "192.0.2.2".parse().unwrap();
        for _ in 0..ATTEMPTS {
            assert!(limiter.check("Ada@example.com", Some(a)).await.is_ok());
        }
        // The email is spent (whatever its case), from any address.
        let wait = limiter.check("ada@example.com", Some(b)).await.unwrap_err();
        assert_eq!(wait, WINDOW / ATTEMPTS);
        // The address is spent for other emails too.
        assert!(limiter.check("bob@example.com", Some(a)).await.is_err());
        // One attempt comes back after 90 s.
        clock.advance(WINDOW / ATTEMPTS);
        assert!(limiter.check("carol@example.com", Some(b)).await.is_ok());
    }
}
