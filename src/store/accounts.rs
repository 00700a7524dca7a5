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
                  (SELECT count(*) FROM voice_profiles v WHERE v.account_id = a.id) AS "voice_count!"
           FROM accounts a WHERE a.id = $1"#,
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
