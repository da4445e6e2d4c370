//! The served resources (built-ins and CRDs) and the discovery documents that describe them.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};

use super::builtins;
use super::kinds::{self, Strategy};
use super::reviews;

/// Where a subresource reads and writes replica counts (the `scale` subresource).
#[derive(Debug, Clone)]
pub(crate) struct ScalePaths {
    pub spec_replicas: String,
    pub status_replicas: String,
    pub label_selector: Option<String>,
}

/// One served version of a resource, with what differs between versions of a CRD.
#[derive(Debug, Clone)]
pub(crate) struct Version {
    pub name: String,
    /// The `openAPIV3Schema` of a CRD version; `None` for built-ins.
    pub schema: Option<Value>,
    /// The upstream `OpenAPI` definition of a built-in kind; `None` for custom resources.
    pub definition: Option<&'static Value>,
    /// `additionalPrinterColumns` of a CRD version.
    pub columns: Vec<Value>,
    pub status: bool,
    pub scale: Option<ScalePaths>,
}

/// A kind of object the server stores, reached at `/api[s]/{group}/{version}/.../{plural}`.
#[derive(Debug, Clone)]
#[allow(clippy::struct_excessive_bools)] // independent properties of a kind, as discovery lists them
pub(crate) struct ResourceType {
    pub group: String,
    /// Served versions, the preferred (storage) one first.
    pub versions: Vec<Version>,
    pub kind: String,
    pub plural: String,
    pub singular: String,
    pub namespaced: bool,
    /// The verbs discovery lists (the real server's for built-ins).
    pub verbs: Vec<String>,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    /// Whether `metadata.generation` is maintained (bumped on changes outside metadata/status).
    pub generation: bool,
    /// Whether DELETE answers with the object rather than a `Status`.
    pub return_deleted: bool,
    /// Built-ins accept strategic merge patches; custom resources do not.
    pub builtin: bool,
}

impl ResourceType {
    pub(crate) fn version(&self, name: &str) -> Option<&Version> {
        self.versions.iter().find(|v| v.name == name)
    }

    pub(crate) fn api_version(&self, version: &str) -> String {
        if self.group.is_empty() { version.to_string() } else { format!("{}/{version}", self.group) }
    }

    /// What this kind adds to the generic pipeline; custom resources add nothing.
    pub(crate) fn strategy(&self) -> &'static dyn Strategy {
        if self.builtin { kinds::strategy(&self.group, &self.plural) } else { &kinds::Plain }
    }

    pub(crate) fn has_status(&self, version: &str) -> bool {
        self.version(version).is_some_and(|v| v.status)
    }
}

/// Every resource currently served: the built-ins plus one entry per established CRD.
#[derive(Debug, Clone)]
pub(crate) struct Registry {
    builtins: Vec<Arc<ResourceType>>,
    /// CRD name (`plural.group`) to its resource.
    crds: BTreeMap<String, Arc<ResourceType>>,
}

impl Registry {
    pub(crate) fn new() -> Registry {
        Registry { builtins: builtins().into_iter().map(Arc::new).collect(), crds: BTreeMap::new() }
    }

    pub(crate) fn all(&self) -> impl Iterator<Item = &Arc<ResourceType>> {
        self.builtins.iter().chain(self.crds.values())
    }

    pub(crate) fn find(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceType>> {
        self.all().find(|rt| rt.group == group && rt.plural == plural && rt.version(version).is_some()).cloned()
    }

    /// The resource of a group and plural, whatever the version (for garbage collection).
    pub(crate) fn by_resource(&self, group: &str, plural: &str) -> Option<Arc<ResourceType>> {
        self.all().find(|rt| rt.group == group && rt.plural == plural).cloned()
    }

    pub(crate) fn register_crd(&mut self, crd_name: &str, rt: ResourceType) {
        self.crds.insert(crd_name.to_string(), Arc::new(rt));
    }

    pub(crate) fn unregister_crd(&mut self, crd_name: &str) -> Option<Arc<ResourceType>> {
        self.crds.remove(crd_name)
    }

    /// Whether a resource with this group and plural is already served (by another CRD or a built-in).
    pub(crate) fn plural_taken(&self, crd_name: &str, group: &str, plural: &str) -> bool {
        self.builtins.iter().any(|rt| rt.group == group && rt.plural == plural)
            || self.crds.iter().any(|(n, rt)| n != crd_name && rt.group == group && rt.plural == plural)
    }

    /// Group names with their versions, preferred version first, in the order `/apis` lists them.
    fn groups(&self) -> Vec<(String, Vec<String>)> {
        let mut groups: Vec<(String, Vec<String>)> = Vec::new();
        for rt in self.all().filter(|rt| !rt.group.is_empty()) {
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
    pub(crate) fn group_list(&self) -> Value {
        let groups: Vec<Value> = self.groups().iter().map(|(g, vs)| group_doc(g, vs)).collect();
        json!({ "kind": "APIGroupList", "apiVersion": "v1", "groups": groups })
    }

    /// `/apis/{group}`: an `APIGroup`, or `None` when the group is not served.
    pub(crate) fn group(&self, group: &str) -> Option<Value> {
        self.groups().iter().find(|(g, _)| g == group).map(|(g, vs)| {
            let mut doc = group_doc(g, vs);
            doc["kind"] = json!("APIGroup");
            doc["apiVersion"] = json!("v1");
            doc
        })
    }

    /// `/api/v1` or `/apis/{group}/{version}`: an `APIResourceList`, or `None` when not served.
    pub(crate) fn resource_list(&self, group: &str, version: &str) -> Option<Value> {
        let mut resources = Vec::new();
        for rt in self.all().filter(|rt| rt.group == group) {
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
        }
        if resources.is_empty() {
            return None;
        }
        let group_version = if group.is_empty() { version.to_string() } else { format!("{group}/{version}") };
        Some(
            json!({ "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources }),
        )
    }
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

/// Whether a built-in resource of the upstream data is served. Not served: the virtual
/// resources that are only created and never stored (bindings, token reviews) except the
/// reviews answered by `reviews`, `componentstatuses`
/// (computed by the real server from its components), and `autoscaling/v1`
/// `HorizontalPodAutoscaler`, whose conversion to and from `v2` is not implemented.
fn served(r: &builtins::Resource) -> bool {
    let verbs = |v: &str| r.verbs.iter().any(|x| x == v);
    if reviews::REVIEWS.contains(&(r.group.as_str(), r.plural.as_str())) {
        return r.version == "v1";
    }
    verbs("create")
        && verbs("get")
        && !(r.group == "autoscaling" && r.version == "v1")
        && !(r.group.is_empty() && r.plural == "componentstatuses")
}

/// Every served built-in resource, from the upstream data.
fn builtins() -> Vec<ResourceType> {
    builtins::resources()
        .iter()
        .filter(|r| served(r))
        .map(|r| {
            let sub = |name: &str| r.subresources.iter().any(|s| s.name == name);
            ResourceType {
                group: r.group.clone(),
                versions: vec![Version {
                    name: r.version.clone(),
                    schema: None,
                    definition: builtins::definition(&r.group, &r.version, &r.kind),
                    columns: Vec::new(),
                    status: sub("status"),
                    scale: sub("scale").then(|| ScalePaths {
                        spec_replicas: ".spec.replicas".into(),
                        status_replicas: ".status.replicas".into(),
                        label_selector: Some(".spec.selector".into()),
                    }),
                }],
                kind: r.kind.clone(),
                plural: r.plural.clone(),
                singular: r.singular.clone(),
                namespaced: r.namespaced,
                verbs: r.verbs.clone(),
                short_names: r.short_names.clone(),
                categories: r.categories.clone(),
                generation: kinds::tracks_generation(&r.group, &r.plural),
                return_deleted: kinds::returns_deleted(&r.group, &r.plural),
                builtin: true,
            }
        })
        .collect()
}
