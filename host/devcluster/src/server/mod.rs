//! The HTTP server: the layers every request passes, in order (reading it, authentication and
//! authorization, faults), then the handler, which routes discovery and `OpenAPI` paths to
//! their documents and resource paths to the verbs (`resource`).

mod auth;
mod negotiate;
mod params;
mod resource;
mod tls;

pub(crate) use self::tls::{Peer, TlsListener, server_config};

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use futures_util::FutureExt as _;
use serde_json::{Value, json};

use super::discovery;
use super::encode;
use super::faults::{self, FaultLayer, StaleRead};
use super::openapi;
use super::request_info::RequestInfo;
use super::state::Shared;
use super::status::ApiError;
use super::tokens;
use super::user::User;

/// The largest request body accepted, as in the real server.
const MAX_BODY: usize = 3 * 1024 * 1024;

/// Every path, through the layers to the handler.
pub(crate) fn router(shared: Arc<Shared>) -> Router {
    let faults = FaultLayer { injector: shared.faults.clone(), versions: shared.clone() };
    // The last layer added runs first.
    Router::new()
        .fallback(handle)
        .layer(middleware::from_fn_with_state(faults, faults::layer))
        .layer(middleware::from_fn_with_state(shared.clone(), auth::layer))
        .layer(middleware::from_fn_with_state(shared.clone(), read_request))
        .with_state(shared)
}

/// The first layer: what the request is about (its [`RequestInfo`], for the layers after),
/// its `timeout` checked (`WithRequestDeadline`), its body read whole (at most [`MAX_BODY`]),
/// and writes counted, refused ones included. On the way back, a body is indented when the
/// request asks for it (`?pretty`, or curl's or a browser's user agent).
async fn read_request(State(shared): State<Arc<Shared>>, req: Request, next: Next) -> Response {
    let (mut parts, body) = req.into_parts();
    let query: Vec<(String, String)> =
        form_urlencoded::parse(parts.uri.query().unwrap_or("").as_bytes()).into_owned().collect();
    let first = |name: &str| query.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
    let info = RequestInfo::parse(&parts.method, parts.uri.path(), first("watch").is_some_and(params::k8s_bool));
    if info.mutating {
        shared.note_write(format!("{} {}", parts.method, parts.uri));
    }
    if let Some(timeout) = first("timeout").filter(|t| !t.is_empty() && !long_running(&info))
        && let Err(why) = params::check_duration(timeout)
    {
        return ApiError::bad_request(format!("invalid timeout specified in the request URL - {why}")).into_response();
    }
    let pretty = pretty(&parts, first("pretty")) && info.verb != "watch";
    let Ok(body) = axum::body::to_bytes(body, MAX_BODY).await else {
        return ApiError::too_large(MAX_BODY).into_response();
    };
    parts.extensions.insert(info);
    let response = next.run(Request::from_parts(parts, Body::from(body))).await;
    if pretty { indented(response).await } else { response }
}

/// Requests without a deadline: watches and the streams of a pod (`request.LongRunningRequestCheck`).
fn long_running(info: &RequestInfo) -> bool {
    info.verb == "watch"
        || info
            .resource
            .as_ref()
            .and_then(|r| r.subresource.as_deref())
            .is_some_and(|s| matches!(s, "attach" | "exec" | "proxy" | "log" | "portforward"))
}

/// `isPrettyPrint`: `?pretty` as `strconv.ParseBool` reads it, else whether the user agent is
/// curl, Wget or a browser.
fn pretty(parts: &axum::http::request::Parts, param: Option<&str>) -> bool {
    if let Some(value) = param.filter(|v| !v.is_empty()) {
        return matches!(value, "1" | "t" | "T" | "TRUE" | "true" | "True");
    }
    let agent = parts.headers.get(header::USER_AGENT).and_then(|v| v.to_str().ok()).unwrap_or("");
    ["curl", "Wget", "Mozilla/5.0"].iter().any(|p| agent.starts_with(p))
}

/// A JSON response with its body indented.
async fn indented(response: Response) -> Response {
    let json =
        response.headers().get(header::CONTENT_TYPE).is_some_and(|t| t.as_bytes().starts_with(b"application/json"));
    if !json {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, usize::MAX).await else {
        return ApiError::internal("the response could not be read to indent it").into_response();
    };
    let body = encode::pretty(&bytes).unwrap_or_else(|| bytes.to_vec());
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::from(body))
}

/// The handler for every path, behind the layers.
async fn handle(State(shared): State<Arc<Shared>>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let Ok(body) = axum::body::to_bytes(body, MAX_BODY).await else {
        return ApiError::too_large(MAX_BODY).into_response();
    };
    let call = Call {
        method: parts.method.clone(),
        path: parts.uri.path().to_string(),
        query: form_urlencoded::parse(parts.uri.query().unwrap_or("").as_bytes()).into_owned().collect(),
        info: parts
            .extensions
            .get::<RequestInfo>()
            .cloned()
            .unwrap_or_else(|| RequestInfo::parse(&parts.method, parts.uri.path(), false)),
        user: parts.extensions.get::<User>().cloned().unwrap_or_else(User::anonymous),
        stale: parts.extensions.get::<StaleRead>().map(|s| s.0),
        headers: parts.headers,
        body,
    };
    if call.method == Method::GET
        && let Err(e) = wait_for_version(&shared, &call).await
    {
        return e.into_response();
    }
    let mutating = call.info.mutating;
    let outcome = AssertUnwindSafe(route(&shared, &call)).catch_unwind().await;
    let response = match outcome {
        Ok(Ok(reply)) => reply.into_response(),
        Ok(Err(e)) => e.into_response(),
        Err(_) => ApiError::internal("the server hit an internal error while serving this request").into_response(),
    };
    if mutating {
        if shared.lock().store.gc_pending() {
            shared.gc.notify_one();
        }
        shared.persist.notify_one();
    }
    response
}

/// A read at a resourceVersion the store has not reached yet waits for it up to 3 s, as the
/// real server's watch cache does, then is refused with 504 and `ResourceVersionTooLarge`.
async fn wait_for_version(shared: &Shared, call: &Call) -> Result<(), ApiError> {
    let Some(wanted) = call.param("resourceVersion").and_then(|rv| rv.parse::<u64>().ok()) else {
        return Ok(());
    };
    let mut last = shared.lock().store.last_rv();
    if let Ok(Ok(_)) = tokio::time::timeout(Duration::from_secs(3), last.wait_for(|rv| *rv >= wanted)).await {
        return Ok(());
    }
    let current = shared.lock().store.current_rv();
    if current >= wanted { Ok(()) } else { Err(ApiError::resource_version_too_large(wanted, current)) }
}

/// A request as the handler reads it.
struct Call {
    method: Method,
    path: String,
    query: Vec<(String, String)>,
    headers: HeaderMap,
    body: bytes::Bytes,
    info: RequestInfo,
    /// Who makes it (authentication's answer).
    user: User,
    /// The older resourceVersion a read is to be served at (an injected stale read).
    stale: Option<u64>,
}

impl Call {
    fn param(&self, name: &str) -> Option<&str> {
        self.query.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    fn header(&self, name: header::HeaderName) -> &str {
        self.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or("")
    }
}

/// What the handler answers.
enum Reply {
    Json(u16, Value),
    /// A write's answer with `Warning` headers.
    Warned(u16, Value, Vec<String>),
    /// A refused write, with the `Warning` headers of what ran before it was refused (an
    /// admission webhook's).
    Refused(ApiError, Vec<String>),
    Text(&'static str),
    /// An answer without a body (`204 No Content`).
    Empty(u16),
    /// A watch.
    Stream(Body),
    /// An aggregated discovery document, with its entity tag; `None` for the body when the
    /// client holds it already (`If-None-Match`).
    Aggregated(Option<Vec<u8>>, String),
}

impl IntoResponse for Reply {
    fn into_response(self) -> Response {
        let json = encode::response;
        match self {
            Reply::Json(code, value) => json(code, &value),
            Reply::Warned(code, value, warnings) => with_warnings(json(code, &value), warnings),
            Reply::Refused(error, warnings) => with_warnings(error.into_response(), warnings),
            Reply::Text(text) => (StatusCode::OK, [(header::CONTENT_TYPE, "text/plain")], text).into_response(),
            Reply::Empty(code) => StatusCode::from_u16(code).unwrap_or(StatusCode::NO_CONTENT).into_response(),
            Reply::Stream(body) => {
                let headers =
                    [(header::CONTENT_TYPE, "application/json"), (header::CACHE_CONTROL, "no-cache, private")];
                (StatusCode::OK, headers, body).into_response()
            }
            Reply::Aggregated(body, etag) => {
                let headers = [
                    (header::CONTENT_TYPE, AGGREGATED_DISCOVERY),
                    (header::VARY, "Accept"),
                    (header::CACHE_CONTROL, "public"),
                    (header::ETAG, etag.as_str()),
                ];
                match body {
                    Some(body) => (StatusCode::OK, headers, body).into_response(),
                    None => (StatusCode::NOT_MODIFIED, headers).into_response(),
                }
            }
        }
    }
}

/// `response` with one `Warning: 299 - "<text>"` header per warning.
fn with_warnings(mut response: Response, warnings: Vec<String>) -> Response {
    for warning in warnings {
        let text = format!("299 - {}", Value::String(warning));
        if let Ok(header) = HeaderValue::from_str(&text) {
            response.headers_mut().append(header::WARNING, header);
        }
    }
    response
}

/// The `Content-Type` of aggregated discovery, as `generateMediaTypeWithGVK` writes it: client-go
/// reads the document's kind from it.
const AGGREGATED_DISCOVERY: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// An aggregated discovery document with its entity tag (`ServeHTTPWithETag`: the quoted
/// SHA-512 of the document, in upper-case hex); 304 without it when the client's
/// `If-None-Match` names that tag.
fn aggregated(call: &Call, document: &Value) -> Reply {
    use sha2::Digest as _;
    use std::fmt::Write as _;
    let body = encode::body(document);
    let digest = sha2::Sha512::digest(body.strip_suffix(b"\n").unwrap_or(&body));
    let etag = digest.iter().fold(String::from("\""), |mut tag, b| {
        let _ = write!(tag, "{b:02X}");
        tag
    }) + "\"";
    let fresh = call.header(header::IF_NONE_MATCH) == etag;
    Reply::Aggregated((!fresh).then_some(body), etag)
}

async fn route(shared: &Arc<Shared>, call: &Call) -> Result<Reply, ApiError> {
    let segs: Vec<&str> = call.path.split('/').filter(|s| !s.is_empty()).collect();
    let get_only = |reply: Option<Value>| -> Result<Reply, ApiError> {
        if call.method != Method::GET {
            return Err(ApiError::method_not_allowed());
        }
        reply.map(|v| Reply::Json(200, v)).ok_or_else(ApiError::no_route)
    };
    match segs.as_slice() {
        [] => get_only(Some(json!({ "paths": [
            "/.well-known/openid-configuration", "/api", "/api/v1", "/apis", "/healthz", "/livez", "/openid/v1/jwks",
            "/readyz", "/version",
        ] }))),
        [".well-known", "openid-configuration"] => get_only(Some(tokens::openid_configuration())),
        ["openid", "v1", "jwks"] => get_only(Some(shared.credentials.signer.jwks())),
        ["version"] => get_only(Some(discovery::version_info())),
        ["healthz" | "livez" | "readyz"] => Ok(Reply::Text("ok")),
        ["api" | "apis"] if negotiate::wants_aggregated_discovery(call.header(header::ACCEPT)) => {
            if call.method != Method::GET {
                return Err(ApiError::method_not_allowed());
            }
            Ok(aggregated(call, &discovery::aggregated(&shared.lock().registry, segs == ["api"])))
        }
        ["api"] => get_only(Some(discovery::core_versions(&shared.address))),
        ["api", version] => get_only(discovery::resource_list(&shared.lock().registry, "", version)),
        ["apis"] => get_only(Some(discovery::group_list(&shared.lock().registry))),
        ["apis", group] => get_only(discovery::group(&shared.lock().registry, group)),
        ["apis", group, version] => get_only(discovery::resource_list(&shared.lock().registry, group, version)),
        // Served as JSON only: a client that accepts nothing else (the protobuf form) is told so.
        ["openapi", "v2"] if !params::accepts_json(call) => Err(ApiError::not_acceptable(&["application/json"])),
        ["openapi", "v2"] => get_only(Some(openapi::v2(&shared.lock().registry))),
        ["openapi", "v3"] => get_only(Some(openapi::root(&shared.lock().registry))),
        ["openapi", "v3", "api", version] => get_only(openapi::document(&shared.lock().registry, "", version)),
        ["openapi", "v3", "apis", group, version] => {
            get_only(openapi::document(&shared.lock().registry, group, version))
        }
        _ => match &call.info.resource {
            Some(path) => resource::serve(shared, call, path).await,
            None => Err(ApiError::no_route()),
        },
    }
}
