//! Webhook endpoints (docs/webhooks.md): the rules of an account's endpoints. The outbound
//! delivery loop is a worker (`worker::webhooks`).
//!
//! - Endpoints: an `https` URL (any scheme and address with `webhooks_allow_private_addresses`),
//!   1 to 3 known events, a description up to [`MAX_DESCRIPTION_CHARS`], at most
//!   [`MAX_ENDPOINTS_PER_ACCOUNT`] per account; registering needs a paid plan. The secret
//!   (`whsec_` + base64 of 32 random bytes) is shown once and stored sealed
//!   ([`crate::signing::Sealer`]). A rotation keeps the previous secret signing for
//!   [`ROTATION_OVERLAP`].
//! - An endpoint has at most [`MAX_PENDING_PER_ENDPOINT`] pending deliveries (an event beyond
//!   that is not written for it); a resend is limited to [`RESENDS_PER_MINUTE`] per account and
//!   keeps the event's retry window.

use crate::service::Core;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use chrono::{DateTime, Utc};
use rand::RngCore;
use serde::Serialize;
use url::{Host, Url};

use super::error::{ErrorCode, ServiceError};
use super::principal::require_paid_plan;
use crate::fetch::{self};
use crate::signing::Sealer;
use crate::store;
pub use crate::store::webhooks::MAX_PENDING_PER_ENDPOINT;
use crate::store::webhooks::{DeliveryRow, EndpointRow};

/// The events an endpoint may ask for.
pub const EVENTS: [&str; 3] = [
    store::webhooks::GENERATION_COMPLETED,
    store::webhooks::GENERATION_FAILED,
    store::webhooks::CAPTURE_CREATED,
];
pub const MAX_ENDPOINTS_PER_ACCOUNT: i64 = 10;
pub const MAX_URL_BYTES: usize = 2048;
pub const MAX_DESCRIPTION_CHARS: usize = 200;
/// How long the previous secret keeps signing after a rotation.
pub const ROTATION_OVERLAP: Duration = Duration::from_secs(24 * 3600);
/// Resends an account may ask for per minute (a fixed one-minute window).
pub const RESENDS_PER_MINUTE: i32 = 20;
const SECRET_PREFIX: &str = "whsec_";

/// A webhook endpoint (DECISIONS, "Wave 3 decisions").
#[derive(Debug, Clone, Serialize)]
pub struct Endpoint {
    pub id: String,
    pub url: String,
    pub events: Vec<String>,
    pub description: String,
    pub enabled: bool,
    pub created_at: DateTime<Utc>,
    /// Why it is disabled (`gone`: the receiver answered 410; `failing`: 3 days of failures).
    #[serde(skip)]
    pub disabled_reason: Option<String>,
}

impl From<EndpointRow> for Endpoint {
    fn from(row: EndpointRow) -> Self {
        Self {
            id: row.id,
            url: row.url,
            events: row.events,
            description: row.description,
            enabled: row.enabled,
            created_at: row.created_at,
            disabled_reason: row.disabled_reason,
        }
    }
}

/// A new secret: its raw bytes and how it is shown (`whsec_` + base64).
fn new_secret() -> (Vec<u8>, String) {
    let mut bytes = vec![0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    let shown = format!("{SECRET_PREFIX}{}", STANDARD.encode(&bytes));
    (bytes, shown)
}

/// A checked endpoint URL: absolute, `https` (or `http` with `allow_private`), no user info, at
/// most [`MAX_URL_BYTES`]; an address written in it must be public unless `allow_private`.
/// Names are resolved and vetted again on every attempt.
pub fn check_url(raw: &str, allow_private: bool) -> Result<String, ServiceError> {
    let refuse = |why: &str| ServiceError::invalid("url", why.to_owned());
    let raw = raw.trim();
    if raw.is_empty() || raw.len() > MAX_URL_BYTES {
        return Err(refuse(&format!(
            "url must be an https URL of 1 to {MAX_URL_BYTES} bytes"
        )));
    }
    let url = Url::parse(raw).map_err(|_| refuse("url must be an absolute https URL"))?;
    match url.scheme() {
        "https" => {}
        "http" if allow_private => {}
        _ => return Err(refuse("url must be an https URL")),
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(refuse("url must not carry a user name or password"));
    }
    let public = match url.host() {
        None => return Err(refuse("url must name a host")),
        Some(Host::Ipv4(ip)) => fetch::is_public(ip.into()),
        Some(Host::Ipv6(ip)) => fetch::is_public(ip.into()),
        Some(Host::Domain(name)) => {
            let name = name.to_ascii_lowercase();
            !(name == "localhost" || name.ends_with(".localhost"))
        }
    };
    if !public && !allow_private {
        return Err(refuse(
            "url must point at a public address (private, loopback and link-local addresses are refused)",
        ));
    }
    Ok(url.to_string())
}

/// Checked events: 1 to 3 of [`EVENTS`], each once (order kept).
pub fn check_events<S: AsRef<str>>(events: &[S]) -> Result<Vec<String>, ServiceError> {
    let mut out: Vec<String> = Vec::new();
    for event in events {
        let event = event.as_ref().trim();
        if !EVENTS.contains(&event) {
            return Err(ServiceError::invalid(
                "events",
                format!(
                    "unknown event {:?}: events are {}",
                    event.chars().take(64).collect::<String>(),
                    EVENTS.join(", ")
                ),
            ));
        }
        if !out.iter().any(|e| e == event) {
            out.push(event.to_owned());
        }
    }
    if out.is_empty() {
        return Err(ServiceError::invalid(
            "events",
            format!("name at least one event: {}", EVENTS.join(", ")),
        ));
    }
    Ok(out)
}

/// A checked description: at most [`MAX_DESCRIPTION_CHARS`] characters, no control characters.
pub fn check_description(raw: &str) -> Result<String, ServiceError> {
    let text = raw.trim();
    if text.chars().count() > MAX_DESCRIPTION_CHARS || text.chars().any(char::is_control) {
        return Err(ServiceError::invalid(
            "description",
            format!(
                "description must be at most {MAX_DESCRIPTION_CHARS} characters, without control characters"
            ),
        ));
    }
    Ok(text.to_owned())
}

/// What registering an endpoint takes.
pub struct NewEndpoint<'a> {
    pub url: &'a str,
    pub events: &'a [String],
    pub description: &'a str,
}

/// Registers an endpoint for `account_id`; returns it and its secret (shown this once). The
/// account needs a paid plan (403 `pro_plan_required`, the API's own plan rule).
pub async fn create(
    core: &Core,
    account_id: &str,
    new: NewEndpoint<'_>,
) -> Result<(Endpoint, String), ServiceError> {
    let (pool, sealer, allow_private) = (
        &core.pool,
        &Sealer::new(&core.signer),
        core.webhooks_allow_private,
    );
    let url = check_url(new.url, allow_private)?;
    let events = check_events(new.events)?;
    let description = check_description(new.description)?;
    let id = crate::domain::new_id("whep");
    let (secret, shown) = new_secret();
    let sealed = sealer.seal(&id, &secret);
    let mut tx = pool.begin().await?;
    let Some(plan) = store::webhooks::lock_account(&mut tx, account_id).await? else {
        return Err(ServiceError::not_found());
    };
    require_paid_plan(plan.parse().map_err(ServiceError::internal)?)?;
    if store::webhooks::count(&mut tx, account_id).await? >= MAX_ENDPOINTS_PER_ACCOUNT {
        return Err(ServiceError::new(
            ErrorCode::Conflict,
            format!(
                "An account has at most {MAX_ENDPOINTS_PER_ACCOUNT} webhook endpoints; delete one first."
            ),
        ));
    }
    let created_at = store::webhooks::insert(
        &mut tx,
        store::webhooks::NewEndpoint {
            id: &id,
            account_id,
            url: &url,
            events: &events,
            description: &description,
            secret_sealed: &sealed,
        },
    )
    .await?;
    tx.commit().await?;
    Ok((
        Endpoint {
            id,
            url,
            events,
            description,
            enabled: true,
            created_at,
            disabled_reason: None,
        },
        shown,
    ))
}

/// The account's endpoints, oldest first.
pub async fn list(core: &Core, account_id: &str) -> Result<Vec<Endpoint>, ServiceError> {
    let pool = &core.pool;
    Ok(store::webhooks::list(pool, account_id)
        .await?
        .into_iter()
        .map(Endpoint::from)
        .collect())
}

/// Deletes the account's endpoint `id` (its pending deliveries with it); 404 for another
/// account's or a missing one.
pub async fn delete(core: &Core, account_id: &str, id: &str) -> Result<(), ServiceError> {
    let pool = &core.pool;
    if store::webhooks::delete(pool, account_id, id).await? {
        Ok(())
    } else {
        Err(ServiceError::not_found())
    }
}

/// Gives the account's endpoint `id` a new secret (returned, shown this once); the previous one
/// keeps signing for [`ROTATION_OVERLAP`].
pub async fn rotate_secret(
    core: &Core,
    account_id: &str,
    id: &str,
) -> Result<String, ServiceError> {
    let (pool, sealer) = (&core.pool, &Sealer::new(&core.signer));
    let (secret, shown) = new_secret();
    let sealed = sealer.seal(id, &secret);
    let until = Utc::now() + ROTATION_OVERLAP;
    if store::webhooks::rotate(pool, account_id, id, &sealed, until).await? {
        Ok(shown)
    } else {
        Err(ServiceError::not_found())
    }
}

/// The most recent deliveries of the account's endpoint `id`, newest first.
pub async fn deliveries(
    core: &Core,
    account_id: &str,
    endpoint_id: &str,
    limit: i64,
) -> Result<Vec<DeliveryRow>, ServiceError> {
    let pool = &core.pool;
    Ok(store::webhooks::recent(pool, account_id, endpoint_id, limit).await?)
}

/// Sends the account's delivery `id` again, now, with the same `webhook-id`, within the retry
/// window of its event (a resend after the window gets this one attempt). At most
/// [`RESENDS_PER_MINUTE`] per account (429 `rate_limit_exceeded`); one being sent at the moment
/// is left to that attempt.
pub async fn resend(core: &Core, account_id: &str, id: &str) -> Result<(), ServiceError> {
    let pool = &core.pool;
    // The delivery's row first, then the account's (the order in which an attempt being
    // recorded takes them, so the two never wait for each other).
    let mut tx = pool.begin().await?;
    match store::webhooks::resend(&mut tx, account_id, id).await? {
        None => return Err(ServiceError::not_found()),
        // Being sent now: nothing made due, nothing counted.
        Some(true) => return Ok(()),
        Some(false) => {}
    }
    if !store::webhooks::take_resend(&mut tx, account_id, RESENDS_PER_MINUTE).await? {
        let wait = store::webhooks::resend_wait_secs(&mut tx, account_id).await?;
        return Err(ServiceError::new(
            ErrorCode::RateLimitExceeded,
            format!("At most {RESENDS_PER_MINUTE} deliveries can be sent again per minute."),
        )
        .with_retry_after(u64::try_from(wait).unwrap_or(60)));
    }
    Ok(tx.commit().await?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signing::AudioSigner;

    #[test]
    fn urls_events_and_descriptions_are_checked() {
        assert!(check_url("https://hooks.example.com/voiced", false).is_ok());
        for bad in [
            "http://hooks.example.com/x",
            "https://127.0.0.1/x",
            "https://10.0.0.1/x",
            "https://[::1]/x",
            "https://localhost/x",
            "https://user:pw@example.com/x",
            "ftp://example.com/x",
            "not a url",
            "",
        ] {
            let err = check_url(bad, false).unwrap_err();
            assert_eq!(err.param.as_deref(), Some("url"), "{bad}");
        }
        assert!(check_url("http://127.0.0.1:9/x", true).is_ok());
        assert_eq!(
            check_events(&["generation.completed", "generation.completed"]).unwrap(),
            ["generation.completed"]
        );
        assert!(check_events::<&str>(&[]).is_err());
        assert!(check_events(&["generation.started"]).is_err());
        assert!(check_description(&"x".repeat(MAX_DESCRIPTION_CHARS + 1)).is_err());
        assert!(check_description("line\nbreak").is_err());
        assert_eq!(
            check_description("  Billing hook ").unwrap(),
            "Billing hook"
        );
    }

    #[test]
    fn secrets_open_only_for_their_endpoint() {
        let sealer = Sealer::new(&AudioSigner::new(vec![7u8; 32]));
        let sealed = sealer.seal("whep_a", b"secret bytes");
        assert_eq!(sealer.open("whep_a", &sealed).unwrap(), b"secret bytes");
        assert!(sealer.open("whep_b", &sealed).is_none());
        let other = Sealer::new(&AudioSigner::new(vec![8u8; 32]));
        assert!(other.open("whep_a", &sealed).is_none());
        let (bytes, shown) = new_secret();
        assert_eq!(bytes.len(), 32);
        assert_eq!(
            STANDARD
                .decode(shown.strip_prefix("whsec_").unwrap())
                .unwrap(),
            bytes
        );
    }
}
