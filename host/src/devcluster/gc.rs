//! Garbage collection by ownerReferences, plus the namespace and CRD cleanup controllers.

use serde_json::{Value, json};

use super::crd;
use super::object;
use super::store::{GroupResource, Store};
use super::verbs::{self, FOREGROUND};

/// One pass over the store. Returns whether anything changed (callers repeat until quiet).
pub(crate) fn collect(store: &mut Store) -> bool {
    let mut changed = terminate_namespaces(store);
    changed |= clean_up_crds(store);
    let uids: std::collections::HashSet<String> = store
        .iter_all()
        .map(|(_, o)| object::uid(o).to_string())
        .collect();

    // Owners waiting in foreground deletion: delete their dependents, finish when none block.
    let waiting: Vec<(GroupResource, Value)> = store
        .iter_all()
        .filter(|(_, o)| {
            object::is_deleting(o) && object::finalizers(o).iter().any(|f| f == FOREGROUND)
        })
        .map(|(gr, o)| (gr.clone(), (**o).clone()))
        .collect();
    for (gr, owner) in waiting {
        let owner_uid = object::uid(&owner).to_string();
        let dependents: Vec<(GroupResource, Value)> = store
            .iter_all()
            .filter(|(_, o)| object::owner_uids(o).contains(&owner_uid))
            .map(|(gr, o)| (gr.clone(), (**o).clone()))
            .collect();
        let mut blocking = false;
        for (dgr, dep) in &dependents {
            let blocks = object::owner_refs(dep).iter().any(|r| {
                r.get("uid").and_then(Value::as_str) == Some(owner_uid.as_str())
                    && r.get("blockOwnerDeletion").and_then(Value::as_bool) == Some(true)
            });
            blocking |= blocks;
            if !object::is_deleting(dep) {
                changed |= delete_dependent(store, dgr, dep, "Foreground");
            }
        }
        if !blocking {
            let mut done = owner.clone();
            let rest: Vec<String> = object::finalizers(&owner)
                .into_iter()
                .filter(|f| f != FOREGROUND)
                .collect();
            object::set_finalizers(&mut done, &rest);
            if rest.is_empty() {
                if let Some(gone) =
                    store.remove(&gr, object::namespace(&owner), object::name(&owner))
                    && let Some(rt) = store.registry.by_resource(&gr.0, &gr.1)
                {
                    verbs::after_removal(store, &rt, &gone);
                }
            } else {
                store.put(&gr, done);
            }
            changed = true;
        }
    }

    // Dependents whose owners are gone.
    let dependents: Vec<(GroupResource, Value)> = store
        .iter_all()
        .filter(|(_, o)| !object::owner_refs(o).is_empty())
        .map(|(gr, o)| (gr.clone(), (**o).clone()))
        .collect();
    for (gr, dep) in dependents {
        let refs = object::owner_refs(&dep);
        let alive: Vec<Value> = refs
            .iter()
            .filter(|r| {
                r.get("uid")
                    .and_then(Value::as_str)
                    .is_some_and(|u| uids.contains(u))
            })
            .cloned()
            .collect();
        if alive.len() == refs.len() {
            continue;
        }
        if alive.is_empty() {
            if !object::is_deleting(&dep) {
                changed |= delete_dependent(store, &gr, &dep, "Background");
            }
        } else {
            let mut kept = dep.clone();
            object::set_meta(&mut kept, "ownerReferences", json!(alive));
            store.put(&gr, kept);
            changed = true;
        }
    }
    changed
}

/// The namespace controller: deletes what a terminating namespace holds (finalizers are
/// honoured), and removes the namespace once it is empty.
fn terminate_namespaces(store: &mut Store) -> bool {
    let namespaces_gr = (String::new(), "namespaces".to_string());
    let terminating: Vec<Value> = store
        .list(&namespaces_gr, None)
        .into_iter()
        .filter(|n| object::is_deleting(n))
        .map(|n| (*n).clone())
        .collect();
    let mut changed = false;
    for ns in terminating {
        let name = object::name(&ns).to_string();
        let namespaced: Vec<GroupResource> = store
            .registry
            .all()
            .filter(|r| r.namespaced)
            .map(|r| (r.group.clone(), r.plural.clone()))
            .collect();
        let mut left = 0;
        for gr in namespaced {
            for obj in store.list(&gr, Some(&name)) {
                left += 1;
                if !object::is_deleting(&obj) {
                    changed |= delete_dependent(store, &gr, &obj, "Background");
                }
            }
        }
        if left == 0 {
            store.remove(&namespaces_gr, "", &name);
            changed = true;
        }
    }
    changed
}

/// Deletes the custom resources of a deleted CRD, then lifts its cleanup finalizer.
fn clean_up_crds(store: &mut Store) -> bool {
    let crds_gr = (
        "apiextensions.k8s.io".to_string(),
        "customresourcedefinitions".to_string(),
    );
    let deleting: Vec<Value> = store
        .list(&crds_gr, None)
        .into_iter()
        .filter(|c| {
            object::is_deleting(c) && object::finalizers(c).iter().any(|f| f == crd::CLEANUP)
        })
        .map(|c| (*c).clone())
        .collect();
    let mut changed = false;
    for crd_obj in deleting {
        let served = crd::resource_type(&crd_obj);
        let gr = (served.group.clone(), served.plural.clone());
        let objects = store.list(&gr, None);
        for obj in &objects {
            if !object::is_deleting(obj) {
                changed |= delete_dependent(store, &gr, obj, "Background");
            }
        }
        if objects.is_empty() {
            let rest: Vec<String> = object::finalizers(&crd_obj)
                .into_iter()
                .filter(|f| f != crd::CLEANUP)
                .collect();
            let mut done = crd_obj.clone();
            object::set_finalizers(&mut done, &rest);
            if rest.is_empty() {
                if let Some(gone) = store.remove(&crds_gr, "", object::name(&crd_obj))
                    && let Some(rt) = store.registry.by_resource(&crds_gr.0, &crds_gr.1)
                {
                    verbs::after_removal(store, &rt, &gone);
                }
            } else {
                store.put(&crds_gr, done);
            }
            changed = true;
        }
    }
    changed
}

fn delete_dependent(store: &mut Store, gr: &GroupResource, dep: &Value, policy: &str) -> bool {
    let Some(rt) = store.registry.by_resource(&gr.0, &gr.1) else {
        return false;
    };
    let target = verbs::Target {
        version: rt.versions[0].name.clone(),
        namespace: Some(object::namespace(dep).to_string()).filter(|n| !n.is_empty()),
        name: Some(object::name(dep).to_string()),
        subresource: None,
        events_v1: false,
        rt,
    };
    let opts = verbs::DeleteOptions {
        propagation: Some(policy.to_string()),
        precondition_uid: Some(object::uid(dep).to_string()),
        ..verbs::DeleteOptions::default()
    };
    verbs::delete(store, &target, &opts).is_ok()
}
