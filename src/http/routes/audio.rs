//! `GET /v1/audio/{generationId}?sig=…`: the signed, key-less download.

use std::collections::HashMap;

use axum::extract::{Path, Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};

use crate::domain::Plan;
use crate::http::AppState;
use crate::http::error::{ApiError, ErrorCode};
use crate::http::models::Problem;
use crate::http::routes::generations::check_id;
use crate::store;

fn invalid_signature() -> ApiError {
    ApiError::new(
        ErrorCode::InvalidSignature,
        "The audio link is missing its signature, was altered, or has expired; poll the generation for a fresh audio_url.",
    )
}

/// Downloads a generation's audio through the signed `audio_url` (no API key).
#[utoipa::path(get, path = "/v1/audio/{generationId}", tag = "speech",
    params(
        ("generationId" = String, Path, min_length = 1, max_length = 200),
        ("sig" = String, Query, description = "Signature from `audio_url`; never built by clients"),
    ),
    responses(
        (status = 200, description = "The audio", content((Vec<u8> = "audio/mpeg"), (Vec<u8> = "audio/ogg"), (Vec<u8> = "audio/wav"))),
        (status = 400, description = "`invalid_request`: id longer than 200 characters", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "`invalid_signature` (missing, tampered or expired `sig`) or `pro_plan_required`", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "`not_found`", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "`service_unavailable`", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn download_audio(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Response, ApiError> {
    check_id(&id)?;
    let sig = query.get("sig").ok_or_else(invalid_signature)?;
    state
        .signer
        .verify(&id, sig, chrono::Utc::now().timestamp())
        .map_err(|_| invalid_signature())?;
    let row = store::generations::for_download(&state.pool, &id)
        .await?
        .ok_or_else(ApiError::not_found)?;
    let plan: Plan = row.plan.parse().map_err(ApiError::internal)?;
    if !plan.allows_api() {
        return Err(ApiError::pro_plan_required());
    }
    let key = row.audio_key.ok_or_else(ApiError::not_found)?;
    let blob = state
        .blobs
        .get(&key)
        .await
        .map_err(ApiError::internal)?
        .ok_or_else(|| ApiError::internal(format!("audio blob {key} is missing")))?;
    Ok((
        [
            (header::CONTENT_TYPE, blob.content_type),
            (header::CACHE_CONTROL, "private, max-age=900".to_owned()),
        ],
        blob.bytes,
    )
        .into_response())
}
