use chrono::{DateTime, NaiveDate, Utc};
use sqlx::PgPool;

use crate::domain::SecretHash;

/// A key as authentication needs it, joined with its account.
pub struct KeyRecord {
    pub key_id: String,
    pub account_id: String,
    pub secret_sha256: Vec<u8>,
    pub scopes: Vec<String>,
    pub ceiling_minutes: Option<i32>,
    pub revoked: bool,
    pub last_used_at: Option<DateTime<Utc>>,
    pub plan: String,
    pub features: Vec<String>,
    /// Everything above that authorizes, as `credential_fingerprints` computes it (migration
    /// 0006); `None` when the key is revoked.
    pub fingerprint: Option<String>,
}

pub async fn find_by_hash(pool: &PgPool, hash: &SecretHash) -> sqlx::Result<Option<KeyRecord>> {
    sqlx::query_as!(
        KeyRecord,
        r#"SELECT k.id AS key_id, k.account_id, k.secret_sha256, k.scopes, k.ceiling_minutes,
                  k.revoked_at IS NOT NULL AS "revoked!", k.last_used_at,
                  a.plan, a.features, f.fingerprint AS "fingerprint?"
           FROM api_keys k JOIN accounts a ON a.id = k.account_id
           LEFT JOIN credential_fingerprints f ON f.credential_sha256 = k.secret_sha256
           WHERE k.secret_sha256 = $1"#,
        &hash.0[..]
    )
    .fetch_optional(pool)
    .await
}

/// A read together with the fingerprint of the credential it was made for, both from one
/// statement (one snapshot). `fingerprint` is `None` when the credential no longer authorizes
/// anything (revoked, or gone); `value` is then empty and must not be shown.
pub struct Checked<T> {
    pub fingerprint: Option<String>,
    pub value: T,
}

/// The credential's fingerprint alone, for reads that need nothing else from the database.
pub async fn fingerprint(
    connection: &mut sqlx::PgConnection,
    credential_sha256: &[u8],
) -> sqlx::Result<Checked<()>> {
    let fingerprint = sqlx::query_scalar!(
        r#"SELECT fingerprint AS "fingerprint!" FROM credential_fingerprints
           WHERE credential_sha256 = $1"#,
        credential_sha256
    )
    .fetch_optional(connection)
    .await?;
    Ok(Checked {
        fingerprint,
        value: (),
    })
}

pub struct NewKey<'a> {
    pub id: &'a str,
    pub account_id: &'a str,
    pub name: &'a str,
    pub prefix: &'a str,
    pub hash: &'a SecretHash,
    pub scopes: &'a [String],
    pub ceiling_minutes: Option<i32>,
}

pub async fn insert(db: impl sqlx::PgExecutor<'_>, key: NewKey<'_>) -> sqlx::Result<()> {
    sqlx::query!(
        "INSERT INTO api_keys (id, account_id, name, prefix, secret_sha256, scopes, ceiling_minutes)
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
        key.id,
        key.account_id,
        key.name,
        key.prefix,
        &key.hash.0[..],
        key.scopes,
        key.ceiling_minutes
    )
    .execute(db)
    .await?;
    Ok(())
}

/// Live (unrevoked) keys of the account. Read under [`crate::store::accounts::lock`] in the
/// caller's transaction, so that two creations of one account count each other.
pub async fn count_live(db: &mut sqlx::PgConnection, account_id: &str) -> sqlx::Result<i64> {
    sqlx::query_scalar!(
        r#"SELECT count(*) AS "live!" FROM api_keys WHERE account_id = $1 AND revoked_at IS NULL"#,
        account_id
    )
    .fetch_one(db)
    .await
}

/// The account that holds key `key_id` (revoked or not), if any.
pub async fn owner(pool: &PgPool, key_id: &str) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar!("SELECT account_id FROM api_keys WHERE id = $1", key_id)
        .fetch_optional(pool)
        .await
}

/// A key as `voiced admin key list` and `account show` show it: never the secret or its hash.
pub struct KeySummary {
    pub id: String,
    pub name: String,
    pub prefix: String,
    pub scopes: Vec<String>,
    pub ceiling_minutes: Option<i32>,
    pub created_at: DateTime<Utc>,
    pub revoked_at: Option<DateTime<Utc>>,
    /// Last authenticated request, to the minute (see [`touch`]).
    pub last_used_at: Option<DateTime<Utc>>,
    /// Generated audio charged to the key in `month`.
    pub month_audio_ms: i64,
}

/// The account's keys, oldest first, revoked ones included.
pub async fn list(
    pool: &PgPool,
    account_id: &str,
    month: NaiveDate,
) -> sqlx::Result<Vec<KeySummary>> {
    sqlx::query_as!(
        KeySummary,
        r#"SELECT k.id, k.name, k.prefix, k.scopes, k.ceiling_minutes, k.created_at, k.revoked_at,
                  k.last_used_at,
                  (SELECT COALESCE(sum(u.audio_ms), 0) FROM usage_ledger u
                    WHERE u.api_key_id = k.id AND u.month = $2)::BIGINT AS "month_audio_ms!"
           FROM api_keys k WHERE k.account_id = $1
           ORDER BY k.created_at, k.id"#,
        account_id,
        month
    )
    .fetch_all(pool)
    .await
}

/// Revokes one of the account's keys; `false` when the account has no such key (another
/// account's key is never touched).
pub async fn revoke_owned(pool: &PgPool, account_id: &str, key_id: &str) -> sqlx::Result<bool> {
    let result = sqlx::query!(
        "UPDATE api_keys SET revoked_at = COALESCE(revoked_at, now())
         WHERE id = $1 AND account_id = $2",
        key_id,
        account_id
    )
    .execute(pool)
    .await?;
    Ok(result.rows_affected() == 1)
}

/// Sets or removes one of the account's key ceilings; `false` when the account has no such key.
pub async fn set_ceiling_owned(
    pool: &PgPool,
    account_id: &str,
    key_id: &str,
    minutes: Option<i32>,
) -> sqlx::Result<bool> {
    let result = sqlx::query!(
        "UPDATE api_keys SET ceiling_minutes = $3 WHERE id = $1 AND account_id = $2",
        key_id,
        account_id,
        minutes
    )
    .execute(pool)
    .await?;
    Ok(result.rows_affected() == 1)
}

/// Records that the key was used now, at most once a minute: the condition makes the statement
/// a no-op (no row written) while the stored time is recent.
pub async fn touch(pool: &PgPool, key_id: &str) -> sqlx::Result<()> {
    sqlx::query!(
        "UPDATE api_keys SET last_used_at = now()
         WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')",
        key_id
    )
    .execute(pool)
    .await?;
    Ok(())
}
