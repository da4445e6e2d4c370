//! What one reconcile writes, decided before anything is written: the plugin's
//! validated answer against what the caches observe. Which children to apply, which to
//! create, which are held already or kept as they are, which to delete (those the answer
//! omits, but for the kinds the manifest keeps unlisted, and those it names by uid); the status;
//! the parent's labels and annotations; the finalizer. Pure, so every case is a unit
//! test without an API server; [`super::write`] carries a [`Plan`] out.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
use kube::ResourceExt;
use kube::api::DynamicObject;
use kube::discovery::ApiResource;
use serde_json::{Value, json};

use super::controlled::controller_uid;
use super::finalizer::{self, Phase};
use crate::coordination::shard::{BUCKET_LABEL, Bucket};
use crate::events::Event;
use crate::plugin::view::APPLIED_HASH;
use crate::plugin::{KindRef, Manifest, Response};

/// Everything one reconcile writes, in the order it is written.
#[derive(Debug)]
pub(crate) struct Plan {
    /// The parent's finalizers, when they change: an addition is written first, a
    /// removal last.
    pub(crate) finalizers: Option<finalizer::Change>,
    /// Each desired child, in the plugin's order.
    pub(crate) children: Vec<Child>,
    /// Observed children no longer desired: deleted, but for those of the kinds the
    /// manifest keeps unlisted (`keep_unlisted`), which stay as they are unless the
    /// answer names them in `delete`.
    pub(crate) prune: Vec<(KindRef, Arc<DynamicObject>)>,
    /// The parent's status; `None` when the plugin gave none.
    pub(crate) status: Option<Write<Value>>,
    /// The parent's labels and annotations this host sets; `None` while finalizing.
    pub(crate) metadata: Option<Write<Metadata>>,
    /// The plugin's events, recorded on the parent after the writes (before the
    /// finalizer's removal), followed by the children's warnings.
    pub(crate) events: Vec<Event>,
    /// When to reconcile again if nothing changes before (`None`: only on a change).
    pub(crate) requeue: Option<Duration>,
}

/// One write of a plan, or the knowledge that the cluster holds it already.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Write<T> {
    Write(T),
    /// The cluster holds it (or a write of it is on its way): no request.
    Held,
}

/// The labels and annotations the plugin wants on its parent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Metadata {
    pub(crate) labels: BTreeMap<String, String>,
    pub(crate) annotations: BTreeMap<String, String>,
}

/// One desired child and what becomes of it.
#[derive(Clone, Debug)]
pub(crate) struct Child {
    pub(crate) kind: KindRef,
    pub(crate) name: String,
    pub(crate) action: Action,
    /// A Warning recorded on the parent about this child.
    pub(crate) warning: Option<Event>,
}

/// What the writer does with one desired child.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Action {
    /// The cached child holds every field the host would apply: no write.
    Held,
    /// Returned with the uid of an observed child (`Response::keep`): left as it is.
    Kept,
    /// Another controller holds an object of its name: left alone.
    Conflict,
    /// The cached child differs: server-side apply of this object.
    Apply(Value),
    /// The cache has not seen it: created only if no object of its name exists, and
    /// compared ([`compare`]) with the one that does.
    Create(Value),
}

/// What the host observes of one parent, from its caches.
pub(crate) struct Observed<'a> {
    pub(crate) parent: &'a DynamicObject,
    pub(crate) parent_resource: &'a ApiResource,
    /// The host's field manager: its managedFields entry on the parent says which
    /// labels and annotations it set.
    pub(crate) manager: &'a str,
    /// The cached children of declared kinds whose controller is the parent.
    pub(crate) children: &'a [(KindRef, Arc<DynamicObject>)],
    /// The cached object of a kind, by namespace and name.
    pub(crate) cached: &'a Lookup<'a>,
    /// The status this host last wrote on the parent, and what the API server made of it.
    pub(crate) status_written: Option<StatusWritten>,
    /// The parent's shard bucket, labelled on its children, when the replicas share
    /// the parents (their watches select by it).
    pub(crate) bucket: Option<Bucket>,
}

/// A status this host wrote on a parent, and what the API server made of it: the
/// resourceVersion the parent had when the plan was made and the one the write answered
/// with (the same when the write changed nothing: when the server dropped every field
/// that differed, say).
///
/// While the cache shows either version, writing the same status again can only come to
/// the same: the cache lags behind the write, or the server keeps the status otherwise
/// than asked (a field its schema does not declare, a default it adds). A change of the
/// parent moves its version; a change of its schema makes the writer forget these.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct StatusWritten {
    pub(crate) over: String,
    pub(crate) answered: String,
    pub(crate) status: Value,
}

/// Finds the cached object of a kind by namespace and name.
pub(crate) type Lookup<'a> = dyn Fn(&KindRef, Option<&str>, &str) -> Option<Arc<DynamicObject>> + Sync + 'a;

/// How long until a reconcile runs again without a change.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Requeue {
    /// Every parent is reconciled at least this often.
    pub(crate) resync: Duration,
    /// When a finalizing plugin has not finalized and asked for no requeue.
    pub(crate) finalizing: Duration,
}

/// The plan for `response`, the validated answer of the plugin of `manifest`, for a
/// parent in `phase` (never [`Phase::Released`]: such a parent is not reconciled).
pub(crate) fn plan(
    manifest: &Manifest,
    phase: Phase,
    response: &Response,
    observed: &Observed<'_>,
    requeue: Requeue,
) -> Plan {
    let finalizers = finalizer::change(manifest, observed.parent, phase, response.finalized);
    let events = response.events.iter().map(Event::from_plugin).collect();
    if phase == Phase::Cleanup {
        // The plugin's last calls: its events, then the finalizer's removal once it is done.
        let requeue = (!response.finalized).then(|| response.requeue_after.unwrap_or(requeue.finalizing));
        return Plan {
            finalizers,
            children: Vec::new(),
            prune: Vec::new(),
            status: None,
            metadata: None,
            events,
            requeue,
        };
    }
    let parent_uid = observed.parent.uid().unwrap_or_default();
    let mut desired = HashSet::new();
    let mut children = Vec::new();
    for child in &response.children {
        // Validation guarantees a declared kind; find which.
        let Some(kind) = manifest.children.iter().find(|k| k.matches(child)) else { continue };
        let name = child["metadata"]["name"].as_str().unwrap_or_default().to_string();
        let namespace = child["metadata"]["namespace"].as_str();
        let key = (kind.clone(), namespace.map(str::to_string), name.clone());
        let planned = if let Some(kept) = child["metadata"]["uid"].as_str() {
            // `Response::keep`: the observed child with this uid stays as it is. Writing the
            // plugin's snapshot of it would undo what others changed since; a child that
            // is gone meanwhile is not brought back.
            let Some((_, observed)) = observed.children.iter().find(|(_, o)| o.uid().as_deref() == Some(kept)) else {
                continue;
            };
            let changed = !contains(&to_json(observed), child);
            let warning = changed.then(|| kept_child_changed(&kind.kind, &name));
            Child { kind: kind.clone(), name, action: Action::Kept, warning }
        } else {
            let prepared = prepare_child(child.clone(), observed.parent, observed.parent_resource, observed.bucket);
            match (observed.cached)(kind, namespace, &name) {
                Some(cached) => {
                    let (action, warning) =
                        compare(&observed.parent_resource.kind, kind, &name, Some(&cached), prepared, &parent_uid);
                    Child { kind: kind.clone(), name, action, warning }
                }
                None => Child { kind: kind.clone(), name, action: Action::Create(prepared), warning: None },
            }
        };
        desired.insert(key);
        children.push(planned);
    }
    // A child the answer omits is deleted, unless its kind is kept unlisted: then a
    // branch of the plugin that forgets it (a CronJob suspended) cannot delete it, and
    // only a uid in `delete` can (validation refused one that is also desired).
    let named = |child: &DynamicObject| child.uid().is_some_and(|uid| response.delete.contains(&uid));
    let prune = observed
        .children
        .iter()
        .filter(|(kind, child)| !manifest.keep_unlisted.contains(kind) || named(child))
        .filter(|(kind, child)| !desired.contains(&(kind.clone(), child.namespace(), child.name_any())))
        .cloned()
        .collect();
    let status = response.status.as_ref().map(|status| {
        // The status as the API server keeps it, against the one wanted.
        let current = observed.parent.data.get("status").unwrap_or(&Value::Null);
        let version = observed.parent.resource_version().unwrap_or_default();
        let answered = observed.status_written.as_ref().is_some_and(|written| {
            written.status == *status && (written.over == version || written.answered == version)
        });
        if same(current, status) || answered { Write::Held } else { Write::Write(status.clone()) }
    });
    let wanted = Metadata { labels: response.labels.clone(), annotations: response.annotations.clone() };
    let metadata = if parent_metadata_current(observed.parent, observed.manager, &wanted) {
        Write::Held
    } else {
        Write::Write(wanted)
    };
    Plan {
        finalizers,
        children,
        prune,
        status,
        metadata: Some(metadata),
        events,
        requeue: Some(response.requeue_after.map_or(requeue.resync, |d| d.min(requeue.resync))),
    }
}

/// What becomes of the desired child `prepared` of a `parent_kind` when `existing` is
/// what the cluster holds under its name (`None`: nothing): the cached object when
/// planning, the one read back when a creation found it exists after all.
pub(crate) fn compare(
    parent_kind: &str,
    kind: &KindRef,
    name: &str,
    existing: Option<&DynamicObject>,
    prepared: Value,
    parent_uid: &str,
) -> (Action, Option<Event>) {
    match existing {
        Some(existing) if controller_uid(existing) != Some(parent_uid) => {
            let note = format!("{} {name} exists and is not controlled by this {}; left alone", kind.kind, parent_kind);
            (Action::Conflict, Some(Event::warning("ChildConflict", &note, "Apply")))
        }
        Some(existing) if contains(&to_json(existing), &prepared) => (Action::Held, None),
        _ => (Action::Apply(prepared), None),
    }
}

/// An observed child edited and returned with its uid still on: a likely mistake,
/// silent but for this.
fn kept_child_changed(kind: &str, name: &str) -> Event {
    let note = format!(
        "{kind} {name} was returned with the uid of the observed one, so it is kept as it is and the plugin's \
         changes to it are not written; drop metadata.uid to have them applied"
    );
    Event::warning("KeptChildChanged", &note, "Apply")
}

fn to_json(object: &DynamicObject) -> Value {
    serde_json::to_value(object).unwrap_or_default()
}

/// The object the host applies for a desired child: the plugin's object with the
/// controller ownerReference to `parent` (replacing any controller reference the
/// plugin set), the parent's shard `bucket` as [`BUCKET_LABEL`] when given, and the
/// [`APPLIED_HASH`] stamp, a hash of what the host applies: a field the plugin stops
/// returning changes the stamp, so the apply removes it.
pub(crate) fn prepare_child(
    mut child: Value,
    parent: &DynamicObject,
    parent_resource: &ApiResource,
    bucket: Option<Bucket>,
) -> Value {
    let owner = json!({
        "apiVersion": parent_resource.api_version,
        "kind": parent_resource.kind,
        "name": parent.name_any(),
        "uid": parent.uid().unwrap_or_default(),
        "controller": true,
        "blockOwnerDeletion": true,
    });
    let meta = &mut child["metadata"];
    let mut refs: Vec<Value> = meta["ownerReferences"]
        .as_array()
        .map(|r| r.iter().filter(|r| r["controller"] != true).cloned().collect())
        .unwrap_or_default();
    refs.push(owner);
    meta["ownerReferences"] = Value::Array(refs);
    if let Some(bucket) = bucket {
        if !meta["labels"].is_object() {
            meta["labels"] = json!({});
        }
        meta["labels"][BUCKET_LABEL] = Value::String(bucket.label());
    }
    if let Some(annotations) = meta.get_mut("annotations").and_then(Value::as_object_mut) {
        annotations.remove(APPLIED_HASH);
        if annotations.is_empty() {
            meta.as_object_mut().map(|m| m.remove("annotations"));
        }
    }
    let mut stamp = crate::plugin::digest(canonical(&child).as_bytes());
    stamp.truncate(16);
    let meta = &mut child["metadata"];
    if !meta["annotations"].is_object() {
        meta["annotations"] = json!({});
    }
    meta["annotations"][APPLIED_HASH] = Value::String(stamp);
    child
}

/// JSON with object keys sorted at every level: the same object always hashes the
/// same, whatever order the plugin serialized it in.
fn canonical(value: &Value) -> String {
    fn sorted(value: &Value) -> Value {
        match value {
            Value::Object(map) => {
                let mut entries: Vec<_> = map.iter().collect();
                entries.sort_by(|a, b| a.0.cmp(b.0));
                Value::Object(entries.into_iter().map(|(k, v)| (k.clone(), sorted(v))).collect())
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    sorted(value).to_string()
}

/// Whether `observed` holds every field of `desired` with the same value; `null` in
/// `desired` means absent.
///
/// This is the host's view of server-side apply: it owns the fields it applies, and
/// what others add is theirs. So a list of objects holds when each desired element
/// is held by some observed element (the API server defaults fields inside
/// elements, other managers may add elements); a list of scalars is atomic and
/// must be equal.
pub(crate) fn contains(observed: &Value, desired: &Value) -> bool {
    match (observed, desired) {
        (Value::Object(o), Value::Object(d)) => d.iter().all(|(k, dv)| match o.get(k) {
            Some(ov) => contains(ov, dv),
            None => dv.is_null(),
        }),
        (Value::Array(o), Value::Array(d)) if d.iter().all(Value::is_object) => {
            d.iter().all(|de| o.iter().any(|oe| contains(oe, de)))
        }
        (Value::Array(o), Value::Array(d)) => o.len() == d.len() && o.iter().zip(d).all(|(a, b)| contains(a, b)),
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        _ => observed == desired,
    }
}

/// Whether `observed` is exactly `desired`: no field or element more or less (numbers by
/// value; `null` in `desired` means absent). For the status, which the plugin owns whole: a
/// list that shrinks, or empties, must be written.
pub(crate) fn same(observed: &Value, desired: &Value) -> bool {
    match (observed, desired) {
        (Value::Object(o), Value::Object(d)) => {
            d.iter().all(|(k, dv)| o.get(k).map_or(dv.is_null(), |ov| same(ov, dv)))
                && o.keys().all(|k| d.get(k).is_some_and(|dv| !dv.is_null()))
        }
        (Value::Array(o), Value::Array(d)) => o.len() == d.len() && o.iter().zip(d).all(|(a, b)| same(a, b)),
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        _ => observed == desired,
    }
}

/// Labels and annotations `manager` set on `object` by server-side apply, read from
/// its managedFields.
fn applied_metadata_keys(object: &DynamicObject, manager: &str) -> (Vec<String>, Vec<String>) {
    let entries: &[ManagedFieldsEntry] = object.metadata.managed_fields.as_deref().unwrap_or_default();
    let entry = entries.iter().find(|e| {
        e.manager.as_deref() == Some(manager)
            && e.operation.as_deref() == Some("Apply")
            && e.subresource.as_deref().unwrap_or_default().is_empty()
    });
    let fields = entry.and_then(|e| e.fields_v1.as_ref()).map(|f| &f.0);
    let keys = |section: &str| -> Vec<String> {
        fields
            .and_then(|f| f["f:metadata"][section].as_object())
            .map(|m| m.keys().filter_map(|k| k.strip_prefix("f:")).map(str::to_string).collect())
            .unwrap_or_default()
    };
    (keys("f:labels"), keys("f:annotations"))
}

/// Whether the parent already carries exactly the labels and annotations the
/// plugin wants from this host: all present with their values, and none that the
/// host set earlier and the plugin no longer wants.
fn parent_metadata_current(parent: &DynamicObject, manager: &str, wanted: &Metadata) -> bool {
    let (applied_labels, applied_annotations) = applied_metadata_keys(parent, manager);
    let holds = |observed: &BTreeMap<String, String>, wanted: &BTreeMap<String, String>, applied: &[String]| {
        wanted.iter().all(|(k, v)| observed.get(k) == Some(v)) && applied.iter().all(|k| wanted.contains_key(k))
    };
    holds(parent.labels(), &wanted.labels, &applied_labels)
        && holds(parent.annotations(), &wanted.annotations, &applied_annotations)
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::FieldsV1;

    use super::*;

    fn parent() -> (DynamicObject, ApiResource) {
        let resource = ApiResource {
            group: "example.com".into(),
            version: "v1".into(),
            api_version: "example.com/v1".into(),
            kind: "App".into(),
            plural: "apps".into(),
        };
        let mut parent = DynamicObject::new("web", &resource).within("team");
        parent.metadata.uid = Some("uid-1".into());
        (parent, resource)
    }

    #[test]
    fn child_gets_a_controller_reference_and_a_stable_stamp() {
        let (parent, resource) = parent();
        let child = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c",
            "ownerReferences": [{"apiVersion": "x/v1", "kind": "Other", "name": "o", "uid": "u", "controller": true}]}});
        let a = prepare_child(child.clone(), &parent, &resource, None);
        let refs = a["metadata"]["ownerReferences"].as_array().unwrap();
        assert_eq!(refs.len(), 1, "a controller reference set by the plugin is replaced");
        assert_eq!(refs[0]["uid"], "uid-1");
        assert_eq!(refs[0]["controller"], true);
        let b = prepare_child(a.clone(), &parent, &resource, None);
        assert_eq!(a, b, "preparing is idempotent, so the stamp is stable");
        let mut changed = child;
        changed["data"] = json!({"k": "v"});
        let c = prepare_child(changed, &parent, &resource, None);
        assert_ne!(a["metadata"]["annotations"][APPLIED_HASH], c["metadata"]["annotations"][APPLIED_HASH]);
        let reordered = json!({"metadata": {"name": "c"}, "kind": "ConfigMap", "apiVersion": "v1"});
        let plain = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
        assert_eq!(
            prepare_child(reordered, &parent, &resource, None)["metadata"]["annotations"],
            prepare_child(plain, &parent, &resource, None)["metadata"]["annotations"],
            "the stamp does not depend on key order"
        );
    }

    #[test]
    fn a_sharded_replica_labels_each_child_with_its_parents_bucket_and_keeps_the_plugins_labels() {
        let (parent, resource) = parent();
        let child =
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": {"app": "web"}}});
        let bucket = Bucket::of(&BTreeMap::new(), "example.com", "App", Some("team"), "web");
        let labelled = prepare_child(child.clone(), &parent, &resource, Some(bucket));
        assert_eq!(labelled["metadata"]["labels"], json!({"app": "web", BUCKET_LABEL: bucket.label()}));
        let bare = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
        assert_eq!(
            prepare_child(bare, &parent, &resource, Some(bucket))["metadata"]["labels"][BUCKET_LABEL],
            bucket.label()
        );
        assert!(prepare_child(child, &parent, &resource, None)["metadata"]["labels"].get(BUCKET_LABEL).is_none());
    }

    #[test]
    fn same_sees_a_shrinking_or_emptied_list_and_a_removed_field() {
        let two = json!({"active": [{"name": "a"}, {"name": "b"}], "phase": "Running"});
        assert!(same(&two, &two.clone()));
        assert!(!same(&two, &json!({"active": [{"name": "a"}], "phase": "Running"})), "one fewer element");
        assert!(!same(&two, &json!({"active": [], "phase": "Running"})), "emptied");
        assert!(!same(&two, &json!({"active": [{"name": "a"}, {"name": "b"}]})), "a field removed");
        assert!(same(&json!({"n": 1.0}), &json!({"n": 1, "gone": null})), "numbers by value; null is absent");
        assert!(contains(&two, &json!({"active": [], "phase": "Running"})), "why the status needs `same`");
    }

    #[test]
    fn contains_tolerates_server_defaults_but_not_drift() {
        let desired = json!({"spec": {"replicas": 2, "ports": [{"port": 80}], "gone": null}});
        let observed = json!({"spec": {"replicas": 2, "ports": [{"port": 80, "protocol": "TCP"}], "extra": 1}});
        assert!(contains(&observed, &desired));
        let drifted = json!({"spec": {"replicas": 5, "ports": [{"port": 80}]}});
        assert!(!contains(&drifted, &desired));
        let theirs_too = json!({"spec": {"replicas": 2, "ports": [{"port": 81}, {"port": 80}]}});
        assert!(contains(&theirs_too, &desired), "an element another manager added is theirs");
        let port_changed = json!({"spec": {"replicas": 2, "ports": [{"port": 81}]}});
        assert!(!contains(&port_changed, &desired), "our element is missing");
        let args = json!({"args": ["a", "b"]});
        assert!(!contains(&json!({"args": ["a", "b", "c"]}), &args), "scalar lists are atomic");
        assert!(contains(&json!({"n": 1.0}), &json!({"n": 1})), "numbers compare by value");
    }

    #[test]
    fn parent_metadata_is_current_only_without_stale_applied_keys() {
        let (mut parent, _) = parent();
        parent.metadata.annotations = Some([("kubewasm.io/services".to_string(), "a".to_string())].into());
        parent.metadata.managed_fields = Some(vec![ManagedFieldsEntry {
            manager: Some("kubewasm.p".into()),
            operation: Some("Apply".into()),
            fields_v1: Some(FieldsV1(json!({"f:metadata": {"f:annotations": {"f:kubewasm.io/services": {}}}}))),
            ..ManagedFieldsEntry::default()
        }]);
        let wanted = |annotations: &[(&str, &str)]| Metadata {
            labels: BTreeMap::new(),
            annotations: annotations.iter().map(|(k, v)| ((*k).to_string(), (*v).to_string())).collect(),
        };
        assert!(parent_metadata_current(&parent, "kubewasm.p", &wanted(&[("kubewasm.io/services", "a")])));
        assert!(
            !parent_metadata_current(&parent, "kubewasm.p", &wanted(&[])),
            "an annotation the host set and the plugin dropped must be removed"
        );
        assert!(
            parent_metadata_current(&parent, "kubewasm.other", &wanted(&[])),
            "another manager's keys are not ours to remove"
        );
    }

    // Whole plans: a parent `web` (uid-1) of kind App, children ConfigMaps.

    const REQUEUE: Requeue = Requeue { resync: Duration::from_mins(10), finalizing: Duration::from_secs(5) };

    fn manifest() -> Manifest {
        Manifest::new("app", KindRef::namespaced("example.com", "v1", "App", "apps")).child(KindRef::namespaced(
            "",
            "v1",
            "ConfigMap",
            "configmaps",
        ))
    }

    fn config_map_kind() -> KindRef {
        KindRef::namespaced("", "v1", "ConfigMap", "configmaps")
    }

    fn desired(name: &str, data: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "team"},
               "data": {"k": data}})
    }

    /// What the cluster holds after the host applied `desired` for the parent.
    fn applied(object: &Value, controller: &str) -> Arc<DynamicObject> {
        let (parent, resource) = parent();
        let mut object = prepare_child(object.clone(), &parent, &resource, None);
        object["metadata"]["ownerReferences"][0]["uid"] = json!(controller);
        object["metadata"]["uid"] = json!(format!("uid-of-{}", object["metadata"]["name"].as_str().unwrap()));
        Arc::new(serde_json::from_value(object).unwrap())
    }

    /// The plan for `response` when the cache holds `cached` and the parent controls
    /// those of them whose controller is `uid-1`.
    fn plan_for(response: &Response, cached: &[Arc<DynamicObject>], parent: &DynamicObject) -> Plan {
        let (_, resource) = self::parent();
        let children: Vec<(KindRef, Arc<DynamicObject>)> = cached
            .iter()
            .filter(|o| controller_uid(o) == Some("uid-1"))
            .map(|o| (config_map_kind(), o.clone()))
            .collect();
        let lookup = |_: &KindRef, _: Option<&str>, name: &str| cached.iter().find(|o| o.name_any() == name).cloned();
        let observed = Observed {
            parent,
            parent_resource: &resource,
            manager: "kubewasm.app",
            children: &children,
            cached: &lookup,
            status_written: None,
            bucket: None,
        };
        let manifest = manifest();
        plan(&manifest, Phase::of(&manifest, parent), response, &observed, REQUEUE)
    }

    fn response(children: Vec<Value>) -> Response {
        Response { children, ..Response::default() }
    }

    fn actions(plan: &Plan) -> Vec<(&str, &Action)> {
        plan.children.iter().map(|c| (c.name.as_str(), &c.action)).collect()
    }

    #[test]
    fn a_converged_parent_plans_no_write() {
        let (mut parent, _) = parent();
        parent.data = json!({"status": {"ready": true}});
        let cached = [applied(&desired("a", "1"), "uid-1")];
        let mut answer = response(vec![desired("a", "1")]);
        answer.status = Some(json!({"ready": true}));
        let plan = plan_for(&answer, &cached, &parent);
        assert_eq!(actions(&plan), [("a", &Action::Held)]);
        assert!(plan.prune.is_empty());
        assert_eq!(plan.status, Some(Write::Held));
        assert_eq!(plan.metadata, Some(Write::Held));
        assert_eq!(plan.finalizers, None);
        assert_eq!(plan.requeue, Some(REQUEUE.resync));
    }

    #[test]
    fn drift_is_applied_a_new_child_created_and_an_undesired_one_pruned() {
        let (parent, _) = parent();
        let cached = [applied(&desired("a", "1"), "uid-1"), applied(&desired("old", "1"), "uid-1")];
        let plan = plan_for(&response(vec![desired("a", "2"), desired("b", "1")]), &cached, &parent);
        let [a, b] = &plan.children[..] else { panic!("two children: {plan:?}") };
        let Action::Apply(object) = &a.action else { panic!("a drifted: {a:?}") };
        assert_eq!(object["data"]["k"], "2");
        assert_eq!(object["metadata"]["ownerReferences"][0]["uid"], "uid-1", "owned by the parent");
        assert!(matches!(&b.action, Action::Create(o) if o["metadata"]["annotations"][APPLIED_HASH].is_string()));
        let pruned: Vec<String> = plan.prune.iter().map(|(_, o)| o.name_any()).collect();
        assert_eq!(pruned, ["old"]);
    }

    #[test]
    fn a_child_another_controller_holds_is_left_alone_with_a_warning_and_not_pruned() {
        let (parent, _) = parent();
        let cached = [applied(&desired("a", "1"), "someone-else")];
        let plan = plan_for(&response(vec![desired("a", "1")]), &cached, &parent);
        assert_eq!(actions(&plan), [("a", &Action::Conflict)]);
        let warning = plan.children[0].warning.as_ref().expect("a warning");
        assert_eq!(warning.reason, "ChildConflict");
        assert!(warning.note.contains("ConfigMap a exists and is not controlled by this App"));
        assert!(plan.prune.is_empty(), "not the parent's to delete");
    }

    #[test]
    fn a_kept_child_is_not_written_and_an_edited_one_is_reported() {
        let (parent, _) = parent();
        let observed = applied(&desired("a", "1"), "uid-1");
        let mut kept = serde_json::to_value(observed.as_ref()).unwrap();
        let plan = plan_for(&response(vec![kept.clone()]), std::slice::from_ref(&observed), &parent);
        assert_eq!(actions(&plan), [("a", &Action::Kept)]);
        assert!(plan.children[0].warning.is_none() && plan.prune.is_empty());
        kept["data"]["k"] = json!("edited");
        let plan = plan_for(&response(vec![kept.clone()]), std::slice::from_ref(&observed), &parent);
        assert_eq!(actions(&plan), [("a", &Action::Kept)]);
        assert_eq!(plan.children[0].warning.as_ref().map(|w| w.reason.as_str()), Some("KeptChildChanged"));
        // Kept by the uid of a child that is gone: not brought back, nothing to write.
        let plan = plan_for(&response(vec![kept]), &[], &parent);
        assert!(plan.children.is_empty() && plan.prune.is_empty());
    }

    /// What the host observes of `parent` with these `children` and cache, no status written yet.
    fn observing<'a>(
        parent: &'a DynamicObject,
        resource: &'a ApiResource,
        children: &'a [(KindRef, Arc<DynamicObject>)],
        cached: &'a Lookup<'a>,
    ) -> Observed<'a> {
        Observed {
            parent,
            parent_resource: resource,
            manager: "kubewasm.app",
            children,
            cached,
            status_written: None,
            bucket: None,
        }
    }

    #[test]
    fn an_omitted_child_of_a_kind_kept_unlisted_stays_and_one_of_another_kind_is_pruned() {
        let jobs = KindRef::namespaced("batch", "v1", "Job", "jobs");
        let manifest = manifest().child(jobs.clone()).keep_unlisted(jobs.clone());
        let (parent, resource) = parent();
        let job = |name: &str| {
            let object =
                json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": "team"}});
            applied(&object, "uid-1")
        };
        let children = [
            (jobs.clone(), job("running")),
            (jobs, job("next")),
            (config_map_kind(), applied(&desired("old", "1"), "uid-1")),
        ];
        let lookup = |_: &KindRef, _: Option<&str>, name: &str| {
            children.iter().map(|(_, o)| o).find(|o| o.name_any() == name).cloned()
        };
        let observed = observing(&parent, &resource, &children, &lookup);
        let next = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "next", "namespace": "team"}});
        let answer = response(vec![next]);
        let plan = plan(&manifest, Phase::Apply { add_finalizer: false }, &answer, &observed, REQUEUE);
        let pruned: Vec<(String, String)> = plan.prune.iter().map(|(k, o)| (k.kind.clone(), o.name_any())).collect();
        assert_eq!(pruned, [("ConfigMap".to_string(), "old".to_string())], "the Job `running` is omitted and kept");
        assert_eq!(actions(&plan), [("next", &Action::Held)], "only the Job the answer holds is planned");
        // An answer with no child at all (a suspended branch, say) deletes no Job either.
        let none =
            super::plan(&manifest, Phase::Apply { add_finalizer: false }, &response(Vec::new()), &observed, REQUEUE);
        let pruned: Vec<String> = none.prune.iter().map(|(_, o)| o.name_any()).collect();
        assert_eq!(pruned, ["old"], "no Job is deleted");
        // A Job named by uid in `delete` is deleted; the others of its kind stay.
        let finished = Response { delete: vec!["uid-of-running".into()], ..response(Vec::new()) };
        let plan = super::plan(&manifest, Phase::Apply { add_finalizer: false }, &finished, &observed, REQUEUE);
        let pruned: Vec<String> = plan.prune.iter().map(|(_, o)| o.name_any()).collect();
        assert_eq!(pruned, ["running", "old"], "the Job named is deleted, `next` stays");
    }

    /// The status planned for `answer` on `parent` after the host wrote `written`.
    fn status_after(parent: &DynamicObject, answer: &Response, written: Option<StatusWritten>) -> Option<Write<Value>> {
        let (_, resource) = self::parent();
        let lookup = |_: &KindRef, _: Option<&str>, _: &str| None;
        let observed = Observed {
            parent,
            parent_resource: &resource,
            manager: "kubewasm.app",
            children: &[],
            cached: &lookup,
            status_written: written,
            bucket: None,
        };
        plan(&manifest(), Phase::Apply { add_finalizer: false }, answer, &observed, REQUEUE).status
    }

    fn written(over: &str, answered: &str, status: Value) -> StatusWritten {
        StatusWritten { over: over.into(), answered: answered.into(), status }
    }

    #[test]
    fn a_status_is_written_once_until_the_cache_shows_it() {
        let (mut parent, _) = parent();
        parent.metadata.resource_version = Some("7".into());
        let mut answer = response(Vec::new());
        answer.status = Some(json!({"ready": true}));
        assert_eq!(plan_for(&answer, &[], &parent).status, Some(Write::Write(json!({"ready": true}))));
        let on_its_way = Some(written("7", "8", json!({"ready": true})));
        assert_eq!(status_after(&parent, &answer, on_its_way), Some(Write::Held), "written over version 7: on its way");
        assert_eq!(plan_for(&response(Vec::new()), &[], &parent).status, None, "no status asked for");
    }

    #[test]
    fn a_status_the_server_kept_otherwise_is_compared_with_what_it_keeps() {
        let (mut parent, _) = parent();
        let mut answer = response(Vec::new());
        answer.status = Some(json!({"ready": true, "extra": "x"}));
        // The server dropped `extra` (its schema does not declare it): the write changed nothing.
        parent.metadata.resource_version = Some("7".into());
        parent.data = json!({"status": {"ready": true}});
        let dropped = || Some(written("7", "7", json!({"ready": true, "extra": "x"})));
        assert_eq!(status_after(&parent, &answer, dropped()), Some(Write::Held), "the same write, the same outcome");
        assert_eq!(
            status_after(&parent, &answer, None),
            Some(Write::Write(json!({"ready": true, "extra": "x"}))),
            "the schema changed (the writer forgot): written again, so a field it now declares is kept"
        );
        parent.metadata.resource_version = Some("9".into());
        assert_eq!(
            status_after(&parent, &answer, dropped()),
            Some(Write::Write(json!({"ready": true, "extra": "x"}))),
            "the parent changed since: written again"
        );
        let mut other = answer.clone();
        other.status = Some(json!({"ready": false, "extra": "x"}));
        parent.metadata.resource_version = Some("7".into());
        assert_eq!(status_after(&parent, &other, dropped()), Some(Write::Write(json!({"ready": false, "extra": "x"}))));
    }

    #[test]
    fn labels_and_annotations_are_written_when_missing() {
        let (parent, _) = parent();
        let mut answer = response(Vec::new());
        answer.labels = [("tier".to_string(), "web".to_string())].into();
        let plan = plan_for(&answer, &[], &parent);
        let Some(Write::Write(metadata)) = &plan.metadata else { panic!("{plan:?}") };
        assert_eq!(metadata.labels, answer.labels);
    }

    #[test]
    fn a_plugins_requeue_is_kept_under_the_resync() {
        let (parent, _) = parent();
        let mut answer = response(Vec::new());
        answer.requeue_after = Some(Duration::from_secs(30));
        assert_eq!(plan_for(&answer, &[], &parent).requeue, Some(Duration::from_secs(30)));
        answer.requeue_after = Some(Duration::from_hours(1));
        assert_eq!(plan_for(&answer, &[], &parent).requeue, Some(REQUEUE.resync));
    }

    #[test]
    fn finalizing_writes_no_child_and_removes_the_finalizer_only_when_finalized() {
        let manifest = manifest().finalizer();
        let (mut parent, resource) = parent();
        parent.metadata.finalizers = Some(vec![manifest.finalizer_name()]);
        parent.metadata.deletion_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::now()));
        let cached = [applied(&desired("a", "1"), "uid-1")];
        let children = [(config_map_kind(), cached[0].clone())];
        let lookup = |_: &KindRef, _: Option<&str>, _: &str| None;
        let observed = observing(&parent, &resource, &children, &lookup);
        let mut answer = response(Vec::new());
        answer.events = vec![crate::plugin::Event {
            type_: crate::plugin::EventType::Normal,
            reason: "CleaningUp".into(),
            message: "m".into(),
        }];
        let pending = plan(&manifest, Phase::Cleanup, &answer, &observed, REQUEUE);
        assert!(pending.children.is_empty() && pending.prune.is_empty(), "nothing pruned while finalizing");
        assert_eq!((pending.status, pending.metadata, pending.finalizers), (None, None, None));
        assert_eq!(pending.events.len(), 1);
        assert_eq!(pending.requeue, Some(REQUEUE.finalizing));
        answer.finalized = true;
        let done = plan(&manifest, Phase::Cleanup, &answer, &observed, REQUEUE);
        assert_eq!(done.finalizers, Some(finalizer::Change::Remove(Vec::new())));
        assert_eq!(done.requeue, None);
    }
}
