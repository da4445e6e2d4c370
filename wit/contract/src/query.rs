//! Related objects a plugin asks for, and which objects a query selects.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;
use serde_json::Value;

use crate::KindRef;

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

/// Related objects wanted for one parent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Query {
    pub kind: KindRef,
    pub namespace: Option<String>,
    pub selector: Selector,
}

impl Query {
    /// Every object of `kind` in `namespace` (`None`: all namespaces).
    pub fn all(kind: KindRef, namespace: Option<&str>) -> Self {
        Self::new(kind, namespace, Selector::All)
    }

    /// The objects of `kind` named `names` in `namespace` (`&["a", "b"]`, a `Vec<String>`,
    /// or any iterator of names).
    pub fn named(kind: KindRef, namespace: Option<&str>, names: impl IntoIterator<Item = impl AsRef<str>>) -> Self {
        let names = names.into_iter().map(|n| n.as_ref().to_string()).collect();
        Self::new(kind, namespace, Selector::Names(names))
    }

    /// The objects of `kind` in `namespace` carrying every label of `labels`.
    pub fn labelled(kind: KindRef, namespace: Option<&str>, labels: &[(&str, &str)]) -> Self {
        let requirements = labels
            .iter()
            .map(|(k, v)| Requirement {
                key: (*k).to_string(),
                operator: LabelOperator::In,
                values: vec![(*v).to_string()],
            })
            .collect();
        Self::new(kind, namespace, Selector::Labels(requirements))
    }

    fn new(kind: KindRef, namespace: Option<&str>, selector: Selector) -> Self {
        Self { kind, namespace: namespace.map(str::to_string), selector }
    }

    /// Whether `object` (JSON) is one this query selects.
    pub fn matches(&self, object: &Value) -> bool {
        let meta = ObjectMeta::deserialize(&object["metadata"]).unwrap_or_default();
        let api_version = object["apiVersion"].as_str().unwrap_or_default();
        self.matches_meta(api_version, object["kind"].as_str().unwrap_or_default(), &meta)
    }

    /// Whether an object of `api_version`/`kind` with `meta` is one this query
    /// selects. The host's caches, `kubewasm render` and the SDK's tests all decide
    /// with this.
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn service_kind() -> KindRef {
        KindRef::namespaced("", "v1", "Service", "services")
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
        let q = Query::named(service_kind(), None, ["x"]);
        assert!(q.matches(&service("a", "x", &json!({}))));
        assert!(q.matches(&service("b", "x", &json!({}))));
        assert!(!q.matches(&service("a", "y", &json!({}))));
    }
}
