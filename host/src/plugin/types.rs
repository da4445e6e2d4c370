//! The contract's values on the host side: what a plugin declares, what it is asked
//! and what it answers.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};
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
    /// `group/version`, or `version` for the core group, as in `apiVersion`.
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

/// What a plugin reconciles, owns and reads, as returned by `describe`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Manifest {
    pub name: String,
    pub parent: KindRef,
    pub children: Vec<KindRef>,
    pub related: Vec<KindRef>,
    pub finalizer: bool,
    #[serde(skip)]
    pub crds: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none", with = "opt_millis")]
    pub deadline: Option<Duration>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_bytes: Option<u64>,
}

mod opt_millis {
    use std::time::Duration;

    #[allow(clippy::ref_option)] // serde's `with` hands us `&Option<_>`
    pub fn serialize<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_str(&format!("{}ms", d.as_millis())),
            None => s.serialize_none(),
        }
    }
}

impl Manifest {
    /// The field manager the host applies this plugin's objects with.
    pub fn field_manager(&self) -> String {
        format!("kubewasm.{}", self.name)
    }

    /// The finalizer the host puts on parents when the plugin asks for one.
    pub fn finalizer_name(&self) -> String {
        format!("kubewasm.io/{}", self.name)
    }

    /// Whether `other` watches, owns and reads the same kinds and holds the same
    /// finalizer: then a new version can take over a running controller; otherwise
    /// the controller must be restarted.
    pub fn same_contract(&self, other: &Manifest) -> bool {
        self.name == other.name
            && self.parent == other.parent
            && self.children == other.children
            && self.related == other.related
            && self.finalizer == other.finalizer
    }

    /// The CRDs as JSON objects, in declaration order.
    ///
    /// # Errors
    ///
    /// Names the CRD (by position) and the parse error. [`super::Plugin`] checks this
    /// at load, so a loaded plugin's CRDs always parse.
    pub fn crd_objects(&self) -> Result<Vec<Value>, String> {
        self.crds
            .iter()
            .enumerate()
            .map(|(i, text)| {
                serde_yaml_ng::from_str::<Value>(text).map_err(|e| format!("crds[{i}] is not YAML or JSON: {e}"))
            })
            .collect()
    }

    /// Checks what the plugin declared, so that every later use can rely on it.
    pub(crate) fn check(&self) -> Result<(), String> {
        if !is_dns_label(&self.name) {
            return Err(format!(
                "name {:?} must be a DNS label (lower-case letters, digits and '-', at most 63)",
                self.name
            ));
        }
        let kinds = std::iter::once(("parent", &self.parent))
            .chain(self.children.iter().map(|k| ("children", k)))
            .chain(self.related.iter().map(|k| ("related", k)));
        for (field, k) in kinds {
            if k.version.is_empty() || k.kind.is_empty() || k.plural.is_empty() {
                return Err(format!("{field}: {k} needs a version, a kind and a plural"));
            }
        }
        for crd in self.crd_objects()? {
            if crd["kind"] != "CustomResourceDefinition" {
                return Err(format!("crds: expected kind CustomResourceDefinition, found {}", crd["kind"]));
            }
        }
        Ok(())
    }
}

pub(crate) fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// How a label requirement compares values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LabelOperator {
    In,
    NotIn,
    Exists,
    DoesNotExist,
}

/// One requirement of a label selector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Requirement {
    pub key: String,
    pub operator: LabelOperator,
    pub values: Vec<String>,
}

impl Requirement {
    fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let value = labels.get(&self.key).map(String::as_str);
        let listed = value.is_some_and(|v| self.values.iter().any(|x| x == v));
        match self.operator {
            LabelOperator::In => listed,
            LabelOperator::NotIn => !listed,
            LabelOperator::Exists => value.is_some(),
            LabelOperator::DoesNotExist => value.is_none(),
        }
    }
}

/// Which objects of a kind a [`Query`] selects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Selector {
    All,
    Names(Vec<String>),
    Labels(Vec<Requirement>),
}

/// Related objects a plugin wants for one parent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Query {
    pub kind: KindRef,
    pub namespace: Option<String>,
    pub selector: Selector,
}

impl Query {
    /// Whether `object` (JSON) is one this query selects.
    pub fn matches(&self, object: &Value) -> bool {
        let meta = ObjectMeta::deserialize(&object["metadata"]).unwrap_or_default();
        let api_version = object["apiVersion"].as_str().unwrap_or_default();
        self.matches_meta(api_version, object["kind"].as_str().unwrap_or_default(), &meta)
    }

    /// Whether an object of `api_version`/`kind` with `meta` is one this query
    /// selects. The host's caches and `kubewasm render` both decide with this.
    pub fn matches_meta(&self, api_version: &str, kind: &str, meta: &ObjectMeta) -> bool {
        if kind != self.kind.kind || api_version != self.kind.api_version() {
            return false;
        }
        if self.namespace.is_some() && meta.namespace != self.namespace {
            return false;
        }
        match &self.selector {
            Selector::All => true,
            Selector::Names(names) => meta.name.as_ref().is_some_and(|n| names.contains(n)),
            Selector::Labels(reqs) => {
                let empty = BTreeMap::new();
                let labels = meta.labels.as_ref().unwrap_or(&empty);
                reqs.iter().all(|r| r.matches(labels))
            }
        }
    }
}

/// Everything a plugin is handed for one parent.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    pub parent: Value,
    pub children: Vec<Value>,
    pub related: Vec<Value>,
    pub finalizing: bool,
    /// RFC 3339.
    pub now: String,
    pub config: Value,
}

/// Whether an event is routine or calls for attention.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum EventType {
    Normal,
    Warning,
}

/// A Kubernetes Event to record on the parent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Event {
    #[serde(rename = "type")]
    pub type_: EventType,
    pub reason: String,
    pub message: String,
}

/// A plugin's decision for one parent, decoded but not yet validated (see
/// [`super::validate`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Response {
    pub children: Vec<Value>,
    pub status: Option<Value>,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    pub requeue_after: Option<Duration>,
    pub events: Vec<Event>,
    pub finalized: bool,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn service_kind() -> KindRef {
        KindRef {
            group: String::new(),
            version: "v1".into(),
            kind: "Service".into(),
            plural: "services".into(),
            namespaced: true,
        }
    }

    fn service(ns: &str, name: &str, labels: &Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": name, "namespace": ns, "labels": labels}})
    }

    #[test]
    fn query_matches_kind_namespace_and_labels() {
        let req = |key: &str, operator, values: &[&str]| Requirement {
            key: key.into(),
            operator,
            values: values.iter().map(|v| (*v).to_string()).collect(),
        };
        let q = Query {
            kind: service_kind(),
            namespace: Some("a".into()),
            selector: Selector::Labels(vec![
                req("tier", LabelOperator::In, &["web", "api"]),
                req("legacy", LabelOperator::DoesNotExist, &[]),
                req("env", LabelOperator::NotIn, &["prod"]),
            ]),
        };
        assert!(q.matches(&service("a", "s", &json!({"tier": "web"}))));
        assert!(q.matches(&service("a", "s", &json!({"tier": "api", "env": "dev"}))));
        assert!(!q.matches(&service("b", "s", &json!({"tier": "web"}))), "other namespace");
        assert!(!q.matches(&service("a", "s", &json!({"tier": "db"}))));
        assert!(!q.matches(&service("a", "s", &json!({"tier": "web", "legacy": "y"}))));
        assert!(!q.matches(&service("a", "s", &json!({"tier": "web", "env": "prod"}))));
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "s", "namespace": "a", "labels": {"tier": "web"}}});
        assert!(!q.matches(&pod), "other kind");
    }

    #[test]
    fn query_by_names_and_all_namespaces() {
        let q = Query { kind: service_kind(), namespace: None, selector: Selector::Names(vec!["x".into()]) };
        assert!(q.matches(&service("a", "x", &json!({}))));
        assert!(q.matches(&service("b", "x", &json!({}))));
        assert!(!q.matches(&service("a", "y", &json!({}))));
    }

    #[test]
    fn manifest_names_must_be_dns_labels() {
        assert!(is_dns_label("demo-application"));
        assert!(!is_dns_label("Demo"));
        assert!(!is_dns_label("-x"));
        assert!(!is_dns_label(""));
        assert!(!is_dns_label(&"a".repeat(64)));
    }
}
