//! The roles and bindings a 1.33 cluster has from its first start (kube-apiserver's
//! `rbac/bootstrap-roles`), read from `data/bootstrap-rbac.yaml`, which says where upstream
//! keeps them.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::super::Initial;
use super::authorizer::GROUP;

/// The data file, compiled in.
const DATA: &str = include_str!("../../../data/bootstrap-rbac.yaml");

/// The label and annotation every bootstrap object carries (`policy.go`, `addDefaultMetadata`).
const LABEL: (&str, &str) = ("kubernetes.io/bootstrapping", "rbac-defaults");
const ANNOTATION: (&str, &str) = ("rbac.authorization.kubernetes.io/autoupdate", "true");

/// What the controller roles' names start with; each is bound to the service account of the
/// rest of its name in `kube-system` (`controller_policy.go`, `addControllerRole`).
const CONTROLLER_PREFIX: &str = "system:controller:";

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Policy {
    cluster_roles: Vec<Role>,
    cluster_role_bindings: Vec<Binding>,
    controller_roles: Vec<Role>,
    roles: Vec<Role>,
    role_bindings: Vec<Binding>,
}

#[derive(Deserialize, Clone)]
#[serde(rename_all = "camelCase")]
struct Role {
    name: String,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    labels: Map<String, Value>,
    #[serde(default)]
    aggregation_rule: Option<Value>,
    #[serde(default)]
    rules: Option<Vec<Value>>,
}

#[derive(Deserialize)]
struct Binding {
    name: String,
    #[serde(default)]
    namespace: Option<String>,
    role: String,
    #[serde(default)]
    subjects: Vec<Value>,
}

/// Every bootstrap role and binding, as objects to create.
pub(in crate::kinds) fn objects() -> Vec<Initial> {
    // The file is part of the crate and its test reads it: it parses.
    let policy: Policy = match serde_yaml_ng::from_str(DATA) {
        Ok(policy) => policy,
        Err(e) => {
            tracing::error!(error = %e, "data/bootstrap-rbac.yaml does not parse; no bootstrap roles");
            return Vec::new();
        }
    };
    let mut objects = Vec::new();
    for role in policy.cluster_roles.into_iter().chain(policy.controller_roles.iter().cloned()) {
        objects.push(role.object("clusterroles", "ClusterRole"));
    }
    for binding in policy.cluster_role_bindings {
        objects.push(binding.object("clusterrolebindings", "ClusterRoleBinding", "ClusterRole"));
    }
    for role in &policy.controller_roles {
        let account = role.name.strip_prefix(CONTROLLER_PREFIX).unwrap_or(&role.name);
        let binding = Binding {
            name: role.name.clone(),
            namespace: None,
            role: role.name.clone(),
            subjects: vec![json!({ "kind": "ServiceAccount", "name": account, "namespace": "kube-system" })],
        };
        objects.push(binding.object("clusterrolebindings", "ClusterRoleBinding", "ClusterRole"));
    }
    for role in policy.roles {
        objects.push(role.object("roles", "Role"));
    }
    for binding in policy.role_bindings {
        objects.push(binding.object("rolebindings", "RoleBinding", "Role"));
    }
    objects
}

fn metadata(name: &str, namespace: Option<&str>, extra_labels: Map<String, Value>) -> Value {
    let mut labels = Map::new();
    labels.insert(LABEL.0.into(), json!(LABEL.1));
    labels.extend(extra_labels);
    let mut meta = json!({ "name": name, "labels": labels, "annotations": { ANNOTATION.0: ANNOTATION.1 } });
    if let Some(namespace) = namespace {
        meta["namespace"] = json!(namespace);
    }
    meta
}

impl Role {
    fn object(self, plural: &'static str, kind: &str) -> Initial {
        let mut object = json!({
            "apiVersion": format!("{GROUP}/v1"),
            "kind": kind,
            "metadata": metadata(&self.name, self.namespace.as_deref(), self.labels),
        });
        if let Some(rule) = self.aggregation_rule {
            object["aggregationRule"] = rule;
        }
        if let Some(rules) = self.rules {
            object["rules"] = json!(rules);
        }
        Initial { group: GROUP, version: "v1", plural, namespace: self.namespace, object }
    }
}

impl Binding {
    fn object(self, plural: &'static str, kind: &str, role_kind: &str) -> Initial {
        let subjects: Vec<Value> = self
            .subjects
            .into_iter()
            .map(|mut s| {
                if s.get("kind").and_then(Value::as_str) != Some("ServiceAccount") {
                    s["apiGroup"] = json!(GROUP);
                }
                s
            })
            .collect();
        let mut object = json!({
            "apiVersion": format!("{GROUP}/v1"),
            "kind": kind,
            "metadata": metadata(&self.name, self.namespace.as_deref(), Map::new()),
            "roleRef": { "apiGroup": GROUP, "kind": role_kind, "name": self.role },
        });
        if !subjects.is_empty() {
            object["subjects"] = json!(subjects);
        }
        Initial { group: GROUP, version: "v1", plural, namespace: self.namespace, object }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_data_file_gives_every_bootstrap_object() {
        let objects = objects();
        let named = |plural: &str, name: &str| {
            objects.iter().find(|o| o.plural == plural && o.object["metadata"]["name"] == name).map(|o| &o.object)
        };
        let admin = named("clusterroles", "cluster-admin").unwrap();
        assert_eq!(admin["rules"][0], json!({ "apiGroups": ["*"], "resources": ["*"], "verbs": ["*"] }));
        assert_eq!(admin["metadata"]["labels"]["kubernetes.io/bootstrapping"], "rbac-defaults");
        assert_eq!(
            named("clusterroles", "view").unwrap()["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-edit"],
            "true"
        );
        let binding = named("clusterrolebindings", "system:controller:job-controller").unwrap();
        assert_eq!(
            binding["subjects"],
            json!([{ "kind": "ServiceAccount", "name": "job-controller", "namespace": "kube-system" }])
        );
        let masters = named("clusterrolebindings", "cluster-admin").unwrap();
        assert_eq!(masters["subjects"][0]["apiGroup"], GROUP);
        assert!(named("clusterrolebindings", "system:node").unwrap().get("subjects").is_none());
        let reader = objects.iter().find(|o| {
            o.plural == "rolebindings"
                && o.object["metadata"]["name"] == "system::extension-apiserver-authentication-reader"
        });
        assert_eq!(reader.unwrap().namespace.as_deref(), Some("kube-system"));
        assert_eq!(objects.iter().filter(|o| o.plural == "clusterroles").count(), 66);
    }
}
