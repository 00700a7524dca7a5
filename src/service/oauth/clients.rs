//! OAuth clients: dynamic registration (RFC 7591, public clients only) and client ID metadata
//! documents (an `https` `client_id` URL whose JSON document describes the client, fetched
//! through the SSRF-guarded [`crate::fetch`] and cached in memory).
//!
//! Both are open to anyone, so both are bounded ([`ClientLimits`], keyed on the client address
//! of `http::client_addr`): registrations per address per hour and per day and from everyone
//! per day; document fetches at most `fetches_in_flight` at once and per address per hour
//! (a cached document costs nothing and counts nothing).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::{Value, json};
use sqlx::PgPool;
use url::{Host, Url};

use super::OAuthError;
use crate::domain::Ipv6RatePrefix;
use crate::domain::new_id;
use crate::fetch::{self, FetchPolicy};
use crate::limits::SharedGcra;
use crate::limits::quota::{NamedQuota, address_key, retry_after_secs};
use crate::store;

/// A client as the authorization endpoint needs it.
#[derive(Debug, Clone)]
pub struct Client {
    pub id: String,
    pub name: String,
    pub redirect_uris: Vec<String>,
    /// Identified by a metadata document URL (rather than registered here).
    pub metadata_document: bool,
}

impl Client {
    /// Whether every redirect goes to this machine (the consent page warns: anyone can publish
    /// a document naming a loopback redirect).
    pub fn loopback_only(&self) -> bool {
        self.redirect_uris
            .iter()
            .all(|uri| Url::parse(uri).is_ok_and(|u| u.scheme() == "http" && is_loopback_host(&u)))
    }
}

/// Limits of a metadata document fetch.
pub const DOCUMENT_MAX_BYTES: usize = 64 * 1024;
pub const DOCUMENT_TIMEOUT: Duration = Duration::from_secs(5);
/// A fetched document is kept between these bounds, within them as its `Cache-Control` says.
const CACHE_MIN: Duration = Duration::from_secs(60);
const CACHE_MAX: Duration = Duration::from_secs(24 * 3600);
const CACHE_DEFAULT: Duration = Duration::from_secs(15 * 60);
/// A failed fetch is not retried for this long (a page reload cannot make us fetch in a loop).
const FAILURE_TTL: Duration = Duration::from_secs(60);
const CACHE_ENTRIES: usize = 1024;

const MAX_REDIRECT_URIS: usize = 20;
const MAX_URI_CHARS: usize = 2000;
const MAX_NAME_CHARS: usize = 200;

const HOUR: Duration = Duration::from_secs(3600);
const DAY: Duration = Duration::from_secs(24 * 3600);

/// The bounds of the two open endpoints (settings `oauth_registrations_*` and
/// `oauth_metadata_fetches_*`).
#[derive(Debug, Clone, Copy)]
pub struct ClientLimits {
    pub registrations_per_hour: u32,
    pub registrations_per_address_per_day: u32,
    pub registrations_per_day: u32,
    pub fetches_in_flight: u32,
    pub fetches_per_address_per_hour: u32,
    /// How an IPv6 client address is keyed (setting `ipv6_rate_limit_prefix`).
    pub ipv6_prefix: Ipv6RatePrefix,
}

impl Default for ClientLimits {
    fn default() -> Self {
        Self {
            registrations_per_hour: 20,
            registrations_per_address_per_day: 50,
            registrations_per_day: 1000,
            fetches_in_flight: 4,
            fetches_per_address_per_hour: 60,
            ipv6_prefix: Ipv6RatePrefix::default(),
        }
    }
}

enum Cached {
    Found(Client, Instant),
    Failed(String, Instant),
}

/// Registered clients (PostgreSQL) and metadata documents (fetched, cached here).
pub struct ClientDirectory {
    allow_loopback_fetch: bool,
    registrations_hourly: NamedQuota,
    registrations_daily: NamedQuota,
    registrations_all: NamedQuota,
    fetches: Arc<tokio::sync::Semaphore>,
    fetches_per_address: NamedQuota,
    ipv6_prefix: Ipv6RatePrefix,
    documents: Mutex<HashMap<String, Cached>>,
}

impl ClientDirectory {
    pub fn new(allow_loopback_fetch: bool, limits: ClientLimits) -> Self {
        Self {
            allow_loopback_fetch,
            registrations_hourly: NamedQuota::real(
                "oauth-register",
                limits.registrations_per_hour,
                HOUR,
            ),
            registrations_daily: NamedQuota::real(
                "oauth-register-day",
                limits.registrations_per_address_per_day,
                DAY,
            ),
            registrations_all: NamedQuota::real(
                "oauth-register-all",
                limits.registrations_per_day,
                DAY,
            ),
            fetches: Arc::new(tokio::sync::Semaphore::new(
                limits.fetches_in_flight.max(1) as usize
            )),
            fetches_per_address: NamedQuota::real(
                "oauth-metadata-fetch",
                limits.fetches_per_address_per_hour,
                HOUR,
            ),
            ipv6_prefix: limits.ipv6_prefix,
            documents: Mutex::new(HashMap::new()),
        }
    }

    /// Counts in Redis too (`redis_url`), so that every serve process shares the bounds.
    pub fn with_redis(mut self, shared: Option<Arc<SharedGcra>>) -> Self {
        self.registrations_hourly = self.registrations_hourly.with_redis(shared.clone());
        self.registrations_daily = self.registrations_daily.with_redis(shared.clone());
        self.registrations_all = self.registrations_all.with_redis(shared.clone());
        self.fetches_per_address = self.fetches_per_address.with_redis(shared);
        self
    }

    /// Drops limiter state that has refilled and documents past their time; call periodically.
    pub fn shrink(&self) {
        self.registrations_hourly.shrink();
        self.registrations_daily.shrink();
        self.registrations_all.shrink();
        self.fetches_per_address.shrink();
        let now = Instant::now();
        self.documents
            .lock()
            .expect("not poisoned")
            .retain(|_, entry| match entry {
                Cached::Found(_, until) | Cached::Failed(_, until) => *until > now,
            });
    }

    /// The client named by `client_id`, or why it cannot be used (a sentence for the error
    /// page; never a redirect). `from` is the address of whoever sent the request (documents
    /// fetched for it are counted against it).
    pub async fn resolve(
        &self,
        pool: &PgPool,
        client_id: &str,
        from: Option<IpAddr>,
    ) -> Result<Client, String> {
        if client_id.starts_with("https://") || client_id.starts_with("http://") {
            return self.metadata_document(client_id, from).await;
        }
        if client_id.is_empty() || client_id.len() > 200 {
            return Err("The request names no valid client_id.".into());
        }
        match store::oauth::find_client(pool, client_id).await {
            Ok(Some(row)) => Ok(Client {
                id: row.id,
                name: row.name,
                redirect_uris: row.redirect_uris,
                metadata_document: false,
            }),
            Ok(None) => Err(
                "This application is not registered here (unknown client_id). It must register \
                 again, or use a client ID metadata document."
                    .into(),
            ),
            Err(err) => {
                tracing::error!(error = %err, "looking up an OAuth client failed");
                Err("The service is temporarily unavailable; retry shortly.".into())
            }
        }
    }

    async fn metadata_document(
        &self,
        client_id: &str,
        from: Option<IpAddr>,
    ) -> Result<Client, String> {
        let now = Instant::now();
        if let Some(entry) = self.documents.lock().expect("not poisoned").get(client_id) {
            match entry {
                Cached::Found(client, until) if *until > now => return Ok(client.clone()),
                Cached::Failed(reason, until) if *until > now => return Err(reason.clone()),
                _ => {}
            }
        }
        // A fetch: only so many at once, and counted against the address (neither refusal is
        // cached: it says nothing about the document; a refusal for being busy costs nothing).
        let Ok(_turn) = self.fetches.clone().try_acquire_owned() else {
            metrics::counter!("voiced_oauth_metadata_fetch_refusals_total").increment(1);
            return Err(
                "The server is fetching too many client metadata documents right now; retry in a \
                 moment."
                    .into(),
            );
        };
        if let Err(wait) = self
            .fetches_per_address
            .check(&address_key(from, self.ipv6_prefix))
            .await
        {
            return Err(format!(
                "Too many new client metadata documents were requested from this address; retry \
                 in {} seconds.",
                retry_after_secs(wait)
            ));
        }
        let (outcome, ttl) = match self.fetch_document(client_id).await {
            Ok((client, ttl)) => (Ok(client), ttl),
            Err(reason) => (
                Err(format!(
                    "The application's client ID metadata document at {client_id} cannot be used: {reason}."
                )),
                FAILURE_TTL,
            ),
        };
        let mut documents = self.documents.lock().expect("not poisoned");
        if documents.len() >= CACHE_ENTRIES {
            documents.retain(|_, entry| match entry {
                Cached::Found(_, until) | Cached::Failed(_, until) => *until > now,
            });
            if documents.len() >= CACHE_ENTRIES {
                documents.clear();
            }
        }
        let until = now + ttl;
        let entry = match &outcome {
            Ok(client) => Cached::Found(client.clone(), until),
            Err(reason) => Cached::Failed(reason.clone(), until),
        };
        documents.insert(client_id.to_owned(), entry);
        outcome
    }

    async fn fetch_document(&self, client_id: &str) -> Result<(Client, Duration), String> {
        let url = check_document_url(client_id, self.allow_loopback_fetch)?;
        let policy = FetchPolicy {
            max_bytes: DOCUMENT_MAX_BYTES,
            timeout: DOCUMENT_TIMEOUT,
            allow_loopback: self.allow_loopback_fetch,
        };
        let fetched = fetch::fetch(url.as_str(), "application/json", &policy)
            .await
            .map_err(|err| err.to_string())?;
        let document: Value = serde_json::from_slice(&fetched.body)
            .map_err(|_| "the document is not JSON".to_owned())?;
        let client = client_from_document(client_id, &url, &document)?;
        let ttl = fetched
            .max_age
            .unwrap_or(CACHE_DEFAULT)
            .clamp(CACHE_MIN, CACHE_MAX);
        Ok((client, ttl))
    }

    /// `POST /oauth/register` (RFC 7591): a public client (no secret). At most
    /// `oauth_registrations_per_hour` and `oauth_registrations_per_address_per_day` per client
    /// address, and `oauth_registrations_per_day` from everyone.
    pub async fn register(
        &self,
        pool: &PgPool,
        client: Option<IpAddr>,
        body: &[u8],
    ) -> Result<Value, OAuthError> {
        let key = address_key(client, self.ipv6_prefix);
        let counted = async {
            self.registrations_hourly.check(&key).await?;
            self.registrations_daily.check(&key).await?;
            self.registrations_all.check("all").await
        };
        if let Err(wait) = counted.await {
            return Err(OAuthError::rate_limited(retry_after_secs(wait)));
        }
        let request: RegistrationRequest = serde_json::from_slice(body).map_err(|err| {
            OAuthError::invalid_client_metadata(format!(
                "The body must be a JSON object of client metadata: {err}."
            ))
        })?;
        let redirect_uris = request.redirect_uris.unwrap_or_default();
        check_redirect_uris(&redirect_uris).map_err(OAuthError::invalid_redirect_uri)?;
        check_grant_and_response_types(
            request.grant_types.as_deref(),
            request.response_types.as_deref(),
        )
        .map_err(OAuthError::invalid_client_metadata)?;
        let name = match request.client_name.as_deref().map(str::trim) {
            None | Some("") => "Unnamed application".to_owned(),
            Some(name) => check_name(name).map_err(OAuthError::invalid_client_metadata)?,
        };
        let client_uri = match request.client_uri.as_deref() {
            None | Some("") => None,
            Some(uri) => {
                let ok = uri.len() <= MAX_URI_CHARS
                    && Url::parse(uri).is_ok_and(|u| matches!(u.scheme(), "https" | "http"));
                if !ok {
                    return Err(OAuthError::invalid_client_metadata(
                        "client_uri must be an http(s) URL.",
                    ));
                }
                Some(uri)
            }
        };
        let id = new_id("client");
        store::oauth::insert_client(pool, &id, &name, &redirect_uris, client_uri).await?;
        tracing::info!(client_id = %id, "OAuth client registered");
        let mut response = json!({
            "client_id": id,
            "client_id_issued_at": chrono::Utc::now().timestamp(),
            "client_name": name,
            "redirect_uris": redirect_uris,
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        });
        if let Some(uri) = client_uri {
            response["client_uri"] = json!(uri);
        }
        Ok(response)
    }
}

/// RFC 7591 §2 metadata this server reads; others are ignored.
#[derive(Deserialize)]
struct RegistrationRequest {
    redirect_uris: Option<Vec<String>>,
    client_name: Option<String>,
    client_uri: Option<String>,
    grant_types: Option<Vec<String>>,
    response_types: Option<Vec<String>>,
}

fn check_name(name: &str) -> Result<String, String> {
    if name.chars().count() > MAX_NAME_CHARS || name.chars().any(char::is_control) {
        return Err(format!(
            "client_name must be at most {MAX_NAME_CHARS} characters, without control characters."
        ));
    }
    Ok(name.to_owned())
}

fn check_grant_and_response_types(
    grant_types: Option<&[String]>,
    response_types: Option<&[String]>,
) -> Result<(), String> {
    if let Some(grants) = grant_types
        && (grants
            .iter()
            .any(|g| g != "authorization_code" && g != "refresh_token")
            || !grants.iter().any(|g| g == "authorization_code"))
    {
        return Err(
            "grant_types: this server issues authorization_code and refresh_token grants only."
                .into(),
        );
    }
    if let Some(types) = response_types
        && types.iter().any(|t| t != "code")
    {
        return Err("response_types: this server supports code only.".into());
    }
    Ok(())
}

fn is_loopback_host(url: &Url) -> bool {
    match url.host() {
        Some(Host::Domain(domain)) => domain.eq_ignore_ascii_case("localhost"),
        Some(Host::Ipv4(ip)) => ip.is_loopback(),
        Some(Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// Schemes a redirect may never use (they run code or read local data in a browser).
const FORBIDDEN_SCHEMES: [&str; 10] = [
    "javascript",
    "data",
    "file",
    "vbscript",
    "about",
    "blob",
    "filesystem",
    "ftp",
    "ws",
    "wss",
];

/// One redirect URI: absolute, no fragment; `https`, `http` to a loopback host (native apps,
/// RFC 8252 §7.3), or an application's own scheme (`cursor://…`, RFC 8252 §7.1).
pub fn check_redirect_uri(uri: &str) -> Result<(), String> {
    if uri.len() > MAX_URI_CHARS {
        return Err(format!(
            "a redirect URI is longer than {MAX_URI_CHARS} characters"
        ));
    }
    let url = Url::parse(uri).map_err(|_| format!("{uri:?} is not an absolute URI"))?;
    if url.fragment().is_some() {
        return Err(format!("{uri:?} has a fragment"));
    }
    match url.scheme() {
        "https" if url.host().is_some() => Ok(()),
        "http" if is_loopback_host(&url) => Ok(()),
        "http" => Err(format!(
            "{uri:?} uses http: only loopback redirects (localhost, 127.0.0.1, [::1]) may"
        )),
        scheme if FORBIDDEN_SCHEMES.contains(&scheme) || scheme == "https" => Err(format!(
            "{uri:?} uses a scheme that is not allowed for redirects"
        )),
        _ => Ok(()),
    }
}

fn check_redirect_uris(uris: &[String]) -> Result<(), String> {
    if uris.is_empty() {
        return Err("redirect_uris must list at least one redirect URI.".into());
    }
    if uris.len() > MAX_REDIRECT_URIS {
        return Err(format!(
            "redirect_uris may list at most {MAX_REDIRECT_URIS} URIs."
        ));
    }
    for uri in uris {
        check_redirect_uri(uri).map_err(|e| format!("redirect_uris: {e}."))?;
    }
    Ok(())
}

/// A metadata document URL: `https` (the test allowance admits `http`), a path beyond `/`, no
/// fragment, no credentials, and already in canonical form (no dot segments, lower-case host).
fn check_document_url(client_id: &str, allow_http: bool) -> Result<Url, String> {
    let url = Url::parse(client_id).map_err(|_| "the client_id is not a URL".to_owned())?;
    let scheme_ok = url.scheme() == "https" || (allow_http && url.scheme() == "http");
    if !scheme_ok {
        return Err("a client_id URL must be https".into());
    }
    if client_id.len() > MAX_URI_CHARS
        || url.fragment().is_some()
        || !url.username().is_empty()
        || url.password().is_some()
        || url.path() == "/"
        || url.as_str() != client_id
    {
        return Err(
            "a client_id URL must be a canonical https URL with a path, without fragment or credentials"
                .into(),
        );
    }
    Ok(url)
}

/// The client a metadata document describes (draft-ietf-oauth-client-id-metadata-document §4).
fn client_from_document(client_id: &str, url: &Url, document: &Value) -> Result<Client, String> {
    let object = document
        .as_object()
        .ok_or_else(|| "the document is not a JSON object".to_owned())?;
    if object.get("client_id").and_then(Value::as_str) != Some(client_id) {
        return Err("its client_id is not the URL it was fetched from".into());
    }
    if object.contains_key("client_secret") || object.contains_key("client_secret_expires_at") {
        return Err("it holds a client secret, which a metadata document must not".into());
    }
    if let Some(method) = object.get("token_endpoint_auth_method")
        && method.as_str() != Some("none")
    {
        return Err(
            "its token_endpoint_auth_method is not none (this server has public clients only)"
                .into(),
        );
    }
    let strings = |key: &str| -> Result<Option<Vec<String>>, String> {
        match object.get(key) {
            None => Ok(None),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| v.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
                .map(Some)
                .ok_or_else(|| format!("its {key} is not a list of strings")),
            Some(_) => Err(format!("its {key} is not a list of strings")),
        }
    };
    let redirect_uris = strings("redirect_uris")?.unwrap_or_default();
    check_redirect_uris(&redirect_uris).map_err(|e| e.trim_end_matches('.').to_owned())?;
    check_grant_and_response_types(
        strings("grant_types")?.as_deref(),
        strings("response_types")?.as_deref(),
    )
    .map_err(|e| e.trim_end_matches('.').to_owned())?;
    let name = match object
        .get("client_name")
        .and_then(Value::as_str)
        .map(str::trim)
    {
        None | Some("") => url.host_str().unwrap_or("unnamed").to_owned(),
        Some(name) => check_name(name).map_err(|e| e.trim_end_matches('.').to_owned())?,
    };
    Ok(Client {
        id: client_id.to_owned(),
        name,
        redirect_uris,
        metadata_document: true,
    })
}

/// `POST /oauth/register` (RFC 7591): registers the client `body` describes, counted against the
/// registration limits of `client`'s address and in all.
pub async fn register(
    core: &crate::service::Core,
    client: Option<IpAddr>,
    body: &[u8],
) -> Result<Value, OAuthError> {
    core.oauth.clients.register(&core.pool, client, body).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirect_uris() {
        for ok in [
            "https://claude.ai/api/mcp/auth_callback",
            "http://localhost:33418/callback",
            "http://127.0.0.1:6276/oauth/callback",
            "http://[::1]/cb",
            "cursor://anysphere.cursor-retrieval/oauth/callback",
            "com.example.app:/oauth2redirect",
        ] {
            assert!(check_redirect_uri(ok).is_ok(), "{ok}");
        }
        for bad in [
            "http://example.com/callback",
            "https://example.com/cb#frag",
            "javascript:alert(1)",
            "data:text/html,hi",
            "file:///etc/passwd",
            "/relative/path",
            "",
        ] {
            assert!(check_redirect_uri(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn document_urls_and_documents() {
        assert!(check_document_url("https://app.example.com/oauth/client.json", false).is_ok());
        for bad in [
            "http://app.example.com/client.json",
            "https://app.example.com/",
            "https://app.example.com",
            "https://app.example.com/a/../client.json",
            "https://App.Example.com/client.json",
            "https://user@app.example.com/client.json",
            "https://app.example.com/client.json#x",
        ] {
            assert!(check_document_url(bad, false).is_err(), "{bad}");
        }
        assert!(check_document_url("http://127.0.0.1:9/client.json", true).is_ok());

        let id = "https://app.example.com/client.json";
        let url = Url::parse(id).unwrap();
        let good = json!({"client_id": id, "client_name": "App", "redirect_uris": ["http://127.0.0.1:3000/cb"]});
        let client = client_from_document(id, &url, &good).unwrap();
        assert_eq!(client.name, "App");
        assert!(client.loopback_only());
        for bad in [
            json!({"client_id": "https://other.example.com/client.json", "redirect_uris": ["https://a.example/cb"]}),
            json!({"client_id": id}),
            json!({"client_id": id, "redirect_uris": ["http://evil.example/cb"]}),
            json!({"client_id": id, "redirect_uris": ["https://a.example/cb"], "client_secret": "x"}),
            json!({"client_id": id, "redirect_uris": ["https://a.example/cb"], "token_endpoint_auth_method": "client_secret_basic"}),
            json!({"client_id": id, "redirect_uris": ["https://a.example/cb"], "grant_types": ["client_credentials"]}),
            json!([1, 2]),
        ] {
            assert!(client_from_document(id, &url, &bad).is_err(), "{bad}");
        }
    }
}
