//! Principals kept in memory for reads, never trusted on their own (docs/architecture.md,
//! "Authentication on the read path").
//!
//! Each entry holds a principal and its *fingerprint*: everything that authorizes it (key,
//! account, scopes, ceiling, plan, features) as the view `credential_fingerprints` computes it
//! (migration 0006). A request that starts from an entry carries a [`CredentialCheck`]; its read
//! statement recomputes the fingerprint from the database in the same statement
//! (`store::*::*_checked`) and hands the result to [`CredentialCheck::confirm`]. Only a confirmed
//! answer leaves: any other (a different or missing fingerprint, a refusal made from memory) is
//! discarded by `http::principal_check::confirm_reads`, the entry dropped and the credential
//! looked up again. So a revoked key, a changed plan, scopes or features are seen on the very
//! next request, in every process, with no invalidation messages, and an authenticated read
//! costs one database round trip.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use chrono::{DateTime, TimeDelta, Utc};

use super::error::ServiceError;
use super::principal::Principal;
use crate::domain::SecretHash;
use crate::store::keys::Checked;

/// Entries kept at most; past it the map starts again empty (entries are only a shortcut).
const CAPACITY: usize = 65_536;

/// A credential's principal as last read from the database, by the SHA-256 of its secret.
#[derive(Default)]
pub struct PrincipalCache {
    entries: RwLock<HashMap<[u8; 32], Arc<Entry>>>,
}

pub struct Entry {
    pub principal: Arc<Principal>,
    fingerprint: Arc<str>,
    /// The credential's "last used" as last recorded (console), to the minute.
    last_used: Mutex<Option<DateTime<Utc>>>,
}

impl Entry {
    /// Whether "last used" is a minute old or more; if so it counts as recorded from now on (the
    /// caller records it).
    pub fn take_stale_use(&self, now: DateTime<Utc>) -> bool {
        let mut last = self.last_used.lock().expect("not poisoned");
        let stale = last.is_none_or(|at| now - at >= TimeDelta::minutes(1));
        if stale {
            *last = Some(now);
        }
        stale
    }
}

impl PrincipalCache {
    pub fn get(&self, credential: &SecretHash) -> Option<Arc<Entry>> {
        let entries = self.entries.read().expect("not poisoned");
        entries.get(&credential.0).cloned()
    }

    pub fn insert(
        &self,
        credential: &SecretHash,
        principal: Arc<Principal>,
        fingerprint: &str,
        last_used: Option<DateTime<Utc>>,
    ) {
        let entry = Arc::new(Entry {
            principal,
            fingerprint: fingerprint.into(),
            last_used: Mutex::new(last_used),
        });
        let mut entries = self.entries.write().expect("not poisoned");
        if entries.len() >= CAPACITY && !entries.contains_key(&credential.0) {
            entries.clear();
        }
        entries.insert(credential.0, entry);
    }

    pub fn remove(&self, credential: &[u8; 32]) {
        self.entries
            .write()
            .expect("not poisoned")
            .remove(credential);
    }

    pub fn len(&self) -> usize {
        self.entries.read().expect("not poisoned").len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What a read's statement said about the request's principal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// No statement checked it (yet).
    Unchecked,
    /// The database's fingerprint equals the principal's: the answer stands.
    Confirmed,
    /// It differs, or the credential no longer authorizes anything.
    Stale,
}

/// Which credential a request's principal stands for, with the fingerprint it was built from;
/// in the request's extensions next to the principal.
pub struct CredentialCheck {
    credential_sha256: [u8; 32],
    fingerprint: Arc<str>,
    from_memory: bool,
    /// Verified in the database by this request already (OAuth access tokens): any read
    /// statement's answer stands.
    verified: bool,
    outcome: AtomicU8,
}

impl CredentialCheck {
    /// A principal just read from the database.
    pub fn fresh(credential: &SecretHash, fingerprint: &str) -> Self {
        Self::new(credential, fingerprint.into(), false)
    }

    /// A principal taken from a cache entry: its answer stands only once confirmed.
    pub fn cached(credential: &SecretHash, entry: &Entry) -> Self {
        Self::new(credential, entry.fingerprint.clone(), true)
    }

    /// A credential this request has just verified in the database by other means (an OAuth
    /// access token): a read made with it stands as long as the credential is still live in the
    /// read's own statement.
    pub fn verified(credential: &SecretHash) -> Self {
        Self {
            credential_sha256: credential.0,
            fingerprint: "".into(),
            from_memory: false,
            verified: true,
            outcome: AtomicU8::new(0),
        }
    }

    fn new(credential: &SecretHash, fingerprint: Arc<str>, from_memory: bool) -> Self {
        Self {
            credential_sha256: credential.0,
            fingerprint,
            from_memory,
            verified: false,
            outcome: AtomicU8::new(0),
        }
    }

    /// The SHA-256 of the credential's secret: what read statements check it by.
    pub fn credential(&self) -> &[u8; 32] {
        &self.credential_sha256
    }

    pub fn from_memory(&self) -> bool {
        self.from_memory
    }

    pub fn outcome(&self) -> Outcome {
        match self.outcome.load(Ordering::Acquire) {
            1 => Outcome::Confirmed,
            2 => Outcome::Stale,
            _ => Outcome::Unchecked,
        }
    }

    /// The read's value when the statement's fingerprint is the principal's; otherwise the
    /// answer must not be given (503, replaced by a fresh lookup's answer before it leaves).
    pub fn confirm<T>(&self, checked: Checked<T>) -> Result<T, ServiceError> {
        if self.verified && checked.fingerprint.is_some() {
            self.outcome.store(1, Ordering::Release);
            return Ok(checked.value);
        }
        if checked.fingerprint.as_deref() == Some(&*self.fingerprint) {
            // A stale result seen earlier in the same request is never overwritten.
            let _ = self
                .outcome
                .compare_exchange(0, 1, Ordering::AcqRel, Ordering::Acquire);
            if self.outcome() == Outcome::Confirmed {
                return Ok(checked.value);
            }
        } else {
            self.outcome.store(2, Ordering::Release);
        }
        Err(ServiceError::unavailable(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{Plan, Scope};

    fn principal() -> Arc<Principal> {
        Arc::new(Principal {
            account_id: "acct_1".into(),
            scopes: vec![Scope::VoiceRead],
            plan: Plan::Pro,
            features: vec![],
            credential: crate::service::principal::Credential::ApiKey {
                key_id: "key_1".into(),
                ceiling_minutes: None,
            },
        })
    }

    fn checked(fingerprint: Option<&str>) -> Checked<u8> {
        Checked {
            fingerprint: fingerprint.map(str::to_owned),
            value: 7,
        }
    }

    #[test]
    fn only_the_same_fingerprint_confirms_and_stale_sticks() {
        let cache = PrincipalCache::default();
        let hash = SecretHash::of("vk_a");
        cache.insert(&hash, principal(), "(key_1,pro)", None);
        let entry = cache.get(&hash).expect("cached");
        assert!(cache.get(&SecretHash::of("vk_b")).is_none());

        let check = CredentialCheck::cached(&hash, &entry);
        assert!(check.from_memory());
        assert_eq!(check.outcome(), Outcome::Unchecked);
        assert_eq!(check.confirm(checked(Some("(key_1,pro)"))).unwrap(), 7);
        assert_eq!(check.outcome(), Outcome::Confirmed);

        for stale in [Some("(key_1,none)"), None] {
            let check = CredentialCheck::cached(&hash, &entry);
            assert!(check.confirm(checked(stale)).is_err());
            assert_eq!(check.outcome(), Outcome::Stale);
            // A later matching read in the same request does not undo it.
            assert!(check.confirm(checked(Some("(key_1,pro)"))).is_err());
            assert_eq!(check.outcome(), Outcome::Stale);
        }

        cache.remove(&hash.0);
        assert!(cache.is_empty());
    }

    #[test]
    fn last_use_is_due_once_a_minute() {
        let cache = PrincipalCache::default();
        let hash = SecretHash::of("vk_a");
        let now = Utc::now();
        cache.insert(&hash, principal(), "fp", Some(now - TimeDelta::seconds(30)));
        let entry = cache.get(&hash).unwrap();
        assert!(!entry.take_stale_use(now));
        assert!(entry.take_stale_use(now + TimeDelta::seconds(31)));
        assert!(!entry.take_stale_use(now + TimeDelta::seconds(40)));
    }
}
