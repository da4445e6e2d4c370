//! `ConfigMaps` and Secrets, and the controller that publishes the cluster's CA in every
//! namespace.

use serde_json::{Value, json};

use super::core::active_namespaces;
use super::go_value::{immutable, scalar};
use crate::printers::{Columns, age, age_column, column, doc, name, name_column, text};
use crate::resource::GroupResource;
use crate::selectors::{Refusal, SelectableFields, field_value};
use crate::status::Cause;
use crate::store::Store;
use crate::strategy::{Controller, How, Strategy, Write};

pub(crate) struct ConfigMaps;

impl Strategy for ConfigMaps {
    /// `ValidateConfigMapUpdate`: an immutable `ConfigMap` keeps its data.
    fn validate_update(&self, old: &Value, new: &Value) -> Vec<Cause> {
        immutable_data(old, new, &["data", "binaryData"])
    }

    fn columns(&self) -> Columns {
        Columns::one(column("Data", "integer", &doc("io.k8s.api.core.v1.ConfigMap", "data"), 0), |o| {
            json!(entries(o, "data") + entries(o, "binaryData"))
        })
    }
}

pub(crate) struct Secrets;

impl Strategy for Secrets {
    /// `type` defaults to `Opaque`; `stringData` is folded into base64 `data`.
    fn defaults(&self, obj: &mut Value) {
        use base64::Engine as _;
        let engine = base64::engine::general_purpose::STANDARD;
        let Some(map) = obj.as_object_mut() else {
            return;
        };
        map.entry("type").or_insert(json!("Opaque"));
        if let Some(Value::Object(plain)) = map.remove("stringData") {
            let data = map.entry("data").or_insert_with(|| json!({}));
            if let Some(data) = data.as_object_mut() {
                for (k, v) in plain {
                    let text = v.as_str().map_or_else(|| v.to_string(), String::from);
                    data.insert(k, json!(engine.encode(text)));
                }
            }
        }
    }

    /// `ValidateSecretUpdate`: the type never changes, and an immutable Secret keeps its data
    /// (`stringData` is folded into `data` by then).
    fn validate_update(&self, old: &Value, new: &Value) -> Vec<Cause> {
        let mut causes = Vec::new();
        if old.get("type") != new.get("type") {
            causes.push(immutable("type", &scalar(new.get("type"))));
        }
        causes.extend(immutable_data(old, new, &["data"]));
        causes
    }

    fn selectable_fields(&self) -> SelectableFields {
        SelectableFields::new(&["type", "metadata.namespace", "metadata.name"], Refusal::Unsupported, field_value)
    }

    fn columns(&self) -> Columns {
        Columns {
            defs: vec![
                name_column(),
                column("Type", "string", &doc("io.k8s.api.core.v1.Secret", "type"), 0),
                column("Data", "string", &doc("io.k8s.api.core.v1.Secret", "data"), 0),
                age_column(),
            ],
            cells: Box::new(|o| vec![name(o), json!(text(o, "/type")), json!(entries(o, "data")), age(o)]),
        }
    }
}

/// Once `immutable` is set, it stays set and `fields` keep their contents (an empty map and
/// none are the same, as Go's `reflect.DeepEqual` of decoded maps is not: the real server
/// compares the decoded objects, where both are empty maps).
fn immutable_data(old: &Value, new: &Value, fields: &[&str]) -> Vec<Cause> {
    if old.get("immutable").and_then(Value::as_bool) != Some(true) {
        return Vec::new();
    }
    let forbidden =
        |field: &str| Cause::new("FieldValueForbidden", field, "Forbidden: field is immutable when `immutable` is set");
    let mut causes = Vec::new();
    if new.get("immutable").and_then(Value::as_bool) != Some(true) {
        causes.push(forbidden("immutable"));
    }
    let contents = |obj: &Value, field: &str| obj.get(field).and_then(Value::as_object).cloned().unwrap_or_default();
    for field in fields {
        if contents(old, field) != contents(new, field) {
            causes.push(forbidden(field));
        }
    }
    causes
}

fn entries(obj: &Value, field: &str) -> usize {
    obj.get(field).and_then(Value::as_object).map_or(0, serde_json::Map::len)
}

/// The root CA publisher (`pkg/controller/certificates/rootcacertpublisher`): every active
/// namespace has the `ConfigMap` `kube-root-ca.crt` whose `ca.crt` is the CA that signed the
/// server's certificate, so that pods (and tests) can verify the API server. Deleted, it comes
/// back; its data changed, or its description annotation removed, it is reset.
pub(in crate::kinds) struct RootCaPublisher {
    /// The CA certificate, PEM.
    pub ca: String,
}

const ROOT_CA: &str = "kube-root-ca.crt";
const DESCRIPTION_KEY: &str = "kubernetes.io/description";
const DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";

impl Controller for RootCaPublisher {
    fn watches(&self) -> Vec<GroupResource> {
        vec![(String::new(), "namespaces".into()), (String::new(), "configmaps".into())]
    }

    fn reconcile(&self, store: &Store) -> Vec<Write> {
        let configmaps = (String::new(), "configmaps".to_string());
        let data = json!({ "ca.crt": self.ca });
        let mut writes = Vec::new();
        for namespace in active_namespaces(store) {
            let how = match store.get(&configmaps, &namespace, ROOT_CA) {
                None => How::Create(json!({
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": { "name": ROOT_CA, "namespace": namespace, "annotations": { DESCRIPTION_KEY: DESCRIPTION } },
                    "data": data,
                })),
                Some(found) => {
                    let described = found
                        .pointer("/metadata/annotations")
                        .and_then(|a| a.get(DESCRIPTION_KEY))
                        .and_then(Value::as_str)
                        .is_some_and(|d| !d.is_empty());
                    if found.get("data") == Some(&data) && described {
                        continue;
                    }
                    let mut reset = (*found).clone();
                    reset["data"] = data.clone();
                    let annotations =
                        crate::object::meta_mut(&mut reset).entry("annotations").or_insert_with(|| json!({}));
                    if !annotations.is_object() {
                        *annotations = json!({});
                    }
                    annotations[DESCRIPTION_KEY] = json!(DESCRIPTION);
                    How::Update(reset)
                }
            };
            writes.push(Write {
                resource: configmaps.clone(),
                namespace,
                name: ROOT_CA.into(),
                manager: "kube-controller-manager",
                how,
            });
        }
        writes
    }
}
