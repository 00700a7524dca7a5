//! `GET /v1/generations/{generationId}`.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::{Extension, Json};

use crate::domain::GenerationId;
use crate::http::auth::Principal;
use crate::http::error::ApiError;
use crate::http::models::{Generation, Problem};
use crate::service::Core;
use crate::service::principal_cache::CredentialCheck;
use crate::service::reads;

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
        (status = 400, description = "`invalid_request`: id longer than 200 characters", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "`invalid_api_key`", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "`pro_plan_required` or `insufficient_scope` (needs `voice:read`)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "`not_found`: no such generation in this account", body = Problem, content_type = "application/problem+json"),
        (status = 429, description = "`rate_limit_exceeded`", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "`service_unavailable`", body = Problem, content_type = "application/problem+json"),
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
