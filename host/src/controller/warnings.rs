//! What the API server warns about a plugin's writes: its `Warning` headers (a field the
//! schema does not declare, dropped; a deprecated API; an admission policy's warning).
//! kube's client drops them, so the writer reads them off each response ([`from_headers`]);
//! each cause is logged and recorded as a Warning Event on the parent once ([`Reported`]),
//! and the last one of each plugin is kept for `kubewasm dev`'s table ([`Warnings`]).

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use http::HeaderMap;
use tokio::sync::Notify;

/// The texts of a response's `Warning` headers. The API server writes each as
/// `299 - "text"` (RFC 7234's code, agent and quoted text); a header in another form is
/// taken whole.
pub(crate) fn from_headers(headers: &HeaderMap) -> Vec<String> {
    headers.get_all(http::header::WARNING).iter().filter_map(|value| value.to_str().ok()).map(text_of).collect()
}

fn text_of(header: &str) -> String {
    let mut parts = header.splitn(3, ' ');
    let (code, agent, rest) = (parts.next(), parts.next(), parts.next());
    let quoted = match (code, agent, rest) {
        (Some(code), Some(_), Some(rest)) if code.len() == 3 && code.bytes().all(|b| b.is_ascii_digit()) => rest,
        _ => return header.to_string(),
    };
    // The text is a quoted string; a date may follow it.
    let Some(body) = quoted.strip_prefix('"') else { return quoted.to_string() };
    let mut text = String::new();
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => text.extend(chars.next()),
            '"' => return text,
            c => text.push(c),
        }
    }
    quoted.to_string()
}

/// The last warning of each plugin, for the table `kubewasm dev` prints. One is shared by
/// the controllers of a host (through [`Options`](super::Options)), like the metrics.
#[derive(Clone, Default)]
pub struct Warnings(Arc<Shared>);

#[derive(Default)]
struct Shared {
    last: Mutex<BTreeMap<String, String>>,
    changed: Notify,
}

impl std::fmt::Debug for Warnings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.last().iter()).finish()
    }
}

impl Warnings {
    fn last(&self) -> MutexGuard<'_, BTreeMap<String, String>> {
        self.0.last.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The last warning the API server gave about a write of `plugin`, with what the write
    /// was and which parent it was for.
    pub fn of(&self, plugin: &str) -> Option<String> {
        self.last().get(plugin).cloned()
    }

    /// Resolves at the next new warning of any plugin.
    pub async fn changed(&self) {
        self.0.changed.notified().await;
    }

    pub(crate) fn record(&self, plugin: &str, warning: String) {
        self.last().insert(plugin.to_string(), warning);
        self.0.changed.notify_waiters();
    }
}

/// The causes already reported, per parent uid: a cause is reported once, not at every
/// write that meets it again.
#[derive(Default)]
pub(crate) struct Reported(Mutex<HashSet<(String, String)>>);

/// Causes remembered before the oldest are forgotten (reported again if they recur).
const REMEMBERED: usize = 4096;

impl Reported {
    /// Whether `warning` about a write for the parent `uid` is new: true once per cause.
    pub(crate) fn first(&self, uid: &str, warning: &str) -> bool {
        let mut seen = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if seen.len() >= REMEMBERED {
            seen.clear();
        }
        seen.insert((uid.to_string(), warning.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warning_headers_are_read_as_the_api_server_writes_them() {
        let mut headers = HeaderMap::new();
        for value in [
            r#"299 - "unknown field \"status.extra\"""#,
            r#"299 - "Validation failed for ValidatingAdmissionPolicy 'p' with binding 'b': too many""#,
            "not in the usual form",
        ] {
            headers.append(http::header::WARNING, value.parse().expect("header"));
        }
        assert_eq!(
            from_headers(&headers),
            [
                r#"unknown field "status.extra""#,
                "Validation failed for ValidatingAdmissionPolicy 'p' with binding 'b': too many",
                "not in the usual form",
            ]
        );
    }

    #[test]
    fn a_cause_is_reported_once_per_parent() {
        let reported = Reported::default();
        assert!(reported.first("u1", "unknown field \"status.extra\""));
        assert!(!reported.first("u1", "unknown field \"status.extra\""), "the same cause again");
        assert!(reported.first("u2", "unknown field \"status.extra\""), "another parent");
        assert!(reported.first("u1", "another warning"), "another cause");
    }
}
