//! The `trusted_proxies` setting: networks whose forwarding headers are believed
//! (`http::client_addr` walks the headers with it).

use std::net::IpAddr;

use ipnet::IpNet;

/// The `trusted_proxies` setting: networks whose forwarding headers are believed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustedProxies(Vec<IpNet>);

impl TrustedProxies {
    /// Parses a list of CIDRs or bare addresses separated by commas or spaces (`10.0.0.0/8,
    /// 192.0.2.7`); empty trusts no one.
    pub fn parse(list: &str) -> Result<Self, String> {
        let mut nets = Vec::new();
        for item in list
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|s| !s.is_empty())
        {
            let net = match item.parse::<IpNet>() {
                Ok(net) => net.trunc(),
                Err(_) => match item.parse::<IpAddr>() {
                    Ok(ip) => IpNet::from(ip),
                    Err(_) => {
                        return Err(format!(
                            "{item:?} is not an address or CIDR (e.g. 10.0.0.0/8, 192.0.2.7)"
                        ));
                    }
                },
            };
            nets.push(net);
        }
        Ok(Self(nets))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        self.0.iter().any(|net| net.contains(&ip))
    }
}

/// IPv4-mapped IPv6 addresses (a dual-stack listener's view of v4 clients) as IPv4.
pub fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}
