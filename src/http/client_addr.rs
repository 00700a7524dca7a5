//! The client's address: the one place every door, limiter and log takes it from.
//!
//! The socket peer, unless the peer is a trusted proxy (`trusted_proxies`, CIDRs, empty by
//! default): then the right-most address of `X-Forwarded-For` (or, without that header, of
//! `Forwarded: for=`) that is not itself a trusted proxy. A header from an untrusted peer is
//! ignored, so a client cannot choose its own address by sending one. docs/deployment.md.
//!
//! [`resolve`] runs once per request, outside the trace span, and leaves a [`ClientAddr`] in the
//! request's extensions; handlers take it with the [`ClientAddr`] extractor.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::extract::{ConnectInfo, FromRequestParts, Request, State};
use axum::http::HeaderMap;
use axum::http::request::Parts;
use axum::middleware::Next;
use axum::response::Response;

pub use crate::domain::TrustedProxies;
use crate::domain::trusted_proxies::canonical;

/// The client address a request names through trusted proxies.
pub trait ClientOf {
    /// The client address of a request from `peer` with `headers`.
    fn client(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr;
}

impl ClientOf for TrustedProxies {
    fn client(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        let peer = canonical(peer);
        if !self.contains(peer) {
            return peer;
        }
        let hops = forwarded_for(headers);
        // Right to left: each hop was added by the proxy after it; the first one that is not a
        // trusted proxy is the client. A hop that does not parse ends the walk (nothing to its
        // left can be believed): the last trusted address stands.
        let mut client = peer;
        for hop in hops.iter().rev() {
            match hop {
                Some(ip) => {
                    client = *ip;
                    if !self.contains(*ip) {
                        return *ip;
                    }
                }
                None => return client,
            }
        }
        client
    }
}

/// The hops of `X-Forwarded-For` (every instance, in order), or of `Forwarded`'s `for=`
/// parameters when there is no `X-Forwarded-For`. `None` for a hop that is not an address
/// (`unknown`, an obfuscated identifier, garbage).
fn forwarded_for(headers: &HeaderMap) -> Vec<Option<IpAddr>> {
    let xff: Vec<_> = headers.get_all("x-forwarded-for").iter().collect();
    if !xff.is_empty() {
        return xff
            .into_iter()
            .flat_map(|value| {
                let text = value.to_str().unwrap_or("\u{0}");
                text.split(',')
                    .map(|hop| parse_hop(hop.trim()))
                    .collect::<Vec<_>>()
            })
            .collect();
    }
    headers
        .get_all("forwarded")
        .iter()
        .flat_map(|value| {
            let text = value.to_str().unwrap_or("");
            text.split(',')
                .filter_map(|element| {
                    element.split(';').find_map(|pair| {
                        let (name, value) = pair.trim().split_once('=')?;
                        name.trim()
                            .eq_ignore_ascii_case("for")
                            .then(|| parse_hop(value.trim().trim_matches('"')))
                    })
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

/// `192.0.2.7`, `192.0.2.7:4711`, `2001:db8::1`, `[2001:db8::1]` or `[2001:db8::1]:4711`.
fn parse_hop(hop: &str) -> Option<IpAddr> {
    if let Ok(ip) = hop.parse::<IpAddr>() {
        return Some(canonical(ip));
    }
    if let Some(rest) = hop.strip_prefix('[') {
        let (inside, _) = rest.split_once(']')?;
        return inside.parse::<IpAddr>().ok().map(canonical);
    }
    hop.parse::<SocketAddr>().ok().map(|s| canonical(s.ip()))
}

/// The client's address, when the server knows it (always, when served by `http::serve`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientAddr(pub Option<IpAddr>);

impl<S: Send + Sync> FromRequestParts<S> for ClientAddr {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        // Set by `resolve`; without it (a router used without the stack) the socket peer.
        Ok(parts
            .extensions
            .get::<ClientAddr>()
            .copied()
            .unwrap_or_else(|| {
                ClientAddr(
                    parts
                        .extensions
                        .get::<ConnectInfo<SocketAddr>>()
                        .map(|info| canonical(info.0.ip())),
                )
            }))
    }
}

/// Middleware: works out the request's [`ClientAddr`] once and leaves it in the extensions.
pub async fn resolve(
    State(trusted): State<Arc<TrustedProxies>>,
    mut request: Request,
    next: Next,
) -> Response {
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|info| info.0.ip());
    let client = peer.map(|peer| trusted.client(peer, request.headers()));
    request.extensions_mut().insert(ClientAddr(client));
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn untrusted_peers_are_the_client_whatever_they_send() {
        let none = TrustedProxies::default();
        let forged = headers(&[("x-forwarded-for", "203.0.113.9")]);
        assert_eq!(none.client(ip("198.51.100.1"), &forged), ip("198.51.100.1"));
        let some = TrustedProxies::parse("10.0.0.0/8").unwrap();
        assert_eq!(some.client(ip("198.51.100.1"), &forged), ip("198.51.100.1"));
    }

    #[test]
    fn the_right_most_untrusted_hop_is_the_client() {
        let trusted = TrustedProxies::parse("10.0.0.0/8, 192.0.2.7").unwrap();
        let peer = ip("10.1.1.1");
        // The client sent a forged first hop; nginx appended the real one.
        let h = headers(&[("x-forwarded-for", "1.2.3.4, 203.0.113.9")]);
        assert_eq!(trusted.client(peer, &h), ip("203.0.113.9"));
        // Two proxies: the inner one is trusted and skipped.
        let h = headers(&[("x-forwarded-for", "203.0.113.9, 192.0.2.7")]);
        assert_eq!(trusted.client(peer, &h), ip("203.0.113.9"));
        // Several header instances are one list.
        let h = headers(&[
            ("x-forwarded-for", "203.0.113.9"),
            ("x-forwarded-for", "10.2.2.2"),
        ]);
        assert_eq!(trusted.client(peer, &h), ip("203.0.113.9"));
        // Ports and brackets.
        let h = headers(&[("x-forwarded-for", "[2001:db8::5]:4711")]);
        assert_eq!(trusted.client(peer, &h), ip("2001:db8::5"));
        let h = headers(&[("x-forwarded-for", "203.0.113.9:5000")]);
        assert_eq!(trusted.client(peer, &h), ip("203.0.113.9"));
        // No header: the proxy itself.
        assert_eq!(trusted.client(peer, &HeaderMap::new()), peer);
        // Garbage stops the walk at the last trusted hop.
        let h = headers(&[("x-forwarded-for", "203.0.113.9, nonsense, 10.3.3.3")]);
        assert_eq!(trusted.client(peer, &h), ip("10.3.3.3"));
    }

    #[test]
    fn forwarded_is_read_without_x_forwarded_for() {
        let trusted = TrustedProxies::parse("127.0.0.1/32").unwrap();
        let peer = ip("127.0.0.1");
        let h = headers(&[(
            "forwarded",
            "for=198.51.100.3;proto=https, for=\"[2001:db8:cafe::17]:4711\"",
        )]);
        assert_eq!(trusted.client(peer, &h), ip("2001:db8:cafe::17"));
        let h = headers(&[("forwarded", "for=unknown")]);
        assert_eq!(trusted.client(peer, &h), peer);
        // X-Forwarded-For wins when both are present.
        let h = headers(&[
            ("forwarded", "for=198.51.100.3"),
            ("x-forwarded-for", "203.0.113.9"),
        ]);
        assert_eq!(trusted.client(peer, &h), ip("203.0.113.9"));
        // A v4-mapped peer is its v4 address.
        assert_eq!(
            trusted.client(
                ip("::ffff:127.0.0.1"),
                &headers(&[("x-forwarded-for", "203.0.113.9")])
            ),
            ip("203.0.113.9")
        );
    }

    #[test]
    fn settings_parse() {
        assert!(TrustedProxies::parse("").unwrap().is_empty());
        assert!(TrustedProxies::parse("172.28.0.10, ::1 10.0.0.0/8").is_ok());
        assert!(TrustedProxies::parse("10.0.0.0/33").is_err());
        assert!(TrustedProxies::parse("nginx").is_err());
        let t = TrustedProxies::parse("10.1.2.3/8").unwrap();
        assert!(t.contains(ip("10.200.0.1")));
    }
}
