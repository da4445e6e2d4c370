//! The write pipeline: create, update, patch, server-side apply and delete, as fixed sequences
//! of named stages that ask the resource's strategy at set points (kube-apiserver's
//! `rest.BeforeCreate`/`BeforeUpdate`/`BeforeDelete` and its generic registry `Store`).
//!
//! Create and update share one sequence ([`write`]); patch, apply and scale compute the new
//! object from the stored one and enter it. In order:
//! 1. `check_body`: the body is an object of the addressed type; its namespace is the URL's.
//! 2. `name` (create): the name, or one generated from `generateName`.
//! 3. in-tree mutating admission (`Admission::admit`: namespace lifecycle, ...).
//! 4. `before_create` / `before_update`: what only the server sets, the kind's
//!    `prepare_for_create`; on update the preconditions and what an update may not change.
//! 5. `validate_metadata`: labels, annotations, finalizers, owners.
//! 6. `decode`: a built-in read by its upstream definition, a custom resource pruned by its
//!    schema; unknown fields answered as `fieldValidation` asks.
//! 7. `defaults` (the kind's `SetDefaults`, and `generate` on create).
//! 8. mutating admission webhooks, each patch read and defaulted again.
//! 9. `validate`: the kind's validation, and `validate_update` on update.
//! 10. `allocate`: numbers shared by the kind's objects (cluster IPs, node ports).
//! 11. in-tree validating admission (CEL policies, ...).
//! 12. `canonicalize`: the kind's last change.
//! 13. `track_generation` and `record_managers` (`managedFields`).
//! 14. validating admission webhooks, and the conversion to the storage version.
//! 15. `commit`: unchanged writes store nothing, a deleted object without finalizers goes,
//!     dry runs stop; then the store and the kind's after-commit hook.
//!
//! The cluster's lock is held for the stages, never across a call out of the process (a
//! webhook, a conversion webhook): the write takes the lock again after one, and starts over
//! if the stored object changed meanwhile, as `GuaranteedUpdate` retries on etcd's conflict.
//! A webhook served by this process, or one that writes to the cluster, therefore never waits
//! on the write that calls it.

mod act;
mod delete;
mod patch;
mod scale;
mod stages;

use std::sync::Arc;

use serde_json::{Value, json};

pub(crate) use self::act::{act, connect};
pub(crate) use self::delete::{Deleter, delete, delete_collection, delete_local};
pub(crate) use self::patch::{PatchType, apply_local, patch, patch_type};
use super::admission::{Attributes, Calls, Operation, Phase};
use super::cluster::Cluster;
use super::conversion::Conversion;
use super::object;
use super::read::{present, show};
use super::request::{Target, WriteOptions};
use super::state::Shared;
use super::status::ApiError;
use super::strategy::Answering;

/// How many times a write starts over because the stored object changed while it called out.
const ATTEMPTS: usize = 16;

/// How a write records field ownership.
enum Ownership<'a> {
    /// An ordinary write: the manager takes what it changed.
    Update(&'a str),
    /// Server-side apply already computed `managedFields`.
    Applied,
}

/// What a write expects of the stored object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// None (a create).
    Absent,
    /// One (an update, a patch): 404 without it.
    Existing,
    /// Either (an apply, which creates what is missing).
    Any,
}

/// What a verb makes of the stored object, as the client sees it: the object to write.
type Make<'a> = dyn Fn(Option<&Value>) -> Result<Value, ApiError> + Send + Sync + 'a;

/// The stored object a write starts from, and the same in the version the request addresses.
pub(crate) struct Old {
    pub stored: Arc<Value>,
    pub view: Value,
}

/// A write's answer, before it is shown in the version the request addresses.
pub(crate) enum Answer {
    /// The object as stored (its storage version).
    Stored(u16, Arc<Value>),
    /// An object already in the request's version, or a `Status`.
    Shown(u16, Value),
}

impl Answer {
    /// The answer in the version `t` addresses.
    async fn show(self, t: &Target, conversion: &Conversion) -> Result<(u16, Value), ApiError> {
        match self {
            Answer::Shown(code, value) => Ok((code, value)),
            Answer::Stored(code, stored) => Ok((code, show(conversion, t, &stored).await?)),
        }
    }
}

/// POST: a new object.
pub(crate) async fn create(
    shared: &Shared,
    t: &Target,
    body: Value,
    opts: &WriteOptions,
) -> Result<(u16, Value), ApiError> {
    if t.subresource.is_some() {
        return Err(ApiError::method_not_allowed());
    }
    let ownership = Ownership::Update(&opts.manager);
    write(shared, Write { t, expect: Expect::Absent, make: &|_| Ok(body.clone()), opts, ownership: &ownership }).await
}

/// The server's own create (what a new cluster holds, what its controllers write): the same
/// stages under the lock the caller holds, no webhooks.
pub(crate) fn create_local(
    cluster: &mut Cluster,
    t: &Target,
    body: &Value,
    opts: &WriteOptions,
) -> Result<(u16, Value), ApiError> {
    let ownership = Ownership::Update(&opts.manager);
    write_local(cluster, Write { t, expect: Expect::Absent, make: &|_| Ok(body.clone()), opts, ownership: &ownership })
}

/// The server's own update (what its controllers write), as [`create_local`].
pub(crate) fn update_local(
    cluster: &mut Cluster,
    t: &Target,
    body: &Value,
    opts: &WriteOptions,
) -> Result<(u16, Value), ApiError> {
    let make = replacing(t, body);
    let ownership = Ownership::Update(&opts.manager);
    write_local(cluster, Write { t, expect: Expect::Existing, make: &make, opts, ownership: &ownership })
}

/// The stages of [`write`] in one stretch under the lock the server holds for its own writes
/// (its controllers, its manifests, a new cluster's objects): no admission webhook is called
/// and versions convert without a conversion webhook.
fn write_local(cluster: &mut Cluster, write: Write<'_>) -> Result<(u16, Value), ApiError> {
    let Write { t, expect, make, opts, ownership } = write;
    let stored = (expect != Expect::Absent).then(|| cluster.store.get(&t.gr(), t.ns(), t.name())).flatten();
    if expect == Expect::Existing && stored.is_none() {
        return Err(ApiError::not_found(&t.rt.group, &t.rt.plural, t.name()));
    }
    let old = stored.map(|stored| Old { view: present(&t.rt, &t.version, &stored), stored });
    let body = make(old.as_ref().map(|o| &o.view))?;
    let operation = if old.is_some() { Operation::Update } else { Operation::Create };
    let options = stages::options(operation, opts);
    let mut new = prepare(cluster, t, old.as_ref(), body, opts, &options)?;
    check(cluster, t, old.as_ref(), &mut new, opts, &options, ownership)?;
    let stored = super::conversion::relabel(&t.rt, t.rt.storage_version(), &new);
    Ok(match stages::commit(cluster, t, old.as_ref(), new, stored, opts) {
        Answer::Shown(code, value) => (code, value),
        Answer::Stored(code, stored) => (code, present(&t.rt, &t.version, &stored)),
    })
}

/// PUT: the object replaced (or its status, or its scale).
pub(crate) async fn update(
    shared: &Shared,
    t: &Target,
    body: Value,
    opts: &WriteOptions,
) -> Result<(u16, Value), ApiError> {
    if t.subresource.as_deref() == Some("scale") {
        return scale::update(shared, t, &|_| Ok(body.clone()), opts).await;
    }
    let make = replacing(t, &body);
    let ownership = Ownership::Update(&opts.manager);
    write(shared, Write { t, expect: Expect::Existing, make: &make, opts, ownership: &ownership }).await
}

/// What a PUT makes of the stored object: `body`, whose uid, when it has one, is a
/// precondition checked before anything else (the registry's `GuaranteedUpdate`); a patch that
/// changes it fails validation instead (`before_update`).
fn replacing<'a>(
    t: &'a Target,
    body: &'a Value,
) -> impl Fn(Option<&Value>) -> Result<Value, ApiError> + Send + Sync + 'a {
    move |old: Option<&Value>| {
        let old_uid = old.map(object::uid).unwrap_or_default();
        let body_uid = object::uid(body);
        if !body_uid.is_empty() && body_uid != old_uid {
            return Err(delete::precondition_failed(t, "UID", body_uid, old_uid));
        }
        Ok(body.clone())
    }
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

/// The sequence create, update, patch and apply share; see the module documentation.
async fn write(shared: &Shared, write: Write<'_>) -> Result<(u16, Value), ApiError> {
    for _ in 0..ATTEMPTS {
        if let Some(done) = attempt(shared, &write).await? {
            return Ok(done);
        }
    }
    Err(ApiError::modified(&write.t.rt.group, &write.t.rt.plural, write.t.name()))
}

/// Where a pass of [`write`] goes after a stretch under the lock.
enum Next {
    /// Call the mutating webhooks, then take the lock again.
    Mutate(Vec<Box<dyn Calls>>),
    /// Call the validating webhooks (and convert to the storage version), then take the lock
    /// again to store.
    Validate(Vec<Box<dyn Calls>>),
    /// Stored (or refused): show the answer.
    Done(Answer),
    /// The stored object changed while the write called out: start over.
    Again,
}

/// What a write is asked to do: [`write`] for a request, [`write_local`] for the server.
#[derive(Clone, Copy)]
struct Write<'a> {
    t: &'a Target,
    expect: Expect,
    make: &'a Make<'a>,
    opts: &'a WriteOptions,
    ownership: &'a Ownership<'a>,
}

/// One pass of [`write`]; `None` when the stored object changed while it called out.
async fn attempt(shared: &Shared, write: &Write<'_>) -> Result<Option<(u16, Value)>, ApiError> {
    let Write { t, expect, make, opts, ownership } = *write;
    let (stored, conversion) = {
        let cluster = shared.lock();
        let stored = (expect != Expect::Absent).then(|| cluster.store.get(&t.gr(), t.ns(), t.name())).flatten();
        (stored, cluster.conversion(&t.rt))
    };
    if expect == Expect::Existing && stored.is_none() {
        return Err(ApiError::not_found(&t.rt.group, &t.rt.plural, t.name()));
    }
    let old = match stored {
        Some(stored) => Some(Old { view: show(&conversion, t, &stored).await?, stored }),
        None => None,
    };
    let body = make(old.as_ref().map(|o| &o.view))?;
    let operation = if old.is_some() { Operation::Update } else { Operation::Create };
    let options = stages::options(operation, opts);
    let old_view = old.as_ref().map(|o| &o.view);

    // Under the lock as long as nothing calls out: in the common case, the whole write.
    let (mut new, mut next) = {
        let mut cluster = shared.lock();
        if !current(&cluster, t, old.as_ref(), t.name()) {
            return Ok(None);
        }
        let mut new = prepare(&cluster, t, old.as_ref(), body, opts, &options)?;
        let name = object::name(&new).to_string();
        let a = stages::attributes(t, operation, &name, old_view, opts, &options);
        let calls = cluster.admission.prepare(Phase::Mutating, &a, &*cluster);
        let next = if calls.is_empty() {
            check(&mut cluster, t, old.as_ref(), &mut new, opts, &options, ownership)?;
            finish(&mut cluster, t, old.as_ref(), &a, &new, &conversion, opts)
        } else {
            Next::Mutate(calls)
        };
        (new, next)
    };
    let name = object::name(&new).to_string();
    let a = stages::attributes(t, operation, &name, old_view, opts, &options);
    if let Next::Mutate(calls) = &next {
        let kept = stages::hide_server_fields(&mut new, old.as_ref());
        run(calls, &a, Some(&mut new), &conversion).await?;
        stages::restore_server_fields(&mut new, kept);
        next = {
            let mut cluster = shared.lock();
            if current(&cluster, t, old.as_ref(), &name) {
                check(&mut cluster, t, old.as_ref(), &mut new, opts, &options, ownership)?;
                finish(&mut cluster, t, old.as_ref(), &a, &new, &conversion, opts)
            } else {
                Next::Again
            }
        };
    }
    if let Next::Validate(calls) = &next {
        run(calls, &a, Some(&mut new.clone()), &conversion).await?;
        let mut stored = conversion.one(&new, t.rt.storage_version()).await?;
        stored["kind"] = json!(t.rt.kind);
        next = {
            let mut cluster = shared.lock();
            if current(&cluster, t, old.as_ref(), &name) {
                // What was allocated may have been taken meanwhile.
                stages::allocate(&cluster, t, old.as_ref(), &mut new)?;
                Next::Done(stages::commit(&mut cluster, t, old.as_ref(), new, stored, opts))
            } else {
                Next::Again
            }
        };
    }
    match next {
        Next::Done(answer) => answer.show(t, &conversion).await.map(Some),
        _ => Ok(None),
    }
}

/// After the checks: the validating webhooks to call, or, with none and no conversion webhook,
/// the object stored at once.
fn finish(
    cluster: &mut Cluster,
    t: &Target,
    old: Option<&Old>,
    a: &Attributes<'_>,
    new: &Value,
    conversion: &Conversion,
    opts: &WriteOptions,
) -> Next {
    let calls = cluster.admission.prepare(Phase::Validating, a, &*cluster);
    if !calls.is_empty() || conversion.remote() {
        return Next::Validate(calls);
    }
    let stored = super::conversion::relabel(&t.rt, t.rt.storage_version(), new);
    Next::Done(stages::commit(cluster, t, old, new.clone(), stored, opts))
}

/// Runs prepared webhook calls, one set after the other.
async fn run(
    calls: &[Box<dyn Calls>],
    a: &Attributes<'_>,
    mut obj: Option<&mut Value>,
    conversion: &Conversion,
) -> Result<(), ApiError> {
    for call in calls {
        call.run(a, obj.as_deref_mut(), conversion).await?;
    }
    Ok(())
}

/// Whether the stored object is still the one the write started from (`old`), or, for a new
/// object, none is stored under `name`.
fn current(cluster: &Cluster, t: &Target, old: Option<&Old>, name: &str) -> bool {
    let now = cluster.store.get(&t.gr(), t.ns(), name);
    match (old, now) {
        (Some(old), Some(now)) => {
            object::meta_str(&old.stored, "resourceVersion") == object::meta_str(&now, "resourceVersion")
        }
        (None, None) => true,
        _ => false,
    }
}

/// The stages before the mutating webhooks (1 to 7).
fn prepare(
    cluster: &Cluster,
    t: &Target,
    old: Option<&Old>,
    body: Value,
    opts: &WriteOptions,
    options: &Value,
) -> Result<Value, ApiError> {
    let mut new = stages::check_body(t, body)?;
    if old.is_none() {
        stages::name(t, &mut new)?;
    }
    stages::admit(cluster, t, old, &mut new, opts, options)?;
    match old {
        None => stages::before_create(&cluster.store, t, &mut new)?,
        Some(old) => stages::before_update(t, old, &mut new)?,
    }
    stages::validate_metadata(t, &new)?;
    let mut new = stages::decode(t, new, opts)?;
    stages::defaults(t, if old.is_some() { Operation::Update } else { Operation::Create }, &mut new);
    Ok(new)
}

/// The stages after the mutating webhooks, up to the validating ones (9 to 13).
fn check(
    cluster: &mut Cluster,
    t: &Target,
    old: Option<&Old>,
    new: &mut Value,
    opts: &WriteOptions,
    options: &Value,
    ownership: &Ownership<'_>,
) -> Result<(), ApiError> {
    stages::validate(t, old, new)?;
    stages::allocate(cluster, t, old, new)?;
    stages::admit_validated(cluster, t, old, new, opts, options)?;
    t.strategy().canonicalize(new);
    stages::track_generation(t, old, new);
    if let Ownership::Update(manager) = ownership {
        stages::record_managers(t, old, new, manager);
    }
    Ok(())
}
