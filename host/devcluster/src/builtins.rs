//! The built-in resources of the Kubernetes version this server follows and their `OpenAPI`
//! definitions, embedded from `data/` (written by `data/generate.py` from upstream packages,
//! never by hand). Everything kind-independent that depends on a built-in's shape reads it
//! here: discovery, server-side apply list types, strategic merge patch, decoding, `/openapi`.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde::Deserialize;
use serde_json::{Map, Value};

/// One served resource, as `data/resources.json` lists it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Resource {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub plural: String,
    pub singular: String,
    pub namespaced: bool,
    pub verbs: Vec<String>,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    pub subresources: Vec<Subresource>,
}

/// A subresource (`status`, `scale`, `log`...) of a [`Resource`]: its name, the kind its
/// requests answer, and its verbs.
#[derive(Debug, Deserialize)]
pub(crate) struct Subresource {
    pub name: String,
    pub group: String,
    pub version: String,
    pub kind: String,
    pub verbs: Vec<String>,
}

#[derive(Deserialize)]
struct ResourcesFile {
    kubernetes: String,
    resources: Vec<Resource>,
}

struct Data {
    kubernetes: String,
    resources: Vec<Resource>,
    definitions: Map<String, Value>,
    /// `(group, version, kind)` to the name of its definition.
    by_kind: HashMap<(String, String, String), String>,
}

fn data() -> &'static Data {
    static DATA: OnceLock<Data> = OnceLock::new();
    DATA.get_or_init(|| {
        // Both files are generated and checked in tests; a parse failure is a build defect.
        let file: ResourcesFile =
            serde_json::from_str(include_str!("../data/resources.json")).expect("data/resources.json parses");
        let definitions: Map<String, Value> =
            serde_json::from_str(include_str!("../data/definitions.json")).expect("data/definitions.json parses");
        let mut by_kind = HashMap::new();
        for (name, schema) in &definitions {
            for gvk in schema.get("x-kubernetes-group-version-kind").and_then(Value::as_array).into_iter().flatten() {
                let part = |k: &str| gvk.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
                by_kind.insert((part("group"), part("version"), part("kind")), name.clone());
            }
        }
        Data { kubernetes: file.kubernetes, resources: file.resources, definitions, by_kind }
    })
}

/// The Kubernetes version of the data, e.g. `1.33.0`.
pub(crate) fn kubernetes_version() -> &'static str {
    &data().kubernetes
}

/// Every built-in resource served, in `(group, version, plural)` order.
pub(crate) fn resources() -> &'static [Resource] {
    &data().resources
}

/// Every definition, by its `OpenAPI` name (`io.k8s.api.apps.v1.Deployment`).
pub(crate) fn definitions() -> &'static Map<String, Value> {
    &data().definitions
}

/// The name of the definition of a built-in kind.
pub(crate) fn definition_name(group: &str, version: &str, kind: &str) -> Option<&'static str> {
    data().by_kind.get(&(group.to_string(), version.to_string(), kind.to_string())).map(String::as_str)
}

/// The definition of a built-in kind.
pub(crate) fn definition(group: &str, version: &str, kind: &str) -> Option<&'static Value> {
    definition_name(group, version, kind).and_then(|name| definitions().get(name))
}

/// `ObjectMeta`'s definition: the shape of every object's `metadata`, custom resources included.
pub(crate) fn object_meta() -> &'static Value {
    static EMPTY: Value = Value::Null;
    definitions().get("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta").unwrap_or(&EMPTY)
}

/// The definition a `$ref` names, or the schema itself when it is not a reference.
pub(crate) fn resolve(schema: &Value) -> &Value {
    let mut current = schema;
    // Definitions refer to one another by name only; a chain is at most a few long.
    for _ in 0..8 {
        match reference(current).and_then(|name| definitions().get(name)) {
            Some(next) => current = next,
            None => break,
        }
    }
    current
}

/// The definition name of a `$ref` schema (`#/definitions/NAME`).
pub(crate) fn reference(schema: &Value) -> Option<&str> {
    schema.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix("#/definitions/"))
}

/// The schema of `key` in an object schema: a declared property, or the value schema of a map.
pub(crate) fn property<'a>(schema: &'a Value, key: &str) -> Option<&'a Value> {
    let schema = resolve(schema);
    schema
        .get("properties")
        .and_then(|p| p.get(key))
        .or_else(|| schema.get("additionalProperties").filter(|a| a.is_object()))
}

/// The item schema of an array schema.
pub(crate) fn items(schema: &Value) -> Option<&Value> {
    resolve(schema).get("items")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_resource_has_its_definition() {
        let missing: Vec<_> = resources()
            .iter()
            .filter(|r| definition(&r.group, &r.version, &r.kind).is_none())
            .map(|r| format!("{}/{} {}", r.group, r.version, r.kind))
            .collect();
        assert!(missing.is_empty(), "resources without a definition: {missing:?}");
        assert!(resources().len() > 50, "the stable resources of Kubernetes: {}", resources().len());
    }

    #[test]
    fn list_types_come_from_the_definitions() {
        let ports = property(definition("", "v1", "Service").unwrap(), "spec")
            .and_then(|spec| property(spec, "ports"))
            .unwrap();
        assert_eq!(ports["x-kubernetes-list-type"], "map");
        assert_eq!(ports["x-kubernetes-list-map-keys"], serde_json::json!(["port", "protocol"]));
        let tolerations = property(definition("apps", "v1", "Deployment").unwrap(), "spec")
            .and_then(|s| property(s, "template"))
            .and_then(|t| property(t, "spec"))
            .and_then(|s| property(s, "tolerations"))
            .unwrap();
        assert_eq!(tolerations["x-kubernetes-list-type"], "atomic");
        let labels = property(object_meta(), "labels").unwrap();
        assert_eq!(property(labels, "app").unwrap()["type"], "string", "a map's value schema");
    }
}
