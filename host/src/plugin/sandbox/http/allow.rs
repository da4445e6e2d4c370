//! Spin's `allowed_outbound_hosts` syntax, which a manifest's `outbound` and the
//! operator's grant (`[http] allow`) are written in: `scheme://host[:port]`, and whether
//! a URL matches.
//!
//! The forms, as in Spin (`spinframework/spin`, `crates/outbound-networking-config/src/
//! allowed_hosts.rs`): the scheme is a name or `*`; the host is a name, `*` (any),
//! `*.example.com` (any subdomain, not `example.com` itself), an IP address
//! (`127.0.0.1`, `[::1]`) or a CIDR range (`10.0.0.0/8`); the port is a number, `*`, a
//! range `a..b` (end excluded), or absent for the scheme's well-known port. No path.

use std::fmt;
use std::net::IpAddr;
use std::ops::Range;
use std::str::FromStr;

use ipnet::IpNet;

/// Why a pattern cannot be used; the message quotes it and says what to write.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "{pattern:?} {why}; write scheme://host[:port], e.g. https://hooks.slack.com or http://*.svc.cluster.local:8080"
)]
pub struct PatternError {
    pub pattern: String,
    pub why: String,
}

/// One pattern of an allow-list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pattern {
    text: String,
    scheme: Option<String>,
    host: HostPattern,
    port: Option<Range<u32>>,
}

/// What a pattern says of the host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum HostPattern {
    /// `*`: any host.
    Any,
    /// `*.example.com`: any subdomain; holds `.example.com`.
    Subdomains(String),
    /// One name, lower-case.
    Name(String),
    /// An IP address or a range of them.
    Network(IpNet),
}

/// The scheme, host and port a request goes to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub scheme: String,
    pub host: TargetHost,
    pub port: u16,
}

/// The host of a [`Target`]: a name (lower-case) or an address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TargetHost {
    Name(String),
    Ip(IpAddr),
}

impl fmt::Display for TargetHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Name(name) => f.write_str(name),
            Self::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]"),
            Self::Ip(ip) => write!(f, "{ip}"),
        }
    }
}

impl Target {
    /// The target of an absolute `http://` or `https://` URL.
    ///
    /// # Errors
    ///
    /// Why the URL cannot be sent: not absolute, another scheme, no host, or user
    /// information (`user:pass@host`, which could hide the real host from a reader).
    pub fn of_url(url: &url::Url) -> Result<Self, String> {
        let scheme = url.scheme().to_string();
        if scheme != "http" && scheme != "https" {
            return Err(format!("scheme {scheme:?} is not http or https"));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err("a URL with user information (user:password@) is not sent".into());
        }
        let host = match url.host() {
            Some(url::Host::Domain(name)) => TargetHost::Name(name.to_ascii_lowercase()),
            Some(url::Host::Ipv4(ip)) => TargetHost::Ip(IpAddr::V4(ip)),
            Some(url::Host::Ipv6(ip)) => TargetHost::Ip(IpAddr::V6(ip)),
            None => return Err("the URL has no host".into()),
        };
        let port = url.port_or_known_default().ok_or("the URL has no port")?;
        Ok(Self { scheme, host, port })
    }

    /// `https://hooks.slack.com:443`: what logs, errors and grants show of a request
    /// (never its path or query, which may hold credentials).
    pub fn origin(&self) -> String {
        format!("{}://{}:{}", self.scheme, self.host, self.port)
    }

    /// The pattern an operator adds to grant exactly this target.
    pub fn as_pattern(&self) -> String {
        match default_port(&self.scheme) {
            Some(port) if port == self.port => format!("{}://{}", self.scheme, self.host),
            _ => self.origin(),
        }
    }
}

/// The well-known port of a scheme, as Spin knows them.
fn default_port(scheme: &str) -> Option<u16> {
    match scheme {
        "http" => Some(80),
        "https" => Some(443),
        "postgres" => Some(5432),
        "mysql" => Some(3306),
        "redis" => Some(6379),
        "mqtt" => Some(1883),
        _ => None,
    }
}

impl FromStr for Pattern {
    type Err = PatternError;

    fn from_str(text: &str) -> Result<Self, PatternError> {
        let fail = |why: &str| PatternError { pattern: text.to_string(), why: why.to_string() };
        let Some((scheme, rest)) = text.split_once("://") else {
            return Err(fail("has no scheme (like 'https://' or '*://')"));
        };
        let scheme = match scheme {
            "*" => None,
            s if !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphabetic()) => Some(s.to_ascii_lowercase()),
            _ => return Err(fail("has a scheme that is neither a name nor '*'")),
        };
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        // The host ends at the last ':' outside an IPv6 address's brackets.
        let bracket = rest.rfind(']').unwrap_or(0);
        let (host, port) = match rest[bracket..].rfind(':') {
            Some(i) => (&rest[..bracket + i], Some(&rest[bracket + i + 1..])),
            None => (rest, None),
        };
        let host = parse_host(host).map_err(|why| fail(&why))?;
        let port = match port {
            Some("*") => None,
            Some(port) => Some(parse_ports(port).map_err(|why| fail(&why))?),
            None => {
                let known = scheme.as_deref().and_then(default_port);
                let Some(port) = known else {
                    return Err(fail("has no port, and its scheme has no well-known one: add ':PORT' or ':*'"));
                };
                Some(u32::from(port)..u32::from(port) + 1)
            }
        };
        Ok(Self { text: text.to_string(), scheme, host, port })
    }
}

fn parse_host(host: &str) -> Result<HostPattern, String> {
    if host.contains('/') {
        let bare = host.replace(['[', ']'], "");
        return match IpNet::from_str(&bare) {
            Ok(net) => Ok(HostPattern::Network(net)),
            Err(_) if host.contains('.') || host.contains(':') => {
                Err("has a path or an invalid CIDR range; no path is allowed".into())
            }
            Err(_) => Err("has a path; no path is allowed".into()),
        };
    }
    if host == "*" {
        return Ok(HostPattern::Any);
    }
    if let Some(domain) = host.strip_prefix("*.") {
        if domain.contains('*') || domain.is_empty() {
            return Err("has a wildcard that is not the first label of the host".into());
        }
        return Ok(HostPattern::Subdomains(format!(".{}", domain.to_ascii_lowercase())));
    }
    if host.contains('*') {
        return Err("has a wildcard that is not the first label of the host (only '*.example.com' or '*')".into());
    }
    if host.is_empty() {
        return Err("has no host".into());
    }
    let bare = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    if let Ok(ip) = IpAddr::from_str(bare) {
        return Ok(HostPattern::Network(IpNet::from(ip)));
    }
    if !host.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.') {
        return Err("has a host that is not a DNS name or an IP address".into());
    }
    Ok(HostPattern::Name(host.to_ascii_lowercase()))
}

fn parse_ports(ports: &str) -> Result<Range<u32>, String> {
    let number = |p: &str| p.parse::<u16>().map(u32::from).map_err(|_| format!("has port {p:?}, not a number"));
    if let Some((start, end)) = ports.split_once("..") {
        let (start, end) = (number(start)?, number(end)?);
        if start >= end {
            return Err(format!("has an empty port range {ports} (the end is excluded)"));
        }
        Ok(start..end)
    } else {
        let port = number(ports)?;
        Ok(port..port + 1)
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Pattern {
    /// Whether a request to `target` is allowed by this pattern.
    pub fn allows(&self, target: &Target) -> bool {
        let scheme = self.scheme.as_ref().is_none_or(|s| *s == target.scheme);
        let port = self.port.as_ref().is_none_or(|range| range.contains(&u32::from(target.port)));
        scheme && port && self.host.allows(&target.host)
    }

    pub(crate) fn host(&self) -> &HostPattern {
        &self.host
    }
}

impl HostPattern {
    fn allows(&self, host: &TargetHost) -> bool {
        match (self, host) {
            (Self::Any, _) => true,
            (Self::Subdomains(suffix), TargetHost::Name(name)) => name.ends_with(suffix.as_str()),
            (Self::Name(literal), TargetHost::Name(name)) => literal == name,
            (Self::Network(net), TargetHost::Ip(ip)) => net.contains(ip),
            // A name is never matched by an address range (nothing is resolved to match),
            // nor an address by a name.
            _ => false,
        }
    }
}

/// Patterns, parsed from their texts.
///
/// # Errors
///
/// The first pattern that does not parse.
pub fn parse_all(texts: &[String]) -> Result<Vec<Pattern>, PatternError> {
    texts.iter().map(|t| t.parse()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(url: &str) -> Target {
        Target::of_url(&url::Url::parse(url).unwrap()).unwrap()
    }

    fn allows(pattern: &str, url: &str) -> bool {
        pattern.parse::<Pattern>().unwrap().allows(&target(url))
    }

    fn refused(pattern: &str) -> String {
        pattern.parse::<Pattern>().unwrap_err().to_string()
    }

    #[test]
    fn a_scheme_and_host_allow_the_schemes_well_known_port_only() {
        assert!(allows("https://hooks.slack.com", "https://hooks.slack.com/services/T/B/X"));
        assert!(allows("https://hooks.slack.com", "https://HOOKS.slack.com:443/x"));
        assert!(!allows("https://hooks.slack.com", "https://hooks.slack.com:8443/x"));
        assert!(!allows("https://hooks.slack.com", "http://hooks.slack.com/x"));
        assert!(!allows("https://hooks.slack.com", "https://evil.com/hooks.slack.com"));
        assert!(allows("http://spin.fermyon.dev", "http://spin.fermyon.dev:80/"));
    }

    #[test]
    fn wildcards_stand_for_a_scheme_a_port_subdomains_or_anything() {
        assert!(allows("*://example.com:4567", "http://example.com:4567"));
        assert!(allows("*://example.com:4567", "https://example.com:4567"));
        assert!(allows("http://*.svc.cluster.local:8080", "http://grafana.monitoring.svc.cluster.local:8080"));
        assert!(!allows("http://*.svc.cluster.local:8080", "http://svc.cluster.local:8080"), "not the domain itself");
        assert!(allows("http://localhost:*", "http://localhost:3001"));
        assert!(allows("*://*:*", "https://anything.example:1"));
        assert!(allows("https://*", "https://a.b.c"));
        assert!(!allows("https://*", "https://a.b.c:8443"));
    }

    #[test]
    fn addresses_ranges_and_port_ranges_match_as_in_spin() {
        assert!(allows("http://127.0.0.1:*", "http://127.0.0.1:18081/x"));
        assert!(allows("*://127.0.0.0/24:80", "http://127.0.0.9/"));
        assert!(!allows("*://127.0.0.0/24:80", "http://127.0.1.9/"));
        assert!(allows("http://[::1]:8000..9000", "http://[::1]:8999"));
        assert!(!allows("http://[::1]:8000..9000", "http://[::1]:9000"), "the end of a range is excluded");
        assert!(!allows("http://10.0.0.0/8:80", "http://ten.example:80"), "a range never matches a name");
        assert!(!allows("http://localhost:80", "http://127.0.0.1:80"), "nor a name an address");
    }

    #[test]
    fn malformed_patterns_are_refused_with_the_form_to_use() {
        assert!(refused("hooks.slack.com").contains("has no scheme"));
        assert!(refused("spin.fermyon.dev:80").contains("has no scheme"));
        assert!(refused("*://127.0.0.0/24").contains("no well-known"));
        assert!(refused("http://*.fermyon.dev/a").contains("path"));
        assert!(refused("https://hooks.slack.com/services/T").contains("path"));
        assert!(refused("https://a.*.com").contains("wildcard"));
        assert!(refused("https://x.com:99999").contains("not a number"));
        assert!(refused("ftp://x.com").contains("no well-known"));
        assert!(refused("https://x.com:5..5").contains("empty port range"));
        assert!(refused("x").contains("scheme://host[:port]"));
        assert!("https://hooks.slack.com/".parse::<Pattern>().is_ok(), "a trailing slash is no path");
    }

    #[test]
    fn urls_with_user_information_or_another_scheme_are_not_sent() {
        let parse = |u: &str| Target::of_url(&url::Url::parse(u).unwrap());
        assert!(parse("http://user:pw@example.com/").unwrap_err().contains("user information"));
        assert!(parse("ftp://example.com/").unwrap_err().contains("not http"));
        assert_eq!(target("https://Hooks.Slack.com/x?token=1").origin(), "https://hooks.slack.com:443");
        assert_eq!(target("http://[::1]:8080/").origin(), "http://[::1]:8080");
        assert_eq!(target("https://hooks.slack.com/x").as_pattern(), "https://hooks.slack.com");
        assert_eq!(target("http://127.0.0.1:18081/x").as_pattern(), "http://127.0.0.1:18081");
    }
}
