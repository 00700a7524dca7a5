//! Rendering: askama templates into HTML responses, and the console's own error pages.
//!
//! Console responses are HTML even when they fail; `http::error::render_errors` leaves a
//! response that is already `text/html` as it is.

use askama::Template;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};

use crate::http::error::HttpStatus;
use crate::service::ServiceError;

/// What the header of every console page shows.
pub struct Chrome {
    /// Empty on the sign-in and sign-up pages.
    pub email: String,
    pub plan: String,
    /// Which tab is current (`keys`, `usage`, …).
    pub active: &'static str,
    pub csrf: String,
}

impl Chrome {
    pub fn signed_in(user: &super::session::SignedIn, active: &'static str) -> Self {
        Self {
            email: user.email.clone(),
            plan: user.plan.clone(),
            active,
            csrf: user.csrf.clone(),
        }
    }

    pub fn anonymous(csrf: String) -> Self {
        Self {
            email: String::new(),
            plan: String::new(),
            active: "",
            csrf,
        }
    }
}

/// Renders `template` with `status`. Pages are never cached (one shows a key's secret) and
/// never framed; scripts, styles and media come from this origin only (inline `style`
/// attributes draw the usage bars).
pub fn render(status: StatusCode, template: &impl Template) -> Response {
    match template.render() {
        Ok(html) => (
            status,
            [
                (header::CACHE_CONTROL, "no-store"),
                (header::X_FRAME_OPTIONS, "DENY"),
                (header::REFERRER_POLICY, "same-origin"),
                (
                    header::CONTENT_SECURITY_POLICY,
                    "default-src 'self'; style-src 'self' 'unsafe-inline'; \
                     media-src 'self' blob:; frame-ancestors 'none'; form-action 'self'; \
                     base-uri 'none'",
                ),
            ],
            Html(html),
        )
            .into_response(),
        Err(err) => PageError::internal(err).into_response(),
    }
}

pub fn ok(template: &impl Template) -> Response {
    render(StatusCode::OK, template)
}

/// After a form that changed something: back to `to` with a GET (303).
pub fn see_other(to: &str) -> Response {
    Redirect::to(to).into_response()
}

#[derive(Template)]
#[template(path = "console/message.html")]
struct MessagePage<'a> {
    chrome: Chrome,
    title: &'a str,
    message: &'a str,
    link: &'a str,
    link_text: &'a str,
}

/// Why a console request failed, rendered as a page.
#[derive(Debug)]
pub enum PageError {
    /// Not signed in: go to the sign-in page.
    SignIn,
    /// The form's CSRF token is missing or wrong.
    Csrf,
    NotFound,
    /// Too many sign-in attempts; retry after this many seconds.
    TooManyAttempts(u64),
    /// Too many sign-ups from this address or in all; retry after this many seconds.
    TooManySignUps(u64),
    /// The service refused or failed (its detail is safe to show).
    Service(ServiceError),
}

impl PageError {
    pub fn internal(cause: impl std::fmt::Display) -> Self {
        PageError::Service(ServiceError::internal(cause))
    }
}

impl From<ServiceError> for PageError {
    fn from(err: ServiceError) -> Self {
        PageError::Service(err)
    }
}

impl From<sqlx::Error> for PageError {
    fn from(err: sqlx::Error) -> Self {
        PageError::Service(err.into())
    }
}

/// "in 2 minutes (at 14:05 UTC)".
fn when(secs: u64) -> String {
    let at = chrono::Utc::now() + chrono::TimeDelta::seconds(i64::try_from(secs).unwrap_or(0));
    let minutes = secs.div_ceil(60);
    let unit = if minutes == 1 { "minute" } else { "minutes" };
    format!("in {minutes} {unit} (at {} UTC)", at.format("%H:%M"))
}

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        let (status, title, message, link, link_text) = match &self {
            PageError::SignIn => return see_other("/console/sign-in"),
            PageError::Csrf => (
                StatusCode::FORBIDDEN,
                "Form expired",
                "This form was not sent from this console session (its security token is \
                 missing or stale). Go back, reload the page and try again."
                    .to_owned(),
                "/console/keys",
                "Back to the console",
            ),
            PageError::NotFound => (
                StatusCode::NOT_FOUND,
                "Not found",
                "There is no such page, or it is not this account's.".to_owned(),
                "/console/keys",
                "Back to the console",
            ),
            PageError::TooManyAttempts(secs) => (
                StatusCode::TOO_MANY_REQUESTS,
                "Too many sign-in attempts",
                format!(
                    "There were more than 10 password attempts (signing in, changing the \
                     password, deleting the account) for this email or from this address in \
                     15 minutes. Try again {}.",
                    when(*secs)
                ),
                "/console/sign-in",
                "Sign-in page",
            ),
            PageError::TooManySignUps(secs) => (
                StatusCode::TOO_MANY_REQUESTS,
                "Too many sign-ups",
                format!(
                    "Too many accounts were created from this address, or on this deployment, \
                     in the last hour. Try again {}.",
                    when(*secs)
                ),
                "/console/sign-up",
                "Sign-up page",
            ),
            PageError::Service(err) => (
                err.code.status(),
                err.code.title(),
                err.detail.clone(),
                "/console/keys",
                "Back to the console",
            ),
        };
        let page = MessagePage {
            chrome: Chrome::anonymous(String::new()),
            title,
            message: &message,
            link,
            link_text,
        };
        let mut response = render(status, &page);
        let retry_after = match &self {
            PageError::TooManyAttempts(secs) | PageError::TooManySignUps(secs) => Some(*secs),
            PageError::Service(err) => err.retry_after_secs,
            _ => None,
        };
        with_retry_after(&mut response, retry_after);
        response
    }
}

/// `Retry-After` on a page that says to come back later (one refusal, one header, whichever
/// page shows it).
pub fn with_retry_after(response: &mut Response, secs: Option<u64>) {
    if let Some(secs) = secs {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(secs.max(1)));
    }
}

/// The console's rule for a refusal: a client error is shown on the form's page (`Ok`, with the
/// error to show); anything else is the error page.
pub fn shown_on_page(
    err: crate::service::ServiceError,
) -> Result<crate::service::ServiceError, PageError> {
    if err.code.status().is_client_error() {
        Ok(err)
    } else {
        Err(err.into())
    }
}

/// A refusal of an operation on something the account does not have (another account's id,
/// or none): this door's 404 page, like any unknown page; other errors as they are.
pub fn not_owned(err: crate::service::ServiceError) -> PageError {
    match err.code {
        crate::service::ErrorCode::NotFound => PageError::NotFound,
        _ => err.into(),
    }
}
