//! One reconcile of one parent, in a straight line: the finalizer's phase, the plugin's
//! calls, the validated answer, the plan, the writes, the requeue. Data flows one way:
//! nothing here reaches back into the caches except to read.

use std::sync::Arc;
use std::time::{Duration, Instant};

use kube::ResourceExt;
use kube::api::DynamicObject;
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use tracing::{debug, warn};

use super::call::{self, Inputs, Role};
use super::context::{Context, Current};
use super::error::Error;
use super::finalizer::Phase;
use super::plan::{self, Observed, Requeue};
use super::rollout::{Rollout, Version};
use super::write::Written;
use crate::coordination::shard::Bucket;
use crate::events::Event;
use crate::metrics::{Outcome, Shadowed};
use crate::plugin::{Response, validate, view};

/// Reconciles `parent`; failures are recorded as a Warning Event on it.
pub(crate) async fn reconcile(parent: Arc<DynamicObject>, ctx: Arc<Context>) -> Result<Action, Error> {
    let key = ctx.queue.key(&parent);
    let asked = ctx.queue.started(&key);
    if !asked && ctx.writer.is_own_echo(&parent) {
        // The parent is what this host's own status write left, and nothing else asked: the
        // plugin would be called on what it already answered (and repeat its events).
        debug!("changed by this host's own status write only; not reconciled again");
        return Ok(ctx.queue.skipped(&key));
    }
    // Another replica's parent: it reconciles it. Held to the end, so this replica
    // never gives the parent away with a reconcile of it in flight.
    let bucket = ctx.bucket(&parent);
    let Some(_admitted) = ctx.options.shard.admit(bucket).await else {
        return Ok(Action::await_change());
    };
    // The share just changed and a cache has not listed its new selection yet: a parent
    // gained would be shown without its children.
    if !ctx.caches.selected(ctx.options.shard.epoch()) {
        return Ok(Action::requeue(SELECTION_RECHECK));
    }
    let current = ctx.current();
    let plugin = current.plugin.manifest().name.clone();
    let version = current
        .rollout
        .as_ref()
        .map_or(Version::Active, |r| r.version_for(&plugin, parent.metadata.uid.as_deref().unwrap_or_default()));
    let metrics = &ctx.options.metrics;
    let in_flight = metrics.in_flight(&plugin);
    in_flight.inc();
    let started = Instant::now();
    let result = run(&parent, &key, &ctx, current.clone(), version, bucket).await;
    in_flight.dec();
    let outcome = if result.is_ok() { Outcome::Success } else { Outcome::Error };
    metrics.reconciled(&plugin, outcome, started.elapsed());
    if let Some(rollout) = &current.rollout {
        metrics.rolled_out(&plugin, version.as_str(), outcome);
        if version == Version::Candidate && rollout.outcome(result.as_ref().err().map(ToString::to_string).as_deref()) {
            rolled_back(&ctx, &plugin, rollout);
        }
    }
    debug!(
        ok = result.is_ok(),
        elapsed_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX),
        "reconciled"
    );
    if let Err(e) = &result {
        warn!(error = %e, "reconcile failed");
        ctx.writer.publish(&parent, &Event::warning(e.reason(), &e.to_string(), "Reconcile")).await;
    }
    ctx.reconciles.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    result.map(|requeue| ctx.queue.succeeded(key, requeue))
}

/// Retry with per-parent exponential backoff.
#[allow(clippy::needless_pass_by_value)] // the signature kube-runtime calls
pub(crate) fn error_policy(parent: Arc<DynamicObject>, error: &Error, ctx: Arc<Context>) -> Action {
    ctx.queue.failed(ctx.queue.key(&parent), error.is_retryable())
}

/// Reconciles `parent` (of `bucket`) with `version` of `current`; the answer is when to
/// reconcile it again if nothing changes before (`None`: only on a change).
async fn run(
    parent: &Arc<DynamicObject>,
    key: &ObjectRef<DynamicObject>,
    ctx: &Arc<Context>,
    current: Current,
    version: Version,
    bucket: Bucket,
) -> Result<Option<Duration>, Error> {
    if !ctx.caches.ready(CACHE_SYNC).await {
        return Err(Error::NotSynced(CACHE_SYNC));
    }
    let plugin = match (&current.rollout, version) {
        (Some(rollout), Version::Candidate) => rollout.candidate(),
        _ => &current.plugin,
    };
    let manifest = plugin.manifest();
    let uid = parent.uid().ok_or(Error::MissingUid)?;
    let phase = Phase::of(manifest, parent);
    if phase == Phase::Released {
        return Ok(None);
    }

    let children = ctx.caches.controlled_by(&manifest.children, &uid);
    // The caches narrowed the candidates; what the plugin is shown is decided where
    // `kubewasm render` decides it.
    let inputs = Inputs {
        key: key.clone(),
        parent: view::shown(serde_json::to_value(parent.as_ref()).unwrap_or_default()),
        candidates: children.iter().map(|(_, o)| serde_json::to_value(o.as_ref()).unwrap_or_default()).collect(),
        finalizing: phase == Phase::Cleanup,
        now: jiff::Timestamp::now().to_string(),
        config: current.config.clone(),
    };
    // The candidate in shadow answers the same request after the active is done.
    let shadow = current.rollout.as_ref().filter(|r| r.shadows()).map(|r| (r, inputs.clone()));
    let (request, response) = call::call(ctx, plugin, inputs, Role::Reconciles).await?;
    let response =
        validate(manifest, &request, response).inspect_err(|_| ctx.options.metrics.refused(&manifest.name))?;

    let cached = |kind: &_, namespace: Option<&str>, name: &str| ctx.caches.get(kind, namespace, name);
    let observed = Observed {
        parent,
        parent_resource: &ctx.caches.parent.resource,
        manager: ctx.writer.manager(),
        children: &children,
        cached: &cached,
        status_written: ctx.writer.status_written(&uid),
        // The children carry their parent's bucket where the replicas' watches select by it.
        bucket: ctx.options.shard.partitioned().then_some(bucket),
    };
    let requeue = Requeue { resync: ctx.options.resync, finalizing: ctx.options.finalizing_requeue };
    let plan = plan::plan(manifest, phase, &response, &observed, requeue);
    let written = ctx.writer.execute(&plan, parent).await?;
    if let Some((rollout, inputs)) = shadow {
        compare(ctx, rollout, inputs, &response).await;
    }
    match written {
        Written::Done => Ok(plan.requeue),
        // The API server did not show the parent: it is gone (its deletion is on its way to
        // the cache) or the read lagged. Look again shortly.
        Written::ParentGone => Ok(Some(PARENT_RECHECK)),
    }
}

/// Calls the candidate in shadow with the active's inputs and compares its answer with
/// the active's `response`; it writes nothing.
async fn compare(ctx: &Arc<Context>, rollout: &Arc<Rollout>, inputs: Inputs, response: &Response) {
    let candidate = rollout.candidate();
    let name = &candidate.manifest().name;
    let parent =
        inputs.key.namespace.as_ref().map_or_else(|| inputs.key.name.clone(), |ns| format!("{ns}/{}", inputs.key.name));
    let answer = call::call(ctx, candidate, inputs, Role::Shadows)
        .await
        .and_then(|(request, answer)| validate(candidate.manifest(), &request, answer).map_err(Error::from));
    let metrics = &ctx.options.metrics;
    let error = match answer {
        Ok(answer) => {
            let differs = rollout.compare(&parent, response, &answer);
            metrics.shadowed(name, if differs { Shadowed::Different } else { Shadowed::Same });
            if differs {
                debug!("the candidate in shadow answered otherwise");
            }
            None
        }
        Err(e) => {
            metrics.shadowed(name, Shadowed::Error);
            debug!(error = %e, "the candidate in shadow failed");
            Some(e.to_string())
        }
    };
    if rollout.outcome(error.as_deref()) {
        rolled_back(ctx, name, rollout);
    }
}

/// Says that `rollout`'s candidate was rolled back, and hands its parents back to the active.
fn rolled_back(ctx: &Context, plugin: &str, rollout: &Rollout) {
    let why = rollout.report().rolled_back.unwrap_or_default();
    warn!(plugin = %plugin, "candidate rolled back: {why}");
    ctx.resync_all();
}

/// How long a reconcile waits for the caches' first lists before it fails.
const CACHE_SYNC: Duration = Duration::from_secs(30);

/// How soon a reconcile held back by a cache still listing a new selection runs again.
const SELECTION_RECHECK: Duration = Duration::from_millis(100);

/// How soon a reconcile that could not confirm its parent runs again.
const PARENT_RECHECK: Duration = Duration::from_secs(1);
