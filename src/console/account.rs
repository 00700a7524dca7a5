//! Sign-up, sign-in, sign-out and the password of the signed-in account.
//!
//! The sign-in and sign-up pages store nothing: their forms carry an anonymous CSRF token
//! (`anonymous`), and the session row is made when a sign-in or sign-up succeeds. Sign-ups are
//! limited per client address and in all (`limiter::SignUpLimiter`), and every password hash
//! waits for a turn of `service::accounts::PasswordGate`.

use askama::Template;
use axum::Form;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde::Deserialize;
use tower_sessions::Session;

use super::anonymous::AnonymousCsrf;
use super::page::{Chrome, PageError, ok, render, see_other};
use super::session::{self, CsrfForm, CsrfOnly, SignedIn, check_csrf};
use crate::console::ConsoleState;
use crate::http::client_addr::ClientAddr;
use crate::limits::quota::retry_after_secs;
use crate::service::{accounts, deletion};

#[derive(Template)]
#[template(path = "console/sign_in.html")]
struct SignInPage {
    chrome: Chrome,
    email: String,
    error: String,
    /// A notice above the form (the account was just deleted).
    notice: String,
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
    /// Why the deletion form was refused.
    delete_error: String,
}

#[derive(Deserialize)]
pub struct DeleteAccount {
    #[serde(default)]
    password: String,
    #[serde(default)]
    confirm: String,
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

/// `?next=` of the sign-in and sign-up pages (and `?deleted=1` of the sign-in page after an
/// account deletion).
#[derive(Deserialize)]
pub struct Next {
    #[serde(default)]
    next: String,
    #[serde(default)]
    deleted: Option<String>,
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
pub struct PasswordChange {
    #[serde(default)]
    current_password: String,
    #[serde(default)]
    new_password: String,
}

/// `?changed=1` of the account page: the password change it redirected from succeeded.
#[derive(Deserialize)]
pub struct Changed {
    #[serde(default)]
    changed: Option<String>,
}

pub async fn sign_in_page(
    State(state): State<ConsoleState>,
    csrf: AnonymousCsrf,
    Query(next): Query<Next>,
) -> Result<Response, PageError> {
    let notice = if next.deleted.is_some() {
        "Your account was deleted. Its keys and sessions have ended, and its data is being removed."
            .to_owned()
    } else {
        String::new()
    };
    Ok(csrf.attach(ok(&SignInPage {
        chrome: Chrome::anonymous(csrf.token()),
        email: String::new(),
        error: String::new(),
        notice,
        signup: state.console.signup,
        next: kept_next(&next.next),
    })))
}

/// Wrong email and wrong password get the same page after the same work
/// (`service::accounts::sign_in`).
pub async fn sign_in(
    State(state): State<ConsoleState>,
    ClientAddr(client): ClientAddr,
    csrf: AnonymousCsrf,
    session: Session,
    Form(form): Form<Credentials>,
) -> Result<Response, PageError> {
    csrf.check(&form.csrf_token)?;
    if let Err(wait) = state
        .console
        .sign_in_limiter
        .check(&form.email, client)
        .await
    {
        return Err(PageError::TooManyAttempts(retry_after_secs(wait)));
    }
    let signed_in =
        accounts::sign_in(&state, &state.console.passwords, &form.email, form.password).await?;
    match signed_in {
        Some(account_id) => {
            session::sign_in(&session, &account_id).await?;
            Ok(see_other(after_sign_in(&form.next)))
        }
        None => Ok(render(
            StatusCode::UNAUTHORIZED,
            &SignInPage {
                chrome: Chrome::anonymous(csrf.token()),
                email: form.email.trim().to_owned(),
                error: "That email and password do not match an account.".into(),
                notice: String::new(),
                signup: state.console.signup,
                next: kept_next(&form.next),
            },
        )),
    }
}

pub async fn sign_up_page(
    State(state): State<ConsoleState>,
    csrf: AnonymousCsrf,
    Query(next): Query<Next>,
) -> Result<Response, PageError> {
    if !state.console.signup {
        return Err(signup_closed());
    }
    Ok(csrf.attach(ok(&SignUpPage {
        chrome: Chrome::anonymous(csrf.token()),
        email: String::new(),
        error: String::new(),
        min_chars: accounts::MIN_PASSWORD_CHARS,
        next: kept_next(&next.next),
    })))
}

fn signup_closed() -> PageError {
    PageError::Service(crate::service::ServiceError::new(
        crate::service::ErrorCode::NotFound,
        "Sign-up is closed on this deployment; ask its operator for an account.",
    ))
}

/// Checks the form, counts the sign-up against the client address and everyone (429 page, no
/// account made, when either is spent), then hashes the password and makes the account.
pub async fn sign_up(
    State(state): State<ConsoleState>,
    ClientAddr(client): ClientAddr,
    csrf: AnonymousCsrf,
    session: Session,
    Form(form): Form<Credentials>,
) -> Result<Response, PageError> {
    csrf.check(&form.csrf_token)?;
    if !state.console.signup {
        return Err(signup_closed());
    }
    let checked = accounts::check_sign_up(&form.email, &form.password);
    let created = match checked {
        Ok(()) => {
            if let Err(wait) = state.console.sign_up_limiter.check(client).await {
                return Err(PageError::TooManySignUps(retry_after_secs(wait)));
            }
            accounts::sign_up(
                &state,
                &state.console.passwords,
                &form.email,
                form.password,
                state.console.signup_plan,
            )
            .await
        }
        Err(err) => Err(err),
    };
    match created {
        Ok(account_id) => {
            session::sign_in(&session, &account_id).await?;
            Ok(see_other(after_sign_in(&form.next)))
        }
        Err(err) if err.param.is_some() => Ok(render(
            StatusCode::BAD_REQUEST,
            &SignUpPage {
                chrome: Chrome::anonymous(csrf.token()),
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

pub async fn account_page(
    user: SignedIn,
    Query(changed): Query<Changed>,
) -> Result<Response, PageError> {
    let notice = if changed.changed.is_some() {
        "Password changed. Every other session of this account was signed out.".to_owned()
    } else {
        String::new()
    };
    Ok(ok(&AccountPage {
        chrome: Chrome::signed_in(&user, "account"),
        error: String::new(),
        notice,
        min_chars: accounts::MIN_PASSWORD_CHARS,
        delete_error: String::new(),
    }))
}

/// A form that re-enters the password (change it, delete the account) is a sign-in attempt
/// too: it counts in the sign-in limiter under the account's email, before the password is
/// checked, so a stolen session cannot guess the password faster than the sign-in form allows
/// (429 page with `Retry-After` beyond). Not under the client address: a session can only guess
/// its own account's password, which the email's count bounds already, and the address's count
/// is the one that people behind one address (an office, a NAT) share for signing in.
async fn password_attempt(state: &ConsoleState, user: &SignedIn) -> Result<(), PageError> {
    state
        .console
        .sign_in_limiter
        .check(&user.email, None)
        .await
        .map_err(|wait| PageError::TooManyAttempts(retry_after_secs(wait)))
}

/// A changed password signs out every other session of the account and answers with a
/// redirect to the account page (a reload does not post the form again); a refused change
/// shows the page with the reason and changes nothing.
pub async fn change_password(
    State(state): State<ConsoleState>,
    user: SignedIn,
    CsrfForm(form): CsrfForm<PasswordChange>,
) -> Result<Response, PageError> {
    password_attempt(&state, &user).await?;
    let current_session = user
        .session
        .id()
        .map(|id| id.to_string())
        .ok_or_else(|| PageError::internal("a signed-in session without an id"))?;
    let outcome = accounts::change_password(
        &state,
        &state.console.passwords,
        &user.account_id,
        &current_session,
        form.current_password,
        form.new_password,
    )
    .await;
    let error = match outcome {
        Ok(true) => return Ok(see_other("/console/account?changed=1")),
        Ok(false) => "The current password is not right.".to_owned(),
        Err(err) if err.param.is_some() => err.detail,
        Err(err) => return Err(err.into()),
    };
    Ok(render(
        StatusCode::BAD_REQUEST,
        &AccountPage {
            chrome: Chrome::signed_in(&user, "account"),
            error,
            notice: String::new(),
            min_chars: accounts::MIN_PASSWORD_CHARS,
            delete_error: String::new(),
        },
    ))
}

/// `POST /console/account/delete`: with the password re-entered and the deletion confirmed,
/// deletes the account (`service::deletion::delete_account`: keys, tokens and sessions end at
/// once; content and audio are removed in the background) and signs out. A wrong password or
/// a missing confirmation shows the page again with the reason and changes nothing.
pub async fn delete_account(
    State(state): State<ConsoleState>,
    user: SignedIn,
    CsrfForm(form): CsrfForm<DeleteAccount>,
) -> Result<Response, PageError> {
    let delete_error = if form.confirm != "yes" {
        "Tick the box to confirm that everything in this account is to be deleted.".to_owned()
    } else {
        password_attempt(&state, &user).await?;
        match deletion::delete_account(
            &state,
            &state.console.passwords,
            &user.account_id,
            form.password,
        )
        .await
        {
            Ok(true) => {
                session::sign_out(&user.session).await?;
                return Ok(see_other("/console/sign-in?deleted=1"));
            }
            Ok(false) => "The password is not right; nothing was deleted.".to_owned(),
            Err(err) => return Err(err.into()),
        }
    };
    Ok(render(
        StatusCode::BAD_REQUEST,
        &AccountPage {
            chrome: Chrome::signed_in(&user, "account"),
            error: String::new(),
            notice: String::new(),
            min_chars: accounts::MIN_PASSWORD_CHARS,
            delete_error,
        },
    ))
}
