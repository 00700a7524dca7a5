//! The one place where suites reach the database behind the app's back.
//!
//! The rule: **suites never write SQL.** A suite sets up state through the API, the core
//! (`voiced::service::*`, `TestApp::core`) or the `TestApp` helpers (`account`, `key`,
//! `pro_user`, `charge`, `voice`); state that a test cannot reach through those doors (a row aged
//! by a month, a corrupted blob, a delivery given up a day ago, a generation left by a crashed
//! process) is set up or read here, by a name that says what it is for. Every suite that needs
//! the same fact calls the same function, so a schema change is made once, here, and the pool
//! stays private to `tests/common`.
//!
//! Reads return whole rows (`StoredGeneration`, `LedgerRow`, …) for the suite to filter, so that
//! one statement serves many questions; writes are named for the situation they create. The
//! core's operations that still take the pool (webhooks, cloning, keys for the operator) are
//! wrapped here too, each once.
//!
//! Where this came from (issue 37 item 7), counted with the two greps (the app's pool
//! field named in `tests/`; raw query calls in suites outside `tests/common`): before this
//! module, 293 and 171. Now 0 in the suites; the pool is named only here (98 times; the
//! rest of `tests/common` reaches it through `self`), and this file's 65 query calls
//! (and 4 raw statements) are every distinct statement the suites need, each behind a
//! name.

#![allow(dead_code)] // each test binary uses a different part of this module

use std::time::Duration;

use chrono::{DateTime, Utc};
use voiced::domain::{Feature, Plan};

use sqlx::PgPool;

use super::TestApp;

// ---------------------------------------------------------------------------------------------
// Accounts and keys

/// The id of the account with `email` (it must exist).
pub async fn account_id(app: &TestApp, email: &str) -> String {
    find_account(app, email)
        .await
        .unwrap_or_else(|| panic!("an account for {email}"))
}

/// The id of the account with `email` or id `id_or_email`, if any.
pub async fn find_account(app: &TestApp, id_or_email: &str) -> Option<String> {
    voiced::store::accounts::find_id(&app.pool, id_or_email)
        .await
        .unwrap()
}

/// Puts `account` on `plan` (with the plan's default features), as `voiced admin account plan`
/// does; whether the account exists.
pub async fn set_plan(app: &TestApp, account: &str, plan: Plan) -> bool {
    voiced::store::accounts::set_plan(&app.pool, account, plan)
        .await
        .unwrap()
}

/// Gives `account` exactly `features`, as `voiced admin account features` does.
pub async fn set_features(app: &TestApp, account: &str, features: &[Feature]) {
    assert!(
        voiced::store::accounts::set_features(&app.pool, account, features)
            .await
            .unwrap(),
        "the account {account} exists"
    );
}

/// The stored fields of an account.
#[derive(Debug, sqlx::FromRow)]
pub struct StoredAccount {
    pub id: String,
    pub email: String,
    pub password_hash: Option<String>,
    pub purged: bool,
}

/// Every account, purged ones included, oldest first.
pub async fn accounts(app: &TestApp) -> Vec<StoredAccount> {
    sqlx::query_as(
        "SELECT id, email, password_hash, purged_at IS NOT NULL AS purged
         FROM accounts ORDER BY created_at, id",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap()
}

/// The account `id` as stored.
pub async fn stored_account(app: &TestApp, id: &str) -> StoredAccount {
    accounts(app)
        .await
        .into_iter()
        .find(|a| a.id == id)
        .unwrap_or_else(|| panic!("account {id} is stored"))
}

/// The key rows of `account` with this month's use, as the console lists them.
pub async fn keys_of(app: &TestApp, account: &str) -> Vec<voiced::store::keys::KeySummary> {
    voiced::service::keys::list(&app.core, account)
        .await
        .unwrap()
}

/// Revokes key `key_id`, as `voiced admin key revoke` does.
pub async fn revoke_key(app: &TestApp, key_id: &str) {
    voiced::service::keys::revoke_any(&app.core, key_id)
        .await
        .unwrap();
}

/// The stored fields of a key.
#[derive(Debug, sqlx::FromRow)]
pub struct StoredKey {
    pub id: String,
    pub account_id: String,
    pub name: String,
    pub prefix: String,
    pub secret_sha256: Vec<u8>,
    pub scopes: Vec<String>,
    pub ceiling_minutes: Option<i32>,
    pub revoked: bool,
}

/// Every key, revoked ones included.
pub async fn keys(app: &TestApp) -> Vec<StoredKey> {
    sqlx::query_as(
        "SELECT id, account_id, name, prefix, secret_sha256, scopes, ceiling_minutes,
                revoked_at IS NOT NULL AS revoked
         FROM api_keys ORDER BY created_at, id",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap()
}

/// Changes the scopes of key `key_id` behind the server's back (no door edits scopes): the
/// next request must see the stored scopes, not a remembered principal.
pub async fn set_key_scopes(app: &TestApp, key_id: &str, scopes: &[&str]) {
    let scopes: Vec<String> = scopes.iter().map(|s| s.to_string()).collect();
    sqlx::query("UPDATE api_keys SET scopes = $2 WHERE id = $1")
        .bind(key_id)
        .bind(&scopes)
        .execute(&app.pool)
        .await
        .unwrap();
}

/// Renames key `key_id` (the console names keys at creation only).
pub async fn rename_key(app: &TestApp, key_id: &str, name: &str) {
    sqlx::query("UPDATE api_keys SET name = $2 WHERE id = $1")
        .bind(key_id)
        .bind(name)
        .execute(&app.pool)
        .await
        .unwrap();
}

/// Records a use of key `key_id` now, as the request path does off its way.
pub async fn touch_key(app: &TestApp, key_id: &str) {
    sqlx::query("UPDATE api_keys SET last_used_at = now() WHERE id = $1")
        .bind(key_id)
        .execute(&app.pool)
        .await
        .unwrap();
}

// ---------------------------------------------------------------------------------------------
// Generations and what they charged

/// A generation as stored, with what the ledger charged for it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct StoredGeneration {
    pub id: String,
    pub account_id: String,
    pub api_key_id: Option<String>,
    pub status: String,
    pub error: Option<String>,
    pub text: String,
    pub spoken_text: Option<String>,
    pub duration_ms: Option<i64>,
    pub estimated_ms: i64,
    pub delivered_ms: Option<i64>,
    pub audio_key: Option<String>,
    pub attempts: i32,
    pub lease_owner: Option<String>,
    /// Its lease runs now (`lease_expires_at > now()`).
    pub leased: bool,
    pub created_at: DateTime<Utc>,
    pub started_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
    /// The sum of its ledger rows; `None` without one.
    pub charged_ms: Option<i64>,
}

impl StoredGeneration {
    /// The process part of its lease owner (`host:pid:n` → `pid`).
    pub fn lease_process(&self) -> Option<&str> {
        self.lease_owner.as_deref()?.split(':').nth(1)
    }
}

const GENERATIONS: &str = "SELECT g.id, g.account_id, g.api_key_id, g.status, g.error, g.text,
        g.spoken_text, g.duration_ms, g.estimated_ms, g.delivered_ms, g.audio_key, g.attempts,
        g.lease_owner, COALESCE(g.lease_expires_at > now(), false) AS leased, g.created_at,
        g.started_at, g.finished_at,
        (SELECT sum(u.audio_ms) FROM usage_ledger u WHERE u.generation_id = g.id)::BIGINT
            AS charged_ms
    FROM generations g";

/// Generation `id` as stored (it must exist).
pub async fn generation(app: &TestApp, id: &str) -> StoredGeneration {
    sqlx::query_as(&format!("{GENERATIONS} WHERE g.id = $1"))
        .bind(id)
        .fetch_one(&app.pool)
        .await
        .unwrap_or_else(|err| panic!("generation {id} is stored: {err}"))
}

/// Every generation of `account`, oldest first.
pub async fn generations_of(app: &TestApp, account: &str) -> Vec<StoredGeneration> {
    generations_on(&app.pool, account).await
}

/// [`generations_of`] on a database of a test that runs its own cluster (no `TestApp`).
pub async fn generations_on(pool: &PgPool, account: &str) -> Vec<StoredGeneration> {
    sqlx::query_as(&format!(
        "{GENERATIONS} WHERE g.account_id = $1 ORDER BY g.created_at, g.id"
    ))
    .bind(account)
    .fetch_all(pool)
    .await
    .unwrap()
}

/// Waits until none of `account`'s generations is still `generating`.
pub async fn drained(app: &TestApp, account: &str, within: Duration) {
    drained_on(&app.pool, account, within).await
}

/// [`drained`] on a database of a test that runs its own cluster.
pub async fn drained_on(pool: &PgPool, account: &str, within: Duration) {
    super::poll_until(within, "every accepted generation to end", || async {
        let generations = generations_on(pool, account).await;
        generations
            .iter()
            .all(|g| g.status != "generating")
            .then_some(())
    })
    .await;
}

/// Every generation of `account` completed (`expected` of them), each charged exactly once.
pub async fn all_completed_and_charged_once(app: &TestApp, account: &str, expected: usize) {
    all_completed_and_charged_once_on(&app.pool, account, expected).await
}

/// [`all_completed_and_charged_once`] on a database of a test that runs its own cluster.
pub async fn all_completed_and_charged_once_on(pool: &PgPool, account: &str, expected: usize) {
    let generations = generations_on(pool, account).await;
    assert_eq!(
        generations.len(),
        expected,
        "every accepted generation has a row"
    );
    let ledger: Vec<String> =
        sqlx::query_scalar("SELECT generation_id FROM usage_ledger WHERE account_id = $1")
            .bind(account)
            .fetch_all(pool)
            .await
            .unwrap();
    for g in generations {
        assert_eq!(g.status, "completed", "{}: {:?}", g.id, g.error);
        let charges = ledger.iter().filter(|id| **id == g.id).count();
        assert_eq!(charges, 1, "{} is charged exactly once", g.id);
    }
}

/// A generation a worker holds now (its lease runs), on a database of a test that runs its own
/// cluster.
pub async fn running_generation_on(pool: &PgPool) -> Option<String> {
    sqlx::query_scalar(
        "SELECT id FROM generations WHERE lease_expires_at > now() AND status = 'generating'",
    )
    .fetch_optional(pool)
    .await
    .unwrap()
}

/// Every generation, every account's, oldest first.
pub async fn all_generations(app: &TestApp) -> Vec<StoredGeneration> {
    sqlx::query_as(&format!("{GENERATIONS} ORDER BY g.created_at, g.id"))
        .fetch_all(&app.pool)
        .await
        .unwrap()
}

/// How many generations the database holds, every account's.
pub async fn generation_count(app: &TestApp) -> usize {
    all_generations(app).await.len()
}

/// Charges `audio_ms` of completed audio on `voice` to `account` (and `key_id`, when given)
/// this month: one completed generation and its ledger row (what `TestApp::charge` does).
pub async fn charge(
    app: &TestApp,
    account: &str,
    key_id: Option<&str>,
    voice: &str,
    audio_ms: i64,
) {
    let generation = voiced::domain::new_id("gen");
    sqlx::query(
            "INSERT INTO generations (id, account_id, api_key_id, voice_id, engine, text, seed, format, status, duration_ms, finished_at)
             VALUES ($1, $2, $3, $4, 'kokoro', 'earlier', 1, 'wav', 'completed', $5, now())",
        )
        .bind(&generation)
        .bind(account)
        .bind(key_id)
        .bind(voice)
        .bind(audio_ms)
        .execute(&app.pool)
        .await
        .expect("a charged generation");
    sqlx::query(
        "INSERT INTO usage_ledger (account_id, api_key_id, generation_id, month, audio_ms)
             VALUES ($1, $2, $3, date_trunc('month', now() AT TIME ZONE 'UTC')::date, $4)",
    )
    .bind(account)
    .bind(key_id)
    .bind(&generation)
    .bind(audio_ms)
    .execute(&app.pool)
    .await
    .expect("its ledger row");
}

/// A row of the usage ledger (what a generation charged).
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct LedgerRow {
    pub account_id: String,
    pub api_key_id: Option<String>,
    pub generation_id: String,
    pub audio_ms: i64,
}

/// The whole usage ledger, oldest row first.
pub async fn ledger(app: &TestApp) -> Vec<LedgerRow> {
    sqlx::query_as(
        "SELECT account_id, api_key_id, generation_id, audio_ms FROM usage_ledger ORDER BY id",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap()
}

/// The usage ledger's rows of `account`, oldest first.
pub async fn ledger_of(app: &TestApp, account: &str) -> Vec<LedgerRow> {
    ledger(app)
        .await
        .into_iter()
        .filter(|row| row.account_id == account)
        .collect()
}

/// The transcription ledger's rows of `account`: (audio ms, free use), oldest first.
pub async fn transcription_ledger_of(app: &TestApp, account: &str) -> Vec<(i64, bool)> {
    sqlx::query_as(
        "SELECT audio_ms, free FROM transcription_ledger WHERE account_id = $1 ORDER BY id",
    )
    .bind(account)
    .fetch_all(&app.pool)
    .await
    .unwrap()
}

/// `audio_ms` of free transcription this month, already used by `account` (an earlier capture).
pub async fn used_free_transcription(app: &TestApp, account: &str, audio_ms: i64) {
    sqlx::query(
        "INSERT INTO transcription_ledger (account_id, capture_id, month, audio_ms, free)
         VALUES ($1, $2, date_trunc('month', now() AT TIME ZONE 'UTC')::date, $3, true)",
    )
    .bind(account)
    .bind(voiced::domain::new_id("cap"))
    .bind(audio_ms)
    .execute(&app.pool)
    .await
    .unwrap();
}

/// What a generation of `account` on `voice` left behind, written as its process wrote it.
pub struct LeftGeneration<'a> {
    pub account: &'a str,
    pub voice: &'a str,
    pub text: &'a str,
    /// `generating`, `completed` or `failed`.
    pub status: &'a str,
    pub error: Option<&'a str>,
    pub duration_ms: Option<i64>,
    pub audio_key: Option<&'a str>,
}

impl<'a> LeftGeneration<'a> {
    /// A generation of `account` on `voice` still running (a worker holds it).
    pub fn running(account: &'a str, voice: &'a str) -> Self {
        Self {
            account,
            voice,
            text: "hello",
            status: "generating",
            error: None,
            duration_ms: None,
            audio_key: None,
        }
    }
}

/// Writes `left` as a generation row that no worker will pick up; its id. With
/// `failed_event`, the row's `generation.failed` webhook event is recorded with it, as the
/// cancellation path records it.
pub async fn left_generation(
    app: &TestApp,
    left: LeftGeneration<'_>,
    failed_event: bool,
) -> String {
    let id = voiced::domain::new_id("gen");
    let mut tx = app.pool.begin().await.unwrap();
    sqlx::query(
        "INSERT INTO generations (id, account_id, voice_id, engine, text, seed, format, status,
                                  error, duration_ms, audio_key, finished_at)
         VALUES ($1, $2, $3, 'kokoro', $4, 7, 'wav', $5, $6, $7, $8,
                 CASE WHEN $5 = 'generating' THEN NULL ELSE now() END)",
    )
    .bind(&id)
    .bind(left.account)
    .bind(left.voice)
    .bind(left.text)
    .bind(left.status)
    .bind(left.error)
    .bind(left.duration_ms)
    .bind(left.audio_key)
    .execute(&mut *tx)
    .await
    .unwrap();
    if failed_event {
        voiced::store::webhooks::generation_event(&mut tx, &id, "generation.failed")
            .await
            .unwrap();
    }
    tx.commit().await.unwrap();
    id
}

/// Clears the `cancel_reason` of generation `id` and runs migration 0014 again: a row written
/// before the column existed, as the migration found it.
pub async fn replay_cancel_reason_migration(app: &TestApp, id: &str) {
    sqlx::query("UPDATE generations SET cancel_reason = NULL WHERE id = $1")
        .bind(id)
        .execute(&app.pool)
        .await
        .unwrap();
    sqlx::raw_sql(include_str!("../../migrations/0014_cancelled_is_data.sql"))
        .execute(&app.pool)
        .await
        .unwrap();
}

/// Generation `id` of `account` as the API's reads see it (its `cancelled` reading).
pub async fn generation_read(
    app: &TestApp,
    account: &str,
    id: &str,
) -> voiced::store::generations::GenerationRow {
    voiced::store::generations::find(&app.pool, account, id)
        .await
        .unwrap()
        .expect("the generation")
}

// ---------------------------------------------------------------------------------------------
// The queue (the workers' side of it)

/// Queues a one-word generation of `account` on `voice`, as admission does; its id.
pub async fn enqueue(app: &TestApp, account: &str, voice: &str) -> String {
    enqueue_past_admission(app, account, None, voice, "kokoro", "Hi.").await
}

/// A cloned voice of `account` whose print is a job for the workers (engine `chatterbox`).
pub async fn pending_clone(app: &TestApp, account: &str, name: &str) -> String {
    let id = voiced::domain::new_id("voice");
    let mut tx = app.pool.begin().await.unwrap();
    voiced::store::voices::insert_cloned(
        &mut *tx,
        voiced::store::voices::NewClonedVoice {
            id: &id,
            account_id: account,
            name,
            description: "",
            language: "en",
            engine: "chatterbox",
            sample_count: 1,
        },
    )
    .await
    .unwrap();
    voiced::store::prints::insert_sample(&mut tx, &id, 0, b"clip", 6000, None)
        .await
        .unwrap();
    voiced::store::prints::insert_print(&mut tx, &id, "chatterbox", None)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    id
}

/// A job a worker claimed: ("print", voice id) or ("generation", generation id) and its
/// attempt.
pub type ClaimedJob = (&'static str, String, i32);

/// Claims the next job as worker `worker` does, with a lease of `lease`.
pub async fn claim_next(app: &TestApp, worker: &str, lease: Duration) -> Option<ClaimedJob> {
    use voiced::store::queue::Claimed;
    match voiced::store::queue::claim_next(&app.pool, worker, lease)
        .await
        .unwrap()?
    {
        Claimed::Print(job) => Some(("print", job.voice_id, 0)),
        Claimed::Generation(job) => Some(("generation", job.id, job.attempts)),
    }
}

/// `claimers` workers claiming at once until the queue is empty: the generation ids each took.
pub async fn claim_concurrently(app: &TestApp, claimers: usize) -> Vec<Vec<String>> {
    let tasks: Vec<_> = (0..claimers)
        .map(|i| {
            let pool = app.pool.clone();
            tokio::spawn(async move {
                let mut ids = Vec::new();
                let worker = format!("w{i}");
                while let Some(claimed) =
                    voiced::store::queue::claim_next(&pool, &worker, Duration::from_secs(300))
                        .await
                        .unwrap()
                {
                    match claimed {
                        voiced::store::queue::Claimed::Generation(job) => ids.push(job.id),
                        voiced::store::queue::Claimed::Print(job) => panic!("{}", job.voice_id),
                    }
                }
                ids
            })
        })
        .collect();
    let mut taken = Vec::new();
    for task in tasks {
        taken.push(task.await.unwrap());
    }
    taken
}

/// Completes generation `id` as worker `worker` does (500 ms of `audio/x`).
pub async fn complete_job(
    app: &TestApp,
    id: &str,
    worker: &str,
) -> voiced::store::queue::Completion {
    voiced::store::queue::complete(&app.pool, id, worker, "audio/x", 500, None)
        .await
        .unwrap()
}

/// Whether `account` has a place in the claim's order (`queue_accounts.ready`).
pub async fn ready_in_queue(app: &TestApp, account: &str) -> bool {
    sqlx::query_scalar("SELECT ready FROM queue_accounts WHERE account_id = $1")
        .bind(account)
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

// ---------------------------------------------------------------------------------------------
// Voices

/// A voice as stored, deleted ones included.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct StoredVoice {
    pub id: String,
    pub account_id: String,
    pub name: String,
    pub voice_type: String,
    pub language: String,
    pub deleted: bool,
}

/// Every voice, deleted ones included, oldest first.
pub async fn voices(app: &TestApp) -> Vec<StoredVoice> {
    sqlx::query_as(
        "SELECT id, account_id, name, voice_type, language, deleted_at IS NOT NULL AS deleted
         FROM voice_profiles ORDER BY created_at, id",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap()
}

/// The voices of `account`, deleted ones included.
pub async fn voices_of(app: &TestApp, account: &str) -> Vec<StoredVoice> {
    voices(app)
        .await
        .into_iter()
        .filter(|v| v.account_id == account)
        .collect()
}

/// Voice `id_or_name` of `account` as the API reads it.
pub async fn voice_read(
    app: &TestApp,
    account: &str,
    id_or_name: &str,
) -> voiced::store::voices::VoiceRow {
    voiced::store::voices::find(&app.pool, account, id_or_name)
        .await
        .unwrap()
        .unwrap_or_else(|| panic!("voice {id_or_name} of {account}"))
}

/// Makes every voice of `account` `days` older (the trial's window is counted from creation).
pub async fn age_voices(app: &TestApp, account: &str, days: i32) {
    sqlx::query(
        "UPDATE voice_profiles SET created_at = created_at - make_interval(days => $2)
         WHERE account_id = $1",
    )
    .bind(account)
    .bind(days)
    .execute(&app.pool)
    .await
    .unwrap();
}

/// Pins `seed` and/or `temperature` on every voice named `name` behind the API's back.
pub async fn pin_voice(app: &TestApp, name: &str, seed: Option<i64>, temperature: Option<f32>) {
    sqlx::query(
        "UPDATE voice_profiles SET pinned_seed = COALESCE($2, pinned_seed),
                pinned_temperature = COALESCE($3, pinned_temperature)
         WHERE name = $1",
    )
    .bind(name)
    .bind(seed)
    .bind(temperature)
    .execute(&app.pool)
    .await
    .unwrap();
}

/// Sets the language of voice `id` (no door changes a voice's language).
pub async fn set_voice_language(app: &TestApp, id: &str, language: &str) {
    sqlx::query("UPDATE voice_profiles SET language = $2 WHERE id = $1")
        .bind(id)
        .bind(language)
        .execute(&app.pool)
        .await
        .unwrap();
}

/// Turns preset voice `id` into a cloned voice with one sample and a computed print, as
/// cloning would leave it (without running an engine).
pub async fn make_cloned(app: &TestApp, id: &str) {
    let mut tx = app.pool.begin().await.unwrap();
    sqlx::query(
        "UPDATE voice_profiles SET voice_type = 'cloned', preset = NULL, sample_count = 1
         WHERE id = $1",
    )
    .bind(id)
    .execute(&mut *tx)
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO voice_samples (voice_id, ordinal, audio, duration_ms)
         VALUES ($1, 0, '\\x00', 5000)",
    )
    .bind(id)
    .execute(&mut *tx)
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO voice_prints (voice_id, engine, print) VALUES ($1, 'kokoro', '\\x01')",
    )
    .bind(id)
    .execute(&mut *tx)
    .await
    .unwrap();
    tx.commit().await.unwrap();
}

/// A voice's print job as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct StoredPrint {
    pub print: Option<Vec<u8>>,
    pub error: Option<String>,
    pub attempts: i32,
    pub computed_at: Option<DateTime<Utc>>,
    pub started_at: Option<DateTime<Utc>>,
}

/// The print job of voice `voice`.
pub async fn voice_print(app: &TestApp, voice: &str) -> StoredPrint {
    sqlx::query_as(
        "SELECT print, error, attempts, computed_at, started_at FROM voice_prints
         WHERE voice_id = $1",
    )
    .bind(voice)
    .fetch_one(&app.pool)
    .await
    .unwrap()
}

/// The first sample of voice `voice`: (audio, transcript).
pub async fn voice_sample(app: &TestApp, voice: &str) -> (Vec<u8>, Option<String>) {
    sqlx::query_as(
        "SELECT audio, transcript FROM voice_samples WHERE voice_id = $1 AND ordinal = 0",
    )
    .bind(voice)
    .fetch_one(&app.pool)
    .await
    .unwrap()
}

/// Overwrites every sample of voice `voice` with bytes that are not audio.
pub async fn corrupt_voice_samples(app: &TestApp, voice: &str) {
    sqlx::query("UPDATE voice_samples SET audio = 'not audio any more' WHERE voice_id = $1")
        .bind(voice)
        .execute(&app.pool)
        .await
        .unwrap();
}

/// Overwrites the print of voice `voice` with bytes that are not a print.
pub async fn corrupt_voice_print(app: &TestApp, voice: &str) {
    sqlx::query("UPDATE voice_prints SET print = 'garbage' WHERE voice_id = $1")
        .bind(voice)
        .execute(&app.pool)
        .await
        .unwrap();
}

// ---------------------------------------------------------------------------------------------
// Captures

/// A capture (a transcription) as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct StoredCapture {
    pub id: String,
    pub account_id: String,
    pub source: String,
    pub task: String,
}

/// Every capture, oldest first.
pub async fn captures(app: &TestApp) -> Vec<StoredCapture> {
    sqlx::query_as("SELECT id, account_id, source, task FROM captures ORDER BY created_at, id")
        .fetch_all(&app.pool)
        .await
        .unwrap()
}

/// The captures of `account`, oldest first.
pub async fn captures_of(app: &TestApp, account: &str) -> Vec<StoredCapture> {
    captures(app)
        .await
        .into_iter()
        .filter(|c| c.account_id == account)
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Blobs (stored audio)

/// How many blobs the database's blob store holds.
pub async fn blob_count(app: &TestApp) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM blobs")
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

/// How many blobs have a key ending in `suffix`.
pub async fn blobs_ending_in(app: &TestApp, suffix: &str) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM blobs WHERE key LIKE '%' || $1")
        .bind(suffix)
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

/// Stores `bytes` under `key` in the database's blob store.
pub async fn put_blob(app: &TestApp, key: &str, content_type: &str, bytes: &[u8]) {
    sqlx::query("INSERT INTO blobs (key, content_type, bytes) VALUES ($1, $2, $3)")
        .bind(key)
        .bind(content_type)
        .bind(bytes)
        .execute(&app.pool)
        .await
        .unwrap();
}

/// Replaces the stored audio of generation `id` with `bytes` (damage at rest).
pub async fn corrupt_audio(app: &TestApp, id: &str, bytes: &[u8]) {
    let swapped = sqlx::query(
        "UPDATE blobs SET bytes = $2 WHERE key = (SELECT audio_key FROM generations WHERE id = $1)",
    )
    .bind(id)
    .bind(bytes)
    .execute(&app.pool)
    .await
    .unwrap();
    assert_eq!(
        swapped.rows_affected(),
        1,
        "generation {id}'s audio is stored"
    );
}

/// Deletes the stored audio of generation `id` (lost at rest), leaving the generation.
pub async fn lose_audio(app: &TestApp, id: &str) {
    sqlx::query("DELETE FROM blobs WHERE key = (SELECT audio_key FROM generations WHERE id = $1)")
        .bind(id)
        .execute(&app.pool)
        .await
        .unwrap();
}

/// Points generation `id` at the blob `key`.
pub async fn set_audio_key(app: &TestApp, id: &str, key: &str) {
    sqlx::query("UPDATE generations SET audio_key = $2 WHERE id = $1")
        .bind(id)
        .bind(key)
        .execute(&app.pool)
        .await
        .unwrap();
}

// ---------------------------------------------------------------------------------------------
// Webhooks

/// A webhook delivery as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct StoredDelivery {
    pub id: String,
    pub endpoint_id: String,
    pub account_id: String,
    pub subject_id: String,
    pub state: String,
    pub attempts: i32,
    pub last_status: Option<i32>,
    pub last_error: Option<String>,
    pub last_attempt_at: Option<DateTime<Utc>>,
    /// A sender holds it now (`locked_until > now()`).
    pub held: bool,
    /// No sender holds it (`locked_until IS NULL`).
    pub unlocked: bool,
}

/// Every webhook delivery, oldest first.
pub async fn deliveries(app: &TestApp) -> Vec<StoredDelivery> {
    sqlx::query_as(
        "SELECT id, endpoint_id, account_id, subject_id, state, attempts, last_status, last_error,
                last_attempt_at, COALESCE(locked_until > now(), false) AS held,
                locked_until IS NULL AS unlocked
         FROM webhook_deliveries ORDER BY created_at, id",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap()
}

/// The deliveries to endpoint `endpoint`.
pub async fn deliveries_to(app: &TestApp, endpoint: &str) -> Vec<StoredDelivery> {
    deliveries(app)
        .await
        .into_iter()
        .filter(|d| d.endpoint_id == endpoint)
        .collect()
}

/// The delivery of `subject`'s event to `endpoint`, if one was written.
pub async fn delivery(app: &TestApp, endpoint: &str, subject: &str) -> Option<StoredDelivery> {
    deliveries_to(app, endpoint)
        .await
        .into_iter()
        .find(|d| d.subject_id == subject)
}

/// An account's event `event_type` about `subject`, recorded as the core records it (one
/// delivery per endpoint that wants it).
pub async fn account_event(app: &TestApp, account: &str, event_type: &str, subject: &str) {
    let mut tx = app.pool.begin().await.unwrap();
    voiced::store::webhooks::account_event(&mut tx, account, event_type, subject)
        .await
        .unwrap();
    tx.commit().await.unwrap();
}

/// Gives up every delivery (to `endpoint`, or all) after 9 attempts that ended in 500.
pub async fn give_up_deliveries(app: &TestApp, endpoint: Option<&str>) {
    sqlx::query(
        "UPDATE webhook_deliveries SET state = 'failed', attempts = 9, last_status = 500
         WHERE $1::TEXT IS NULL OR endpoint_id = $1",
    )
    .bind(endpoint)
    .execute(&app.pool)
    .await
    .unwrap();
}

/// Moves the events and deliveries to `endpoint` `hours` into the past.
pub async fn age_deliveries(app: &TestApp, endpoint: &str, hours: i32) {
    sqlx::query(
        "UPDATE webhook_deliveries SET event_at = event_at - make_interval(hours => $2),
                created_at = created_at - make_interval(hours => $2)
         WHERE endpoint_id = $1",
    )
    .bind(endpoint)
    .bind(hours)
    .execute(&app.pool)
    .await
    .unwrap();
}

/// Makes every delivery 31 days old and finished, except those to `pending_endpoint`, which
/// stay pending: what the outbox's housekeeping finds a month on.
pub async fn month_old_deliveries(app: &TestApp, pending_endpoint: &str) {
    sqlx::query(
        "UPDATE webhook_deliveries SET created_at = now() - interval '31 days',
                state = CASE WHEN endpoint_id = $1 THEN 'pending' ELSE 'delivered' END",
    )
    .bind(pending_endpoint)
    .execute(&app.pool)
    .await
    .unwrap();
}

/// `count` pending deliveries to `endpoint` of `account` (`capture.created`, subjects `cap_<n>`).
pub async fn delivery_backlog(app: &TestApp, endpoint: &str, account: &str, count: i32) {
    sqlx::query(
        "INSERT INTO webhook_deliveries (id, endpoint_id, account_id, event_type, subject_id, event_at)
         SELECT 'msg_backlog_' || n, $1, $2, 'capture.created', 'cap_' || n, now()
         FROM generate_series(1, $3) n",
    )
    .bind(endpoint)
    .bind(account)
    .bind(count)
    .execute(&app.pool)
    .await
    .unwrap();
}

/// Endpoint `endpoint` has been failing for `days` days.
pub async fn failing_since(app: &TestApp, endpoint: &str, days: i32) {
    sqlx::query(
        "UPDATE webhook_endpoints SET failing_since = now() - make_interval(days => $2)
         WHERE id = $1",
    )
    .bind(endpoint)
    .bind(days)
    .execute(&app.pool)
    .await
    .unwrap();
}

/// A webhook endpoint as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct StoredEndpoint {
    pub id: String,
    pub account_id: String,
    pub enabled: bool,
    pub disabled_reason: Option<String>,
    pub secret_sealed: Vec<u8>,
}

/// Every webhook endpoint.
pub async fn endpoints(app: &TestApp) -> Vec<StoredEndpoint> {
    sqlx::query_as(
        "SELECT id, account_id, enabled, disabled_reason, secret_sealed FROM webhook_endpoints
         ORDER BY created_at, id",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap()
}

/// Endpoint `id` as stored.
pub async fn endpoint(app: &TestApp, id: &str) -> StoredEndpoint {
    endpoints(app)
        .await
        .into_iter()
        .find(|e| e.id == id)
        .unwrap_or_else(|| panic!("endpoint {id} is stored"))
}

// ---------------------------------------------------------------------------------------------
// Other tables

/// The rows of the console's session store whose data names `account`, as text.
pub async fn console_sessions_of(app: &TestApp, account: &str) -> Vec<String> {
    sqlx::query_scalar("SELECT data::text FROM console_sessions WHERE data->>'account_id' = $1")
        .bind(account)
        .fetch_all(&app.pool)
        .await
        .unwrap()
}

/// How many console sessions are stored.
pub async fn console_session_count(app: &TestApp) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM console_sessions")
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

/// The console's session store on the test's database.
pub fn session_store(app: &TestApp) -> voiced::store::sessions::PgSessionStore {
    voiced::store::sessions::PgSessionStore::new(app.pool.clone())
}

/// How many rows `table` holds for `account` (`None`: every account's).
pub async fn rows_of(app: &TestApp, table: &str, account: Option<&str>) -> i64 {
    sqlx::query_scalar(&format!(
        "SELECT count(*) FROM {table} WHERE $1::TEXT IS NULL OR account_id = $1"
    ))
    .bind(account)
    .fetch_one(&app.pool)
    .await
    .unwrap()
}

/// The ids of `table`'s rows of `account`.
pub async fn ids_of(app: &TestApp, table: &str, account: &str) -> Vec<String> {
    sqlx::query_scalar(&format!("SELECT id FROM {table} WHERE account_id = $1"))
        .bind(account)
        .fetch_all(&app.pool)
        .await
        .unwrap()
}

/// How many rows `table` holds.
pub async fn row_count(app: &TestApp, table: &str) -> i64 {
    sqlx::query_scalar(&format!("SELECT count(*) FROM {table}"))
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

// ---------------------------------------------------------------------------------------------
// The webhook operations of the core and the outbox, which take the pool (no door reaches the
// delivery loop, its claim or its housekeeping).

use voiced::service::ServiceError;
use voiced::service::webhooks::{self as hooks, Endpoint, NewEndpoint};
use voiced::signing::Sealer;
use voiced::worker::webhooks as delivery;

/// The sealer of the test server's secret (`SIGNING_SECRET`).
pub fn sealer() -> Sealer {
    Sealer::new(&voiced::signing::AudioSigner::new(
        super::SIGNING_SECRET.to_vec(),
    ))
}

/// Registers `new` for `account` through the core (as the console and `voiced admin webhook
/// create` do); the endpoint and its secret.
pub async fn create_endpoint(
    app: &TestApp,
    account: &str,
    new: NewEndpoint<'_>,
) -> Result<(Endpoint, String), ServiceError> {
    hooks::create(&app.core, account, new).await
}

/// The endpoints of `account`, through the core.
pub async fn endpoints_of(app: &TestApp, account: &str) -> Vec<Endpoint> {
    hooks::list(&app.core, account).await.unwrap()
}

/// Rotates the secret of `account`'s endpoint `id` through the core; the new secret.
pub async fn rotate_secret(app: &TestApp, account: &str, id: &str) -> String {
    hooks::rotate_secret(&app.core, account, id).await.unwrap()
}

/// Sends `account`'s delivery `id` again, through the core.
pub async fn resend(app: &TestApp, account: &str, id: &str) -> Result<(), ServiceError> {
    hooks::resend(&app.core, account, id).await
}

/// The outbox's housekeeping, as the delivery loop runs it.
pub async fn webhook_housekeeping(app: &TestApp) {
    delivery::purge(&app.pool).await;
}

/// Deletes the finished deliveries older than the kept days; how many.
pub async fn purge_old_deliveries(app: &TestApp) -> u64 {
    voiced::store::webhooks::purge(&app.pool, delivery::KEEP_DAYS)
        .await
        .unwrap()
}

/// Disables endpoint `id` for `reason`, as the delivery loop does.
pub async fn disable_endpoint(app: &TestApp, id: &str, reason: &str) {
    voiced::store::webhooks::disable(&app.pool, id, reason)
        .await
        .unwrap();
}

/// One turn of the delivery loop's claim (16 at most, the default caps, held 30 s).
pub async fn claim_delivery_turn(
    app: &TestApp,
) -> Option<Vec<voiced::store::webhooks::DueDelivery>> {
    voiced::store::webhooks::claim_turn(&app.pool, 16, delivery::IN_FLIGHT, 30.0)
        .await
        .unwrap()
}

/// Records delivery `id` to `endpoint` as answered with `status`.
pub async fn delivered(app: &TestApp, id: &str, endpoint: &str, status: i32) {
    voiced::store::webhooks::delivered(&app.pool, id, endpoint, status)
        .await
        .unwrap();
}

/// The delivery loop of a worker process, with `in_flight` slots, on `app`'s database; the
/// payload's `data` is `{"id": subject}` for generations. Stops with the sender.
pub fn delivery_loop(
    app: &TestApp,
    in_flight: usize,
) -> tokio::sync::watch::Sender<voiced::worker::Shutdown> {
    let (stop, shutdown) = tokio::sync::watch::channel(voiced::worker::Shutdown::Running);
    let render: delivery::Render = std::sync::Arc::new(|subject| match subject {
        delivery::Subject::Generation(row) => Some(serde_json::json!({ "id": row.id })),
        delivery::Subject::Capture(_) => None,
    });
    tokio::spawn(delivery::run(
        delivery::Dispatcher {
            pool: app.pool.clone(),
            sealer: sealer(),
            render,
            allow_private: true,
            retry_base: Duration::from_secs(30),
            in_flight,
        },
        shutdown,
    ));
    stop
}

// ---------------------------------------------------------------------------------------------
// Deletion: what a deleted account or voice leaves behind

/// Whether a blob is stored under `key`.
pub async fn blob_exists(app: &TestApp, key: &str) -> bool {
    sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM blobs WHERE key = $1)")
        .bind(key)
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

/// How many stored idempotent answers contain `needle` (a transcript, an id).
pub async fn answers_mentioning(app: &TestApp, needle: &str) -> i64 {
    sqlx::query_scalar(
        "SELECT count(*) FROM idempotency_records WHERE outcome::text LIKE '%' || $1 || '%'",
    )
    .bind(needle)
    .fetch_one(&app.pool)
    .await
    .unwrap()
}

/// The recordings of voice `voice`: (samples, prints).
pub async fn voice_recordings(app: &TestApp, voice: &str) -> (i64, i64) {
    sqlx::query_as(
        "SELECT (SELECT count(*) FROM voice_samples WHERE voice_id = $1),
                (SELECT count(*) FROM voice_prints WHERE voice_id = $1)",
    )
    .bind(voice)
    .fetch_one(&app.pool)
    .await
    .unwrap()
}

/// What is left of `account`'s content, each a count that a purge must bring to 0 (except
/// `usage_rows`, kept for billing).
#[derive(Debug, Default, PartialEq, Eq, sqlx::FromRow)]
pub struct Leftovers {
    pub captures: i64,
    pub pronunciations: i64,
    pub stored_answers: i64,
    pub oauth_codes: i64,
    /// Generations whose text is still there.
    pub generation_texts: i64,
    /// Audio blobs under any of the account's generations' keys.
    pub audio_blobs: i64,
    /// Voices that still carry their name (a purged voice is named by its id).
    pub voice_names: i64,
    /// Keys that still carry their name.
    pub key_names: i64,
    pub usage_rows: i64,
}

/// What is left of `account`'s content (see [`Leftovers`]).
pub async fn leftovers(app: &TestApp, account: &str) -> Leftovers {
    sqlx::query_as(
        "SELECT (SELECT count(*) FROM captures WHERE account_id = $1) AS captures,
                (SELECT count(*) FROM pronunciations WHERE account_id = $1) AS pronunciations,
                (SELECT count(*) FROM idempotency_records WHERE account_id = $1) AS stored_answers,
                (SELECT count(*) FROM oauth_codes WHERE account_id = $1) AS oauth_codes,
                (SELECT count(*) FROM generations WHERE account_id = $1 AND text <> '')
                    AS generation_texts,
                (SELECT count(*) FROM blobs b JOIN generations g ON b.key = 'audio/' || g.id
                 WHERE g.account_id = $1) AS audio_blobs,
                (SELECT count(*) FROM voice_profiles WHERE account_id = $1 AND name <> id)
                    AS voice_names,
                (SELECT count(*) FROM api_keys WHERE account_id = $1 AND name <> '') AS key_names,
                (SELECT count(*) FROM usage_ledger WHERE account_id = $1) AS usage_rows",
    )
    .bind(account)
    .fetch_one(&app.pool)
    .await
    .unwrap()
}

/// An OAuth code issued to `account` a moment ago and not yet redeemed.
pub async fn unredeemed_oauth_code(app: &TestApp, account: &str) {
    sqlx::query(
        "INSERT INTO oauth_codes (code_sha256, account_id, client_id, client_name, redirect_uri,
                                  code_challenge, scopes, resources, expires_at)
         VALUES ('\\x01', $1, 'client', 'An app', 'https://app.example/cb', 'x',
                 '{voice:read}', '{}', now() + interval '1 minute')",
    )
    .bind(account)
    .execute(&app.pool)
    .await
    .unwrap();
}

/// Stores capture `id` of `account` saying `text` (1.2 s), as a transcription that finishes
/// now would; `None` when the store refuses it (the account is gone).
pub async fn store_capture(app: &TestApp, account: &str, id: &str, text: &str) -> Option<()> {
    voiced::store::captures::insert(
        &app.pool,
        voiced::store::captures::NewCapture {
            id,
            account_id: account,
            api_key_id: None,
            source: "api",
            language: "en",
            duration_ms: 1200,
            transcript_raw: text,
            transcript_refined: text,
            task: "transcribe",
            timestamps: "none",
            segments: None,
            words: None,
        },
    )
    .await
    .unwrap()
    .map(|_| ())
}

/// The fingerprint the principal cache keys key `key_id` by, and what it is made of (the key's
/// id, account, scopes, ceiling and its account's plan and features), as text.
pub async fn key_fingerprint(app: &TestApp, key_id: &str) -> (String, String) {
    sqlx::query_as(
        "SELECT k.fingerprint, row(k.id, k.account_id, k.scopes, k.ceiling_minutes,
                a.plan, a.features)::text
         FROM api_keys k JOIN accounts a ON a.id = k.account_id WHERE k.id = $1",
    )
    .bind(key_id)
    .fetch_one(&app.pool)
    .await
    .unwrap()
}

/// Tries to store a key for an account that does not exist: the database's refusal.
pub async fn key_of_missing_account(app: &TestApp) -> sqlx::Error {
    sqlx::query(
        "INSERT INTO api_keys (id, account_id, name, prefix, secret_sha256, scopes)
         VALUES ('key_x', 'acct_missing', 'x', 'vk_x', '\\x00', '{voice:read}')",
    )
    .execute(&app.pool)
    .await
    .unwrap_err()
}

/// Whether admission finds `account` to admit a generation for (its load under its lock).
pub async fn admits_generations(app: &TestApp, account: &str) -> bool {
    let mut tx = app.pool.begin().await.unwrap();
    let month = voiced::store::usage::month_of(chrono::Utc::now());
    voiced::store::usage::lock_for_admission(&mut tx, account, None, month)
        .await
        .unwrap()
        .is_some()
}

/// Whether an idempotency claim on `key` for `account` may proceed.
pub async fn idempotency_claim_proceeds(app: &TestApp, account: &str, key: &str) -> bool {
    let claim = voiced::store::idempotency::begin(
        &app.pool,
        account,
        key,
        b"request",
        Duration::from_secs(60),
    )
    .await
    .unwrap();
    matches!(claim, voiced::store::idempotency::Begin::Proceed)
}

// ---------------------------------------------------------------------------------------------
// Account and key operations of the core that take the pool (the operator's commands)

/// Creates an account with `email` on `plan` and, when given, `password`, as `voiced admin
/// account create` does; its id.
pub async fn create_account(
    app: &TestApp,
    email: &str,
    password: Option<&str>,
    plan: Plan,
) -> Result<String, ServiceError> {
    voiced::service::accounts::create(
        &app.core,
        &voiced::service::accounts::PasswordGate::default(),
        email,
        password.map(str::to_owned),
        plan,
    )
    .await
}

/// Sets `account`'s password, as `voiced admin account set-password` does.
pub async fn set_password(app: &TestApp, account: &str, password: &str) {
    assert!(
        voiced::service::accounts::set_password(&app.core, account, password.to_owned())
            .await
            .unwrap(),
        "the account {account} exists"
    );
}

/// Creates a key named `name` (voice:read) for `account`, as `voiced admin key create` does,
/// with at most `max_per_account` live keys.
pub async fn create_key(
    app: &TestApp,
    max_per_account: u32,
    account: &str,
    name: &str,
) -> Result<(), ServiceError> {
    voiced::service::keys::create(
        &app.core,
        max_per_account,
        account,
        name,
        &[voiced::domain::Scope::VoiceRead],
        None,
    )
    .await
    .map(|_| ())
}

/// `racers` creations of [`create_key`] at once (named `race <n>`): each one's outcome.
pub async fn race_key_creations(
    app: &TestApp,
    max_per_account: u32,
    account: &str,
    racers: usize,
) -> Vec<Result<(), voiced::service::ErrorCode>> {
    let tasks: Vec<_> = (0..racers)
        .map(|n| {
            let (core, account) = (app.core.clone(), account.to_owned());
            tokio::spawn(async move {
                voiced::service::keys::create(
                    &core,
                    max_per_account,
                    &account,
                    &format!("race {n}"),
                    &[voiced::domain::Scope::VoiceRead],
                    None,
                )
                .await
                .map(|_| ())
                .map_err(|e| e.code)
            })
        })
        .collect();
    let mut outcomes = Vec::new();
    for task in tasks {
        outcomes.push(task.await.unwrap());
    }
    outcomes
}

/// Revokes `account`'s key `key_id` through the core (as the console's revoke does).
pub async fn revoke_own_key(app: &TestApp, account: &str, key_id: &str) {
    voiced::service::keys::revoke(&app.core, account, key_id)
        .await
        .unwrap();
}

/// Sets the ceiling of key `key_id` as `voiced admin key set-ceiling` does (`None` removes it).
pub async fn set_ceiling(
    app: &TestApp,
    key_id: &str,
    ceiling: Option<voiced::domain::CeilingMinutes>,
) -> Result<(), ServiceError> {
    voiced::service::keys::set_ceiling_any(&app.core, key_id, ceiling).await
}

// ---------------------------------------------------------------------------------------------
// Cloning (the core's admission and storage of a clone, which take the pool)

use voiced::service::cloning::{CheckedClone, CloneLimits};

/// A checked clone named `name` (6 s, English, Chatterbox).
pub fn checked_clone(name: &str) -> CheckedClone {
    CheckedClone {
        name: name.to_owned(),
        description: String::new(),
        language: "en".into(),
        engine: voiced::domain::EngineId::Chatterbox,
        transcript: None,
        duration_ms: 6000,
    }
}

/// Stores a clone named `name` (its recording `b"clip"`) for `account` under `limits`, through
/// the core's storage; the voice's id.
pub async fn store_clone(
    app: &TestApp,
    account: &str,
    limits: CloneLimits,
    name: &str,
) -> Result<String, ServiceError> {
    store_clone_recording(app, account, limits, name, b"clip").await
}

/// [`store_clone`] with `recording` as the clip (the print job decodes it).
pub async fn store_clone_recording(
    app: &TestApp,
    account: &str,
    limits: CloneLimits,
    name: &str,
    recording: &[u8],
) -> Result<String, ServiceError> {
    voiced::service::cloning::store(
        &app.pool,
        account,
        limits,
        &checked_clone(name),
        recording,
        None,
    )
    .await
    .map(|voice| voice.id)
}

/// [`store_clone`] of every name in `names` at once: each one's outcome.
pub async fn race_clones(
    app: &TestApp,
    account: &str,
    limits: CloneLimits,
    names: &[&str],
) -> Vec<Result<(), (voiced::service::ErrorCode, String)>> {
    let tasks: Vec<_> = names
        .iter()
        .map(|name| {
            let (pool, account, clone) =
                (app.pool.clone(), account.to_owned(), checked_clone(name));
            tokio::spawn(async move {
                voiced::service::cloning::store(&pool, &account, limits, &clone, b"clip", None)
                    .await
                    .map(|_| ())
                    .map_err(|e| (e.code, e.detail))
            })
        })
        .collect();
    let mut outcomes = Vec::new();
    for task in tasks {
        outcomes.push(task.await.unwrap());
    }
    outcomes
}

/// The core's admission of a clone for `account` under `limits`: its refusal, if any.
pub async fn clone_refusal(
    app: &TestApp,
    account: &str,
    limits: CloneLimits,
) -> Option<voiced::service::ErrorCode> {
    let mut conn = app.pool.acquire().await.unwrap();
    voiced::service::cloning::admit(&mut conn, account, limits)
        .await
        .err()
        .map(|e| e.code)
}

// ---------------------------------------------------------------------------------------------
// Faults injected into the database

/// Queues a generation of `text` on `voice` of `account` for `engine`, past admission (which
/// would refuse an engine that is not installed): what the worker answers is the subject.
pub async fn enqueue_past_admission(
    app: &TestApp,
    account: &str,
    key: Option<&str>,
    voice: &str,
    engine: &str,
    text: &str,
) -> String {
    let id = voiced::domain::new_id("gen");
    let mut tx = app.pool.begin().await.unwrap();
    voiced::store::queue::enqueue(
        &mut tx,
        voiced::store::queue::NewGeneration {
            id: &id,
            account_id: account,
            api_key_id: key,
            voice_id: voice,
            engine,
            text,
            spoken_text: None,
            timestamps: None,
            seed: 1,
            temperature: None,
            format: "wav",
            estimated_ms: 1000,
        },
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    id
}

/// A trigger that cancels a generation (its client disconnected) the moment its audio is
/// stored: the last moment before it completes.
pub async fn cancel_generations_as_their_audio_is_stored(app: &TestApp) {
    sqlx::raw_sql(
        "CREATE FUNCTION cancel_on_store() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN
             UPDATE generations SET cancel_reason = 'cancelled: the client disconnected'
             WHERE audio_key IS NULL AND NEW.key LIKE '%' || id;
             RETURN NEW;
         END $$;
         CREATE TRIGGER cancel_on_store AFTER INSERT ON blobs
             FOR EACH ROW EXECUTE FUNCTION cancel_on_store();",
    )
    .execute(&app.pool)
    .await
    .unwrap();
}

// ---------------------------------------------------------------------------------------------
// OAuth

/// A live access token of a fresh authorization of `account` for both resources (`/v1` and
/// `/mcp`), holding `scopes`, as the token endpoint issues one after consent.
pub async fn oauth_access_token(
    app: &TestApp,
    account: &str,
    scopes: &[voiced::domain::Scope],
) -> String {
    use voiced::domain::oauth::{ACCESS_TOKEN_PREFIX, OAuthSecret};
    use voiced::store::oauth;
    let public = &app.config.public_base_url;
    let client_id = voiced::domain::new_id("client");
    oauth::insert_client(
        &app.pool,
        &client_id,
        "Parity",
        &["http://127.0.0.1/callback".to_owned()],
        None,
    )
    .await
    .unwrap();
    let scopes: Vec<String> = scopes.iter().map(|s| s.as_str().to_owned()).collect();
    let resources = vec![format!("{public}/v1"), format!("{public}/mcp")];
    let grant = oauth::Grant {
        account_id: account,
        client_id: &client_id,
        client_name: "Parity",
        scopes: &scopes,
        resources: &resources,
    };
    let authorization = voiced::domain::new_id("authz");
    let token = OAuthSecret::generate(ACCESS_TOKEN_PREFIX);
    let mut conn = app.pool.acquire().await.unwrap();
    oauth::insert_authorization(&mut conn, &authorization, &grant)
        .await
        .unwrap();
    oauth::insert_token(
        &mut conn,
        &token.hash(),
        oauth::TokenKind::Access,
        &authorization,
        &scopes,
        &resources,
        Utc::now() + chrono::Duration::hours(1),
    )
    .await
    .unwrap();
    token.into_string()
}

/// The ids of `account`'s OAuth authorizations.
pub async fn oauth_authorizations_of(app: &TestApp, account: &str) -> Vec<String> {
    ids_of(app, "oauth_authorizations", account).await
}

// ---------------------------------------------------------------------------------------------
// Idempotency records and usage reads

/// A stored idempotent answer.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct StoredAnswer {
    pub operation: Option<String>,
    pub outcome: Option<serde_json::Value>,
    pub response_body: Option<Vec<u8>>,
}

/// The answer stored for `account`'s idempotency key `key`.
pub async fn idempotency_record(app: &TestApp, account: &str, key: &str) -> StoredAnswer {
    sqlx::query_as(
        "SELECT operation, outcome, response_body FROM idempotency_records
         WHERE account_id = $1 AND key = $2",
    )
    .bind(account)
    .bind(key)
    .fetch_one(&app.pool)
    .await
    .unwrap()
}

/// Writes a completed record in the old shape (before migration 0014) for `account`'s `key`,
/// the request's `fingerprint` and `response`.
pub async fn legacy_idempotency_record(
    app: &TestApp,
    account: &str,
    key: &str,
    fingerprint: &[u8],
    response: &voiced::store::idempotency::LegacyResponse,
) {
    use voiced::store::idempotency::{self, Begin};
    let begun = idempotency::begin(
        &app.pool,
        account,
        key,
        fingerprint,
        Duration::from_secs(60),
    )
    .await
    .unwrap();
    assert!(matches!(begun, Begin::Proceed), "a fresh key");
    idempotency::complete_legacy(&app.pool, account, key, response)
        .await
        .unwrap();
}

/// The audio charged to `account` this month, by the usage page's daily read.
pub async fn usage_this_month_ms(app: &TestApp, account: &str) -> i64 {
    let month = voiced::store::usage::month_of(Utc::now());
    voiced::store::usage::daily(&app.pool, account, month)
        .await
        .unwrap()
        .iter()
        .map(|day| day.audio_ms)
        .sum()
}

/// Sets the pins of `account`'s voice `id` through the core (as `PATCH /v1/voices/{id}` does),
/// with `personality` as its personality prompt.
pub async fn set_personality(app: &TestApp, account: &str, id: &str, personality: Option<&str>) {
    let found = voiced::service::voices::set_pins(&app.core, account, id, None, None, personality)
        .await
        .unwrap();
    assert!(found, "voice {id} of {account}");
}

// ---------------------------------------------------------------------------------------------
// The read pool's connections (a test of `ReadPool` on a bare database)

/// The PostgreSQL backend serving `connection`.
pub async fn backend_pid(connection: &mut sqlx::PgConnection) -> i32 {
    sqlx::query_scalar("SELECT pg_backend_pid()")
        .fetch_one(connection)
        .await
        .unwrap()
}

/// A statement that runs for 20 s on `connection` (a slow read).
pub async fn slow_statement(connection: &mut sqlx::PgConnection) {
    let _: Option<i32> = sqlx::query_scalar("SELECT 1 FROM pg_sleep(20)")
        .fetch_optional(connection)
        .await
        .unwrap();
}

/// The backend running [`slow_statement`] now, seen from another connection of `pool`.
pub async fn backend_running_slow_statement(pool: &PgPool) -> Option<i32> {
    sqlx::query_scalar(
        "SELECT pid FROM pg_stat_activity
         WHERE query LIKE '%pg_sleep(20)%' AND state = 'active' AND pid <> pg_backend_pid()",
    )
    .fetch_optional(pool)
    .await
    .unwrap()
}

// ---------------------------------------------------------------------------------------------
// Probes of a bare server (the tests of the test databases and of the embedded cluster)

/// Makes the table `marker` in the database of `pool`.
pub async fn make_marker_table(pool: &PgPool, marker: &str) {
    sqlx::raw_sql(&format!("CREATE TABLE {marker} (v text)"))
        .execute(pool)
        .await
        .unwrap();
}

/// Whether the database of `pool` has the table `marker`.
pub async fn has_table(pool: &PgPool, marker: &str) -> bool {
    sqlx::query_scalar::<_, Option<String>>("SELECT to_regclass($1)::text")
        .bind(marker)
        .fetch_one(pool)
        .await
        .unwrap()
        .is_some()
}

/// The name of the database `pool` is connected to.
pub async fn current_database(pool: &PgPool) -> String {
    sqlx::query_scalar("SELECT current_database()")
        .fetch_one(pool)
        .await
        .unwrap()
}

/// The server's answer to `SELECT 1` and its `listen_addresses` setting.
pub async fn server_answer_and_listen_addresses(
    connection: &mut sqlx::PgConnection,
) -> (i32, String) {
    let one: i32 = sqlx::query_scalar("SELECT 1")
        .fetch_one(&mut *connection)
        .await
        .unwrap();
    let listen: String = sqlx::query_scalar("SHOW listen_addresses")
        .fetch_one(&mut *connection)
        .await
        .unwrap();
    (one, listen)
}

/// Leaves `value` in a table of its own (`kept`), to be found after a restart.
pub async fn leave_kept_value(connection: &mut sqlx::PgConnection, value: &str) {
    sqlx::raw_sql("CREATE TABLE kept (v text)")
        .execute(&mut *connection)
        .await
        .unwrap();
    sqlx::query("INSERT INTO kept VALUES ($1)")
        .bind(value)
        .execute(&mut *connection)
        .await
        .unwrap();
}

/// The value [`leave_kept_value`] left.
pub async fn kept_value(connection: &mut sqlx::PgConnection) -> String {
    sqlx::query_scalar("SELECT v FROM kept")
        .fetch_one(connection)
        .await
        .unwrap()
}
