//! Resource requests: the path resolved to a [`Target`], each verb to its read, its write
//! pipeline or its watch, and the answer shown as the resource the client addressed.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::http::header;
use futures_util::StreamExt;
use serde_json::{Value, json};

use super::negotiate;
use super::params::{ListOptions, decode_as, decode_body, delete_options, list_options, write_options};
use super::{Call, Reply};
use crate::cluster::Cluster;
use crate::faults;
use crate::object;
use crate::pipeline::{self, Deleter};
use crate::present::{Presentation, present_answer};
use crate::read;
use crate::request::{Filter, Paging, Target};
use crate::request_info::ResourcePath;
use crate::resource::Subresource;
use crate::selectors::{FieldSelector, LabelSelector};
use crate::state::Shared;
use crate::status::ApiError;
use crate::strategy::Answering;
use crate::watch::{self, WatchRequest};

/// Serves the request for the resource path `path`: the representation asked for is
/// negotiated first (406 before anything is done), the verb served, and its answer shown as
/// asked (a table, metadata only) and as the resource the client addressed.
pub(super) async fn serve(shared: &Arc<Shared>, call: &Call, path: &ResourcePath) -> Result<Reply, ApiError> {
    let target = resolve(&shared.lock(), path)?;
    let accept = call.header(header::ACCEPT);
    let how = negotiate::presentation(accept, target.definition().is_some(), call.param("includeObject"))?;
    let shown = |value| present_answer(&target, value, how).map(|v| read::as_addressed(&target, v));
    // A deprecated resource says so in every answer.
    let warned = |mut warnings: Vec<String>| {
        warnings.extend(target.strategy().warning().map(String::from));
        warnings
    };
    Ok(match dispatch(shared, call, &target, how).await? {
        Reply::Json(code, value) => Reply::Warned(code, shown(value)?, warned(Vec::new())),
        Reply::Warned(code, value, warnings) => Reply::Warned(code, shown(value)?, warned(warnings)),
        Reply::Refused(e, warnings) => Reply::Refused(e, warned(warnings)),
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
    if let Some(sub) = &path.subresource
        && !rt.version(version).is_some_and(|v| v.subresources.iter().any(|s| s.name == *sub))
    {
        return Err(ApiError::no_route());
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
    if let Some(sub) = served(target, verb)?
        && let Some(reply) = stream_or_act(shared, call, target, sub).await
    {
        return reply;
    }
    if let Some(objects) = target.strategy().computed() {
        return computed(call, target, &objects);
    }
    match (verb, &target.name) {
        ("get", Some(_)) => get(shared, call, target).await,
        ("watch", Some(name)) => {
            let selectors = Selectors::parse(call)?;
            let opts = list_options(call, true, shared.watch_list)?;
            let mut filter = selectors.filter(target)?;
            // A watch of one object may select it by name, and nothing else.
            if !filter.fields.is_empty() && filter.fields.exact_name() != Some(name) {
                return Err(ApiError::bad_request("fieldSelector metadata.name doesn't match requested name"));
            }
            filter.fields = FieldSelector::parse(&format!("metadata.name={}", escape_field_value(name)))
                .map_err(ApiError::bad_request)?;
            watch(shared, opts, Target { name: None, ..target.clone() }, filter, how)
        }
        ("watch", None) => {
            let selectors = Selectors::parse(call)?;
            let opts = list_options(call, true, shared.watch_list)?;
            watch(shared, opts, target.clone(), selectors.filter(target)?, how)
        }
        ("list", None) => {
            let selectors = Selectors::parse(call)?;
            let opts = list_options(call, false, shared.watch_list)?;
            let filter = selectors.filter(target)?;
            let exact = match (opts.resource_version_match.as_deref(), opts.resource_version.as_deref()) {
                (Some("Exact"), Some(rv)) => Some(
                    rv.parse::<u64>()
                        .map_err(|_| ApiError::bad_request(format!("invalid resource version: {rv:?}")))?,
                ),
                _ => None,
            };
            let paging = Paging {
                limit: usize::try_from(opts.limit).ok().filter(|l| *l > 0),
                continue_token: opts.continue_token,
                exact: exact.or(call.stale),
            };
            let (listed, conversion) = {
                let cluster = shared.lock();
                (read::list(&cluster.store, target, &filter, &paging)?, cluster.conversion(&target.rt))
            };
            let listed = listed.convert(&conversion).await?;
            Ok(Reply::Json(200, listed.render()))
        }
        ("create", None) => create(shared, call, target).await,
        ("update", Some(_)) => {
            let opts = write_options(call, None)?;
            let body = decode_body(call, target)?;
            let written = pipeline::update(shared, target, body, &opts).await;
            Ok(warned(written, opts.take_warnings()))
        }
        ("patch", Some(_)) => {
            let content_type = call.header(header::CONTENT_TYPE).split(';').next().unwrap_or("").trim().to_string();
            let kind = pipeline::patch_type(target, &content_type)?;
            let opts = write_options(call, Some(kind))?;
            let written = pipeline::patch(shared, target, &call.body, kind, &opts).await;
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
            let selectors = Selectors::parse(call)?;
            list_options(call, false, shared.watch_list)?;
            let filter = selectors.filter(target)?;
            let opts = delete_options(call)?;
            let warnings = Mutex::default();
            let by = Deleter { user: &call.user, warnings: &warnings };
            let deleted = pipeline::delete_collection(shared, target, &filter, &opts, &by).await;
            Ok(warned(deleted, warnings.into_inner().unwrap_or_default()))
        }
        _ => Err(ApiError::method_not_allowed()),
    }
}

/// A read of one object (or its scale), in the version addressed: converted by the conversion
/// webhook, if any, with the cluster unlocked.
async fn get(shared: &Shared, call: &Call, target: &Target) -> Result<Reply, ApiError> {
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
    Ok(Reply::Json(200, obj))
}

/// A create of an object, or of a review, which is answered and never stored.
async fn create(shared: &Arc<Shared>, call: &Call, target: &Target) -> Result<Reply, ApiError> {
    if target.rt.namespaced && target.namespace.is_none() {
        return Err(ApiError::method_not_allowed());
    }
    let opts = write_options(call, None)?;
    let body = decode_body(call, target)?;
    let answered = {
        let cluster = shared.lock();
        pipeline::answer(target, &body, &answering(shared, &cluster, call, target))
    };
    if let Some(answer) = answered {
        return Ok(Reply::Json(201, answer?));
    }
    let written = pipeline::create(shared, target, body, &opts).await;
    Ok(warned(written, opts.take_warnings()))
}

/// A write's answer, or its refusal, with the warnings gathered on the way.
fn warned(written: Result<(u16, Value), ApiError>, warnings: Vec<String>) -> Reply {
    match written {
        Ok((code, obj)) => Reply::Warned(code, obj, warnings),
        Err(e) => Reply::Refused(e, warnings),
    }
}

/// What an answered resource may read for the request `call`.
fn answering<'a>(shared: &'a Shared, cluster: &'a Cluster, call: &'a Call, target: &'a Target) -> Answering<'a> {
    Answering { user: &call.user, store: &cluster.store, signer: &shared.credentials.signer, namespace: target.ns() }
}

/// Refuses a verb the resource (or subresource) addressed does not serve; the subresource
/// served, when one is addressed.
fn served<'a>(target: &'a Target, verb: &str) -> Result<Option<&'a Subresource>, ApiError> {
    let served = match target.subresource.as_deref() {
        Some(sub) => target.rt.version(&target.version).and_then(|v| v.subresources.iter().find(|s| s.name == sub)),
        None => None,
    };
    let verbs = served.map_or(&target.rt.verbs, |s| &s.verbs);
    if !verbs.iter().any(|v| v == verb) {
        // A list that cannot be watched says so (its handler serves `?watch` too).
        if verb == "watch" && target.subresource.is_none() && verbs.iter().any(|v| v == "list") {
            return Err(ApiError::method_not_supported(&target.rt.group, &target.rt.plural, verb));
        }
        return Err(ApiError::method_not_allowed());
    }
    Ok(served)
}

/// A stream from where the object runs (a get or create of a connect subresource), or a
/// create that acts on the object or is answered (`serviceaccounts/token`); `None` for the
/// other requests to a subresource.
async fn stream_or_act(
    shared: &Arc<Shared>,
    call: &Call,
    target: &Target,
    sub: &Subresource,
) -> Option<Result<Reply, ApiError>> {
    let verb = call.info.verb;
    if matches!(verb, "get" | "create")
        && let Some(streamed) = pipeline::connect(&shared.lock(), target, &call.query)
    {
        return Some(streamed.map(|()| Reply::Empty(204)));
    }
    if verb != "create" {
        return None;
    }
    let opts = match write_options(call, None) {
        Ok(opts) => opts,
        Err(e) => return Some(Err(e)),
    };
    let api_version = if sub.group.is_empty() { sub.version.clone() } else { format!("{}/{}", sub.group, sub.version) };
    let mut body = match decode_as(call, &api_version, &sub.kind) {
        Ok(body) => body,
        Err(e) => return Some(Err(e)),
    };
    // Read as its kind, as the create handler decodes it: admission sees it so.
    body["apiVersion"] = json!(api_version);
    body["kind"] = json!(sub.kind);
    let acted = pipeline::act(shared, target, body, &call.query, &opts).await;
    Some(Ok(warned(acted, opts.take_warnings())))
}

/// A read of a resource whose objects are made on each read (`Strategy::computed`): never
/// stored, so never watched.
fn computed(call: &Call, target: &Target, objects: &[Value]) -> Result<Reply, ApiError> {
    let present = |o: &Value| read::present(&target.rt, &target.version, o);
    match (call.info.verb, &target.name) {
        ("get", Some(name)) => objects
            .iter()
            .find(|o| object::name(o) == name)
            .map(|o| Reply::Json(200, present(o)))
            .ok_or_else(|| ApiError::not_found(&target.rt.group, &target.rt.plural, name)),
        ("list", None) => {
            let filter = Selectors::parse(call)?.filter(target)?;
            let items: Vec<Value> = objects.iter().filter(|o| filter.matches(o)).map(present).collect();
            Ok(Reply::Json(200, read::list_of(target, &items, &json!({}))))
        }
        (verb, _) => Err(ApiError::method_not_supported(&target.rt.group, &target.rt.plural, verb)),
    }
}

/// The selectors of a list, watch or collection delete, as the query gives them: parsed
/// first (a malformed one is a 400 before the options are checked), read as the resource's
/// fields after.
struct Selectors {
    labels: LabelSelector,
    fields: FieldSelector,
}

impl Selectors {
    fn parse(call: &Call) -> Result<Selectors, ApiError> {
        let labels = LabelSelector::parse(call.param("labelSelector").unwrap_or("")).map_err(ApiError::bad_request)?;
        let fields = FieldSelector::parse(call.param("fieldSelector").unwrap_or("")).map_err(ApiError::bad_request)?;
        Ok(Selectors { labels, fields })
    }

    /// The filter of the target's objects: its namespace and these selectors, the field
    /// selector in the labels of the resource addressed (a view's own, read from the stored
    /// objects).
    fn filter(self, t: &Target) -> Result<Filter, ApiError> {
        let addressed = match &t.view {
            Some((view, version)) => view.strategy(version),
            None => t.strategy(),
        };
        let fields = self.fields.for_kind(&addressed.selectable_fields()).map_err(ApiError::bad_request)?;
        Ok(Filter { namespace: t.namespace.clone(), labels: self.labels, fields })
    }
}

/// A value written into a field selector (`fields.EscapeValue`).
fn escape_field_value(value: &str) -> String {
    value.replace('\\', "\\\\").replace(',', "\\,").replace('=', "\\=")
}

/// A watch's stream, through the faults' adapter. Without `timeoutSeconds` a watch lasts a
/// random time between the minimum request timeout (30 minutes) and twice that, as in the
/// real server, so that watchers do not all reconnect at once.
fn watch(
    shared: &Arc<Shared>,
    opts: ListOptions,
    target: Target,
    filter: Filter,
    how: Presentation,
) -> Result<Reply, ApiError> {
    let timeout = match opts.timeout_seconds {
        Some(seconds) if seconds != 0 => Duration::from_secs(u64::try_from(seconds).unwrap_or(0)),
        _ => Duration::from_secs(1800 + fastrand::u64(0..1800)),
    };
    let req = WatchRequest {
        target,
        filter,
        resource_version: opts.resource_version,
        send_initial_events: opts.send_initial_events,
        bookmarks: opts.bookmarks,
        timeout,
        presentation: how,
    };
    let (group, resource) = req.target.gr();
    let counted = shared.watch_opened(if group.is_empty() { resource } else { format!("{resource}.{group}") });
    let frames = watch::start(shared, req)?;
    let bytes = faults::watch_stream(shared.faults.clone(), frames).map(move |frame| {
        // Open as long as its stream is served.
        let _ = &counted;
        Ok::<_, std::convert::Infallible>(frame)
    });
    Ok(Reply::Stream(Body::from_stream(bytes)))
}
