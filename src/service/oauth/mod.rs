//! The OAuth 2.1 authorization server's core (docs/oauth.md): clients (dynamic registration and
//! metadata documents), authorization requests and codes, tokens, and the authorizations an
//! account has granted. `src/oauth/` (the endpoints) and `src/console/oauth.rs` (consent and the
//! applications page) are its doors; `http::auth` authenticates access tokens through
//! [`tokens::authenticate`].
//!
//! The issuer is the configured public base URL, never a request's Host header. Resources
//! (RFC 8707 audiences): `{issuer}/v1` (the REST API), `{issuer}/mcp` (the agent interface), and
//! `{issuer}` itself, which covers both.

pub mod authorize;
pub mod clients;
pub mod tokens;

use std::time::Duration;

use crate::domain::Scope;

/// Authorization codes live this long.
pub const CODE_LIFETIME: Duration = Duration::from_secs(10 * 60);
/// Access tokens (`vat_…`).
pub const ACCESS_TOKEN_LIFETIME: Duration = Duration::from_secs(3600);
/// Refresh tokens (`vrt_…`), each rotation starting a new period.
pub const REFRESH_TOKEN_LIFETIME: Duration = Duration::from_secs(30 * 24 * 3600);

/// The authorization server's settings and in-process state.
pub struct OAuthSettings {
    /// The issuer: `public_base_url`, no trailing slash.
    pub issuer: String,
    pub clients: clients::ClientDirectory,
}

impl OAuthSettings {
    pub fn new(issuer: &str, clients: clients::ClientDirectory) -> Self {
        Self {
            issuer: issuer.trim_end_matches('/').to_owned(),
            clients,
        }
    }

    /// The REST API's resource identifier.
    pub fn api_resource(&self) -> String {
        format!("{}/v1", self.issuer)
    }

    /// The agent interface's resource identifier.
    pub fn mcp_resource(&self) -> String {
        format!("{}/mcp", self.issuer)
    }

    /// Every resource a token may be issued for, canonical form.
    pub fn resources(&self) -> [String; 3] {
        [
            self.issuer.clone(),
            self.api_resource(),
            self.mcp_resource(),
        ]
    }

    /// `requested` in canonical form when it names one of [`Self::resources`] (one trailing
    /// slash tolerated), else `None`.
    pub fn canonical_resource(&self, requested: &str) -> Option<String> {
        let trimmed = requested.strip_suffix('/').unwrap_or(requested);
        self.resources().into_iter().find(|r| r == trimmed)
    }

    /// Whether a token with audience `audience` may be used on `resource` (`{issuer}` covers
    /// every resource of this server).
    pub fn audience_allows(&self, audience: &[String], resource: &str) -> bool {
        audience.iter().any(|a| a == resource || *a == self.issuer)
    }
}

/// The request's parameters (a query string or a form body); repeated ones are kept.
pub(crate) struct Params(Vec<(String, String)>);

impl Params {
    pub(crate) fn parse(query: &str) -> Self {
        Self(
            url::form_urlencoded::parse(query.as_bytes())
                .into_owned()
                .collect(),
        )
    }

    /// `Err` when the parameter is repeated (RFC 6749 §3.1).
    pub(crate) fn single(&self, name: &str) -> Result<Option<&str>, ()> {
        let mut values = self.0.iter().filter(|(k, _)| k == name).map(|(_, v)| v);
        let first = values.next();
        if values.next().is_some() {
            return Err(());
        }
        Ok(first.map(String::as_str))
    }

    pub(crate) fn all(&self, name: &str) -> Vec<&str> {
        self.0
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }
}

/// Scopes as a space-separated `scope` parameter (RFC 6749 §3.3). `offline_access` is ignored
/// (refresh tokens are always issued); an unknown scope is an error naming it; empty means
/// every scope.
pub fn parse_scope_param(param: Option<&str>) -> Result<Vec<Scope>, String> {
    let mut scopes = Vec::new();
    for part in param.unwrap_or("").split(' ').filter(|p| !p.is_empty()) {
        if part == "offline_access" {
            continue;
        }
        let scope: Scope = part.parse().map_err(|_| {
            format!("unknown scope {part:?}: this server has voice:read and voice:generate")
        })?;
        if !scopes.contains(&scope) {
            scopes.push(scope);
        }
    }
    if scopes.is_empty() {
        scopes = Scope::ALL.to_vec();
    }
    Ok(scopes)
}

pub fn scope_string(scopes: &[Scope]) -> String {
    scopes
        .iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

pub fn scope_names(scopes: &[Scope]) -> Vec<String> {
    scopes.iter().map(|s| s.as_str().to_owned()).collect()
}

/// An error of the token, revocation or registration endpoint: RFC 6749 §5.2 / RFC 7591 §3.2.2
/// (`{"error", "error_description"}`).
#[derive(Debug)]
pub struct OAuthError {
    /// The RFC's error code; the door picks the HTTP status from it.
    pub error: &'static str,
    pub description: String,
    pub retry_after_secs: Option<u64>,
}

impl OAuthError {
    fn new(error: &'static str, description: impl Into<String>) -> Self {
        Self {
            error,
            description: description.into(),
            retry_after_secs: None,
        }
    }

    pub fn invalid_request(description: impl Into<String>) -> Self {
        Self::new("invalid_request", description)
    }

    pub fn invalid_grant(description: impl Into<String>) -> Self {
        Self::new("invalid_grant", description)
    }

    pub fn invalid_client(description: impl Into<String>) -> Self {
        Self::new("invalid_client", description)
    }

    pub fn invalid_scope(description: impl Into<String>) -> Self {
        Self::new("invalid_scope", description)
    }

    pub fn invalid_target(description: impl Into<String>) -> Self {
        Self::new("invalid_target", description)
    }

    pub fn unsupported_grant_type(description: impl Into<String>) -> Self {
        Self::new("unsupported_grant_type", description)
    }

    pub fn invalid_client_metadata(description: impl Into<String>) -> Self {
        Self::new("invalid_client_metadata", description)
    }

    pub fn invalid_redirect_uri(description: impl Into<String>) -> Self {
        Self::new("invalid_redirect_uri", description)
    }

    pub fn rate_limited(retry_after_secs: u64) -> Self {
        let mut err = Self::new(
            "rate_limit_exceeded",
            format!(
                "Too many client registrations from this address or in all; retry after \
                 {retry_after_secs} seconds."
            ),
        );
        err.retry_after_secs = Some(retry_after_secs.max(1));
        err
    }
}

impl From<sqlx::Error> for OAuthError {
    fn from(err: sqlx::Error) -> Self {
        let service = crate::service::ServiceError::from(err);
        if service.code == crate::service::ErrorCode::ServiceUnavailable {
            let mut err = Self::new(
                "temporarily_unavailable",
                "The service is temporarily unavailable; retry shortly.",
            );
            err.retry_after_secs = service.retry_after_secs;
            err
        } else {
            Self::new("server_error", service.detail)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_and_resources() {
        assert_eq!(parse_scope_param(None).unwrap(), Scope::ALL.to_vec());
        assert_eq!(
            parse_scope_param(Some("voice:read offline_access")).unwrap(),
            vec![Scope::VoiceRead]
        );
        assert!(parse_scope_param(Some("voice:read admin")).is_err());
        let oauth = OAuthSettings::new(
            "https://voice.example.com/",
            clients::ClientDirectory::new(false, clients::ClientLimits::default()),
        );
        assert_eq!(oauth.issuer, "https://voice.example.com");
        assert_eq!(
            oauth
                .canonical_resource("https://voice.example.com/mcp/")
                .as_deref(),
            Some("https://voice.example.com/mcp")
        );
        assert_eq!(
            oauth.canonical_resource("https://evil.example.com/mcp"),
            None
        );
        assert_eq!(
            oauth.canonical_resource("https://voice.example.com/v1/voices"),
            None
        );
        let api = oauth.api_resource();
        assert!(oauth.audience_allows(std::slice::from_ref(&api), &api));
        assert!(!oauth.audience_allows(&[oauth.mcp_resource()], &api));
        assert!(oauth.audience_allows(std::slice::from_ref(&oauth.issuer), &api));
    }
}
