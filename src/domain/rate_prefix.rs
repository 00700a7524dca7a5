//! The `ipv6_rate_limit_prefix` setting: how the anonymous limits (console sign-in and sign-up,
//! OAuth registration and metadata fetches) key a client address. An IPv4 client is its
//! address; an IPv6 client is its network of this many leading bits, since one subscriber is
//! usually handed a whole /64 (or more) and can rotate through it at will: keyed on the full
//! /128, each address of the /64 would be a fresh client with a fresh quota.

use std::net::{IpAddr, Ipv6Addr};

/// Leading bits of an IPv6 client address that the anonymous limits key on (32 to 128).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv6RatePrefix(u8);

impl Ipv6RatePrefix {
    /// Shortest accepted prefix: wider would put whole providers behind one key.
    pub const MIN: u32 = 32;
    pub const MAX: u32 = 128;

    pub fn new(bits: u32) -> Result<Self, String> {
        if (Self::MIN..=Self::MAX).contains(&bits) {
            Ok(Self(u8::try_from(bits).expect("at most 128")))
        } else {
            Err(format!(
                "expected a prefix length from {} to {} (64: one subscriber's /64)",
                Self::MIN,
                Self::MAX
            ))
        }
    }

    pub fn bits(self) -> u8 {
        self.0
    }

    /// The key of `client` in an anonymous quota: an IPv4 address (IPv4-mapped IPv6 included)
    /// as it is, an IPv6 address as its network (`2001:db8:1:2::/64`), `unknown` when the
    /// server does not know the client.
    pub fn key(self, client: Option<IpAddr>) -> String {
        match client.map(|ip| ip.to_canonical()) {
            None => "unknown".to_owned(),
            Some(IpAddr::V4(v4)) => v4.to_string(),
            Some(IpAddr::V6(v6)) => {
                let mask = u128::MAX.checked_shl(128 - u32::from(self.0)).unwrap_or(0);
                let network = Ipv6Addr::from(u128::from(v6) & mask);
                format!("{network}/{}", self.0)
            }
        }
    }
}

impl Default for Ipv6RatePrefix {
    fn default() -> Self {
        Self(64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> Option<IpAddr> {
        Some(text.parse().unwrap())
    }

    #[test]
    fn ipv6_clients_are_their_network_and_ipv4_clients_their_address() {
        let p64 = Ipv6RatePrefix::default();
        assert_eq!(p64.key(ip("2001:db8:1:2::1")), "2001:db8:1:2::/64");
        // Another address of the same /64 is the same client; the next /64 is not.
        assert_eq!(
            p64.key(ip("2001:db8:1:2:ffff:eeee:dddd:cccc")),
            p64.key(ip("2001:db8:1:2::1"))
        );
        assert_ne!(
            p64.key(ip("2001:db8:1:3::1")),
            p64.key(ip("2001:db8:1:2::1"))
        );
        // IPv4 unchanged, IPv4-mapped IPv6 is IPv4.
        assert_eq!(p64.key(ip("192.0.2.7")), "192.0.2.7");
        assert_eq!(p64.key(ip("::ffff:192.0.2.7")), "192.0.2.7");
        assert_eq!(p64.key(None), "unknown");

        let p48 = Ipv6RatePrefix::new(48).unwrap();
        assert_eq!(p48.key(ip("2001:db8:1:2::1")), "2001:db8:1::/48");
        let p128 = Ipv6RatePrefix::new(128).unwrap();
        assert_eq!(p128.key(ip("2001:db8::1")), "2001:db8::1/128");
        assert_eq!(p128.bits(), 128);
        for bad in [0, 31, 129, 1000] {
            assert!(Ipv6RatePrefix::new(bad).is_err(), "{bad}");
        }
    }
}
