//! A small DNS HTTP API on loopback, the external system of the `dns-record` example:
//! records by zone, name and type, each with an owner and a version (its `ETag`), behind
//! a bearer token; every request is logged, and the test can take it down.
//!
//! | route | answer |
//! |---|---|
//! | `GET /zones/{z}/records/{n}/{t}` | 200 `{"ttl","values","owner"}` + `ETag`, or 404 |
//! | `PUT /zones/{z}/records/{n}/{t}` | 201 created / 200 replaced + `ETag`; 412 on a stale `If-Match` |
//! | `DELETE /zones/{z}/records/{n}/{t}` | 204, or 404 |
//! | anything, without `Authorization: Bearer <token>` | 401 |
//! | anything, while down | 503 |

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};

/// A record as the API stores it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    pub ttl: u32,
    pub values: Vec<String>,
    pub owner: String,
}

/// `(zone, name, type)`.
pub type RecordKey = (String, String, String);

#[derive(Default)]
struct Shared {
    token: Mutex<String>,
    down: AtomicBool,
    records: Mutex<BTreeMap<RecordKey, (Record, u64)>>,
    /// `METHOD /path -> status`, in order.
    log: Mutex<Vec<String>>,
    version: Mutex<u64>,
}

/// The API, listening on `127.0.0.1`.
pub struct DnsApi {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl DnsApi {
    /// Starts the API, accepting `token`.
    pub async fn start(token: &str) -> DnsApi {
        let shared = Arc::new(Shared::default());
        token.clone_into(&mut shared.token.lock().expect("token"));
        let app = axum::Router::new()
            .route("/zones/{zone}/records/{name}/{type}", axum::routing::any(record))
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind the DNS API");
        let addr = listener.local_addr().expect("DNS API address");
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        DnsApi { addr, shared, task }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Answers 503 to everything while `down`.
    pub fn set_down(&self, down: bool) {
        self.shared.down.store(down, Ordering::SeqCst);
    }

    pub fn records(&self) -> BTreeMap<RecordKey, Record> {
        self.shared.records.lock().expect("records").iter().map(|(k, (r, _))| (k.clone(), r.clone())).collect()
    }

    /// Writes a record directly, as someone else would.
    pub fn put(&self, key: RecordKey, record: Record) {
        let version = self.next_version();
        self.shared.records.lock().expect("records").insert(key, (record, version));
    }

    /// Every request so far: `METHOD /path -> status`.
    pub fn log(&self) -> Vec<String> {
        self.shared.log.lock().expect("log").clone()
    }

    /// Requests with `method` that the API served (2xx).
    pub fn served(&self, method: &str) -> usize {
        self.log().iter().filter(|l| l.starts_with(&format!("{method} ")) && l.contains("-> 2")).count()
    }

    fn next_version(&self) -> u64 {
        let mut v = self.shared.version.lock().expect("version");
        *v += 1;
        *v
    }
}

impl Drop for DnsApi {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn with_etag(status: StatusCode, version: u64, body: Option<&Record>) -> Response {
    let etag = format!("\"{version}\"");
    match body {
        Some(record) => (status, [("etag", etag)], axum::Json(record.clone())).into_response(),
        None => (status, [("etag", etag)]).into_response(),
    }
}

async fn record(
    State(shared): State<Arc<Shared>>,
    Path((zone, name, type_)): Path<(String, String, String)>,
    method: Method,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let response = answer(&shared, (zone.clone(), name.clone(), type_.clone()), &method, &headers, &body);
    shared
        .log
        .lock()
        .expect("log")
        .push(format!("{method} /zones/{zone}/records/{name}/{type_} -> {}", response.status().as_u16()));
    response
}

fn answer(shared: &Shared, key: RecordKey, method: &Method, headers: &HeaderMap, body: &[u8]) -> Response {
    if shared.down.load(Ordering::SeqCst) {
        return (StatusCode::SERVICE_UNAVAILABLE, "down for maintenance").into_response();
    }
    let expected = format!("Bearer {}", shared.token.lock().expect("token"));
    if headers.get("authorization").and_then(|v| v.to_str().ok()) != Some(expected.as_str()) {
        return (StatusCode::UNAUTHORIZED, "bad token").into_response();
    }
    let mut records = shared.records.lock().expect("records");
    match *method {
        Method::GET => match records.get(&key) {
            Some((record, version)) => with_etag(StatusCode::OK, *version, Some(record)),
            None => StatusCode::NOT_FOUND.into_response(),
        },
        Method::PUT => {
            let Ok(record) = serde_json::from_slice::<Record>(body) else {
                return (StatusCode::BAD_REQUEST, "not a record").into_response();
            };
            let if_match = headers.get("if-match").and_then(|v| v.to_str().ok());
            let existing = records.get(&key).map(|(_, v)| format!("\"{v}\""));
            if let Some(wanted) = if_match
                && existing.as_deref() != Some(wanted)
            {
                return StatusCode::PRECONDITION_FAILED.into_response();
            }
            let status = if existing.is_some() { StatusCode::OK } else { StatusCode::CREATED };
            let version = {
                let mut v = shared.version.lock().expect("version");
                *v += 1;
                *v
            };
            records.insert(key, (record.clone(), version));
            with_etag(status, version, Some(&record))
        }
        Method::DELETE => match records.remove(&key) {
            Some(_) => StatusCode::NO_CONTENT.into_response(),
            None => StatusCode::NOT_FOUND.into_response(),
        },
        _ => StatusCode::METHOD_NOT_ALLOWED.into_response(),
    }
}
