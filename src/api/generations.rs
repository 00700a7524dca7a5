//! `GET /v1/generations`, `GET /v1/generations/{generationId}` and
//! `POST /v1/generations/{generationId}/cancel`.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};

use super::docs;
use super::reads::{CaptionFormatParam, caption_format, page_bound};
use crate::domain::{GenerationId, GenerationStatus, Page};
use crate::http::auth::Principal;
use crate::http::error::ApiError;
use crate::http::models::{Generation, GenerationList, GenerationStatusFilter, Problem};
use crate::service::delivery::{self, Cancelled};
use crate::service::principal_cache::CredentialCheck;
use crate::service::views::ListFilter;
use crate::service::{Core, deletion, reads};

/// Checks a path id's length ([`GenerationId`]); ids beyond it are refused rather than looked
/// up.
pub fn check_id(id: &str) -> Result<(), ApiError> {
    GenerationId::parse(id, "generationId")
        .map(drop)
        .map_err(|message| ApiError::invalid("generationId", message))
}

/// Polls a generation. Once completed it carries a fresh signed `audio_url`.
#[utoipa::path(get, path = "/v1/generations/{generationId}", tag = "speech",
    security(("api_key" = []), ("bearer" = [])),
    params(("generationId" = String, Path, min_length = 1, max_length = 200, description = "Id returned by speech creation")),
    responses(
        (status = 200, description = "The generation", body = Generation),
        docs::Read, docs::BadId, docs::NoSuchGeneration,
    ))]
pub async fn get_generation(
    State(state): State<Core>,
    Extension(principal): Extension<Arc<Principal>>,
    Extension(check): Extension<Arc<CredentialCheck>>,
    Path(id): Path<String>,
) -> Result<Json<Generation>, ApiError> {
    check_id(&id)?;
    let row = reads::generation(&state, &principal, Some(&check), &id).await?;
    Ok(Json(Generation::present(&state, row)))
}

/// Lists the account's generations, newest first, optionally only those with one `status` or
/// of one voice.
#[utoipa::path(get, path = "/v1/generations", tag = "speech",
    security(("api_key" = []), ("bearer" = [])),
    params(
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 200, description = "Page size, default 50"),
        ("offset" = Option<i64>, Query, minimum = 0, maximum = 9007199254740991_i64, description = "Generations to skip, default 0"),
        ("status" = Option<GenerationStatusFilter>, Query, description = "Only generations with this status"),
        ("voice" = Option<String>, Query, min_length = 1, max_length = 200, description = "Only generations of this voice profile, by id or name (an unknown one matches nothing)"),
    ),
    responses(
        (status = 200, description = "One page of generations, newest first; each item is what GET /v1/generations/{generationId} returns", body = GenerationList),
        (status = 400, description = "`invalid_request` (`param` names limit, offset, status or voice)", body = Problem, content_type = "application/problem+json"),
        docs::Read,
    ))]
pub async fn list_generations(
    State(state): State<Core>,
    Extension(principal): Extension<Arc<Principal>>,
    Extension(check): Extension<Arc<CredentialCheck>>,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Json<GenerationList>, ApiError> {
    let limit = page_bound(&query, Page::LIMIT)?;
    let offset = page_bound(&query, Page::OFFSET)?;
    let status = query
        .get("status")
        .map(|raw| {
            raw.parse::<GenerationStatus>().map_err(|_| {
                ApiError::invalid("status", "status must be generating, completed or failed")
            })
        })
        .transpose()?;
    let voice = query.get("voice").map(String::as_str);
    let filter = ListFilter { status, voice };
    let page = reads::generations(&state, &principal, Some(&check), filter, limit, offset).await?;
    Ok(Json(GenerationList {
        data: page
            .rows
            .into_iter()
            .map(|row| Generation::present(&state, row))
            .collect(),
        total: page.total,
        limit,
        offset,
    }))
}

/// Cancels a generation: a queued one never runs, a running one stops inside the piece it is
/// rendering. It ends `failed` with `error: "cancelled: by request"`; nothing is charged.
#[utoipa::path(post, path = "/v1/generations/{generationId}/cancel", tag = "speech",
    security(("api_key" = []), ("bearer" = [])),
    params(("generationId" = String, Path, min_length = 1, max_length = 200, description = "Id returned by speech creation")),
    responses(
        (status = 200, description = "Cancelled: the generation, now `failed` with `error: \"cancelled: by request\"` (also when it had already been cancelled)", body = Generation),
        (status = 202, description = "Its worker was told and has not stopped within 5 s: the generation, still `generating`; poll it", body = Generation),
        (status = 409, description = "`generation_finished`: it had already completed or failed", body = Problem, content_type = "application/problem+json"),
        docs::Write, docs::BadId, docs::NoSuchGeneration,
    ))]
pub async fn cancel_generation(
    State(state): State<Core>,
    Extension(principal): Extension<Arc<Principal>>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    check_id(&id)?;
    Ok(
        match delivery::cancel_by_request(&state, &principal, &id).await? {
            Cancelled::Stopped(row) => Json(Generation::present(&state, row)).into_response(),
            Cancelled::Stopping(row) => {
                (StatusCode::ACCEPTED, Json(Generation::present(&state, row))).into_response()
            }
        },
    )
}

/// Captions of generated speech, from its word timestamps (asked for with
/// `timestamps: "word"`): cues of up to seven words and 42 characters.
#[utoipa::path(get, path = "/v1/generations/{generationId}/captions", tag = "speech",
    security(("api_key" = []), ("bearer" = [])),
    params(
        ("generationId" = String, Path, min_length = 1, max_length = 200, description = "Id returned by speech creation"),
        ("format" = inline(Option<CaptionFormatParam>), Query, description = "`vtt` (WebVTT, default) or `srt` (SubRip)"),
    ),
    responses(
        (status = 200, description = "The captions", content(
            (String = "text/vtt"),
            (String = "application/x-subrip"),
        )),
        (status = 400, description = "`invalid_request` (`param: format`: not `srt` or `vtt`; `param: generationId`: longer than 200 characters)", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "`timestamps_unavailable`: asked for without timestamps, failed, or still generating", body = Problem, content_type = "application/problem+json"),
        docs::Read, docs::NoSuchGeneration,
    ))]
pub async fn get_generation_captions(
    State(state): State<Core>,
    Extension(principal): Extension<Arc<Principal>>,
    Extension(check): Extension<Arc<CredentialCheck>>,
    Path(id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Response, ApiError> {
    check_id(&id)?;
    let format = caption_format(&query)?;
    let text = reads::generation_captions(&state, &principal, Some(&check), &id, format).await?;
    Ok(([(header::CONTENT_TYPE, format.content_type())], text).into_response())
}

/// Deletes a finished generation's stored audio from the blob store that holds it. The
/// generation stays (for history and metering) with `has_audio` false and no `audio_url`;
/// deleting audio already gone succeeds.
#[utoipa::path(delete, path = "/v1/generations/{generationId}/audio", tag = "speech",
    security(("api_key" = []), ("bearer" = [])),
    params(("generationId" = String, Path, min_length = 1, max_length = 200, description = "Id returned by speech creation")),
    responses(
        (status = 204, description = "The audio is deleted"),
        (status = 409, description = "`conflict`: still generating (cancel it first)", body = Problem, content_type = "application/problem+json"),
        docs::Write, docs::BadId, docs::NoSuchGeneration,
    ))]
pub async fn delete_generation_audio(
    State(state): State<Core>,
    Extension(principal): Extension<Arc<Principal>>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    check_id(&id)?;
    deletion::delete_generation_audio(&state, &principal, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}
