//! Writing a decision: server-side apply of children, parent metadata and status;
//! deletion of children no longer desired. Each write is skipped when the cluster
//! already holds what it would write, so a converged parent costs no writes.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, Preconditions, PropagationPolicy};
use kube::discovery::ApiResource;
use kube::{Client, ResourceExt};
use serde_json::{Value, json};

/// Annotation stamping each applied child with a hash of what the host applied: a
/// child whose stamp and fields match the desired object needs no write, and a
/// field the plugin stops returning changes the stamp, so it is removed.
pub const APPLIED_HASH: &str = "kubewasm.io/applied-hash";

/// The object the host applies for a desired child: the plugin's object with the
/// controller ownerReference to `parent` (replacing any controller reference the
/// plugin set) and the [`APPLIED_HASH`] stamp.
pub(crate) fn prepare_child(mut child: Value, parent: &DynamicObject, parent_resource: &ApiResource) -> Value {
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
    if let Some(annotations) = meta.get_mut("annotations").and_then(Value::as_object_mut) {
        annotations.remove(APPLIED_HASH);
        if annotations.is_empty() {
            meta.as_object_mut().map(|m| m.remove("annotations"));
        }
    }
    let mut stamp = crate::plugin::directory::digest(canonical(&child).as_bytes());
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
pub(crate) fn applied_metadata_keys(object: &DynamicObject, manager: &str) -> (Vec<String>, Vec<String>) {
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
pub(crate) fn parent_metadata_current(
    parent: &DynamicObject,
    manager: &str,
    labels: &BTreeMap<String, String>,
    annotations: &BTreeMap<String, String>,
) -> bool {
    let (applied_labels, applied_annotations) = applied_metadata_keys(parent, manager);
    let holds = |observed: &BTreeMap<String, String>, wanted: &BTreeMap<String, String>, applied: &[String]| {
        wanted.iter().all(|(k, v)| observed.get(k) == Some(v)) && applied.iter().all(|k| wanted.contains_key(k))
    };
    holds(parent.labels(), labels, &applied_labels) && holds(parent.annotations(), annotations, &applied_annotations)
}

/// The uid [`Writer::create`] sends: no API server assigns the nil UUID.
const CREATE_ONLY_UID: &str = "00000000-0000-0000-0000-000000000000";

/// Writes through one field manager.
pub(crate) struct Writer {
    pub(crate) client: Client,
    pub(crate) manager: String,
}

impl Writer {
    fn api(&self, resource: &ApiResource, namespace: Option<&str>) -> Api<DynamicObject> {
        match namespace {
            Some(ns) => Api::namespaced_with(self.client.clone(), ns, resource),
            None => Api::all_with(self.client.clone(), resource),
        }
    }

    fn apply_params(&self) -> PatchParams {
        PatchParams::apply(&self.manager).force()
    }

    /// The object of `resource` named like `object`, read from the API server.
    pub(crate) async fn get(&self, resource: &ApiResource, object: &Value) -> kube::Result<Option<DynamicObject>> {
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        self.api(resource, object["metadata"]["namespace"].as_str()).get_opt(name).await
    }

    /// Server-side apply of `object` only if no object of its name exists: true when
    /// it was created, false when one exists (left untouched).
    ///
    /// The apply carries a made-up `metadata.uid`. On a create the API server assigns
    /// its own (`BeforeCreate`) and the uid is no managed field; on an existing object
    /// it is a change of an immutable field, refused as a whole with 422 Invalid
    /// (`ValidateObjectMetaUpdate`). One request, where a read before the apply takes two.
    pub(crate) async fn create(&self, resource: &ApiResource, object: &Value) -> kube::Result<bool> {
        let mut object = object.clone();
        object["metadata"]["uid"] = json!(CREATE_ONLY_UID);
        match self.apply(resource, &object).await {
            Ok(()) => Ok(true),
            Err(kube::Error::Api(status))
                if status.is_invalid()
                    && status.details.as_ref().is_some_and(|d| d.causes.iter().any(|c| c.field == "metadata.uid")) =>
            {
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }

    /// Server-side apply of `object`, forcing ownership of its fields.
    pub(crate) async fn apply(&self, resource: &ApiResource, object: &Value) -> kube::Result<()> {
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        let ns = object["metadata"]["namespace"].as_str();
        self.api(resource, ns).patch(name, &self.apply_params(), &Patch::Apply(object)).await?;
        Ok(())
    }

    /// Server-side apply of the parent's `.status` through the status subresource.
    pub(crate) async fn apply_status(
        &self,
        resource: &ApiResource,
        parent: &DynamicObject,
        status: &Value,
    ) -> kube::Result<()> {
        let body = json!({
            "apiVersion": resource.api_version,
            "kind": resource.kind,
            "metadata": {"name": parent.name_any()},
            "status": status,
        });
        self.api(resource, parent.namespace().as_deref())
            .patch_status(&parent.name_any(), &self.apply_params(), &Patch::Apply(body))
            .await?;
        Ok(())
    }

    /// Server-side apply of the parent's labels and annotations: keys this manager
    /// set before and leaves out now are removed by the API server.
    pub(crate) async fn apply_parent_metadata(
        &self,
        resource: &ApiResource,
        parent: &DynamicObject,
        labels: &BTreeMap<String, String>,
        annotations: &BTreeMap<String, String>,
    ) -> kube::Result<()> {
        let body = json!({
            "apiVersion": resource.api_version,
            "kind": resource.kind,
            "metadata": {"name": parent.name_any(), "labels": labels, "annotations": annotations},
        });
        self.api(resource, parent.namespace().as_deref())
            .patch(&parent.name_any(), &self.apply_params(), &Patch::Apply(body))
            .await?;
        Ok(())
    }

    /// Replaces the parent's finalizers, guarded by its resourceVersion so that a
    /// concurrent change is not lost (the write fails with 409 and is retried).
    pub(crate) async fn set_finalizers(
        &self,
        resource: &ApiResource,
        parent: &DynamicObject,
        finalizers: &[String],
    ) -> kube::Result<()> {
        let body = json!({"metadata": {"resourceVersion": parent.resource_version(), "finalizers": finalizers}});
        self.api(resource, parent.namespace().as_deref())
            .patch(&parent.name_any(), &PatchParams::default(), &Patch::Merge(body))
            .await?;
        Ok(())
    }

    /// Deletes `object` if it is still the same object (uid precondition); its own
    /// dependents are collected in the background. Already gone is not an error.
    pub(crate) async fn delete(&self, resource: &ApiResource, object: &DynamicObject) -> kube::Result<()> {
        let params = DeleteParams {
            preconditions: Some(Preconditions { uid: object.uid(), resource_version: None }),
            propagation_policy: Some(PropagationPolicy::Background),
            ..DeleteParams::default()
        };
        match self.api(resource, object.namespace().as_deref()).delete(&object.name_any(), &params).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => Ok(()),
            Err(e) => Err(e),
        }
    }
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
        let a = prepare_child(child.clone(), &parent, &resource);
        let refs = a["metadata"]["ownerReferences"].as_array().unwrap();
        assert_eq!(refs.len(), 1, "a controller reference set by the plugin is replaced");
        assert_eq!(refs[0]["uid"], "uid-1");
        assert_eq!(refs[0]["controller"], true);
        let b = prepare_child(a.clone(), &parent, &resource);
        assert_eq!(a, b, "preparing is idempotent, so the stamp is stable");
        let mut changed = child;
        changed["data"] = json!({"k": "v"});
        let c = prepare_child(changed, &parent, &resource);
        assert_ne!(a["metadata"]["annotations"][APPLIED_HASH], c["metadata"]["annotations"][APPLIED_HASH]);
        let reordered = json!({"metadata": {"name": "c"}, "kind": "ConfigMap", "apiVersion": "v1"});
        let plain = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
        assert_eq!(
            prepare_child(reordered, &parent, &resource)["metadata"]["annotations"],
            prepare_child(plain, &parent, &resource)["metadata"]["annotations"],
            "the stamp does not depend on key order"
        );
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
        let wanted: BTreeMap<String, String> = [("kubewasm.io/services".to_string(), "a".to_string())].into();
        assert!(parent_metadata_current(&parent, "kubewasm.p", &BTreeMap::new(), &wanted));
        assert!(
            !parent_metadata_current(&parent, "kubewasm.p", &BTreeMap::new(), &BTreeMap::new()),
            "an annotation the host set and the plugin dropped must be removed"
        );
        assert!(
            parent_metadata_current(&parent, "kubewasm.other", &BTreeMap::new(), &BTreeMap::new()),
            "another manager's keys are not ours to remove"
        );
    }
}

#[cfg(test)]
mod create_only {
    use kubewasm_devcluster::{DevCluster, Options};

    use super::*;

    fn config_map(data: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "default"},
               "data": {"key": data}})
    }

    #[tokio::test]
    async fn creates_what_is_missing_and_leaves_what_exists_untouched() {
        let cluster = DevCluster::start(Options::default()).await.expect("API server starts");
        let resource = ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&());
        let writer = Writer { client: cluster.client(), manager: "kubewasm.test".into() };
        let api = writer.api(&resource, Some("default"));

        assert!(writer.create(&resource, &config_map("ours")).await.expect("create"), "missing: created");
        let created = api.get("settings").await.expect("created");
        assert_ne!(created.metadata.uid.as_deref(), Some(CREATE_ONLY_UID), "the server's own uid");
        assert_eq!(created.data["data"]["key"], "ours");
        let managers: Vec<_> = created.metadata.managed_fields.iter().flatten().map(|m| m.manager.clone()).collect();
        assert_eq!(managers, [Some("kubewasm.test".to_string())], "applied by our manager");

        // Someone else's object of that name now: it exists, so nothing is written.
        api.delete("settings", &kube::api::DeleteParams::default()).await.expect("delete");
        let theirs: DynamicObject = serde_json::from_value(config_map("theirs")).expect("object");
        let theirs = api.create(&kube::api::PostParams::default(), &theirs).await.expect("someone else creates it");
        assert!(!writer.create(&resource, &config_map("ours")).await.expect("create-only"), "exists: not created");
        let after = api.get("settings").await.expect("still there");
        assert_eq!(after.data["data"]["key"], "theirs");
        assert_eq!(after.metadata.resource_version, theirs.metadata.resource_version, "not written at all");
        cluster.shutdown().await;
    }
}
