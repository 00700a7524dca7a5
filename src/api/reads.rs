//! `GET /v1/voices`, `GET /v1/captures`, one capture and its captions.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};

use super::docs;
use crate::domain::{CaptionFormat, GenerationId, Page, PageBound};
use crate::http::auth::Principal;
use crate::http::error::ApiError;
use crate::http::models::{CaptureDetail, CaptureList, Problem, VoiceList};
use crate::service::Core;
use crate::service::principal_cache::CredentialCheck;
use crate::service::reads;

/// Lists the account's voice profiles.
#[utoipa::path(get, path = "/v1/voices", tag = "voices",
    security(("api_key" = []), ("bearer" = [])),
    responses(
        (status = 200, description = "The account's voice profiles", body = VoiceList),
        docs::Read,
    ))]
pub async fn list_voices(
    State(state): State<Core>,
    Extension(principal): Extension<Arc<Principal>>,
    Extension(check): Extension<Arc<CredentialCheck>>,
) -> Result<Json<VoiceList>, ApiError> {
    let rows = reads::voices(&state, &principal, Some(&check)).await?;
    let total = rows.len() as i64;
    Ok(Json(VoiceList {
        data: rows.into_iter().map(Into::into).collect(),
        total,
    }))
}

/// One page bound from the query string: absent → its default; not an integer or out of
/// range → 400 naming it ([`Page`] holds the rule).
pub(super) fn page_bound(
    query: &HashMap<String, String>,
    bound: PageBound,
) -> Result<i64, ApiError> {
    let value = query
        .get(bound.name)
        .map(|raw| raw.parse::<i64>().map_err(|_| bound.refusal()))
        .transpose()
        .and_then(|n| bound.check(n));
    value.map_err(|message| ApiError::invalid(bound.name, message))
}

/// Lists the account's captures, most recent first.
#[utoipa::path(get, path = "/v1/captures", tag = "captures",
    security(("api_key" = []), ("bearer" = [])),
    params(
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 200, description = "Page size, default 50"),
        ("offset" = Option<i64>, Query, minimum = 0, maximum = 9007199254740991_i64, description = "Captures to skip, default 0"),
    ),
    responses(
        (status = 200, description = "One page of captures, newest first", body = CaptureList),
        (status = 400, description = "`invalid_request` (`param` names limit or offset)", body = Problem, content_type = "application/problem+json"),
        docs::Read,
    ))]
pub async fn list_captures(
    State(state): State<Core>,
    Extension(principal): Extension<Arc<Principal>>,
    Extension(check): Extension<Arc<CredentialCheck>>,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Json<CaptureList>, ApiError> {
    let limit = page_bound(&query, Page::LIMIT)?;
    let offset = page_bound(&query, Page::OFFSET)?;
    let page = reads::captures(&state, &principal, Some(&check), limit, offset).await?;
    Ok(Json(CaptureList {
        data: page.rows.into_iter().map(Into::into).collect(),
        total: page.total,
        limit,
        offset,
    }))
}

/// A capture id from the path: 1 to 200 characters, no NUL (the database is not asked about
/// one it could not hold).
fn check_capture_id(id: &str) -> Result<(), ApiError> {
    GenerationId::parse(id, "captureId")
        .map(drop)
        .map_err(|message| ApiError::invalid("captureId", message))
}

/// Reads one capture, with its segments and words when they were asked for.
#[utoipa::path(get, path = "/v1/captures/{captureId}", tag = "captures",
    security(("api_key" = []), ("bearer" = [])),
    params(("captureId" = String, Path, min_length = 1, max_length = 200, description = "Id returned by a transcription")),
    responses(
        (status = 200, description = "The capture", body = CaptureDetail),
        docs::Read, docs::BadId, docs::NoSuchCapture,
    ))]
pub async fn get_capture(
    State(state): State<Core>,
    Extension(principal): Extension<Arc<Principal>>,
    Extension(check): Extension<Arc<CredentialCheck>>,
    Path(id): Path<String>,
) -> Result<Json<CaptureDetail>, ApiError> {
    check_capture_id(&id)?;
    let detail = reads::capture(&state, &principal, Some(&check), &id).await?;
    Ok(Json(
        CaptureDetail::try_from(detail).map_err(ApiError::internal)?,
    ))
}

/// A caption format: `vtt` (WebVTT) or `srt` (SubRip).
#[derive(utoipa::ToSchema)]
#[schema(rename_all = "lowercase")]
#[allow(dead_code)]
pub enum CaptionFormatParam {
    Vtt,
    Srt,
}

/// A captions request's query: only `format`, `vtt` (default) or `srt`.
pub(super) fn caption_format(query: &HashMap<String, String>) -> Result<CaptionFormat, ApiError> {
    if let Some(unknown) = query.keys().find(|k| k.as_str() != "format") {
        return Err(ApiError::invalid(
            unknown.as_str(),
            format!("Unknown query parameter {unknown:?}; accepted: format."),
        ));
    }
    match query.get("format").map(String::as_str) {
        None => Ok(CaptionFormat::Vtt),
        Some(value) => CaptionFormat::parse(value)
            .ok_or_else(|| ApiError::invalid("format", "format must be srt or vtt")),
    }
}

/// The capture's captions, one cue a segment, from the segments it stored.
#[utoipa::path(get, path = "/v1/captures/{captureId}/captions", tag = "captures",
    security(("api_key" = []), ("bearer" = [])),
    params(
        ("captureId" = String, Path, min_length = 1, max_length = 200, description = "Id returned by a transcription made with timestamps"),
        ("format" = inline(Option<CaptionFormatParam>), Query, description = "`vtt` (WebVTT, default) or `srt` (SubRip)"),
    ),
    responses(
        (status = 200, description = "The captions", content(
            (String = "text/vtt"),
            (String = "application/x-subrip"),
        )),
        (status = 400, description = "`invalid_request` (`param: format`: not `srt` or `vtt`; `param: captureId`: longer than 200 characters)", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "`timestamps_unavailable`: the capture was made without timestamps", body = Problem, content_type = "application/problem+json"),
        docs::Read, docs::NoSuchCapture,
    ))]
pub async fn get_captions(
    State(state): State<Core>,
    Extension(principal): Extension<Arc<Principal>>,
    Extension(check): Extension<Arc<CredentialCheck>>,
    Path(id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Response, ApiError> {
    check_capture_id(&id)?;
    let format = caption_format(&query)?;
    let text = reads::captions(&state, &principal, Some(&check), &id, format).await?;
    Ok(([(header::CONTENT_TYPE, format.content_type())], text).into_response())
}

/// Deletes a capture: its transcript and timings, and the stored answer of the request that
/// made it (a retry with its `Idempotency-Key` transcribes again).
#[utoipa::path(delete, path = "/v1/captures/{captureId}", tag = "captures",
    security(("api_key" = []), ("bearer" = [])),
    params(("captureId" = String, Path, min_length = 1, max_length = 200, description = "Id returned by a transcription")),
    responses(
        (status = 204, description = "Deleted"),
        docs::Write, docs::BadId, docs::NoSuchCapture,
    ))]
pub async fn delete_capture(
    State(state): State<Core>,
    Extension(principal): Extension<Arc<Principal>>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    check_capture_id(&id)?;
    crate::service::deletion::delete_capture(&state, &principal, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}
