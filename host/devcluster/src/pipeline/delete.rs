//! DELETE: preconditions, admission webhooks (a `DELETE` review of the stored object), then as
//! the resource's strategy and the propagation policy say: marked terminating for a controller,
//! held by finalizers, or removed (`rest.BeforeDelete` and the generic registry's `Delete`).

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use super::{ATTEMPTS, Answer, run};
use crate::admission::{Attributes, Operation, Phase};
use crate::cluster::Cluster;
use crate::object::{self, FOREGROUND};
use crate::read::{existing, list_of, show};
use crate::request::{DeleteOptions, Filter, Target};
use crate::state::Shared;
use crate::status::{self, ApiError};
use crate::user::User;

/// Who deletes, and where the warnings of the admission webhooks go.
pub(crate) struct Deleter<'a> {
    pub user: &'a User,
    pub warnings: &'a Mutex<Vec<String>>,
}

/// DELETE of one object: its admission webhooks called with the cluster unlocked, then
/// [`delete_local`] (again from the start if the object changed meanwhile).
pub(crate) async fn delete(
    shared: &Shared,
    t: &Target,
    opts: &DeleteOptions,
    by: &Deleter<'_>,
) -> Result<(u16, Value), ApiError> {
    let options = options(opts);
    for _ in 0..ATTEMPTS {
        let (stored, conversion, mutating, validating, answer) = {
            let mut cluster = shared.lock();
            let stored = existing(&cluster.store, t)?;
            check_preconditions(t, &stored, opts)?;
            let a = attributes(t, &stored, &options, opts, by);
            let mutating = cluster.admission.prepare(Phase::Mutating, &a, &*cluster);
            let validating = cluster.admission.prepare(Phase::Validating, &a, &*cluster);
            let conversion = cluster.conversion(&t.rt);
            let answer = (mutating.is_empty() && validating.is_empty())
                .then(|| delete_local(&mut cluster, t, opts))
                .transpose()?;
            (stored, conversion, mutating, validating, answer)
        };
        if let Some(answer) = answer {
            return answer.show(t, &conversion).await;
        }
        let view = show(&conversion, t, &stored).await?;
        let a = attributes(t, &view, &options, opts, by);
        run(&mutating, &a, None, &conversion).await?;
        run(&validating, &a, None, &conversion).await?;
        let answer = {
            let mut cluster = shared.lock();
            let now = existing(&cluster.store, t)?;
            if object::meta_str(&now, "resourceVersion") != object::meta_str(&stored, "resourceVersion") {
                continue;
            }
            delete_local(&mut cluster, t, opts)?
        };
        return answer.show(t, &conversion).await;
    }
    Err(ApiError::modified(&t.rt.group, &t.rt.plural, t.name()))
}

/// What admission knows of a delete of `old`.
fn attributes<'a>(
    t: &'a Target,
    old: &'a Value,
    options: &'a Value,
    opts: &DeleteOptions,
    by: &Deleter<'a>,
) -> Attributes<'a> {
    Attributes {
        operation: Operation::Delete,
        resource: &t.rt,
        version: &t.version,
        subresource: None,
        namespace: t.ns(),
        name: t.name(),
        old: Some(old),
        user: by.user,
        dry_run: opts.dry_run,
        options,
        warnings: by.warnings,
    }
}

/// The `DeleteOptions` webhooks see.
fn options(opts: &DeleteOptions) -> Value {
    let mut options = json!({ "kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1" });
    if opts.dry_run {
        options["dryRun"] = json!(["All"]);
    }
    if let Some(policy) = &opts.propagation {
        options["propagationPolicy"] = json!(policy);
    }
    let mut preconditions = json!({});
    if let Some(uid) = &opts.precondition_uid {
        preconditions["uid"] = json!(uid);
    }
    if let Some(rv) = &opts.precondition_rv {
        preconditions["resourceVersion"] = json!(rv);
    }
    if preconditions.as_object().is_some_and(|p| !p.is_empty()) {
        options["preconditions"] = preconditions;
    }
    options
}

/// DELETE of one object, once admitted (and the server's own deletes: garbage collection).
pub(crate) fn delete_local(cluster: &mut Cluster, t: &Target, opts: &DeleteOptions) -> Result<Answer, ApiError> {
    let rt = &t.rt;
    let name = t.name();
    let obj = existing(&cluster.store, t)?;
    check_preconditions(t, &obj, opts)?;
    // The server checked the policy given (`ValidateDeleteOptions`).
    let policy = opts.propagation.as_deref().unwrap_or("Background");
    let strategy = rt.storage();
    if opts.dry_run {
        return Ok(Answer::Stored(200, obj));
    }
    if let Some(status) = strategy.terminating_status() {
        // A controller empties the object, then removes it (`gc`).
        if object::is_deleting(&obj) {
            return Ok(Answer::Stored(200, obj));
        }
        let mut terminating = (*obj).clone();
        object::set_meta(&mut terminating, "deletionTimestamp", json!(object::now()));
        object::set_meta(&mut terminating, "deletionGracePeriodSeconds", json!(0));
        terminating["status"] = status;
        return Ok(Answer::Stored(200, cluster.put(&t.gr(), terminating)));
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
            return Ok(Answer::Stored(200, obj));
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
        return Ok(Answer::Stored(200, cluster.put(&t.gr(), pending)));
    }
    let gone = cluster.remove(&t.gr(), t.ns(), name).ok_or_else(|| ApiError::not_found(&rt.group, &rt.plural, name))?;
    if strategy.returns_deleted() {
        Ok(Answer::Stored(200, gone))
    } else {
        Ok(Answer::Shown(200, status::success(&rt.group, &rt.plural, name, object::uid(&gone))))
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

/// DELETE on a collection: deletes every matching object (each admitted as its own delete),
/// answers with the list of them.
pub(crate) async fn delete_collection(
    shared: &Shared,
    t: &Target,
    filter: &Filter,
    opts: &DeleteOptions,
    by: &Deleter<'_>,
) -> Result<(u16, Value), ApiError> {
    let (objects, conversion) = {
        let cluster = shared.lock();
        let objects: Vec<Arc<Value>> =
            cluster.store.list(&t.gr(), t.namespace.as_deref()).into_iter().filter(|o| filter.matches(o)).collect();
        (objects, cluster.conversion(&t.rt))
    };
    let mut items = Vec::new();
    for obj in objects {
        let one = t.object(object::namespace(&obj), object::name(&obj));
        let opts = DeleteOptions { precondition_uid: None, precondition_rv: None, ..opts.clone() };
        if let Ok((_, gone)) = delete(shared, &one, &opts, by).await {
            if gone.get("kind").and_then(Value::as_str) == Some("Status") {
                items.push(show(&conversion, t, &obj).await?);
            } else {
                items.push(gone);
            }
        }
    }
    let metadata = json!({ "resourceVersion": shared.lock().store.current_rv().to_string() });
    Ok((200, list_of(t, &items, &metadata)))
}
