//! `/console/keys`: create (the secret shown once), list, revoke, and set a key's ceiling.
//! Creation is `service::keys::create`, the same as `voiced admin key create`. Every form
//! answers with a redirect (POST/Redirect/GET): a created key's secret crosses it sealed in the
//! session (`flash`) and the next keys page shows it once.

use askama::Template;
use axum::extract::{Path, State};
use axum::response::Response;
use serde::Deserialize;

use super::flash;
use super::page::{Chrome, PageError, not_owned, ok, render, see_other};
use super::session::{CsrfForm, CsrfOnly, SignedIn};
use super::{format_minutes, format_time};
use crate::console::ConsoleState;
use crate::domain::{CeilingError, CeilingMinutes, Scope};
use crate::http::error::HttpStatus;
use crate::service::views::KeySummary;
use crate::service::{ErrorCode, ServiceError, keys};

/// A key as the list shows it.
pub struct KeyView {
    pub id: String,
    pub name: String,
    pub prefix: String,
    pub scopes: String,
    /// Empty: no ceiling.
    pub ceiling: String,
    pub ceiling_input: String,
    pub used: String,
    /// Share of the ceiling used, 0–100, for the bar (0 without a ceiling).
    pub percent: u32,
    pub over: bool,
    pub last_used: String,
    pub created: String,
    pub revoked: bool,
}

impl KeyView {
    pub fn from_summary(key: KeySummary) -> Self {
        let used_min = key.month_audio_ms as f64 / 60_000.0;
        let (percent, over) = match key.ceiling_minutes {
            Some(0) => (100, true),
            Some(c) => {
                let share = used_min / f64::from(c) * 100.0;
                (share.clamp(0.0, 100.0) as u32, share >= 100.0)
            }
            None => (0, false),
        };
        KeyView {
            name: if key.name.is_empty() {
                "(unnamed)".into()
            } else {
                key.name
            },
            prefix: format!("{}…", key.prefix),
            scopes: key.scopes.join(", "),
            ceiling: key
                .ceiling_minutes
                .map(|c| format!("{c} min"))
                .unwrap_or_default(),
            ceiling_input: key
                .ceiling_minutes
                .map(|c| c.to_string())
                .unwrap_or_default(),
            used: format_minutes(key.month_audio_ms),
            percent,
            over,
            last_used: key
                .last_used_at
                .map(format_time)
                .unwrap_or_else(|| "never".into()),
            created: format_time(key.created_at),
            revoked: key.revoked_at.is_some(),
            id: key.id,
        }
    }
}

/// The secret of a key just created, shown by the keys page that follows the creation.
pub struct NewSecret {
    pub name: String,
    pub secret: String,
}

#[derive(Template)]
#[template(path = "console/keys.html")]
struct KeysPage {
    chrome: Chrome,
    keys: Vec<KeyView>,
    created: Option<NewSecret>,
    error: String,
}

#[derive(Template)]
#[template(path = "console/revoke.html")]
struct RevokePage {
    chrome: Chrome,
    key: KeyView,
}

async fn views(state: &ConsoleState, account_id: &str) -> Result<Vec<KeyView>, PageError> {
    Ok(keys::list(state, account_id)
        .await?
        .into_iter()
        .rev() // newest first
        .map(KeyView::from_summary)
        .collect())
}

pub async fn list(
    State(state): State<ConsoleState>,
    user: SignedIn,
) -> Result<Response, PageError> {
    let created = flash::take_secret(&user.session, &state.console.flash_key, &user.account_id)
        .await?
        .map(|(name, secret)| NewSecret { name, secret });
    Ok(ok(&KeysPage {
        keys: views(&state, &user.account_id).await?,
        chrome: Chrome::signed_in(&user, "keys"),
        created,
        error: String::new(),
    }))
}

#[derive(Deserialize)]
pub struct CreateForm {
    #[serde(default)]
    name: String,
    scope_read: Option<String>,
    scope_generate: Option<String>,
    #[serde(default)]
    ceiling_minutes: String,
}

/// Whole minutes from a form field ([`CeilingMinutes`]); empty means none.
fn ceiling_field(value: &str) -> Result<Option<CeilingMinutes>, ServiceError> {
    let value = value.trim();
    if value.is_empty() {
        return Ok(None);
    }
    value.parse().map(Some).map_err(|err| {
        let message = match err {
            CeilingError::NotWholeMinutes => {
                "The ceiling is whole minutes (0 or more), or empty for none."
            }
            CeilingError::TooLarge => "The ceiling is too large.",
        };
        ServiceError::invalid("ceiling_minutes", message)
    })
}

/// Creates the key and redirects to the keys page, which shows its secret once (kept sealed in
/// the session until then, never stored in clear, never shown again). A refused form shows the
/// page with the reason and creates nothing.
pub async fn create(
    State(state): State<ConsoleState>,
    user: SignedIn,
    CsrfForm(form): CsrfForm<CreateForm>,
) -> Result<Response, PageError> {
    let mut scopes = Vec::new();
    if form.scope_read.is_some() {
        scopes.push(Scope::VoiceRead);
    }
    if form.scope_generate.is_some() {
        scopes.push(Scope::VoiceGenerate);
    }
    let created = match ceiling_field(&form.ceiling_minutes) {
        Ok(ceiling) => {
            keys::create(
                &state,
                state.console.max_keys,
                &user.account_id,
                &form.name,
                &scopes,
                ceiling,
            )
            .await
        }
        Err(err) => Err(err),
    };
    let (status, error) = match created {
        Ok(key) => {
            flash::keep_secret(
                &user.session,
                &state.console.flash_key,
                &user.account_id,
                form.name.trim(),
                key.secret.expose(),
            )
            .await?;
            return Ok(see_other("/console/keys"));
        }
        // A field at fault, or the account's cap of live keys (409): the page with the reason.
        Err(err) if err.param.is_some() || err.code == ErrorCode::Conflict => {
            (err.code.status(), err.detail)
        }
        Err(err) => return Err(err.into()),
    };
    Ok(render(
        status,
        &KeysPage {
            keys: views(&state, &user.account_id).await?,
            chrome: Chrome::signed_in(&user, "keys"),
            created: None,
            error,
        },
    ))
}

async fn owned_key(
    state: &ConsoleState,
    account_id: &str,
    key_id: &str,
) -> Result<KeyView, PageError> {
    views(state, account_id)
        .await?
        .into_iter()
        .find(|k| k.id == key_id)
        .ok_or(PageError::NotFound)
}

/// The confirmation page (no JavaScript needed to confirm).
pub async fn confirm_revoke(
    State(state): State<ConsoleState>,
    user: SignedIn,
    Path(key_id): Path<String>,
) -> Result<Response, PageError> {
    let key = owned_key(&state, &user.account_id, &key_id).await?;
    Ok(ok(&RevokePage {
        chrome: Chrome::signed_in(&user, "keys"),
        key,
    }))
}

pub async fn revoke(
    State(state): State<ConsoleState>,
    user: SignedIn,
    Path(key_id): Path<String>,
    CsrfForm(_): CsrfForm<CsrfOnly>,
) -> Result<Response, PageError> {
    keys::revoke(&state, &user.account_id, &key_id)
        .await
        .map_err(not_owned)?;
    Ok(see_other("/console/keys"))
}

#[derive(Deserialize)]
pub struct CeilingForm {
    #[serde(default)]
    ceiling_minutes: String,
}

/// Sets, changes or (empty field) removes the ceiling; takes effect on the key's next request.
pub async fn set_ceiling(
    State(state): State<ConsoleState>,
    user: SignedIn,
    Path(key_id): Path<String>,
    CsrfForm(form): CsrfForm<CeilingForm>,
) -> Result<Response, PageError> {
    let ceiling = ceiling_field(&form.ceiling_minutes)?.map(CeilingMinutes::get);
    keys::set_ceiling(&state, &user.account_id, &key_id, ceiling)
        .await
        .map_err(not_owned)?;
    Ok(see_other("/console/keys"))
}
