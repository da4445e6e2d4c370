//! Garbage collection by ownerReferences, and the cleanup controllers that empty an object
//! before it goes (kube-apiserver's namespace controller and CRD finalizer; what an object
//! holds is its strategy's `contents`).
//!
//! A pass costs what changed, not what is stored. The store keeps an index on every write
//! and removal (`store::GcIndex`): uid to object, owner uid to dependents, the uids of objects
//! deleted in the foreground, and the objects being deleted that a cleanup controller empties. A write queues only
//! the objects it concerns:
//! - a created object, or one whose ownerReferences changed, when one of its owners does not
//!   exist (it may have to go, or lose the dangling reference);
//! - the dependents of a removed object (their owner is gone);
//! - an object in foreground deletion, and its owners in foreground deletion whenever one of
//!   their dependents is removed or its ownerReferences change (they may be done waiting,
//!   or have a new dependent to delete).
//!
//! Other writes (status, spec, labels: nearly all of them) queue nothing, and the request
//! handler wakes the collector only when something is queued or an object is being emptied
//! (`Store::gc_pending`). A pass reads the queued objects through shared pointers and
//! copies only the few it rewrites. Owners are identified by uid alone, so a namespaced
//! dependent of a cluster-scoped owner and a same-named successor of a deleted owner are
//! handled alike. Passes repeat until one changes nothing and the queue is empty; a pass
//! every five seconds is a safety net.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::cluster::Cluster;
use super::object::{self, FOREGROUND};
use super::pipeline;
use super::request::{DeleteOptions, Target};
use super::resource::GroupResource;
use super::state::Shared;
use super::store;
use super::strategy::{Finish, Holds};

/// Runs garbage collection whenever a write left it something to do (`Store::gc_pending`),
/// and every few seconds as a safety net.
pub(crate) async fn run(shared: Arc<Shared>) {
    let mut shutdown = shared.shutdown.clone();
    loop {
        tokio::select! {
            () = shared.gc.notified() => {}
            () = tokio::time::sleep(Duration::from_secs(5)) => {}
            _ = shutdown.changed() => return,
        }
        let mut changed = false;
        {
            let mut cluster = shared.lock();
            for _ in 0..100 {
                let pass_changed = collect(&mut cluster);
                changed |= pass_changed;
                if !pass_changed && !cluster.store.gc_queued() {
                    break;
                }
            }
        }
        if changed {
            shared.persist.notify_one();
        }
    }
}

/// One pass of the controllers. Returns whether anything changed (callers repeat until
/// quiet). Looks only at the objects being emptied and at the objects the store queued.
pub(crate) fn collect(cluster: &mut Cluster) -> bool {
    let mut changed = false;
    for (gr, (ns, name)) in cluster.store.sweeping() {
        changed |= sweep(cluster, &gr, &ns, &name);
    }
    for (gr, (ns, name)) in cluster.store.take_gc_queue() {
        changed |= visit(cluster, &gr, &ns, &name);
    }
    changed
}

/// The cleanup controller of one object being deleted: deletes what it holds (finalizers are
/// honoured), and once nothing is left, lets it go as its strategy says.
fn sweep(cluster: &mut Cluster, gr: &GroupResource, ns: &str, name: &str) -> bool {
    let Some(obj) = cluster.store.get(gr, ns, name).filter(|o| object::is_deleting(o)) else {
        return false;
    };
    let Some(contents) = cluster.resource(gr).and_then(|r| r.storage().contents(&obj)) else {
        return false;
    };
    let held: Vec<(GroupResource, Arc<Value>)> = match &contents.holds {
        Holds::Namespace(namespace) => {
            let namespaced: Vec<GroupResource> =
                cluster.registry.all().filter(|r| r.namespaced).map(|r| r.group_resource()).collect();
            namespaced
                .into_iter()
                .flat_map(|gr| cluster.store.list(&gr, Some(namespace)).into_iter().map(move |o| (gr.clone(), o)))
                .collect()
        }
        Holds::Objects(held) => cluster.store.list(held, None).into_iter().map(|o| (held.clone(), o)).collect(),
    };
    let mut changed = false;
    for (held_gr, held_obj) in &held {
        if !object::is_deleting(held_obj) {
            changed |= delete_dependent(cluster, held_gr, held_obj, "Background");
        }
    }
    if !held.is_empty() {
        return changed;
    }
    match contents.then {
        Finish::Remove => {
            cluster.remove(gr, ns, name);
        }
        Finish::LiftFinalizer(finalizer) => let_go(cluster, gr, &obj, finalizer),
    }
    true
}

/// Lifts `finalizer` of `obj`, which is being deleted: it goes once no other finalizer is left.
fn let_go(cluster: &mut Cluster, gr: &GroupResource, obj: &Value, finalizer: &str) {
    let rest: Vec<String> = object::finalizers(obj).into_iter().filter(|f| f != finalizer).collect();
    if rest.is_empty() {
        cluster.remove(gr, object::namespace(obj), object::name(obj));
    } else {
        let mut done = obj.clone();
        object::set_finalizers(&mut done, &rest);
        cluster.put(gr, done);
    }
}

/// Looks at one queued object: an owner deleted in the foreground, or a dependent that may
/// have lost owners.
fn visit(cluster: &mut Cluster, gr: &GroupResource, ns: &str, name: &str) -> bool {
    let mut changed = false;
    let Some(obj) = cluster.store.get(gr, ns, name) else {
        return false;
    };
    if store::in_foreground_deletion(&obj) {
        changed |= finish_foreground(cluster, gr, &obj);
    }
    let Some(obj) = cluster.store.get(gr, ns, name) else {
        return changed;
    };
    let all = object::owner_refs(&obj);
    let store = &cluster.store;
    let owner_alive = |r: &Value| r.get("uid").and_then(Value::as_str).is_some_and(|u| store.uid_exists(u));
    let alive = all.iter().filter(|r| owner_alive(r)).count();
    if alive == all.len() {
        return changed;
    }
    if alive == 0 {
        if !object::is_deleting(&obj) {
            changed |= delete_dependent(cluster, gr, &obj, "Background");
        }
        return changed;
    }
    let kept: Vec<Value> = all.iter().filter(|r| owner_alive(r)).cloned().collect();
    let mut obj = (*obj).clone();
    object::set_meta(&mut obj, "ownerReferences", json!(kept));
    cluster.put(gr, obj);
    true
}

/// An owner deleted in the foreground: its dependents are deleted, and it goes once none of
/// them blocks it (`blockOwnerDeletion`).
fn finish_foreground(cluster: &mut Cluster, gr: &GroupResource, owner: &Value) -> bool {
    let owner_uid = object::uid(owner).to_string();
    let owned_by = |r: &Value| r.get("uid").and_then(Value::as_str) == Some(owner_uid.as_str());
    let mut changed = false;
    let mut blocking = false;
    for (dgr, (dns, dname)) in cluster.store.dependents_of(&owner_uid) {
        let Some(dep) = cluster.store.get(&dgr, &dns, &dname) else {
            continue;
        };
        blocking |= object::owner_refs(&dep)
            .iter()
            .any(|r| owned_by(r) && r.get("blockOwnerDeletion").and_then(Value::as_bool) == Some(true));
        if !object::is_deleting(&dep) {
            changed |= delete_dependent(cluster, &dgr, &dep, "Foreground");
        }
    }
    if blocking {
        return changed;
    }
    let_go(cluster, gr, owner, FOREGROUND);
    true
}

fn delete_dependent(cluster: &mut Cluster, gr: &GroupResource, dep: &Value, policy: &str) -> bool {
    let Some(rt) = cluster.resource(gr) else {
        return false;
    };
    let target = Target::stored(rt, object::namespace(dep), object::name(dep));
    let opts = DeleteOptions {
        propagation: Some(policy.to_string()),
        precondition_uid: Some(object::uid(dep).to_string()),
        ..DeleteOptions::default()
    };
    pipeline::delete_local(cluster, &target, &opts).is_ok()
}
