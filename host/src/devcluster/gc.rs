//! Garbage collection by ownerReferences: dependents whose owners are all gone are deleted,
//! dangling references are dropped, and foreground deletion waits for blocking dependents.

use serde_json::{Value, json};

use super::object;
use super::store::{GroupResource, Store};
use super::verbs::{self, FOREGROUND};

/// One pass over the store. Returns whether anything changed (callers repeat until quiet).
pub(crate) fn collect(store: &mut Store) -> bool {
    let uids: std::collections::HashSet<String> = store.iter_all().map(|(_, o)| object::uid(o).to_string()).collect();
    let mut changed = false;

    // Owners waiting in foreground deletion: delete their dependents, finish when none block.
    let waiting: Vec<(GroupResource, Value)> = store
        .iter_all()
        .filter(|(_, o)| object::is_deleting(o) && object::finalizers(o).iter().any(|f| f == FOREGROUND))
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
            let rest: Vec<String> = object::finalizers(&owner).into_iter().filter(|f| f != FOREGROUND).collect();
            object::set_finalizers(&mut done, &rest);
            if rest.is_empty() {
                if let Some(gone) = store.remove(&gr, object::namespace(&owner), object::name(&owner))
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
            .filter(|r| r.get("uid").and_then(Value::as_str).is_some_and(|u| uids.contains(u)))
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

fn delete_dependent(store: &mut Store, gr: &GroupResource, dep: &Value, policy: &str) -> bool {
    let Some(rt) = store.registry.by_resource(&gr.0, &gr.1) else { return false };
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
