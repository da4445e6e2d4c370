//! Custom resource definitions for tests that need a kind of their own, in several versions.

use serde_json::{Value, json};

/// A namespaced CRD of `kind` (`plural` in `group`) serving `versions`, the first stored, each
/// with a schema that keeps whatever fields an object has.
pub fn crd(group: &str, kind: &str, plural: &str, versions: &[&str]) -> Value {
    let versions: Vec<Value> = versions
        .iter()
        .enumerate()
        .map(|(i, name)| {
            json!({"name": name, "served": true, "storage": i == 0,
                   "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}})
        })
        .collect();
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}")},
        "spec": {"group": group, "scope": "Namespaced",
                 "names": {"kind": kind, "plural": plural, "singular": kind.to_lowercase(), "listKind": format!("{kind}List")},
                 "versions": versions}
    })
}
