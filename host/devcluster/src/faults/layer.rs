//! The faults of requests, as a layer in front of the server's handler: during an outage every
//! request is refused; frozen writes are held; a request may be refused with an injected error
//! before it is served; reads that allow an older answer may get one (the handler serves the
//! [`StaleRead`] this layer attaches); a watch that resumes may be told its version is gone.
//! Successful writes are counted, for writes frozen after the k-th.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::ErrorFault;
use super::injector::{Injector, unavailable};
use crate::encode;
use crate::request_info::RequestInfo;
use crate::status::ApiError;

/// The resourceVersions the store is at, which stale reads and expired watches are measured
/// against.
pub(crate) trait Versions: Send + Sync {
    /// The resourceVersion of the last change.
    fn current(&self) -> u64;
    /// The oldest resourceVersion a watch may still resume from.
    fn oldest(&self) -> u64;
}

/// What the layer needs: the faults in force and the store's versions.
#[derive(Clone)]
pub(crate) struct FaultLayer {
    pub injector: Arc<Injector>,
    pub versions: Arc<dyn Versions>,
}

/// A read to serve at this older resourceVersion: a stale read injected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StaleRead(pub u64);

/// The layer. It reads the [`RequestInfo`] the server attaches before it.
pub(crate) async fn layer(State(faults): State<FaultLayer>, mut req: Request, next: Next) -> Response {
    let injector = &faults.injector;
    if let Some(e) = injector.outage_error() {
        return e.into_response();
    }
    let Some(info) = req.extensions().get::<RequestInfo>().cloned() else {
        return next.run(req).await;
    };
    if info.mutating {
        injector.until_thawed().await;
    }
    if let Some(path) = info.resource.as_ref().filter(|_| !info.verb.is_empty()) {
        if let Some(fault) = injector.request_fault(info.verb, &path.resource) {
            let name = match &path.name {
                Some(name) => name.clone(),
                None => body_name(req).await,
            };
            return refusal(&fault, info.verb, &path.resource, &name).into_response();
        }
        let query = query(&req);
        let param = |name: &str| query.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
        let resume_at = param("resourceVersion").filter(|rv| !rv.is_empty() && *rv != "0");
        match info.verb {
            "get" | "list" if path.subresource.as_deref() != Some("scale") => {
                if param("resourceVersionMatch") != Some("Exact")
                    && let Some(at) = stale_version(&faults, &path.resource, param("resourceVersion"))
                {
                    req.extensions_mut().insert(StaleRead(at));
                }
            }
            "watch" => {
                if let Some(from) = resume_at.and_then(|rv| rv.parse::<u64>().ok())
                    && injector.watch_gone()
                {
                    return gone(from, faults.versions.oldest());
                }
            }
            _ => {}
        }
    }
    let response = next.run(req).await;
    if info.mutating && response.status().is_success() {
        injector.wrote().await;
    }
    response
}

/// The query parameters of `req`.
fn query(req: &Request) -> Vec<(String, String)> {
    form_urlencoded::parse(req.uri().query().unwrap_or("").as_bytes()).into_owned().collect()
}

/// The name of the object in the body of a create (what a refused create is about).
async fn body_name(req: Request) -> String {
    let bytes = axum::body::to_bytes(req.into_body(), usize::MAX).await.unwrap_or_default();
    serde_json::from_slice::<Value>(&bytes)
        .ok()
        .and_then(|b| b.pointer("/metadata/name").and_then(Value::as_str).map(String::from))
        .unwrap_or_default()
}

/// The answer of a request refused by `fault`, as the real server words it.
fn refusal(fault: &ErrorFault, verb: &str, resource: &str, name: &str) -> ApiError {
    match fault.code {
        409 if verb == "create" => ApiError::new(409, "AlreadyExists", format!("{resource} {name:?} already exists")),
        409 => ApiError::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {resource} {name:?}: the object has been modified; please apply your changes to the latest version and try again"
            ),
        ),
        429 => ApiError::new(429, "TooManyRequests", "Too many requests, please try again later.")
            .with_details(json!({ "retryAfterSeconds": fault.retry_after_seconds })),
        503 => unavailable(),
        _ => ApiError::new(500, "InternalError", "Internal error occurred: injected fault"),
    }
}

/// The older resourceVersion a read of `resource` is served at while stale reads are
/// injected (within the history the store keeps). Only reads that allow an older answer get
/// one, as from a real server's watch cache: `resourceVersion=0` (any version) and
/// `resourceVersion=N` (not older than N). A read without a resourceVersion is a consistent
/// read, always of the latest state.
fn stale_version(faults: &FaultLayer, resource: &str, resource_version: Option<&str>) -> Option<u64> {
    let not_older_than = resource_version?.parse::<u64>().ok()?;
    let current = faults.versions.current();
    let at = current.saturating_sub(faults.injector.stale_behind(resource)?).max(faults.versions.oldest());
    (at >= not_older_than && at < current).then(|| faults.injector.count_stale(at))
}

/// The answer of a watch told that the version it resumes from is gone: the `ERROR` event a
/// real server sends past its history.
fn gone(from: u64, oldest: u64) -> Response {
    let status = ApiError::expired(format!("too old resource version: {from} ({oldest})")).to_status();
    let line = encode::watch_event("ERROR", &status);
    let headers = [(header::CONTENT_TYPE, "application/json"), (header::CACHE_CONTROL, "no-cache, private")];
    (StatusCode::OK, headers, Body::from(line)).into_response()
}
