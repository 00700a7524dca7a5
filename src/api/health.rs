use axum::Json;
use axum::extract::State;

use crate::http::error::ApiError;
use crate::http::models::Health;
use crate::service::Core;

/// Liveness: the process answers.
#[utoipa::path(get, path = "/healthz", tag = "health",
    responses((status = 200, description = "The process is alive", body = Health)))]
pub async fn healthz() -> Json<Health> {
    Json(Health {
        status: "ok".into(),
    })
}

/// Readiness: the database answers, and this process's generation workers have their engines.
#[utoipa::path(get, path = "/readyz", tag = "health",
    responses(
        (status = 200, description = "Ready to serve", body = Health),
        (status = 503, description = "`service_unavailable`: the database does not answer, or a generation worker's engine cannot start (`detail` says which)",
            body = crate::http::models::Problem, content_type = "application/problem+json"),
    ))]
pub async fn readyz(State(state): State<Core>) -> Result<Json<Health>, ApiError> {
    crate::service::health::ready(&state).await?;
    Ok(Json(Health {
        status: "ready".into(),
    }))
}
