//! Which addresses a plugin's request may connect to: the answers of the host's own DNS
//! lookup, checked before connecting (no SSRF through a public name that resolves to a
//! cluster or metadata address).
//!
//! The ranges are IANA's special-purpose registries (RFC 6890 and updates); addresses
//! that embed an IPv4 address (IPv4-mapped and -compatible IPv6, NAT64, 6to4) are judged
//! by it. The rule, by how the grant that allowed the URL names its host:
//!
//! - by IP address or CIDR range: any address (the operator wrote it);
//! - by exact name: global and private addresses (in-cluster services resolve to
//!   private ones), never loopback, link-local (cloud metadata: 169.254.169.254) or
//!   unspecified ones;
//! - by wildcard: global addresses only.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::{IpNet, Ipv6Net};

use super::allow::HostPattern;

/// What kind of address a resolved answer is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Class {
    /// Globally routable.
    Global,
    /// Private, shared (CGNAT), unique local, documentation, benchmarking, multicast,
    /// reserved: not on the internet, reachable inside a cluster or not at all.
    Private,
    /// Loopback, link-local (cloud metadata endpoints), unspecified: this machine.
    Local,
}

/// IPv4 blocks that are not global, and their class.
const V4: &[(&str, Class)] = &[
    ("0.0.0.0/8", Class::Local),
    ("10.0.0.0/8", Class::Private),
    ("100.64.0.0/10", Class::Private),
    ("127.0.0.0/8", Class::Local),
    ("169.254.0.0/16", Class::Local),
    ("172.16.0.0/12", Class::Private),
    ("192.0.0.0/24", Class::Private),
    ("192.0.2.0/24", Class::Private),
    ("192.88.99.0/24", Class::Private),
    ("192.168.0.0/16", Class::Private),
    ("198.18.0.0/15", Class::Private),
    ("198.51.100.0/24", Class::Private),
    ("203.0.113.0/24", Class::Private),
    ("224.0.0.0/4", Class::Private),
    ("240.0.0.0/4", Class::Private),
];

/// IPv6 blocks that are not global and embed no IPv4 address, and their class.
const V6: &[(&str, Class)] = &[
    ("::/128", Class::Local),
    ("::1/128", Class::Local),
    ("100::/64", Class::Private),
    ("2001::/32", Class::Private),
    ("2001:db8::/32", Class::Private),
    ("64:ff9b:1::/48", Class::Private),
    ("fc00::/7", Class::Private),
    ("fe80::/10", Class::Local),
    ("ff00::/8", Class::Private),
];

/// The class of `ip`.
pub(crate) fn classify(ip: IpAddr) -> Class {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => match embedded_v4(v6) {
            Some(v4) => classify_v4(v4),
            None => lookup(V6, |net| match net {
                IpNet::V6(net) => net.contains(&v6),
                IpNet::V4(_) => false,
            }),
        },
    }
}

fn classify_v4(ip: Ipv4Addr) -> Class {
    lookup(V4, |net| match net {
        IpNet::V4(net) => net.contains(&ip),
        IpNet::V6(_) => false,
    })
}

fn lookup(table: &[(&str, Class)], contains: impl Fn(&IpNet) -> bool) -> Class {
    table
        .iter()
        .filter(|(net, _)| net.parse::<IpNet>().is_ok_and(|net| contains(&net)))
        .map(|(_, class)| *class)
        .next()
        .unwrap_or(Class::Global)
}

/// The IPv4 address an IPv6 address stands for: IPv4-mapped (`::ffff:a.b.c.d`),
/// IPv4-compatible (`::a.b.c.d`), NAT64 (`64:ff9b::a.b.c.d`) or 6to4 (`2002:AABB:CCDD::`).
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let net = |s: &str| s.parse::<Ipv6Net>().ok();
    let last32 = |ip: Ipv6Addr| {
        let o = ip.octets();
        Ipv4Addr::new(o[12], o[13], o[14], o[15])
    };
    if ip.is_loopback() || ip.is_unspecified() {
        return None;
    }
    if let Some(v4) = ip.to_ipv4() {
        return Some(v4);
    }
    if net("64:ff9b::/96").is_some_and(|n| n.contains(&ip)) {
        return Some(last32(ip));
    }
    if net("2002::/16").is_some_and(|n| n.contains(&ip)) {
        let o = ip.octets();
        return Some(Ipv4Addr::new(o[2], o[3], o[4], o[5]));
    }
    None
}

/// Whether a connection to `ip` is allowed when the URL was granted by `grant`.
pub(crate) fn allowed(grant: &HostPattern, ip: IpAddr) -> bool {
    matches!(
        (grant, classify(ip)),
        (_, Class::Global) | (HostPattern::Network(_), _) | (HostPattern::Name(_), Class::Private)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(ip: &str) -> Class {
        classify(ip.parse().unwrap())
    }

    #[test]
    fn private_local_and_special_ranges_are_told_from_global_ones() {
        for ip in ["0.0.0.0", "127.0.0.1", "169.254.169.254", "169.254.170.2", "::1", "::", "fe80::1"] {
            assert_eq!(class(ip), Class::Local, "{ip}");
        }
        for ip in [
            "10.10.10.10",
            "100.64.1.1",
            "172.16.0.1",
            "192.168.1.1",
            "192.0.0.1",
            "198.18.0.1",
            "240.0.0.1",
            "255.255.255.255",
            "224.0.0.1",
            "fc00::f00d",
            "fd00:ec2::254",
            "2001:db8::1",
        ] {
            assert_eq!(class(ip), Class::Private, "{ip}");
        }
        for ip in ["123.123.123.123", "8.8.8.8", "2600::beef", "2606:4700::1111"] {
            assert_eq!(class(ip), Class::Global, "{ip}");
        }
    }

    #[test]
    fn addresses_that_embed_an_ipv4_address_are_judged_by_it() {
        // `ip_network::is_global`, Spin's check, calls the last three global.
        assert_eq!(class("::ffff:10.0.0.1"), Class::Private);
        assert_eq!(class("::ffff:169.254.169.254"), Class::Local);
        assert_eq!(class("64:ff9b::a00:1"), Class::Private);
        assert_eq!(class("64:ff9b::a9fe:a9fe"), Class::Local, "NAT64 of the metadata address");
        assert_eq!(class("2002:a00:1::"), Class::Private, "6to4 of 10.0.0.1");
        assert_eq!(class("::ffff:8.8.8.8"), Class::Global);
    }

    #[test]
    fn a_grant_by_address_reaches_anything_by_name_private_ranges_by_wildcard_only_global() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        let by_ip = HostPattern::Network("127.0.0.1/32".parse().unwrap());
        let by_name = HostPattern::Name("grafana.monitoring.svc".into());
        let wildcard = HostPattern::Subdomains(".svc".into());
        assert!(allowed(&by_ip, ip("127.0.0.1")));
        assert!(allowed(&by_name, ip("10.96.0.10")));
        assert!(!allowed(&by_name, ip("127.0.0.1")), "loopback only by address");
        assert!(!allowed(&by_name, ip("169.254.169.254")), "metadata only by address");
        assert!(!allowed(&wildcard, ip("10.96.0.10")));
        assert!(!allowed(&HostPattern::Any, ip("::ffff:10.0.0.1")));
        assert!(allowed(&wildcard, ip("8.8.8.8")));
    }
}
