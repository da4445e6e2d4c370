//! An HTTP receiver on loopback for plugins to send to: it records every request
//! (method, path, headers, body) and answers with the status the test sets, so a test
//! can check payloads, take the receiver down and bring it back.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};

/// One request the receiver got.
#[derive(Clone, Debug)]
pub struct Received {
    pub method: String,
    pub path: String,
    /// Lower-case names.
    pub headers: BTreeMap<String, String>,
    pub body: Vec<u8>,
    /// What the receiver answered.
    pub status: u16,
}

impl Received {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("body of {} is not JSON: {e}", self.path))
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

#[derive(Default)]
struct Shared {
    status: AtomicU16,
    received: Mutex<Vec<Received>>,
}

/// A receiver listening on `127.0.0.1`.
pub struct Receiver {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl Receiver {
    /// Starts answering 200 to everything.
    pub async fn start() -> Receiver {
        let shared = Arc::new(Shared { status: AtomicU16::new(200), ..Shared::default() });
        let app = axum::Router::new().fallback(record).with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind the receiver");
        let addr = listener.local_addr().expect("receiver address");
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Receiver { addr, shared, task }
    }

    /// `http://127.0.0.1:PORT`: what to grant.
    pub fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The URL of `path` on this receiver.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.origin())
    }

    /// Answers every later request with `status` (503: down).
    pub fn answer(&self, status: u16) {
        self.shared.status.store(status, Ordering::SeqCst);
    }

    /// Every request received so far, in order.
    pub fn received(&self) -> Vec<Received> {
        self.shared.received.lock().expect("receiver log").clone()
    }

    /// The requests to `path` it accepted (2xx), in order.
    pub fn accepted(&self, path: &str) -> Vec<Received> {
        self.received().into_iter().filter(|r| r.path == path && (200..300).contains(&r.status)).collect()
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn record(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    let status = shared.status.load(Ordering::SeqCst);
    let headers =
        headers.iter().map(|(n, v)| (n.as_str().to_string(), v.to_str().unwrap_or_default().to_string())).collect();
    let path = uri.path_and_query().map_or_else(|| uri.path().to_string(), ToString::to_string);
    shared.received.lock().expect("receiver log").push(Received {
        method: method.to_string(),
        path,
        headers,
        body: body.to_vec(),
        status,
    });
    StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}
