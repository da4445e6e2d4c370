//! The discovery documents: `/api`, `/apis`, the `APIResourceList` of each group version, the
//! aggregated document of `/api` and `/apis` (`apidiscovery.k8s.io/v2`), and `/version`, all
//! read from the registry.

use serde_json::{Value, json};

use super::builtins;
use super::registry::Registry;
use super::resource::Subresource;

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
        for sub in &v.subresources {
            let mut doc = json!({
                "name": format!("{}/{}", rt.plural, sub.name),
                "singularName": "",
                "namespaced": rt.namespaced,
            });
            // The kind's group and version are named when they are not the resource's.
            if (sub.group.as_str(), sub.version.as_str()) != (group, version) {
                doc["group"] = json!(sub.group);
                doc["version"] = json!(sub.version);
            }
            doc["kind"] = json!(sub.kind);
            doc["verbs"] = json!(sub.verbs);
            resources.push(doc);
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

/// The aggregated discovery document (`apidiscovery.k8s.io/v2` `APIGroupDiscoveryList`) of
/// `/api` (`core`: the core group alone) or of `/apis` (every other group, in the order of
/// the `APIGroupList`): each group's versions, each version's resources sorted by name with
/// their subresources, from the same registry as the legacy documents.
pub(crate) fn aggregated(registry: &Registry, core: bool) -> Value {
    let groups: Vec<(String, Vec<String>)> =
        if core { vec![(String::new(), vec!["v1".to_string()])] } else { groups(registry) };
    let items: Vec<Value> = groups
        .iter()
        .map(|(group, versions)| {
            let mut metadata = json!({ "creationTimestamp": null });
            if !group.is_empty() {
                metadata = json!({ "name": group, "creationTimestamp": null });
            }
            let versions: Vec<Value> = versions.iter().map(|v| version_discovery(registry, group, v)).collect();
            json!({ "metadata": metadata, "versions": versions })
        })
        .collect();
    json!({ "kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {}, "items": items })
}

/// One version of a group in aggregated discovery (`APIVersionDiscovery`).
fn version_discovery(registry: &Registry, group: &str, version: &str) -> Value {
    let mut resources: Vec<(&str, Value)> = Vec::new();
    for rt in registry.all().filter(|rt| rt.group == group) {
        let Some(v) = rt.version(version) else {
            continue;
        };
        // A custom resource's kinds name their group and version; a built-in's only another's.
        let custom = rt.defined_by.is_some();
        let kind_of = |g: &str, v: &str, kind: &str| {
            if custom || (g, v) != (group, version) {
                json!({ "group": g, "version": v, "kind": kind })
            } else {
                json!({ "group": "", "version": "", "kind": kind })
            }
        };
        let mut doc = json!({
            "resource": rt.plural,
            "responseKind": kind_of(group, version, &rt.kind),
            "scope": if rt.namespaced { "Namespaced" } else { "Cluster" },
            "singularResource": rt.singular,
            "verbs": rt.verbs,
        });
        if !rt.short_names.is_empty() {
            doc["shortNames"] = json!(rt.short_names);
        }
        if !rt.categories.is_empty() {
            doc["categories"] = json!(rt.categories);
        }
        let mut subresources: Vec<&Subresource> = v.subresources.iter().collect();
        subresources.sort_by(|a, b| a.name.cmp(&b.name));
        if !subresources.is_empty() {
            doc["subresources"] = subresources
                .iter()
                .map(|s| {
                    json!({ "subresource": s.name, "responseKind": kind_of(&s.group, &s.version, &s.kind), "verbs": s.verbs })
                })
                .collect();
        }
        resources.push((&rt.plural, doc));
    }
    resources.sort_by(|a, b| a.0.cmp(b.0));
    let resources: Vec<Value> = resources.into_iter().map(|(_, doc)| doc).collect();
    json!({ "version": version, "resources": resources, "freshness": "Current" })
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
    let previous = minor.parse::<u32>().map(|m| m.saturating_sub(1).to_string()).unwrap_or_default();
    // `version.Info` in its Go order; 1.33 adds the emulated and minimum compatible versions.
    json!({
        "major": major,
        "minor": minor,
        "emulationMajor": major,
        "emulationMinor": minor,
        "minCompatibilityMajor": major,
        "minCompatibilityMinor": previous,
        "gitVersion": format!("v{version}-kubewasm"),
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2025-04-23T00:00:00Z",
        "goVersion": "go1.24.2",
        "compiler": "gc",
        "platform": "linux/amd64",
    })
}
