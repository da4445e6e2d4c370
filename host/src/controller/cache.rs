//! One watch and one cache per kind a plugin touches: its parent, its children and
//! its related kinds. A kind both owned and read is watched once.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};

use futures::{Stream, StreamExt, TryStreamExt};
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
    /// The cached objects by the uid of their controller, so that finding a parent's
    /// children costs what it finds, not the size of the cache.
    controlled: Arc<ControllerIndex>,
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
    let controlled = Arc::new(ControllerIndex::default());
    let index = controlled.clone();
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
        // After the store: a reconcile this event triggers finds the object in both.
        .inspect_ok(move |event| index.apply(event))
        .touched_objects()
        .boxed();
    (KindCache { kind, resource, store, controlled }, stream)
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

/// Namespace and name: an object's key within one kind.
type Key = (Option<String>, String);

/// Which cached objects each controller uid controls, kept from the watch events the
/// way kube-runtime's store keeps the objects: a relist builds a new index and
/// replaces the old one when the list is complete, so objects deleted while the watch
/// was down leave it too.
#[derive(Default)]
struct ControllerIndex(Mutex<IndexState>);

#[derive(Default)]
struct IndexState {
    live: Controlled,
    /// The index a relist is building, from `Init` to `InitDone`.
    relist: Option<Controlled>,
}

#[derive(Default)]
struct Controlled {
    by_controller: HashMap<String, HashSet<Key>>,
    controller_of: HashMap<Key, String>,
}

impl Controlled {
    fn insert(&mut self, object: &DynamicObject) {
        let key = key(object);
        self.remove(&key);
        if let Some(uid) = controller_uid(object) {
            self.by_controller.entry(uid.to_string()).or_default().insert(key.clone());
            self.controller_of.insert(key, uid.to_string());
        }
    }

    fn remove(&mut self, key: &Key) {
        if let Some(uid) = self.controller_of.remove(key)
            && let Some(keys) = self.by_controller.get_mut(&uid)
        {
            keys.remove(key);
            if keys.is_empty() {
                self.by_controller.remove(&uid);
            }
        }
    }
}

impl ControllerIndex {
    fn state(&self) -> std::sync::MutexGuard<'_, IndexState> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn apply(&self, event: &watcher::Event<DynamicObject>) {
        let mut state = self.state();
        match event {
            watcher::Event::Apply(object) => state.live.insert(object),
            watcher::Event::Delete(object) => state.live.remove(&key(object)),
            watcher::Event::Init => state.relist = Some(Controlled::default()),
            watcher::Event::InitApply(object) => state.relist.get_or_insert_with(Controlled::default).insert(object),
            watcher::Event::InitDone => {
                if let Some(relist) = state.relist.take() {
                    state.live = relist;
                }
            }
        }
    }

    fn keys(&self, controller: &str) -> Vec<Key> {
        self.state().live.by_controller.get(controller).map(|keys| keys.iter().cloned().collect()).unwrap_or_default()
    }
}

fn key(object: &DynamicObject) -> Key {
    (object.metadata.namespace.clone(), object.metadata.name.clone().unwrap_or_default())
}

/// The uid in the object's controller ownerReference.
pub(crate) fn controller_uid(object: &DynamicObject) -> Option<&str> {
    object.owner_references().iter().find(|r| r.controller == Some(true)).map(|r| r.uid.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use watcher::Event;

    fn child(name: &str, controller: Option<&str>) -> DynamicObject {
        let mut object: DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default"},
        }))
        .unwrap();
        if let Some(uid) = controller {
            object.metadata.owner_references =
                Some(vec![k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
                    api_version: "example.com/v1".into(),
                    kind: "Parent".into(),
                    name: "p".into(),
                    uid: uid.into(),
                    controller: Some(true),
                    ..Default::default()
                }]);
        }
        object
    }

    fn names(index: &ControllerIndex, controller: &str) -> Vec<String> {
        let mut names: Vec<String> = index.keys(controller).into_iter().map(|(_, name)| name).collect();
        names.sort();
        names
    }

    #[test]
    fn follows_adds_changes_of_controller_and_deletes() {
        let index = ControllerIndex::default();
        index.apply(&Event::Apply(child("a", Some("u1"))));
        index.apply(&Event::Apply(child("b", Some("u1"))));
        index.apply(&Event::Apply(child("free", None)));
        assert_eq!(names(&index, "u1"), ["a", "b"]);

        index.apply(&Event::Apply(child("b", Some("u2"))));
        assert_eq!(names(&index, "u1"), ["a"]);
        assert_eq!(names(&index, "u2"), ["b"]);

        index.apply(&Event::Apply(child("a", None)));
        index.apply(&Event::Delete(child("b", Some("u2"))));
        assert!(names(&index, "u1").is_empty());
        assert!(names(&index, "u2").is_empty());
    }

    #[test]
    fn a_relist_replaces_the_index_when_complete() {
        let index = ControllerIndex::default();
        index.apply(&Event::Apply(child("gone", Some("u1"))));
        index.apply(&Event::Apply(child("kept", Some("u1"))));

        index.apply(&Event::Init);
        index.apply(&Event::InitApply(child("kept", Some("u1"))));
        index.apply(&Event::InitApply(child("new", Some("u1"))));
        // Until the list is complete, the index answers as before it began.
        assert_eq!(names(&index, "u1"), ["gone", "kept"]);
        index.apply(&Event::InitDone);
        assert_eq!(names(&index, "u1"), ["kept", "new"]);
    }
}
