//! The rules for object names, and the names the server generates.

use super::status::Cause;

/// Which name rule `metadata.name` follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NameRule {
    /// An RFC 1123 subdomain: most kinds.
    Subdomain,
    /// An RFC 1123 label: namespaces and services (their names become DNS labels).
    Label,
    /// Any name usable as a path segment: RBAC kinds.
    PathSegment,
}

/// Checks `metadata.name` with the rule the real server applies to this kind.
pub(crate) fn check_name(rule: NameRule, name: &str) -> Option<Cause> {
    if rule == NameRule::PathSegment {
        if name == "." || name == ".." || name.contains('/') || name.contains('%') {
            return Some(Cause::new(
                "FieldValueInvalid",
                "metadata.name",
                format!("Invalid value: {name:?}: may not contain '/' or '%' and may not be '.' or '..'"),
            ));
        }
        return None;
    }
    let label_only = rule == NameRule::Label;
    let ok = if label_only { is_dns_label(name) } else { is_dns_subdomain(name) };
    if ok {
        return None;
    }
    let message = if label_only {
        format!(
            "Invalid value: {name:?}: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
        )
    } else {
        format!(
            "Invalid value: {name:?}: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        )
    };
    Some(Cause::new("FieldValueInvalid", "metadata.name", message))
}

fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// An RFC 1123 subdomain: dot-separated labels, at most 253 characters.
pub(crate) fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_dns_label)
}

/// `generateName` plus five random characters from the alphabet the real server uses.
pub(crate) fn generated_name(prefix: &str) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let bytes = uuid::Uuid::new_v4().into_bytes();
    let suffix: String = bytes[..5].iter().map(|b| ALPHABET[usize::from(*b) % ALPHABET.len()] as char).collect();
    format!("{prefix}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_dns_rules() {
        assert!(is_dns_subdomain("a.b-c"));
        assert!(!is_dns_subdomain("A"));
        assert!(!is_dns_subdomain("a..b"));
        assert!(!is_dns_label("a.b"));
        assert_eq!(generated_name("x-").len(), 7);
    }
}
