//! The write pipeline: create, update, patch, server-side apply and delete, as fixed sequences
//! of named stages that ask the resource's strategy at set points (kube-apiserver's
//! `rest.BeforeCreate`/`BeforeUpdate`/`BeforeDelete` and its generic registry `Store`).
//!
//! Create and update share one sequence ([`write`]); patch and apply compute the new object
//! and enter it. In order:
//! 1. `check_body`: the body is an object of the addressed type; its namespace is the URL's.
//! 2. `name` (create): the name, or one generated from `generateName`.
//! 3. mutating admission (`Admission::admit`: namespace lifecycle, ...; webhooks would go here).
//! 4. `before_create` / `before_update`: what only the server sets, the kind's
//!    `prepare_for_create`; on update the preconditions and what an update may not change.
//! 5. `validate_metadata`: labels, annotations, finalizers, owners.
//! 6. `decode`: a built-in read by its upstream definition, a custom resource pruned by its
//!    schema; unknown fields answered as `fieldValidation` asks.
//! 7. `defaults` (the kind's `SetDefaults`, and `generate` on create).
//! 8. `validate`: the kind's validation, and `validate_update` on update.
//! 9. `allocate`: numbers shared by the kind's objects (cluster IPs, node ports).
//! 10. validating admission (`Admission::validate`; CEL rules and webhooks would go here).
//! 11. `canonicalize`: the kind's last change.
//! 12. `track_generation` and `record_managers` (`managedFields`).
//! 13. `commit`: unchanged writes store nothing, a deleted object without finalizers goes,
//!     dry runs stop; then the store and the kind's after-commit hook.

mod delete;
mod patch;
mod scale;
mod stages;

use std::sync::Arc;

use serde_json::{Value, json};

pub(crate) use self::delete::{delete, delete_collection};
pub(crate) use self::patch::patch;
use super::admission::Operation;
use super::cluster::Cluster;
use super::object;
use super::read::existing;
use super::request::{Target, WriteOptions};
use super::status::ApiError;
use super::strategy::Answering;

/// How a write records field ownership.
enum Ownership<'a> {
    /// An ordinary write: the manager takes what it changed.
    Update(&'a str),
    /// Server-side apply already computed `managedFields`.
    Applied,
}

/// POST: a new object.
pub(crate) fn create(
    cluster: &mut Cluster,
    t: &Target,
    body: Value,
    opts: &WriteOptions,
) -> Result<(u16, Value), ApiError> {
    if t.subresource.is_some() {
        return Err(ApiError::method_not_allowed());
    }
    write(cluster, t, None, body, opts, &Ownership::Update(&opts.manager))
}

/// PUT: the object replaced (or its status, or its scale).
pub(crate) fn update(
    cluster: &mut Cluster,
    t: &Target,
    body: Value,
    opts: &WriteOptions,
) -> Result<(u16, Value), ApiError> {
    if t.subresource.as_deref() == Some("scale") {
        return scale::update(cluster, t, &body, opts);
    }
    let old = existing(&cluster.store, t)?;
    // A PUT's uid is a precondition, checked before anything else (the registry's
    // GuaranteedUpdate); a patch that changes it fails validation instead (`before_update`).
    let body_uid = object::uid(&body);
    if !body_uid.is_empty() && body_uid != object::uid(&old) {
        return Err(delete::precondition_failed(t, "UID", body_uid, object::uid(&old)));
    }
    write(cluster, t, Some(&old), body, opts, &Ownership::Update(&opts.manager))
}

/// A create of a resource that is answered, never stored (the reviews): `None` for others.
pub(crate) fn answer(t: &Target, review: &Value, context: &Answering<'_>) -> Option<Result<Value, ApiError>> {
    let status = match t.strategy().answer(review, context)? {
        Ok(status) => status,
        Err(refused) => return Some(Err(refused)),
    };
    let mut review = review.clone();
    review["apiVersion"] = json!(t.rt.api_version(&t.version));
    review["kind"] = json!(t.rt.kind);
    if review.get("metadata").is_none_or(|m| !m.is_object()) {
        review["metadata"] = json!({});
    }
    review["metadata"]["creationTimestamp"] = Value::Null;
    review["status"] = status;
    Some(Ok(review))
}

/// The sequence create (`old` is `None`) and update share; see the module documentation.
fn write(
    cluster: &mut Cluster,
    t: &Target,
    old: Option<&Arc<Value>>,
    body: Value,
    opts: &WriteOptions,
    ownership: &Ownership<'_>,
) -> Result<(u16, Value), ApiError> {
    let mut new = stages::check_body(t, body)?;
    let operation = if old.is_some() { Operation::Update } else { Operation::Create };
    if operation == Operation::Create {
        stages::name(t, &mut new)?;
    }
    stages::admit(cluster, t, old, &mut new, opts)?;
    match old {
        None => stages::before_create(&cluster.store, t, &mut new)?,
        Some(old) => stages::before_update(t, old, &mut new)?,
    }
    stages::validate_metadata(t, &new)?;
    let mut new = stages::decode(t, new, opts)?;
    stages::defaults(t, operation, &mut new);
    stages::validate(t, old, &new)?;
    stages::allocate(cluster, t, old, &mut new)?;
    stages::admit_validated(cluster, t, old, &new, opts)?;
    t.strategy().canonicalize(&mut new);
    stages::track_generation(t, old, &mut new);
    if let Ownership::Update(manager) = ownership {
        stages::record_managers(t, old, &mut new, manager);
    }
    Ok(stages::commit(cluster, t, old, new, opts))
}
