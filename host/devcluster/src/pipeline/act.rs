//! The subresources that act on an object rather than make one (a create of a pod's
//! `binding` or `eviction`) and those that stream from where it runs (`log`, `exec`...):
//! the generic half of kube-apiserver's subresource storage, the kind's half being its
//! strategy's `act` and `connect`. An action reads and writes through [`Objects`], which
//! these stages give it over the cluster.

use std::sync::Arc;

use serde_json::{Value, json};

use super::delete::delete_local;
use super::{run, stages};
use crate::admission::{Operation, Phase};
use crate::cluster::Cluster;
use crate::read::existing;
use crate::request::{DeleteOptions, Target, WriteOptions};
use crate::resource::GroupResource;
use crate::state::Shared;
use crate::status::ApiError;
use crate::strategy::{Action, Answering, Objects};

/// A create on the subresource `t` names, past admission as any create (a `CREATE` of the
/// subresource, whose object is the body: in-tree mutating steps, mutating webhooks, in-tree
/// validating steps, validating webhooks, the webhooks called with the cluster unlocked): the
/// kind's answer (`serviceaccounts/token`), 201 with what it made, or else its action,
/// answered with 201 and its `Status` (whose `code` is 201 when the action gives none, as the
/// create handler fills it).
pub(crate) async fn act(
    shared: &Shared,
    t: &Target,
    mut body: Value,
    query: &[(String, String)],
    opts: &WriteOptions,
) -> Result<(u16, Value), ApiError> {
    let options = stages::options(Operation::Create, opts);
    let a = stages::attributes(t, Operation::Create, t.name(), None, opts, &options);
    let (mutating, conversion) = {
        let cluster = shared.lock();
        existing(&cluster.store, t)?;
        cluster.admission.admit(&a, &mut body, &*cluster)?;
        (cluster.admission.prepare(Phase::Mutating, &a, &*cluster), cluster.conversion(&t.rt))
    };
    run(&mutating, &a, Some(&mut body), &conversion).await?;
    let validating = {
        let cluster = shared.lock();
        cluster.admission.validate(&a, &body, &*cluster)?;
        cluster.admission.prepare(Phase::Validating, &a, &*cluster)
    };
    run(&validating, &a, Some(&mut body.clone()), &conversion).await?;
    let mut cluster = shared.lock();
    // The object may have gone while the webhooks ran.
    let parent = existing(&cluster.store, t)?;
    let strategy = t.rt.storage();
    let subresource = t.subresource.as_deref().unwrap_or_default();
    let context =
        Answering { user: &opts.user, store: &cluster.store, signer: &shared.credentials.signer, namespace: t.ns() };
    if let Some(answer) = strategy.answer_subresource(subresource, &parent, &body, &context) {
        return answer.map(|made| (201, made));
    }
    let action = action(t, &body, query, opts.dry_run);
    let mut objects = Acting { cluster: &mut cluster, dry_run: opts.dry_run };
    let mut answer = strategy.act(&action, &mut objects).ok_or_else(ApiError::method_not_allowed)??;
    if answer.get("code").is_none_or(|c| c.as_u64() == Some(0)) {
        answer["code"] = json!(201);
    }
    Ok((201, answer))
}

/// A stream from where the object `t` names runs: `None` when the subresource is no stream;
/// `Some(Ok)` when there is nothing to stream. The object is read first: a missing one is a
/// 404 whatever its subresource.
pub(crate) fn connect(cluster: &Cluster, t: &Target, query: &[(String, String)]) -> Option<Result<(), ApiError>> {
    let obj = match existing(&cluster.store, t) {
        Ok(obj) => obj,
        Err(missing) => return Some(Err(missing)),
    };
    let stream = action(t, &Value::Null, query, query.iter().any(|(k, _)| k == "dryRun"));
    t.rt.storage().connect(&stream, &obj, &Reading { cluster })
}

fn action<'a>(t: &'a Target, body: &'a Value, query: &'a [(String, String)], dry_run: bool) -> Action<'a> {
    Action {
        subresource: t.subresource.as_deref().unwrap_or_default(),
        namespace: t.ns(),
        name: t.name(),
        body,
        query,
        dry_run,
    }
}

/// The cluster as an action sees it.
struct Acting<'a> {
    cluster: &'a mut Cluster,
    dry_run: bool,
}

impl Objects for Acting<'_> {
    fn get(&self, resource: &GroupResource, namespace: &str, name: &str) -> Option<Arc<Value>> {
        self.cluster.store.get(resource, namespace, name)
    }

    fn list(&self, resource: &GroupResource, namespace: &str) -> Vec<Arc<Value>> {
        self.cluster.store.list(resource, Some(namespace))
    }

    fn put(&mut self, resource: &GroupResource, object: Value) -> Arc<Value> {
        if self.dry_run { Arc::new(object) } else { self.cluster.put(resource, object) }
    }

    fn delete(
        &mut self,
        resource: &GroupResource,
        namespace: &str,
        name: &str,
        options: &Value,
    ) -> Result<(), ApiError> {
        let rt = self.cluster.resource(resource).ok_or_else(|| ApiError::not_found(&resource.0, &resource.1, name))?;
        let text = |pointer: &str| options.pointer(pointer).and_then(Value::as_str).map(String::from);
        let orphan = options.get("orphanDependents").and_then(Value::as_bool);
        let opts = DeleteOptions {
            propagation: text("/propagationPolicy")
                .or_else(|| orphan.map(|o| if o { "Orphan" } else { "Background" }.to_string())),
            precondition_uid: text("/preconditions/uid"),
            precondition_rv: text("/preconditions/resourceVersion"),
            dry_run: self.dry_run || options.get("dryRun").and_then(Value::as_array).is_some_and(|d| !d.is_empty()),
        };
        // As the eviction's storage deletes the pod: no admission of the delete.
        delete_local(self.cluster, &Target::stored(rt, namespace, name), &opts).map(|_| ())
    }
}

/// The cluster as a stream sees it: read only.
struct Reading<'a> {
    cluster: &'a Cluster,
}

impl Objects for Reading<'_> {
    fn get(&self, resource: &GroupResource, namespace: &str, name: &str) -> Option<Arc<Value>> {
        self.cluster.store.get(resource, namespace, name)
    }

    fn list(&self, resource: &GroupResource, namespace: &str) -> Vec<Arc<Value>> {
        self.cluster.store.list(resource, Some(namespace))
    }

    fn put(&mut self, _resource: &GroupResource, object: Value) -> Arc<Value> {
        Arc::new(object)
    }

    fn delete(&mut self, _: &GroupResource, _: &str, name: &str, _: &Value) -> Result<(), ApiError> {
        Err(ApiError::internal(format!("a stream may not delete {name}")))
    }
}
