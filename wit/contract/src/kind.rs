//! A kind and the REST resource that serves it.

use std::any::TypeId;
use std::fmt;

use k8s_openapi::{NamespaceResourceScope, Resource};
use serde::Serialize;
use serde_json::Value;

/// A Kubernetes kind and the REST resource that serves it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct KindRef {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub plural: String,
    pub namespaced: bool,
}

impl KindRef {
    /// A namespaced kind, e.g. a custom resource the plugin defines.
    pub fn namespaced(group: &str, version: &str, kind: &str, plural: &str) -> Self {
        Self::new(group, version, kind, plural, true)
    }

    /// A cluster-scoped kind.
    pub fn cluster(group: &str, version: &str, kind: &str, plural: &str) -> Self {
        Self::new(group, version, kind, plural, false)
    }

    /// The kind of a k8s-openapi type, e.g. `KindRef::of::<Deployment>()`.
    pub fn of<K: Resource + 'static>() -> Self {
        let namespaced = TypeId::of::<K::Scope>() == TypeId::of::<NamespaceResourceScope>();
        Self::new(K::GROUP, K::VERSION, K::KIND, K::URL_PATH_SEGMENT, namespaced)
    }

    fn new(group: &str, version: &str, kind: &str, plural: &str, namespaced: bool) -> Self {
        Self { group: group.into(), version: version.into(), kind: kind.into(), plural: plural.into(), namespaced }
    }

    /// `group/version`, or just `version` for the core group, as in `apiVersion`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() { self.version.clone() } else { format!("{}/{}", self.group, self.version) }
    }

    /// Whether `object` (JSON) is of this kind.
    pub fn matches(&self, object: &Value) -> bool {
        object["kind"].as_str() == Some(&self.kind) && object["apiVersion"].as_str() == Some(&self.api_version())
    }
}

impl fmt::Display for KindRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.api_version(), self.kind)
    }
}
