//! The `Plugin` kind (`kubewasm.io/v1alpha1`, cluster-scoped): its custom resource definition,
//! which `kubewasm crds --host` prints, and the spec and status the host reads and writes.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::distribution::keyless;

/// The API group of the host's own kinds.
pub const GROUP: &str = "kubewasm.io";
/// The version of the `Plugin` kind.
pub const VERSION: &str = "v1alpha1";
/// The kind.
pub const KIND: &str = "Plugin";

/// What an operator asks of one plugin.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PluginSpec {
    pub source: Source,
    #[serde(default)]
    pub verification: Verification,
    /// The keys of a plugin directory's `NAME.toml` (`namespace`, `limits`, `events`,
    /// `http`, `webhooks`, `config`), as an object.
    #[serde(default)]
    pub settings: Option<Value>,
    /// `false` stops the plugin; its children stay.
    #[serde(default = "enabled")]
    pub enabled: bool,
    /// Who the plugin acts as when the host gives each plugin its own identity.
    #[serde(default)]
    pub identity: Option<Identity>,
    /// A candidate version rolled out beside the one `source` names.
    #[serde(default)]
    pub rollout: Option<RolloutSpec>,
}

/// The `ServiceAccount`, in the host's namespace, a plugin acts as (`kubewasm run
/// --plugin-identities`); by default `kubewasm-plugin-NAME`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Identity {
    pub service_account_name: String,
}

/// A candidate version and how it takes part: promoted by moving its source to
/// `spec.source` and removing the rollout, rolled back by removing the rollout.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RolloutSpec {
    /// Where the candidate comes from; verified with the same keys as `spec.source`.
    pub candidate: Source,
    pub mode: RolloutMode,
    /// The share of parents a `Canary` reconciles, 0 to 100.
    #[serde(default)]
    pub percent: u8,
    #[serde(default)]
    pub rollback: RollbackSpec,
}

/// How the candidate takes part.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum RolloutMode {
    /// Runs after the active on every reconcile, writes nothing; differences are reported.
    #[default]
    Shadow,
    /// Reconciles `percent` of the parents, the same ones while the rollout stays.
    Canary,
}

/// When the candidate is rolled back on its own: more than `errorPercent` of its
/// reconciles in the last `windowSeconds` failed, once it made `minReconciles` there.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RollbackSpec {
    #[serde(default)]
    pub error_percent: Option<u8>,
    #[serde(default)]
    pub min_reconciles: Option<u32>,
    #[serde(default)]
    pub window_seconds: Option<u32>,
}

fn enabled() -> bool {
    true
}

/// Where the module comes from.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Source {
    /// An OCI reference: `REGISTRY/REPOSITORY:TAG` or `…@sha256:DIGEST`.
    pub oci: String,
    /// The manifest digest the reference must resolve to; pins a tag.
    #[serde(default)]
    pub digest: Option<String>,
    /// A `kubernetes.io/dockerconfigjson` Secret in the host's namespace with the registry's
    /// credentials.
    #[serde(default)]
    pub pull_secret: Option<String>,
    /// Plain HTTP, for a registry on loopback only.
    #[serde(default)]
    pub insecure: bool,
}

/// Which signatures make the module trusted.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Verification {
    /// PEM public keys (as `cosign.pub`); when any is given, the module loads only with a
    /// cosign signature by one of them over its manifest's digest.
    #[serde(default)]
    pub keys: Vec<String>,
    /// Keyless signers (cosign's `--certificate-oidc-issuer` and `--certificate-identity`):
    /// a signature certified by Fulcio for one of them and logged in Rekor is trusted too.
    #[serde(default)]
    pub keyless: Vec<keyless::Identity>,
}

/// One condition of the status, as `metav1.Condition`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    #[serde(rename = "type")]
    pub kind: String,
    /// `True` or `False`.
    pub status: String,
    pub reason: String,
    pub message: String,
    pub last_transition_time: String,
    pub observed_generation: i64,
}

/// The `Plugin` custom resource definition.
pub fn definition() -> Value {
    let condition = json!({
        "type": "object",
        "required": ["type", "status", "reason", "message", "lastTransitionTime"],
        "properties": {
            "type": {"type": "string", "description": "Pulled, Verified, Loaded or Ready."},
            "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
            "reason": {"type": "string"},
            "message": {"type": "string"},
            "lastTransitionTime": {"type": "string", "format": "date-time"},
            "observedGeneration": {"type": "integer", "format": "int64"}
        }
    });
    let spec = json!({
        "type": "object",
        "required": ["source"],
        "properties": {
            "source": source_schema("Where the module comes from: a Wasm OCI artifact (kubewasm push)."),
            "rollout": rollout_schema(),
            "identity": {
                "type": "object",
                "description": "Who the plugin acts as when the host runs with --plugin-identities (default: the ServiceAccount kubewasm-plugin-NAME).",
                "required": ["serviceAccountName"],
                "properties": {
                    "serviceAccountName": {"type": "string", "minLength": 1,
                                           "description": "A ServiceAccount in the host's namespace; the host impersonates it."}
                }
            },
            "verification": {
                "type": "object",
                "properties": {
                    "keys": {"type": "array", "items": {"type": "string"},
                             "description": "PEM public keys; when given, only a module with a cosign signature by one of them loads."},
                    "keyless": {
                        "type": "array",
                        "description": "Keyless signers: a cosign signature whose Fulcio certificate names one of them, logged in Rekor, is trusted too (checked against the host's Sigstore trusted root).",
                        "items": {
                            "type": "object",
                            "required": ["issuer"],
                            "oneOf": [{"required": ["subject"]}, {"required": ["subjectPrefix"]}],
                            "properties": {
                                "issuer": {"type": "string", "minLength": 1, "description": "The OIDC issuer, exactly, e.g. https://token.actions.githubusercontent.com."},
                                "subject": {"type": "string", "minLength": 1, "description": "The certificate's e-mail address or URI, exactly."},
                                "subjectPrefix": {"type": "string", "pattern": "^https://.*/$", "description": "Any URI subject under this prefix, which ends at a `/` (e.g. a workflow's `...release.yaml@refs/tags/`)."}
                            }
                        }
                    }
                }
            },
            "settings": {
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": true,
                "description": "What a plugin directory's NAME.toml holds, with its keys: namespace, limits, events, http, webhooks, config."
            },
            "enabled": {"type": "boolean", "default": true, "description": "false stops the plugin; its children stay."}
        }
    });
    let column = |name: &str, path: &str| json!({"name": name, "type": "string", "jsonPath": path});
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("plugins.{GROUP}")},
        "spec": {
            "group": GROUP,
            "scope": "Cluster",
            "names": {"kind": KIND, "plural": "plugins", "singular": "plugin", "listKind": "PluginList"},
            "versions": [{
                "name": VERSION,
                "served": true,
                "storage": true,
                "subresources": {"status": {}},
                "additionalPrinterColumns": [
                    column("Source", ".spec.source.oci"),
                    column("Digest", ".status.digest"),
                    column("Verified", ".status.conditions[?(@.type==\"Verified\")].status"),
                    column("Ready", ".status.conditions[?(@.type==\"Ready\")].status"),
                    column("Rollout", ".status.rollout.phase"),
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
                ],
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "description": "A plugin the host pulls from an OCI registry, verifies and runs.",
                    "required": ["spec"],
                    "properties": {"spec": spec, "status": status_schema(&condition)}
                }}
            }]
        }
    })
}

/// The schema of a module's source.
fn source_schema(description: &str) -> Value {
    json!({
        "type": "object",
        "description": description,
        "required": ["oci"],
        "properties": {
            "oci": {"type": "string", "minLength": 1,
                    "description": "REGISTRY/REPOSITORY:TAG or REGISTRY/REPOSITORY@sha256:DIGEST."},
            "digest": {"type": "string", "pattern": "^sha256:[a-f0-9]{64}$",
                       "description": "The manifest digest the reference must resolve to."},
            "pullSecret": {"type": "string",
                           "description": "A kubernetes.io/dockerconfigjson Secret in the host's namespace."},
            "insecure": {"type": "boolean", "description": "Plain HTTP, for a loopback registry only."}
        }
    })
}

/// The schema of `spec.rollout`.
fn rollout_schema() -> Value {
    json!({
        "type": "object",
        "description": "A candidate version beside the active one. Promote: move its source to spec.source and remove the rollout; roll back: remove the rollout.",
        "required": ["candidate", "mode"],
        "properties": {
            "candidate": source_schema("The candidate's module; verified with spec.verification's keys."),
            "mode": {"type": "string", "enum": ["Shadow", "Canary"],
                     "description": "Shadow: runs after the active on every reconcile and writes nothing, its differences reported. Canary: reconciles percent of the parents."},
            "percent": {"type": "integer", "minimum": 0, "maximum": 100, "default": 0,
                        "description": "The share of parents a Canary reconciles (by a hash of their uid: the same parents while the rollout stays)."},
            "rollback": {
                "type": "object",
                "description": "Rolls the candidate back when more than errorPercent of its reconciles in the last windowSeconds failed, once it made minReconciles there.",
                "properties": {
                    "errorPercent": {"type": "integer", "minimum": 0, "maximum": 100, "default": 50},
                    "minReconciles": {"type": "integer", "minimum": 1, "default": 10},
                    "windowSeconds": {"type": "integer", "minimum": 1, "default": 300}
                }
            }
        }
    })
}

/// The schema of the status, with `condition` the schema of one condition.
fn status_schema(condition: &Value) -> Value {
    json!({
        "type": "object",
        "properties": {
            "observedGeneration": {"type": "integer", "format": "int64"},
            "digest": {"type": "string", "description": "The manifest digest of the version that runs."},
            "layerDigest": {"type": "string", "description": "The module's SHA-256, the plugin's hash."},
            "plugin": {"type": "string", "description": "The name in the module's manifest."},
            "manifest": {
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": true,
                "description": "What the running version declares: its contract, parent, children, related and watched kinds, the kinds it defaults and validates, whether it converts, its finalizer."
            },
            "lastError": {"type": "string"},
            "rollout": {
                "type": "object",
                "description": "How the candidate of spec.rollout fares.",
                "x-kubernetes-preserve-unknown-fields": true,
                "properties": {
                    "phase": {"type": "string", "description": "Shadow, Canary, RolledBack or Failed."},
                    "candidateDigest": {"type": "string"},
                    "message": {"type": "string"},
                    "compared": {"type": "integer", "format": "int64"},
                    "differing": {"type": "integer", "format": "int64"},
                    "candidateReconciles": {"type": "integer", "format": "int64"},
                    "candidateErrors": {"type": "integer", "format": "int64"}
                }
            },
            "conditions": {
                "type": "array",
                "items": condition,
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["type"]
            }
        }
    })
}
