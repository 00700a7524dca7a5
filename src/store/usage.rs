//! The usage ledger: generated audio per account and key per calendar month (UTC).

use chrono::{DateTime, Datelike, NaiveDate, Utc};
use sqlx::PgPool;

/// First day of `at`'s calendar month (UTC): the ledger's month key.
pub fn month_of(at: DateTime<Utc>) -> NaiveDate {
    NaiveDate::from_ymd_opt(at.year(), at.month(), 1).expect("day 1 exists")
}

/// Milliseconds of generated audio this month: the account's total and the key's total.
pub async fn month_totals(
    pool: &PgPool,
    account_id: &str,
    key_id: &str,
    month: NaiveDate,
) -> sqlx::Result<(i64, i64)> {
    let row = sqlx::query!(
        r#"SELECT COALESCE(sum(audio_ms), 0)::BIGINT AS "account_ms!",
                  COALESCE(sum(audio_ms) FILTER (WHERE api_key_id = $2), 0)::BIGINT AS "key_ms!"
           FROM usage_ledger WHERE account_id = $1 AND month = $3"#,
        account_id,
        key_id,
        month
    )
    .fetch_one(pool)
    .await?;
    Ok((row.account_ms, row.key_ms))
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
