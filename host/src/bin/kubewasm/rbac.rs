//! RBAC derived from the plugins' manifests: exactly what the host needs to run them.
//!
//! [`objects`] turns manifests into a `ServiceAccount`, the role(s) and their bindings,
//! like controller-gen's RBAC output. It is pure: `kubewasm rbac` prints its result
//! and `deploy/rbac.yaml` is that output for the example plugins.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use kubewasm::plugin::{KindRef, Manifest};

/// Verbs on a plugin's parent kind: watch it, write its metadata (labels,
/// annotations, finalizers) with server-side apply.
pub const PARENT_VERBS: &[&str] = &["get", "list", "watch", "patch", "update"];
/// Verbs on the parent's `status` subresource.
pub const STATUS_VERBS: &[&str] = &["get", "patch", "update"];
/// Verbs on the parent's `finalizers` subresource.
pub const FINALIZERS_VERBS: &[&str] = &["update"];
/// Verbs on a child kind: watch, apply, prune.
pub const CHILD_VERBS: &[&str] = &["get", "list", "watch", "create", "patch", "update", "delete"];
/// Verbs on a related kind: read only.
pub const RELATED_VERBS: &[&str] = &["get", "list", "watch"];
/// Verbs on Events (core and `events.k8s.io`): recorded on parents.
pub const EVENT_VERBS: &[&str] = &["create", "patch", "update"];
/// Verbs on `coordination.k8s.io` Leases: leader election, and sharding (each replica
/// lists the group's Leases and deletes its own when it stops).
pub const LEASE_VERBS: &[&str] = &["get", "list", "create", "update", "delete"];
/// Verbs on `CustomResourceDefinitions`: the host resolves custom kinds through them.
pub const CRD_VERBS: &[&str] = &["get", "list", "watch"];

/// One merged rule: every verb the plugins need on one resource of one API group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    /// The API group, `""` for the core group.
    pub api_group: String,
    /// The resource, `plural` or `plural/subresource`.
    pub resource: String,
    /// Whether the resource lives in a namespace (a Role can grant it).
    pub namespaced: bool,
    /// Sorted, without duplicates.
    pub verbs: BTreeSet<&'static str>,
}

impl Rule {
    /// The rule as it appears in a Role or `ClusterRole`.
    pub fn to_json(&self) -> Value {
        json!({
            "apiGroups": [self.api_group],
            "resources": [self.resource],
            "verbs": self.verbs.iter().collect::<Vec<_>>(),
        })
    }
}

/// Where the generated RBAC grants its rules and what it is called.
#[derive(Clone, Debug)]
pub struct Options {
    /// Name of the `ServiceAccount`, the role(s) and the binding(s).
    pub name: String,
    /// `None`: one `ClusterRole` for everything. `Some(ns)`: a Role in `ns` for the
    /// namespaced resources, and a `ClusterRole` only for the cluster-scoped ones a
    /// Role cannot grant (`CustomResourceDefinitions`, cluster-scoped kinds).
    pub namespace: Option<String>,
    /// Namespace of the `ServiceAccount` the host runs as.
    pub service_account_namespace: String,
}

impl Default for Options {
    fn default() -> Self {
        Self { name: "kubewasm".into(), namespace: None, service_account_namespace: "kubewasm-system".into() }
    }
}

/// Every rule the plugins need, merged by API group and resource (verbs unioned)
/// and sorted by group, then resource.
///
/// Per plugin: the parent ([`PARENT_VERBS`], its `status` [`STATUS_VERBS`]), its
/// `finalizers` subresource ([`FINALIZERS_VERBS`]) when the plugin declares a
/// finalizer or has children (the host sets `blockOwnerDeletion` on children's
/// owner references, which clusters enforcing `OwnerReferencesPermissionEnforcement`
/// allow only with that verb), children ([`CHILD_VERBS`]), related
/// ([`RELATED_VERBS`]). Always: Events, Leases and CRDs.
pub fn rules<'a>(manifests: impl IntoIterator<Item = &'a Manifest>) -> Vec<Rule> {
    let mut merged: BTreeMap<(String, String), Rule> = BTreeMap::new();
    let mut grant = |api_group: &str, resource: String, namespaced: bool, verbs: &[&'static str]| {
        merged
            .entry((api_group.to_string(), resource.clone()))
            .or_insert_with(|| Rule { api_group: api_group.to_string(), resource, namespaced, verbs: BTreeSet::new() })
            .verbs
            .extend(verbs);
    };
    let mut kind = |k: &KindRef, subresource: Option<&str>, verbs: &[&'static str]| {
        let resource = match subresource {
            Some(sub) => format!("{}/{sub}", k.plural),
            None => k.plural.clone(),
        };
        grant(&k.group, resource, k.namespaced, verbs);
    };
    for m in manifests {
        if let Some(parent) = &m.parent {
            kind(parent, None, PARENT_VERBS);
            kind(parent, Some("status"), STATUS_VERBS);
            if m.finalizer || !m.children.is_empty() {
                kind(parent, Some("finalizers"), FINALIZERS_VERBS);
            }
        }
        for child in &m.children {
            kind(child, None, CHILD_VERBS);
        }
        for related in &m.related {
            kind(related, None, RELATED_VERBS);
        }
    }
    grant("", "events".into(), true, EVENT_VERBS);
    grant("events.k8s.io", "events".into(), true, EVENT_VERBS);
    grant("coordination.k8s.io", "leases".into(), true, LEASE_VERBS);
    grant("apiextensions.k8s.io", "customresourcedefinitions".into(), false, CRD_VERBS);
    merged.into_values().collect()
}

/// The `ServiceAccount`, role(s) and binding(s) granting [`rules`], in that order,
/// ready to print as a YAML stream.
pub fn objects<'a>(manifests: impl IntoIterator<Item = &'a Manifest>, options: &Options) -> Vec<Value> {
    let rules = rules(manifests);
    let sa_namespace = &options.service_account_namespace;
    let mut out = vec![json!({
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": { "name": options.name, "namespace": sa_namespace },
    })];
    let subject = json!([{ "kind": "ServiceAccount", "name": options.name, "namespace": sa_namespace }]);
    let role_ref = |kind: &str| json!({ "apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": options.name });
    let (namespaced, cluster): (Vec<&Rule>, Vec<&Rule>) = match &options.namespace {
        Some(_) => rules.iter().partition(|r| r.namespaced),
        None => (Vec::new(), rules.iter().collect()),
    };
    if let Some(ns) = &options.namespace {
        out.push(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": { "name": options.name, "namespace": ns },
            "rules": namespaced.iter().map(|r| r.to_json()).collect::<Vec<_>>(),
        }));
        out.push(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": { "name": options.name, "namespace": ns },
            "roleRef": role_ref("Role"),
            "subjects": subject,
        }));
    }
    if !cluster.is_empty() {
        out.push(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": { "name": options.name },
            "rules": cluster.iter().map(|r| r.to_json()).collect::<Vec<_>>(),
        }));
        out.push(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": { "name": options.name },
            "roleRef": role_ref("ClusterRole"),
            "subjects": subject,
        }));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(group: &str, kind: &str, plural: &str, namespaced: bool) -> KindRef {
        KindRef { group: group.into(), version: "v1".into(), kind: kind.into(), plural: plural.into(), namespaced }
    }

    fn manifest(
        name: &str,
        parent: KindRef,
        children: Vec<KindRef>,
        related: Vec<KindRef>,
        finalizer: bool,
    ) -> Manifest {
        Manifest { children, related, finalizer, ..Manifest::new(name, parent) }
    }

    fn deployments() -> KindRef {
        kind("apps", "Deployment", "deployments", true)
    }

    fn verbs(rules: &[Rule], group: &str, resource: &str) -> Option<Vec<&'static str>> {
        rules.iter().find(|r| r.api_group == group && r.resource == resource).map(|r| r.verbs.iter().copied().collect())
    }

    #[test]
    fn a_kind_that_is_child_and_related_gets_the_union_of_verbs_in_one_rule() {
        let foo =
            manifest("foo", kind("example.com", "Foo", "foos", true), vec![deployments()], vec![deployments()], false);
        let rules = rules([&foo]);
        assert_eq!(rules.iter().filter(|r| r.resource == "deployments").count(), 1);
        assert_eq!(
            verbs(&rules, "apps", "deployments"),
            Some(vec!["create", "delete", "get", "list", "patch", "update", "watch"])
        );
        assert_eq!(verbs(&rules, "example.com", "foos"), Some(vec!["get", "list", "patch", "update", "watch"]));
        assert_eq!(verbs(&rules, "example.com", "foos/status"), Some(vec!["get", "patch", "update"]));
    }

    #[test]
    fn a_related_only_kind_is_read_only() {
        let pods =
            manifest("pods", kind("", "Pod", "pods", true), vec![], vec![kind("", "Service", "services", true)], false);
        let rules = rules([&pods]);
        assert_eq!(verbs(&rules, "", "services"), Some(vec!["get", "list", "watch"]));
        assert_eq!(verbs(&rules, "", "pods/finalizers"), None, "no finalizer and no children");
    }

    #[test]
    fn finalizers_subresource_is_granted_for_a_declared_finalizer() {
        let m = manifest("f", kind("example.com", "Foo", "foos", true), vec![], vec![], true);
        assert_eq!(verbs(&rules([&m]), "example.com", "foos/finalizers"), Some(vec!["update"]));
    }

    #[test]
    fn events_leases_and_crds_are_always_granted() {
        let rules = rules([]);
        assert_eq!(verbs(&rules, "", "events"), Some(vec!["create", "patch", "update"]));
        assert_eq!(verbs(&rules, "events.k8s.io", "events"), Some(vec!["create", "patch", "update"]));
        assert_eq!(
            verbs(&rules, "coordination.k8s.io", "leases"),
            Some(vec!["create", "delete", "get", "list", "update"])
        );
        assert_eq!(
            verbs(&rules, "apiextensions.k8s.io", "customresourcedefinitions"),
            Some(vec!["get", "list", "watch"])
        );
    }

    #[test]
    fn rules_are_sorted_by_group_then_resource_whatever_the_plugin_order() {
        let a = manifest("a", kind("z.example.com", "A", "as", true), vec![deployments()], vec![], false);
        let b = manifest("b", kind("", "Pod", "pods", true), vec![], vec![], false);
        let ab = rules([&a, &b]);
        let ba = rules([&b, &a]);
        assert_eq!(ab, ba);
        let keys: Vec<(String, String)> = ab.iter().map(|r| (r.api_group.clone(), r.resource.clone())).collect();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(keys, sorted);
    }

    #[test]
    fn cluster_scope_gives_one_cluster_role_bound_to_the_service_account() {
        let m = manifest("foo", kind("example.com", "Foo", "foos", true), vec![deployments()], vec![], false);
        let objects = objects([&m], &Options::default());
        let kinds: Vec<&str> = objects.iter().filter_map(|o| o["kind"].as_str()).collect();
        assert_eq!(kinds, ["ServiceAccount", "ClusterRole", "ClusterRoleBinding"]);
        assert_eq!(objects[0]["metadata"]["namespace"], "kubewasm-system");
        assert_eq!(objects[2]["subjects"][0]["name"], "kubewasm");
        assert_eq!(objects[2]["subjects"][0]["namespace"], "kubewasm-system");
        assert_eq!(objects[2]["roleRef"]["kind"], "ClusterRole");
    }

    #[test]
    fn namespace_scope_puts_namespaced_rules_in_a_role_and_only_cluster_scoped_ones_in_a_cluster_role() {
        let m = manifest("foo", kind("example.com", "Foo", "foos", true), vec![deployments()], vec![], false);
        let options = Options {
            name: "ops".into(),
            namespace: Some("team-a".into()),
            service_account_namespace: "team-a".into(),
        };
        let objects = objects([&m], &options);
        let kinds: Vec<&str> = objects.iter().filter_map(|o| o["kind"].as_str()).collect();
        assert_eq!(kinds, ["ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"]);
        assert_eq!(objects[1]["metadata"]["namespace"], "team-a");
        let role_resources: Vec<&str> =
            objects[1]["rules"].as_array().into_iter().flatten().filter_map(|r| r["resources"][0].as_str()).collect();
        assert!(role_resources.contains(&"deployments") && role_resources.contains(&"leases"), "{role_resources:?}");
        assert!(!role_resources.contains(&"customresourcedefinitions"));
        assert_eq!(objects[3]["rules"].as_array().map(Vec::len), Some(1), "only the CRD rule: {}", objects[3]);
        assert_eq!(objects[3]["rules"][0]["resources"][0], "customresourcedefinitions");
        assert_eq!(objects[2]["subjects"][0]["name"], "ops");
    }
}
