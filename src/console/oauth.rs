//! OAuth in the console: the consent page of an authorization request, and the applications an
//! account has authorized (list and revoke). See docs/oauth.md.
//!
//! `GET /oauth/authorize` checks the request and sends the browser here (the console's session
//! cookie is scoped to `/console`), where the account signs in with the console's own sign-in
//! and answers the consent form (`decision=allow` or `deny`, with its `csrf_token`). The request
//! rides along unchanged as the query string, then as the form's `request` field, and is checked
//! again on every step.

use askama::Template;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use serde::Deserialize;

use super::format_time;
use super::page::{Chrome, PageError, ok, render, see_other};
use super::session::{self, CsrfForm, CsrfOnly, SignedIn};
use crate::console::ConsoleState;
use crate::domain::Scope;
use crate::http::client_addr::ClientAddr;
use crate::service::oauth::authorize::{
    self, AuthorizationRequest, RequestError, Shown, redirect_host, redirect_origin,
};
use crate::service::oauth::tokens;

/// Where `GET /oauth/authorize` sends the browser.
pub const CONSENT_PATH: &str = "/console/authorize";

#[derive(Template)]
#[template(path = "console/authorize.html")]
struct ConsentPage {
    chrome: Chrome,
    client_name: String,
    client_id: String,
    metadata_document: bool,
    loopback_only: bool,
    redirect_host: String,
    scopes: Vec<(&'static str, &'static str)>,
    resources: Vec<String>,
    request: String,
}

#[derive(Template)]
#[template(path = "console/oauth_error.html")]
struct ErrorPage<'a> {
    chrome: Chrome,
    message: &'a str,
}

#[derive(Template)]
#[template(path = "console/applications.html")]
struct ApplicationsPage {
    chrome: Chrome,
    applications: Vec<ApplicationView>,
}

struct ApplicationView {
    id: String,
    name: String,
    client_id: String,
    scopes: String,
    resources: String,
    authorized: String,
    last_used: String,
}

/// The page for a request that cannot go back to its client (unknown client, a redirect URI it
/// did not register): 400, and no redirect.
pub fn error_page(message: &str) -> Response {
    render(
        StatusCode::BAD_REQUEST,
        &ErrorPage {
            chrome: Chrome::anonymous(String::new()),
            message,
        },
    )
}

/// 302 back to the client (a code, or an error for it).
pub fn to_client(location: &str) -> Response {
    crate::http::found_no_store(location).unwrap_or_else(|| error_page(authorize::BAD_REDIRECT_URI))
}

fn describe(scope: Scope) -> &'static str {
    match scope {
        Scope::VoiceRead => "read your voice profiles, captures and past generations",
        Scope::VoiceGenerate => {
            "generate speech and transcribe audio, drawing on your plan's audio allowance, and \
             add preset voices"
        }
    }
}

fn describe_resource(state: &ConsoleState, resource: &str) -> String {
    let oauth = state.oauth();
    if resource == oauth.api_resource() {
        format!("the API ({resource})")
    } else if resource == oauth.mcp_resource() {
        format!("the agent interface ({resource})")
    } else {
        format!("the API and the agent interface ({resource})")
    }
}

async fn checked(
    state: &ConsoleState,
    query: &str,
    client: Option<std::net::IpAddr>,
    shown: Shown,
) -> Result<AuthorizationRequest, Response> {
    authorize::validate(state, query, client, shown)
        .await
        .map_err(|err| match err {
            RequestError::Page(message) => error_page(&message),
            RequestError::Redirect(location) => to_client(&location),
        })
}

/// `GET /console/authorize?<the authorization request>`: sign in first, then the consent page.
pub async fn consent(
    State(state): State<ConsoleState>,
    ClientAddr(client): ClientAddr,
    user: Result<SignedIn, PageError>,
    RawQuery(query): RawQuery,
) -> Result<Response, PageError> {
    let query = query.unwrap_or_default();
    // Not shown yet: a fault is told on the error page.
    let request = match checked(&state, &query, client, Shown::Nothing).await {
        Ok(request) => request,
        Err(response) => return Ok(response),
    };
    let user = match user {
        Ok(user) => user,
        Err(PageError::SignIn) => {
            let next = format!("{CONSENT_PATH}?{query}");
            let to: String = url::form_urlencoded::Serializer::new(String::new())
                .append_pair("next", &next)
                .finish();
            return Ok(see_other(&format!("/console/sign-in?{to}")));
        }
        Err(err) => return Err(err),
    };
    let page = ConsentPage {
        chrome: Chrome::signed_in(&user, ""),
        client_name: request.client.name.clone(),
        client_id: request.client.id.clone(),
        metadata_document: request.client.metadata_document,
        loopback_only: request.client.metadata_document && request.client.loopback_only(),
        redirect_host: redirect_host(&request.redirect_uri),
        scopes: request
            .scopes
            .iter()
            .map(|s| (s.as_str(), describe(*s)))
            .collect(),
        resources: request
            .resources
            .iter()
            .map(|r| describe_resource(&state, r))
            .collect(),
        request: query.clone(),
    };
    // This session has now been shown this request: its answer may go back to the client.
    session::remember_consent(&user.session, &query).await?;
    let mut response = ok(&page);
    // The form's answer is a redirect to the client: allow it as a form target (CSP
    // form-action applies to where a submission is redirected too).
    let csp = format!(
        "default-src 'self'; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'; \
         form-action 'self' {}; base-uri 'none'",
        redirect_origin(&request.redirect_uri)
    );
    if let Ok(value) = HeaderValue::from_str(&csp) {
        response
            .headers_mut()
            .insert(header::CONTENT_SECURITY_POLICY, value);
    }
    Ok(response)
}

#[derive(Deserialize)]
pub struct ConsentForm {
    #[serde(default)]
    request: String,
    #[serde(default)]
    decision: String,
}

/// `POST /console/authorize`: `decision=allow` issues a code and redirects to the client with
/// `code`, `state` and `iss`; `decision=deny` redirects with `error=access_denied`. Only an
/// answer to a consent page this session was shown for this very request (and once) goes back
/// to the client; any other gets the error page, so nobody but the user who saw the page's
/// redirect host can be sent there (RFC 9700 §4.11.2).
pub async fn decide(
    State(state): State<ConsoleState>,
    ClientAddr(client): ClientAddr,
    user: SignedIn,
    CsrfForm(form): CsrfForm<ConsentForm>,
) -> Result<Response, PageError> {
    if !matches!(form.decision.as_str(), "allow" | "deny") {
        return Ok(error_page("The answer must be allow or deny."));
    }
    if !session::take_consent(&user.session, &form.request).await? {
        return Ok(error_page(authorize::NOT_SHOWN));
    }
    let request = match checked(&state, &form.request, client, Shown::ConsentPage).await {
        Ok(request) => request,
        Err(response) => return Ok(response),
    };
    if form.decision == "allow" {
        let location = authorize::allow(&state, &request, &user.account_id).await?;
        return Ok(to_client(&location));
    }
    match authorize::deny(&state, &request) {
        Ok(location) => Ok(to_client(&location)),
        Err(RequestError::Page(message)) => Ok(error_page(&message)),
        Err(RequestError::Redirect(location)) => Ok(to_client(&location)),
    }
}

/// `GET /console/applications`: the applications this account authorized that still hold a
/// live token.
pub async fn applications(
    State(state): State<ConsoleState>,
    user: SignedIn,
) -> Result<Response, PageError> {
    let applications = tokens::authorizations(&state, &user.account_id)
        .await?
        .into_iter()
        .map(|a| ApplicationView {
            name: a.client_name,
            scopes: a.scopes.join(", "),
            resources: a
                .resources
                .iter()
                .map(|r| describe_resource(&state, r))
                .collect::<Vec<_>>()
                .join("; "),
            authorized: format_time(a.created_at),
            last_used: a
                .last_used_at
                .map(format_time)
                .unwrap_or_else(|| "never".into()),
            client_id: a.client_id,
            id: a.id,
        })
        .collect();
    Ok(ok(&ApplicationsPage {
        chrome: Chrome::signed_in(&user, "applications"),
        applications,
    }))
}

/// `POST /console/applications/{id}/revoke`: every token of that authorization is refused from
/// its next request on.
pub async fn revoke(
    State(state): State<ConsoleState>,
    user: SignedIn,
    Path(id): Path<String>,
    CsrfForm(_): CsrfForm<CsrfOnly>,
) -> Result<Response, PageError> {
    tokens::revoke_authorization(&state, &user.account_id, &id)
        .await
        .map_err(|err| match err.code {
            crate::service::ErrorCode::NotFound => PageError::NotFound,
            _ => err.into(),
        })?;
    Ok(see_other("/console/applications"))
}
