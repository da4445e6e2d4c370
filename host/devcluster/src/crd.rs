//! `CustomResourceDefinitions`: checking one, serving its resource, and its Established status.

use std::cmp::Ordering;

use serde_json::{Value, json};

use super::discovery::{ResourceType, ScalePaths, Version};
use super::object;
use super::status::Cause;

fn str_at<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    let mut cur = v;
    for p in path {
        match cur.get(*p) {
            Some(n) => cur = n,
            None => return "",
        }
    }
    cur.as_str().unwrap_or("")
}

fn strings_at(v: &Value, path: &[&str]) -> Vec<String> {
    let mut cur = v;
    for p in path {
        match cur.get(*p) {
            Some(n) => cur = n,
            None => return Vec::new(),
        }
    }
    cur.as_array().map(|a| a.iter().filter_map(|s| s.as_str().map(String::from)).collect()).unwrap_or_default()
}

/// Checks the parts of a CRD the server relies on; the causes of a 422 when something is wrong.
pub(crate) fn validate(crd: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let group = str_at(crd, &["spec", "group"]);
    let plural = str_at(crd, &["spec", "names", "plural"]);
    let kind = str_at(crd, &["spec", "names", "kind"]);
    let scope = str_at(crd, &["spec", "scope"]);
    if group.is_empty() {
        causes.push(Cause::new("FieldValueRequired", "spec.group", "Required value"));
    }
    if plural.is_empty() {
        causes.push(Cause::new("FieldValueRequired", "spec.names.plural", "Required value"));
    }
    if kind.is_empty() {
        causes.push(Cause::new("FieldValueRequired", "spec.names.kind", "Required value"));
    }
    if scope != "Namespaced" && scope != "Cluster" {
        causes.push(Cause::new(
            "FieldValueNotSupported",
            "spec.scope",
            format!("Unsupported value: {scope:?}: supported values: \"Cluster\", \"Namespaced\""),
        ));
    }
    let name = object::name(crd);
    if !group.is_empty() && !plural.is_empty() && name != format!("{plural}.{group}") {
        causes.push(Cause::new(
            "FieldValueInvalid",
            "metadata.name",
            format!("Invalid value: {name:?}: must be spec.names.plural+\".\"+spec.group"),
        ));
    }
    let versions = crd.pointer("/spec/versions").and_then(Value::as_array).cloned().unwrap_or_default();
    if versions.is_empty() {
        causes.push(Cause::new(
            "FieldValueInvalid",
            "spec.versions",
            "Invalid value: null: must have exactly one version marked as storage version",
        ));
    } else {
        let storage = versions.iter().filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true)).count();
        if storage != 1 {
            causes.push(Cause::new(
                "FieldValueInvalid",
                "spec.versions",
                format!(
                    "Invalid value: \"array\": must have exactly one version marked as storage version, found {storage}"
                ),
            ));
        }
    }
    causes
}

/// The resource a CRD defines, with its served versions (highest priority first).
pub(crate) fn resource_type(crd: &Value) -> ResourceType {
    let spec = crd.get("spec").cloned().unwrap_or_default();
    let mut versions: Vec<Version> = spec
        .get("versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|v| v.get("served").and_then(Value::as_bool) != Some(false))
        .map(|v| Version {
            name: str_at(v, &["name"]).to_string(),
            schema: v.pointer("/schema/openAPIV3Schema").cloned(),
            definition: None,
            columns: v.get("additionalPrinterColumns").and_then(Value::as_array).cloned().unwrap_or_default(),
            status: v.pointer("/subresources/status").is_some(),
            scale: v.pointer("/subresources/scale").map(|s| ScalePaths {
                spec_replicas: str_at(s, &["specReplicasPath"]).to_string(),
                status_replicas: str_at(s, &["statusReplicasPath"]).to_string(),
                label_selector: s.get("labelSelectorPath").and_then(Value::as_str).map(String::from),
            }),
        })
        .collect();
    versions.sort_by(|a, b| version_priority(&a.name, &b.name));
    let kind = str_at(&spec, &["names", "kind"]).to_string();
    let singular = str_at(&spec, &["names", "singular"]);
    ResourceType {
        group: str_at(&spec, &["group"]).to_string(),
        versions,
        singular: if singular.is_empty() { kind.to_lowercase() } else { singular.to_string() },
        kind,
        plural: str_at(&spec, &["names", "plural"]).to_string(),
        namespaced: str_at(&spec, &["scope"]) != "Cluster",
        verbs: ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
            .map(String::from)
            .to_vec(),
        short_names: strings_at(&spec, &["names", "shortNames"]),
        categories: strings_at(&spec, &["names", "categories"]),
        generation: true,
        return_deleted: false,
        builtin: false,
    }
}

/// Kubernetes version ordering: GA before beta before alpha, higher numbers first.
pub(crate) fn version_priority(a: &str, b: &str) -> Ordering {
    fn parse(v: &str) -> Option<(u32, u32, u32)> {
        let rest = v.strip_prefix('v')?;
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        let major: u32 = digits.parse().ok()?;
        let tail = &rest[digits.len()..];
        if tail.is_empty() {
            return Some((3, major, 0));
        }
        let (stage, n) = if let Some(n) = tail.strip_prefix("beta") {
            (2, n)
        } else if let Some(n) = tail.strip_prefix("alpha") {
            (1, n)
        } else {
            return None;
        };
        Some((stage, major, n.parse().ok()?))
    }
    match (parse(a), parse(b)) {
        (Some((sa, ma, na)), Some((sb, mb, nb))) => (sb, mb, nb).cmp(&(sa, ma, na)),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => a.cmp(b),
    }
}

/// Sets the status a real server reports for an accepted, established CRD.
pub(crate) fn set_established(crd: &mut Value) {
    let now = object::now();
    let names = crd.pointer("/spec/names").cloned().unwrap_or_else(|| json!({}));
    let mut accepted = names.clone();
    if accepted.get("singular").is_none()
        && let Some(kind) = names.get("kind").and_then(Value::as_str)
    {
        accepted["singular"] = json!(kind.to_lowercase());
    }
    if accepted.get("listKind").is_none()
        && let Some(kind) = names.get("kind").and_then(Value::as_str)
    {
        accepted["listKind"] = json!(format!("{kind}List"));
    }
    let storage: Vec<String> = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .filter_map(|v| v.get("name").and_then(Value::as_str).map(String::from))
        .collect();
    let mut stored: Vec<String> = crd
        .pointer("/status/storedVersions")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|s| s.as_str().map(String::from)).collect())
        .unwrap_or_default();
    for s in storage {
        if !stored.contains(&s) {
            stored.push(s);
        }
    }
    let keep_time = |kind: &str| -> String {
        crd.pointer("/status/conditions")
            .and_then(Value::as_array)
            .and_then(|c| c.iter().find(|c| c.get("type").and_then(Value::as_str) == Some(kind)))
            .and_then(|c| c.get("lastTransitionTime").and_then(Value::as_str))
            .map_or_else(|| now.clone(), String::from)
    };
    let status = json!({
        "conditions": [
            { "type": "NamesAccepted", "status": "True", "lastTransitionTime": keep_time("NamesAccepted"),
              "reason": "NoConflicts", "message": "no conflicts found" },
            { "type": "Established", "status": "True", "lastTransitionTime": keep_time("Established"),
              "reason": "InitialNamesAccepted", "message": "the initial names have been accepted" },
        ],
        "acceptedNames": accepted,
        "storedVersions": stored,
    });
    crd["status"] = status;
}

/// The finalizer that holds a deleted CRD until its custom resources are gone.
pub(crate) const CLEANUP: &str = "customresourcecleanup.apiextensions.k8s.io";

/// Fills the defaults a real server adds to a CRD (`conversion`, `listKind`, `singular`, and
/// the cleanup finalizer).
pub(crate) fn default_crd(crd: &mut Value) {
    let mut finalizers = object::finalizers(crd);
    if !object::is_deleting(crd) && !finalizers.iter().any(|f| f == CLEANUP) {
        finalizers.push(CLEANUP.to_string());
        object::set_finalizers(crd, &finalizers);
    }
    if crd.pointer("/spec/conversion").is_none()
        && let Some(spec) = crd.get_mut("spec").and_then(Value::as_object_mut)
    {
        spec.insert("conversion".into(), json!({ "strategy": "None" }));
    }
    if let Some(names) = crd.pointer_mut("/spec/names").and_then(Value::as_object_mut) {
        let kind = names.get("kind").and_then(Value::as_str).unwrap_or_default().to_string();
        if !names.contains_key("singular") {
            names.insert("singular".into(), json!(kind.to_lowercase()));
        }
        if !names.contains_key("listKind") {
            names.insert("listKind".into(), json!(format!("{kind}List")));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_sort_like_kubernetes() {
        let mut v = vec!["v1alpha1", "v2", "v1beta2", "v1", "v1beta1", "foo"];
        v.sort_by(|a, b| version_priority(a, b));
        assert_eq!(v, ["v2", "v1", "v1beta2", "v1beta1", "v1alpha1", "foo"]);
    }
}
