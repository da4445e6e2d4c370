//! From a changed object back to the parents that should see it: through the
//! controller ownerReference for children, through each parent's last related
//! queries for related objects.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use kube::api::DynamicObject;
use kube::discovery::ApiResource;
use kube::runtime::reflector::ObjectRef;

use crate::plugin::{KindRef, Manifest, Query};

/// Each parent's related queries, as its last reconcile asked.
#[derive(Default)]
pub(crate) struct RelatedIndex {
    queries: Mutex<HashMap<ObjectRef<DynamicObject>, Vec<Query>>>,
}

impl RelatedIndex {
    pub(crate) fn set(&self, parent: ObjectRef<DynamicObject>, queries: Vec<Query>) {
        let mut map = self.queries.lock().unwrap_or_else(PoisonError::into_inner);
        if queries.is_empty() {
            map.remove(&parent);
        } else {
            map.insert(parent, queries);
        }
    }

    fn parents_selecting(&self, object: &DynamicObject) -> Vec<ObjectRef<DynamicObject>> {
        let (api_version, kind) =
            object.types.as_ref().map(|t| (t.api_version.as_str(), t.kind.as_str())).unwrap_or_default();
        let map = self.queries.lock().unwrap_or_else(PoisonError::into_inner);
        map.iter()
            .filter(|(_, queries)| queries.iter().any(|q| q.matches_meta(api_version, kind, &object.metadata)))
            .map(|(parent, _)| parent.clone())
            .collect()
    }
}

/// The trigger mapper for objects of `kind`: the controlling parent if `kind` is a
/// child kind, and every parent whose related queries select the object if it is a
/// related kind.
pub(crate) fn mapper(
    manifest: &Manifest,
    kind: &KindRef,
    parent_resource: ApiResource,
    index: Arc<RelatedIndex>,
) -> impl Fn(Arc<DynamicObject>) -> Vec<ObjectRef<DynamicObject>> + Send + Sync + 'static {
    let child_kind = manifest.children.contains(kind);
    let related_kind = manifest.related.contains(kind);
    let parent_namespaced = manifest.parent.as_ref().is_some_and(|p| p.namespaced);
    move |object| {
        let mut parents = Vec::new();
        if child_kind {
            let owner = object.metadata.owner_references.iter().flatten().find(|r| {
                r.controller == Some(true)
                    && r.kind == parent_resource.kind
                    && r.api_version == parent_resource.api_version
            });
            if let Some(owner) = owner {
                let mut parent = ObjectRef::new_with(&owner.name, parent_resource.clone());
                if parent_namespaced && let Some(ns) = &object.metadata.namespace {
                    parent = parent.within(ns);
                }
                parents.push(parent);
            }
        }
        if related_kind {
            parents.extend(index.parents_selecting(&object));
        }
        parents
    }
}
