//! Authentication and authorization of `/v1` requests.
//!
//! Order of checks (documented in docs/api.md, "Order of checks"):
//! 1. credential (`x-api-key`, else `Authorization: Bearer`) → 401 `invalid_api_key`
//! 2. rate limit of the key's policy → 429 `rate_limit_exceeded` (see `rate_limit`)
//! 3. plan → 403 `pro_plan_required`
//! 4. scope of the route → 403 `insufficient_scope`
//! 5. feature of the route in the account's plan → 403 `feature_not_enabled`
//! 6. the request itself (handlers) → 400 …
//!
//! Cookies are never read. The key is looked up by its SHA-256 on every request, so a revoked
//! key or a changed plan takes effect on the very next request.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sqlx::PgPool;

use super::error::{ApiError, ErrorCode, SettingsPage};
use crate::domain::{Feature, Plan, Scope, SecretHash};
use crate::store;

/// Who is calling: the key and its account, as of this request.
#[derive(Debug, Clone)]
pub struct Principal {
    pub key_id: String,
    pub account_id: String,
    pub scopes: Vec<Scope>,
    pub plan: Plan,
    pub features: Vec<Feature>,
    /// Monthly ceiling of generated audio for this key, in whole minutes.
    pub ceiling_minutes: Option<i32>,
}

/// What a route needs beyond a valid key.
#[derive(Debug, Clone, Copy)]
pub struct Requirement {
    pub scope: Scope,
    pub feature: Option<Feature>,
}

impl Requirement {
    pub const fn read() -> Self {
        Self {
            scope: Scope::VoiceRead,
            feature: None,
        }
    }

    pub const fn generate(feature: Feature) -> Self {
        Self {
            scope: Scope::VoiceGenerate,
            feature: Some(feature),
        }
    }
}

/// The credential as sent, if any. `Err` when a credential header is present but unusable.
fn presented_credential(headers: &HeaderMap) -> Result<&str, ApiError> {
    if let Some(value) = headers.get("x-api-key") {
        let key = value
            .to_str()
            .map_err(|_| ApiError::invalid_api_key())?
            .trim();
        return if key.is_empty() {
            Err(ApiError::invalid_api_key())
        } else {
            Ok(key)
        };
    }
    let value = headers
        .get(header::AUTHORIZATION)
        .ok_or_else(ApiError::invalid_api_key)?
        .to_str()
        .map_err(|_| ApiError::invalid_api_key())?;
    let (scheme, token) = value.split_once(' ').unwrap_or((value, ""));
    let token = token.trim();
    if !scheme.eq_ignore_ascii_case("bearer") || token.is_empty() {
        return Err(ApiError::invalid_api_key());
    }
    Ok(token)
}

/// Step 1: resolve the credential to a [`Principal`] in the request's extensions.
pub async fn authenticate(
    State(pool): State<PgPool>,
    mut request: Request,
    next: Next,
) -> Response {
    let principal = match resolve(&pool, request.headers()).await {
        Ok(principal) => principal,
        Err(err) => return err.into_response(),
    };
    tracing::Span::current().record("account_id", principal.account_id.as_str());
    request.extensions_mut().insert(Arc::new(principal));
    next.run(request).await
}

async fn resolve(pool: &PgPool, headers: &HeaderMap) -> Result<Principal, ApiError> {
    let presented = presented_credential(headers)?;
    let hash = SecretHash::of(presented);
    let record = store::keys::find_by_hash(pool, &hash)
        .await?
        .ok_or_else(ApiError::invalid_api_key)?;
    // The lookup was by hash; compare again in constant time so that correctness never rests
    // on the database's comparison.
    if !hash.matches(&record.secret_sha256) || record.revoked {
        return Err(ApiError::invalid_api_key());
    }
    Ok(Principal {
        key_id: record.key_id,
        account_id: record.account_id,
        scopes: record
            .scopes
            .iter()
            .filter_map(|s| s.parse().ok())
            .collect(),
        plan: record.plan.parse().map_err(ApiError::internal)?,
        features: record
            .features
            .iter()
            .filter_map(|f| f.parse().ok())
            .collect(),
        ceiling_minutes: record.ceiling_minutes,
    })
}

/// Steps 3–5 for one group of routes.
pub async fn authorize(
    State(requirement): State<Requirement>,
    request: Request,
    next: Next,
) -> Response {
    let Some(principal) = request.extensions().get::<Arc<Principal>>() else {
        return ApiError::invalid_api_key().into_response();
    };
    if let Err(err) = check(principal, requirement) {
        return err.into_response();
    }
    next.run(request).await
}

fn check(principal: &Principal, requirement: Requirement) -> Result<(), ApiError> {
    if !principal.plan.allows_api() {
        return Err(ApiError::pro_plan_required());
    }
    if !principal.scopes.contains(&requirement.scope) {
        return Err(ApiError::insufficient_scope(requirement.scope));
    }
    if let Some(feature) = requirement.feature
        && !principal.features.contains(&feature)
    {
        return Err(ApiError::new(
            ErrorCode::FeatureNotEnabled,
            format!(
                "This account's plan does not include {}; upgrading the plan enables it.",
                feature.as_str()
            ),
        )
        .with_settings(SettingsPage::Billing));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn credential_forms() {
        assert_eq!(
            presented_credential(&headers(&[("x-api-key", "vk_a")])).unwrap(),
            "vk_a"
        );
        assert_eq!(
            presented_credential(&headers(&[("authorization", "Bearer vk_b")])).unwrap(),
            "vk_b"
        );
        assert_eq!(
            presented_credential(&headers(&[("authorization", "bearer  vk_c ")])).unwrap(),
            "vk_c"
        );
        for bad in [
            headers(&[]),
            headers(&[("authorization", "Basic dXNlcjpwYXNz")]),
            headers(&[("authorization", "Bearer ")]),
            headers(&[("authorization", "Bearer")]),
            headers(&[("x-api-key", "  ")]),
            headers(&[("cookie", "session=vk_a")]),
        ] {
            let err = presented_credential(&bad).unwrap_err();
            assert_eq!(err.code, ErrorCode::InvalidApiKey);
        }
    }

    fn principal(plan: Plan, scopes: Vec<Scope>, features: Vec<Feature>) -> Principal {
        Principal {
            key_id: "key_1".into(),
            account_id: "acct_1".into(),
            scopes,
            plan,
            features,
            ceiling_minutes: None,
        }
    }

    #[test]
    fn plan_then_scope_then_feature() {
        let none = principal(Plan::None, vec![], vec![]);
        let err = check(&none, Requirement::read()).unwrap_err();
        assert_eq!(err.code, ErrorCode::ProPlanRequired);
        assert_eq!(err.settings, Some(SettingsPage::Billing));

        let reader = principal(Plan::Pro, vec![Scope::VoiceRead], vec![Feature::Speech]);
        assert!(check(&reader, Requirement::read()).is_ok());
        let err = check(&reader, Requirement::generate(Feature::Speech)).unwrap_err();
        assert_eq!(err.code, ErrorCode::InsufficientScope);
        assert_eq!(err.required_scope, Some(Scope::VoiceGenerate));

        let narrow = principal(Plan::Trial, Scope::ALL.to_vec(), vec![Feature::Speech]);
        assert!(check(&narrow, Requirement::generate(Feature::Speech)).is_ok());
        let err = check(&narrow, Requirement::generate(Feature::Transcription)).unwrap_err();
        assert_eq!(err.code, ErrorCode::FeatureNotEnabled);
    }
}
