//! The caches of one plugin: its parent, its children and its related kinds, each a
//! subscription to the host's shared watch of that kind. A kind both owned and read is
//! subscribed to once.

use std::sync::Arc;

use kube::Client;
use kube::api::DynamicObject;
use kube::discovery::ApiResource;
use kube::runtime::reflector::{self, Store};

use super::controlled::{ControllerIndex, controller_uid};
use super::shared::{SharedCaches, Subscription, Watched};
use crate::coordination::shard::Shard;
use crate::plugin::{KindRef, Query};

/// The cache of one kind.
pub(crate) struct KindCache {
    pub(crate) kind: KindRef,
    pub(crate) resource: ApiResource,
    pub(crate) store: Store<DynamicObject>,
    /// The cached objects by the uid of their controller.
    controlled: Arc<ControllerIndex>,
    /// Keeps the shared watch open while this plugin uses it.
    watched: Arc<Watched>,
}

/// Subscribes to the cache of `kind` (in `namespace` only, if given and the kind is
/// namespaced) in `shared`: returns the cache and the objects its events touch.
/// `keep_manager` and `selecting`: see [`SharedCaches::subscribe`].
pub(crate) fn watch(
    shared: &SharedCaches,
    client: &Client,
    kind: KindRef,
    resource: ApiResource,
    namespace: Option<&str>,
    keep_manager: Option<String>,
    selecting: Option<&Shard>,
) -> (KindCache, Subscription) {
    let (watched, subscription) = shared.subscribe(client, &kind, &resource, namespace, keep_manager, selecting);
    let cache =
        KindCache { kind, resource, store: watched.store.clone(), controlled: watched.controlled.clone(), watched };
    (cache, subscription)
}

const READY_POLL: std::time::Duration = std::time::Duration::from_millis(50);

/// The caches of one plugin.
pub(crate) struct Caches {
    pub(crate) parent: KindCache,
    /// Children and related kinds, each once.
    pub(crate) others: Vec<KindCache>,
}

impl Caches {
    /// Waits until every cache has completed its first list, for at most `limit`;
    /// false when one has not.
    pub(crate) async fn ready(&self, limit: std::time::Duration) -> bool {
        let all = async {
            for cache in self.all() {
                // kube-runtime's `wait_until_ready` wakes only the last of concurrent waiters
                // (its oneshot receiver keeps one waker), and the controller waits on the
                // parent's store too: ask again every 50 ms rather than wait to be woken.
                while tokio::time::timeout(READY_POLL, cache.store.wait_until_ready()).await.is_err() {}
            }
        };
        tokio::time::timeout(limit, all).await.is_ok()
    }

    /// Whether every cache holds what the share of `epoch` selects (see [`Shard::selection`]).
    pub(crate) fn selected(&self, epoch: u64) -> bool {
        self.all().all(|cache| cache.watched.selected(epoch))
    }

    /// How many objects each cache holds, by resource (`deployments.apps`).
    pub(crate) fn sizes(&self) -> Vec<(String, usize)> {
        self.all()
            .map(|cache| {
                let r = &cache.resource;
                let resource = if r.group.is_empty() { r.plural.clone() } else { format!("{}.{}", r.plural, r.group) };
                (resource, cache.store.len())
            })
            .collect()
    }

    /// The parent's cache, then the others.
    fn all(&self) -> impl Iterator<Item = &KindCache> {
        std::iter::once(&self.parent).chain(&self.others)
    }

    pub(crate) fn of(&self, kind: &KindRef) -> Option<&KindCache> {
        self.others.iter().find(|c| &c.kind == kind)
    }

    /// Cached objects of the `kinds` whose controller is `owner_uid`.
    pub(crate) fn controlled_by(&self, kinds: &[KindRef], owner_uid: &str) -> Vec<(KindRef, Arc<DynamicObject>)> {
        let mut found = Vec::new();
        for kind in kinds {
            let Some(cache) = self.of(kind) else { continue };
            for (namespace, name) in cache.controlled.keys(owner_uid) {
                // The store may hold a newer version than the index saw (the index
                // follows it): trust the object, not the key.
                if let Some(object) = cache.lookup(namespace.as_deref(), &name)
                    && controller_uid(&object) == Some(owner_uid)
                {
                    found.push((kind.clone(), object));
                }
            }
        }
        found
    }

    /// Cached objects `query` selects.
    pub(crate) fn select(&self, query: &Query) -> Vec<Arc<DynamicObject>> {
        let Some(cache) = self.of(&query.kind) else { return Vec::new() };
        let (api_version, kind) = (query.kind.api_version(), &query.kind.kind);
        cache.store.state().into_iter().filter(|o| query.matches_meta(&api_version, kind, &o.metadata)).collect()
    }

    /// The cached object of `kind` named `name` in `namespace`.
    pub(crate) fn get(&self, kind: &KindRef, namespace: Option<&str>, name: &str) -> Option<Arc<DynamicObject>> {
        self.of(kind)?.lookup(namespace, name)
    }
}

impl KindCache {
    fn lookup(&self, namespace: Option<&str>, name: &str) -> Option<Arc<DynamicObject>> {
        let mut key = reflector::ObjectRef::new_with(name, self.resource.clone());
        if let Some(ns) = namespace {
            key = key.within(ns);
        }
        self.store.get(&key)
    }
}
