//! One Kubernetes controller per plugin, on kube-runtime: watches and caches of the
//! parent, children and related kinds, a work queue that never runs two reconciles
//! of one parent at once, backoff, resync, and the reconcile itself.
//!
//! A reconcile (`reconcile`) flows one way through these modules: `cache` (what is
//! observed) → `call` (the plugin's `related` and `reconcile` in one fresh instance) →
//! the contract's `validate` → `plan` (pure: desired against observed, with the
//! `finalizer` step) → `write` (the plan carried out) → `queue` (when it runs again).

mod backoff;
mod cache;
mod call;
mod context;
mod controlled;
mod error;
mod finalizer;
mod labeler;
mod options;
mod plan;
mod queue;
mod reconcile;
mod related;
mod rollout;
mod schema;
mod shared;
mod warnings;
mod write;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock, Weak};
use std::time::Duration;

use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use kube::Client;
use kube::api::DynamicObject;
use kube::runtime::controller::{self, Controller as KubeController};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tracing::{Instrument, debug, info, info_span, warn};

use crate::discovery;
use crate::metrics::{ControllerGauges, Metrics};
use crate::plugin::{KindRef, Plugin};
use cache::Caches;
use context::{Context, Current};
use queue::Queue;
use related::RelatedIndex;
use write::Writer;

pub use error::Error;
pub use options::Options;
pub use rollout::{Difference, Report, Rollback, Rollout, Strategy, in_canary};
pub use shared::SharedCaches;
pub use warnings::Warnings;

/// How long [`Controller::stop`] lets reconciles in flight finish.
pub const STOP_GRACE: Duration = Duration::from_secs(15);

/// A running controller for one plugin.
pub struct Controller {
    name: String,
    ctx: Arc<Context>,
    stop: oneshot::Sender<()>,
    resync: mpsc::UnboundedSender<()>,
    reconciles: Arc<AtomicU64>,
    task: JoinHandle<()>,
}

/// What reconciles every parent: a resync asked for; parents this replica gains from
/// another; a new schema of the parent kind, which may keep a status field the API server
/// dropped (what the writer knew of the statuses it wrote is forgotten first).
fn resyncs(
    asked: mpsc::UnboundedReceiver<()>,
    options: &Options,
    schema_changes: impl Stream<Item = ()> + Send + 'static,
    ctx: &Arc<Context>,
) -> BoxStream<'static, ()> {
    let asked = futures::stream::unfold(asked, |mut rx| async { rx.recv().await.map(|()| ((), rx)) });
    // Parents this replica gains from another are reconciled at once.
    let gained =
        futures::stream::unfold(options.shard.grown(), |mut rx| async { rx.changed().await.ok().map(|()| ((), rx)) });
    // A Secret the settings name changed: every parent sees the new value.
    let secrets = futures::stream::unfold(options.secrets.changes(), |rx| async move {
        let mut rx = rx?;
        rx.changed().await.ok().map(|()| ((), Some(rx)))
    });
    let ctx = ctx.clone();
    let schema_changes = schema_changes.inspect(move |()| {
        info!("the parent kind's CRD changed: every parent is reconciled again");
        ctx.writer.forget_statuses();
    });
    futures::stream::select(futures::stream::select(asked, gained), futures::stream::select(secrets, schema_changes))
        .boxed()
}

impl Controller {
    /// Resolves the plugin's kinds through discovery, starts their watches and the
    /// work queue, and returns once the controller runs.
    ///
    /// # Errors
    ///
    /// [`Error::NotServed`] when a kind the manifest names is not served (yet),
    /// [`Error::UnknownKind`] when it is served differently from what the plugin declares.
    pub async fn start(client: Client, plugin: Arc<Plugin>, options: Options) -> Result<Self, Error> {
        Self::start_sharing(client, plugin, options, &SharedCaches::new()).await
    }

    /// Like [`Controller::start`], the watches and caches of its kinds shared, through
    /// `shared`, with the other controllers that watch the same kinds.
    ///
    /// # Errors
    ///
    /// As [`Controller::start`].
    pub async fn start_sharing(
        client: Client,
        plugin: Arc<Plugin>,
        options: Options,
        shared: &SharedCaches,
    ) -> Result<Self, Error> {
        let manifest = plugin.manifest().clone();
        let name = manifest.name.clone();
        let manager = manifest.field_manager();
        let Some(parent) = manifest.parent.clone() else {
            return Err(Error::Unsupported { plugin: name, message: "it declares no parent kind to reconcile".into() });
        };

        let others = other_kinds(&manifest, &parent)?;
        let parent_resource = discovery::resolve(&client, &parent).await?;
        let schema_changes = schema::changes(&client, &parent);
        let namespace = options.namespace.as_deref();
        // A sharded replica watches its share of the parents and of their children (the
        // host labels those with their parent's bucket); related objects are anyone's,
        // so a kind also read as related is watched whole.
        let selecting = Some(&options.shard);
        let (parent_cache, parent_stream) =
            cache::watch(shared, &client, parent, parent_resource.clone(), namespace, Some(manager.clone()), selecting);
        let mut caches = Vec::new();
        let mut streams = Vec::new();
        for kind in others {
            let resource = discovery::resolve(&client, &kind).await?;
            let selecting =
                selecting.filter(|_| manifest.children.contains(&kind) && !manifest.related.contains(&kind));
            let (cache, stream) = cache::watch(shared, &client, kind, resource, namespace, None, selecting);
            caches.push(cache);
            streams.push(stream);
        }

        // Every trigger on its way into kube-runtime's queue is counted (queue.rs).
        let queue = Arc::new(Queue::new(parent_cache.store.clone(), parent_resource.clone()));
        let related = Arc::new(RelatedIndex::default());
        let mut kube_controller = KubeController::for_shared_stream_with(
            queue.count_parents(parent_stream),
            parent_cache.store.clone(),
            parent_resource.clone(),
        );
        for (cache, stream) in caches.iter().zip(streams) {
            let mapper = related::mapper(&manifest, &cache.kind, parent_resource.clone(), related.clone());
            kube_controller =
                kube_controller.watches_shared_stream_with(stream, queue.count_mapped(mapper), cache.resource.clone());
        }

        let reconciles = Arc::new(AtomicU64::new(0));
        let (resync_tx, resync_rx) = mpsc::unbounded_channel::<()>();
        let kinds = caches.iter().map(|c| (c.kind.clone(), c.resource.clone())).collect();
        // Parents are created without their bucket label: a sharded replica labels those of its share.
        let labeler = options.shard.partitioned().then(|| {
            let namespace = namespace.filter(|_| manifest.parent.as_ref().is_some_and(|p| p.namespaced));
            labeler::run(client.clone(), parent_resource.clone(), namespace.map(str::to_string), options.shard.clone())
        });
        let writer = Writer::new(
            client,
            manager,
            name.clone(),
            parent_resource,
            kinds,
            options.metrics.clone(),
            options.warnings.clone(),
        );
        let ctx = Arc::new(Context {
            current: RwLock::new(Current { plugin, config: options.config.clone(), rollout: None }),
            caches: Caches { parent: parent_cache, others: caches },
            related,
            queue: queue.clone(),
            writer,
            options: options.clone(),
            reconciles: reconciles.clone(),
            resync: resync_tx.clone(),
        });

        options.metrics.controller(&name, Arc::downgrade(&ctx) as Weak<dyn ControllerGauges>);
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let resync = resyncs(resync_rx, &options, schema_changes, &ctx);
        let config = controller::Config::default().debounce(options.debounce).concurrency(options.concurrency);
        let span = info_span!("controller", plugin = %name);
        let run = kube_controller
            .with_config(config)
            .reconcile_all_on(queue.count_resyncs(resync))
            .graceful_shutdown_on(async {
                let _ = stop_rx.await;
            })
            .run(
                |parent, ctx| {
                    let span = info_span!("reconcile", object = %object_name(&parent));
                    reconcile::reconcile(parent, ctx).instrument(span)
                },
                reconcile::error_policy,
                ctx.clone(),
            )
            .for_each(|result| async move {
                if let Err(e) = result {
                    debug!(error = %e, "controller event");
                }
            });
        let task = tokio::spawn(alongside(run, labeler).instrument(span));
        Ok(Self { name, ctx, stop: stop_tx, resync: resync_tx, reconciles, task })
    }

    /// The plugin this controller runs.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Switches to a new version of the plugin, or new settings, and reconciles
    /// every parent with it. Reconciles in flight finish with the old one. The new
    /// version must declare the same contract (see [`Manifest::same_contract`]);
    /// otherwise stop this controller and start another.
    ///
    /// [`Manifest::same_contract`]: crate::plugin::Manifest::same_contract
    pub fn update(&self, plugin: Arc<Plugin>, config: Value) {
        let rollout = self.ctx.current().rollout;
        self.ctx.swap(Current { plugin, config, rollout });
        self.resync();
    }

    /// Rolls `rollout`'s candidate out beside the version that runs (`None`: the active
    /// alone) and reconciles every parent: a canary's parents move to the candidate. The
    /// candidate must declare the same contract as the active.
    pub fn roll_out(&self, rollout: Option<Arc<Rollout>>) {
        let current = self.ctx.current();
        self.ctx.swap(Current { rollout, ..current });
        self.resync();
    }

    /// The candidate rolled out beside the version that runs, if any.
    pub fn rollout(&self) -> Option<Arc<Rollout>> {
        self.ctx.current().rollout
    }

    /// Waits until the watches of every kind the plugin touches have listed once, for
    /// at most `limit`; false if they have not.
    pub async fn wait_synced(&self, limit: Duration) -> bool {
        self.ctx.caches.ready(limit).await
    }

    /// Where this controller's reconciles, calls and writes are counted.
    pub fn metrics(&self) -> &Metrics {
        &self.ctx.options.metrics
    }

    /// The plugin version reconciles start with now.
    pub fn plugin(&self) -> Arc<Plugin> {
        self.ctx.current().plugin
    }

    /// Reconciles finished so far, successful or not.
    pub fn reconciles(&self) -> u64 {
        self.reconciles.load(Ordering::Relaxed)
    }

    /// Reconciles every parent now (after a new plugin version, or to prove that a
    /// converged cluster needs no writes).
    pub fn resync(&self) {
        let _ = self.resync.send(());
    }

    /// Stops watching and queueing; reconciles in flight get [`STOP_GRACE`] to
    /// finish, then are cut off. Children are left in place.
    pub async fn stop(self) {
        let _ = self.stop.send(());
        let abort = self.task.abort_handle();
        if tokio::time::timeout(STOP_GRACE, self.task).await.is_err() {
            warn!(plugin = %self.name, "reconciles still running after {STOP_GRACE:?}; stopping them");
            abort.abort();
        }
    }
}

/// Runs `run` with `labeler` beside it for as long as `run` runs; the labeler ending
/// never ends `run`.
async fn alongside(run: impl Future<Output = ()>, labeler: Option<impl Future<Output = ()>>) {
    let labeler = async move {
        if let Some(labeler) = labeler {
            labeler.await;
        }
        std::future::pending::<()>().await;
    };
    tokio::select! {
        () = run => {}
        () = labeler => {}
    }
}

/// The children's and related kinds of `manifest`, each once; none may be its `parent` kind.
fn other_kinds(manifest: &crate::plugin::Manifest, parent: &KindRef) -> Result<Vec<KindRef>, Error> {
    let mut others: Vec<KindRef> = Vec::new();
    for kind in manifest.children.iter().chain(&manifest.related) {
        if kind == parent {
            return Err(Error::Unsupported {
                plugin: manifest.name.clone(),
                message: format!("{kind} is its parent kind; it cannot also be a child or related kind"),
            });
        }
        if !others.contains(kind) {
            others.push(kind.clone());
        }
    }
    Ok(others)
}

fn object_name(object: &DynamicObject) -> String {
    match &object.metadata.namespace {
        Some(ns) => format!("{ns}/{}", object.metadata.name.as_deref().unwrap_or_default()),
        None => object.metadata.name.clone().unwrap_or_default(),
    }
}
