//! Which cached objects each controller uid controls, so that finding a parent's
//! children costs what it finds, not the size of the cache.

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, PoisonError};

use kube::ResourceExt;
use kube::api::DynamicObject;
use kube::runtime::watcher;

/// Namespace and name: an object's key within one kind.
pub(crate) type Key = (Option<String>, String);

/// Which cached objects each controller uid controls, kept from the watch events the
/// way kube-runtime's store keeps the objects: a relist builds a new index and
/// replaces the old one when the list is complete, so objects deleted while the watch
/// was down leave it too.
#[derive(Default)]
pub(crate) struct ControllerIndex(Mutex<IndexState>);

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

    pub(crate) fn apply(&self, event: &watcher::Event<DynamicObject>) {
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

    pub(crate) fn keys(&self, controller: &str) -> Vec<Key> {
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
