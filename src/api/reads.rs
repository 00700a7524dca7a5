//! `GET /v1/voices` and `GET /v1/captures`.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Query, State};
use axum::{Extension, Json};

use crate::domain::{Page, PageBound};
use crate::http::auth::Principal;
use crate::http::error::ApiError;
use crate::http::models::{CaptureList, Problem, VoiceList};
use crate::service::Core;
use crate::service::principal_cache::CredentialCheck;
use crate::service::reads;

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
