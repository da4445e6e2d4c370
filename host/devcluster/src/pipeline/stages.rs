//! The stages of the write pipeline, each one step of the real API server's order (see the
//! module documentation of `pipeline`).

use serde_json::{Value, json};

use super::{Answer, Old};
use crate::admission::{Attributes, Operation};
use crate::apply::{self, Request};
use crate::cluster::Cluster;
use crate::metadata;
use crate::names;
use crate::object;
use crate::request::{FieldValidation, Target, WriteOptions};
use crate::resource::ResourceType;
use crate::status::{ApiError, Cause};
use crate::store::Store;

/// Refuses a body that is not an object of the addressed type, and gives it the type's
/// `apiVersion` and `kind` and the URL's namespace.
pub(super) fn check_body(t: &Target, mut new: Value) -> Result<Value, ApiError> {
    let rt = &t.rt;
    if !new.is_object() {
        return Err(ApiError::bad_request("the request body must be a JSON object"));
    }
    check_type(rt, &t.version, &new)?;
    new["apiVersion"] = json!(rt.api_version(&t.version));
    new["kind"] = json!(rt.kind);
    if new.get("metadata").is_some_and(|m| !m.is_object() && !m.is_null()) {
        return Err(ApiError::bad_request("metadata must be an object"));
    }
    let body_ns = object::namespace(&new).to_string();
    if rt.namespaced {
        if !body_ns.is_empty() && body_ns != t.ns() {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        object::set_meta(&mut new, "namespace", json!(t.ns()));
    } else {
        object::remove_meta(&mut new, "namespace");
    }
    Ok(new)
}

/// Refuses a body whose `apiVersion`/`kind` name another type.
fn check_type(rt: &ResourceType, version: &str, obj: &Value) -> Result<(), ApiError> {
    let given_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or_default();
    let given_kind = obj.get("kind").and_then(Value::as_str).unwrap_or_default();
    let version_ok = given_version.is_empty()
        || given_version == rt.api_version(version)
        || rt.versions.iter().any(|v| rt.api_version(&v.name) == given_version);
    if !version_ok || (!given_kind.is_empty() && given_kind != rt.kind) {
        return Err(ApiError::bad_request(format!(
            "the object provided is unrecognized (must be of type {}): {given_kind} in version {given_version:?}",
            rt.kind
        )));
    }
    Ok(())
}

/// A new object's name: the one given, or one generated from `generateName`.
pub(super) fn name(t: &Target, new: &mut Value) -> Result<(), ApiError> {
    if !object::name(new).is_empty() {
        return Ok(());
    }
    let prefix = object::meta_str(new, "generateName").to_string();
    if prefix.is_empty() {
        return Err(ApiError::invalid(
            &t.rt,
            "",
            &[Cause::new("FieldValueRequired", "metadata.name", "Required value: name or generateName is required")],
        ));
    }
    object::set_meta(new, "name", json!(names::generated_name(&prefix)));
    Ok(())
}

/// The options of the operation performed, as admission webhooks see them (`CreateOptions`,
/// `UpdateOptions`, `DeleteOptions` of `meta.k8s.io/v1`): what the request asked for.
pub(crate) fn options(operation: Operation, opts: &WriteOptions) -> Value {
    let kind = match operation {
        Operation::Create => "CreateOptions",
        Operation::Update => "UpdateOptions",
        Operation::Delete => "DeleteOptions",
    };
    let mut options = json!({ "kind": kind, "apiVersion": "meta.k8s.io/v1" });
    if opts.dry_run {
        options["dryRun"] = json!(["All"]);
    }
    if opts.explicit_manager {
        options["fieldManager"] = json!(opts.manager);
    }
    match opts.validation {
        FieldValidation::Strict => options["fieldValidation"] = json!("Strict"),
        FieldValidation::Ignore => options["fieldValidation"] = json!("Ignore"),
        FieldValidation::Warn => {}
    }
    options
}

/// What admission knows of a write to `t` of the object `name`.
pub(super) fn attributes<'a>(
    t: &'a Target,
    operation: Operation,
    name: &'a str,
    old: Option<&'a Value>,
    opts: &'a WriteOptions,
    options: &'a Value,
) -> Attributes<'a> {
    Attributes {
        operation,
        resource: &t.rt,
        version: &t.version,
        subresource: t.subresource.as_deref(),
        namespace: t.ns(),
        name,
        old,
        user: &opts.user,
        dry_run: opts.dry_run,
        options,
        warnings: &opts.warnings,
    }
}

/// The in-tree mutating steps of admission.
pub(super) fn admit(
    cluster: &Cluster,
    t: &Target,
    old: Option<&Old>,
    new: &mut Value,
    opts: &WriteOptions,
    options: &Value,
) -> Result<(), ApiError> {
    let name = object::name(new).to_string();
    let operation = if old.is_some() { Operation::Update } else { Operation::Create };
    let a = attributes(t, operation, &name, old.map(|o| &o.view), opts, options);
    cluster.admission.admit(&a, new, cluster)
}

/// The in-tree validating steps of admission, once the object is valid.
pub(super) fn admit_validated(
    cluster: &Cluster,
    t: &Target,
    old: Option<&Old>,
    new: &Value,
    opts: &WriteOptions,
    options: &Value,
) -> Result<(), ApiError> {
    let operation = if old.is_some() { Operation::Update } else { Operation::Create };
    let a = attributes(t, operation, object::name(new), old.map(|o| &o.view), opts, options);
    cluster.admission.validate(&a, new, cluster)
}

/// The metadata only the server sets, which webhooks cannot change.
const SERVER_SET: [&str; 5] =
    ["uid", "creationTimestamp", "generation", "deletionTimestamp", "deletionGracePeriodSeconds"];

/// The server's own metadata of `new`, kept aside while webhooks see it as kube-apiserver
/// shows it to them: a new object without it (admission comes before `BeforeCreate`), an
/// updated one with the stored object's `resourceVersion`.
pub(super) fn hide_server_fields(new: &mut Value, old: Option<&Old>) -> Vec<(&'static str, Option<Value>)> {
    let kept = SERVER_SET.iter().map(|f| (*f, new.pointer(&format!("/metadata/{f}")).cloned())).collect();
    match old {
        None => SERVER_SET.iter().for_each(|f| object::remove_meta(new, f)),
        Some(old) => object::set_meta(new, "resourceVersion", json!(object::meta_str(&old.stored, "resourceVersion"))),
    }
    kept
}

/// Puts back what [`hide_server_fields`] kept aside, whatever the webhooks did to it.
pub(super) fn restore_server_fields(new: &mut Value, kept: Vec<(&'static str, Option<Value>)>) {
    for (field, value) in kept {
        match value {
            Some(v) => object::set_meta(new, field, v),
            None => object::remove_meta(new, field),
        }
    }
    object::remove_meta(new, "resourceVersion");
}

/// `BeforeCreate`: the name's rule, no object stored under it, the fields only the server
/// sets, and the kind's `prepare_for_create`.
pub(super) fn before_create(store: &Store, t: &Target, new: &mut Value) -> Result<(), ApiError> {
    let rt = &t.rt;
    let name = object::name(new).to_string();
    if let Some(cause) = names::check_name(t.strategy().name_rule(), &name) {
        return Err(ApiError::invalid(rt, &name, &[cause]));
    }
    if store.get(&t.gr(), t.ns(), &name).is_some() {
        return Err(ApiError::already_exists(&rt.group, &rt.plural, &name));
    }
    for field in ["uid", "resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink", "generation"]
    {
        object::remove_meta(new, field);
    }
    object::set_meta(new, "uid", json!(uuid::Uuid::new_v4().to_string()));
    object::set_meta(new, "creationTimestamp", json!(object::now()));
    if t.strategy().tracks_generation() {
        object::set_meta(new, "generation", json!(1));
    }
    t.strategy().prepare_for_create(new);
    Ok(())
}

/// `BeforeUpdate`: name, resourceVersion and uid preconditions, the status kept or taken from
/// the status endpoint, the fields only the server sets carried over from `old`, and no new
/// finalizer on an object being deleted.
pub(super) fn before_update(t: &Target, old: &Old, new: &mut Value) -> Result<(), ApiError> {
    let rt = &t.rt;
    let old = &old.view;
    let name = t.name();
    let body_name = object::name(new);
    if !body_name.is_empty() && body_name != name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({name})"
        )));
    }
    object::set_meta(new, "name", json!(name));
    let body_rv = object::meta_str(new, "resourceVersion");
    if !body_rv.is_empty() && body_rv != object::meta_str(old, "resourceVersion") {
        return Err(ApiError::modified(&rt.group, &rt.plural, name));
    }
    // BeforeUpdate keeps a uid the body gives, and ValidateObjectMetaUpdate refuses a
    // changed one: what an apply carrying a made-up uid gets on an existing object (and
    // on a missing one, a create, the server's own uid).
    let body_uid = object::uid(new);
    if !body_uid.is_empty() && body_uid != object::uid(old) {
        return Err(ApiError::invalid(
            rt,
            name,
            &[Cause::new(
                "FieldValueInvalid",
                "metadata.uid",
                format!("Invalid value: \"{body_uid}\": field is immutable"),
            )],
        ));
    }
    if t.subresource.as_deref() == Some("status") {
        let status = new.get("status").cloned();
        let managed = new.get("metadata").and_then(|m| m.get("managedFields")).cloned();
        *new = old.clone();
        set_status(new, status);
        if let Some(m) = managed {
            object::set_meta(new, "managedFields", m);
        }
    } else if let Some(owned) = t.subresource.as_deref().and_then(|sub| t.strategy().subresource_fields(sub)) {
        // A subresource that writes part of the object: that part from the body, the rest
        // as stored.
        let mut merged = old.clone();
        for pointer in owned {
            set_at(&mut merged, pointer, new.pointer(pointer).cloned());
        }
        if let Some(m) = new.get("metadata").and_then(|m| m.get("managedFields")).cloned() {
            object::set_meta(&mut merged, "managedFields", m);
        }
        *new = merged;
    } else if t.status_separate() {
        set_status(new, old.get("status").cloned());
    }
    for field in ["uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation"] {
        match old.get("metadata").and_then(|m| m.get(field)) {
            Some(v) => object::set_meta(new, field, v.clone()),
            None => object::remove_meta(new, field),
        }
    }
    object::remove_meta(new, "resourceVersion");
    if object::is_deleting(old) {
        let before = object::finalizers(old);
        let added: Vec<String> = object::finalizers(new).into_iter().filter(|f| !before.contains(f)).collect();
        if !added.is_empty() {
            return Err(ApiError::invalid(
                rt,
                name,
                &[Cause::new(
                    "FieldForbidden",
                    "metadata.finalizers",
                    format!(
                        "Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers {added:?}"
                    ),
                )],
            ));
        }
    }
    Ok(())
}

/// Sets (or, for `None`, removes) the value at a JSON pointer of `obj`, making the objects
/// above it when absent.
fn set_at(obj: &mut Value, pointer: &str, value: Option<Value>) {
    let Some((parent, key)) = pointer.rsplit_once('/') else {
        return;
    };
    if obj.pointer(parent).is_none_or(|p| !p.is_object()) {
        if value.is_none() {
            return;
        }
        set_at(obj, parent, Some(json!({})));
    }
    if let Some(map) = obj.pointer_mut(parent).and_then(Value::as_object_mut) {
        match value {
            Some(v) => {
                map.insert(key.to_string(), v);
            }
            None => {
                map.remove(key);
            }
        }
    }
}

/// Sets (or, for `None`, removes) an object's `status`.
fn set_status(obj: &mut Value, status: Option<Value>) {
    match status {
        Some(s) => obj["status"] = s,
        None => {
            if let Some(map) = obj.as_object_mut() {
                map.remove("status");
            }
        }
    }
}

/// Labels, annotations, finalizers and owner references, as every kind checks them.
pub(super) fn validate_metadata(t: &Target, new: &Value) -> Result<(), ApiError> {
    let causes = metadata::validate(new);
    if causes.is_empty() { Ok(()) } else { Err(ApiError::invalid(&t.rt, object::name(new), &causes)) }
}

/// Reads the object as its type (the codec of the real server): a built-in by its upstream
/// definition, fields the version's schema lacks pruned; unknown fields are dropped, warned
/// about or refused, as `fieldValidation` asks.
pub(super) fn decode(t: &Target, new: Value, opts: &WriteOptions) -> Result<Value, ApiError> {
    let (new, unknown) = t.rt.decode(&t.version, new).map_err(|e| {
        ApiError::bad_request(format!(
            "{kind} in version {version:?} cannot be handled as a {kind}: {e}",
            kind = t.rt.kind,
            version = t.version
        ))
    })?;
    check_unknown(t, opts, &unknown)?;
    Ok(new)
}

/// Field validation of unknown fields: a 400 (Strict) or warnings (Warn), worded like the real server.
pub(super) fn check_unknown(t: &Target, opts: &WriteOptions, unknown: &[String]) -> Result<(), ApiError> {
    if unknown.is_empty() {
        return Ok(());
    }
    match opts.validation {
        FieldValidation::Ignore => return Ok(()),
        FieldValidation::Warn => {
            let mut warnings = opts.warnings.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            warnings.extend(unknown.iter().map(|u| format!("unknown field {u:?}")));
            return Ok(());
        }
        FieldValidation::Strict => {}
    }
    let listed: Vec<String> = unknown.iter().map(|u| format!("unknown field {u:?}")).collect();
    Err(ApiError::bad_request(format!(
        "{kind} in version {version:?} cannot be handled as a {kind}: strict decoding error: {}",
        listed.join(", "),
        kind = t.rt.kind,
        version = t.version,
    )))
}

/// The kind's defaults, and on create what the server generates once they are set.
pub(super) fn defaults(t: &Target, operation: Operation, new: &mut Value) {
    t.strategy().defaults(new);
    if operation == Operation::Create {
        t.strategy().generate(new);
    }
}

/// The kind's validation, on update what an update may not change, and the rules that
/// compare with the stored object.
pub(super) fn validate(t: &Target, old: Option<&Old>, new: &Value) -> Result<(), ApiError> {
    let strategy = t.strategy();
    // A subresource that writes part of the object has checks of its own (its REST storage's
    // strategy), in place of the kind's.
    if let (Some(sub), Some(old)) = (t.subresource.as_deref(), old)
        && strategy.subresource_fields(sub).is_some()
    {
        let causes = strategy.validate_subresource(sub, &old.view, new);
        return if causes.is_empty() { Ok(()) } else { Err(ApiError::invalid(&t.rt, object::name(new), &causes)) };
    }
    let mut causes = strategy.validate(new);
    if let Some(old) = old {
        causes.extend(strategy.validate_update(&old.view, new));
    }
    causes.extend(t.strategy().validate_rules(old.map(|o| &o.view), new));
    if causes.is_empty() { Ok(()) } else { Err(ApiError::invalid(&t.rt, object::name(new), &causes)) }
}

/// What the object is given of the numbers its kind's objects share.
pub(super) fn allocate(cluster: &Cluster, t: &Target, old: Option<&Old>, new: &mut Value) -> Result<(), ApiError> {
    let taken = cluster.store.allocations(&t.gr());
    t.strategy()
        .allocate(taken, old.map(|o| &*o.stored), new)
        .map_err(|cause| ApiError::invalid(&t.rt, object::name(new), &[cause]))
}

/// Bumps `metadata.generation` when anything but metadata (and status, when it is a
/// subresource) changed, for kinds that keep it.
pub(super) fn track_generation(t: &Target, old: Option<&Old>, new: &mut Value) {
    if let Some(old) = old
        && t.strategy().tracks_generation()
        && spec_changed(&old.view, new, t.status_separate())
    {
        object::set_meta(new, "generation", json!(object::generation(&old.view) + 1));
    }
}

/// Whether anything but metadata (and status, when served separately) differs.
fn spec_changed(old: &Value, new: &Value, status_separate: bool) -> bool {
    let strip = |v: &Value| {
        let mut m = v.as_object().cloned().unwrap_or_default();
        m.remove("metadata");
        m.remove("apiVersion");
        m.remove("kind");
        if status_separate {
            m.remove("status");
        }
        m
    };
    strip(old) != strip(new)
}

/// `managedFields` of an ordinary write: `manager` owns what it changed.
pub(super) fn record_managers(t: &Target, old: Option<&Old>, new: &mut Value, manager: &str) {
    let api_version = t.rt.api_version(&t.version);
    let req = Request { manager, api_version: &api_version, scope: t.scope(), schema: t.shape() };
    apply::record_update(old.map(|o| &o.view), new, &req);
}

/// Stores the object (`stored`: in the storage version) and runs the kind's after-commit hook;
/// an update that changes nothing stores nothing, an update that leaves a deleted object
/// without finalizers removes it, and a dry run stops short of both.
pub(super) fn commit(
    cluster: &mut Cluster,
    t: &Target,
    old: Option<&Old>,
    mut new: Value,
    stored: Value,
    opts: &WriteOptions,
) -> Answer {
    if let Some(old) = old {
        if object::without_volatile(&old.view) == object::without_volatile(&new)
            && old.view.pointer("/metadata/managedFields") == new.pointer("/metadata/managedFields")
        {
            return Answer::Shown(200, old.view.clone());
        }
        if object::is_deleting(&new) && object::finalizers(&new).is_empty() {
            if opts.dry_run {
                return Answer::Shown(200, new);
            }
            let name = object::name(&new).to_string();
            return match cluster.remove(&t.gr(), t.ns(), &name) {
                Some(gone) => Answer::Stored(200, gone),
                None => Answer::Shown(200, new),
            };
        }
    }
    let code = if old.is_some() { 200 } else { 201 };
    if opts.dry_run {
        if let Some(old) = old {
            object::set_meta(&mut new, "resourceVersion", json!(object::meta_str(&old.stored, "resourceVersion")));
        }
        return Answer::Shown(code, new);
    }
    // Stored in the storage version, pruned by its schema (`status.storedVersions` lists it).
    let stored = cluster.put(&t.gr(), stored);
    cluster.apply(t.strategy().after_write(&stored));
    Answer::Stored(code, stored)
}
