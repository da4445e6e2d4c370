//! Canned responses instead of the network (`kubewasm render --http FILE`): each
//! request the policy lets through is answered by the first entry that matches it and is
//! recorded, so a render shows what the plugin sent. The policy still applies, so a
//! render proves the grant too.
//!
//! ```yaml
//! - request: {method: POST, url: "https://hooks.slack.com/services/*"}   # `*`: any text
//!   response: {status: 200, headers: {content-type: text/plain}, body: ok}
//!   times: 1            # answers this many requests, then no more (default: any number)
//! ```

use std::sync::{Mutex, PoisonError};

use bytes::Bytes;
use serde::Deserialize;

use super::{Failure, Incoming, Outgoing};

/// A file of canned responses that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct CannedError(String);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    request: RequestPattern,
    #[serde(default)]
    response: CannedResponse,
    times: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RequestPattern {
    /// Any method when absent.
    method: Option<String>,
    /// The whole URL, `*` matching any text.
    url: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CannedResponse {
    #[serde(default = "ok")]
    status: u16,
    #[serde(default)]
    headers: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    body: String,
}

impl Default for CannedResponse {
    fn default() -> Self {
        Self { status: ok(), headers: std::collections::BTreeMap::new(), body: String::new() }
    }
}

fn ok() -> u16 {
    200
}

/// One request a plugin sent, as the canned transport saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recorded {
    pub method: String,
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// The canned status it was answered with; `None`: no entry matched.
    pub status: Option<u16>,
}

/// Canned responses, and the requests they answered.
#[derive(Debug)]
pub struct Canned {
    entries: Vec<Entry>,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    used: Vec<u32>,
    recorded: Vec<Recorded>,
}

impl Canned {
    /// Responses from the text of a YAML (or JSON) list of entries.
    ///
    /// # Errors
    ///
    /// A [`CannedError`] naming the entry and the field at fault.
    pub fn parse(text: &str) -> Result<Self, CannedError> {
        let entries: Vec<Entry> = if text.trim().is_empty() {
            Vec::new()
        } else {
            serde_yaml_ng::from_str(text).map_err(|e| match e.location() {
                Some(l) => CannedError(format!("line {} column {}: {e}", l.line(), l.column())),
                None => CannedError(e.to_string()),
            })?
        };
        for (i, entry) in entries.iter().enumerate() {
            if url::Url::parse(&entry.request.url.replace('*', "x")).is_err() {
                return Err(CannedError(format!(
                    "entry #{i}: request.url {:?} is not an absolute URL",
                    entry.request.url
                )));
            }
        }
        let used = vec![0; entries.len()];
        Ok(Self { entries, state: Mutex::new(State { used, recorded: Vec::new() }) })
    }

    /// Every request answered or refused so far, in order.
    pub fn recorded(&self) -> Vec<Recorded> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).recorded.clone()
    }

    /// The answer to `request`: the first entry that matches it and is not used up.
    pub(super) fn answer(&self, request: &Outgoing, max_bytes: u64) -> Result<Incoming, Failure> {
        let url = request.url.as_str();
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let found = self.entries.iter().enumerate().find(|(i, e)| {
            e.request.method.as_ref().is_none_or(|m| m.eq_ignore_ascii_case(&request.method))
                && glob(&e.request.url, url)
                && e.times.is_none_or(|times| state.used[*i] < times)
        });
        let mut recorded = Recorded {
            method: request.method.clone(),
            url: url.to_string(),
            headers: request.headers.clone(),
            body: request.body.to_vec(),
            status: None,
        };
        let Some((i, entry)) = found else {
            state.recorded.push(recorded);
            return Err(Failure::Denied(format!(
                "no canned response for {} {}: add an entry to the --http file",
                request.method,
                request.url.origin().ascii_serialization()
            )));
        };
        state.used[i] += 1;
        recorded.status = Some(entry.response.status);
        state.recorded.push(recorded);
        let body = Bytes::from(entry.response.body.clone());
        if body.len() as u64 > max_bytes {
            let origin = request.url.origin().ascii_serialization();
            return Err(Failure::TooLarge(format!("{origin}: the response body exceeds {max_bytes} bytes"), max_bytes));
        }
        let headers = entry.response.headers.iter().map(|(n, v)| (n.to_ascii_lowercase(), v.clone())).collect();
        Ok(Incoming { status: entry.response.status, headers, body })
    }
}

/// Whether `text` matches `pattern`, where `*` stands for any text.
fn glob(pattern: &str, text: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = text.strip_prefix(first) else { return false };
    let parts: Vec<&str> = parts.collect();
    for (i, part) in parts.iter().enumerate() {
        if i == parts.len() - 1 {
            return rest.ends_with(part);
        }
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_any_text_where_a_star_stands() {
        assert!(glob("https://h/services/*", "https://h/services/T/B/X"));
        assert!(glob("https://h/x", "https://h/x"));
        assert!(!glob("https://h/x", "https://h/xy"));
        assert!(glob("https://*/a/*/c", "https://h/a/b/c"));
        assert!(!glob("https://*/a/*/c", "https://h/a/b/d"));
    }

    fn get(url: &str) -> Outgoing {
        Outgoing {
            method: "GET".into(),
            url: url::Url::parse(url).unwrap(),
            headers: Vec::new(),
            body: Bytes::new(),
            timeout: None,
        }
    }

    #[test]
    fn entries_answer_in_order_until_used_up_and_every_request_is_recorded() {
        let canned = Canned::parse(
            "- request: {url: 'http://h/r'}\n  response: {status: 503}\n  times: 1\n- request: {method: GET, url: 'http://h/*'}\n  response: {status: 200, body: '{}'}\n",
        )
        .unwrap();
        assert_eq!(canned.answer(&get("http://h/r"), 10).unwrap().status, 503);
        assert_eq!(canned.answer(&get("http://h/r"), 10).unwrap().status, 200, "the first entry is used up");
        let Err(Failure::Denied(why)) = canned.answer(&get("http://other/"), 10) else { panic!("no answer") };
        assert!(why.contains("no canned response for GET http://other"), "{why}");
        let statuses: Vec<Option<u16>> = canned.recorded().iter().map(|r| r.status).collect();
        assert_eq!(statuses, [Some(503), Some(200), None]);
    }

    #[test]
    fn a_bad_file_is_refused_with_its_line() {
        let err = Canned::parse("- request: {url: 'http://h/'}\n  respnse: {}\n").unwrap_err().to_string();
        assert!(err.contains("line 1") || err.contains("line 2"), "{err}");
        assert!(err.contains("respnse"), "{err}");
        let err = Canned::parse("- request: {url: '/relative'}\n").unwrap_err().to_string();
        assert!(err.contains("entry #0") && err.contains("not an absolute URL"), "{err}");
    }
}
