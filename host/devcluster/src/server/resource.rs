//! Resource requests: the path resolved to a [`Target`], each verb to its read, its write
//! pipeline or its watch, and the answer shown as the resource the client addressed.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::http::header;
use futures_util::StreamExt;

use super::params::{decode_as, decode_body, delete_options, presentation, write_options};
use super::{Call, Reply};
use crate::cluster::Cluster;
use crate::faults;
use crate::pipeline::{self, Deleter};
use crate::present::{Presentation, present_list, present_one};
use crate::read;
use crate::request::{Filter, Paging, Target};
use crate::request_info::ResourcePath;
use crate::selectors::{FieldSelector, LabelSelector};
use crate::state::Shared;
use crate::status::ApiError;
use crate::strategy::Answering;
use crate::watch::{self, WatchRequest};

/// Serves the request for the resource path `path`.
pub(super) async fn serve(shared: &Arc<Shared>, call: &Call, path: &ResourcePath) -> Result<Reply, ApiError> {
    let target = resolve(&shared.lock(), path)?;
    Ok(match dispatch(shared, call, &target, presentation(call)).await? {
        Reply::Json(code, value) => Reply::Json(code, read::as_addressed(&target, value)),
        Reply::Warned(code, value, warnings) => Reply::Warned(code, read::as_addressed(&target, value), warnings),
        reply => reply,
    })
}

/// The target of a resource path: the resource served there (or, for a view, the one it is
/// stored as), and the object and subresource named.
fn resolve(cluster: &Cluster, path: &ResourcePath) -> Result<Target, ApiError> {
    let addressed = cluster.registry.find(&path.group, &path.version, &path.resource).ok_or_else(ApiError::no_route)?;
    let (rt, version, view) = match addressed.strategy(&path.version).stored_as() {
        Some(stored) => {
            let rt =
                cluster.registry.find(stored.group, stored.version, stored.plural).ok_or_else(ApiError::no_route)?;
            (rt, stored.version, Some((addressed, path.version.clone())))
        }
        None => (addressed, path.version.as_str(), None),
    };
    if path.namespace.is_some() && !rt.namespaced {
        return Err(ApiError::no_route());
    }
    if let Some(sub) = &path.subresource {
        let v = rt.version(version);
        let served = match sub.as_str() {
            "status" => v.is_some_and(|v| v.status),
            "scale" => v.is_some_and(|v| v.scale.is_some()),
            other => v.is_some() && rt.strategy(version).answered_subresources().iter().any(|s| s.name == other),
        };
        if !served {
            return Err(ApiError::no_route());
        }
    }
    Ok(Target {
        rt,
        version: version.to_string(),
        namespace: path.namespace.clone(),
        name: path.name.clone(),
        subresource: path.subresource.clone(),
        view,
    })
}

/// One arm per verb; a verb the resource does not serve (deletecollection of namespaces, say)
/// is refused as by the real server.
async fn dispatch(shared: &Arc<Shared>, call: &Call, target: &Target, how: Presentation) -> Result<Reply, ApiError> {
    let verb = call.info.verb;
    if target.subresource.is_none() && !target.rt.verbs.iter().any(|v| v == verb) {
        return Err(ApiError::method_not_allowed());
    }
    match (verb, &target.name) {
        ("get", Some(_)) => {
            let (stored, conversion) = {
                let cluster = shared.lock();
                let stored = match call.stale {
                    Some(at) => read::get_at(&cluster.store, target, at)?,
                    None => read::existing(&cluster.store, target)?,
                };
                (stored, cluster.conversion(&target.rt))
            };
            let obj = read::show(&conversion, target, &stored).await?;
            if target.subresource.as_deref() == Some("scale") {
                return Ok(Reply::Json(200, read::scale(target, &obj)?));
            }
            Ok(Reply::Json(200, present_one(target, &obj, how)))
        }
        ("watch", Some(name)) => {
            let mut filter = filter(call, target)?;
            filter.fields =
                FieldSelector::parse(&format!("metadata.name={name}"), &[]).map_err(ApiError::bad_request)?;
            watch(shared, call, Target { name: None, ..target.clone() }, filter, how)
        }
        ("watch", None) => watch(shared, call, target.clone(), filter(call, target)?, how),
        ("list", None) => {
            let filter = filter(call, target)?;
            let paging = paging(call)?;
            let (listed, conversion) = {
                let cluster = shared.lock();
                (read::list(&cluster.store, target, &filter, &paging)?, cluster.conversion(&target.rt))
            };
            let listed = listed.convert(&conversion).await?;
            Ok(Reply::Json(200, present_list(target, &listed, how)))
        }
        ("create", None) => {
            if target.rt.namespaced && target.namespace.is_none() {
                return Err(ApiError::method_not_allowed());
            }
            let body = decode_body(call, target)?;
            let answered = {
                let cluster = shared.lock();
                pipeline::answer(target, &body, &answering(shared, &cluster, call, target))
            };
            if let Some(answer) = answered {
                return Ok(Reply::Json(201, answer?));
            }
            let opts = write_options(call)?;
            let written = pipeline::create(shared, target, body, &opts).await;
            Ok(warned(written, opts.take_warnings()))
        }
        ("create", Some(_)) => create_subresource(shared, call, target),
        ("update", Some(_)) => {
            let body = decode_body(call, target)?;
            let opts = write_options(call)?;
            let written = pipeline::update(shared, target, body, &opts).await;
            Ok(warned(written, opts.take_warnings()))
        }
        ("patch", Some(_)) => {
            let content_type = call.header(header::CONTENT_TYPE).split(';').next().unwrap_or("").trim().to_string();
            let mut opts = write_options(call)?;
            opts.force = call.flag("force");
            let written = pipeline::patch(shared, target, &call.body, &content_type, &opts).await;
            Ok(warned(written, opts.take_warnings()))
        }
        ("delete", Some(_)) => {
            if target.subresource.is_some() {
                return Err(ApiError::method_not_allowed());
            }
            let opts = delete_options(call)?;
            let warnings = Mutex::default();
            let by = Deleter { user: &call.user, warnings: &warnings };
            let deleted = pipeline::delete(shared, target, &opts, &by).await;
            Ok(warned(deleted, warnings.into_inner().unwrap_or_default()))
        }
        ("deletecollection", None) => {
            let filter = filter(call, target)?;
            let opts = delete_options(call)?;
            let warnings = Mutex::default();
            let by = Deleter { user: &call.user, warnings: &warnings };
            let deleted = pipeline::delete_collection(shared, target, &filter, &opts, &by).await;
            Ok(warned(deleted, warnings.into_inner().unwrap_or_default()))
        }
        _ => Err(ApiError::method_not_allowed()),
    }
}

/// A create of a subresource its kind answers (`serviceaccounts/token`).
fn create_subresource(shared: &Shared, call: &Call, target: &Target) -> Result<Reply, ApiError> {
    let sub = target.subresource.as_deref().ok_or_else(ApiError::method_not_allowed)?;
    let strategy = target.strategy();
    let answered = strategy.answered_subresources().iter().find(|s| s.name == sub);
    let answered = answered.ok_or_else(ApiError::method_not_allowed)?;
    let body = decode_as(call, &format!("{}/{}", answered.group, answered.version), answered.kind)?;
    let cluster = shared.lock();
    let parent = read::existing(&cluster.store, &Target { subresource: None, ..target.clone() })?;
    let answer = strategy.answer_subresource(sub, &parent, &body, &answering(shared, &cluster, call, target))?;
    Ok(Reply::Json(201, answer))
}

/// The page a list asks for (`limit`, `continue`, an exact `resourceVersion`).
fn paging(call: &Call) -> Result<Paging, ApiError> {
    let exact = match (call.param("resourceVersionMatch"), call.param("resourceVersion")) {
        (Some("Exact"), Some(rv)) => {
            Some(rv.parse::<u64>().map_err(|_| ApiError::bad_request(format!("invalid resource version: {rv:?}")))?)
        }
        _ => None,
    };
    Ok(Paging {
        limit: call.param("limit").and_then(|l| l.parse().ok()),
        continue_token: call.param("continue").filter(|c| !c.is_empty()).map(String::from),
        exact: exact.or(call.stale),
    })
}

/// A write's answer, or its refusal, with the warnings gathered on the way.
fn warned(written: Result<(u16, serde_json::Value), ApiError>, warnings: Vec<String>) -> Reply {
    match written {
        Ok((code, obj)) => Reply::Warned(code, obj, warnings),
        Err(e) => Reply::Refused(e, warnings),
    }
}

/// What an answered resource may read for the request `call`.
fn answering<'a>(shared: &'a Shared, cluster: &'a Cluster, call: &'a Call, target: &'a Target) -> Answering<'a> {
    Answering { user: &call.user, store: &cluster.store, signer: &shared.credentials.signer, namespace: target.ns() }
}

/// The namespace and selectors of a list, watch or collection delete; a view's field
/// selector in the stored resource's field names.
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

/// A watch's stream, through the faults' adapter.
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
    let frames = watch::start(shared, req)?;
    let bytes = faults::watch_stream(shared.faults.clone(), frames).map(Ok::<_, std::convert::Infallible>);
    Ok(Reply::Stream(Body::from_stream(bytes)))
}
