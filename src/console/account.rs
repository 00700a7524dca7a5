//! Sign-up, sign-in, sign-out and the password of the signed-in account.

use std::net::SocketAddr;

use askama::Template;
use axum::Form;
use axum::extract::{ConnectInfo, Query, State};
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::Response;
use serde::Deserialize;
use tower_sessions::Session;

use super::page::{Chrome, PageError, ok, render, see_other};
use super::session::{self, SignedIn, check_csrf, csrf_token};
use crate::http::AppState;
use crate::service::accounts;

#[derive(Template)]
#[template(path = "console/sign_in.html")]
struct SignInPage {
    chrome: Chrome,
    email: String,
    error: String,
    signup: bool,
    /// Where to go once signed in (an OAuth consent page), or empty.
    next: String,
}

#[derive(Template)]
#[template(path = "console/sign_up.html")]
struct SignUpPage {
    chrome: Chrome,
    email: String,
    error: String,
    min_chars: usize,
    next: String,
}

#[derive(Template)]
#[template(path = "console/account.html")]
struct AccountPage {
    chrome: Chrome,
    error: String,
    notice: String,
    min_chars: usize,
}

#[derive(Deserialize)]
pub struct Credentials {
    #[serde(default)]
    email: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    csrf_token: String,
    #[serde(default)]
    next: String,
}

/// `?next=` of the sign-in and sign-up pages.
#[derive(Deserialize)]
pub struct Next {
    #[serde(default)]
    next: String,
}

/// Where to go after signing in: `next` when it is an OAuth consent page of this console (the
/// authorization flow signs in on the way), else the keys page. Nothing else is followed, so
/// `next` cannot send anyone off-site.
pub fn after_sign_in(next: &str) -> &str {
    let safe = next.starts_with(super::oauth::CONSENT_PATH)
        && next[super::oauth::CONSENT_PATH.len()..].starts_with('?')
        && next.bytes().all(|b| b.is_ascii_graphic() && b != b'\\');
    if safe { next } else { "/console/keys" }
}

fn kept_next(next: &str) -> String {
    match after_sign_in(next) {
        "/console/keys" => String::new(),
        safe => safe.to_owned(),
    }
}

#[derive(Deserialize)]
pub struct CsrfOnly {
    #[serde(default)]
    csrf_token: String,
}

#[derive(Deserialize)]
pub struct PasswordChange {
    #[serde(default)]
    current_password: String,
    #[serde(default)]
    new_password: String,
    #[serde(default)]
    csrf_token: String,
}

/// The client's address, when the server knows it (always, when served by `http::serve`).
pub struct ClientAddr(pub Option<std::net::IpAddr>);

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for ClientAddr {
    type Rejection = std::convert::Infallible;
    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(ClientAddr(
            parts
                .extensions
                .get::<ConnectInfo<SocketAddr>>()
                .map(|info| info.0.ip()),
        ))
    }
}

pub async fn sign_in_page(
    State(state): State<AppState>,
    session: Session,
    Query(next): Query<Next>,
) -> Result<Response, PageError> {
    Ok(ok(&SignInPage {
        chrome: Chrome::anonymous(csrf_token(&session).await?),
        email: String::new(),
        error: String::new(),
        signup: state.console.signup,
        next: kept_next(&next.next),
    }))
}

/// Wrong email and wrong password get the same page after the same work
/// (`service::accounts::sign_in`).
pub async fn sign_in(
    State(state): State<AppState>,
    ClientAddr(client): ClientAddr,
    session: Session,
    Form(form): Form<Credentials>,
) -> Result<Response, PageError> {
    check_csrf(&session, &form.csrf_token).await?;
    if let Err(wait) = state
        .console
        .sign_in_limiter
        .check(&form.email, client)
        .await
    {
        return Err(PageError::TooManyAttempts(
            wait.as_secs() + u64::from(wait.subsec_nanos() > 0),
        ));
    }
    match accounts::sign_in(&state.pool, &form.email, form.password).await? {
        Some(account_id) => {
            session::sign_in(&session, &account_id).await?;
            Ok(see_other(after_sign_in(&form.next)))
        }
        None => Ok(render(
            StatusCode::UNAUTHORIZED,
            &SignInPage {
                chrome: Chrome::anonymous(csrf_token(&session).await?),
                email: form.email.trim().to_owned(),
                error: "That email and password do not match an account.".into(),
                signup: state.console.signup,
                next: kept_next(&form.next),
            },
        )),
    }
}

pub async fn sign_up_page(
    State(state): State<AppState>,
    session: Session,
    Query(next): Query<Next>,
) -> Result<Response, PageError> {
    if !state.console.signup {
        return Err(signup_closed());
    }
    Ok(ok(&SignUpPage {
        chrome: Chrome::anonymous(csrf_token(&session).await?),
        email: String::new(),
        error: String::new(),
        min_chars: accounts::MIN_PASSWORD_CHARS,
        next: kept_next(&next.next),
    }))
}

fn signup_closed() -> PageError {
    PageError::Service(crate::service::ServiceError::new(
        crate::service::ErrorCode::NotFound,
        "Sign-up is closed on this deployment; ask its operator for an account.",
    ))
}

pub async fn sign_up(
    State(state): State<AppState>,
    session: Session,
    Form(form): Form<Credentials>,
) -> Result<Response, PageError> {
    check_csrf(&session, &form.csrf_token).await?;
    if !state.console.signup {
        return Err(signup_closed());
    }
    match accounts::sign_up(
        &state.pool,
        &form.email,
        form.password,
        state.console.signup_plan,
    )
    .await
    {
        Ok(account_id) => {
            session::sign_in(&session, &account_id).await?;
            Ok(see_other(after_sign_in(&form.next)))
        }
        Err(err) if err.param.is_some() => Ok(render(
            StatusCode::BAD_REQUEST,
            &SignUpPage {
                chrome: Chrome::anonymous(csrf_token(&session).await?),
                email: form.email.trim().to_owned(),
                error: err.detail,
                min_chars: accounts::MIN_PASSWORD_CHARS,
                next: kept_next(&form.next),
            },
        )),
        Err(err) => Err(err.into()),
    }
}

pub async fn sign_out(session: Session, Form(form): Form<CsrfOnly>) -> Result<Response, PageError> {
    check_csrf(&session, &form.csrf_token).await?;
    session::sign_out(&session).await?;
    Ok(see_other("/console/sign-in"))
}

pub async fn account_page(user: SignedIn) -> Result<Response, PageError> {
    Ok(ok(&AccountPage {
        chrome: Chrome::signed_in(&user, "account"),
        error: String::new(),
        notice: String::new(),
        min_chars: accounts::MIN_PASSWORD_CHARS,
    }))
}

pub async fn change_password(
    State(state): State<AppState>,
    user: SignedIn,
    Form(form): Form<PasswordChange>,
) -> Result<Response, PageError> {
    check_csrf(&user.session, &form.csrf_token).await?;
    let outcome = accounts::change_password(
        &state.pool,
        &user.account_id,
        form.current_password,
        form.new_password,
    )
    .await;
    let (status, error, notice) = match outcome {
        Ok(true) => (
            StatusCode::OK,
            String::new(),
            "Password changed.".to_owned(),
        ),
        Ok(false) => (
            StatusCode::BAD_REQUEST,
            "The current password is not right.".to_owned(),
            String::new(),
        ),
        Err(err) if err.param.is_some() => (StatusCode::BAD_REQUEST, err.detail, String::new()),
        Err(err) => return Err(err.into()),
    };
    Ok(render(
        status,
        &AccountPage {
            chrome: Chrome::signed_in(&user, "account"),
            error,
            notice,
            min_chars: accounts::MIN_PASSWORD_CHARS,
        },
    ))
}
