//! The state one lock guards: what is served (the registry), what is stored (the store) and
//! the admission chain. Its writes are the generic registry's: it asks an object's strategy
//! what the store must index, and carries out what after-commit hooks ask for, so that
//! neither the store nor the pipeline needs to know a kind.

use std::net::SocketAddr;
use std::sync::Arc;

use serde_json::Value;

use super::admission::{Admission, Lookup};
use super::conversion::Conversion;
use super::crd;
use super::kinds;
use super::object;
use super::registry::Registry;
use super::resource::GroupResource;
use super::store::{Keys, Store};
use super::strategy::{Effect, Resource};
use super::webhook::ServiceRef;

pub(crate) struct Cluster {
    pub registry: Registry,
    pub store: Store,
    pub admission: Admission,
}

impl Cluster {
    /// A cluster serving the built-ins, storing nothing yet; `history` changes are kept for
    /// watches that resume.
    pub(crate) fn new(history: usize) -> Cluster {
        Cluster {
            registry: Registry::new(),
            store: Store::new(history),
            admission: kinds::admission().then(crd::admission()),
        }
    }

    /// The resource objects of `gr` are stored as.
    pub(crate) fn resource(&self, gr: &GroupResource) -> Option<Arc<Resource>> {
        self.registry.by_resource(&gr.0, &gr.1)
    }

    /// How `rt`'s objects convert between versions, ready to run with the lock released.
    pub(crate) fn conversion(&self, rt: &Arc<Resource>) -> Conversion {
        Conversion::prepare(rt, &|service| self.service_address(service))
    }

    /// What the store indexes of `obj`, by its resource's strategy.
    fn keys(&self, gr: &GroupResource, obj: &Value) -> Keys {
        let Some(resource) = self.resource(gr) else {
            return Keys::default();
        };
        let strategy = resource.storage();
        Keys { sweep: object::is_deleting(obj) && strategy.contents(obj).is_some(), holds: strategy.allocated(obj) }
    }

    /// Stores `obj` (created or replaced) under a new resourceVersion.
    pub(crate) fn put(&mut self, gr: &GroupResource, obj: Value) -> Arc<Value> {
        let keys = self.keys(gr, &obj);
        self.store.put(gr, obj, keys)
    }

    /// Removes an object for good and carries out what its strategy's `after_delete` asks.
    pub(crate) fn remove(&mut self, gr: &GroupResource, ns: &str, name: &str) -> Option<Arc<Value>> {
        let gone = self.store.remove(gr, ns, name)?;
        if let Some(resource) = self.resource(gr) {
            self.apply(resource.storage().after_delete(&gone));
        }
        Some(gone)
    }

    /// Carries out what after-commit hooks asked for.
    pub(crate) fn apply(&mut self, effects: Vec<Effect>) {
        for effect in effects {
            match effect {
                Effect::Serve(resource) => self.registry.serve(resource),
                Effect::Unserve(name) => {
                    if let Some(served) = self.registry.withdraw(&name) {
                        let gr = served.group_resource();
                        for obj in self.store.list(&gr, None) {
                            self.store.remove(&gr, object::namespace(&obj), object::name(&obj));
                        }
                    }
                }
            }
        }
    }

    /// Restores a snapshot: the objects at `rv`, with what their kinds serve (a CRD's
    /// resource) served again before their objects are indexed.
    pub(crate) fn restore(&mut self, rv: u64, objects: Vec<(GroupResource, Value)>) {
        for (gr, obj) in &objects {
            if let Some(resource) = self.resource(gr) {
                self.apply(resource.storage().after_write(obj));
            }
        }
        let objects = objects
            .into_iter()
            .map(|(gr, obj)| {
                let keys = self.keys(&gr, &obj);
                (gr, obj, keys)
            })
            .collect();
        self.store.restore(rv, objects);
    }
}

impl Lookup for Cluster {
    fn object(&self, resource: &GroupResource, namespace: &str, name: &str) -> Option<Arc<Value>> {
        self.store.get(resource, namespace, name)
    }

    fn served(&self, group: &str, plural: &str) -> Option<Arc<Resource>> {
        self.registry.by_resource(group, plural)
    }

    fn objects(&self, resource: &GroupResource, namespace: Option<&str>) -> Vec<Arc<Value>> {
        self.store.list(resource, namespace)
    }

    fn kind(&self, api_version: &str, kind: &str) -> Option<Arc<Resource>> {
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        self.registry
            .all()
            .find(|r| {
                r.group == group
                    && r.kind == kind
                    && r.version(version).is_some()
                    && r.strategy(version).stored_as().is_none()
            })
            .cloned()
    }

    fn service_address(&self, service: &ServiceRef) -> Result<SocketAddr, String> {
        kinds::service_address(self, service)
    }
}
