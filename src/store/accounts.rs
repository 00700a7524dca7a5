use chrono::{DateTime, NaiveDate, Utc};
use sqlx::PgPool;

use crate::domain::{Feature, Plan};

fn feature_names(features: &[Feature]) -> Vec<String> {
    features.iter().map(|f| f.as_str().to_owned()).collect()
}

pub async fn insert(pool: &PgPool, id: &str, email: &str, plan: Plan) -> sqlx::Result<()> {
    sqlx::query!(
        "INSERT INTO accounts (id, email, plan, features) VALUES ($1, $2, $3, $4)",
        id,
        email,
        plan.as_str(),
        &feature_names(&plan.default_features())
    )
    .execute(pool)
    .await?;
    Ok(())
}

/// Changes the plan and resets the feature set to the plan's; `false` when there is no account.
pub async fn set_plan(pool: &PgPool, id: &str, plan: Plan) -> sqlx::Result<bool> {
    let result = sqlx::query!(
        "UPDATE accounts SET plan = $2, features = $3, updated_at = now() WHERE id = $1",
        id,
        plan.as_str(),
        &feature_names(&plan.default_features())
    )
    .execute(pool)
    .await?;
    Ok(result.rows_affected() == 1)
}

/// Narrows or widens the account's feature set; `false` when there is no account.
pub async fn set_features(pool: &PgPool, id: &str, features: &[Feature]) -> sqlx::Result<bool> {
    let result = sqlx::query!(
        "UPDATE accounts SET features = $2, updated_at = now() WHERE id = $1",
        id,
        &feature_names(features)
    )
    .execute(pool)
    .await?;
    Ok(result.rows_affected() == 1)
}

pub async fn exists(pool: &PgPool, id: &str) -> sqlx::Result<bool> {
    let row = sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM accounts WHERE id = $1) AS "exists!""#,
        id
    )
    .fetch_one(pool)
    .await?;
    Ok(row)
}

/// The id of the account whose id or email is `id_or_email` (DECISIONS: wherever `voiced admin`
/// takes ACCOUNT, the id or the email works). Ids start with `acct_` and emails hold an `@`, so
/// the two never name different accounts.
pub async fn find_id(pool: &PgPool, id_or_email: &str) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar!(
        "SELECT id FROM accounts WHERE id = $1 OR email = $1 ORDER BY (id = $1) DESC LIMIT 1",
        id_or_email
    )
    .fetch_optional(pool)
    .await
}

/// An account as `voiced admin account list` shows it.
pub struct AccountSummary {
    pub id: String,
    pub email: String,
    pub plan: String,
    pub created_at: DateTime<Utc>,
}

/// Accounts, oldest first; `email_like` is an ILIKE pattern (`%` any run, `_` one character).
pub async fn list(pool: &PgPool, email_like: Option<&str>) -> sqlx::Result<Vec<AccountSummary>> {
    sqlx::query_as!(
        AccountSummary,
        "SELECT id, email, plan, created_at FROM accounts
         WHERE $1::TEXT IS NULL OR email ILIKE $1
         ORDER BY created_at, id",
        email_like
    )
    .fetch_all(pool)
    .await
}

/// One account with what an operator asks about it: plan, features, this month's generated
/// audio and its voice count.
pub struct AccountDetail {
    pub id: String,
    pub email: String,
    pub plan: String,
    pub features: Vec<String>,
    pub created_at: DateTime<Utc>,
    pub month_audio_ms: i64,
    pub voice_count: i64,
}

pub async fn detail(
    pool: &PgPool,
    id: &str,
    month: NaiveDate,
) -> sqlx::Result<Option<AccountDetail>> {
    sqlx::query_as!(
        AccountDetail,
        r#"SELECT a.id, a.email, a.plan, a.features, a.created_at,
                  (SELECT COALESCE(sum(u.audio_ms), 0) FROM usage_ledger u
                    WHERE u.account_id = a.id AND u.month = $2)::BIGINT AS "month_audio_ms!",
                  (SELECT count(*) FROM voice_profiles v WHERE v.account_id = a.id AND v.deleted_at IS NULL) AS "voice_count!"
           FROM accounts a WHERE a.id = $1 AND a.deleted_at IS NULL"#,
        id,
        month
    )
    .fetch_optional(pool)
    .await
}

/// Creates an account with a password (an Argon2id PHC string, see `service::accounts`). A
/// duplicate email violates `accounts_email_key`.
pub async fn insert_with_password(
    pool: &PgPool,
    id: &str,
    email: &str,
    plan: Plan,
    password_hash: &str,
) -> sqlx::Result<()> {
    sqlx::query!(
        "INSERT INTO accounts (id, email, plan, features, password_hash)
         VALUES ($1, $2, $3, $4, $5)",
        id,
        email,
        plan.as_str(),
        &feature_names(&plan.default_features()),
        password_hash
    )
    .execute(pool)
    .await?;
    Ok(())
}

/// Replaces the account's password hash; `false` when there is no account.
pub async fn set_password_hash(
    conn: impl sqlx::PgExecutor<'_>,
    id: &str,
    password_hash: &str,
) -> sqlx::Result<bool> {
    let result = sqlx::query!(
        "UPDATE accounts SET password_hash = $2, updated_at = now() WHERE id = $1",
        id,
        password_hash
    )
    .execute(conn)
    .await?;
    Ok(result.rows_affected() == 1)
}

/// What signing in needs: the account and its password hash (NULL: no password set).
pub struct Credentials {
    pub id: String,
    pub password_hash: Option<String>,
}

/// The sign-in record of the account with this email (case-insensitive).
pub async fn credentials_by_email(pool: &PgPool, email: &str) -> sqlx::Result<Option<Credentials>> {
    sqlx::query_as!(
        Credentials,
        "SELECT id, password_hash FROM accounts WHERE lower(email) = lower($1)
         ORDER BY (email = $1) DESC LIMIT 1",
        email
    )
    .fetch_optional(pool)
    .await
}

/// The sign-in record of the account with this id.
pub async fn credentials_by_id(pool: &PgPool, id: &str) -> sqlx::Result<Option<Credentials>> {
    sqlx::query_as!(
        Credentials,
        "SELECT id, password_hash FROM accounts WHERE id = $1",
        id
    )
    .fetch_optional(pool)
    .await
}

/// Deletes the account as far as it can be at once (issue 30 item 4), in the caller's
/// transaction: marked `deleted_at`, its email replaced by `<id>@deleted.invalid` (so the
/// address can sign up again) and its password removed; its keys and OAuth authorizations
/// revoked, its console sessions ended, its webhook endpoints disabled. Returns the ids of its
/// generations still waiting or running, for the caller to cancel once committed; `None` when
/// there is no such live account.
pub async fn mark_deleted(
    tx: &mut sqlx::PgConnection,
    id: &str,
) -> sqlx::Result<Option<Vec<String>>> {
    // Codes first, before the account's row is locked (a redemption locks its code, then reads
    // the account under a share lock): a redemption in flight holds its code's lock, so this
    // waits for it and the authorization it made is revoked below; one after finds no code.
    sqlx::query!("DELETE FROM oauth_codes WHERE account_id = $1", id)
        .execute(&mut *tx)
        .await?;
    let found = sqlx::query_scalar!(
        "UPDATE accounts
         SET deleted_at = now(), email = id || '@deleted.invalid', password_hash = NULL,
             updated_at = now()
         WHERE id = $1 AND deleted_at IS NULL
         RETURNING id",
        id
    )
    .fetch_optional(&mut *tx)
    .await?;
    if found.is_none() {
        return Ok(None);
    }
    sqlx::query!(
        "UPDATE api_keys SET revoked_at = now() WHERE account_id = $1 AND revoked_at IS NULL",
        id
    )
    .execute(&mut *tx)
    .await?;
    sqlx::query!(
        "UPDATE oauth_authorizations SET revoked_at = now()
         WHERE account_id = $1 AND revoked_at IS NULL",
        id
    )
    .execute(&mut *tx)
    .await?;
    sqlx::query!(
        "UPDATE webhook_endpoints SET enabled = false, disabled_reason = 'account_deleted'
         WHERE account_id = $1",
        id
    )
    .execute(&mut *tx)
    .await?;
    super::sessions::end_all(tx, id).await?;
    let pending = sqlx::query_scalar!(
        "SELECT id FROM generations WHERE account_id = $1 AND status = 'generating'",
        id
    )
    .fetch_all(&mut *tx)
    .await?;
    Ok(Some(pending))
}

/// A deleted account whose content is still to be removed, locked for the caller's
/// transaction (`SKIP LOCKED`: two processes purge different accounts).
/// `skip`: accounts this pass already left for the next.
pub async fn next_to_purge(
    tx: &mut sqlx::PgConnection,
    skip: &[String],
) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar!(
        "SELECT id FROM accounts
         WHERE deleted_at IS NOT NULL AND purged_at IS NULL AND NOT (id = ANY($1))
         ORDER BY deleted_at LIMIT 1 FOR UPDATE SKIP LOCKED",
        skip
    )
    .fetch_optional(tx)
    .await
}

/// The deleted account's generations and the blob key each recorded, if any: the purge removes
/// both that key and the key a worker writes a generation's audio under, since a worker that
/// lost its lease after storing the audio recorded nothing.
pub async fn generation_blobs(
    tx: &mut sqlx::PgConnection,
    id: &str,
) -> sqlx::Result<Vec<(String, Option<String>)>> {
    Ok(sqlx::query!(
        "SELECT id, audio_key FROM generations WHERE account_id = $1",
        id
    )
    .fetch_all(tx)
    .await?
    .into_iter()
    .map(|r| (r.id, r.audio_key))
    .collect())
}

/// Removes the deleted account's content once its blobs are gone, and marks it purged: what
/// its generations said and their timings (the rows stay with their duration, for the usage
/// ledger that references them), its captures, voices' descriptions, prompts, recordings and
/// prints, pronunciation rules, webhook endpoints and deliveries, idempotency records (stored
/// answers), OAuth grants, and unclaimed work. `false` while a generation of the account is
/// still rendering (its worker stops at the next sentence; the next pass purges).
pub async fn purge(tx: &mut sqlx::PgConnection, id: &str) -> sqlx::Result<bool> {
    let running = sqlx::query_scalar!(
        r#"SELECT count(*) AS "n!" FROM generations WHERE account_id = $1 AND status = 'generating'"#,
        id
    )
    .fetch_one(&mut *tx)
    .await?;
    if running > 0 {
        return Ok(false);
    }
    sqlx::query!(
        "UPDATE generations
         SET text = '', spoken_text = NULL, words = NULL, error = NULL, audio_key = NULL,
             updated_at = now()
         WHERE account_id = $1",
        id
    )
    .execute(&mut *tx)
    .await?;
    sqlx::query!("DELETE FROM captures WHERE account_id = $1", id)
        .execute(&mut *tx)
        .await?;
    sqlx::query!(
        "DELETE FROM voice_samples WHERE voice_id IN (SELECT id FROM voice_profiles WHERE account_id = $1)",
        id
    )
    .execute(&mut *tx)
    .await?;
    sqlx::query!(
        "DELETE FROM voice_prints WHERE voice_id IN (SELECT id FROM voice_profiles WHERE account_id = $1)",
        id
    )
    .execute(&mut *tx)
    .await?;
    // Names are content too: a voice's becomes its id, a key's goes.
    sqlx::query!(
        "UPDATE voice_profiles
         SET deleted_at = COALESCE(deleted_at, now()), description = '', personality_prompt = NULL,
             sample_count = 0, name = id, updated_at = now()
         WHERE account_id = $1",
        id
    )
    .execute(&mut *tx)
    .await?;
    sqlx::query!("UPDATE api_keys SET name = '' WHERE account_id = $1", id)
        .execute(&mut *tx)
        .await?;
    sqlx::query!("DELETE FROM pronunciations WHERE account_id = $1", id)
        .execute(&mut *tx)
        .await?;
    sqlx::query!("DELETE FROM webhook_deliveries WHERE account_id = $1", id)
        .execute(&mut *tx)
        .await?;
    sqlx::query!("DELETE FROM webhook_endpoints WHERE account_id = $1", id)
        .execute(&mut *tx)
        .await?;
    sqlx::query!("DELETE FROM idempotency_records WHERE account_id = $1", id)
        .execute(&mut *tx)
        .await?;
    sqlx::query!("DELETE FROM oauth_authorizations WHERE account_id = $1", id)
        .execute(&mut *tx)
        .await?;
    sqlx::query!("DELETE FROM oauth_codes WHERE account_id = $1", id)
        .execute(&mut *tx)
        .await?;
    sqlx::query!(
        "UPDATE accounts SET purged_at = now(), features = '{}', updated_at = now() WHERE id = $1",
        id
    )
    .execute(&mut *tx)
    .await?;
    Ok(true)
}

/// Locks the account's row (`FOR NO KEY UPDATE`, which does not block the account's other
/// work) until the caller's transaction ends, so that a count read after it (its own
/// statement, a fresh snapshot) cannot be passed by a concurrent writer of the same account;
/// `false` when there is no such live account.
pub async fn lock(db: &mut sqlx::PgConnection, id: &str) -> sqlx::Result<bool> {
    let row = sqlx::query_scalar!(
        "SELECT id FROM accounts WHERE id = $1 AND deleted_at IS NULL FOR NO KEY UPDATE",
        id
    )
    .fetch_optional(db)
    .await?;
    Ok(row.is_some())
}
