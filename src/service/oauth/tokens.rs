//! The token endpoint (authorization code and refresh token grants), revocation (RFC 7009),
//! and authenticating access tokens on `/v1` and `/mcp`.
//!
//! Families: the tokens one consent produced share an authorization. A code redeemed twice, a
//! rotated refresh token presented again, revoking a refresh token, or revoking the application
//! in the console revokes the authorization, and with it every token of the family, from the
//! next request on (tokens are looked up in PostgreSQL on every request, like keys).

use crate::service::Core;
use serde_json::{Value, json};
use sqlx::{PgConnection, PgPool};

use super::{
    ACCESS_TOKEN_LIFETIME, OAuthError, OAuthSettings, Params, REFRESH_TOKEN_LIFETIME,
    parse_scope_param,
};
use crate::domain::oauth::{
    ACCESS_TOKEN_PREFIX, OAuthSecret, REFRESH_TOKEN_PREFIX, pkce_s256_matches,
};
use crate::domain::{SecretHash, new_id};
use crate::service::ServiceError;
use crate::service::principal::{Credential, Principal};
use crate::store;
use crate::store::oauth::TokenKind;

const BAD_CODE: &str = "The authorization code is unknown, expired or already used.";
const BAD_REFRESH: &str = "The refresh token is unknown, expired or revoked.";

/// `POST /oauth/token`: `body` is the form; `basic_client_id` the client id of an HTTP Basic
/// `Authorization` header, if one was sent (public clients have no secret to check).
pub async fn token(
    core: &Core,
    body: &[u8],
    basic_client_id: Option<String>,
) -> Result<Value, OAuthError> {
    let (oauth, pool) = (&*core.oauth, &core.pool);
    let params = Params::parse(&String::from_utf8_lossy(body));
    for name in [
        "grant_type",
        "code",
        "redirect_uri",
        "client_id",
        "code_verifier",
        "refresh_token",
        "scope",
    ] {
        if params.single(name).is_err() {
            return Err(OAuthError::invalid_request(format!(
                "The request repeats {name}."
            )));
        }
    }
    let get = |name: &str| params.single(name).ok().flatten();
    let client_id = match (get("client_id"), basic_client_id.as_deref()) {
        (Some(form), Some(basic)) if form != basic => {
            return Err(OAuthError::invalid_request(
                "client_id differs from the Authorization header's.",
            ));
        }
        (Some(id), _) | (None, Some(id)) => id.to_owned(),
        (None, None) => {
            return Err(OAuthError::invalid_request(
                "client_id is required (public clients identify themselves with it).",
            ));
        }
    };
    let resources = params.all("resource");
    match get("grant_type") {
        Some("authorization_code") => {
            let required = |name: &str| {
                get(name).ok_or_else(|| OAuthError::invalid_request(format!("{name} is required.")))
            };
            redeem_code(
                oauth,
                pool,
                CodeExchange {
                    code: required("code")?,
                    redirect_uri: required("redirect_uri")?,
                    code_verifier: required("code_verifier")?,
                    client_id: &client_id,
                    resources: &resources,
                },
            )
            .await
        }
        Some("refresh_token") => {
            let refresh_token = get("refresh_token")
                .ok_or_else(|| OAuthError::invalid_request("refresh_token is required."))?;
            refresh(
                oauth,
                pool,
                refresh_token,
                &client_id,
                get("scope"),
                &resources,
            )
            .await
        }
        Some(_) => Err(OAuthError::unsupported_grant_type(
            "grant_type must be authorization_code or refresh_token.",
        )),
        None => Err(OAuthError::invalid_request("grant_type is required.")),
    }
}

struct CodeExchange<'a> {
    code: &'a str,
    redirect_uri: &'a str,
    code_verifier: &'a str,
    client_id: &'a str,
    resources: &'a [&'a str],
}

async fn redeem_code(
    oauth: &OAuthSettings,
    pool: &PgPool,
    exchange: CodeExchange<'_>,
) -> Result<Value, OAuthError> {
    let hash = SecretHash::of(exchange.code);
    let mut tx = pool.begin().await?;
    let row = store::oauth::lock_code(&mut tx, &hash)
        .await?
        .filter(|row| hash.matches(&row.code_sha256))
        .ok_or_else(|| OAuthError::invalid_grant(BAD_CODE))?;
    if let Some(issued) = &row.authorization_id {
        // A second redemption: the code leaked. Whatever it produced is revoked.
        store::oauth::revoke_authorization(&mut tx, issued).await?;
        tx.commit().await?;
        tracing::warn!(authorization_id = %issued, "OAuth code reused: its tokens are revoked");
        return Err(OAuthError::invalid_grant(BAD_CODE));
    }
    if row.expired {
        return Err(OAuthError::invalid_grant(BAD_CODE));
    }
    if row.client_id != exchange.client_id {
        return Err(OAuthError::invalid_grant(
            "The code was issued to another client.",
        ));
    }
    if row.redirect_uri != exchange.redirect_uri {
        return Err(OAuthError::invalid_grant(
            "redirect_uri differs from the authorization request's.",
        ));
    }
    if !pkce_s256_matches(exchange.code_verifier, &row.code_challenge) {
        return Err(OAuthError::invalid_grant(
            "code_verifier does not match the code_challenge.",
        ));
    }
    let audience = narrow_resources(oauth, &row.resources, exchange.resources)?;
    let authorization_id = new_id("oauth");
    store::oauth::insert_authorization(
        &mut tx,
        &authorization_id,
        &store::oauth::Grant {
            account_id: &row.account_id,
            client_id: &row.client_id,
            client_name: &row.client_name,
            scopes: &row.scopes,
            resources: &row.resources,
        },
    )
    .await?;
    store::oauth::mark_code_redeemed(&mut tx, &hash, &authorization_id).await?;
    let response = issue(
        &mut tx,
        &authorization_id,
        (row.scopes.as_slice(), audience.as_slice()),
        (row.scopes.as_slice(), row.resources.as_slice()),
    )
    .await?;
    tx.commit().await?;
    tracing::info!(%authorization_id, client_id = %row.client_id, "OAuth code redeemed");
    Ok(response)
}

async fn refresh(
    oauth: &OAuthSettings,
    pool: &PgPool,
    refresh_token: &str,
    client_id: &str,
    scope: Option<&str>,
    resources: &[&str],
) -> Result<Value, OAuthError> {
    let hash = SecretHash::of(refresh_token);
    let mut tx = pool.begin().await?;
    let row = store::oauth::lock_refresh(&mut tx, &hash)
        .await?
        .filter(|row| hash.matches(&row.token_sha256))
        .ok_or_else(|| OAuthError::invalid_grant(BAD_REFRESH))?;
    if row.rotated && !row.revoked {
        // An old refresh token again: one of the two holders is not the client.
        store::oauth::revoke_authorization(&mut tx, &row.authorization_id).await?;
        tx.commit().await?;
        tracing::warn!(authorization_id = %row.authorization_id, "OAuth refresh token reused: the family is revoked");
        return Err(OAuthError::invalid_grant(
            "This refresh token was already used; every token of its authorization is revoked.",
        ));
    }
    if row.rotated || row.revoked || row.expired {
        return Err(OAuthError::invalid_grant(BAD_REFRESH));
    }
    if row.client_id != client_id {
        return Err(OAuthError::invalid_grant(
            "The refresh token was issued to another client.",
        ));
    }
    // The new access token may be narrower (RFC 6749 §6); the new refresh token is not.
    let access_scopes = match scope.filter(|s| !s.trim().is_empty()) {
        None => row.scopes.clone(),
        Some(requested) => {
            let requested =
                parse_scope_param(Some(requested)).map_err(OAuthError::invalid_scope)?;
            let names = super::scope_names(&requested);
            if let Some(extra) = names.iter().find(|s| !row.scopes.contains(s)) {
                return Err(OAuthError::invalid_scope(format!(
                    "{extra} was not granted to this authorization."
                )));
            }
            names
        }
    };
    let audience = narrow_resources(oauth, &row.resources, resources)?;
    store::oauth::mark_rotated(&mut tx, &hash).await?;
    let response = issue(
        &mut tx,
        &row.authorization_id,
        (access_scopes.as_slice(), audience.as_slice()),
        (row.scopes.as_slice(), row.resources.as_slice()),
    )
    .await?;
    tx.commit().await?;
    Ok(response)
}

/// The requested resources (RFC 8707 in a token request) when each was granted; all granted
/// ones when none is requested.
fn narrow_resources(
    oauth: &OAuthSettings,
    granted: &[String],
    requested: &[&str],
) -> Result<Vec<String>, OAuthError> {
    if requested.is_empty() {
        return Ok(granted.to_vec());
    }
    let mut audience = Vec::new();
    for resource in requested {
        let canonical = oauth
            .canonical_resource(resource)
            .filter(|r| oauth.audience_allows(granted, r))
            .ok_or_else(|| {
                OAuthError::invalid_target(format!(
                    "{resource} is not a resource this authorization covers."
                ))
            })?;
        if !audience.contains(&canonical) {
            audience.push(canonical);
        }
    }
    Ok(audience)
}

/// A new access token and refresh token of the family; the token response.
async fn issue(
    conn: &mut PgConnection,
    authorization_id: &str,
    (access_scopes, audience): (&[String], &[String]),
    (refresh_scopes, refresh_resources): (&[String], &[String]),
) -> Result<Value, OAuthError> {
    let now = chrono::Utc::now();
    let access = OAuthSecret::generate(ACCESS_TOKEN_PREFIX);
    let refresh = OAuthSecret::generate(REFRESH_TOKEN_PREFIX);
    store::oauth::insert_token(
        conn,
        &access.hash(),
        TokenKind::Access,
        authorization_id,
        access_scopes,
        audience,
        now + chrono::TimeDelta::from_std(ACCESS_TOKEN_LIFETIME).expect("fits"),
    )
    .await?;
    store::oauth::insert_token(
        conn,
        &refresh.hash(),
        TokenKind::Refresh,
        authorization_id,
        refresh_scopes,
        refresh_resources,
        now + chrono::TimeDelta::from_std(REFRESH_TOKEN_LIFETIME).expect("fits"),
    )
    .await?;
    Ok(json!({
        "access_token": access.into_string(),
        "token_type": "Bearer",
        "expires_in": ACCESS_TOKEN_LIFETIME.as_secs(),
        "refresh_token": refresh.into_string(),
        "scope": access_scopes.join(" "),
    }))
}

/// `POST /oauth/revoke` (RFC 7009): revoking a refresh token revokes its whole family; an access
/// token only itself. Unknown tokens are not an error. Presenting a token is enough: holding it
/// already allows using it, so revoking it grants nothing more.
pub async fn revoke(core: &Core, body: &[u8]) -> Result<(), OAuthError> {
    let pool = &core.pool;
    let params = Params::parse(&String::from_utf8_lossy(body));
    let token = params
        .single("token")
        .map_err(|()| OAuthError::invalid_request("The request repeats token."))?
        .ok_or_else(|| OAuthError::invalid_request("token is required."))?;
    let hash = SecretHash::of(token);
    let Some(found) = store::oauth::find_token(pool, &hash)
        .await?
        .filter(|t| hash.matches(&t.token_sha256))
    else {
        return Ok(());
    };
    if found.kind == "refresh" {
        let mut conn = pool.acquire().await?;
        store::oauth::revoke_authorization(&mut conn, &found.authorization_id).await?;
    } else {
        store::oauth::revoke_token(pool, &hash).await?;
    }
    tracing::info!(authorization_id = %found.authorization_id, kind = %found.kind, "OAuth token revoked");
    Ok(())
}

/// The principal of access token `token` on `resource`, or `None` when the token is unknown,
/// expired, revoked, or not meant for `resource` (its audience).
pub async fn authenticate(
    oauth: &OAuthSettings,
    pool: &PgPool,
    token: &str,
    resource: &str,
) -> Result<Option<Principal>, ServiceError> {
    let hash = SecretHash::of(token);
    let Some(record) = store::oauth::find_access(pool, &hash).await? else {
        return Ok(None);
    };
    // The lookup was by hash; compare again in constant time (as keys do).
    if !hash.matches(&record.token_sha256)
        || !record.live
        || !oauth.audience_allows(&record.resources, resource)
    {
        return Ok(None);
    }
    if crate::service::auth::stale(record.last_used_at) {
        let (pool, id) = (pool.clone(), record.authorization_id.clone());
        tokio::spawn(async move {
            if let Err(err) = store::oauth::touch(&pool, &id).await {
                tracing::warn!(error = %err, "recording an authorization's last use failed");
            }
        });
    }
    Principal::from_row(
        &record.account_id,
        &record.scopes,
        &record.plan,
        &record.features,
        Credential::OAuth {
            authorization_id: record.authorization_id,
            client_id: record.client_id,
        },
    )
    .map(Some)
}

/// The applications `account_id` authorized that still hold a live token (the console's
/// applications page).
pub async fn authorizations(
    core: &Core,
    account_id: &str,
) -> Result<Vec<crate::store::oauth::AuthorizationSummary>, ServiceError> {
    let pool = &core.pool;
    Ok(crate::store::oauth::list_authorizations(pool, account_id).await?)
}

/// Revokes the account's authorization `id`: every token of it is refused from its next
/// request on. 404 `not_found` when the account has no such authorization.
pub async fn revoke_authorization(
    core: &Core,
    account_id: &str,
    id: &str,
) -> Result<(), ServiceError> {
    let pool = &core.pool;
    if !crate::store::oauth::revoke_owned(pool, account_id, id).await? {
        return Err(ServiceError::not_found());
    }
    Ok(())
}
