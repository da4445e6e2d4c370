//! `PersistentVolumeClaims` and `PersistentVolumes`.

use serde_json::{Value, json};

use super::go_value::{check_immutable, scalar};
use super::{default_at, ensure_object};
use crate::object;
use crate::printers::{Columns, age, age_column, column, doc, name, name_column, text};
use crate::status::Cause;
use crate::strategy::Strategy;

pub(crate) struct Claims;

impl Strategy for Claims {
    fn prepare_for_create(&self, obj: &mut Value) {
        obj["status"] = json!({ "phase": "Pending" });
    }

    /// `SetDefaults_PersistentVolumeClaim` and `SetDefaults_PersistentVolumeClaimSpec`.
    fn defaults(&self, obj: &mut Value) {
        mode_and_phase(obj);
    }

    /// `ValidatePersistentVolumeClaimUpdate`: a claim's spec is fixed once created, but for
    /// its `volumeName` while unset, and its requested storage and volume attributes class
    /// once bound. Nothing binds claims here, so an unbound claim keeps its whole spec, as on
    /// a cluster without a provisioner. The real message goes on with a diff of the specs.
    fn validate_update(&self, old: &Value, new: &Value) -> Vec<Cause> {
        let mut old_spec = old.get("spec").cloned().unwrap_or_else(|| json!({}));
        let mut new_spec = new.get("spec").cloned().unwrap_or_else(|| json!({}));
        if text(old, "/spec/volumeName").is_empty() {
            copy(&new_spec, &mut old_spec, "/volumeName");
        }
        if text(new, "/status/phase") == "Bound" {
            copy(&old_spec, &mut new_spec, "/resources/requests/storage");
            copy(&old_spec, &mut new_spec, "/volumeAttributesClassName");
        }
        let mut causes = Vec::new();
        let class = "/metadata/annotations/volume.beta.kubernetes.io~1storage-class";
        if let Some(before) = old.pointer(class)
            && Some(before) != new.pointer(class)
        {
            let after = new.pointer(class).and_then(Value::as_str).unwrap_or_default();
            causes.push(Cause::new(
                "FieldValueInvalid",
                "metadata.annotations[volume.beta.kubernetes.io/storage-class]",
                format!("Invalid value: {after:?}: field is immutable"),
            ));
        }
        if old_spec != new_spec {
            causes.push(Cause::new(
                "FieldValueForbidden",
                "spec",
                "Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims",
            ));
        }
        causes
    }

    fn columns(&self) -> Columns {
        Columns {
            defs: vec![
                name_column(),
                column("Status", "string", &doc("io.k8s.api.core.v1.PersistentVolumeClaimStatus", "phase"), 0),
                column("Volume", "string", &doc("io.k8s.api.core.v1.PersistentVolumeClaimSpec", "volumeName"), 0),
                column("Capacity", "string", &doc("io.k8s.api.core.v1.PersistentVolumeClaimStatus", "capacity"), 0),
                column(
                    "Access Modes",
                    "string",
                    &doc("io.k8s.api.core.v1.PersistentVolumeClaimStatus", "accessModes"),
                    0,
                ),
                column("StorageClass", "string", "StorageClass of the pvc", 0),
                column("VolumeAttributesClass", "string", "VolumeAttributesClass of the pvc", 0),
                age_column(),
                column("VolumeMode", "string", &doc("io.k8s.api.core.v1.PersistentVolumeClaimSpec", "volumeMode"), 1),
            ],
            cells: Box::new(|o| {
                let phase = if object::is_deleting(o) { "Terminating" } else { text(o, "/status/phase") };
                let bound = !text(o, "/spec/volumeName").is_empty();
                let (capacity, modes) = if bound {
                    (text(o, "/status/capacity/storage").to_string(), access_modes(o.pointer("/status/accessModes")))
                } else {
                    (String::new(), String::new())
                };
                vec![
                    name(o),
                    json!(phase),
                    json!(text(o, "/spec/volumeName")),
                    json!(capacity),
                    json!(modes),
                    json!(storage_class(o)),
                    json!(or_unset(text(o, "/spec/volumeAttributesClassName"))),
                    age(o),
                    json!(or_unset(text(o, "/spec/volumeMode"))),
                ]
            }),
        }
    }
}

/// Defaults of a `StatefulSet`'s `volumeClaimTemplates` item, which the real server prints
/// as a whole claim.
pub(crate) fn claim_template(claim: &mut Value) {
    if let Some(map) = claim.as_object_mut() {
        map.entry("apiVersion").or_insert(json!("v1"));
        map.entry("kind").or_insert(json!("PersistentVolumeClaim"));
    }
    Claims.defaults(claim);
}

pub(crate) struct Volumes;

impl Strategy for Volumes {
    fn prepare_for_create(&self, obj: &mut Value) {
        obj["status"] = json!({ "phase": "Pending" });
    }

    fn defaults(&self, obj: &mut Value) {
        default_at(obj, "/spec", "persistentVolumeReclaimPolicy", json!("Retain"));
        mode_and_phase(obj);
    }

    fn columns(&self) -> Columns {
        let spec = |f: &str| doc("io.k8s.api.core.v1.PersistentVolumeSpec", f);
        let status = |f: &str| doc("io.k8s.api.core.v1.PersistentVolumeStatus", f);
        Columns {
            defs: vec![
                name_column(),
                column("Capacity", "string", &spec("capacity"), 0),
                column("Access Modes", "string", &spec("accessModes"), 0),
                column("Reclaim Policy", "string", &spec("persistentVolumeReclaimPolicy"), 0),
                column("Status", "string", &status("phase"), 0),
                column("Claim", "string", &spec("claimRef"), 0),
                column("StorageClass", "string", "StorageClass of the pv", 0),
                column("VolumeAttributesClass", "string", "VolumeAttributesClass of the pv", 0),
                column("Reason", "string", &status("reason"), 0),
                age_column(),
                column("VolumeMode", "string", &spec("volumeMode"), 1),
            ],
            cells: Box::new(|o| {
                let claim = match (text(o, "/spec/claimRef/namespace"), text(o, "/spec/claimRef/name")) {
                    (_, "") => String::new(),
                    (ns, n) => format!("{ns}/{n}"),
                };
                let phase = if object::is_deleting(o) { "Terminating" } else { text(o, "/status/phase") };
                vec![
                    name(o),
                    json!(text(o, "/spec/capacity/storage")),
                    json!(access_modes(o.pointer("/spec/accessModes"))),
                    json!(text(o, "/spec/persistentVolumeReclaimPolicy")),
                    json!(phase),
                    json!(claim),
                    json!(text(o, "/spec/storageClassName")),
                    json!(or_unset(text(o, "/spec/volumeAttributesClassName"))),
                    json!(text(o, "/status/reason")),
                    age(o),
                    json!(or_unset(text(o, "/spec/volumeMode"))),
                ]
            }),
        }
    }
}

/// Sets the value at `pointer` of `to` to what `from` holds there (removed when it holds none).
fn copy(from: &Value, to: &mut Value, pointer: &str) {
    let Some((parent, key)) = pointer.rsplit_once('/') else {
        return;
    };
    let key = key.to_string();
    match from.pointer(pointer).cloned() {
        Some(v) => {
            if let Some(map) = ensure_object_at(to, parent) {
                map.insert(key, v);
            }
        }
        None => {
            if let Some(map) = to.pointer_mut(parent).and_then(Value::as_object_mut) {
                map.remove(&key);
            }
        }
    }
}

/// The object at `pointer` of `v` (`""` is `v` itself), created empty where absent.
fn ensure_object_at<'a>(v: &'a mut Value, pointer: &str) -> Option<&'a mut serde_json::Map<String, Value>> {
    if pointer.is_empty() {
        return v.as_object_mut();
    }
    ensure_object(v, pointer)
}

pub(crate) struct StorageClasses;

impl Strategy for StorageClasses {
    /// `SetDefaults_StorageClass`.
    fn defaults(&self, obj: &mut Value) {
        if let Some(map) = obj.as_object_mut() {
            map.entry("reclaimPolicy").or_insert(json!("Delete"));
            map.entry("volumeBindingMode").or_insert(json!("Immediate"));
        }
    }

    /// `ValidateStorageClassUpdate`: a class keeps its provisioner and how it provisions.
    fn validate_update(&self, old: &Value, new: &Value) -> Vec<Cause> {
        let mut causes = Vec::new();
        let parameters = |o: &Value| o.get("parameters").and_then(Value::as_object).cloned().unwrap_or_default();
        if parameters(old) != parameters(new) {
            causes.push(Cause::new(
                "FieldValueForbidden",
                "parameters",
                "Forbidden: updates to parameters are forbidden.",
            ));
        }
        for field in ["provisioner", "reclaimPolicy"] {
            if old.get(field) != new.get(field) {
                causes.push(Cause::new(
                    "FieldValueForbidden",
                    field,
                    format!("Forbidden: updates to {field} are forbidden."),
                ));
            }
        }
        check_immutable(old, new, "/volumeBindingMode", "volumeBindingMode", scalar, &mut causes);
        causes
    }
}

/// The defaults claims and volumes share: a filesystem, and the `Pending` phase.
fn mode_and_phase(obj: &mut Value) {
    default_at(obj, "/spec", "volumeMode", json!("Filesystem"));
    if let Some(status) = ensure_object(obj, "/status") {
        status.entry("phase").or_insert(json!("Pending"));
    }
}

/// `GetAccessModesAsString`: the short names, in the API's order.
fn access_modes(modes: Option<&Value>) -> String {
    let has = |m: &str| modes.and_then(Value::as_array).is_some_and(|l| l.iter().any(|x| x.as_str() == Some(m)));
    [("ReadWriteOnce", "RWO"), ("ReadOnlyMany", "ROX"), ("ReadWriteMany", "RWX"), ("ReadWriteOncePod", "RWOP")]
        .iter()
        .filter(|(long, _)| has(long))
        .map(|(_, short)| *short)
        .collect::<Vec<_>>()
        .join(",")
}

/// `GetPersistentVolumeClaimClass`: the beta annotation wins over the field.
fn storage_class(claim: &Value) -> &str {
    claim
        .pointer("/metadata/annotations/volume.beta.kubernetes.io~1storage-class")
        .and_then(Value::as_str)
        .unwrap_or_else(|| text(claim, "/spec/storageClassName"))
}

fn or_unset(s: &str) -> &str {
    if s.is_empty() { "<unset>" } else { s }
}
