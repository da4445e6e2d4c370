//! One reconcile of one parent: request from the caches, a sandboxed call, a
//! validated answer, then the writes. Data flows one way: nothing here reaches back
//! into the caches except to read.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kube::api::DynamicObject;
use kube::runtime::controller::Action;
use kube::runtime::events::{Event as KubeEvent, EventType as KubeEventType};
use kube::runtime::reflector::ObjectRef;
use kube::{Resource, ResourceExt};
use serde_json::Value;
use tracing::{debug, info, warn};

use super::apply::{self, contains, prepare_child, same};
use super::cache::controller_uid;
use super::{Context, Error};
use crate::metrics::{Call, Failure, Outcome, WriteKind};
use crate::plugin::{CallError, EventType, Plugin, Query, Reconciled, Request, Response, validate, view};

/// Reconciles `parent`; failures are recorded as a Warning Event on it.
pub(crate) async fn reconcile(parent: Arc<DynamicObject>, ctx: Arc<Context>) -> Result<Action, Error> {
    let key = ctx.pending.key(&parent);
    ctx.pending.started(&key);
    // Another replica's parent: it reconciles it. Held to the end, so this replica
    // never gives the parent away with a reconcile of it in flight.
    let Some(_admitted) = ctx.options.shard.admit(parent.metadata.uid.as_deref().unwrap_or_default()).await else {
        return Ok(Action::await_change());
    };
    let plugin = ctx.current().plugin.manifest().name.clone();
    let metrics = &ctx.options.metrics;
    let in_flight = metrics.in_flight(&plugin);
    in_flight.inc();
    let started = Instant::now();
    let result = run(&parent, &key, &ctx).await;
    in_flight.dec();
    let outcome = if result.is_ok() { Outcome::Success } else { Outcome::Error };
    metrics.reconciled(&plugin, outcome, started.elapsed());
    debug!(
        ok = result.is_ok(),
        elapsed_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX),
        "reconciled"
    );
    match &result {
        Ok(requeue) => {
            ctx.backoff.succeed(&key);
            if let Some(delay) = requeue {
                ctx.pending.after(key, *delay);
            }
        }
        Err(e) => {
            warn!(error = %e, "reconcile failed");
            let event = KubeEvent {
                type_: KubeEventType::Warning,
                reason: e.reason().into(),
                note: Some(truncate(&e.to_string(), 1024)),
                action: "Reconcile".into(),
                secondary: None,
            };
            ctx.publish(&parent, &event).await;
        }
    }
    ctx.reconciles.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    result.map(|requeue| requeue.map_or_else(Action::await_change, Action::requeue))
}

/// Retry with per-parent exponential backoff.
#[allow(clippy::needless_pass_by_value)] // the signature kube-runtime calls
pub(crate) fn error_policy(parent: Arc<DynamicObject>, error: &Error, ctx: Arc<Context>) -> Action {
    let key = ctx.pending.key(&parent);
    // A change to the parent, a child or a related object reconciles it at once anyway.
    let delay =
        if error.is_retryable() { ctx.backoff.fail(key.clone()) } else { ctx.backoff.fail_permanently(key.clone()) };
    ctx.pending.after(key, delay);
    Action::requeue(delay)
}

/// Reconciles `parent`; the answer is when to reconcile it again if nothing changes
/// before (`None`: only on a change).
async fn run(
    parent: &Arc<DynamicObject>,
    key: &ObjectRef<DynamicObject>,
    ctx: &Arc<Context>,
) -> Result<Option<Duration>, Error> {
    if !ctx.caches.ready(CACHE_SYNC).await {
        return Err(Error::NotSynced(CACHE_SYNC));
    }
    let current = ctx.current();
    let plugin = &current.plugin;
    let manifest = plugin.manifest();
    let uid = parent.uid().ok_or(Error::MissingUid)?;
    let finalizer = manifest.finalizer_name();
    let holds_finalizer = parent.finalizers().contains(&finalizer);
    let deleting = parent.meta().deletion_timestamp.is_some();
    if deleting && !holds_finalizer {
        // Not ours to hold up: the API server and the garbage collector finish it.
        return Ok(None);
    }

    let parent_json = view::shown(to_json(parent.as_ref()));
    let metrics = &ctx.options.metrics;
    let observed = ctx.caches.controlled_by(&manifest.children, &uid);
    // The caches narrowed the candidates; what the plugin is shown is decided where
    // `kubewasm render` decides it.
    let candidates: Vec<Value> = observed.iter().map(|(_, o)| to_json(o)).collect();
    let inputs = Inputs {
        key: key.clone(),
        parent: parent_json,
        candidates,
        finalizing: deleting,
        now: jiff::Timestamp::now().to_string(),
        config: current.config.clone(),
    };
    let Reconciled { request, response, .. } = call(ctx, plugin, inputs).await?;
    let response =
        validate(manifest, request.parent().json(), response).inspect_err(|_| metrics.refused(&manifest.name))?;

    if deleting {
        for event in &response.events {
            ctx.publish(parent, &plugin_event(event)).await;
        }
        if !response.finalized {
            return Ok(Some(response.requeue_after.unwrap_or(ctx.options.finalizing_requeue)));
        }
        let rest: Vec<String> = parent.finalizers().iter().filter(|f| **f != finalizer).cloned().collect();
        ctx.writer
            .set_finalizers(&ctx.caches.parent.resource, parent, &rest)
            .await
            .map_err(Error::write("remove finalizer"))?;
        metrics.wrote(&manifest.name, WriteKind::Finalizer);
        info!("finalized");
        return Ok(None);
    }

    if manifest.finalizer && !holds_finalizer {
        let mut finalizers = parent.finalizers().to_vec();
        finalizers.push(finalizer);
        ctx.writer
            .set_finalizers(&ctx.caches.parent.resource, parent, &finalizers)
            .await
            .map_err(Error::write("add finalizer"))?;
        metrics.wrote(&manifest.name, WriteKind::Finalizer);
    }

    if !write(parent, ctx, manifest, &uid, &observed, &response).await? {
        // The API server did not show the parent: it is gone (its deletion is on its way to
        // the cache) or the read lagged. Look again shortly.
        return Ok(Some(PARENT_RECHECK));
    }
    Ok(Some(response.requeue_after.map_or(ctx.options.resync, |d| d.min(ctx.options.resync))))
}

/// Whether the parent with `uid` still exists on the API server (asked once per reconcile,
/// and only before creating a child: cached parents can outlive their deletion).
async fn alive(ctx: &Context, parent: &DynamicObject, uid: &str, known: &mut Option<bool>) -> Result<bool, Error> {
    if let Some(known) = *known {
        return Ok(known);
    }
    let live = ctx
        .writer
        .get(&ctx.caches.parent.resource, &serde_json::to_value(parent).unwrap_or_default())
        .await
        .map_err(Error::write("read the parent"))?;
    let is_alive = live.is_some_and(|p| p.metadata.uid.as_deref() == Some(uid));
    *known = Some(is_alive);
    Ok(is_alive)
}

/// What became of a child the cache has not seen.
enum New {
    Created,
    /// The parent is gone: nothing was written.
    ParentGone,
    /// It exists after all (the cache lags): as read from the API server.
    Exists(Option<Arc<DynamicObject>>),
}

/// Creates a child the cache has not seen. Most likely it is new, but the cache may
/// lag the API server, and a forced apply must never take over an object someone else
/// created: it is created only if it does not exist, and read if it does.
async fn create_new(
    ctx: &Context,
    parent: &DynamicObject,
    uid: &str,
    parent_alive: &mut Option<bool>,
    resource: &kube::discovery::ApiResource,
    child: &Value,
) -> Result<New, Error> {
    // The cache may still show a parent that was deleted (its events lag): a child
    // created now would be collected at once, and recreated on the next stale
    // reconcile, over and over. Its deletion is on its way.
    let name = child["metadata"]["name"].as_str().unwrap_or_default();
    if !alive(ctx, parent, uid, parent_alive).await? {
        debug!(kind = %resource.kind, name, "parent not found; child not created");
        return Ok(New::ParentGone);
    }
    let what = |verb: &str| format!("{verb} {} {name}", resource.kind);
    if ctx.writer.create(resource, child).await.map_err(Error::write(&what("create")))? {
        debug!(kind = %resource.kind, name, "child created");
        return Ok(New::Created);
    }
    let existing = ctx.writer.get(resource, child).await.map_err(Error::write(&what("read")))?;
    Ok(New::Exists(existing.map(Arc::new)))
}

/// An observed child edited and returned with its uid still on: a likely mistake,
/// silent but for this.
fn kept_child_changed(kind: &str, name: &str) -> KubeEvent {
    warning(
        "KeptChildChanged",
        format!(
            "{kind} {name} was returned with the uid of the observed one, so it is kept as it is and the plugin's \
             changes to it are not written; drop metadata.uid to have them applied"
        ),
    )
}

/// A Warning about a child, recorded on the parent.
fn warning(reason: &str, note: String) -> KubeEvent {
    KubeEvent {
        type_: KubeEventType::Warning,
        reason: reason.into(),
        note: Some(note),
        action: "Apply".into(),
        secondary: None,
    }
}

/// How soon a reconcile that could not confirm its parent runs again.
const PARENT_RECHECK: Duration = Duration::from_secs(1);

/// Applies, prunes, and writes status, metadata and events, skipping every write
/// that would change nothing. `false` when it stopped because the API server no longer
/// shows the parent.
async fn write(
    parent: &Arc<DynamicObject>,
    ctx: &Context,
    manifest: &crate::plugin::Manifest,
    uid: &str,
    observed: &[(crate::plugin::KindRef, Arc<DynamicObject>)],
    response: &Response,
) -> Result<bool, Error> {
    let parent_resource = &ctx.caches.parent.resource;
    let (metrics, plugin) = (&ctx.options.metrics, manifest.name.as_str());
    let mut desired_keys = HashSet::new();
    let mut events: Vec<KubeEvent> = response.events.iter().map(plugin_event).collect();
    // Whether the parent still exists on the API server, asked once before a first create.
    let mut parent_alive: Option<bool> = None;

    for child in &response.children {
        // `validate` guarantees a declared kind; find which.
        let Some(kind) = manifest.children.iter().find(|k| k.matches(child)) else { continue };
        let Some(cache) = ctx.caches.of(kind) else { continue };
        let name = child["metadata"]["name"].as_str().unwrap_or_default();
        let namespace = child["metadata"]["namespace"].as_str();
        if let Some(kept) = child["metadata"]["uid"].as_str() {
            // `Response::keep`: the observed child with this uid stays as it is. Writing the
            // plugin's snapshot of it would undo what others changed since; a child that
            // is gone meanwhile is not brought back.
            if let Some((_, o)) = observed.iter().find(|(_, o)| o.uid().as_deref() == Some(kept)) {
                desired_keys.insert((kind.clone(), namespace.map(str::to_string), name.to_string()));
                metrics.skipped(plugin, WriteKind::Apply);
                if !contains(&to_json(o), child) {
                    events.push(kept_child_changed(&kind.kind, name));
                }
            }
            continue;
        }
        desired_keys.insert((kind.clone(), namespace.map(str::to_string), name.to_string()));
        let prepared = prepare_child(child.clone(), parent, parent_resource);
        let existing = match ctx.caches.get(kind, namespace, name) {
            Some(cached) => Some(cached),
            None => match create_new(ctx, parent, uid, &mut parent_alive, &cache.resource, &prepared).await? {
                New::Created => {
                    metrics.wrote(plugin, WriteKind::Apply);
                    continue;
                }
                New::ParentGone => return Ok(false),
                New::Exists(existing) => existing,
            },
        };
        match existing {
            Some(existing) if controller_uid(&existing) != Some(uid) => {
                events.push(warning(
                    "ChildConflict",
                    format!(
                        "{} {name} exists and is not controlled by this {}; left alone",
                        kind.kind, manifest.parent.kind
                    ),
                ));
            }
            Some(existing) if contains(&serde_json::to_value(existing.as_ref()).unwrap_or_default(), &prepared) => {
                metrics.skipped(plugin, WriteKind::Apply);
                debug!(kind = %kind, name, "child up to date");
            }
            _ => {
                ctx.writer
                    .apply(&cache.resource, &prepared)
                    .await
                    .map_err(Error::write(&format!("apply {} {name}", kind.kind)))?;
                metrics.wrote(plugin, WriteKind::Apply);
                debug!(kind = %kind, name, "child applied");
            }
        }
    }

    for (kind, child) in observed {
        let key = (kind.clone(), child.namespace(), child.name_any());
        if desired_keys.contains(&key) {
            continue;
        }
        let Some(cache) = ctx.caches.of(kind) else { continue };
        ctx.writer.delete(&cache.resource, child).await.map_err(Error::write(&format!(
            "delete {} {}",
            kind.kind,
            child.name_any()
        )))?;
        metrics.wrote(plugin, WriteKind::Prune);
        debug!(kind = %kind, name = %child.name_any(), "child pruned");
    }

    if let Some(status) = &response.status {
        let current = parent.data.get("status").cloned().unwrap_or(Value::Null);
        let version = parent.resource_version().unwrap_or_default();
        let in_flight = ctx.status_written().get(uid).is_some_and(|(over, last)| *over == version && last == status);
        if same(&current, status) || in_flight {
            metrics.skipped(plugin, WriteKind::Status);
        } else {
            ctx.writer.apply_status(parent_resource, parent, status).await.map_err(Error::write("apply status"))?;
            metrics.wrote(plugin, WriteKind::Status);
            ctx.status_written().insert(uid.to_string(), (version, status.clone()));
        }
    }

    if apply::parent_metadata_current(parent, &ctx.writer.manager, &response.labels, &response.annotations) {
        metrics.skipped(plugin, WriteKind::Metadata);
    } else {
        ctx.writer
            .apply_parent_metadata(parent_resource, parent, &response.labels, &response.annotations)
            .await
            .map_err(Error::write("apply parent labels and annotations"))?;
        metrics.wrote(plugin, WriteKind::Metadata);
    }

    for event in &events {
        ctx.publish(parent, event).await;
    }
    Ok(true)
}

/// What one reconcile hands its plugin, but for the related objects its queries select.
struct Inputs {
    key: ObjectRef<DynamicObject>,
    parent: Value,
    candidates: Vec<Value>,
    finalizing: bool,
    now: String,
    config: Value,
}

/// Runs one reconcile's plugin calls (`related`, then `reconcile`, in one instance) off
/// the async runtime, as each may take up to its deadline; each call timed and its
/// failure counted. Selecting the related objects in between is neither call's time.
async fn call(ctx: &Arc<Context>, plugin: &Arc<Plugin>, inputs: Inputs) -> Result<Reconciled, Error> {
    let (ctx, plugin) = (Arc::clone(ctx), Arc::clone(plugin));
    tokio::task::spawn_blocking(move || {
        let Inputs { key, parent, candidates, finalizing, now, config } = inputs;
        let started = Instant::now();
        // When `related` answered, and when the request was ready.
        let mut between = None;
        let result = plugin.reconcile_with(parent, |parent, queries| {
            let related_done = Instant::now();
            // Known now, so that a change to a related object reconciles the parent
            // again even when this reconcile fails.
            ctx.related.set(key, queries.to_vec());
            let related = select_related(&ctx, queries);
            let shown = view::select(plugin.manifest(), &parent, queries, candidates, related);
            let request = Request::new(parent, shown.children, shown.related, finalizing, now, config);
            between = Some((related_done, Instant::now()));
            request
        });
        let ended = Instant::now();
        let (metrics, name) = (&ctx.options.metrics, &plugin.manifest().name);
        let failure = result.as_ref().err().map(failure);
        match between {
            Some((related_done, ready)) => {
                if !plugin.manifest().related.is_empty() {
                    metrics.called(name, Call::Related, related_done - started, None);
                }
                metrics.called(name, Call::Reconcile, ended - ready, failure);
            }
            None => metrics.called(name, Call::Related, ended - started, failure),
        }
        result.map_err(Error::Call)
    })
    .await
    .map_err(Error::Stopped)?
}

fn failure(error: &CallError) -> Failure {
    match error {
        CallError::Timeout { .. } => Failure::Timeout,
        CallError::OutOfMemory { .. } => Failure::OutOfMemory,
        CallError::Panic { .. } => Failure::Panic,
        CallError::Trap { .. } => Failure::Trap,
        CallError::Plugin { .. } => Failure::PluginError,
        CallError::Malformed { .. } => Failure::Malformed,
    }
}

fn select_related(ctx: &Context, queries: &[Query]) -> Vec<Value> {
    let mut seen = HashSet::new();
    queries.iter().flat_map(|q| ctx.caches.select(q)).filter(|o| seen.insert(o.uid())).map(|o| to_json(&o)).collect()
}

fn to_json(object: &DynamicObject) -> Value {
    serde_json::to_value(object).unwrap_or_default()
}

fn plugin_event(event: &crate::plugin::Event) -> KubeEvent {
    KubeEvent {
        type_: match event.type_ {
            EventType::Normal => KubeEventType::Normal,
            EventType::Warning => KubeEventType::Warning,
        },
        reason: event.reason.clone(),
        note: Some(truncate(&event.message, 1024)),
        action: "Reconcile".into(),
        secondary: None,
    }
}

fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &s[..end])
}

/// How long a reconcile waits for the caches' first lists before it fails.
const CACHE_SYNC: Duration = Duration::from_secs(30);

/// How long to wait before calling a finalizing plugin again when it has not said
/// `finalized` and asked for no requeue.
pub(crate) const FINALIZING_REQUEUE: Duration = Duration::from_secs(5);
