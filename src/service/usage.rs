//! What an account used and made, as the console shows it: the month's usage (audio against the
//! allowance, by day, transcriptions, by key) and the history of generations and captures.

use chrono::{DateTime, NaiveDate, Utc};

use super::core::Core;
use super::error::ServiceError;
use crate::store;
use crate::store::accounts::AccountDetail;
use crate::store::captures::CaptureRow;
use crate::store::generations::HistoryRow;
use crate::store::keys::KeySummary;
use crate::store::usage::DayUsage;

/// The account's usage in the month of `now` (UTC).
pub struct Month {
    /// The month's first day.
    pub month: NaiveDate,
    pub account: AccountDetail,
    pub days: Vec<DayUsage>,
    /// Transcriptions made this month.
    pub transcriptions: i64,
    /// The account's keys, with what each used this month.
    pub keys: Vec<KeySummary>,
}

/// The month's usage of `account_id`, or `None` when there is no such account.
pub async fn month(
    core: &Core,
    account_id: &str,
    now: DateTime<Utc>,
) -> Result<Option<Month>, ServiceError> {
    let month = store::usage::month_of(now);
    let Some(account) = store::accounts::detail(&core.pool, account_id, month).await? else {
        return Ok(None);
    };
    let days = store::usage::daily(&core.pool, account_id, month).await?;
    let month_start = month
        .and_hms_opt(0, 0, 0)
        .expect("midnight exists")
        .and_utc();
    let transcriptions = store::captures::count_since(&core.pool, account_id, month_start).await?;
    let keys = store::keys::list(&core.pool, account_id, month).await?;
    Ok(Some(Month {
        month,
        account,
        days,
        transcriptions,
        keys,
    }))
}

/// One page of each history: generations and captures, newest first, with their totals.
pub struct History {
    pub generations: Vec<HistoryRow>,
    pub generation_total: i64,
    pub captures: Vec<CaptureRow>,
    pub capture_total: i64,
}

/// Where each history's page starts, and its size.
pub struct HistoryPages {
    pub size: i64,
    pub generation_offset: i64,
    pub capture_offset: i64,
}

pub async fn history(
    core: &Core,
    account_id: &str,
    pages: HistoryPages,
) -> Result<History, ServiceError> {
    let (generations, generation_total) =
        store::generations::history(&core.pool, account_id, pages.size, pages.generation_offset)
            .await?;
    let (captures, capture_total) =
        store::captures::page(&core.pool, account_id, pages.size, pages.capture_offset).await?;
    Ok(History {
        generations,
        generation_total,
        captures,
        capture_total,
    })
}
