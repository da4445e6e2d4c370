//! The discovery documents: `/api`, `/apis`, the `APIResourceList` of each group version, and
//! `/version`, read from the registry.

use serde_json::{Value, json};

use super::builtins;
use super::registry::Registry;

/// Group names with their versions, preferred version first, in the order `/apis` lists them.
fn groups(registry: &Registry) -> Vec<(String, Vec<String>)> {
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for rt in registry.all().filter(|rt| !rt.group.is_empty()) {
        let entry = if let Some(i) = groups.iter_mut().position(|(g, _)| *g == rt.group) {
            &mut groups[i].1
        } else {
            groups.push((rt.group.clone(), Vec::new()));
            &mut groups.last_mut().expect("just pushed").1
        };
        for v in &rt.versions {
            if !entry.contains(&v.name) {
                entry.push(v.name.clone());
            }
        }
    }
    groups
}

/// `/apis`: an `APIGroupList`.
pub(crate) fn group_list(registry: &Registry) -> Value {
    let groups: Vec<Value> = groups(registry).iter().map(|(g, vs)| group_doc(g, vs)).collect();
    json!({ "kind": "APIGroupList", "apiVersion": "v1", "groups": groups })
}

/// `/apis/{group}`: an `APIGroup`, or `None` when the group is not served.
pub(crate) fn group(registry: &Registry, group: &str) -> Option<Value> {
    groups(registry).iter().find(|(g, _)| g == group).map(|(g, vs)| {
        let mut doc = group_doc(g, vs);
        doc["kind"] = json!("APIGroup");
        doc["apiVersion"] = json!("v1");
        doc
    })
}

/// `/api/v1` or `/apis/{group}/{version}`: an `APIResourceList`, or `None` when not served.
pub(crate) fn resource_list(registry: &Registry, group: &str, version: &str) -> Option<Value> {
    let mut resources = Vec::new();
    for rt in registry.all().filter(|rt| rt.group == group) {
        let Some(v) = rt.version(version) else {
            continue;
        };
        let mut doc = json!({
            "name": rt.plural,
            "singularName": rt.singular,
            "namespaced": rt.namespaced,
            "kind": rt.kind,
            "verbs": rt.verbs,
        });
        if !rt.short_names.is_empty() {
            doc["shortNames"] = json!(rt.short_names);
        }
        if !rt.categories.is_empty() {
            doc["categories"] = json!(rt.categories);
        }
        resources.push(doc);
        if v.status {
            resources.push(json!({
                "name": format!("{}/status", rt.plural),
                "singularName": "",
                "namespaced": rt.namespaced,
                "kind": rt.kind,
                "verbs": ["get", "patch", "update"],
            }));
        }
        if v.scale.is_some() {
            resources.push(json!({
                "name": format!("{}/scale", rt.plural),
                "singularName": "",
                "namespaced": rt.namespaced,
                "group": "autoscaling",
                "version": "v1",
                "kind": "Scale",
                "verbs": ["get", "patch", "update"],
            }));
        }
        for sub in rt.strategy(version).answered_subresources() {
            resources.push(json!({
                "name": format!("{}/{}", rt.plural, sub.name),
                "singularName": "",
                "namespaced": rt.namespaced,
                "group": sub.group,
                "version": sub.version,
                "kind": sub.kind,
                "verbs": sub.verbs,
            }));
        }
    }
    if resources.is_empty() {
        return None;
    }
    let group_version = if group.is_empty() { version.to_string() } else { format!("{group}/{version}") };
    Some(
        json!({ "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources }),
    )
}

fn group_doc(group: &str, versions: &[String]) -> Value {
    let versions: Vec<Value> =
        versions.iter().map(|v| json!({ "groupVersion": format!("{group}/{v}"), "version": v })).collect();
    json!({ "name": group, "versions": versions, "preferredVersion": versions[0] })
}

/// `/api`: the core group's versions.
pub(crate) fn core_versions(address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{ "clientCIDR": "0.0.0.0/0", "serverAddress": address }],
    })
}

/// `/version`: the Kubernetes version whose API this server follows.
pub(crate) fn version_info() -> Value {
    let version = builtins::kubernetes_version();
    let mut parts = version.split('.');
    let major = parts.next().unwrap_or_default();
    let minor = parts.next().unwrap_or_default();
    json!({
        "major": major,
        "minor": minor,
        "gitVersion": format!("v{version}-kubewasm"),
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2025-04-23T00:00:00Z",
        "goVersion": "go1.24.2",
        "compiler": "gc",
        "platform": "linux/amd64",
    })
}
