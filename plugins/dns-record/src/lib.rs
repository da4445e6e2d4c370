//! `DnsRecord`: an operator of something outside the cluster. Each DnsRecord
//! (`dns.kubewasm.io/v1alpha1`) is a record in a DNS HTTP API, created, kept as specified
//! and deleted over HTTP; its status says what the API holds.
//!
//! The API (a test server in this repository's end-to-end tests; the shape of PowerDNS's
//! or ExternalDNS's webhook providers, simplified):
//!
//! | request | answer |
//! |---|---|
//! | `GET {endpoint}/zones/{zone}/records/{name}/{type}` | `200 {"ttl","values","owner"}` with an `ETag`, or `404` |
//! | `PUT` the same, `{"ttl","values","owner"}` (`If-Match` optional) | `200`/`201` with the new `ETag`; `412` when `If-Match` is stale |
//! | `DELETE` the same | `204`, or `404` |
//!
//! every request with `Authorization: Bearer <token>`.
//!
//! Each reconcile reads, compares and writes only on a difference, so a converged record
//! costs one GET; the record's identity is its zone, name and type, so a retry after a
//! failure (or a crash between the write and the status) writes the same record again,
//! never a second one. A record another owner wrote is not taken over, and not deleted: a
//! finalizer deletes the record before its DnsRecord goes only when the record is this
//! DnsRecord's; one whose spec cannot be read names no record, and goes with a Warning
//! saying so. While the API cannot be reached, the status says so (`Synced` False,
//! `RemoteUnavailable`) and the reconcile fails retryably, so the host backs off.

use kubewasm_sdk::conditions::{Conditions, NewCondition};
use kubewasm_sdk::http::{self, HttpError, HttpResponse};
use kubewasm_sdk::prelude::*;
use kubewasm_sdk::serde_json::{self, json};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde::{Deserialize, Serialize};

/// The custom resource's spec.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
pub struct RecordSpec {
    pub zone: String,
    pub name: String,
    #[serde(rename = "type")]
    pub type_: String,
    #[serde(default = "default_ttl")]
    pub ttl: u32,
    pub values: Vec<String>,
}

fn default_ttl() -> u32 {
    300
}

/// The plugin's settings: where the API is and its token (a Secret reference in
/// `dns-record.toml`: `token = { secretKeyRef = { name = "dns-api", key = "token" } }`).
#[derive(Clone, Debug, Deserialize)]
pub struct Config {
    pub endpoint: String,
    pub token: String,
}

/// A record as the API holds it.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
pub struct Remote {
    pub ttl: u32,
    pub values: Vec<String>,
    pub owner: String,
}

/// The condition that says whether the API holds the record as specified.
const SYNCED: &str = "Synced";

/// How often a converged record is read again, to revert edits made in the API.
const RESYNC_MS: u64 = 300_000;

/// The plugin.
pub struct DnsRecords;

impl Reconciler for DnsRecords {
    fn describe() -> Manifest {
        Manifest::new("dns-record", KindRef::namespaced("dns.kubewasm.io", "v1alpha1", "DnsRecord", "dnsrecords"))
            .finalizer()
            .crd(include_str!("../crd.yaml"))
            // Wherever the operator's endpoint is; the operator grants which.
            .outbound("http://*:*")
            .outbound("https://*:*")
    }

    fn reconcile(req: &Request) -> Result<Response, Error> {
        let parent = req.parent();
        let spec = match read_spec(parent) {
            Ok(spec) => spec,
            // A spec that cannot be read names no record to delete: it must not keep its
            // DnsRecord from going until someone repairs the spec of an object being deleted.
            Err(e) if req.finalizing => {
                let message = format!(
                    "{}: it goes without deleting a record in the DNS API (one an earlier spec named stays)",
                    e.message
                );
                return Ok(Response::new().event(Event::warning("SpecUnreadable", message)).finalized());
            }
            Err(e) => return Err(e),
        };
        let config: Config = serde_json::from_value(req.config.clone())
            .map_err(|e| Error::permanent(format!("settings: {e} (need endpoint and token)")))?;
        let api = Api { config: &config, url: record_url(&config.endpoint, &spec) };
        let owner = parent.uid().to_string();

        if req.finalizing {
            return api.delete_owned_by(&owner).map(|()| Response::new().finalized());
        }

        let mut conditions = Conditions::from_status(parent.status())?;
        let synced = |status: bool, reason: &str, message: &str| {
            NewCondition::new(SYNCED, status).reason(reason).message(message)
        };
        let outcome = api.get().and_then(|found| match found {
            None => api.put(&spec, &owner, None).map(|etag| (etag, Some(Event::normal("RecordCreated", fqdn(&spec))))),
            Some((remote, _)) if remote.owner != owner => Err(Failed::Conflict(remote.owner)),
            Some((remote, etag)) if remote == desired(&spec, &owner) => Ok((etag, None)),
            Some((_, etag)) => api
                .put(&spec, &owner, etag.as_deref())
                .map(|etag| (etag, Some(Event::normal("RecordUpdated", fqdn(&spec))))),
        });
        let mut response = Response::new().requeue_after(std::time::Duration::from_millis(RESYNC_MS));
        let (condition, version) = match outcome {
            Ok((etag, event)) => {
                if let Some(event) = event {
                    response = response.event(event);
                }
                (synced(true, "RecordSynced", &format!("{} holds {}", fqdn(&spec), spec.values.join(", "))), etag)
            }
            Err(Failed::Conflict(other)) => {
                let message = format!("{} is owned by {other:?}, not this DnsRecord; it is left alone", fqdn(&spec));
                response = response.event(Event::warning("RecordConflict", message.clone()));
                (synced(false, "RecordConflict", &message), None)
            }
            Err(Failed::Unavailable(message)) => {
                // Said once in the status; then the reconcile fails, and the host backs off.
                if conditions.find(SYNCED).is_some_and(|c| c.reason == "RemoteUnavailable") {
                    return Err(Error::retryable(message));
                }
                response = response
                    .event(Event::warning("RemoteUnavailable", message.clone()))
                    .requeue_after(std::time::Duration::from_secs(1));
                (synced(false, "RemoteUnavailable", &message), None)
            }
            Err(Failed::Refused(message)) => return Err(Error::permanent(message)),
        };
        conditions.set(condition, req.now())?;
        let status = json!({
            "observedGeneration": parent.json()["metadata"]["generation"],
            "fqdn": fqdn(&spec),
            "remoteVersion": version,
            "conditions": conditions,
        });
        response.status(&status)
    }
}

/// The parent's spec. Its zone, name and type are each one path segment of the record's
/// URL, where `.` and `..` would name another URL of the API: refused.
fn read_spec(parent: &Object) -> Result<RecordSpec, Error> {
    let spec: RecordSpec = serde_json::from_value(parent.spec().clone())
        .map_err(|e| Error::permanent(format!("{}: spec: {e}", parent.describe())))?;
    let segments = [
        ("spec.zone", &spec.zone, "a DNS name"),
        ("spec.name", &spec.name, "a DNS name"),
        ("spec.type", &spec.type_, "a record type"),
    ];
    for (field, value, what) in segments {
        if value == "." || value == ".." {
            return Err(Error::permanent(format!("{}: {field}: {value:?} is not {what}", parent.describe())));
        }
    }
    Ok(spec)
}

/// `www.example.org.`
fn fqdn(spec: &RecordSpec) -> String {
    format!("{}.{}.", spec.name, spec.zone.trim_end_matches('.'))
}

/// What a path segment keeps unescaped: letters, digits and `-_.!~*'()`, as JavaScript's
/// `encodeURIComponent` (the TypeScript port's) does, so both ports send the same URL.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'!')
    .remove(b'~')
    .remove(b'*')
    .remove(b'\'')
    .remove(b'(')
    .remove(b')');

/// Each part of the record's identity is one path segment (`read_spec` refuses `.` and
/// `..`): a name holding `/` or `?` cannot reach another URL of the API.
fn record_url(endpoint: &str, spec: &RecordSpec) -> String {
    let [zone, name, type_] = [&spec.zone, &spec.name, &spec.type_].map(|part| utf8_percent_encode(part, SEGMENT));
    format!("{}/zones/{zone}/records/{name}/{type_}", endpoint.trim_end_matches('/'))
}

fn desired(spec: &RecordSpec, owner: &str) -> Remote {
    Remote { ttl: spec.ttl, values: spec.values.clone(), owner: owner.to_string() }
}

/// Why the API did not do what was asked.
enum Failed {
    /// The record belongs to someone else.
    Conflict(String),
    /// The API cannot be reached, or answered 5xx, 429 or 412: later may work.
    Unavailable(String),
    /// Refused for good (401, 403, 400, a URL not granted): the settings or the spec
    /// must change.
    Refused(String),
}

/// One record's URL in the API.
struct Api<'a> {
    config: &'a Config,
    url: String,
}

impl Api<'_> {
    fn request(&self, method: &str) -> http::RequestBuilder {
        http::request(method, &self.url).header("Authorization", &format!("Bearer {}", self.config.token))
    }

    fn get(&self) -> Result<Option<(Remote, Option<String>)>, Failed> {
        let response = send(self.request("GET"))?;
        match response.status {
            404 => Ok(None),
            200 => {
                let remote = serde_json::from_slice(&response.body)
                    .map_err(|e| Failed::Unavailable(format!("GET {}: the answer is not a record: {e}", self.url)))?;
                Ok(Some((remote, response.header("etag").map(str::to_string))))
            }
            status => Err(answered("GET", &self.url, status, &response)),
        }
    }

    fn put(&self, spec: &RecordSpec, owner: &str, etag: Option<&str>) -> Result<Option<String>, Failed> {
        let mut request = self.request("PUT");
        if let Some(etag) = etag {
            request = request.header("If-Match", etag);
        }
        let request = request.json(&desired(spec, owner)).map_err(|e| Failed::Refused(e.message))?;
        let response = send(request)?;
        match response.status {
            200 | 201 => Ok(response.header("etag").map(str::to_string)),
            status => Err(answered("PUT", &self.url, status, &response)),
        }
    }

    /// Deletes the record if `owner` holds it: gone already, or another owner's, it is
    /// left as it is, so deleting a DnsRecord in conflict never removes the record it
    /// was refused.
    fn delete_owned_by(&self, owner: &str) -> Result<(), Error> {
        let outcome = self.get().and_then(|found| match found {
            Some((remote, _)) if remote.owner == owner => self.delete(),
            _ => Ok(()),
        });
        outcome.map_err(|failed| match failed {
            Failed::Refused(message) => Error::permanent(message),
            Failed::Unavailable(message) | Failed::Conflict(message) => Error::retryable(message),
        })
    }

    fn delete(&self) -> Result<(), Failed> {
        send(self.request("DELETE")).and_then(|response| match response.status {
            200 | 204 | 404 => Ok(()),
            status => Err(answered("DELETE", &self.url, status, &response)),
        })
    }
}

fn send(request: http::RequestBuilder) -> Result<HttpResponse, Failed> {
    request.send().map_err(|e: HttpError| {
        if e.is_transient() {
            Failed::Unavailable(format!("the DNS API: {e}"))
        } else {
            Failed::Refused(format!("the DNS API: {e}"))
        }
    })
}

fn answered(method: &str, url: &str, status: u16, response: &HttpResponse) -> Failed {
    let body = String::from_utf8_lossy(&response.body);
    let message = format!("{method} {url}: the DNS API answered {status}: {}", body.trim());
    match status {
        412 | 429 | 500..=599 => Failed::Unavailable(message),
        _ => Failed::Refused(message),
    }
}

kubewasm_sdk::export_reconciler!(DnsRecords);

#[cfg(test)]
mod tests {
    use kubewasm_sdk::serde_json::Value;
    use kubewasm_sdk::testing::{self, Http, TestRequest, respond};

    use super::*;

    const URL: &str = "http://dns.test/zones/example.org/records/www/A";

    fn parent(status: Value) -> Value {
        json!({
            "apiVersion": "dns.kubewasm.io/v1alpha1", "kind": "DnsRecord",
            "metadata": {"name": "www", "namespace": "default", "uid": "u1", "generation": 2},
            "spec": {"zone": "example.org", "name": "www", "type": "A", "ttl": 60, "values": ["192.0.2.1"]},
            "status": status,
        })
    }

    fn request(status: Value, http: Http) -> TestRequest {
        request_for(parent(status), http)
    }

    fn request_for(parent: Value, http: Http) -> TestRequest {
        TestRequest::new(parent).config(json!({"endpoint": "http://dns.test", "token": "t"})).http(http)
    }

    fn with_spec(spec: Value) -> Value {
        let mut parent = parent(Value::Null);
        parent["spec"] = spec;
        parent
    }

    fn record(owner: &str, values: &[&str]) -> String {
        json!({"ttl": 60, "values": values, "owner": owner}).to_string()
    }

    /// The API holding the record for `owner`, answering its deletion with `delete`.
    fn held_by(owner: &str, delete: HttpResponse) -> Http {
        Http::new().on("GET", URL, respond(200, &record(owner, &["192.0.2.1"]))).on("DELETE", URL, delete)
    }

    #[test]
    fn a_missing_record_is_put_once_and_the_status_says_synced() {
        let http = Http::new().on("GET", URL, respond(404, "")).on("PUT", URL, respond(201, ""));
        let out = testing::reconcile::<DnsRecords>(request(Value::Null, http)).unwrap();
        let methods: Vec<&str> = out.requests.iter().map(|r| r.method.as_str()).collect();
        assert_eq!(methods, ["GET", "PUT"]);
        let put = &out.requests[1];
        assert!(put.headers.contains(&("Authorization".to_string(), "Bearer t".to_string())));
        let sent: Remote = serde_json::from_slice(&put.body).unwrap();
        assert_eq!(sent, Remote { ttl: 60, values: vec!["192.0.2.1".into()], owner: "u1".into() });
        let status = out.status.unwrap();
        assert_eq!(status["conditions"][0]["status"], "True");
        assert_eq!(status["fqdn"], "www.example.org.");
    }

    #[test]
    fn a_record_as_specified_is_not_written_and_one_of_another_owner_is_left_alone() {
        let same = Http::new().on("GET", URL, respond(200, &record("u1", &["192.0.2.1"])));
        let out = testing::reconcile::<DnsRecords>(request(Value::Null, same)).unwrap();
        assert_eq!(out.requests.len(), 1, "a read only: {:?}", out.requests);

        let theirs = Http::new().on("GET", URL, respond(200, &record("someone", &["198.51.100.7"])));
        let out = testing::reconcile::<DnsRecords>(request(Value::Null, theirs)).unwrap();
        assert_eq!(out.requests.len(), 1);
        assert_eq!(out.warnings()[0].reason, "RecordConflict");
        assert_eq!(out.status.unwrap()["conditions"][0]["reason"], "RecordConflict");
    }

    #[test]
    fn a_remote_down_is_said_in_the_status_first_then_fails_retryably() {
        let down = || Http::new().on("*", URL, respond(503, "down"));
        let out = testing::reconcile::<DnsRecords>(request(Value::Null, down())).unwrap();
        let status = out.status.clone().unwrap();
        assert_eq!(status["conditions"][0]["reason"], "RemoteUnavailable");
        let error = testing::reconcile::<DnsRecords>(request(status, down())).unwrap_err();
        assert!(error.retryable, "{error:?}");
    }

    #[test]
    fn finalizing_deletes_the_record_and_lets_the_parent_go() {
        for status in [204, 404] {
            let http = held_by("u1", respond(status, ""));
            let out = testing::reconcile::<DnsRecords>(request(Value::Null, http).finalizing()).unwrap();
            assert!(out.finalized);
            let sent: Vec<(&str, &str)> = out.requests.iter().map(|r| (r.method.as_str(), r.url.as_str())).collect();
            assert_eq!(sent, [("GET", URL), ("DELETE", URL)]);
            assert!(out.requests[1].headers.contains(&("Authorization".to_string(), "Bearer t".to_string())));
        }
        let gone = Http::new().on("GET", URL, respond(404, ""));
        let out = testing::reconcile::<DnsRecords>(request(Value::Null, gone).finalizing()).unwrap();
        assert!(out.finalized);
        assert_eq!(out.requests.len(), 1, "nothing to delete: {:?}", out.requests);

        let timeout = Http::new().fail("GET", URL, HttpError::Timeout("no answer".into()));
        assert!(testing::reconcile::<DnsRecords>(request(Value::Null, timeout).finalizing()).unwrap_err().retryable);
        let busy = held_by("u1", respond(503, "busy"));
        let error = testing::reconcile::<DnsRecords>(request(Value::Null, busy).finalizing()).unwrap_err();
        assert!(error.retryable, "{error:?}");
        assert_eq!(error.message, format!("DELETE {URL}: the DNS API answered 503: busy"));
    }

    #[test]
    fn the_finalizer_leaves_a_record_another_owner_holds() {
        let theirs = held_by("someone", respond(204, ""));
        let out = testing::reconcile::<DnsRecords>(request(Value::Null, theirs).finalizing()).unwrap();
        assert!(out.finalized, "the DnsRecord goes");
        let methods: Vec<&str> = out.requests.iter().map(|r| r.method.as_str()).collect();
        assert_eq!(methods, ["GET"], "the other owner's record is not deleted");
    }

    #[test]
    fn each_part_of_the_name_is_one_segment_of_the_url() {
        let odd = with_spec(json!({"zone": "example.org", "name": "../../admin?x=1", "type": "TXT", "values": ["v"]}));
        let http = Http::new().on("GET", "*", respond(404, "")).on("PUT", "*", respond(201, ""));
        let out = testing::reconcile::<DnsRecords>(request_for(odd, http)).unwrap();
        let urls: Vec<&str> = out.requests.iter().map(|r| r.url.as_str()).collect();
        let url = "http://dns.test/zones/example.org/records/..%2F..%2Fadmin%3Fx%3D1/TXT";
        assert_eq!(urls, [url, url]);

        let up = with_spec(json!({"zone": "example.org", "name": "..", "type": "A", "values": ["192.0.2.1"]}));
        let error = testing::reconcile::<DnsRecords>(request_for(up, Http::new())).unwrap_err();
        assert!(!error.retryable);
        assert_eq!(error.message, r#"DnsRecord default/www: spec.name: ".." is not a DNS name"#);
        let here = with_spec(json!({"zone": ".", "name": "www", "type": "A", "values": ["192.0.2.1"]}));
        let error = testing::reconcile::<DnsRecords>(request_for(here, Http::new())).unwrap_err();
        assert_eq!(error.message, r#"DnsRecord default/www: spec.zone: "." is not a DNS name"#);
    }

    #[test]
    fn a_spec_that_cannot_be_read_is_a_permanent_error_naming_the_field() {
        let bad = with_spec(json!({"zone": "example.org", "name": "www", "type": "A"}));
        let error = testing::reconcile::<DnsRecords>(request_for(bad, Http::new())).unwrap_err();
        assert!(!error.retryable);
        assert_eq!(error.message, "DnsRecord default/www: spec: missing field `values`");
    }

    #[test]
    fn a_spec_that_cannot_be_read_does_not_keep_its_dns_record_from_going() {
        let unreadable = [
            (json!({"zone": "example.org", "name": "www", "type": "A"}), "spec: missing field `values`"),
            (json!({"zone": "example.org", "name": "..", "type": "A", "values": ["192.0.2.1"]}), "spec.name"),
        ];
        for (spec, field) in unreadable {
            let out = testing::reconcile::<DnsRecords>(request_for(with_spec(spec), Http::new()).finalizing()).unwrap();
            assert!(out.finalized, "a DnsRecord that names no record is not kept from going");
            assert!(out.requests.is_empty(), "nothing to read or delete: {:?}", out.requests);
            let warnings = out.warnings();
            assert_eq!(warnings.len(), 1, "{:?}", out.events);
            assert_eq!(warnings[0].reason, "SpecUnreadable");
            assert!(
                warnings[0].message.starts_with(&format!("DnsRecord default/www: {field}")),
                "{}",
                warnings[0].message
            );
            assert!(warnings[0].message.contains("without deleting a record"), "{}", warnings[0].message);
        }
    }
}
