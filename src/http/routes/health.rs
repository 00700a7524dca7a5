use axum::Json;
use axum::extract::State;
use sqlx::PgPool;

use crate::http::error::ApiError;
use crate::http::models::Health;

/// Liveness: the process answers.
#[utoipa::path(get, path = "/healthz", tag = "health",
    responses((status = 200, description = "The process is alive", body = Health)))]
pub async fn healthz() -> Json<Health> {
    Json(Health {
        status: "ok".into(),
    })
}

/// Readiness: the database answers.
#[utoipa::path(get, path = "/readyz", tag = "health",
    responses(
        (status = 200, description = "Ready to serve", body = Health),
        (status = 503, description = "`service_unavailable`: the database does not answer",
            body = crate::http::models::Problem, content_type = "application/problem+json"),
    ))]
pub async fn readyz(State(pool): State<PgPool>) -> Result<Json<Health>, ApiError> {
    sqlx::query_scalar!("SELECT 1 AS one")
        .fetch_one(&pool)
        .await
        .map_err(|err| {
            tracing::warn!(error = %err, "readiness check failed");
            ApiError::unavailable(5)
        })?;
    Ok(Json(Health {
        status: "ready".into(),
    }))
}
