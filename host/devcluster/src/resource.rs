//! What a served resource is, as discovery and `OpenAPI` describe it: its names, scope, verbs
//! and versions. Plain values: the kind's behaviour is its strategy (`strategy.rs`).

use serde_json::Value;

/// Identifies a kind of stored object independent of version: `(group, plural)`.
pub(crate) type GroupResource = (String, String);

/// `(namespace, name)`; the namespace is empty for cluster-scoped objects.
pub(crate) type ObjectKey = (String, String);

/// Where an object is stored: its resource and key.
pub(crate) type Location = (GroupResource, ObjectKey);

/// Where a subresource reads and writes replica counts (the `scale` subresource).
#[derive(Debug, Clone)]
pub(crate) struct ScalePaths {
    pub spec_replicas: String,
    pub status_replicas: String,
    pub label_selector: Option<String>,
}

/// A subresource of a served version, as discovery lists it: its name, the kind its requests
/// answer (that kind's group and version too), and its verbs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Subresource {
    pub name: String,
    pub group: String,
    pub version: String,
    pub kind: String,
    pub verbs: Vec<String>,
}

/// One served version of a resource.
#[derive(Debug, Clone)]
pub(crate) struct Version {
    pub name: String,
    /// The `openAPIV3Schema` of a custom resource version; `None` for built-ins.
    pub schema: Option<Value>,
    /// The upstream `OpenAPI` definition of a built-in kind; `None` for custom resources.
    pub definition: Option<&'static Value>,
    pub status: bool,
    /// Whether objects are stored in this version (one version of a resource is).
    pub storage: bool,
    pub scale: Option<ScalePaths>,
    /// Every subresource served, `status` and `scale` included.
    pub subresources: Vec<Subresource>,
}

impl Version {
    /// The schema that gives objects of this version their list and map types (server-side
    /// apply, strategic merge patch): a custom resource's, or a built-in's upstream definition.
    pub(crate) fn shape(&self) -> Option<&Value> {
        self.schema.as_ref().or(self.definition)
    }
}

/// A kind of object the server stores, reached at `/api[s]/{group}/{version}/.../{plural}`.
#[derive(Debug, Clone)]
pub(crate) struct ResourceType {
    pub group: String,
    /// Served versions, the preferred one first (discovery's order).
    pub versions: Vec<Version>,
    pub kind: String,
    pub plural: String,
    pub singular: String,
    pub namespaced: bool,
    /// The verbs discovery lists (the real server's for built-ins).
    pub verbs: Vec<String>,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
}

impl ResourceType {
    pub(crate) fn version(&self, name: &str) -> Option<&Version> {
        self.versions.iter().find(|v| v.name == name)
    }

    /// The version objects are stored in: the one marked so, or the preferred one.
    pub(crate) fn storage_version(&self) -> &str {
        self.versions.iter().find(|v| v.storage).or(self.versions.first()).map_or("", |v| v.name.as_str())
    }

    pub(crate) fn api_version(&self, version: &str) -> String {
        if self.group.is_empty() { version.to_string() } else { format!("{}/{version}", self.group) }
    }

    pub(crate) fn group_resource(&self) -> GroupResource {
        (self.group.clone(), self.plural.clone())
    }

    pub(crate) fn has_status(&self, version: &str) -> bool {
        self.version(version).is_some_and(|v| v.status)
    }
}
