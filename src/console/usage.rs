//! `/console/usage` (this month's audio against the allowance, per key and per day) and
//! `/console/billing` (the plan, and what having none means).

use std::fmt::Write as _;

use askama::Template;
use axum::extract::State;
use axum::response::Response;
use chrono::{Datelike, NaiveDate};

use super::format_minutes;
use super::keys::KeyView;
use super::page::{Chrome, PageError, ok};
use super::session::SignedIn;
use crate::console::ConsoleState;
use crate::domain::Plan;
use crate::service::usage;
use crate::service::views::DayUsage;

#[derive(Template)]
#[template(path = "console/usage.html")]
struct UsagePage {
    chrome: Chrome,
    month: String,
    used: String,
    allowance: String,
    percent: u32,
    api_allowed: bool,
    /// No plan, and the playground's free allowance is on: `allowance` is that.
    free: bool,
    keys: Vec<KeyView>,
    chart: String,
    transcriptions: i64,
}

#[derive(Template)]
#[template(path = "console/billing.html")]
struct BillingPage {
    chrome: Chrome,
    plan: String,
    active: bool,
    /// The playground's free minutes of an account without a plan (0: none).
    free_minutes: u32,
    contact: String,
    contact_is_link: bool,
    contact_is_email: bool,
}

fn days_in_month(first: NaiveDate) -> u32 {
    let next = if first.month() == 12 {
        NaiveDate::from_ymd_opt(first.year() + 1, 1, 1)
    } else {
        NaiveDate::from_ymd_opt(first.year(), first.month() + 1, 1)
    };
    next.map_or(31, |n| u32::try_from((n - first).num_days()).unwrap_or(31))
}

/// A bar per day of the month, drawn by the server (no script). Only numbers go into it.
pub fn chart_svg(month: NaiveDate, days: &[DayUsage]) -> String {
    let count = days_in_month(month);
    let (bar, gap, height) = (14u32, 4u32, 120u32);
    let width = count * (bar + gap);
    let max = days
        .iter()
        .map(|d| d.audio_ms)
        .max()
        .unwrap_or(0)
        .max(60_000);
    let mut svg = format!(
        "<svg class=\"chart\" viewBox=\"0 0 {width} {}\" role=\"img\" \
         aria-label=\"Generated audio per day\" xmlns=\"http://www.w3.org/2000/svg\">",
        height + 20
    );
    for day in 1..=count {
        let ms = days
            .iter()
            .find(|d| d.day.day() == day)
            .map_or(0, |d| d.audio_ms);
        let h = (ms as f64 / max as f64 * f64::from(height)).round() as u32;
        let h = if ms > 0 { h.max(2) } else { 0 };
        let x = (day - 1) * (bar + gap);
        let _ = write!(
            svg,
            "<rect x=\"{x}\" y=\"{}\" width=\"{bar}\" height=\"{h}\" rx=\"2\"><title>{}-{day:02}: {}</title></rect>",
            height - h,
            month.format("%Y-%m"),
            format_minutes(ms)
        );
        if day == 1 || day % 5 == 0 {
            let _ = write!(
                svg,
                "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{day}</text>",
                x + bar / 2,
                height + 15
            );
        }
    }
    svg.push_str("<line x1=\"0\" x2=\"100%\" y1=\"120\" y2=\"120\"/></svg>");
    svg
}

pub async fn usage(
    State(state): State<ConsoleState>,
    user: SignedIn,
) -> Result<Response, PageError> {
    let plan: Plan = user.plan.parse().map_err(PageError::internal)?;
    let usage::Month {
        month,
        account: detail,
        days,
        transcriptions,
        keys,
    } = usage::month(&state, &user.account_id, chrono::Utc::now())
        .await?
        .ok_or(PageError::SignIn)?;
    let free_ms = i64::from(state.console.free.speech_minutes) * 60_000;
    let allowance_ms = if plan.allows_api() {
        plan.monthly_allowance_secs() * 1000
    } else {
        free_ms
    };
    let percent = if allowance_ms > 0 {
        ((detail.month_audio_ms as f64 / allowance_ms as f64) * 100.0).clamp(0.0, 100.0) as u32
    } else {
        0
    };
    let keys = keys.into_iter().map(KeyView::from_summary).collect();
    Ok(ok(&UsagePage {
        chrome: Chrome::signed_in(&user, "usage"),
        month: month.format("%B %Y").to_string(),
        used: format_minutes(detail.month_audio_ms),
        allowance: format_minutes(allowance_ms),
        percent,
        api_allowed: plan.allows_api(),
        free: !plan.allows_api() && free_ms > 0,
        keys,
        chart: chart_svg(month, &days),
        transcriptions,
    }))
}

pub async fn billing(
    State(state): State<ConsoleState>,
    user: SignedIn,
) -> Result<Response, PageError> {
    let plan: Plan = user.plan.parse().map_err(PageError::internal)?;
    let contact = state.console.billing_contact.clone();
    Ok(ok(&BillingPage {
        chrome: Chrome::signed_in(&user, "billing"),
        plan: plan.as_str().to_owned(),
        active: plan.allows_api(),
        free_minutes: state.console.free.speech_minutes,
        contact_is_link: contact.starts_with("https://") || contact.starts_with("http://"),
        contact_is_email: contact.contains('@') && !contact.contains(char::is_whitespace),
        contact,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chart_has_a_bar_per_day_and_only_numbers() {
        let feb = NaiveDate::from_ymd_opt(2026, 2, 1).unwrap();
        let days = vec![DayUsage {
            day: NaiveDate::from_ymd_opt(2026, 2, 3).unwrap(),
            audio_ms: 90_000,
        }];
        let svg = chart_svg(feb, &days);
        assert_eq!(svg.matches("<rect").count(), 28);
        assert!(svg.contains("2026-02-03: 1.5 min"), "{svg}");
        assert!(svg.contains("2026-02-04: 0.0 s"), "{svg}");
        assert_eq!(
            days_in_month(NaiveDate::from_ymd_opt(2026, 12, 1).unwrap()),
            31
        );
    }
}
