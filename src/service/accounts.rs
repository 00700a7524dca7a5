//! Accounts that sign in to the console: sign-up, sign-in and passwords.
//!
//! Passwords are hashed with Argon2id, parameters m = 19 456 KiB, t = 2, p = 1 (the `argon2`
//! crate's defaults, OWASP's first recommendation), as PHC strings that carry their parameters,
//! so a later change of parameters still verifies old hashes. Hashing and verifying run on the
//! blocking pool (`spawn_blocking`), never on a runtime worker. Signing in with an unknown email
//! verifies the password against a dummy hash, so it costs the same time as a wrong password.
//!
//! The doors anyone can reach (sign-up, sign-in, password change) go through a [`PasswordGate`]:
//! at most `password_hashes_in_flight` Argon2 computations at once and `password_hash_queue`
//! waiting for a turn; beyond that the request is refused (503 `service_unavailable` with
//! `Retry-After`) rather than queued, so a flood of anonymous forms cannot pile up 19 MiB
//! hashes on the blocking pool.

use crate::service::Core;
use std::sync::LazyLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use argon2::Argon2;
use argon2::password_hash::rand_core::OsRng;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use sqlx::PgPool;

use super::error::ServiceError;
use crate::domain::{Email, Plan, new_id};
use crate::store;

/// Bounds the Argon2 work of the console's forms (see the module docs).
pub struct PasswordGate {
    running: tokio::sync::Semaphore,
    /// Requests holding or waiting for a turn.
    admitted: AtomicUsize,
    capacity: usize,
}

/// How long a refused caller is told to wait.
const BUSY_RETRY_SECS: u64 = 1;

struct Admitted<'a>(&'a AtomicUsize);

impl Drop for Admitted<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl PasswordGate {
    /// `in_flight` hashes at once (at least 1) and `queue` more waiting.
    pub fn new(in_flight: u32, queue: u32) -> Self {
        let in_flight = in_flight.max(1) as usize;
        Self {
            running: tokio::sync::Semaphore::new(in_flight),
            admitted: AtomicUsize::new(0),
            capacity: in_flight + queue as usize,
        }
    }

    /// Runs `work` on the blocking pool when a turn is free; 503 with `Retry-After` when the
    /// turns and the queue are all taken.
    async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, ServiceError> {
        if self.admitted.fetch_add(1, Ordering::AcqRel) >= self.capacity {
            self.admitted.fetch_sub(1, Ordering::AcqRel);
            metrics::counter!("voiced_password_hash_refusals_total").increment(1);
            return Err(ServiceError::new(
                super::ErrorCode::ServiceUnavailable,
                "Too many sign-ins and sign-ups are being checked right now; retry in a moment.",
            )
            .with_retry_after(BUSY_RETRY_SECS));
        }
        let _admitted = Admitted(&self.admitted);
        let _turn = self
            .running
            .acquire()
            .await
            .map_err(ServiceError::internal)?;
        tokio::task::spawn_blocking(work)
            .await
            .map_err(ServiceError::internal)
    }
}

impl Default for PasswordGate {
    fn default() -> Self {
        Self::new(2, 8)
    }
}

/// Shortest and longest password accepted (the upper bound keeps hashing bounded).
pub const MIN_PASSWORD_CHARS: usize = 10;
pub const MAX_PASSWORD_CHARS: usize = 1024;

/// Verified against when the email is unknown or has no password, so that every failed sign-in
/// does the same work.
static DUMMY_HASH: LazyLock<String> =
    LazyLock::new(|| hash_blocking("not a password of anyone").expect("hashing works"));

fn hash_blocking(password: &str) -> Result<String, argon2::password_hash::Error> {
    let salt = SaltString::generate(&mut OsRng);
    Ok(Argon2::default()
        .hash_password(password.as_bytes(), &salt)?
        .to_string())
}

fn verify_blocking(password: &str, phc: &str) -> bool {
    PasswordHash::new(phc).is_ok_and(|parsed| {
        Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok()
    })
}

/// Hashes `password` (Argon2id) on the blocking pool.
pub async fn hash_password(password: String) -> Result<String, ServiceError> {
    tokio::task::spawn_blocking(move || hash_blocking(&password))
        .await
        .map_err(ServiceError::internal)?
        .map_err(ServiceError::internal)
}

/// Computes the dummy hash now (start-up) rather than on the first failed sign-in.
pub async fn warm_up() {
    let _ = tokio::task::spawn_blocking(|| DUMMY_HASH.len()).await;
}

/// The account email rule ([`Email`]), refused as `invalid_request` naming `email`.
pub fn valid_email(email: &str) -> Result<Email, ServiceError> {
    Email::parse(email).map_err(|message| ServiceError::invalid("email", message))
}

pub fn valid_password(password: &str) -> Result<(), ServiceError> {
    let chars = password.chars().count();
    if (MIN_PASSWORD_CHARS..=MAX_PASSWORD_CHARS).contains(&chars) {
        Ok(())
    } else {
        Err(ServiceError::invalid(
            "password",
            format!(
                "Choose a password of {MIN_PASSWORD_CHARS} to {MAX_PASSWORD_CHARS} characters."
            ),
        ))
    }
}

/// The checks of a sign-up that cost nothing (a valid email, a password of the right length),
/// so that a form with a typo is answered before it counts against any limit.
pub fn check_sign_up(email: &str, password: &str) -> Result<(), ServiceError> {
    valid_email(email)?;
    valid_password(password)
}

/// Creates an account with a password on `plan`; returns its id. A taken email → 409-like
/// `invalid_request` naming `email`.
pub async fn sign_up(
    core: &Core,
    gate: &PasswordGate,
    email: &str,
    password: String,
    plan: Plan,
) -> Result<String, ServiceError> {
    create(core, gate, email, Some(password), plan).await
}

/// Creates an account on `plan`, with a password or (the operator's `voiced admin account
/// create` without `--password-stdin`) none: the one creation of the console's sign-up and the
/// admin CLI, with the same rules for the email and the password. A taken email → 400
/// `invalid_request` naming `email`.
pub async fn create(
    core: &Core,
    gate: &PasswordGate,
    email: &str,
    password: Option<String>,
    plan: Plan,
) -> Result<String, ServiceError> {
    let pool = &core.pool;
    let email = valid_email(email)?;
    let email = email.as_str();
    if let Some(password) = &password {
        valid_password(password)?;
    }
    if store::accounts::credentials_by_email(pool, email)
        .await?
        .is_some()
    {
        return Err(email_taken());
    }
    let id = new_id("acct");
    let inserted = match password {
        Some(password) => {
            let hash = gate
                .run(move || hash_blocking(&password))
                .await?
                .map_err(ServiceError::internal)?;
            store::accounts::insert_with_password(pool, &id, email, plan, &hash).await
        }
        None => store::accounts::insert(pool, &id, email, plan).await,
    };
    inserted.map_err(|err| match &err {
        sqlx::Error::Database(db) if db.is_unique_violation() => email_taken(),
        _ => err.into(),
    })?;
    Ok(id)
}

fn email_taken() -> ServiceError {
    ServiceError::invalid(
        "email",
        "An account with this email exists; sign in instead.",
    )
}

/// The account id when `password` is the password of the account with `email`; `None` for a
/// wrong password, an unknown email, or an account without a password, after the same work.
pub async fn sign_in(
    core: &Core,
    gate: &PasswordGate,
    email: &str,
    password: String,
) -> Result<Option<String>, ServiceError> {
    let pool = &core.pool;
    let found = store::accounts::credentials_by_email(pool, email.trim()).await?;
    let (id, phc) = match found {
        Some(store::accounts::Credentials {
            id,
            password_hash: Some(phc),
        }) => (Some(id), phc),
        _ => (None, DUMMY_HASH.clone()),
    };
    let matches = gate.run(move || verify_blocking(&password, &phc)).await?;
    Ok(id.filter(|_| matches))
}

/// Whether `password` is the account's password (after the same work when it has none).
pub async fn password_matches(
    pool: &PgPool,
    gate: &PasswordGate,
    account_id: &str,
    password: String,
) -> Result<bool, ServiceError> {
    let phc = store::accounts::credentials_by_id(pool, account_id)
        .await?
        .and_then(|c| c.password_hash)
        .unwrap_or_else(|| DUMMY_HASH.clone());
    gate.run(move || verify_blocking(&password, &phc)).await
}

/// Checks the current password, then sets a new one and ends every other console session of
/// the account (`keep_session`, the one that asked, stays signed in). `Ok(false)` when
/// `current` is wrong.
pub async fn change_password(
    core: &Core,
    gate: &PasswordGate,
    account_id: &str,
    keep_session: &str,
    current: String,
    new: String,
) -> Result<bool, ServiceError> {
    let pool = &core.pool;
    valid_password(&new)?;
    if !password_matches(pool, gate, account_id, current).await? {
        return Ok(false);
    }
    let hash = gate
        .run(move || hash_blocking(&new))
        .await?
        .map_err(ServiceError::internal)?;
    let mut tx = pool.begin().await?;
    store::accounts::set_password_hash(&mut *tx, account_id, &hash).await?;
    let ended = store::sessions::end_others(&mut tx, account_id, keep_session).await?;
    tx.commit().await?;
    tracing::info!(account_id, sessions_ended = ended, "password changed");
    Ok(true)
}

/// Sets the password without asking for the old one (operators: `voiced admin account
/// set-password`) and ends every console session of the account. `Ok(false)` when there is no
/// such account.
pub async fn set_password(
    core: &Core,
    account_id: &str,
    password: String,
) -> Result<bool, ServiceError> {
    let pool = &core.pool;
    valid_password(&password)?;
    let hash = hash_password(password).await?;
    let mut tx = pool.begin().await?;
    let found = store::accounts::set_password_hash(&mut *tx, account_id, &hash).await?;
    // Whoever held a session under the old password is signed out.
    store::sessions::end_all(&mut tx, account_id).await?;
    tx.commit().await?;
    Ok(found)
}

/// The account `account_id` as of this month (its email, plan and the month's audio), or `None`
/// when it no longer exists.
pub async fn current(
    core: &Core,
    account_id: &str,
) -> Result<Option<store::accounts::AccountDetail>, ServiceError> {
    let pool = &core.pool;
    let month = store::usage::month_of(chrono::Utc::now());
    Ok(store::accounts::detail(pool, account_id, month).await?)
}

/// The console's session store (sessions live in the database beside the accounts).
pub fn session_store(core: &Core) -> store::sessions::PgSessionStore {
    store::sessions::PgSessionStore::new(core.pool.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_are_argon2id_salted_and_verify() {
        let a = hash_blocking("correct horse battery").unwrap();
        let b = hash_blocking("correct horse battery").unwrap();
        assert!(a.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"), "{a}");
        assert_ne!(a, b, "each hash has its own salt");
        assert!(verify_blocking("correct horse battery", &a));
        assert!(!verify_blocking("correct horse battery!", &a));
        assert!(!verify_blocking("anything", "not a phc string"));
    }

    #[tokio::test]
    async fn the_gate_runs_its_turns_queues_its_queue_and_refuses_the_rest() {
        let gate = std::sync::Arc::new(PasswordGate::new(1, 1));
        let (release, hold) = std::sync::mpsc::channel::<()>();
        let hold = std::sync::Arc::new(std::sync::Mutex::new(hold));
        // One running (blocked until released), one waiting for the turn.
        let mut admitted = Vec::new();
        for _ in 0..2 {
            let (gate, hold) = (gate.clone(), hold.clone());
            admitted.push(tokio::spawn(async move {
                gate.run(move || hold.lock().unwrap().recv().is_ok()).await
            }));
        }
        while gate.admitted.load(Ordering::Acquire) < 2 {
            tokio::task::yield_now().await;
        }
        // The third is refused at once: 503 with Retry-After, nothing run.
        let refused = gate.run(|| true).await.unwrap_err();
        assert_eq!(refused.code, super::super::ErrorCode::ServiceUnavailable);
        assert_eq!(refused.retry_after_secs, Some(BUSY_RETRY_SECS));
        release.send(()).unwrap();
        release.send(()).unwrap();
        for task in admitted {
            assert!(task.await.unwrap().unwrap());
        }
        // Turns are given back: the gate admits again.
        assert_eq!(gate.admitted.load(Ordering::Acquire), 0);
        assert!(gate.run(|| true).await.unwrap());
    }

    #[test]
    fn emails_and_passwords_are_checked() {
        assert_eq!(
            valid_email(" ada@example.com ").unwrap().as_str(),
            "ada@example.com"
        );
        for bad in [
            "",
            "ada",
            "@example.com",
            "ada@localhost",
            "a da@example.com",
        ] {
            assert!(valid_email(bad).is_err(), "{bad}");
        }
        assert!(valid_password("short").is_err());
        assert!(valid_password("long enough now").is_ok());
        assert!(valid_password(&"x".repeat(MAX_PASSWORD_CHARS + 1)).is_err());
    }
}
