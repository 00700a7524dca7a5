//! The usage ledger: generated audio per account and key per calendar month (UTC).

use chrono::{DateTime, Datelike, NaiveDate, Utc};
use sqlx::PgConnection;

/// First day of `at`'s calendar month (UTC): the ledger's month key.
pub fn month_of(at: DateTime<Utc>) -> NaiveDate {
    NaiveDate::from_ymd_opt(at.year(), at.month(), 1).expect("day 1 exists")
}

/// What admission weighs a new generation against, read under the account's admission lock.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AdmissionLoad {
    /// Charged this month (the ledger), account and key.
    pub account_charged_ms: i64,
    pub key_charged_ms: i64,
    /// Estimated audio of queued and running generations (the reservations), account and key.
    pub account_reserved_ms: i64,
    pub key_reserved_ms: i64,
    /// Queued and running generations of the account.
    pub account_pending: i64,
}

/// Locks the account for admission (admissions of one account are serialised, so that two
/// concurrent requests cannot both see the same room under a ceiling) and reads its load. Call
/// inside the transaction that then enqueues; the lock ends with it. `FOR NO KEY UPDATE` does not
/// block workers writing ledger rows that reference the account. `key_id` is `None` for an
/// OAuth access token: the key figures are then zero (tokens have no ceiling). `None`: the
/// account was deleted (checked under the lock, so no generation is queued after its deletion).
pub async fn lock_for_admission(
    conn: &mut PgConnection,
    account_id: &str,
    key_id: Option<&str>,
    month: NaiveDate,
) -> sqlx::Result<Option<AdmissionLoad>> {
    let live = sqlx::query!(
        "SELECT id FROM accounts WHERE id = $1 AND deleted_at IS NULL FOR NO KEY UPDATE",
        account_id
    )
    .fetch_optional(&mut *conn)
    .await?;
    if live.is_none() {
        return Ok(None);
    }
    let row = sqlx::query!(
        r#"SELECT
             (SELECT COALESCE(sum(audio_ms), 0) FROM usage_ledger
              WHERE account_id = $1 AND month = $3)::BIGINT AS "account_charged_ms!",
             (SELECT COALESCE(sum(audio_ms), 0) FROM usage_ledger
              WHERE account_id = $1 AND api_key_id = $2 AND month = $3)::BIGINT AS "key_charged_ms!",
             COALESCE(sum(estimated_ms), 0)::BIGINT AS "account_reserved_ms!",
             COALESCE(sum(estimated_ms) FILTER (WHERE api_key_id = $2), 0)::BIGINT AS "key_reserved_ms!",
             count(*) AS "account_pending!"
           FROM generations WHERE account_id = $1 AND status = 'generating'"#,
        account_id,
        key_id,
        month
    )
    .fetch_one(&mut *conn)
    .await?;
    Ok(Some(AdmissionLoad {
        account_charged_ms: row.account_charged_ms,
        key_charged_ms: row.key_charged_ms,
        account_reserved_ms: row.account_reserved_ms,
        key_reserved_ms: row.key_reserved_ms,
        account_pending: row.account_pending,
    }))
}

/// Records a transcription's audio in the transcription ledger (in the capture's transaction).
pub async fn record_transcription(
    conn: &mut PgConnection,
    account_id: &str,
    capture_id: &str,
    audio_ms: i64,
    free: bool,
) -> sqlx::Result<()> {
    sqlx::query!(
        "INSERT INTO transcription_ledger (account_id, capture_id, month, audio_ms, free)
         VALUES ($1, $2, $3, $4, $5)",
        account_id,
        capture_id,
        month_of(Utc::now()),
        audio_ms,
        free
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Audio the account transcribed on the app's free use in `month`.
pub async fn free_transcribed_ms(
    pool: &sqlx::PgPool,
    account_id: &str,
    month: NaiveDate,
) -> sqlx::Result<i64> {
    sqlx::query_scalar!(
        r#"SELECT COALESCE(sum(audio_ms), 0)::BIGINT AS "ms!" FROM transcription_ledger
           WHERE account_id = $1 AND month = $2 AND free"#,
        account_id,
        month
    )
    .fetch_one(pool)
    .await
}

/// Generated audio charged to the account per day of `month` (days without any are absent).
pub struct DayUsage {
    pub day: NaiveDate,
    pub audio_ms: i64,
}

pub async fn daily(
    pool: &sqlx::PgPool,
    account_id: &str,
    month: NaiveDate,
) -> sqlx::Result<Vec<DayUsage>> {
    sqlx::query_as!(
        DayUsage,
        r#"SELECT (created_at AT TIME ZONE 'UTC')::DATE AS "day!",
                  sum(audio_ms)::BIGINT AS "audio_ms!"
           FROM usage_ledger WHERE account_id = $1 AND month = $2
           GROUP BY 1 ORDER BY 1"#,
        account_id,
        month
    )
    .fetch_all(pool)
    .await
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    #[test]
    fn months_are_utc_calendar_months() {
        let at = Utc.with_ymd_and_hms(2026, 2, 28, 23, 59, 59).unwrap();
        assert_eq!(super::month_of(at).to_string(), "2026-02-01");
        let at = Utc.with_ymd_and_hms(2026, 3, 1, 0, 0, 0).unwrap();
        assert_eq!(super::month_of(at).to_string(), "2026-03-01");
    }
    use super::*;
}
