//! The developer console under `/console`, and the error pages under `/errors`: server-rendered
//! HTML (askama templates in `templates/`), a small stylesheet and scripts served from here.
//!
//! A thin door like `http/`: pages call the same service and store functions as the API and
//! never hold SQL. Sessions are `tower-sessions` cookies (HttpOnly, SameSite=Lax, Secure when
//! the public base URL is https) with records in PostgreSQL; only the `/console` routes carry
//! the session layer, so `/v1` never sees a cookie. See docs/console.md.

mod account;
mod anonymous;
pub mod error_pages;
mod flash;
mod history;
mod keys;
pub mod limiter;
mod live;
pub mod oauth;
mod page;
mod playground;
mod pronunciations;
mod session;
mod upload;
mod usage;
mod voices;
mod webhooks;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::header;
use std::sync::Arc;

use axum::response::{IntoResponse, Redirect};
use axum::routing::get;
use chrono::{DateTime, Utc};
use tower_sessions::cookie::SameSite;
use tower_sessions::cookie::time::Duration as CookieDuration;
use tower_sessions::{Expiry, SessionManagerLayer};

use crate::domain::Plan;

use limiter::{SignInLimiter, SignUpLimiter};

/// The console's settings (`signup`, `signup_plan`, `billing_contact`), its limiters and keys.
pub struct ConsoleSettings {
    pub signup: bool,
    pub signup_plan: Plan,
    pub billing_contact: String,
    /// Mark the session cookie `Secure` (the public base URL is https).
    pub secure_cookies: bool,
    pub sign_in_limiter: SignInLimiter,
    pub sign_up_limiter: SignUpLimiter,
    /// Bounds the Argon2 work of sign-up, sign-in and password change.
    pub passwords: crate::service::accounts::PasswordGate,
    /// MAC key of the anonymous CSRF tokens (derived from the signing secret).
    pub csrf_key: [u8; 32],
    /// Sealing key of the one-time flash of a new key's secret (derived from the signing secret).
    pub flash_key: [u8; 32],
    /// Cloning's caps (`max_cloned_voices_per_account`, `max_clones_per_account_per_month`).
    pub clone_limits: crate::service::cloning::CloneLimits,
    /// Live API keys one account may hold (`max_keys_per_account`).
    pub max_keys: u32,
    /// The app's free use of an account without a plan (`app_free_minutes`,
    /// `app_free_transcription_minutes`).
    pub free: crate::service::principal::FreeAllowance,
}

/// What console pages hold: the core, and the console's own settings.
#[derive(Clone)]
pub struct ConsoleState {
    pub core: crate::service::Core,
    pub console: Arc<ConsoleSettings>,
}

impl std::ops::Deref for ConsoleState {
    type Target = crate::service::Core;

    fn deref(&self) -> &crate::service::Core {
        &self.core
    }
}

/// Name of the session cookie.
pub const SESSION_COOKIE: &str = "voiced_session";
/// A session ends after this long without a request.
pub const SESSION_IDLE_DAYS: i64 = 7;

/// The `/console` and `/errors` routes, merged into the application by `app::router`.
pub fn router(state: ConsoleState) -> Router {
    let sessions = SessionManagerLayer::new(crate::service::accounts::session_store(&state))
        .with_name(SESSION_COOKIE)
        .with_http_only(true)
        .with_same_site(SameSite::Lax)
        .with_secure(state.console.secure_cookies)
        .with_path("/console")
        .with_expiry(Expiry::OnInactivity(CookieDuration::days(
            SESSION_IDLE_DAYS,
        )));
    let pages = Router::new()
        .route("/console", get(|| async { Redirect::to("/console/keys") }))
        .route(
            "/console/sign-in",
            get(account::sign_in_page).post(account::sign_in),
        )
        .route(
            "/console/sign-up",
            get(account::sign_up_page).post(account::sign_up),
        )
        .route("/console/sign-out", axum::routing::post(account::sign_out))
        .route("/console/account", get(account::account_page))
        .route(
            "/console/account/password",
            axum::routing::post(account::change_password),
        )
        .route(
            "/console/account/delete",
            axum::routing::post(account::delete_account),
        )
        .route("/console/keys", get(keys::list).post(keys::create))
        .route(
            "/console/keys/{key_id}/revoke",
            get(keys::confirm_revoke).post(keys::revoke),
        )
        .route(
            "/console/keys/{key_id}/ceiling",
            axum::routing::post(keys::set_ceiling),
        )
        .route("/console/usage", get(usage::usage))
        .route("/console/billing", get(usage::billing))
        .route("/console/voices", get(voices::list).post(voices::add))
        .route(
            "/console/voices/clone",
            axum::routing::post(voices::clone)
                .layer(DefaultBodyLimit::max(voices::CLONE_BODY_LIMIT)),
        )
        .route(
            "/console/voices/{voice_id}",
            axum::routing::post(voices::update),
        )
        .route(
            "/console/voices/{voice_id}/delete",
            axum::routing::post(voices::delete),
        )
        .route("/console/history", get(history::history))
        .route(
            "/console/history/generations/{id}/delete-audio",
            axum::routing::post(history::delete_audio),
        )
        .route(
            "/console/history/captures/{id}/delete",
            axum::routing::post(history::delete_capture),
        )
        .route(
            "/console/playground",
            get(playground::show).post(playground::speak),
        )
        .route(
            "/console/playground/preview",
            axum::routing::post(playground::preview),
        )
        .route("/console/audio/{id}", get(playground::audio))
        .route("/console/playground/listen", get(live::listen))
        .route(
            "/console/playground/stream",
            axum::routing::post(playground::stream),
        )
        .route(
            "/console/playground/transcribe",
            axum::routing::post(playground::transcribe)
                .layer(DefaultBodyLimit::max(playground::TRANSCRIBE_BODY_LIMIT)),
        )
        .route(
            "/console/pronunciations",
            get(pronunciations::list).post(pronunciations::create),
        )
        .route(
            "/console/pronunciations/{id}/delete",
            axum::routing::post(pronunciations::delete),
        )
        .route(
            "/console/webhooks",
            get(webhooks::list).post(webhooks::create),
        )
        .route(
            "/console/webhooks/{endpoint_id}/delete",
            axum::routing::post(webhooks::delete),
        )
        .route(
            "/console/webhooks/{endpoint_id}/rotate",
            axum::routing::post(webhooks::rotate),
        )
        .route(
            "/console/webhooks/deliveries/{delivery_id}/resend",
            axum::routing::post(webhooks::resend),
        )
        .route(oauth::CONSENT_PATH, get(oauth::consent).post(oauth::decide))
        .route("/console/applications", get(oauth::applications))
        .route(
            "/console/applications/{id}/revoke",
            axum::routing::post(oauth::revoke),
        )
        .route(
            "/console/{*rest}",
            axum::routing::any(|| async { page::PageError::NotFound }),
        )
        .layer(sessions);
    Router::new()
        .merge(pages)
        .route("/assets/console.css", get(stylesheet))
        .route("/assets/console.js", get(script))
        .route("/assets/live-worklet.js", get(worklet))
        .route("/errors", get(error_pages::list))
        .route("/errors/{code}", get(error_pages::page))
        .with_state(state)
}

async fn stylesheet() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=3600"),
        ],
        include_str!("../../templates/assets/console.css"),
    )
}

async fn script() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=3600"),
        ],
        include_str!("../../templates/assets/console.js"),
    )
}

/// The playground's live panel's AudioWorklet (the microphone downsampled to 16 kHz 16-bit
/// PCM); a file of this origin, as the content security policy wants worklets.
async fn worklet() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=3600"),
        ],
        include_str!("../../templates/assets/live-worklet.js"),
    )
}

/// Milliseconds of audio for people: seconds under a minute ("4.2 s"), else minutes ("1.5 min").
pub fn format_minutes(ms: i64) -> String {
    if ms < 60_000 {
        format!("{:.1} s", ms as f64 / 1000.0)
    } else {
        format!("{:.1} min", ms as f64 / 60_000.0)
    }
}

/// A timestamp as the pages show it (UTC, to the minute).
pub fn format_time(at: DateTime<Utc>) -> String {
    at.format("%Y-%m-%d %H:%M UTC").to_string()
}
