//! What every reconcile of one plugin shares: the plugin version it runs, the caches,
//! the related queries, the queue, the writer and the options.

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, PoisonError, RwLock};

use kube::ResourceExt;
use kube::api::DynamicObject;
use serde_json::Value;
use tokio::sync::mpsc;

use super::cache::Caches;
use super::options::Options;
use super::queue::Queue;
use super::related::RelatedIndex;
use super::rollout::Rollout;
use super::write::Writer;
use crate::coordination::shard::Bucket;
use crate::metrics::ControllerGauges;
use crate::plugin::Plugin;

/// The plugin version and settings a reconcile runs with; swapped as a whole, so a
/// reconcile in flight finishes with the version it started with.
#[derive(Clone)]
pub(crate) struct Current {
    pub(crate) plugin: Arc<Plugin>,
    pub(crate) config: Value,
    /// A candidate version beside `plugin`, if one is rolled out.
    pub(crate) rollout: Option<Arc<Rollout>>,
}

/// What every reconcile of one plugin shares.
pub(crate) struct Context {
    pub(crate) current: RwLock<Current>,
    pub(crate) caches: Caches,
    pub(crate) related: Arc<RelatedIndex>,
    pub(crate) queue: Arc<Queue>,
    pub(crate) writer: Writer,
    pub(crate) options: Options,
    /// Reconciles finished so far, successful or not.
    pub(crate) reconciles: Arc<AtomicU64>,
    /// Asks for every parent to be reconciled.
    pub(crate) resync: mpsc::UnboundedSender<()>,
}

impl Context {
    /// The plugin version and settings a reconcile starting now runs with.
    pub(crate) fn current(&self) -> Current {
        self.current.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Reconciles every parent again (once the reconciles asked before have run).
    pub(crate) fn resync_all(&self) {
        let _ = self.resync.send(());
    }

    /// The shard bucket of `parent`, which decides the replica that reconciles it.
    pub(crate) fn bucket(&self, parent: &DynamicObject) -> Bucket {
        let resource = &self.caches.parent.resource;
        Bucket::of(parent.labels(), &resource.group, &resource.kind, parent.namespace().as_deref(), &parent.name_any())
    }

    /// Hands reconciles that start from now on a new version or new settings.
    pub(crate) fn swap(&self, current: Current) {
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = current;
    }
}

impl ControllerGauges for Context {
    fn depth(&self) -> usize {
        self.queue.depth()
    }

    fn cached(&self) -> Vec<(String, usize)> {
        self.caches.sizes()
    }
}
