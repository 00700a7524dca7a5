//! The rate-limit middleware: counts each authenticated request against its key's policy
//! ([`crate::limits`]) and writes the `RateLimit` / `RateLimit-Policy` headers.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::{ApiError, ErrorCode};
use crate::limits::{Decision, RateClass, RateLimits};
use crate::service::Principal;

/// Counts the request against its key's policy and writes the headers on whatever answer
/// follows. Runs after authentication; requests without a principal pass untouched.
///
/// OAuth access tokens count against their authorization (the token family, so refreshing does
/// not reset the count) under the same policies, and their responses carry no `RateLimit*`
/// headers (spec §8.1); a refusal still answers 429 with `Retry-After`.
pub async fn rate_limit(
    State(limits): State<Arc<RateLimits>>,
    request: Request,
    next: Next,
) -> Response {
    let Some((key_id, oauth)) = request
        .extensions()
        .get::<Arc<Principal>>()
        .map(|p| (p.rate_limit_key().to_owned(), p.is_oauth()))
    else {
        return next.run(request).await;
    };
    let holder = if oauth { "authorization" } else { "key" };
    let class = request.extensions().get::<RateClass>().copied();
    let policy = limits.policy(class, request.method());
    let (mut response, remaining, reset) = match limits.decide(policy, &key_id).await {
        Decision::Allowed { remaining } => {
            let response = next.run(request).await;
            (response, remaining, policy.reset_secs(remaining))
        }
        Decision::Refused { wait } => {
            metrics::counter!("voiced_rate_limit_refusals_total", "policy" => policy.name)
                .increment(1);
            let retry_after = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
            let response = ApiError::new(
                ErrorCode::RateLimitExceeded,
                format!(
                    "This {holder} made more than {} requests in {} seconds ({} policy); retry after {} seconds.",
                    policy.quota, policy.window_secs, policy.name, retry_after.max(1)
                ),
            )
            .with_retry_after(retry_after)
            .into_response();
            (response, 0, policy.reset_secs(0))
        }
    };
    // Tokens' answers carry no RateLimit headers (spec §8.1). A key found revoked after it was
    // counted (a read that started from memory) has no quota to speak of.
    if oauth || response.status() == axum::http::StatusCode::UNAUTHORIZED {
        return response;
    }
    let headers = response.headers_mut();
    headers.insert("ratelimit-policy", limits.policy_header().clone());
    let value = format!("\"{}\";r={};t={}", policy.name, remaining, reset);
    headers.insert(
        "ratelimit",
        HeaderValue::from_str(&value).expect("ASCII header"),
    );
    response
}
