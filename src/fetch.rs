//! Fetching a URL a client named (an OAuth client's metadata document, an audio URL) without
//! letting the client reach what only the server can: SSRF protection.
//!
//! Rules (docs/oauth.md, "Fetching client URLs"):
//! - `https` only; no user info in the URL.
//! - The host is resolved once, here, and **every** address it resolves to must be public: no
//!   loopback, private (RFC 1918), CGNAT (100.64/10), link-local, unspecified, multicast,
//!   broadcast, documentation, benchmarking or reserved v4 ranges; no v6 loopback, unspecified,
//!   ULA (fc00::/7), link-local, site-local, multicast, documentation, Teredo, discard, and the
//!   embedded v4 of v4-mapped, v4-compatible, NAT64 and 6to4 addresses is vetted as v4.
//! - The connection goes to the vetted addresses (the client's resolver is pinned to them), so a
//!   second DNS answer cannot swap in a private address (DNS rebinding). No proxy is used.
//! - Redirects are not followed: a 3xx is an error.
//! - The body is capped ([`FetchPolicy::max_bytes`], checked while reading) and the whole
//!   exchange has one time limit ([`FetchPolicy::timeout`]).
//!
//! The test allowance ([`FetchPolicy::allow_loopback`], setting `oauth_allow_loopback_fetch`,
//! default false, for metadata documents and `transcribe`'s `audio_url` alike) admits `http` and
//! loopback addresses, and nothing else that is refused above, so that tests can serve a document
//! from a port-0 listener. Never set it in production.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use url::{Host, Url};

/// What a fetch may do.
#[derive(Debug, Clone, Copy)]
pub struct FetchPolicy {
    pub max_bytes: usize,
    pub timeout: Duration,
    /// Test allowance: `http` and loopback addresses (see the module docs).
    pub allow_loopback: bool,
}

/// A fetched body and the headers callers use.
#[derive(Debug)]
pub struct Fetched {
    pub body: Vec<u8>,
    pub content_type: Option<String>,
    /// `Cache-Control: max-age` of the response, when it has one (`no-store`/`no-cache`: zero).
    pub max_age: Option<Duration>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FetchError {
    #[error("the URL is not a valid absolute URL")]
    BadUrl,
    #[error("only https URLs are fetched")]
    NotHttps,
    #[error("the host resolves to a private, loopback or otherwise non-public address")]
    ForbiddenAddress,
    #[error("the host does not resolve")]
    Unresolvable,
    #[error("the server could not be reached or did not answer in time")]
    Unreachable,
    #[error("the server answered with a redirect, which is not followed")]
    Redirect,
    #[error("the server answered with status {0}")]
    Status(u16),
    #[error("the response is larger than {0} bytes")]
    TooLarge(usize),
}

/// Fetches `url` under `policy` (GET, `Accept: accept`).
pub async fn fetch(url: &str, accept: &str, policy: &FetchPolicy) -> Result<Fetched, FetchError> {
    match tokio::time::timeout(policy.timeout, fetch_inner(url, accept, policy)).await {
        Ok(result) => result,
        Err(_) => Err(FetchError::Unreachable),
    }
}

/// Which addresses beyond the public ones a request may reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Allowance {
    PublicOnly,
    /// `http` and loopback (the test allowance of [`FetchPolicy`]).
    Loopback,
    /// `http` and every address (webhooks to private deployments and tests).
    Private,
}

impl Allowance {
    fn admits(self, ip: IpAddr) -> bool {
        match self {
            Self::PublicOnly => is_public(ip),
            Self::Loopback => is_public(ip) || is_loopback(ip),
            Self::Private => true,
        }
    }
}

/// Checks `url` and resolves its host once, vetting every address: a client pinned to the
/// vetted addresses (no proxy, no redirects, `timeout`), and the parsed URL.
async fn prepare(
    url: &str,
    allowance: Allowance,
    timeout: std::time::Duration,
) -> Result<(reqwest::Client, Url), FetchError> {
    let parsed = Url::parse(url).map_err(|_| FetchError::BadUrl)?;
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(FetchError::BadUrl);
    }
    match parsed.scheme() {
        "https" => {}
        "http" if allowance != Allowance::PublicOnly => {}
        _ => return Err(FetchError::NotHttps),
    }
    let port = parsed.port_or_known_default().ok_or(FetchError::BadUrl)?;
    let mut client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .timeout(timeout)
        .user_agent(concat!("voiced/", env!("CARGO_PKG_VERSION")));
    let addresses: Vec<SocketAddr> = match parsed.host().ok_or(FetchError::BadUrl)? {
        Host::Ipv4(ip) => vec![SocketAddr::new(IpAddr::V4(ip), port)],
        Host::Ipv6(ip) => vec![SocketAddr::new(IpAddr::V6(ip), port)],
        Host::Domain(domain) => {
            let resolved: Vec<SocketAddr> = tokio::net::lookup_host((domain, port))
                .await
                .map_err(|_| FetchError::Unresolvable)?
                .collect();
            if resolved.is_empty() {
                return Err(FetchError::Unresolvable);
            }
            vet_all(&resolved, allowance)?;
            // Pin the connection to what was vetted: no second lookup.
            client = client.resolve_to_addrs(domain, &resolved);
            resolved
        }
    };
    vet_all(&addresses, allowance)?;
    // The http allowance for loopback is for loopback only: anything else must be https.
    if allowance == Allowance::Loopback
        && parsed.scheme() == "http"
        && !addresses.iter().all(|a| a.ip().is_loopback())
    {
        return Err(FetchError::NotHttps);
    }
    let client = client.build().map_err(|_| FetchError::Unreachable)?;
    Ok((client, parsed))
}

/// What a POST (a webhook delivery) may do.
#[derive(Debug, Clone, Copy)]
pub struct PostPolicy {
    /// The most of the answer's body that is read (the rest is dropped).
    pub max_bytes: usize,
    pub timeout: Duration,
    /// `http` and every address, private and loopback included
    /// (`webhooks_allow_private_addresses`): private deployments and tests only.
    pub allow_private: bool,
}

/// The answer to a POST: its status (any, redirects included: they are not followed).
#[derive(Debug)]
pub struct Posted {
    pub status: u16,
}

/// POSTs `body` (JSON) with `headers` to `url` under the same address vetting as [`fetch`]; at
/// most `policy.max_bytes` of the answer are read, and the whole exchange has one time limit.
pub async fn post_json(
    url: &str,
    headers: &[(&str, String)],
    body: Vec<u8>,
    policy: &PostPolicy,
) -> Result<Posted, FetchError> {
    let exchange = async {
        let allowance = if policy.allow_private {
            Allowance::Private
        } else {
            Allowance::PublicOnly
        };
        let (client, parsed) = prepare(url, allowance, policy.timeout).await?;
        let mut request = client
            .post(parsed)
            .header(reqwest::header::CONTENT_TYPE, "application/json");
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        let mut response = request
            .body(body)
            .send()
            .await
            .map_err(|_| FetchError::Unreachable)?;
        let status = response.status().as_u16();
        // Read a little of the answer (so that the connection ends cleanly), never more.
        let mut read = 0usize;
        while read < policy.max_bytes {
            match response.chunk().await {
                Ok(Some(chunk)) => read += chunk.len(),
                _ => break,
            }
        }
        Ok(Posted { status })
    };
    match tokio::time::timeout(policy.timeout, exchange).await {
        Ok(result) => result,
        Err(_) => Err(FetchError::Unreachable),
    }
}

async fn fetch_inner(url: &str, accept: &str, policy: &FetchPolicy) -> Result<Fetched, FetchError> {
    let allowance = if policy.allow_loopback {
        Allowance::Loopback
    } else {
        Allowance::PublicOnly
    };
    let (client, parsed) = prepare(url, allowance, policy.timeout).await?;
    let mut response = client
        .get(parsed)
        .header(reqwest::header::ACCEPT, accept)
        .send()
        .await
        .map_err(|_| FetchError::Unreachable)?;
    let status = response.status();
    if status.is_redirection() {
        return Err(FetchError::Redirect);
    }
    if !status.is_success() {
        return Err(FetchError::Status(status.as_u16()));
    }
    if response
        .content_length()
        .is_some_and(|len| len > policy.max_bytes as u64)
    {
        return Err(FetchError::TooLarge(policy.max_bytes));
    }
    let header = |name| {
        response
            .headers()
            .get(name)
            .and_then(|v: &reqwest::header::HeaderValue| v.to_str().ok())
            .map(str::to_owned)
    };
    let content_type = header(reqwest::header::CONTENT_TYPE);
    let max_age = header(reqwest::header::CACHE_CONTROL).and_then(|v| max_age(&v));
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|_| FetchError::Unreachable)?
    {
        if body.len() + chunk.len() > policy.max_bytes {
            return Err(FetchError::TooLarge(policy.max_bytes));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Fetched {
        body,
        content_type,
        max_age,
    })
}

fn vet_all(addresses: &[SocketAddr], allowance: Allowance) -> Result<(), FetchError> {
    if addresses.iter().all(|a| allowance.admits(a.ip())) {
        Ok(())
    } else {
        Err(FetchError::ForbiddenAddress)
    }
}

fn is_loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => {
            v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    }
}

/// Whether `ip` is a public unicast address a client may make the server connect to.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(a == 0 // "this network", unspecified
        || a == 10 // private
        || a == 127 // loopback
        || (a == 100 && (64..128).contains(&b)) // CGNAT 100.64/10
        || (a == 169 && b == 254) // link-local
        || (a == 172 && (16..32).contains(&b)) // private
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || (a == 192 && b == 0 && c == 2) // documentation
        || (a == 192 && b == 88 && c == 99) // 6to4 relay anycast
        || (a == 192 && b == 168) // private
        || (a == 198 && (18..20).contains(&b)) // benchmarking
        || (a == 198 && b == 51 && c == 100) // documentation
        || (a == 203 && b == 0 && c == 113) // documentation
        || a >= 224) // multicast, reserved, broadcast
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let segments = ip.segments();
    // Addresses that carry a v4 address: vet that one.
    if let Some(v4) = ip.to_ipv4_mapped() {
        return is_public_v4(v4);
    }
    if segments[..6] == [0; 6] {
        // ::/96 (v4-compatible, deprecated), ::, ::1
        return false;
    }
    if segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        // NAT64 64:ff9b::/96
        let [_, _, _, _, _, _, hi, lo] = segments;
        return is_public_v4(Ipv4Addr::new(
            (hi >> 8) as u8,
            hi as u8,
            (lo >> 8) as u8,
            lo as u8,
        ));
    }
    if segments[0] == 0x2002 {
        // 6to4: 2002:AABB:CCDD::/48 embeds AA.BB.CC.DD
        let (hi, lo) = (segments[1], segments[2]);
        return is_public_v4(Ipv4Addr::new(
            (hi >> 8) as u8,
            hi as u8,
            (lo >> 8) as u8,
            lo as u8,
        ));
    }
    // Global unicast is 2000::/3; everything else (ULA fc00::/7, link-local fe80::/10,
    // site-local fec0::/10, multicast ff00::/8, discard 100::/64, 64:ff9b:1::/48 …) is not.
    if segments[0] & 0xe000 != 0x2000 {
        return false;
    }
    let refused = match segments[0] {
        // Teredo 2001::/32, ORCHID 2001:10::/28, documentation 2001:db8::/32
        0x2001 => segments[1] == 0 || segments[1] & 0xfff0 == 0x0010 || segments[1] == 0x0db8,
        // documentation 3fff::/20
        0x3fff => segments[1] < 0x1000,
        _ => false,
    };
    !refused
}

/// `max-age` of a `Cache-Control` value; `no-store`/`no-cache` count as zero.
fn max_age(value: &str) -> Option<Duration> {
    let mut age = None;
    for directive in value.split(',').map(str::trim) {
        let lower = directive.to_ascii_lowercase();
        if lower == "no-store" || lower == "no-cache" {
            return Some(Duration::ZERO);
        }
        if let Some(secs) = lower.strip_prefix("max-age=") {
            age = secs.trim_matches('"').parse().ok().map(Duration::from_secs);
        }
    }
    age
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn only_public_addresses_pass() {
        for public in [
            "93.184.216.34",
            "8.8.8.8",
            "1.1.1.1",
            "100.63.255.255",
            "100.128.0.1",
            "172.32.0.1",
            "2606:4700::1111",
            "2a00:1450:4001::200e",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:808:808::1",
        ] {
            assert!(is_public(ip(public)), "{public} is public");
        }
        for private in [
            "0.0.0.0",
            "0.1.2.3",
            "10.0.0.1",
            "100.64.0.1",
            "100.127.255.254",
            "127.0.0.1",
            "127.255.0.1",
            "169.254.169.254",
            "172.16.0.1",
            "172.31.255.255",
            "192.0.0.8",
            "192.0.2.1",
            "192.168.1.1",
            "198.18.0.1",
            "198.51.100.7",
            "203.0.113.9",
            "224.0.0.1",
            "239.255.255.250",
            "240.0.0.1",
            "255.255.255.255",
            "::",
            "::1",
            "::127.0.0.1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::a00:1",
            "64:ff9b:1::1",
            "2002:a00:1::1",
            "2002:7f00:1::1",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "fec0::1",
            "ff02::1",
            "100::1",
            "2001:db8::1",
            "2001::1",
            "3fff::1",
        ] {
            assert!(!is_public(ip(private)), "{private} is not public");
        }
    }

    #[test]
    fn cache_control() {
        assert_eq!(
            max_age("public, max-age=600"),
            Some(Duration::from_secs(600))
        );
        assert_eq!(max_age("no-store"), Some(Duration::ZERO));
        assert_eq!(max_age("Max-Age=5, No-Cache"), Some(Duration::ZERO));
        assert_eq!(max_age("public"), None);
    }

    fn policy(allow_loopback: bool) -> FetchPolicy {
        FetchPolicy {
            max_bytes: 1024,
            timeout: Duration::from_secs(5),
            allow_loopback,
        }
    }

    #[tokio::test]
    async fn refusals_happen_before_any_connection() {
        let strict = policy(false);
        assert_eq!(
            fetch("http://93.184.216.34/x", "*/*", &strict)
                .await
                .unwrap_err(),
            FetchError::NotHttps
        );
        assert_eq!(
            fetch("file:///etc/passwd", "*/*", &strict)
                .await
                .unwrap_err(),
            FetchError::NotHttps
        );
        assert_eq!(
            fetch("https://user:pw@example.com/x", "*/*", &strict)
                .await
                .unwrap_err(),
            FetchError::BadUrl
        );
        for url in [
            "https://127.0.0.1/x",
            "https://[::1]/x",
            "https://10.1.2.3/x",
            "https://169.254.169.254/latest/meta-data",
            "https://[::ffff:192.168.0.1]/x",
            "https://localhost/x",
        ] {
            assert_eq!(
                fetch(url, "*/*", &strict).await.unwrap_err(),
                FetchError::ForbiddenAddress,
                "{url}"
            );
        }
        // The test allowance admits loopback, and only loopback.
        let loose = policy(true);
        for url in [
            "http://10.1.2.3/x",
            "https://192.168.0.1/x",
            "http://[fe80::1]/x",
        ] {
            assert_eq!(
                fetch(url, "*/*", &loose).await.unwrap_err(),
                FetchError::ForbiddenAddress,
                "{url}"
            );
        }
    }

    fn post_policy(allow_private: bool) -> PostPolicy {
        PostPolicy {
            max_bytes: 16,
            timeout: Duration::from_secs(5),
            allow_private,
        }
    }

    #[tokio::test]
    async fn posts_are_vetted_like_fetches() {
        let strict = post_policy(false);
        for (url, refused) in [
            ("http://93.184.216.34/x", FetchError::NotHttps),
            ("https://127.0.0.1/x", FetchError::ForbiddenAddress),
            ("https://10.1.2.3/x", FetchError::ForbiddenAddress),
            ("https://[fe80::1]/x", FetchError::ForbiddenAddress),
            ("https://localhost/x", FetchError::ForbiddenAddress),
            ("https://user:pw@example.com/x", FetchError::BadUrl),
        ] {
            assert_eq!(
                post_json(url, &[], b"{}".to_vec(), &strict)
                    .await
                    .unwrap_err(),
                refused,
                "{url}"
            );
        }
    }

    /// A loopback server that answers every request with `answer` (raw HTTP) and records what
    /// it read.
    async fn answering(answer: &'static str) -> (String, tokio::task::JoinHandle<Vec<u8>>) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        let server = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut request = vec![0u8; 4096];
            let n = socket.read(&mut request).await.unwrap();
            request.truncate(n);
            socket.write_all(answer.as_bytes()).await.unwrap();
            request
        });
        (url, server)
    }

    #[tokio::test]
    async fn a_post_follows_no_redirect_and_reads_a_little_of_the_answer() {
        let loose = post_policy(true);
        let (url, server) = answering(
            "HTTP/1.1 302 Found\r\nLocation: http://169.254.169.254/\r\nContent-Length: 0\r\n\r\n",
        )
        .await;
        let headers = [("webhook-id", "msg_1".to_owned())];
        let posted = post_json(&url, &headers, b"{\"a\":1}".to_vec(), &loose)
            .await
            .unwrap();
        assert_eq!(posted.status, 302, "answered, not followed");
        let request = String::from_utf8(server.await.unwrap()).unwrap();
        assert!(request.starts_with("POST /hook "), "{request}");
        assert!(request.contains("webhook-id: msg_1"), "{request}");
        assert!(
            request.contains("content-type: application/json"),
            "{request}"
        );
        // A huge answer: only the start is read, and the status still comes back.
        let (url, _server) = answering(
            "HTTP/1.1 200 OK\r\nContent-Length: 100000000\r\n\r\n0123456789abcdefghijklmnopqrstuvwxyz",
        )
        .await;
        let posted = post_json(&url, &[], b"{}".to_vec(), &loose).await.unwrap();
        assert_eq!(posted.status, 200);
    }
}
