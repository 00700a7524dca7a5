//! `GET /v1/voices` and `GET /v1/captures`.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Query, State};
use axum::{Extension, Json};

use crate::http::auth::Principal;
use crate::http::error::ApiError;
use crate::http::models::{CaptureList, Problem, VoiceList};
use crate::service::Core;
use crate::service::principal_cache::CredentialCheck;
use crate::service::reads;

/// Largest `offset` (2^53 − 1).
pub const MAX_OFFSET: i64 = 9_007_199_254_740_991;
/// Page size of capture lists: at most, and when none is asked for.
pub const MAX_LIMIT: i64 = 200;
pub const DEFAULT_LIMIT: i64 = 50;

/// Lists the account's voice profiles.
#[utoipa::path(get, path = "/v1/voices", tag = "voices",
    security(("api_key" = []), ("bearer" = [])),
    responses(
        (status = 200, description = "The account's voice profiles", body = VoiceList),
        (status = 401, description = "`invalid_api_key`", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "`pro_plan_required` or `insufficient_scope` (needs `voice:read`)", body = Problem, content_type = "application/problem+json"),
        (status = 429, description = "`rate_limit_exceeded`", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "`service_unavailable`", body = Problem, content_type = "application/problem+json"),
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

fn parse_bounded(
    query: &HashMap<String, String>,
    name: &str,
    default: i64,
    max: i64,
    min: i64,
) -> Result<i64, ApiError> {
    let Some(raw) = query.get(name) else {
        return Ok(default);
    };
    match raw.parse::<i64>() {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(ApiError::invalid(
            name,
            format!("{name} must be an integer from {min} to {max}"),
        )),
    }
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
        (status = 401, description = "`invalid_api_key`", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "`pro_plan_required` or `insufficient_scope` (needs `voice:read`)", body = Problem, content_type = "application/problem+json"),
        (status = 429, description = "`rate_limit_exceeded`", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "`service_unavailable`", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn list_captures(
    State(state): State<Core>,
    Extension(principal): Extension<Arc<Principal>>,
    Extension(check): Extension<Arc<CredentialCheck>>,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Json<CaptureList>, ApiError> {
    let limit = parse_bounded(&query, "limit", DEFAULT_LIMIT, MAX_LIMIT, 1)?;
    let offset = parse_bounded(&query, "offset", 0, MAX_OFFSET, 0)?;
    let page = reads::captures(&state, &principal, Some(&check), limit, offset).await?;
    Ok(Json(CaptureList {
        data: page.rows.into_iter().map(Into::into).collect(),
        total: page.total,
        limit,
        offset,
    }))
}
