//! Who is signed in, and the CSRF token every state-changing form carries.
//!
//! The session (a `tower-sessions` cookie, records in PostgreSQL) holds the account id once
//! signed in and a random CSRF token from the first page on. Every POST handler checks the
//! form's `csrf_token` against the session's in constant time before doing anything.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand::RngCore;
use subtle::ConstantTimeEq;
use tower_sessions::Session;

use super::page::PageError;
use crate::console::ConsoleState;
use crate::service::accounts;

const ACCOUNT_KEY: &str = "account_id";
const CSRF_KEY: &str = "csrf_token";
/// SHA-256 (hex) of the OAuth authorization requests whose consent page this session was
/// shown and has not answered yet, newest last.
const CONSENTS_KEY: &str = "oauth_consents";
/// Consent pages one session may have open at once (tabs); older ones are forgotten.
const MAX_CONSENTS: usize = 4;

fn consent_digest(request: &str) -> String {
    use sha2::{Digest, Sha256};
    format!("{:x}", Sha256::digest(request.as_bytes()))
}

/// Records that this session was shown the consent page of `request` (its query string), so
/// that its answer, and only its answer, may go back to the client's redirect URI.
pub async fn remember_consent(session: &Session, request: &str) -> Result<(), PageError> {
    let digest = consent_digest(request);
    let mut shown = session
        .get::<Vec<String>>(CONSENTS_KEY)
        .await
        .map_err(PageError::internal)?
        .unwrap_or_default();
    shown.retain(|d| *d != digest);
    shown.push(digest);
    if shown.len() > MAX_CONSENTS {
        shown.drain(..shown.len() - MAX_CONSENTS);
    }
    session
        .insert(CONSENTS_KEY, shown)
        .await
        .map_err(PageError::internal)
}

/// Whether this session was shown the consent page of `request` and has not answered it yet;
/// the answer is spent either way (one answer per page shown).
pub async fn take_consent(session: &Session, request: &str) -> Result<bool, PageError> {
    let digest = consent_digest(request);
    let mut shown = session
        .get::<Vec<String>>(CONSENTS_KEY)
        .await
        .map_err(PageError::internal)?
        .unwrap_or_default();
    let before = shown.len();
    shown.retain(|d| *d != digest);
    if shown.len() == before {
        return Ok(false);
    }
    session
        .insert(CONSENTS_KEY, shown)
        .await
        .map_err(PageError::internal)?;
    Ok(true)
}

/// The session's CSRF token, created on first use. The one helper forms get their token from.
pub async fn csrf_token(session: &Session) -> Result<String, PageError> {
    if let Some(token) = session
        .get::<String>(CSRF_KEY)
        .await
        .map_err(PageError::internal)?
    {
        return Ok(token);
    }
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    let token = URL_SAFE_NO_PAD.encode(bytes);
    session
        .insert(CSRF_KEY, &token)
        .await
        .map_err(PageError::internal)?;
    Ok(token)
}

/// The form of an action that sends nothing but its CSRF token (delete, revoke, sign out, …):
/// the one declaration every console page uses.
#[derive(serde::Deserialize)]
pub struct CsrfOnly {
    #[serde(default)]
    pub csrf_token: String,
}

/// A signed-in console form, its `csrf_token` checked against the session before the handler
/// runs (403 page when it is missing or is not this session's): the one CSRF rule of the
/// console's forms. The form type `T` declares only its own fields.
pub struct CsrfForm<T>(pub T);

impl<S, T> axum::extract::FromRequest<S> for CsrfForm<T>
where
    S: Send + Sync,
    T: serde::de::DeserializeOwned,
{
    type Rejection = axum::response::Response;

    async fn from_request(
        request: axum::extract::Request,
        state: &S,
    ) -> Result<Self, Self::Rejection> {
        use axum::extract::FromRequestParts;
        use axum::response::IntoResponse;
        let (mut parts, body) = request.into_parts();
        let session = Session::from_request_parts(&mut parts, state)
            .await
            .map_err(IntoResponse::into_response)?;
        // Read once; the token's form and the handler's form are both parsed from the bytes.
        let bytes = axum::body::Bytes::from_request(
            axum::extract::Request::from_parts(parts.clone(), body),
            state,
        )
        .await
        .map_err(IntoResponse::into_response)?;
        let again = |bytes: &axum::body::Bytes| {
            axum::extract::Request::from_parts(parts.clone(), axum::body::Body::from(bytes.clone()))
        };
        let axum::Form(CsrfOnly { csrf_token }) = axum::Form::from_request(again(&bytes), state)
            .await
            .map_err(IntoResponse::into_response)?;
        check_csrf(&session, &csrf_token)
            .await
            .map_err(IntoResponse::into_response)?;
        let axum::Form(form) = axum::Form::from_request(again(&bytes), state)
            .await
            .map_err(IntoResponse::into_response)?;
        Ok(CsrfForm(form))
    }
}

/// Refuses (403 page) a form whose `csrf_token` is missing or is not this session's.
pub async fn check_csrf(session: &Session, presented: &str) -> Result<(), PageError> {
    let expected = session
        .get::<String>(CSRF_KEY)
        .await
        .map_err(PageError::internal)?;
    match expected {
        Some(expected)
            if !presented.is_empty()
                && bool::from(expected.as_bytes().ct_eq(presented.as_bytes())) =>
        {
            Ok(())
        }
        _ => Err(PageError::Csrf),
    }
}

/// Signs the session in as `account_id` under a new session id (no session fixation).
pub async fn sign_in(session: &Session, account_id: &str) -> Result<(), PageError> {
    session.cycle_id().await.map_err(PageError::internal)?;
    session
        .insert(ACCOUNT_KEY, account_id)
        .await
        .map_err(PageError::internal)
}

/// Ends the session: its record is deleted and the cookie cleared.
pub async fn sign_out(session: &Session) -> Result<(), PageError> {
    session.flush().await.map_err(PageError::internal)
}

/// A signed-in account, with what every page header shows. Pages that take it send visitors
/// who are not signed in to the sign-in page.
pub struct SignedIn {
    pub session: Session,
    pub account_id: String,
    pub email: String,
    pub plan: String,
    pub features: Vec<String>,
    pub csrf: String,
}

impl FromRequestParts<ConsoleState> for SignedIn {
    type Rejection = PageError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &ConsoleState,
    ) -> Result<Self, PageError> {
        let session = Session::from_request_parts(parts, state)
            .await
            .map_err(|(_, msg)| PageError::internal(msg))?;
        let account_id = session
            .get::<String>(ACCOUNT_KEY)
            .await
            .map_err(PageError::internal)?
            .ok_or(PageError::SignIn)?;
        let Some(account) = accounts::current(state, &account_id).await? else {
            // The account is gone: the session means nothing any more.
            let _ = session.flush().await;
            return Err(PageError::SignIn);
        };
        // Every form the account sends counts against its own write quota (`console:` key).
        if parts.method == axum::http::Method::POST {
            crate::service::rates::console_action(state, &account_id).await?;
        }
        let csrf = csrf_token(&session).await?;
        Ok(SignedIn {
            session,
            account_id,
            email: account.email,
            plan: account.plan,
            features: account.features,
            csrf,
        })
    }
}
