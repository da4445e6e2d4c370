//! DELETE: preconditions, then as the resource's strategy and the propagation policy say: marked
//! terminating for a controller, held by finalizers, or removed (`rest.BeforeDelete` and the
//! generic registry's `Delete`).

use serde_json::{Value, json};

use crate::cluster::Cluster;
use crate::object::{self, FOREGROUND};
use crate::read::{existing, list_of, present};
use crate::request::{DeleteOptions, Filter, Target};
use crate::status::{self, ApiError, Cause};

/// DELETE of one object.
pub(crate) fn delete(cluster: &mut Cluster, t: &Target, opts: &DeleteOptions) -> Result<(u16, Value), ApiError> {
    let rt = &t.rt;
    let name = t.name();
    let obj = existing(&cluster.store, t)?;
    check_preconditions(t, &obj, opts)?;
    let policy = opts.propagation.as_deref().unwrap_or("Background");
    if !matches!(policy, "Background" | "Foreground" | "Orphan") {
        return Err(ApiError::invalid(
            rt,
            name,
            &[Cause::new(
                "FieldValueNotSupported",
                "propagationPolicy",
                format!("Unsupported value: {policy:?}: supported values: \"Foreground\", \"Background\", \"Orphan\""),
            )],
        ));
    }
    let strategy = rt.storage();
    if opts.dry_run {
        return Ok((200, present(rt, &t.version, &obj)));
    }
    if let Some(status) = strategy.terminating_status() {
        // A controller empties the object, then removes it (`gc`).
        if object::is_deleting(&obj) {
            return Ok((200, present(rt, &t.version, &obj)));
        }
        let mut terminating = (*obj).clone();
        object::set_meta(&mut terminating, "deletionTimestamp", json!(object::now()));
        object::set_meta(&mut terminating, "deletionGracePeriodSeconds", json!(0));
        terminating["status"] = status;
        let stored = cluster.put(&t.gr(), terminating);
        return Ok((200, present(rt, &t.version, &stored)));
    }
    if policy == "Orphan" {
        orphan_dependents(cluster, object::uid(&obj));
    }
    let mut finalizers = object::finalizers(&obj);
    if policy == "Foreground" && !finalizers.iter().any(|f| f == FOREGROUND) {
        finalizers.push(FOREGROUND.to_string());
    }
    if !finalizers.is_empty() {
        if object::is_deleting(&obj) && finalizers == object::finalizers(&obj) {
            return Ok((200, present(rt, &t.version, &obj)));
        }
        let mut pending = (*obj).clone();
        object::set_finalizers(&mut pending, &finalizers);
        if !object::is_deleting(&pending) {
            object::set_meta(&mut pending, "deletionTimestamp", json!(object::now()));
            object::set_meta(&mut pending, "deletionGracePeriodSeconds", json!(0));
            if strategy.tracks_generation() {
                object::set_meta(&mut pending, "generation", json!(object::generation(&obj) + 1));
            }
        }
        let stored = cluster.put(&t.gr(), pending);
        return Ok((200, present(rt, &t.version, &stored)));
    }
    let gone = cluster.remove(&t.gr(), t.ns(), name).ok_or_else(|| ApiError::not_found(&rt.group, &rt.plural, name))?;
    if strategy.returns_deleted() {
        Ok((200, present(rt, &t.version, &gone)))
    } else {
        Ok((200, status::success(&rt.group, &rt.plural, name, object::uid(&gone))))
    }
}

/// The uid and resourceVersion preconditions of a delete.
fn check_preconditions(t: &Target, obj: &Value, opts: &DeleteOptions) -> Result<(), ApiError> {
    if let Some(uid) = &opts.precondition_uid
        && uid != object::uid(obj)
    {
        return Err(precondition_failed(t, "UID", uid, object::uid(obj)));
    }
    if let Some(rv) = &opts.precondition_rv
        && rv != object::meta_str(obj, "resourceVersion")
    {
        return Err(precondition_failed(t, "ResourceVersion", rv, object::meta_str(obj, "resourceVersion")));
    }
    Ok(())
}

/// The 409 of a failed precondition on `what` (`UID`, `ResourceVersion`).
pub(super) fn precondition_failed(t: &Target, what: &str, given: &str, actual: &str) -> ApiError {
    ApiError::conflict(
        &t.rt.group,
        &t.rt.plural,
        t.name(),
        &format!("Precondition failed: {what} in precondition: {given}, {what} in object meta: {actual}"),
    )
}

/// Removes ownerReferences to `owner_uid` from every object (`propagationPolicy: Orphan`).
fn orphan_dependents(cluster: &mut Cluster, owner_uid: &str) {
    for (gr, (ns, name)) in cluster.store.dependents_of(owner_uid) {
        let Some(dep) = cluster.store.get(&gr, &ns, &name) else {
            continue;
        };
        let mut dep = (*dep).clone();
        let refs: Vec<Value> = object::owner_refs(&dep)
            .iter()
            .filter(|r| r.get("uid").and_then(Value::as_str) != Some(owner_uid))
            .cloned()
            .collect();
        if refs.is_empty() {
            object::remove_meta(&mut dep, "ownerReferences");
        } else {
            object::set_meta(&mut dep, "ownerReferences", Value::Array(refs));
        }
        cluster.put(&gr, dep);
    }
}

/// DELETE on a collection: deletes every matching object, answers with the list of them.
#[allow(clippy::unnecessary_wraps)] // the signature of every verb
pub(crate) fn delete_collection(
    cluster: &mut Cluster,
    t: &Target,
    filter: &Filter,
    opts: &DeleteOptions,
) -> Result<(u16, Value), ApiError> {
    let mut items = Vec::new();
    for obj in cluster.store.list(&t.gr(), t.namespace.as_deref()) {
        if !filter.matches(&obj) {
            continue;
        }
        let one = t.object(object::namespace(&obj), object::name(&obj));
        let opts = DeleteOptions { precondition_uid: None, precondition_rv: None, ..opts.clone() };
        if let Ok((_, gone)) = delete(cluster, &one, &opts) {
            if gone.get("kind").and_then(Value::as_str) == Some("Status") {
                items.push(present(&t.rt, &t.version, &obj));
            } else {
                items.push(gone);
            }
        }
    }
    let metadata = json!({ "resourceVersion": cluster.store.current_rv().to_string() });
    Ok((200, list_of(t, &items, &metadata)))
}
