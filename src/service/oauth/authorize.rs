//! Authorization requests (`GET /oauth/authorize`, RFC 6749 §4.1.1 with PKCE and RFC 8707
//! resources) and the codes the consent page issues.
//!
//! The client and its exact redirect URI are checked first: when either is wrong the user sees
//! an error page and is never redirected (an attacker could otherwise bounce users anywhere).
//! A later fault goes back to the client's redirect URI as `error`, `error_description`,
//! `state` and `iss` (RFC 9207) only on the path where this user was shown the request's
//! consent page in this browser session ([`Shown::ConsentPage`]: the console binds the page to
//! the session that saw it, and its answer to that session's CSRF token); everywhere else the
//! user reads the fault on the error page. Anyone can register a client naming any https
//! redirect URI, and redeeming a code for one's own client proves nothing about the victim's
//! flow, so redirecting on a registered (or once-redeemed) URI alone would make this server an
//! open redirector (RFC 9700 §4.11.2).

use crate::service::Core;
use url::Url;

/// The page's sentence for a redirect URI that cannot be sent back as a header.
pub const BAD_REDIRECT_URI: &str = "The application's redirect URI cannot be used.";

/// The page's sentence for an answer to a consent page this browser session was not shown.
pub const NOT_SHOWN: &str = "This answer is not to a consent page this browser was shown (or it \
     was answered already); nothing was sent to the application. Start again from the \
     application.";

use super::clients::Client;
use super::{CODE_LIFETIME, Params, parse_scope_param, scope_names};
use crate::domain::Scope;
use crate::domain::oauth::{OAuthSecret, is_pkce_string};
use crate::service::ServiceError;
use crate::store;

/// A checked authorization request.
#[derive(Debug, Clone)]
pub struct AuthorizationRequest {
    pub client: Client,
    pub redirect_uri: String,
    pub state: Option<String>,
    pub code_challenge: String,
    pub scopes: Vec<Scope>,
    /// Canonical resource identifiers: the tokens' audience.
    pub resources: Vec<String>,
    /// Whether this browser session was shown the request's consent page: only then may a
    /// code or an error go back to the redirect URI.
    pub shown: Shown,
}

#[derive(Debug)]
pub enum RequestError {
    /// The client or its redirect URI cannot be trusted: an error page, never a redirect.
    Page(String),
    /// Back to the client: this `Location`.
    Redirect(String),
}

/// Whether the user was shown this request's consent page in this browser session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shown {
    /// `GET /oauth/authorize`, the consent page itself, or an answer to a consent page this
    /// session was not shown: faults are told on the error page, never by a redirect.
    Nothing,
    /// The answer to a consent page this browser session was shown for this very request:
    /// faults go back to the client's redirect URI, which the page named.
    ConsentPage,
}

/// Checks an authorization request given as its query string, sent from `from` (the client
/// address: a metadata document fetched for the request counts against it). `shown` decides
/// whether a fault after the client check may redirect ([`Shown`]).
pub async fn validate(
    core: &Core,
    query: &str,
    from: Option<std::net::IpAddr>,
    shown: Shown,
) -> Result<AuthorizationRequest, RequestError> {
    let (oauth, pool) = (&*core.oauth, &core.pool);
    let params = Params::parse(query);
    let client_id = params
        .single("client_id")
        .map_err(|()| RequestError::Page("The request repeats client_id.".into()))?
        .ok_or_else(|| RequestError::Page("The request names no client_id.".into()))?;
    let client = oauth
        .clients
        .resolve(pool, client_id, from)
        .await
        .map_err(RequestError::Page)?;
    let redirect_uri = match params.single("redirect_uri") {
        Err(()) => {
            return Err(RequestError::Page(
                "The request repeats redirect_uri.".into(),
            ));
        }
        Ok(Some(uri)) if client.redirect_uris.iter().any(|r| r == uri) => uri.to_owned(),
        Ok(Some(_)) => {
            return Err(RequestError::Page(format!(
                "The redirect_uri is not one that {} registered (it must match exactly).",
                client.name
            )));
        }
        Ok(None) if client.redirect_uris.len() == 1 => client.redirect_uris[0].clone(),
        Ok(None) => {
            return Err(RequestError::Page(
                "The request names no redirect_uri, and the application registered several.".into(),
            ));
        }
    };
    // From here on the client is told what went wrong only where the user saw the consent
    // page of this request; the user reads it on the error page otherwise.
    let state = params.single("state").ok().flatten().map(str::to_owned);
    let back = |error: &str, description: &str| {
        if shown != Shown::ConsentPage {
            return RequestError::Page(format!(
                "{} sent an authorization request this server cannot accept ({error}): \
                 {description}",
                client.name
            ));
        }
        RequestError::Redirect(error_location(
            &redirect_uri,
            error,
            description,
            state.as_deref(),
            &oauth.issuer,
        ))
    };
    let mut singles = Vec::new();
    for name in [
        "response_type",
        "code_challenge",
        "code_challenge_method",
        "scope",
        "state",
    ] {
        singles.push(
            params
                .single(name)
                .map_err(|()| back("invalid_request", &format!("The request repeats {name}.")))?,
        );
    }
    let &[response_type, code_challenge, method, scope, _] = singles.as_slice() else {
        unreachable!("five names")
    };
    match response_type {
        Some("code") => {}
        None => return Err(back("invalid_request", "response_type=code is required.")),
        Some(_) => {
            return Err(back(
                "unsupported_response_type",
                "Only response_type=code is supported.",
            ));
        }
    }
    match method {
        Some("S256") => {}
        None => {
            return Err(back(
                "invalid_request",
                "PKCE is required: send code_challenge with code_challenge_method=S256.",
            ));
        }
        Some(_) => {
            return Err(back(
                "invalid_request",
                "Only code_challenge_method=S256 is supported.",
            ));
        }
    }
    let code_challenge = code_challenge
        .filter(|c| is_pkce_string(c))
        .ok_or_else(|| {
            back(
                "invalid_request",
                "code_challenge must be the base64url SHA-256 of the code verifier.",
            )
        })?
        .to_owned();
    let scopes = parse_scope_param(scope).map_err(|e| back("invalid_scope", &e))?;
    let mut resources = Vec::new();
    for requested in params.all("resource") {
        let canonical = oauth.canonical_resource(requested).ok_or_else(|| {
            back(
                "invalid_target",
                &format!(
                    "resource must be {} (the API), {} (the agent interface) or {}.",
                    oauth.api_resource(),
                    oauth.mcp_resource(),
                    oauth.issuer
                ),
            )
        })?;
        if !resources.contains(&canonical) {
            resources.push(canonical);
        }
    }
    if resources.is_empty() {
        resources.push(oauth.issuer.clone());
    }
    Ok(AuthorizationRequest {
        client,
        redirect_uri,
        state,
        code_challenge,
        scopes,
        resources,
        shown,
    })
}

/// Issues a code for the signed-in `account_id` and returns where to send the browser.
pub async fn allow(
    core: &Core,
    request: &AuthorizationRequest,
    account_id: &str,
) -> Result<String, ServiceError> {
    let (oauth, pool) = (&*core.oauth, &core.pool);
    if request.shown != Shown::ConsentPage {
        return Err(ServiceError::new(
            crate::service::ErrorCode::InvalidRequest,
            NOT_SHOWN,
        ));
    }
    let code = OAuthSecret::generate("");
    let expires_at =
        chrono::Utc::now() + chrono::TimeDelta::from_std(CODE_LIFETIME).expect("ten minutes fit");
    store::oauth::insert_code(
        pool,
        &code.hash(),
        &store::oauth::Grant {
            account_id,
            client_id: &request.client.id,
            client_name: &request.client.name,
            scopes: &scope_names(&request.scopes),
            resources: &request.resources,
        },
        &request.redirect_uri,
        &request.code_challenge,
        expires_at,
    )
    .await?;
    tracing::info!(client_id = %request.client.id, "OAuth authorization code issued");
    Ok(location(
        &request.redirect_uri,
        &[
            ("code", Some(code.expose())),
            ("state", request.state.as_deref()),
            ("iss", Some(&oauth.issuer)),
        ],
    ))
}

/// Where to send the browser when the user refuses on the consent page it was shown (an
/// error page otherwise: [`Shown`]).
pub fn deny(core: &Core, request: &AuthorizationRequest) -> Result<String, RequestError> {
    let oauth = &*core.oauth;
    if request.shown != Shown::ConsentPage {
        return Err(RequestError::Page(NOT_SHOWN.into()));
    }
    Ok(error_location(
        &request.redirect_uri,
        "access_denied",
        "The user refused.",
        request.state.as_deref(),
        &oauth.issuer,
    ))
}

fn error_location(
    redirect_uri: &str,
    error: &str,
    description: &str,
    state: Option<&str>,
    issuer: &str,
) -> String {
    location(
        redirect_uri,
        &[
            ("error", Some(error)),
            ("error_description", Some(description)),
            ("state", state),
            ("iss", Some(issuer)),
        ],
    )
}

/// `redirect_uri` with `params` added to its query (kept as registered otherwise).
fn location(redirect_uri: &str, params: &[(&str, Option<&str>)]) -> String {
    let mut url = Url::parse(redirect_uri).expect("redirect URIs are checked absolute URIs");
    {
        let mut query = url.query_pairs_mut();
        for (name, value) in params {
            if let Some(value) = value {
                query.append_pair(name, value);
            }
        }
    }
    url.into()
}

/// The host a redirect goes to, as the consent page names it (the scheme for app schemes).
pub fn redirect_host(redirect_uri: &str) -> String {
    match Url::parse(redirect_uri) {
        Ok(url) => match url.host_str() {
            Some(host) => match url.port() {
                Some(port) => format!("{host}:{port}"),
                None => host.to_owned(),
            },
            None => format!("{}:", url.scheme()),
        },
        Err(_) => redirect_uri.to_owned(),
    }
}

/// The origin a consent form's answer is redirected to, for its `form-action` source list.
pub fn redirect_origin(redirect_uri: &str) -> String {
    match Url::parse(redirect_uri) {
        Ok(url) if url.host_str().is_some() && matches!(url.scheme(), "http" | "https") => {
            url.origin().ascii_serialization()
        }
        Ok(url) => format!("{}:", url.scheme()),
        Err(_) => "'none'".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_keep_the_registered_query() {
        let to = location(
            "https://app.example.com/cb?tenant=a",
            &[
                ("code", Some("x y")),
                ("state", None),
                ("iss", Some("https://v.example")),
            ],
        );
        assert_eq!(
            to,
            "https://app.example.com/cb?tenant=a&code=x+y&iss=https%3A%2F%2Fv.example"
        );
        assert_eq!(redirect_host("http://127.0.0.1:3000/cb"), "127.0.0.1:3000");
        assert_eq!(
            redirect_host("cursor://anysphere.cursor-retrieval/cb"),
            "anysphere.cursor-retrieval"
        );
        assert_eq!(
            redirect_origin("https://claude.ai/api/mcp/auth_callback"),
            "https://claude.ai"
        );
        assert_eq!(redirect_origin("com.example.app:/cb"), "com.example.app:");
    }
}
