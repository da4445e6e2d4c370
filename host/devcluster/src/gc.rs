//! Garbage collection by ownerReferences, plus the namespace and CRD cleanup controllers.
//!
//! A pass costs what changed, not what is stored. The store keeps an index on every write
//! and removal (`store::GcIndex`): uid to object, owner uid to dependents, the uids of objects
//! deleted in the foreground, and the namespaces and CRDs being deleted. A write queues only
//! the objects it concerns:
//! - a created object, or one whose ownerReferences changed, when one of its owners does not
//!   exist (it may have to go, or lose the dangling reference);
//! - the dependents of a removed object (their owner is gone);
//! - an object in foreground deletion, and its owners in foreground deletion whenever one of
//!   their dependents is removed or its ownerReferences change (they may be done waiting,
//!   or have a new dependent to delete).
//!
//! Other writes (status, spec, labels: nearly all of them) queue nothing, and the request
//! handler wakes the collector only when something is queued or a namespace or CRD is being
//! deleted (`Store::gc_pending`). A pass reads the queued objects through shared pointers and
//! copies only the few it rewrites. Owners are identified by uid alone, so a namespaced
//! dependent of a cluster-scoped owner and a same-named successor of a deleted owner are
//! handled alike. Passes repeat until one changes nothing and the queue is empty; a pass
//! every five seconds is a safety net.

use serde_json::{Value, json};

use super::crd;
use super::object;
use super::object::FOREGROUND;
use super::store::{self, GroupResource, Store};
use super::verbs;

/// One pass of the controllers. Returns whether anything changed (callers repeat until
/// quiet). Looks only at the namespaces and CRDs being deleted and at the objects the store
/// queued for it.
pub(crate) fn collect(store: &mut Store) -> bool {
    let mut changed = false;
    for (gr, (_, name)) in store.sweeping() {
        changed |= if gr.0.is_empty() { terminate_namespace(store, &name) } else { clean_up_crd(store, &name) };
    }
    for (gr, (ns, name)) in store.take_gc_queue() {
        changed |= visit(store, &gr, &ns, &name);
    }
    changed
}

/// Looks at one queued object: an owner deleted in the foreground, or a dependent that may
/// have lost owners.
fn visit(store: &mut Store, gr: &GroupResource, ns: &str, name: &str) -> bool {
    let mut changed = false;
    let Some(obj) = store.get(gr, ns, name) else {
        return false;
    };
    if store::in_foreground_deletion(&obj) {
        changed |= finish_foreground(store, gr, &obj);
    }
    let Some(obj) = store.get(gr, ns, name) else {
        return changed;
    };
    let all = object::owner_refs(&obj);
    let owner_alive = |r: &Value| r.get("uid").and_then(Value::as_str).is_some_and(|u| store.uid_exists(u));
    let alive = all.iter().filter(|r| owner_alive(r)).count();
    if alive == all.len() {
        return changed;
    }
    if alive == 0 {
        if !object::is_deleting(&obj) {
            changed |= delete_dependent(store, gr, &obj, "Background");
        }
        return changed;
    }
    let kept: Vec<Value> = all.iter().filter(|r| owner_alive(r)).cloned().collect();
    let mut obj = (*obj).clone();
    object::set_meta(&mut obj, "ownerReferences", json!(kept));
    store.put(gr, obj);
    true
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
        blocking |= object::owner_refs(&dep)
            .iter()
            .any(|r| owned_by(r) && r.get("blockOwnerDeletion").and_then(Value::as_bool) == Some(true));
        if !object::is_deleting(&dep) {
            changed |= delete_dependent(store, &dgr, &dep, "Foreground");
        }
    }
    if blocking {
        return changed;
    }
    let rest: Vec<String> = object::finalizers(owner).into_iter().filter(|f| f != FOREGROUND).collect();
    if rest.is_empty() {
        if let Some(gone) = store.remove(gr, object::namespace(owner), object::name(owner))
            && let Some(rt) = store.registry.by_resource(&gr.0, &gr.1)
        {
            verbs::after_removal(store, &rt, &gone);
        }
    } else {
        let mut done = owner.clone();
        object::set_finalizers(&mut done, &rest);
        store.put(gr, done);
    }
    true
}

/// The namespace controller: deletes what a terminating namespace holds (finalizers are
/// honoured), and removes the namespace once it is empty.
fn terminate_namespace(store: &mut Store, name: &str) -> bool {
    let namespaces_gr = (String::new(), "namespaces".to_string());
    if !store.get(&namespaces_gr, "", name).is_some_and(|ns| object::is_deleting(&ns)) {
        return false;
    }
    let namespaced: Vec<GroupResource> =
        store.registry.all().filter(|r| r.namespaced).map(|r| (r.group.clone(), r.plural.clone())).collect();
    let mut changed = false;
    let mut left = 0;
    for gr in namespaced {
        for obj in store.list(&gr, Some(name)) {
            left += 1;
            if !object::is_deleting(&obj) {
                changed |= delete_dependent(store, &gr, &obj, "Background");
            }
        }
    }
    if left == 0 {
        store.remove(&namespaces_gr, "", name);
        changed = true;
    }
    changed
}

/// Deletes the custom resources of a deleted CRD, then lifts its cleanup finalizer.
fn clean_up_crd(store: &mut Store, name: &str) -> bool {
    let crds_gr = ("apiextensions.k8s.io".to_string(), "customresourcedefinitions".to_string());
    let Some(crd_obj) =
        store.get(&crds_gr, "", name).filter(|c| object::is_deleting(c) && object::has_finalizer(c, crd::CLEANUP))
    else {
        return false;
    };
    let served = crd::resource_type(&crd_obj);
    let gr = (served.group.clone(), served.plural.clone());
    let objects = store.list(&gr, None);
    let mut changed = false;
    for obj in &objects {
        if !object::is_deleting(obj) {
            changed |= delete_dependent(store, &gr, obj, "Background");
        }
    }
    if objects.is_empty() {
        let rest: Vec<String> = object::finalizers(&crd_obj).into_iter().filter(|f| f != crd::CLEANUP).collect();
        if rest.is_empty() {
            if let Some(gone) = store.remove(&crds_gr, "", name)
                && let Some(rt) = store.registry.by_resource(&crds_gr.0, &crds_gr.1)
            {
                verbs::after_removal(store, &rt, &gone);
            }
        } else {
            let mut done = (*crd_obj).clone();
            object::set_finalizers(&mut done, &rest);
            store.put(&crds_gr, done);
        }
        changed = true;
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
