//! Garbage collection by ownerReferences, plus the namespace and CRD cleanup controllers.

use serde_json::{Value, json};

use super::crd;
use super::object;
use super::store::{GroupResource, Store};
use super::verbs::{self, FOREGROUND};

/// The ownerReferences of an object, borrowed.
fn refs(obj: &Value) -> &[Value] {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn has_finalizer(obj: &Value, name: &str) -> bool {
    obj.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|f| f.iter().any(|v| v.as_str() == Some(name)))
}

/// One pass of the controllers. Returns whether anything changed (callers repeat until
/// quiet). Runs after every write, so it looks only at the objects the store queued for it.
pub(crate) fn collect(store: &mut Store) -> bool {
    let mut changed = terminate_namespaces(store);
    changed |= clean_up_crds(store);
    for (gr, (ns, name)) in store.take_gc_queue() {
        let Some(obj) = store.get(&gr, &ns, &name) else {
            continue;
        };
        if object::is_deleting(&obj) && has_finalizer(&obj, FOREGROUND) {
            changed |= finish_foreground(store, &gr, &obj);
        }
        let Some(obj) = store.get(&gr, &ns, &name) else {
            continue;
        };
        let all = refs(&obj);
        if all.is_empty() {
            continue;
        }
        let alive: Vec<Value> = all
            .iter()
            .filter(|r| {
                r.get("uid")
                    .and_then(Value::as_str)
                    .is_some_and(|u| store.uid_exists(u))
            })
            .cloned()
            .collect();
        if alive.len() == all.len() {
            continue;
        }
        if alive.is_empty() {
            if !object::is_deleting(&obj) {
                changed |= delete_dependent(store, &gr, &obj, "Background");
            }
        } else {
            let mut kept = (*obj).clone();
            object::set_meta(&mut kept, "ownerReferences", json!(alive));
            store.put(&gr, kept);
            changed = true;
        }
    }
    changed
}

/// An owner deleted in the foreground: its dependents are deleted, and it goes once none of
/// them blocks it (`blockOwnerDeletion`).
fn finish_foreground(store: &mut Store, gr: &GroupResource, owner: &Value) -> bool {
    let owner_uid = object::uid(owner).to_string();
    let owned_by = |r: &Value| r.get("uid").and_then(Value::as_str) == Some(owner_uid.as_str());
    let mut changed = false;
    let mut blocking = false;
    for (dgr, (dns, dname)) in store.dependents_of(&owner_uid) {
        let Some(dep) = store.get(&dgr, &dns, &dname) else {
            continue;
        };
        blocking |= refs(&dep).iter().any(|r| {
            owned_by(r) && r.get("blockOwnerDeletion").and_then(Value::as_bool) == Some(true)
        });
        if !object::is_deleting(&dep) {
            changed |= delete_dependent(store, &dgr, &dep, "Foreground");
        }
    }
    if blocking {
        return changed;
    }
    let mut done = owner.clone();
    let rest: Vec<String> = object::finalizers(owner)
        .into_iter()
        .filter(|f| f != FOREGROUND)
        .collect();
    object::set_finalizers(&mut done, &rest);
    if rest.is_empty() {
        if let Some(gone) = store.remove(gr, object::namespace(owner), object::name(owner))
            && let Some(rt) = store.registry.by_resource(&gr.0, &gr.1)
        {
            verbs::after_removal(store, &rt, &gone);
        }
    } else {
        store.put(gr, done);
    }
    true
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
