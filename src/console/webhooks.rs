//! `/console/webhooks`: the account's webhook endpoints (docs/webhooks.md): register one (its
//! secret shown once), delete one, rotate its secret, and each endpoint's recent deliveries
//! (event, status code, attempts, next try) with "send again". Every rule is
//! `service::webhooks`' (the same calls as `voiced admin webhook`); every form answers with a
//! redirect (POST/Redirect/GET), a new secret crossing it sealed in the session (`flash`).

use askama::Template;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde::Deserialize;

use super::flash;
use super::format_time;
use super::page::{Chrome, PageError, not_owned, ok, render, see_other};
use super::session::{CsrfForm, CsrfOnly, SignedIn};
use crate::console::ConsoleState;
use crate::service::ErrorCode;
use crate::service::webhooks::{self, Endpoint, NewEndpoint};

/// Deliveries shown per endpoint.
const RECENT: i64 = 10;

pub struct DeliveryView {
    pub id: String,
    pub event: String,
    pub subject: String,
    pub state: String,
    pub status: String,
    pub attempts: i32,
    pub next_try: String,
    pub created: String,
}

pub struct EndpointView {
    pub id: String,
    pub url: String,
    pub events: String,
    pub description: String,
    pub enabled: bool,
    /// Why it is disabled, for people.
    pub disabled: String,
    pub created: String,
    pub deliveries: Vec<DeliveryView>,
}

/// A secret just made (a new endpoint's, or a rotation's), shown once.
pub struct NewSecret {
    pub endpoint: String,
    pub secret: String,
}

#[derive(Template)]
#[template(path = "console/webhooks.html")]
struct WebhooksPage {
    chrome: Chrome,
    endpoints: Vec<EndpointView>,
    events: Vec<&'static str>,
    created: Option<NewSecret>,
    error: String,
}

async fn views(state: &ConsoleState, account_id: &str) -> Result<Vec<EndpointView>, PageError> {
    let mut views = Vec::new();
    for endpoint in webhooks::list(state, account_id).await? {
        let Endpoint {
            id,
            url,
            events,
            description,
            enabled,
            created_at,
            disabled_reason,
        } = endpoint;
        let deliveries = webhooks::deliveries(state, account_id, &id, RECENT)
            .await?
            .into_iter()
            .map(|d| DeliveryView {
                status: d
                    .last_status
                    .map(|s| s.to_string())
                    .or_else(|| d.last_error.clone().map(|_| "no answer".into()))
                    .unwrap_or_else(|| "—".into()),
                next_try: d
                    .next_attempt_at
                    .map(format_time)
                    .unwrap_or_else(|| "—".into()),
                created: format_time(d.created_at),
                id: d.id,
                event: d.event_type,
                subject: d.subject_id,
                state: d.state,
                attempts: d.attempts,
            })
            .collect();
        views.push(EndpointView {
            id,
            url,
            events: events.join(", "),
            description,
            enabled,
            disabled: match disabled_reason.as_deref() {
                Some("gone") => "disabled: the receiver answered 410 Gone".into(),
                Some("failing") => "disabled: every delivery failed for 3 days".into(),
                _ => "disabled".into(),
            },
            created: format_time(created_at),
            deliveries,
        });
    }
    Ok(views)
}

async fn page(
    state: &ConsoleState,
    user: &SignedIn,
    created: Option<NewSecret>,
    error: String,
) -> Result<WebhooksPage, PageError> {
    Ok(WebhooksPage {
        endpoints: views(state, &user.account_id).await?,
        chrome: Chrome::signed_in(user, "webhooks"),
        events: webhooks::EVENTS.to_vec(),
        created,
        error,
    })
}

pub async fn list(
    State(state): State<ConsoleState>,
    user: SignedIn,
) -> Result<Response, PageError> {
    let created = flash::take_secret_from(
        &user.session,
        flash::NEW_WEBHOOK_SECRET,
        &state.console.flash_key,
        &user.account_id,
    )
    .await?
    .map(|(endpoint, secret)| NewSecret { endpoint, secret });
    Ok(ok(&page(&state, &user, created, String::new()).await?))
}

#[derive(Deserialize)]
pub struct CreateForm {
    #[serde(default)]
    url: String,
    #[serde(default)]
    description: String,
    #[serde(rename = "generation.completed")]
    completed: Option<String>,
    #[serde(rename = "generation.failed")]
    failed: Option<String>,
    #[serde(rename = "capture.created")]
    capture: Option<String>,
}

async fn keep(
    state: &ConsoleState,
    user: &SignedIn,
    endpoint: &str,
    secret: &str,
) -> Result<(), PageError> {
    flash::keep_secret_in(
        &user.session,
        flash::NEW_WEBHOOK_SECRET,
        &state.console.flash_key,
        &user.account_id,
        endpoint,
        secret,
    )
    .await
}

/// Registers the endpoint and redirects to the page, which shows its secret once. A refused
/// form shows the page with the reason and registers nothing.
pub async fn create(
    State(state): State<ConsoleState>,
    user: SignedIn,
    CsrfForm(form): CsrfForm<CreateForm>,
) -> Result<Response, PageError> {
    let events: Vec<String> = [
        (form.completed.is_some(), "generation.completed"),
        (form.failed.is_some(), "generation.failed"),
        (form.capture.is_some(), "capture.created"),
    ]
    .into_iter()
    .filter(|(on, _)| *on)
    .map(|(_, e)| e.to_owned())
    .collect();
    let created = webhooks::create(
        &state,
        &user.account_id,
        NewEndpoint {
            url: &form.url,
            events: &events,
            description: &form.description,
        },
    )
    .await;
    let error = match created {
        Ok((endpoint, secret)) => {
            keep(&state, &user, &endpoint.id, &secret).await?;
            return Ok(see_other("/console/webhooks"));
        }
        Err(err) if err.param.is_some() || err.code == ErrorCode::Conflict => err.detail,
        Err(err) => return Err(err.into()),
    };
    Ok(render(
        StatusCode::BAD_REQUEST,
        &page(&state, &user, None, error).await?,
    ))
}

pub async fn delete(
    State(state): State<ConsoleState>,
    user: SignedIn,
    Path(endpoint_id): Path<String>,
    CsrfForm(_): CsrfForm<CsrfOnly>,
) -> Result<Response, PageError> {
    webhooks::delete(&state, &user.account_id, &endpoint_id)
        .await
        .map_err(not_owned)?;
    Ok(see_other("/console/webhooks"))
}

/// A new secret, shown once by the page that follows; the old one signs for 24 hours more.
pub async fn rotate(
    State(state): State<ConsoleState>,
    user: SignedIn,
    Path(endpoint_id): Path<String>,
    CsrfForm(_): CsrfForm<CsrfOnly>,
) -> Result<Response, PageError> {
    let secret = webhooks::rotate_secret(&state, &user.account_id, &endpoint_id)
        .await
        .map_err(not_owned)?;
    keep(&state, &user, &endpoint_id, &secret).await?;
    Ok(see_other("/console/webhooks"))
}

/// Sends a delivery again now, with its `webhook-id`.
pub async fn resend(
    State(state): State<ConsoleState>,
    user: SignedIn,
    Path(delivery_id): Path<String>,
    CsrfForm(_): CsrfForm<CsrfOnly>,
) -> Result<Response, PageError> {
    webhooks::resend(&state, &user.account_id, &delivery_id)
        .await
        .map_err(not_owned)?;
    Ok(see_other("/console/webhooks"))
}
