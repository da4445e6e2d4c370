//! One Kubernetes controller per plugin, on kube-runtime: watches and caches of the
//! parent, children and related kinds, a work queue that never runs two reconciles
//! of one parent at once, backoff, resync, and the reconcile itself.

mod apply;
mod backoff;
mod cache;
mod events;
mod kinds;
mod queue;
mod reconcile;
mod related;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock, Weak};
use std::time::Duration;

use futures::StreamExt;
use kube::Client;
use kube::Resource;
use kube::api::DynamicObject;
use kube::runtime::controller::{self, Controller as KubeController};
use kube::runtime::events::Event as KubeEvent;
use kube::runtime::reflector::ObjectRef;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tracing::{Instrument, debug, info_span, warn};

use crate::metrics::{Metrics, QueueDepth};
use crate::plugin::{CallError, KindRef, Plugin, Refusal};
use crate::shard::Shard;
use apply::Writer;
use backoff::Backoff;
use cache::Caches;
use queue::Pending;
use related::RelatedIndex;

pub use apply::APPLIED_HASH;

/// Why a controller could not start or a reconcile failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A kind the manifest names is not in the API server's discovery (a CRD not installed
    /// yet, an API the cluster does not serve). The host starts the controller once it is.
    #[error("{kind} is not served by the API server")]
    NotServed { kind: String },
    /// A kind the manifest names does not match what the API server serves: a plural or
    /// scope that differs.
    #[error("kind {kind} cannot be used: {message}")]
    UnknownKind { kind: String, message: String },
    /// Discovery of a kind the manifest names failed (the API server unreachable, say).
    #[error("kind {kind}: discovery failed: {source}")]
    Discovery { kind: String, source: kube::Error },
    /// The manifest cannot be run as a controller.
    #[error("plugin {plugin}: {message}")]
    Unsupported { plugin: String, message: String },
    /// The plugin call failed.
    #[error(transparent)]
    Call(CallError),
    /// The plugin's answer was refused; nothing was written.
    #[error(transparent)]
    Refused(#[from] Refusal),
    /// A write to the API server failed.
    #[error("{what}: {source}")]
    Write { what: String, source: kube::Error },
    /// The parent has no uid (never the case for objects from an API server).
    #[error("the parent has no metadata.uid")]
    MissingUid,
    /// The host is shutting down.
    #[error("stopped: {0}")]
    Stopped(#[source] tokio::task::JoinError),
    /// A watch has not completed its first list (the API server refuses it, or is
    /// unreachable); the reconcile is retried.
    #[error("caches not synced within {0:?}")]
    NotSynced(Duration),
}

impl Error {
    fn write(what: &str) -> impl FnOnce(kube::Error) -> Self + '_ {
        move |source| Self::Write { what: what.to_string(), source }
    }

    /// Whether trying again without a change can succeed: not for a plugin that refused,
    /// panicked or answered badly (its inputs, or a new version, must change first).
    fn is_retryable(&self) -> bool {
        match self {
            Self::Call(e) => e.is_retryable(),
            Self::Refused(_) | Self::Unsupported { .. } | Self::MissingUid => false,
            _ => true,
        }
    }

    /// The Event reason recorded on the parent.
    fn reason(&self) -> &'static str {
        match self {
            Self::Call(CallError::Plugin { .. }) => "ReconcileError",
            Self::Call(CallError::Timeout { .. }) => "PluginTimeout",
            Self::Call(CallError::OutOfMemory { .. }) => "PluginOutOfMemory",
            Self::Call(_) => "PluginFailed",
            Self::Refused(_) => "ResponseRefused",
            Self::Write { .. } => "WriteFailed",
            Self::UnknownKind { .. }
            | Self::Discovery { .. }
            | Self::NotServed { .. }
            | Self::Unsupported { .. }
            | Self::MissingUid
            | Self::Stopped(_)
            | Self::NotSynced(_) => "ReconcileFailed",
        }
    }
}

/// How a plugin's controller runs.
#[derive(Clone, Debug)]
pub struct Options {
    /// Reconciles of different parents running at once.
    pub concurrency: u16,
    /// Quiet period that folds bursts of events for one parent into one reconcile.
    pub debounce: Duration,
    /// Every parent is reconciled at least this often.
    pub resync: Duration,
    /// Delay before calling a finalizing plugin again that has not finalized.
    pub finalizing_requeue: Duration,
    /// The plugin's settings, handed to it as `config`.
    pub config: Value,
    /// Watch and reconcile in this namespace only (cluster-scoped kinds are
    /// watched cluster-wide regardless).
    pub namespace: Option<String>,
    /// Where reconciles, calls and writes are counted; share one across plugins.
    pub metrics: Metrics,
    /// The parents this replica reconciles (all of them unless replicas share the work).
    pub shard: Shard,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            concurrency: 8,
            debounce: Duration::from_millis(50),
            resync: Duration::from_mins(10),
            finalizing_requeue: reconcile::FINALIZING_REQUEUE,
            config: Value::Null,
            namespace: None,
            metrics: Metrics::default(),
            shard: Shard::whole(),
        }
    }
}

/// The plugin version and settings a reconcile runs with; swapped as a whole, so a
/// reconcile in flight finishes with the version it started with.
#[derive(Clone)]
pub(crate) struct Current {
    plugin: Arc<Plugin>,
    config: Value,
}

/// What every reconcile of one plugin shares.
pub(crate) struct Context {
    current: RwLock<Current>,
    caches: Caches,
    related: Arc<RelatedIndex>,
    backoff: Backoff<ObjectRef<DynamicObject>>,
    pending: Arc<Pending>,
    writer: Writer,
    events: events::Events,
    options: Options,
    reconciles: Arc<AtomicU64>,
    /// Per parent uid: the status last written and the resourceVersion it was
    /// written over. While the cache still shows that version, the write is on its
    /// way and writing it again would be a wasted request.
    status_written: Mutex<HashMap<String, (String, Value)>>,
}

impl Context {
    fn status_written(&self) -> std::sync::MutexGuard<'_, HashMap<String, (String, Value)>> {
        self.status_written.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn current(&self) -> Current {
        self.current.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Records an Event on `parent`; failing to record one never fails a reconcile.
    async fn publish(&self, parent: &DynamicObject, event: &KubeEvent) {
        let reference = parent.object_ref(&self.caches.parent.resource);
        if let Err(e) = self.events.publish(event, &reference).await {
            warn!(error = %e, reason = %event.reason, "could not record event");
        }
    }
}

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

impl Controller {
    /// Resolves the plugin's kinds through discovery, starts their watches and the
    /// work queue, and returns once the controller runs.
    ///
    /// # Errors
    ///
    /// [`Error::NotServed`] when a kind the manifest names is not served (yet),
    /// [`Error::UnknownKind`] when it is served differently from what the plugin declares.
    pub async fn start(client: Client, plugin: Arc<Plugin>, options: Options) -> Result<Self, Error> {
        let manifest = plugin.manifest().clone();
        let name = manifest.name.clone();
        let manager = manifest.field_manager();

        let mut others: Vec<KindRef> = Vec::new();
        for kind in manifest.children.iter().chain(&manifest.related) {
            if *kind == manifest.parent {
                return Err(Error::Unsupported {
                    plugin: name,
                    message: format!("{kind} is its parent kind; it cannot also be a child or related kind"),
                });
            }
            if !others.contains(kind) {
                others.push(kind.clone());
            }
        }

        let parent_resource = kinds::resolve(&client, &manifest.parent).await?;
        let namespace = options.namespace.as_deref();
        let (parent_cache, parent_stream) =
            cache::watch(&client, manifest.parent.clone(), parent_resource.clone(), namespace, Some(manager.clone()));
        let mut caches = Vec::new();
        let mut streams = Vec::new();
        for kind in others {
            let resource = kinds::resolve(&client, &kind).await?;
            let (cache, stream) = cache::watch(&client, kind, resource, namespace, None);
            caches.push(cache);
            streams.push(stream);
        }

        // Every trigger on its way into kube-runtime's queue is counted (queue.rs).
        let pending = Arc::new(Pending::new(parent_cache.store.clone(), parent_resource.clone()));
        options.metrics.queue(&name, Arc::downgrade(&pending) as Weak<dyn QueueDepth>);
        let related = Arc::new(RelatedIndex::default());
        let mut kube_controller = KubeController::for_stream_with(
            pending.count_parents(parent_stream),
            parent_cache.store.clone(),
            parent_resource.clone(),
        );
        for (cache, stream) in caches.iter().zip(streams) {
            let mapper = related::mapper(&manifest, &cache.kind, parent_resource.clone(), related.clone());
            kube_controller =
                kube_controller.watches_stream_with(stream, pending.count_mapped(mapper), cache.resource.clone());
        }

        let reconciles = Arc::new(AtomicU64::new(0));
        let ctx = Arc::new(Context {
            current: RwLock::new(Current { plugin, config: options.config.clone() }),
            caches: Caches { parent: parent_cache, others: caches },
            related,
            backoff: Backoff::new(),
            pending: pending.clone(),
            events: events::Events::new(client.clone(), manager.clone()),
            writer: Writer { client, manager },
            options: options.clone(),
            reconciles: reconciles.clone(),
            status_written: Mutex::default(),
        });

        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let (resync_tx, resync_rx) = mpsc::unbounded_channel::<()>();
        let resync = futures::stream::unfold(resync_rx, |mut rx| async { rx.recv().await.map(|()| ((), rx)) });
        // Parents this replica gains from another are reconciled at once.
        let gained = futures::stream::unfold(options.shard.grown(), |mut rx| async {
            rx.changed().await.ok().map(|()| ((), rx))
        });
        let resync = futures::stream::select(resync, gained);
        let config = controller::Config::default().debounce(options.debounce).concurrency(options.concurrency);
        let span = info_span!("controller", plugin = %name);
        let run = kube_controller
            .with_config(config)
            .reconcile_all_on(pending.count_resyncs(resync))
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
            })
            .instrument(span);
        let task = tokio::spawn(run);
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
        *self.ctx.current.write().unwrap_or_else(PoisonError::into_inner) = Current { plugin, config };
        self.resync();
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

fn object_name(object: &DynamicObject) -> String {
    match &object.metadata.namespace {
        Some(ns) => format!("{ns}/{}", object.metadata.name.as_deref().unwrap_or_default()),
        None => object.metadata.name.clone().unwrap_or_default(),
    }
}
