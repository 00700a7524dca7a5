//! Per-key request rate limits with `governor` (GCRA), and the IETF draft's `RateLimit` /
//! `RateLimit-Policy` headers (structured fields, DECISIONS "HTTP").
//!
//! Two independent policies per key: `writes` (600 per hour: POST, PUT, PATCH, DELETE) and
//! `read-burst` (300 per minute: everything else). A request counts against exactly one.
//!
//! With `redis_url` set, every serve process counts against the same state: one GCRA Lua script
//! per key and policy ([`GCRA_SCRIPT`]), atomic in Redis, with the same arithmetic as `governor`
//! (so the headers read the same). When Redis cannot be reached the process falls back to its
//! own in-process limiter (a warning at most once a minute, the metric
//! `voiced_rate_limit_fallbacks_total`) and tries Redis again a second later, by itself.

use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::{HeaderValue, Method};
use governor::clock::{Clock, FakeRelativeClock};
use governor::middleware::StateInformationMiddleware;
use governor::nanos::Nanos;
use governor::state::keyed::DefaultKeyedStateStore;
use governor::{Quota, RateLimiter};

pub mod quota;

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
pub struct Policy {
    pub name: &'static str,
    pub quota: u32,
    pub window_secs: u64,
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
    pub fn reset_secs(&self, remaining: u32) -> u64 {
        let used = u64::from(self.quota - remaining.min(self.quota));
        (used * self.window_secs).div_ceil(u64::from(self.quota))
    }
}

/// GCRA in Redis. KEYS[1]: the key's state (its theoretical arrival time, microseconds since
/// the epoch on the Redis clock). ARGV[1]: emission interval (µs per request); ARGV[2]: burst
/// (the quota). Returns {allowed (1/0), remaining, µs to wait}. Redis's own clock serves every
/// process alike, so serve processes need no clock agreement.
pub const GCRA_SCRIPT: &str = r#"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local tolerance = interval * burst
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end
local new_tat = tat + interval
local allow_at = new_tat - tolerance
if now < allow_at then
  return {0, 0, allow_at - now}
end
redis.call('SET', KEYS[1], string.format('%.0f', new_tat), 'PX', math.ceil((new_tat - now) / 1000) + 1)
return {1, math.floor((tolerance - (new_tat - now)) / interval), 0}
"#;

/// How long a failing Redis is left alone before the next try.
const REDIS_RETRY: Duration = Duration::from_secs(1);
/// At most one "Redis unreachable" warning in this long.
const WARN_EVERY: Duration = Duration::from_secs(60);

/// GCRA state in Redis shared by every process: the connection (made lazily, so that start-up
/// does not need Redis) and the fallback bookkeeping. The API's limits and the console's
/// sign-in limiter use one of these per process.
pub struct SharedGcra {
    client: redis::Client,
    connection: tokio::sync::Mutex<Option<redis::aio::ConnectionManager>>,
    script: redis::Script,
    /// Set while Redis fails: no call is tried before this moment.
    retry_at: Mutex<Option<Instant>>,
    last_warning: Mutex<Option<Instant>>,
}

/// What one quota says about one request.
pub enum Decision {
    Allowed { remaining: u32 },
    Refused { wait: Duration },
}

impl SharedGcra {
    /// Redis at `url` (`redis://…`, `rediss://…`, `unix:///path`); only the URL is checked here.
    pub fn open(url: &str) -> Result<Self, redis::RedisError> {
        Ok(Self {
            client: redis::Client::open(url)?,
            connection: tokio::sync::Mutex::new(None),
            script: redis::Script::new(GCRA_SCRIPT),
            retry_at: Mutex::new(None),
            last_warning: Mutex::new(None),
        })
    }

    /// Counts one request against `key` (`quota` per `window`) in Redis; `None` when Redis
    /// cannot answer, and the caller counts in its own process (fail open, counted in
    /// `voiced_rate_limit_fallbacks_total{policy}`).
    pub async fn decide(
        &self,
        policy: &'static str,
        key: String,
        quota: u32,
        window: Duration,
    ) -> Option<Decision> {
        if !self.resting() {
            match self.check(key, quota, window).await {
                Ok(decision) => {
                    self.recovered();
                    return Some(decision);
                }
                Err(err) => self.failed(&err),
            }
        }
        metrics::counter!("voiced_rate_limit_fallbacks_total", "policy" => policy).increment(1);
        None
    }

    async fn connection(&self) -> redis::RedisResult<redis::aio::ConnectionManager> {
        let mut slot = self.connection.lock().await;
        if let Some(connection) = slot.as_ref() {
            return Ok(connection.clone());
        }
        let config = redis::aio::ConnectionManagerConfig::new()
            .set_connection_timeout(Duration::from_millis(500))
            .set_response_timeout(Duration::from_millis(500))
            .set_number_of_retries(1);
        let connection =
            redis::aio::ConnectionManager::new_with_config(self.client.clone(), config).await?;
        *slot = Some(connection.clone());
        Ok(connection)
    }

    async fn check(
        &self,
        key: String,
        quota: u32,
        window: Duration,
    ) -> redis::RedisResult<Decision> {
        let mut connection = self.connection().await?;
        let window_us = u64::try_from(window.as_micros()).unwrap_or(u64::MAX);
        let interval_us = (window_us / u64::from(quota)).max(1);
        let (allowed, remaining, wait_us): (i64, i64, i64) = self
            .script
            .key(key)
            .arg(interval_us)
            .arg(quota)
            .invoke_async(&mut connection)
            .await?;
        Ok(if allowed == 1 {
            Decision::Allowed {
                remaining: u32::try_from(remaining.max(0)).unwrap_or(0),
            }
        } else {
            Decision::Refused {
                wait: Duration::from_micros(u64::try_from(wait_us.max(0)).unwrap_or(0)),
            }
        })
    }

    fn resting(&self) -> bool {
        let retry_at = self.retry_at.lock().expect("not poisoned");
        retry_at.is_some_and(|at| Instant::now() < at)
    }

    fn failed(&self, err: &redis::RedisError) {
        let now = Instant::now();
        *self.retry_at.lock().expect("not poisoned") = Some(now + REDIS_RETRY);
        let mut last = self.last_warning.lock().expect("not poisoned");
        if last.is_none_or(|at| now.duration_since(at) >= WARN_EVERY) {
            *last = Some(now);
            // The error names the failure, never the URL (it may carry a password).
            tracing::warn!(error = %err, "Redis unreachable: rate limits are per process until it answers again");
        }
    }

    fn recovered(&self) {
        let mut retry_at = self.retry_at.lock().expect("not poisoned");
        if retry_at.take().is_some() {
            tracing::info!("Redis answers again: rate limits are shared again");
        }
    }
}

/// Which policy a request counts against when its method does not say: the agent interface
/// answers every call on one POST route, so it classifies each call itself (a generating tool
/// call is a write, anything else a read) and puts this in the request's extensions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateClass {
    Read,
    Write,
}

pub struct RateLimits {
    writes: Policy,
    reads: Policy,
    policy_header: HeaderValue,
    shared: Option<Arc<SharedGcra>>,
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
            shared: None,
        }
    }

    /// Counts in Redis at `url` (`redis://…`, `rediss://…`, `unix:///path`), falling back to
    /// this process's limiter while Redis cannot be reached. Only the URL is checked here.
    pub fn shared(mut self, url: &str) -> Result<Self, redis::RedisError> {
        self.shared = Some(Arc::new(SharedGcra::open(url)?));
        Ok(self)
    }

    /// The Redis these limits count in, if any (the console's sign-in limiter counts there too).
    pub fn redis(&self) -> Option<Arc<SharedGcra>> {
        self.shared.clone()
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

    /// The `RateLimit-Policy` header every counted answer carries.
    pub fn policy_header(&self) -> &HeaderValue {
        &self.policy_header
    }

    /// The policy a request counts against: its class when the door set one, else its method.
    pub fn policy(&self, class: Option<RateClass>, method: &Method) -> &Policy {
        match class {
            Some(RateClass::Read) => &self.reads,
            Some(RateClass::Write) => &self.writes,
            None => self.policy_for(method),
        }
    }

    /// The write policy (what a console action counts against too).
    pub fn writes(&self) -> &Policy {
        &self.writes
    }

    fn policy_for(&self, method: &Method) -> &Policy {
        match *method {
            Method::GET | Method::HEAD | Method::OPTIONS => &self.reads,
            _ => &self.writes,
        }
    }

    /// The shared state when Redis answers; this process's otherwise.
    pub async fn decide(&self, policy: &Policy, key_id: &str) -> Decision {
        if let Some(shared) = &self.shared {
            let key = format!("voiced:ratelimit:{}:{key_id}", policy.name);
            let window = Duration::from_secs(policy.window_secs);
            if let Some(decision) = shared.decide(policy.name, key, policy.quota, window).await {
                return decision;
            }
        }
        let key = key_id.to_owned();
        match policy.limiter.check_key(&key) {
            Ok(snapshot) => Decision::Allowed {
                remaining: snapshot.remaining_burst_capacity(),
            },
            Err(not_until) => Decision::Refused {
                wait: not_until.wait_time_from(policy.limiter.clock().now()),
            },
        }
    }
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
