//! One watch and one cache per kind a plugin touches: its parent, its children and
//! its related kinds. A kind both owned and read is watched once.

use std::sync::Arc;

use futures::{Stream, StreamExt};
use kube::api::{Api, DynamicObject, TypeMeta};
use kube::discovery::ApiResource;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};

use crate::plugin::{KindRef, Query};

/// The cache of one kind.
pub(crate) struct KindCache {
    pub(crate) kind: KindRef,
    pub(crate) resource: ApiResource,
    pub(crate) store: Store<DynamicObject>,
}

/// A kind's watch stream, which keeps its cache current while it is polled.
pub(crate) type WatchStream = std::pin::Pin<Box<dyn Stream<Item = Result<DynamicObject, watcher::Error>> + Send>>;

/// Starts caching `kind` (in `namespace` only, if given and the kind is
/// namespaced): returns the cache and the stream that fills it.
///
/// `managedFields` are dropped from every cached object but the entries of
/// `keep_manager`: the host reads its own entry on parents to know which labels and
/// annotations it set, and nothing else needs them.
pub(crate) fn watch(
    client: &Client,
    kind: KindRef,
    resource: ApiResource,
    namespace: Option<&str>,
    keep_manager: Option<String>,
) -> (KindCache, WatchStream) {
    let writer = reflector::store::Writer::new(resource.clone());
    let store = writer.as_reader();
    let types = TypeMeta { api_version: resource.api_version.clone(), kind: resource.kind.clone() };
    let api: Api<DynamicObject> = match namespace {
        Some(ns) if kind.namespaced => Api::namespaced_with(client.clone(), ns, &resource),
        _ => Api::all_with(client.clone(), &resource),
    };
    let stream = watcher(api, watcher::Config::default())
        .default_backoff()
        .modify(move |object| {
            // List items may come without their type; requests need it.
            object.types = Some(types.clone());
            let fields = &mut object.metadata.managed_fields;
            match &keep_manager {
                Some(manager) => {
                    if let Some(entries) = fields.as_mut() {
                        entries.retain(|e| e.manager.as_deref() == Some(manager));
                    }
                }
                None => *fields = None,
            }
        })
        .reflect(writer)
        .touched_objects()
        .boxed();
    (KindCache { kind, resource, store }, stream)
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
            for cache in std::iter::once(&self.parent).chain(&self.others) {
                // kube-runtime's `wait_until_ready` wakes only the last of concurrent waiters
                // (its oneshot receiver keeps one waker), and the controller waits on the
                // parent's store too: ask again every 50 ms rather than wait to be woken.
                while tokio::time::timeout(READY_POLL, cache.store.wait_until_ready()).await.is_err() {}
            }
        };
        tokio::time::timeout(limit, all).await.is_ok()
    }

    pub(crate) fn of(&self, kind: &KindRef) -> Option<&KindCache> {
        self.others.iter().find(|c| &c.kind == kind)
    }

    /// Cached objects of the `kinds` whose controller is `owner_uid`.
    pub(crate) fn controlled_by(&self, kinds: &[KindRef], owner_uid: &str) -> Vec<(KindRef, Arc<DynamicObject>)> {
        let mut found = Vec::new();
        for kind in kinds {
            let Some(cache) = self.of(kind) else { continue };
            for object in cache.store.state() {
                if controller_uid(&object) == Some(owner_uid) {
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
        let cache = self.of(kind)?;
        let mut key = reflector::ObjectRef::new_with(name, cache.resource.clone());
        if let Some(ns) = namespace {
            key = key.within(ns);
        }
        cache.store.get(&key)
    }
}

/// The uid in the object's controller ownerReference.
pub(crate) fn controller_uid(object: &DynamicObject) -> Option<&str> {
    object.owner_references().iter().find(|r| r.controller == Some(true)).map(|r| r.uid.as_str())
}
