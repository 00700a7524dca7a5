//! `GET /v1/generations/{generationId}`.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::{Extension, Json};

use crate::domain::{GenerationId, GenerationStatus};
use crate::http::auth::Principal;
use crate::http::error::ApiError;
use crate::http::models::{Generation, Problem};
use crate::service::Core;
use crate::service::principal_cache::CredentialCheck;
use crate::store;
use crate::store::generations::GenerationRow;

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
    let mut connection = state.reads.acquire().await?;
    let found = store::generations::find_checked(
        connection.get(),
        check.credential(),
        &principal.account_id,
        &id,
    )
    .await?;
    connection.finish();
    let row = check.confirm(found)?.ok_or_else(ApiError::not_found)?;
    Ok(Json(present(&state, row)))
}

/// The API view of a generation, with a freshly signed link when there is audio.
pub fn present(state: &Core, row: GenerationRow) -> Generation {
    let audio_url = (row.status == GenerationStatus::Completed && row.has_audio).then(|| {
        let sig = state.signer.sign(&row.id, chrono::Utc::now().timestamp());
        format!("{}/v1/audio/{}?sig={sig}", state.public_base_url, row.id)
    });
    Generation {
        id: row.id,
        status: row.status.as_str().to_owned(),
        profile: row.voice_id,
        has_audio: row.has_audio,
        audio_url,
        error: row.error,
        seed: row.seed,
        engine: row.engine.as_str().to_owned(),
        format: row.format,
        duration_ms: row.duration_ms,
        created_at: row.created_at,
        finished_at: row.finished_at,
    }
}
