//! The plugin's calls of one reconcile, in a straight line in one fresh instance:
//! `related` for the parent, the request built from the caches and the queries'
//! answers, then `reconcile`. Off the async runtime (each call may take up to its
//! deadline), each call timed and its failure counted.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

use kube::ResourceExt;
use kube::api::DynamicObject;
use kube::runtime::reflector::ObjectRef;
use serde_json::Value;

use super::context::Context;
use super::error::Error;
use crate::metrics::{Call, Failure};
use crate::plugin::{Plugin, Query, Request, Response, view};

/// What one reconcile hands its plugin, but for the related objects its queries select.
#[derive(Clone)]
pub(crate) struct Inputs {
    pub(crate) key: ObjectRef<DynamicObject>,
    /// The parent as the plugin sees it.
    pub(crate) parent: Value,
    /// Cached objects that may be its children; [`view::select`] decides which are.
    pub(crate) candidates: Vec<Value>,
    pub(crate) finalizing: bool,
    pub(crate) now: String,
    pub(crate) config: Value,
}

/// Runs the calls of one reconcile off the async runtime, for the version that acts or a
/// candidate in shadow (`role`); returns the request the plugin was given and its answer.
pub(crate) async fn call(
    ctx: &Arc<Context>,
    plugin: &Arc<Plugin>,
    inputs: Inputs,
    role: Role,
) -> Result<(Request, Response), Error> {
    let (ctx, plugin) = (Arc::clone(ctx), Arc::clone(plugin));
    tokio::task::spawn_blocking(move || in_one_instance(&ctx, &plugin, inputs, role)).await.map_err(Error::Stopped)?
}

/// Whether the calls' answer is acted on. A shadow's queries are not remembered: the
/// active's decide which changes reconcile the parent.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    Reconciles,
    Shadows,
}

/// `related`, the request, `reconcile`: one fresh instance for both calls. Selecting the
/// related objects in between is neither call's time.
fn in_one_instance(ctx: &Context, plugin: &Plugin, inputs: Inputs, role: Role) -> Result<(Request, Response), Error> {
    let Inputs { key, parent, candidates, finalizing, now, config } = inputs;
    let (metrics, manifest) = (&ctx.options.metrics, plugin.manifest());
    let resolved = ctx.options.secrets.resolve(&config)?;
    let started = Instant::now();
    let mut instance = plugin.instance();
    instance.hide(resolved.hidden);
    instance.set_time(&now);
    let queries = instance.related(&parent);
    // A plugin without related kinds is not asked: no call to count, unless it failed.
    if !manifest.related.is_empty() || queries.is_err() {
        metrics.called(&manifest.name, Call::Related, started.elapsed(), queries.as_ref().err().map(Failure::from));
    }
    let queries = queries.map_err(Error::Call)?;
    // Known now, so that a change to a related object reconciles the parent again even
    // when this reconcile fails.
    if role == Role::Reconciles {
        ctx.related.set(key, queries.clone());
    }
    let related = select_related(ctx, &queries);
    let shown = view::select(manifest, &parent, &queries, candidates, related);
    let request = Request::new(parent, shown.children, shown.related, finalizing, now, resolved.config);
    let ready = Instant::now();
    let response = instance.reconcile(&request);
    metrics.called(&manifest.name, Call::Reconcile, ready.elapsed(), response.as_ref().err().map(Failure::from));
    Ok((request, response.map_err(Error::Call)?))
}

/// The cached objects the queries select, each once.
fn select_related(ctx: &Context, queries: &[Query]) -> Vec<Value> {
    let mut seen = HashSet::new();
    queries
        .iter()
        .flat_map(|q| ctx.caches.select(q))
        .filter(|o| seen.insert(o.uid()))
        .map(|o| serde_json::to_value(o.as_ref()).unwrap_or_default())
        .collect()
}
