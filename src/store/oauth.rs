//! The OAuth tables (migrations/0004_oauth.sql): registered clients, authorization codes,
//! authorizations (token families) and tokens. Secrets arrive here hashed.

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool};

use crate::domain::SecretHash;

pub struct ClientRow {
    pub id: String,
    pub name: String,
    pub redirect_uris: Vec<String>,
}

pub async fn insert_client(
    pool: &PgPool,
    id: &str,
    name: &str,
    redirect_uris: &[String],
    client_uri: Option<&str>,
) -> sqlx::Result<()> {
    sqlx::query!(
        "INSERT INTO oauth_clients (id, name, redirect_uris, client_uri) VALUES ($1, $2, $3, $4)",
        id,
        name,
        redirect_uris,
        client_uri
    )
    .execute(pool)
    .await?;
    Ok(())
}

pub async fn find_client(pool: &PgPool, id: &str) -> sqlx::Result<Option<ClientRow>> {
    sqlx::query_as!(
        ClientRow,
        "SELECT id, name, redirect_uris FROM oauth_clients WHERE id = $1",
        id
    )
    .fetch_optional(pool)
    .await
}

/// What a code (and the authorization it becomes) is bound to.
pub struct Grant<'a> {
    pub account_id: &'a str,
    pub client_id: &'a str,
    pub client_name: &'a str,
    pub scopes: &'a [String],
    pub resources: &'a [String],
}

pub async fn insert_code(
    pool: &PgPool,
    hash: &SecretHash,
    grant: &Grant<'_>,
    redirect_uri: &str,
    code_challenge: &str,
    expires_at: DateTime<Utc>,
) -> sqlx::Result<()> {
    // Never for a deleted account (read under a share lock, as the deletion deletes its codes).
    let inserted = sqlx::query!(
        "INSERT INTO oauth_codes (code_sha256, account_id, client_id, client_name, redirect_uri,
                                  code_challenge, scopes, resources, expires_at)
         SELECT $1, a.id, $3, $4, $5, $6, $7, $8, $9 FROM accounts a
         WHERE a.id = $2 AND a.deleted_at IS NULL FOR SHARE",
        &hash.0[..],
        grant.account_id,
        grant.client_id,
        grant.client_name,
        redirect_uri,
        code_challenge,
        grant.scopes,
        grant.resources,
        expires_at
    )
    .execute(pool)
    .await?;
    if inserted.rows_affected() == 0 {
        return Err(sqlx::Error::RowNotFound);
    }
    Ok(())
}

pub struct CodeRow {
    pub code_sha256: Vec<u8>,
    pub account_id: String,
    pub client_id: String,
    pub client_name: String,
    pub redirect_uri: String,
    pub code_challenge: String,
    pub scopes: Vec<String>,
    pub resources: Vec<String>,
    pub expired: bool,
    /// Set once redeemed.
    pub authorization_id: Option<String>,
}

/// The code, locked until the transaction ends (two redemptions racing are serialised).
pub async fn lock_code(
    conn: &mut PgConnection,
    hash: &SecretHash,
) -> sqlx::Result<Option<CodeRow>> {
    sqlx::query_as!(
        CodeRow,
        r#"SELECT code_sha256, account_id, client_id, client_name, redirect_uri, code_challenge,
                  scopes, resources, expires_at <= now() AS "expired!", authorization_id
           FROM oauth_codes WHERE code_sha256 = $1 FOR UPDATE"#,
        &hash.0[..]
    )
    .fetch_optional(conn)
    .await
}

pub async fn mark_code_redeemed(
    conn: &mut PgConnection,
    hash: &SecretHash,
    authorization_id: &str,
) -> sqlx::Result<()> {
    sqlx::query!(
        "UPDATE oauth_codes SET authorization_id = $2 WHERE code_sha256 = $1",
        &hash.0[..],
        authorization_id
    )
    .execute(conn)
    .await?;
    Ok(())
}

pub async fn insert_authorization(
    conn: &mut PgConnection,
    id: &str,
    grant: &Grant<'_>,
) -> sqlx::Result<()> {
    // Never for a deleted account (read under a share lock, as the deletion revokes them).
    let inserted = sqlx::query!(
        "INSERT INTO oauth_authorizations (id, account_id, client_id, client_name, scopes, resources)
         SELECT $1, a.id, $3, $4, $5, $6 FROM accounts a
         WHERE a.id = $2 AND a.deleted_at IS NULL FOR SHARE",
        id,
        grant.account_id,
        grant.client_id,
        grant.client_name,
        grant.scopes,
        grant.resources
    )
    .execute(conn)
    .await?;
    if inserted.rows_affected() == 0 {
        return Err(sqlx::Error::RowNotFound);
    }
    Ok(())
}

/// Revokes the authorization: every token of the family is refused from the next request on.
pub async fn revoke_authorization(conn: &mut PgConnection, id: &str) -> sqlx::Result<()> {
    sqlx::query!(
        "UPDATE oauth_authorizations SET revoked_at = COALESCE(revoked_at, now()) WHERE id = $1",
        id
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Revokes one of the account's authorizations; `false` when the account has none by that id.
pub async fn revoke_owned(pool: &PgPool, account_id: &str, id: &str) -> sqlx::Result<bool> {
    let result = sqlx::query!(
        "UPDATE oauth_authorizations SET revoked_at = COALESCE(revoked_at, now())
         WHERE id = $1 AND account_id = $2 AND revoked_at IS NULL",
        id,
        account_id
    )
    .execute(pool)
    .await?;
    Ok(result.rows_affected() == 1)
}

pub enum TokenKind {
    Access,
    Refresh,
}

impl TokenKind {
    fn as_str(&self) -> &'static str {
        match self {
            TokenKind::Access => "access",
            TokenKind::Refresh => "refresh",
        }
    }
}

pub async fn insert_token(
    conn: &mut PgConnection,
    hash: &SecretHash,
    kind: TokenKind,
    authorization_id: &str,
    scopes: &[String],
    resources: &[String],
    expires_at: DateTime<Utc>,
) -> sqlx::Result<()> {
    sqlx::query!(
        "INSERT INTO oauth_tokens (token_sha256, kind, authorization_id, scopes, resources, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6)",
        &hash.0[..],
        kind.as_str(),
        authorization_id,
        scopes,
        resources,
        expires_at
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// An access token as authentication needs it, joined with its authorization and account.
pub struct AccessRecord {
    pub token_sha256: Vec<u8>,
    pub authorization_id: String,
    pub client_id: String,
    pub account_id: String,
    pub scopes: Vec<String>,
    pub resources: Vec<String>,
    /// Unexpired, and neither the token nor its authorization revoked.
    pub live: bool,
    pub last_used_at: Option<DateTime<Utc>>,
    pub plan: String,
    pub features: Vec<String>,
}

pub async fn find_access(pool: &PgPool, hash: &SecretHash) -> sqlx::Result<Option<AccessRecord>> {
    sqlx::query_as!(
        AccessRecord,
        r#"SELECT t.token_sha256, t.authorization_id, z.client_id, z.account_id, t.scopes,
                  t.resources,
                  (t.expires_at > now() AND t.revoked_at IS NULL AND z.revoked_at IS NULL) AS "live!",
                  z.last_used_at, a.plan, a.features
           FROM oauth_tokens t
           JOIN oauth_authorizations z ON z.id = t.authorization_id
           JOIN accounts a ON a.id = z.account_id
           WHERE t.token_sha256 = $1 AND t.kind = 'access'"#,
        &hash.0[..]
    )
    .fetch_optional(pool)
    .await
}

pub struct RefreshRow {
    pub token_sha256: Vec<u8>,
    pub authorization_id: String,
    pub client_id: String,
    pub scopes: Vec<String>,
    pub resources: Vec<String>,
    pub expired: bool,
    /// The token or its whole family was revoked.
    pub revoked: bool,
    /// Already exchanged for a newer refresh token.
    pub rotated: bool,
}

/// The refresh token, locked until the transaction ends (two refreshes racing are serialised:
/// the second sees the first's rotation).
pub async fn lock_refresh(
    conn: &mut PgConnection,
    hash: &SecretHash,
) -> sqlx::Result<Option<RefreshRow>> {
    sqlx::query_as!(
        RefreshRow,
        r#"SELECT t.token_sha256, t.authorization_id, z.client_id, t.scopes, t.resources,
                  t.expires_at <= now() AS "expired!",
                  (t.revoked_at IS NOT NULL OR z.revoked_at IS NOT NULL) AS "revoked!",
                  t.rotated_at IS NOT NULL AS "rotated!"
           FROM oauth_tokens t JOIN oauth_authorizations z ON z.id = t.authorization_id
           WHERE t.token_sha256 = $1 AND t.kind = 'refresh'
           FOR UPDATE OF t"#,
        &hash.0[..]
    )
    .fetch_optional(conn)
    .await
}

pub async fn mark_rotated(conn: &mut PgConnection, hash: &SecretHash) -> sqlx::Result<()> {
    sqlx::query!(
        "UPDATE oauth_tokens SET rotated_at = now() WHERE token_sha256 = $1",
        &hash.0[..]
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// A token found by its hash, for revocation: its kind and family.
pub struct TokenRef {
    pub token_sha256: Vec<u8>,
    pub kind: String,
    pub authorization_id: String,
}

pub async fn find_token(pool: &PgPool, hash: &SecretHash) -> sqlx::Result<Option<TokenRef>> {
    sqlx::query_as!(
        TokenRef,
        "SELECT token_sha256, kind, authorization_id FROM oauth_tokens WHERE token_sha256 = $1",
        &hash.0[..]
    )
    .fetch_optional(pool)
    .await
}

pub async fn revoke_token(pool: &PgPool, hash: &SecretHash) -> sqlx::Result<()> {
    sqlx::query!(
        "UPDATE oauth_tokens SET revoked_at = COALESCE(revoked_at, now()) WHERE token_sha256 = $1",
        &hash.0[..]
    )
    .execute(pool)
    .await?;
    Ok(())
}

/// Records that the authorization was used now, at most once a minute (as `keys::touch`).
pub async fn touch(pool: &PgPool, authorization_id: &str) -> sqlx::Result<()> {
    sqlx::query!(
        "UPDATE oauth_authorizations SET last_used_at = now()
         WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')",
        authorization_id
    )
    .execute(pool)
    .await?;
    Ok(())
}

/// An authorization as the console lists it.
pub struct AuthorizationSummary {
    pub id: String,
    pub client_id: String,
    pub client_name: String,
    pub scopes: Vec<String>,
    pub resources: Vec<String>,
    pub created_at: DateTime<Utc>,
    pub last_used_at: Option<DateTime<Utc>>,
}

/// The account's live authorizations (not revoked, with a token not yet expired), newest first.
pub async fn list_authorizations(
    pool: &PgPool,
    account_id: &str,
) -> sqlx::Result<Vec<AuthorizationSummary>> {
    sqlx::query_as!(
        AuthorizationSummary,
        r#"SELECT z.id, z.client_id, z.client_name, z.scopes, z.resources, z.created_at,
                  z.last_used_at
           FROM oauth_authorizations z
           WHERE z.account_id = $1 AND z.revoked_at IS NULL
             AND EXISTS (SELECT 1 FROM oauth_tokens t
                         WHERE t.authorization_id = z.id AND t.revoked_at IS NULL
                           AND t.rotated_at IS NULL AND t.expires_at > now())
           ORDER BY z.created_at DESC, z.id DESC"#,
        account_id
    )
    .fetch_all(pool)
    .await
}

/// Deletes expired codes and tokens (called every minute by `voiced serve`). Rotated refresh
/// tokens stay until they expire: their reuse must still be recognised.
pub async fn purge_expired(pool: &PgPool) -> sqlx::Result<()> {
    sqlx::query!("DELETE FROM oauth_codes WHERE expires_at <= now() - interval '1 day'")
        .execute(pool)
        .await?;
    sqlx::query!("DELETE FROM oauth_tokens WHERE expires_at <= now()")
        .execute(pool)
        .await?;
    Ok(())
}
