//! The read-only admin commands: `account list`, `account show`, `key list`. They show what
//! the database holds, never a secret or its hash (only the key's stored prefix).

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::emit;
use crate::domain::Plan;
use crate::service::Core;
use crate::service::operator::{self, KeySummary};

/// A plain text without `%` or `_` matches anywhere in the email; a pattern is used as given.
fn email_pattern(text: &str) -> String {
    if text.contains(['%', '_']) {
        text.to_owned()
    } else {
        format!("%{text}%")
    }
}

pub(super) async fn account_list(
    core: &Core,
    as_json: bool,
    email_like: Option<&str>,
) -> anyhow::Result<()> {
    let pattern = email_like.map(email_pattern);
    let accounts = operator::accounts(core, pattern.as_deref())
        .await
        .map_err(|e| anyhow::anyhow!("{}", e.detail))?;
    let data: Vec<Value> = accounts
        .iter()
        .map(
            |a| json!({ "id": a.id, "email": a.email, "plan": a.plan, "created_at": a.created_at }),
        )
        .collect();
    let human = if accounts.is_empty() {
        "no accounts".to_owned()
    } else {
        accounts
            .iter()
            .map(|a| format!("{:<32} {:<5} {}", a.id, a.plan, a.email))
            .collect::<Vec<_>>()
            .join("\n")
    };
    emit(
        as_json,
        json!({ "data": data, "total": accounts.len() }),
        human,
    );
    Ok(())
}

pub(super) async fn account_show(core: &Core, as_json: bool, id: &str) -> anyhow::Result<()> {
    let month = operator::this_month();
    let (account, keys) = operator::account(core, id, month)
        .await
        .map_err(|e| anyhow::anyhow!("{}", e.detail))?
        .ok_or_else(|| anyhow::anyhow!("no account {id}"))?;
    let allowance_ms = account
        .plan
        .parse::<Plan>()
        .map(|p| p.monthly_allowance_secs() * 1000)
        .unwrap_or(0);
    let month_label = month.format("%Y-%m").to_string();
    let value = json!({
        "id": account.id,
        "email": account.email,
        "plan": account.plan,
        "features": account.features,
        "created_at": account.created_at,
        "usage": {
            "month": month_label,
            "audio_ms": account.month_audio_ms,
            "allowance_ms": allowance_ms,
        },
        "voice_count": account.voice_count,
        "keys": keys.iter().map(key_json).collect::<Vec<_>>(),
    });
    let features = if account.features.is_empty() {
        "none".to_owned()
    } else {
        account.features.join(", ")
    };
    let mut human = format!(
        "account  {}\nemail    {}\nplan     {} (features: {features})\ncreated  {}\n\
         usage    {} of {} minutes in {month_label} (UTC)\nvoices   {}\nkeys     {}",
        account.id,
        account.email,
        account.plan,
        day(account.created_at),
        minutes(account.month_audio_ms),
        allowance_ms / 60_000,
        account.voice_count,
        keys.len()
    );
    for key in &keys {
        human.push_str("\n  ");
        human.push_str(&key_line(key));
    }
    emit(as_json, value, human);
    Ok(())
}

pub(super) async fn key_list(core: &Core, as_json: bool, account_id: &str) -> anyhow::Result<()> {
    let keys = operator::keys(core, account_id, operator::this_month())
        .await
        .map_err(|e| anyhow::anyhow!("{}", e.detail))?;
    let human = if keys.is_empty() {
        format!("account {account_id} has no keys")
    } else {
        keys.iter().map(key_line).collect::<Vec<_>>().join("\n")
    };
    emit(
        as_json,
        json!({
            "account": account_id,
            "data": keys.iter().map(key_json).collect::<Vec<_>>(),
            "total": keys.len(),
        }),
        human,
    );
    Ok(())
}

fn key_json(key: &KeySummary) -> Value {
    json!({
        "id": key.id,
        "name": key.name,
        "prefix": key.prefix,
        "scopes": key.scopes,
        "ceiling_minutes": key.ceiling_minutes,
        "month_audio_ms": key.month_audio_ms,
        "created_at": key.created_at,
        "revoked": key.revoked_at.is_some(),
        "revoked_at": key.revoked_at,
    })
}

/// `key_… vk_AbCdEfGhI…  voice:read,voice:generate  ceiling 30 min  used 1.5 min  active`
fn key_line(key: &KeySummary) -> String {
    let ceiling = key
        .ceiling_minutes
        .map_or_else(|| "no ceiling".to_owned(), |m| format!("ceiling {m} min"));
    let state = key
        .revoked_at
        .map_or_else(|| "active".to_owned(), |at| format!("revoked {}", day(at)));
    let name = if key.name.is_empty() {
        String::new()
    } else {
        format!(" ({})", key.name)
    };
    format!(
        "{}{name}  {}…  {}  {ceiling}  used {} min  {state}",
        key.id,
        key.prefix,
        key.scopes.join(","),
        minutes(key.month_audio_ms)
    )
}

fn minutes(ms: i64) -> String {
    // Display only: a month's audio in minutes with one decimal.
    #[allow(clippy::cast_precision_loss)]
    let minutes = ms as f64 / 60_000.0;
    format!("{minutes:.1}")
}

fn day(at: DateTime<Utc>) -> String {
    at.format("%Y-%m-%d").to_string()
}
