//! The console's anonymous limits, on [`NamedQuota`] (the API's GCRA, in Redis when
//! `redis_url` is set; while Redis does not answer each process counts alone, counted in
//! `voiced_rate_limit_fallbacks_total{policy}`). Keys are the client address of
//! `http::client_addr` (behind a trusted proxy, the forwarded client).
//!
//! - Sign-in: at most 10 attempts per 15 minutes per email and per client address, counted
//!   before the password is checked, so a guesser is slowed whatever the answer.
//! - Sign-up: at most `signup_per_address_per_hour` per client address and `signup_per_hour`
//!   from everyone, counted before the password is hashed and the account row made.
//!
//! An IPv6 client counts as its network of `ipv6_rate_limit_prefix` bits (default /64), an
//! IPv4 client as its address (`domain::Ipv6RatePrefix`).

use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::domain::Ipv6RatePrefix;
use crate::limits::quota::{NamedQuota, address_key};
use crate::limits::{LimiterClock, SharedGcra};

pub const ATTEMPTS: u32 = 10;
pub const WINDOW: Duration = Duration::from_secs(15 * 60);

pub struct SignInLimiter {
    attempts: NamedQuota,
    prefix: Ipv6RatePrefix,
}

impl Default for SignInLimiter {
    fn default() -> Self {
        Self::new(LimiterClock::Real(Instant::now()))
    }
}

impl SignInLimiter {
    pub fn new(clock: LimiterClock) -> Self {
        Self {
            attempts: NamedQuota::new("sign-in", ATTEMPTS, WINDOW, clock),
            prefix: Ipv6RatePrefix::default(),
        }
    }

    /// Keys IPv6 clients on their network of this many bits (`ipv6_rate_limit_prefix`).
    pub fn with_ipv6_prefix(mut self, prefix: Ipv6RatePrefix) -> Self {
        self.prefix = prefix;
        self
    }

    /// Counts in Redis too (`redis_url`), falling back to this process's count.
    pub fn with_redis(mut self, shared: Option<Arc<SharedGcra>>) -> Self {
        self.attempts = self.attempts.with_redis(shared);
        self
    }

    /// Counts one attempt for `email` from `client`; `Err(wait)` when either has no attempt
    /// left, with how long until one comes back.
    pub async fn check(&self, email: &str, client: Option<IpAddr>) -> Result<(), Duration> {
        let mut wait = Duration::ZERO;
        let keys = [
            Some(format!("email:{}", email.trim().to_lowercase())),
            client.map(|ip| format!("ip:{}", address_key(Some(ip), self.prefix))),
        ];
        for key in keys.into_iter().flatten() {
            if let Err(not_until) = self.attempts.check(&key).await {
                wait = wait.max(not_until);
            }
        }
        if wait.is_zero() { Ok(()) } else { Err(wait) }
    }

    /// Drops state that has fully refilled; call periodically.
    pub fn shrink(&self) {
        self.attempts.shrink();
    }
}

/// Sign-ups per client address and from everyone, per hour.
pub struct SignUpLimiter {
    per_address: NamedQuota,
    everyone: NamedQuota,
    prefix: Ipv6RatePrefix,
}

const HOUR: Duration = Duration::from_secs(3600);

impl SignUpLimiter {
    pub fn new(per_address_per_hour: u32, per_hour: u32, clock: LimiterClock) -> Self {
        Self {
            per_address: NamedQuota::new("sign-up", per_address_per_hour, HOUR, clock.clone()),
            everyone: NamedQuota::new("sign-up-all", per_hour, HOUR, clock),
            prefix: Ipv6RatePrefix::default(),
        }
    }

    /// Keys IPv6 clients on their network of this many bits (`ipv6_rate_limit_prefix`).
    pub fn with_ipv6_prefix(mut self, prefix: Ipv6RatePrefix) -> Self {
        self.prefix = prefix;
        self
    }

    pub fn with_redis(mut self, shared: Option<Arc<SharedGcra>>) -> Self {
        self.per_address = self.per_address.with_redis(shared.clone());
        self.everyone = self.everyone.with_redis(shared);
        self
    }

    /// Counts one sign-up from `client`; `Err(wait)` when the address or everyone has none
    /// left. A refusal for the address does not spend the shared quota.
    pub async fn check(&self, client: Option<IpAddr>) -> Result<(), Duration> {
        self.per_address
            .check(&address_key(client, self.prefix))
            .await?;
        self.everyone.check("all").await
    }

    pub fn shrink(&self) {
        self.per_address.shrink();
        self.everyone.shrink();
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

    #[tokio::test]
    async fn an_ipv6_client_counts_as_its_slash_64() {
        let clock = FakeRelativeClock::default();
        let limiter = SignInLimiter::new(LimiterClock::Manual(clock.clone()));
        // Ten attempts, each from another address of one /64 and for another email.
        for n in 0..ATTEMPTS {
            let ip: IpAddr = format!("2001:db8:5:6::{:x}", n + 1).parse().unwrap();
            let email = format!("user{n}@example.com");
            assert!(limiter.check(&email, Some(ip)).await.is_ok());
        }
        let fresh: IpAddr = "2001:db8:5:6:abcd::99".parse().unwrap();
        assert!(limiter.check("new@example.com", Some(fresh)).await.is_err());
        // The next /64 is another client.
        let next: IpAddr = "2001:db8:5:7::1".parse().unwrap();
        assert!(limiter.check("other@example.com", Some(next)).await.is_ok());

        // With a /128 prefix every address counts alone (the setting is honoured).
        let limiter = SignInLimiter::new(LimiterClock::Manual(clock))
            .with_ipv6_prefix(Ipv6RatePrefix::new(128).unwrap());
        for n in 0..ATTEMPTS {
            let ip: IpAddr = format!("2001:db8:5:6::{:x}", n + 1).parse().unwrap();
            assert!(
                limiter
                    .check(&format!("u{n}@example.com"), Some(ip))
                    .await
                    .is_ok()
            );
        }
        assert!(limiter.check("new@example.com", Some(fresh)).await.is_ok());
    }

    #[tokio::test]
    async fn sign_ups_per_address_and_for_everyone() {
        let clock = FakeRelativeClock::default();
        let limiter = SignUpLimiter::new(2, 3, LimiterClock::Manual(clock.clone()));
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let b: IpAddr = "192.0.2.2".parse().unwrap();
        assert!(limiter.check(Some(a)).await.is_ok());
        assert!(limiter.check(Some(a)).await.is_ok());
        // The address is spent; its refusal leaves the shared quota alone.
        assert_eq!(limiter.check(Some(a)).await, Err(HOUR / 2));
        assert!(limiter.check(Some(b)).await.is_ok());
        // Three in all: everyone is refused now.
        assert_eq!(limiter.check(Some(b)).await, Err(HOUR / 3));
    }
}
