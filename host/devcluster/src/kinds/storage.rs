//! `PersistentVolumeClaims` and `PersistentVolumes`.

use serde_json::{Value, json};

use super::{default_at, ensure_object};
use crate::object;
use crate::printers::{Columns, age, age_column, column, doc, name, name_column, text};
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
