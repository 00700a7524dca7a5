//! An account's pronunciation rules (migration 0020). The rules about them (limits, what a rule
//! may say) are `service::pronunciations`'.

use chrono::{DateTime, Utc};
use sqlx::{PgPool, Postgres, Transaction};

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PronunciationRow {
    pub id: String,
    pub text: String,
    pub alias: Option<String>,
    pub phonemes: Option<String>,
    pub language: Option<String>,
    pub case_sensitive: bool,
    pub created_at: DateTime<Utc>,
}

/// A rule to store (validated by the caller).
pub struct NewPronunciation<'a> {
    pub id: &'a str,
    pub account_id: &'a str,
    pub text: &'a str,
    pub alias: Option<&'a str>,
    pub phonemes: Option<&'a str>,
    pub language: Option<&'a str>,
    pub case_sensitive: bool,
}

/// The account's rules, newest first.
pub async fn list(pool: &PgPool, account_id: &str) -> sqlx::Result<Vec<PronunciationRow>> {
    sqlx::query_as!(
        PronunciationRow,
        "SELECT id, text, alias, phonemes, language, case_sensitive, created_at
         FROM pronunciations WHERE account_id = $1
         ORDER BY created_at DESC, id DESC",
        account_id
    )
    .fetch_all(pool)
    .await
}

/// Stores a rule unless the account already has `max` of them; `false` when it has. The
/// account's row is locked so that two concurrent requests cannot both pass the count.
pub async fn insert_within(
    tx: &mut Transaction<'_, Postgres>,
    rule: NewPronunciation<'_>,
    max: i64,
) -> sqlx::Result<bool> {
    sqlx::query!(
        "SELECT id FROM accounts WHERE id = $1 FOR UPDATE",
        rule.account_id
    )
    .fetch_optional(&mut **tx)
    .await?;
    let count = sqlx::query_scalar!(
        r#"SELECT count(*) AS "count!" FROM pronunciations WHERE account_id = $1"#,
        rule.account_id
    )
    .fetch_one(&mut **tx)
    .await?;
    if count >= max {
        return Ok(false);
    }
    sqlx::query!(
        "INSERT INTO pronunciations (id, account_id, text, alias, phonemes, language, case_sensitive)
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
        rule.id,
        rule.account_id,
        rule.text,
        rule.alias,
        rule.phonemes,
        rule.language,
        rule.case_sensitive
    )
    .execute(&mut **tx)
    .await?;
    Ok(true)
}

/// The account's rule `id`, if it has one, read in the caller's transaction.
pub async fn find_in(
    tx: &mut Transaction<'_, Postgres>,
    account_id: &str,
    id: &str,
) -> sqlx::Result<Option<PronunciationRow>> {
    sqlx::query_as!(
        PronunciationRow,
        "SELECT id, text, alias, phonemes, language, case_sensitive, created_at
         FROM pronunciations WHERE account_id = $1 AND id = $2",
        account_id,
        id
    )
    .fetch_optional(&mut **tx)
    .await
}

/// Deletes the account's rule `id`; `false` when it has none by that id.
pub async fn delete(pool: &PgPool, account_id: &str, id: &str) -> sqlx::Result<bool> {
    let done = sqlx::query!(
        "DELETE FROM pronunciations WHERE account_id = $1 AND id = $2",
        account_id,
        id
    )
    .execute(pool)
    .await?;
    Ok(done.rows_affected() > 0)
}
