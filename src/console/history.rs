//! `/console/history`: the account's generations (with a player on the signed link) and its
//! captures, most recent first, paged; a generation's audio and a capture can be deleted here
//! (the core's `service::deletion`, as `DELETE /v1/…` does).

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::response::Response;
use serde::Deserialize;

use super::format_time;
use super::page::{Chrome, PageError, not_owned, ok, see_other};
use super::session::{CsrfForm, CsrfOnly, SignedIn};
use crate::console::ConsoleState;
use crate::domain::GenerationStatus;
use crate::service::usage::{self, HistoryPages};
use crate::service::{Principal, deletion};

pub const PAGE_SIZE: i64 = 20;

pub struct GenerationView {
    pub id: String,
    pub excerpt: String,
    pub voice: String,
    pub status: String,
    pub error: String,
    pub duration: String,
    /// The owner's audio route (`/console/audio/{id}`, relative: works whatever host the
    /// console is reached on); empty without audio.
    pub audio: String,
    pub created: String,
}

pub struct CaptureView {
    pub id: String,
    pub transcript: String,
    pub language: String,
    pub source: String,
    pub duration: String,
    pub created: String,
}

/// Links to the previous and next pages (empty when there is none).
pub struct Pager {
    pub label: String,
    pub prev: String,
    pub next: String,
}

#[derive(Template)]
#[template(path = "console/history.html")]
struct HistoryPage {
    chrome: Chrome,
    generations: Vec<GenerationView>,
    generation_pager: Pager,
    captures: Vec<CaptureView>,
    capture_pager: Pager,
}

#[derive(Deserialize)]
pub struct Pages {
    #[serde(default)]
    page: u32,
    #[serde(default)]
    captures: u32,
}

fn pager(total: i64, current: u32, other: u32, generations: bool) -> Pager {
    let pages = (total + PAGE_SIZE - 1) / PAGE_SIZE;
    let link = |n: u32| {
        if generations {
            format!("/console/history?page={n}&captures={other}")
        } else {
            format!("/console/history?page={other}&captures={n}#captures")
        }
    };
    Pager {
        label: format!("page {} of {}", current + 1, pages.max(1)),
        prev: if current > 0 {
            link(current - 1)
        } else {
            String::new()
        },
        next: if i64::from(current) + 1 < pages {
            link(current + 1)
        } else {
            String::new()
        },
    }
}

fn duration_of(ms: Option<i64>) -> String {
    ms.map(|ms| format!("{:.1} s", ms as f64 / 1000.0))
        .unwrap_or_default()
}

pub async fn history(
    State(state): State<ConsoleState>,
    user: SignedIn,
    Query(pages): Query<Pages>,
) -> Result<Response, PageError> {
    let history = usage::history(
        &state,
        &user.account_id,
        HistoryPages {
            size: PAGE_SIZE,
            generation_offset: i64::from(pages.page) * PAGE_SIZE,
            capture_offset: i64::from(pages.captures) * PAGE_SIZE,
        },
    )
    .await?;
    let total = history.generation_total;
    let generations = history
        .generations
        .into_iter()
        .map(|g| GenerationView {
            audio: if g.status == GenerationStatus::Completed && g.has_audio {
                super::playground::audio_path(&g.id)
            } else {
                String::new()
            },
            id: g.id,
            excerpt: g.excerpt,
            voice: g.voice_name,
            status: g.status.as_str().to_owned(),
            error: g.error.unwrap_or_default(),
            duration: duration_of(g.duration_ms),
            created: format_time(g.created_at),
        })
        .collect();
    let capture_total = history.capture_total;
    let captures = history
        .captures
        .into_iter()
        .map(|c| CaptureView {
            id: c.id,
            transcript: c.transcript_refined,
            language: c.language,
            source: c.source,
            duration: duration_of(Some(c.duration_ms)),
            created: format_time(c.created_at),
        })
        .collect();
    Ok(ok(&HistoryPage {
        chrome: Chrome::signed_in(&user, "history"),
        generations,
        generation_pager: pager(total, pages.page, pages.captures, true),
        captures,
        capture_pager: pager(capture_total, pages.captures, pages.page, false),
    }))
}

/// The console owner's principal for deleting the account's own data (any plan).
fn owner(state: &ConsoleState, user: &SignedIn) -> Result<Principal, PageError> {
    Ok(Principal::console(
        &user.account_id,
        &user.plan,
        &user.features,
        state.console.free,
    )?)
}

/// Deletes a generation's stored audio (`DELETE /v1/generations/{id}/audio`'s core operation).
pub async fn delete_audio(
    State(state): State<ConsoleState>,
    user: SignedIn,
    Path(id): Path<String>,
    CsrfForm(_): CsrfForm<CsrfOnly>,
) -> Result<Response, PageError> {
    let principal = owner(&state, &user)?;
    deletion::delete_generation_audio(&state, &principal, &id)
        .await
        .map_err(not_owned)?;
    Ok(see_other("/console/history"))
}

/// Deletes a capture (`DELETE /v1/captures/{id}`'s core operation).
pub async fn delete_capture(
    State(state): State<ConsoleState>,
    user: SignedIn,
    Path(id): Path<String>,
    CsrfForm(_): CsrfForm<CsrfOnly>,
) -> Result<Response, PageError> {
    let principal = owner(&state, &user)?;
    deletion::delete_capture(&state, &principal, &id)
        .await
        .map_err(not_owned)?;
    Ok(see_other("/console/history#captures"))
}
