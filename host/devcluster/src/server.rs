//! HTTP routing: Kubernetes API paths and parameters to verbs, results to JSON responses.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::cluster::Cluster;
use super::discovery;
use super::openapi;
use super::pipeline;
use super::present::{Presentation, present_list, present_one};
use super::protobuf;
use super::read;
use super::request::{DeleteOptions, FieldValidation, Filter, Paging, Target, WriteOptions};
use super::selectors::{FieldSelector, LabelSelector};
use super::state::Shared;
use super::status::ApiError;
use super::table::Include;
use super::watch::{self as watches, WatchRequest};

/// The largest request body accepted, as in the real server.
const MAX_BODY: usize = 3 * 1024 * 1024;

fn json_response(code: u16, body: &Value) -> Response {
    let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (status, [(header::CONTENT_TYPE, "application/json")], serde_json::to_vec(body).unwrap_or_default()).into_response()
}

fn error_response(err: &ApiError) -> Response {
    let mut response = json_response(err.code, &err.to_status());
    // As the real server: a 429 (or a 504 with a retry delay) says when to come back.
    if let Some(seconds) = err.details.as_ref().and_then(|d| d.get("retryAfterSeconds")).and_then(Value::as_u64)
        && let Ok(value) = axum::http::HeaderValue::from_str(&seconds.to_string())
    {
        response.headers_mut().insert(header::RETRY_AFTER, value);
    }
    response
}

/// The axum handler for every path.
pub(crate) async fn handle(State(shared): State<Arc<Shared>>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let mutating = matches!(parts.method, Method::POST | Method::PUT | Method::PATCH | Method::DELETE);
    if mutating {
        shared.writes.fetch_add(1, Ordering::SeqCst);
    }
    let Ok(body) = axum::body::to_bytes(body, MAX_BODY).await else {
        return error_response(&ApiError::too_large(MAX_BODY));
    };
    let query: Vec<(String, String)> =
        form_urlencoded::parse(parts.uri.query().unwrap_or("").as_bytes()).into_owned().collect();
    let path = parts.uri.path().to_string();
    let call = Call { method: parts.method.clone(), path, query, headers: parts.headers, body };
    if let Some(e) = shared.faults.outage_error() {
        return error_response(&e);
    }
    if mutating {
        shared.faults.until_thawed().await;
    }
    if call.method == Method::GET
        && let Err(e) = wait_for_version(&shared, &call).await
    {
        return error_response(&e);
    }
    let outcome = {
        let shared = shared.clone();
        std::panic::catch_unwind(AssertUnwindSafe(move || route(&shared, &call)))
    };
    let response = match outcome {
        Ok(Ok(Reply::Json(code, value))) => json_response(code, &value),
        Ok(Ok(Reply::Warned(code, value, warnings))) => {
            let mut response = json_response(code, &value);
            for warning in warnings {
                let text = format!("299 - {}", serde_json::Value::String(warning));
                if let Ok(header) = axum::http::HeaderValue::from_str(&text) {
                    response.headers_mut().append(header::WARNING, header);
                }
            }
            response
        }
        Ok(Ok(Reply::Text(text))) => (StatusCode::OK, [(header::CONTENT_TYPE, "text/plain")], text).into_response(),
        Ok(Ok(Reply::Stream(body))) => Response::builder()
            .status(StatusCode::OK)
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::CACHE_CONTROL, "no-cache, private")
            .body(body)
            .unwrap_or_else(|_| error_response(&ApiError::internal("could not start the watch"))),
        Ok(Err(e)) => error_response(&e),
        Err(_) => error_response(&ApiError::internal("the server hit an internal error while serving this request")),
    };
    if mutating {
        if shared.lock().store.gc_pending() {
            shared.gc.notify_one();
        }
        shared.persist.notify_one();
        if response.status().is_success() {
            shared.faults.wrote().await;
        }
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

struct Call {
    method: Method,
    path: String,
    query: Vec<(String, String)>,
    headers: HeaderMap,
    body: bytes::Bytes,
}

impl Call {
    fn param(&self, name: &str) -> Option<&str> {
        self.query.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    fn header(&self, name: header::HeaderName) -> &str {
        self.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or("")
    }

    fn flag(&self, name: &str) -> bool {
        matches!(self.param(name), Some("true" | "1"))
    }
}

enum Reply {
    Json(u16, Value),
    /// A write's answer with `Warning` headers.
    Warned(u16, Value, Vec<String>),
    Text(&'static str),
    Stream(Body),
}

fn route(shared: &Arc<Shared>, call: &Call) -> Result<Reply, ApiError> {
    let segs: Vec<&str> = call.path.split('/').filter(|s| !s.is_empty()).collect();
    let get_only = |reply: Option<Value>| -> Result<Reply, ApiError> {
        if call.method != Method::GET {
            return Err(ApiError::method_not_allowed());
        }
        reply.map(|v| Reply::Json(200, v)).ok_or_else(ApiError::no_route)
    };
    match segs.as_slice() {
        [] => get_only(Some(
            json!({ "paths": ["/api", "/api/v1", "/apis", "/healthz", "/livez", "/readyz", "/version"] }),
        )),
        ["version"] => get_only(Some(discovery::version_info())),
        ["healthz" | "livez" | "readyz"] => Ok(Reply::Text("ok")),
        ["api"] => get_only(Some(discovery::core_versions(&shared.address))),
        ["api", version] => get_only(discovery::resource_list(&shared.lock().registry, "", version)),
        ["apis"] => get_only(Some(discovery::group_list(&shared.lock().registry))),
        ["apis", group] => get_only(discovery::group(&shared.lock().registry, group)),
        ["apis", group, version] => get_only(discovery::resource_list(&shared.lock().registry, group, version)),
        // Served as JSON only: a client that accepts nothing else (the protobuf form) is told so.
        ["openapi", "v2"] if !accepts_json(call) => Err(ApiError::not_acceptable(&["application/json"])),
        ["openapi", "v2"] => get_only(Some(openapi::v2(&shared.lock().registry))),
        ["openapi", "v3"] => get_only(Some(openapi::root(&shared.lock().registry))),
        ["openapi", "v3", "api", version] => get_only(openapi::document(&shared.lock().registry, "", version)),
        ["openapi", "v3", "apis", group, version] => {
            get_only(openapi::document(&shared.lock().registry, group, version))
        }
        ["api", version, rest @ ..] => resource(shared, call, "", version, rest),
        ["apis", group, version, rest @ ..] => resource(shared, call, group, version, rest),
        _ => Err(ApiError::no_route()),
    }
}

fn accepts_json(call: &Call) -> bool {
    let accept = call.header(header::ACCEPT);
    accept.is_empty() || accept.split(',').any(|a| a.contains("json") || a.trim_start().starts_with("*/*"))
}

fn presentation(call: &Call) -> Presentation {
    let accept = call.header(header::ACCEPT);
    if accept.contains("as=Table") {
        Presentation::Table(Include::parse(call.param("includeObject")))
    } else if accept.contains("as=PartialObjectMetadata") {
        Presentation::Metadata
    } else {
        Presentation::Full
    }
}

fn resource(shared: &Arc<Shared>, call: &Call, group: &str, version: &str, rest: &[&str]) -> Result<Reply, ApiError> {
    let (legacy_watch, rest) = match rest {
        ["watch", rest @ ..] => (true, rest),
        _ => (false, rest),
    };
    let (namespace, rest) = match rest {
        ["namespaces", _, "status" | "finalize"] => (None, rest),
        ["namespaces", ns, rest @ ..] if !rest.is_empty() => (Some((*ns).to_string()), rest),
        _ => (None, rest),
    };
    let (plural, name, subresource) = match rest {
        [plural] => (*plural, None, None),
        [plural, name] => (*plural, Some((*name).to_string()), None),
        [plural, name, sub] => (*plural, Some((*name).to_string()), Some((*sub).to_string())),
        _ => return Err(ApiError::no_route()),
    };
    let target = resolve(&shared.lock(), group, version, namespace, plural, name, subresource)?;
    let how = presentation(call);
    Ok(match dispatch(shared, call, &target, how, legacy_watch)? {
        Reply::Json(code, value) => Reply::Json(code, read::as_addressed(&target, value)),
        Reply::Warned(code, value, warnings) => Reply::Warned(code, read::as_addressed(&target, value), warnings),
        reply => reply,
    })
}

/// The target of a resource path: the resource served there (or, for a view, the one it is
/// stored as), and the object and subresource named.
fn resolve(
    cluster: &Cluster,
    group: &str,
    version: &str,
    namespace: Option<String>,
    plural: &str,
    name: Option<String>,
    subresource: Option<String>,
) -> Result<Target, ApiError> {
    let addressed = cluster.registry.find(group, version, plural).ok_or_else(ApiError::no_route)?;
    let (rt, stored_version, view) = match addressed.strategy(version).stored_as() {
        Some(stored) => {
            let rt =
                cluster.registry.find(stored.group, stored.version, stored.plural).ok_or_else(ApiError::no_route)?;
            (rt, stored.version, Some((addressed, version.to_string())))
        }
        None => (addressed, version, None),
    };
    if namespace.is_some() && !rt.namespaced {
        return Err(ApiError::no_route());
    }
    if let Some(sub) = &subresource {
        let v = rt.version(stored_version);
        let served = match sub.as_str() {
            "status" => v.is_some_and(|v| v.status),
            "scale" => v.is_some_and(|v| v.scale.is_some()),
            _ => false,
        };
        if !served {
            return Err(ApiError::no_route());
        }
    }
    Ok(Target { rt, version: stored_version.to_string(), namespace, name, subresource, view })
}

#[allow(clippy::too_many_lines)] // the route table of a resource: one arm per verb
fn dispatch(
    shared: &Arc<Shared>,
    call: &Call,
    target: &Target,
    how: Presentation,
    legacy_watch: bool,
) -> Result<Reply, ApiError> {
    let rt = target.rt.clone();
    let watching = legacy_watch || call.flag("watch");
    // A verb the resource does not serve (deletecollection of namespaces, say) is refused as by
    // the real server.
    let verb = match (&call.method, &target.name) {
        (&Method::GET, _) if watching => "watch",
        (&Method::GET, Some(_)) => "get",
        (&Method::GET, None) => "list",
        (&Method::POST, _) => "create",
        (&Method::PUT, _) => "update",
        (&Method::PATCH, _) => "patch",
        (&Method::DELETE, Some(_)) => "delete",
        (&Method::DELETE, None) => "deletecollection",
        _ => "",
    };
    if target.subresource.is_none() && !rt.verbs.iter().any(|v| v == verb) {
        return Err(ApiError::method_not_allowed());
    }
    if let Some(injected) = shared.faults.request_error(verb, &rt.plural, || object_name(call, target)) {
        return Err(injected);
    }
    match (&call.method, &target.name) {
        (&Method::GET, Some(_)) if !watching => {
            let cluster = shared.lock();
            let store = &cluster.store;
            let obj = if target.subresource.as_deref() == Some("scale") {
                read::scale(store, target)?
            } else if let Some(at) = stale_version(shared, store, &rt.plural, call) {
                present_one(target, &read::get_at(store, target, at)?, how)
            } else {
                present_one(target, &read::get(store, target)?, how)
            };
            Ok(Reply::Json(200, obj))
        }
        (&Method::GET, Some(name)) => {
            let mut filter = filter(call, target)?;
            filter.fields =
                FieldSelector::parse(&format!("metadata.name={name}"), &[]).map_err(ApiError::bad_request)?;
            watch(shared, call, Target { name: None, ..target.clone() }, filter, how)
        }
        (&Method::GET, None) => {
            let filter = filter(call, target)?;
            if watching {
                return watch(shared, call, target.clone(), filter, how);
            }
            let exact = match (call.param("resourceVersionMatch"), call.param("resourceVersion")) {
                (Some("Exact"), Some(rv)) => Some(
                    rv.parse::<u64>()
                        .map_err(|_| ApiError::bad_request(format!("invalid resource version: {rv:?}")))?,
                ),
                _ => None,
            };
            let paging = Paging {
                limit: call.param("limit").and_then(|l| l.parse().ok()),
                continue_token: call.param("continue").filter(|c| !c.is_empty()).map(String::from),
                exact,
            };
            let listed = {
                let cluster = shared.lock();
                let store = &cluster.store;
                let paging =
                    Paging { exact: paging.exact.or_else(|| stale_version(shared, store, &rt.plural, call)), ..paging };
                read::list(store, target, &filter, &paging)?
            };
            Ok(Reply::Json(200, present_list(target, &listed, how)))
        }
        (&Method::POST, None) => {
            if rt.namespaced && target.namespace.is_none() {
                return Err(ApiError::method_not_allowed());
            }
            let body = decode_body(call, target)?;
            if let Some(answer) = pipeline::answer(target, &body) {
                return Ok(Reply::Json(201, answer));
            }
            let opts = write_options(call)?;
            let (code, obj) = pipeline::create(&mut shared.lock(), target, body, &opts)?;
            Ok(Reply::Warned(code, obj, opts.warnings.take()))
        }
        (&Method::PUT, Some(_)) => {
            let body = decode_body(call, target)?;
            let opts = write_options(call)?;
            let (code, obj) = pipeline::update(&mut shared.lock(), target, body, &opts)?;
            Ok(Reply::Warned(code, obj, opts.warnings.take()))
        }
        (&Method::PATCH, Some(_)) => {
            let content_type = call.header(header::CONTENT_TYPE).split(';').next().unwrap_or("").trim().to_string();
            let mut opts = write_options(call)?;
            opts.force = call.flag("force");
            let (code, obj) = pipeline::patch(&mut shared.lock(), target, &call.body, &content_type, &opts)?;
            Ok(Reply::Warned(code, obj, opts.warnings.take()))
        }
        (&Method::DELETE, Some(_)) => {
            if target.subresource.is_some() {
                return Err(ApiError::method_not_allowed());
            }
            let opts = delete_options(call)?;
            let (code, obj) = pipeline::delete(&mut shared.lock(), target, &opts)?;
            Ok(Reply::Json(code, obj))
        }
        (&Method::DELETE, None) => {
            let filter = filter(call, target)?;
            let opts = delete_options(call)?;
            let (code, list) = pipeline::delete_collection(&mut shared.lock(), target, &filter, &opts)?;
            Ok(Reply::Json(code, list))
        }
        _ => Err(ApiError::method_not_allowed()),
    }
}

fn filter(call: &Call, t: &Target) -> Result<Filter, ApiError> {
    let labels = LabelSelector::parse(call.param("labelSelector").unwrap_or("")).map_err(ApiError::bad_request)?;
    let given = call.param("fieldSelector").unwrap_or("");
    let field_text = match &t.view {
        Some((view, version)) => view.strategy(version).stored_field_selector(given),
        None => given.to_string(),
    };
    let fields = FieldSelector::parse(&field_text, t.strategy().selectable_fields()).map_err(ApiError::bad_request)?;
    Ok(Filter { namespace: t.namespace.clone(), labels, fields })
}

/// The name a request is about: in its path, or in the body of a create.
fn object_name(call: &Call, target: &Target) -> String {
    target.name.clone().unwrap_or_else(|| {
        serde_json::from_slice::<Value>(&call.body)
            .ok()
            .and_then(|b| b.pointer("/metadata/name").and_then(Value::as_str).map(String::from))
            .unwrap_or_default()
    })
}

/// The older resourceVersion a read of `resource` is served at while stale reads are
/// injected (within the history the store keeps). Only reads that allow an older answer get
/// one, as from a real server's watch cache: `resourceVersion=0` (any version) and
/// `resourceVersion=N` (not older than N). A read without a resourceVersion is a consistent
/// read, always of the latest state.
fn stale_version(shared: &Shared, store: &super::store::Store, resource: &str, call: &Call) -> Option<u64> {
    let not_older_than = match call.param("resourceVersion") {
        Some(rv) if call.param("resourceVersionMatch") != Some("Exact") => rv.parse::<u64>().ok()?,
        _ => return None,
    };
    let at = store.current_rv().saturating_sub(shared.faults.stale_behind(resource)?).max(store.oldest_watchable());
    (at >= not_older_than && at < store.current_rv()).then(|| shared.faults.count_stale(at))
}

fn watch(
    shared: &Arc<Shared>,
    call: &Call,
    target: Target,
    filter: Filter,
    how: Presentation,
) -> Result<Reply, ApiError> {
    let timeout = call.param("timeoutSeconds").and_then(|t| t.parse::<u64>().ok()).unwrap_or(1800);
    let req = WatchRequest {
        target,
        filter,
        resource_version: call.param("resourceVersion").map(String::from),
        send_initial_events: call.param("sendInitialEvents").map(|v| v == "true"),
        bookmarks: call.flag("allowWatchBookmarks"),
        timeout: Duration::from_secs(timeout),
        presentation: how,
    };
    watches::start(shared, req).map(Reply::Stream)
}

/// Decodes a create/update body (JSON, YAML or protobuf, as the content type says), in the
/// stored form of the resource (a view's body converted).
fn decode_body(call: &Call, target: &Target) -> Result<Value, ApiError> {
    let content_type = call.header(header::CONTENT_TYPE);
    let (addressed, version) = target.view.as_ref().map_or((&target.rt, target.version.as_str()), |(v, n)| (v, n));
    let value: Value = if content_type.starts_with("application/vnd.kubernetes.protobuf") {
        protobuf::decode(&call.body, &addressed.api_version(version), &addressed.kind).map_err(|e| match e {
            protobuf::Error::NotBuiltin => {
                ApiError::unsupported_media_type(content_type, &["application/json", "application/yaml"])
            }
            protobuf::Error::Malformed(why) => {
                ApiError::bad_request(format!("the protobuf body of {} could not be decoded: {why}", addressed.kind))
            }
        })?
    } else if content_type.contains("yaml") {
        serde_yaml_ng::from_slice(&call.body).map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?
    } else if content_type.is_empty() || content_type.contains("json") {
        serde_json::from_slice(&call.body)
            .map_err(|e| ApiError::bad_request(format!("the request body is not valid JSON: {e}")))?
    } else {
        return Err(ApiError::unsupported_media_type(content_type, &["application/json", "application/yaml"]));
    };
    if !value.is_object() {
        return Err(ApiError::bad_request("the request body must be a JSON object"));
    }
    Ok(match &target.view {
        Some((view, version)) => view.strategy(version).convert_to_stored(&value),
        None => value,
    })
}

fn dry_run(values: &[&str]) -> Result<bool, ApiError> {
    for v in values {
        if *v != "All" {
            return Err(ApiError::bad_request(format!("Invalid dryRun value: {v:?}: supported values: \"All\"")));
        }
    }
    Ok(!values.is_empty())
}

fn write_options(call: &Call) -> Result<WriteOptions, ApiError> {
    let dry: Vec<&str> = call.query.iter().filter(|(k, _)| k == "dryRun").map(|(_, v)| v.as_str()).collect();
    let explicit = call.param("fieldManager").filter(|m| !m.is_empty());
    if explicit.is_some_and(|m| m.len() > 128) {
        return Err(ApiError::bad_request("fieldManager: Too long: may not be more than 128 bytes"));
    }
    let agent = call.header(header::USER_AGENT);
    let from_agent = agent.split('/').next().unwrap_or("").trim();
    let manager = explicit.map_or_else(
        || {
            if from_agent.is_empty() { "unknown".to_string() } else { from_agent.chars().take(128).collect() }
        },
        String::from,
    );
    let validation = match call.param("fieldValidation") {
        None | Some("" | "Warn") => FieldValidation::Warn,
        Some("Ignore") => FieldValidation::Ignore,
        Some("Strict") => FieldValidation::Strict,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "fieldValidation: Unsupported value: {other:?}: supported values: \"Ignore\", \"Strict\", \"Warn\""
            )));
        }
    };
    Ok(WriteOptions {
        dry_run: dry_run(&dry)?,
        manager,
        explicit_manager: explicit.is_some(),
        force: false,
        validation,
        warnings: std::cell::RefCell::default(),
    })
}

fn delete_options(call: &Call) -> Result<DeleteOptions, ApiError> {
    let body: Value = if call.body.iter().all(u8::is_ascii_whitespace) {
        json!({})
    } else {
        serde_json::from_slice(&call.body)
            .map_err(|e| ApiError::bad_request(format!("the DeleteOptions body is not valid JSON: {e}")))?
    };
    let s = |v: Option<&Value>| v.and_then(Value::as_str).map(String::from);
    let mut propagation =
        s(body.get("propagationPolicy")).or_else(|| call.param("propagationPolicy").map(String::from));
    let orphan = body
        .get("orphanDependents")
        .and_then(Value::as_bool)
        .or_else(|| call.param("orphanDependents").map(|v| v == "true"));
    if propagation.is_none() {
        propagation = orphan.map(|o| if o { "Orphan".to_string() } else { "Background".to_string() });
    }
    let mut dry: Vec<&str> = call.query.iter().filter(|(k, _)| k == "dryRun").map(|(_, v)| v.as_str()).collect();
    dry.extend(body.get("dryRun").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str));
    Ok(DeleteOptions {
        propagation,
        precondition_uid: s(body.pointer("/preconditions/uid")),
        precondition_rv: s(body.pointer("/preconditions/resourceVersion")),
        dry_run: dry_run(&dry)?,
    })
}
