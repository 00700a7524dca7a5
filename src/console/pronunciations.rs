//! `/console/pronunciations`: the account's pronunciation rules, added and deleted through the
//! core (`service::pronunciations`), as `POST /v1/pronunciations` and `voiced admin
//! pronunciation` do. Every form answers with a redirect, or the page with the reason.

use askama::Template;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde::Deserialize;

use super::format_time;
use super::page::{Chrome, PageError, not_owned, ok, render, see_other};
use super::session::{CsrfForm, CsrfOnly, SignedIn};
use crate::console::ConsoleState;
use crate::service::ErrorCode;
use crate::service::pronunciations::{self, NewRule};
use crate::service::views::PronunciationRow;

/// A rule as the list shows it.
pub struct RuleView {
    pub id: String,
    pub text: String,
    pub said: String,
    pub language: String,
    pub case_sensitive: bool,
    pub created: String,
}

impl From<PronunciationRow> for RuleView {
    fn from(row: PronunciationRow) -> Self {
        Self {
            said: match (row.alias, row.phonemes) {
                (Some(alias), _) => alias,
                (None, Some(ipa)) => format!("/{ipa}/"),
                (None, None) => String::new(),
            },
            language: row.language.unwrap_or_else(|| "every language".into()),
            case_sensitive: row.case_sensitive,
            created: format_time(row.created_at),
            text: row.text,
            id: row.id,
        }
    }
}

#[derive(Deserialize, Default)]
pub struct RuleForm {
    #[serde(default)]
    text: String,
    /// `alias` or `phonemes`.
    #[serde(default)]
    kind: String,
    #[serde(default)]
    say: String,
    #[serde(default)]
    language: String,
    case_sensitive: Option<String>,
}

/// What the form shows again after a refusal.
#[derive(Default)]
struct FormValues {
    text: String,
    kind: String,
    say: String,
    language: String,
    case_sensitive: bool,
}

#[derive(Template)]
#[template(path = "console/pronunciations.html")]
struct PronunciationsPage {
    chrome: Chrome,
    rules: Vec<RuleView>,
    form: FormValues,
    error: String,
}

async fn views(state: &ConsoleState, account_id: &str) -> Result<Vec<RuleView>, PageError> {
    Ok(pronunciations::list_for(state, account_id)
        .await?
        .into_iter()
        .map(RuleView::from)
        .collect())
}

pub async fn list(
    State(state): State<ConsoleState>,
    user: SignedIn,
) -> Result<Response, PageError> {
    Ok(ok(&PronunciationsPage {
        rules: views(&state, &user.account_id).await?,
        chrome: Chrome::signed_in(&user, "pronunciations"),
        form: FormValues::default(),
        error: String::new(),
    }))
}

/// Adds the rule; a refused one shows the page with the reason (naming the field) and the
/// form as it was sent, and adds nothing.
pub async fn create(
    State(state): State<ConsoleState>,
    user: SignedIn,
    CsrfForm(form): CsrfForm<RuleForm>,
) -> Result<Response, PageError> {
    let phonemes = form.kind == "phonemes";
    let rule = NewRule {
        text: &form.text,
        alias: (!phonemes).then_some(form.say.as_str()),
        phonemes: phonemes.then_some(form.say.as_str()),
        language: &form.language,
        case_sensitive: form.case_sensitive.is_some(),
    };
    let error = match pronunciations::create_for(&state, &user.account_id, rule).await {
        Ok(_) => return Ok(see_other("/console/pronunciations")),
        Err(err) if err.code == ErrorCode::InvalidRequest => err.detail,
        Err(err) => return Err(err.into()),
    };
    Ok(render(
        StatusCode::BAD_REQUEST,
        &PronunciationsPage {
            rules: views(&state, &user.account_id).await?,
            chrome: Chrome::signed_in(&user, "pronunciations"),
            form: FormValues {
                case_sensitive: form.case_sensitive.is_some(),
                text: form.text,
                kind: form.kind,
                say: form.say,
                language: form.language,
            },
            error,
        },
    ))
}

pub async fn delete(
    State(state): State<ConsoleState>,
    user: SignedIn,
    Path(id): Path<String>,
    CsrfForm(_): CsrfForm<CsrfOnly>,
) -> Result<Response, PageError> {
    pronunciations::delete_for(&state, &user.account_id, &id)
        .await
        .map_err(not_owned)?;
    Ok(see_other("/console/pronunciations"))
}
