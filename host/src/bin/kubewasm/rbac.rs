//! RBAC derived from the plugins' manifests and settings: exactly what the host needs to
//! run them.
//!
//! [`objects`] turns manifests into a `ServiceAccount`, the role(s) and their bindings,
//! like controller-gen's RBAC output. It is pure: `kubewasm rbac` prints its result
//! and `deploy/rbac.yaml` is that output for the example plugins. What the host needs in
//! its own namespace (the Secrets the settings name, by name; the event handlers'
//! ledger `ConfigMap`s) is a Role there. [`objects_per_plugin`] gives each plugin its own
//! account and the host only the right to act as them.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use kubewasm::plugin::{KindRef, Manifest};
use kubewasm::runtime::Identities;
use kubewasm::webhook::register::{DEFAULT_NAME, crd_name};

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
/// Verbs on a watched kind: read only.
pub const WATCH_VERBS: &[&str] = &["get", "list", "watch"];
/// Verbs on the Secrets settings name, by name: the host watches each with a
/// `metadata.name` field selector, which RBAC allows with `resourceNames`.
pub const SECRET_VERBS: &[&str] = &["get", "list", "watch"];
/// Verbs on the `ConfigMap`s of the event handlers' ledgers, in the host's namespace.
pub const LEDGER_VERBS: &[&str] = &["create", "delete", "get", "list", "patch", "update"];
/// Verbs on the host's own `MutatingWebhookConfiguration` and
/// `ValidatingWebhookConfiguration`, by name, when a plugin defaults or validates:
/// server-side apply (`patch`; an apply that creates is authorized as a `create` of that
/// name, kube-apiserver's patch handler), and `delete` of one no loaded plugin needs any
/// more. Others' configurations stay out of reach.
pub const WEBHOOK_CONFIGURATION_VERBS: &[&str] = &["create", "delete", "patch"];
/// Verbs on the CRDs of the kinds plugins convert, by name: their `spec.conversion` is
/// applied (the list of [`CRD_VERBS`] finds those to set back).
pub const CRD_CONVERSION_VERBS: &[&str] = &["patch"];
/// Verbs on the webhook server's TLS Secret, by name: read once at start.
pub const TLS_SECRET_VERBS: &[&str] = &["get"];
/// Verbs on `Plugin` objects: followed.
pub const PLUGIN_VERBS: &[&str] = &["get", "list", "watch"];
/// Verbs on `Plugin` objects' status: what the host made of each.
pub const PLUGIN_STATUS_VERBS: &[&str] = &["patch"];
/// Verbs on the registry credentials `Plugin` objects name, by name: read at each pull.
pub const PULL_SECRET_VERBS: &[&str] = &["get"];
/// Verbs of the host on its plugins' `ServiceAccount`s, by name: act as them.
pub const IMPERSONATE_VERBS: &[&str] = &["impersonate"];

/// What RBAC needs to know of one plugin.
#[derive(Clone, Copy, Debug)]
pub struct Needs<'a> {
    pub manifest: &'a Manifest,
    /// The Secrets its settings name.
    pub secrets: &'a [String],
    /// The `ServiceAccount` its settings name it to act as (default
    /// [`Identities::account`]).
    pub account: Option<&'a str>,
}

impl Needs<'_> {
    /// The `ServiceAccount` the plugin acts as with an identity per plugin.
    fn account(&self) -> String {
        self.account.map_or_else(|| Identities::account(&self.manifest.name), str::to_string)
    }
}

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
    /// Only these objects; empty: all.
    pub resource_names: BTreeSet<String>,
}

impl Rule {
    /// The rule as it appears in a Role or `ClusterRole`.
    pub fn to_json(&self) -> Value {
        let mut rule = json!({
            "apiGroups": [self.api_group],
            "resources": [self.resource],
            "verbs": self.verbs.iter().collect::<Vec<_>>(),
        });
        if !self.resource_names.is_empty() {
            rule["resourceNames"] = json!(self.resource_names);
        }
        rule
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
    /// The `kubernetes.io/tls` Secret, in the host's namespace, the webhook server's
    /// certificate is read from: granted ([`TLS_SECRET_VERBS`], by name) when a plugin
    /// defaults, validates or converts.
    pub tls_secret: Option<String>,
    /// The name the host registers its webhook configurations under: the only ones it may
    /// patch or delete.
    pub webhook_configuration: String,
    /// The host follows `Plugin` objects (`kubewasm run --plugin-resources`): it reads them
    /// and writes their status ([`PLUGIN_VERBS`], [`PLUGIN_STATUS_VERBS`]).
    pub plugin_resources: bool,
    /// The registry credentials `Plugin` objects name (`spec.source.pullSecret`), in the
    /// host's namespace: `get` on each, by name.
    pub pull_secrets: Vec<String>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            name: "kubewasm".into(),
            namespace: None,
            service_account_namespace: "kubewasm-system".into(),
            tls_secret: None,
            webhook_configuration: DEFAULT_NAME.into(),
            plugin_resources: false,
            pull_secrets: Vec::new(),
        }
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
/// ([`RELATED_VERBS`]), watched kinds ([`WATCH_VERBS`]). Always: Events, Leases and CRDs.
pub fn rules<'a>(manifests: impl IntoIterator<Item = &'a Manifest>) -> Vec<Rule> {
    let mut merged: BTreeMap<(String, String), Rule> = BTreeMap::new();
    let mut grant = |api_group: &str, resource: String, namespaced: bool, verbs: &[&'static str]| {
        merged
            .entry((api_group.to_string(), resource.clone()))
            .or_insert_with(|| Rule {
                api_group: api_group.to_string(),
                resource,
                namespaced,
                verbs: BTreeSet::new(),
                resource_names: BTreeSet::new(),
            })
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
        for watch in &m.watches {
            kind(&watch.kind, None, WATCH_VERBS);
        }
    }
    grant("", "events".into(), true, EVENT_VERBS);
    grant("events.k8s.io", "events".into(), true, EVENT_VERBS);
    grant("coordination.k8s.io", "leases".into(), true, LEASE_VERBS);
    grant("apiextensions.k8s.io", "customresourcedefinitions".into(), false, CRD_VERBS);
    merged.into_values().collect()
}

/// What registering the plugins' webhooks takes, separate from [`rules`] because it is
/// limited to names: when one defaults or validates, [`WEBHOOK_CONFIGURATION_VERBS`] on both
/// kinds of webhook configuration named `configuration` (the name the host registers them
/// under); when one converts, [`CRD_CONVERSION_VERBS`] on the
/// CRDs of the converted kinds. Nothing when none does.
pub fn webhook_rules<'a>(manifests: impl IntoIterator<Item = &'a Manifest>, configuration: &str) -> Vec<Rule> {
    let manifests: Vec<&Manifest> = manifests.into_iter().collect();
    let rule = |api_group: &str, resource: &str, verbs: &[&'static str], names: BTreeSet<String>| Rule {
        api_group: api_group.to_string(),
        resource: resource.to_string(),
        namespaced: false,
        verbs: verbs.iter().copied().collect(),
        resource_names: names,
    };
    let mut rules = Vec::new();
    if manifests.iter().any(|m| !m.defaults.is_empty() || !m.validates.is_empty()) {
        for configurations in ["mutatingwebhookconfigurations", "validatingwebhookconfigurations"] {
            let names = [configuration.to_string()].into();
            rules.push(rule("admissionregistration.k8s.io", configurations, WEBHOOK_CONFIGURATION_VERBS, names));
        }
    }
    let converted: BTreeSet<String> =
        manifests.iter().filter(|m| m.converts).filter_map(|m| m.parent.as_ref()).map(crd_name).collect();
    if !converted.is_empty() {
        rules.push(rule("apiextensions.k8s.io", "customresourcedefinitions", CRD_CONVERSION_VERBS, converted));
    }
    rules
}

/// What the host needs in its own namespace for `plugins`: `get`, `list` and `watch` on
/// exactly the Secrets their settings name ([`SECRET_VERBS`], by `resourceNames`), the
/// ledger `ConfigMap`s ([`LEDGER_VERBS`]) when one handles events, and `get` on the TLS
/// Secret `tls_secret` ([`TLS_SECRET_VERBS`]) when one admits or converts.
pub fn host_rules(plugins: &[Needs<'_>], tls_secret: Option<&str>) -> Vec<Rule> {
    secrets_rule(plugins).into_iter().chain(ledger_rule(plugins)).chain(tls_rule(plugins, tls_secret)).collect()
}

/// The Secrets the settings of `plugins` name, by name; `None` when they name none.
fn secrets_rule(plugins: &[Needs<'_>]) -> Option<Rule> {
    let secrets: BTreeSet<String> = plugins.iter().flat_map(|p| p.secrets.iter().cloned()).collect();
    (!secrets.is_empty()).then(|| Rule {
        api_group: String::new(),
        resource: "secrets".into(),
        namespaced: true,
        verbs: SECRET_VERBS.iter().copied().collect(),
        resource_names: secrets,
    })
}

/// The ledger `ConfigMap`s, when one of `plugins` handles events.
fn ledger_rule(plugins: &[Needs<'_>]) -> Option<Rule> {
    plugins.iter().any(|p| !p.manifest.watches.is_empty()).then(|| Rule {
        api_group: String::new(),
        resource: "configmaps".into(),
        namespaced: true,
        verbs: LEDGER_VERBS.iter().copied().collect(),
        resource_names: BTreeSet::new(),
    })
}

/// The webhook server's TLS Secret `tls_secret`, by name, when one of `plugins` admits or
/// converts.
fn tls_rule(plugins: &[Needs<'_>], tls_secret: Option<&str>) -> Option<Rule> {
    let secret = tls_secret.filter(|_| plugins.iter().any(|p| p.manifest.admits()))?;
    Some(Rule {
        api_group: String::new(),
        resource: "secrets".into(),
        namespaced: true,
        verbs: TLS_SECRET_VERBS.iter().copied().collect(),
        resource_names: [secret.to_string()].into(),
    })
}

/// The `ServiceAccount`, role(s) and binding(s) granting [`rules`] and [`host_rules`]
/// (in the `ServiceAccount`'s namespace), in that order, ready to print as a YAML stream.
pub fn objects(plugins: &[Needs<'_>], options: &Options) -> Vec<Value> {
    let mut rules = rules(plugins.iter().map(|p| p.manifest));
    rules.extend(webhook_rules(plugins.iter().map(|p| p.manifest), &options.webhook_configuration));
    let mut own = host_rules(plugins, options.tls_secret.as_deref());
    plugin_resource_rules(options, &mut rules, &mut own);
    account(&options.name, options, &rules, &own)
}

/// With `Plugin` objects followed: reading them and writing their status (`cluster`), and
/// reading the pull Secrets they name (`own`, the host's namespace).
fn plugin_resource_rules(options: &Options, cluster: &mut Vec<Rule>, own: &mut Vec<Rule>) {
    if !options.plugin_resources {
        return;
    }
    let rule = |resource: &str, verbs: &[&'static str]| Rule {
        api_group: kubewasm::resource::crd::GROUP.into(),
        resource: resource.into(),
        namespaced: false,
        verbs: verbs.iter().copied().collect(),
        resource_names: BTreeSet::new(),
    };
    cluster.push(rule("plugins", PLUGIN_VERBS));
    cluster.push(rule("plugins/status", PLUGIN_STATUS_VERBS));
    if !options.pull_secrets.is_empty() {
        own.push(Rule {
            api_group: String::new(),
            resource: "secrets".into(),
            namespaced: true,
            verbs: PULL_SECRET_VERBS.iter().copied().collect(),
            resource_names: options.pull_secrets.iter().cloned().collect(),
        });
    }
}

/// With an identity per plugin (`kubewasm run --plugin-identities`): for each plugin a
/// `ServiceAccount` ([`Identities::account`], beside the host's) holding only its own
/// [`rules`] (without Leases: the host elects) and its event handler's ledger; for the
/// host, its own account holding Events, Leases and CRDs, the Secrets the settings name,
/// what registering the plugins' webhooks takes (the host serves and registers them), and
/// `impersonate` on exactly the plugins' accounts, by name.
pub fn objects_per_plugin(plugins: &[Needs<'_>], options: &Options) -> Vec<Value> {
    // Plugins whose settings name one account share it, with the rights of all of them.
    let mut accounts: BTreeMap<String, Vec<Needs<'_>>> = BTreeMap::new();
    for plugin in plugins {
        accounts.entry(plugin.account()).or_default().push(*plugin);
    }
    let mut host: Vec<Rule> =
        secrets_rule(plugins).into_iter().chain(tls_rule(plugins, options.tls_secret.as_deref())).collect();
    host.push(Rule {
        api_group: String::new(),
        resource: "serviceaccounts".into(),
        namespaced: true,
        verbs: IMPERSONATE_VERBS.iter().copied().collect(),
        resource_names: accounts.keys().cloned().collect(),
    });
    let mut own = rules([]);
    own.extend(webhook_rules(plugins.iter().map(|p| p.manifest), &options.webhook_configuration));
    plugin_resource_rules(options, &mut own, &mut host);
    let mut out = account(&options.name, options, &own, &host);
    for (name, sharing) in &accounts {
        let own: Vec<Rule> = rules(sharing.iter().map(|p| p.manifest))
            .into_iter()
            .filter(|r| r.api_group != "coordination.k8s.io")
            .collect();
        let ledger: Vec<Rule> = ledger_rule(sharing).into_iter().collect();
        out.extend(account(name, options, &own, &ledger));
    }
    out
}

/// A `ServiceAccount` `name` in the options' account namespace, and the role(s) and
/// binding(s) granting it `rules` (as [`Options::namespace`] scopes them) and `own`, in
/// its own namespace.
fn account(name: &str, options: &Options, rules: &[Rule], own: &[Rule]) -> Vec<Value> {
    let sa_namespace = &options.service_account_namespace;
    let mut out = vec![json!({
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": { "name": name, "namespace": sa_namespace },
    })];
    let subject = json!([{ "kind": "ServiceAccount", "name": name, "namespace": sa_namespace }]);
    let role_ref = |kind: &str| json!({ "apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": name });
    let (namespaced, cluster): (Vec<&Rule>, Vec<&Rule>) = match &options.namespace {
        Some(_) => rules.iter().partition(|r| r.namespaced),
        None => (Vec::new(), rules.iter().collect()),
    };
    let role = |ns: &str, rules: Vec<Value>| {
        [
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "Role",
                "metadata": { "name": name, "namespace": ns },
                "rules": rules,
            }),
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "RoleBinding",
                "metadata": { "name": name, "namespace": ns },
                "roleRef": role_ref("Role"),
                "subjects": subject,
            }),
        ]
    };
    let mut own: Vec<Value> = own.iter().map(Rule::to_json).collect();
    if let Some(ns) = &options.namespace {
        let mut rules: Vec<Value> = namespaced.iter().map(|r| r.to_json()).collect();
        if ns == sa_namespace {
            rules.append(&mut own);
        }
        out.extend(role(ns, rules));
    }
    if !own.is_empty() {
        out.extend(role(sa_namespace, own));
    }
    if !cluster.is_empty() {
        out.push(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": { "name": name },
            "rules": cluster.iter().map(|r| r.to_json()).collect::<Vec<_>>(),
        }));
        out.push(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": { "name": name },
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

    fn needs(manifest: &Manifest) -> Vec<Needs<'_>> {
        vec![Needs { manifest, secrets: &[], account: None }]
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
    fn a_handler_reads_what_it_watches_and_the_host_its_secrets_by_name_and_its_ledger() {
        let pods = kind("", "Pod", "pods", true);
        let handler = Manifest::handler("kw").watch(kubewasm::plugin::Watch::new(pods));
        let secrets = ["slack".to_string(), "teams".to_string()];
        let plugins = [Needs { manifest: &handler, secrets: &secrets, account: None }];
        assert_eq!(verbs(&rules([&handler]), "", "pods"), Some(vec!["get", "list", "watch"]));
        let objects = objects(&plugins, &Options::default());
        let kinds: Vec<&str> = objects.iter().filter_map(|o| o["kind"].as_str()).collect();
        assert_eq!(kinds, ["ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"]);
        let role = &objects[1];
        assert_eq!(role["metadata"]["namespace"], "kubewasm-system", "the host's own namespace");
        assert_eq!(role["rules"][0]["resources"][0], "secrets");
        assert_eq!(role["rules"][0]["resourceNames"], json!(["slack", "teams"]));
        assert_eq!(role["rules"][0]["verbs"], json!(["get", "list", "watch"]));
        assert_eq!(role["rules"][1]["resources"][0], "configmaps");
        assert!(role["rules"][1].get("resourceNames").is_none());
        let cluster = &objects[3]["rules"];
        assert!(
            cluster.as_array().unwrap().iter().all(|r| r["resources"][0] != "secrets"),
            "no Secret anywhere else: {cluster}"
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
        let objects = objects(&needs(&m), &Options::default());
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
            ..Options::default()
        };
        let objects = objects(&needs(&m), &options);
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

    #[test]
    fn following_plugin_objects_grants_reading_them_writing_their_status_and_their_pull_secrets_by_name() {
        let foo = manifest("foo", kind("example.com", "Foo", "foos", true), vec![], vec![], false);
        let options = Options { plugin_resources: true, pull_secrets: vec!["registry".into()], ..Options::default() };
        for objects in [objects(&needs(&foo), &options), objects_per_plugin(&needs(&foo), &options)] {
            let host = |kind: &str| {
                objects.iter().find(|o| o["kind"] == kind && o["metadata"]["name"] == "kubewasm").unwrap()["rules"]
                    .clone()
            };
            let cluster = host("ClusterRole").to_string();
            assert!(
                cluster.contains(
                    r#"{"apiGroups":["kubewasm.io"],"resources":["plugins"],"verbs":["get","list","watch"]}"#
                ) && cluster
                    .contains(r#"{"apiGroups":["kubewasm.io"],"resources":["plugins/status"],"verbs":["patch"]}"#),
                "{cluster}"
            );
            let own = host("Role").to_string();
            assert!(
                own.contains(
                    r#"{"apiGroups":[""],"resources":["secrets"],"verbs":["get"],"resourceNames":["registry"]}"#
                ),
                "{own}"
            );
        }
    }

    #[test]
    fn plugins_whose_settings_name_one_account_share_it_with_the_rights_of_both() {
        let foo = manifest("foo", kind("example.com", "Foo", "foos", true), vec![deployments()], vec![], false);
        let pods = manifest("pods", kind("", "Pod", "pods", true), vec![], vec![], false);
        let plugins = [
            Needs { manifest: &foo, secrets: &[], account: Some("team-a") },
            Needs { manifest: &pods, secrets: &[], account: Some("team-a") },
        ];
        let objects = objects_per_plugin(&plugins, &Options::default());
        let accounts: Vec<&str> = objects
            .iter()
            .filter(|o| o["kind"] == "ServiceAccount")
            .filter_map(|o| o["metadata"]["name"].as_str())
            .collect();
        assert_eq!(accounts, ["kubewasm", "team-a"]);
        let team = objects.iter().find(|o| o["kind"] == "ClusterRole" && o["metadata"]["name"] == "team-a").unwrap();
        let resources: Vec<&str> =
            team["rules"].as_array().unwrap().iter().filter_map(|r| r["resources"][0].as_str()).collect();
        assert!(resources.contains(&"deployments") && resources.contains(&"pods"), "{resources:?}");
        let host = objects.iter().find(|o| o["kind"] == "Role" && o["metadata"]["name"] == "kubewasm").unwrap();
        assert_eq!(host["rules"][0]["resourceNames"], json!(["team-a"]), "{host}");
    }

    #[test]
    fn with_identities_each_plugin_holds_only_its_kinds_and_the_host_may_only_impersonate_them() {
        let foo = manifest("foo", kind("example.com", "Foo", "foos", true), vec![deployments()], vec![], false);
        let pods = manifest("pods", kind("", "Pod", "pods", true), vec![], vec![], false);
        let secrets = ["token".to_string()];
        let plugins = [
            Needs { manifest: &foo, secrets: &secrets, account: None },
            Needs { manifest: &pods, secrets: &[], account: None },
        ];
        let objects = objects_per_plugin(&plugins, &Options::default());
        let accounts: Vec<&str> = objects
            .iter()
            .filter(|o| o["kind"] == "ServiceAccount")
            .filter_map(|o| o["metadata"]["name"].as_str())
            .collect();
        assert_eq!(accounts, ["kubewasm", "kubewasm-plugin-foo", "kubewasm-plugin-pods"]);
        let role = |name: &str, kind: &str| {
            objects.iter().find(|o| o["kind"] == kind && o["metadata"]["name"] == name).cloned().unwrap_or_default()
        };
        let resources = |role: &Value| -> Vec<String> {
            role["rules"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|r| r["resources"][0].as_str())
                .map(String::from)
                .collect()
        };
        let host = role("kubewasm", "Role");
        assert_eq!(host["metadata"]["namespace"], "kubewasm-system");
        assert_eq!(
            host["rules"],
            json!([
                { "apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list", "watch"], "resourceNames": ["token"] },
                { "apiGroups": [""], "resources": ["serviceaccounts"], "verbs": ["impersonate"],
                  "resourceNames": ["kubewasm-plugin-foo", "kubewasm-plugin-pods"] },
            ])
        );
        let host_cluster = resources(&role("kubewasm", "ClusterRole"));
        assert!(!host_cluster.iter().any(|r| r == "deployments" || r == "foos" || r == "pods"), "{host_cluster:?}");
        let foo_rules = resources(&role("kubewasm-plugin-foo", "ClusterRole"));
        assert!(
            foo_rules.contains(&"deployments".into()) && foo_rules.contains(&"foos/status".into()),
            "{foo_rules:?}"
        );
        assert!(!foo_rules.iter().any(|r| r == "pods" || r == "leases" || r == "secrets"), "{foo_rules:?}");
        let pods_rules = resources(&role("kubewasm-plugin-pods", "ClusterRole"));
        assert!(pods_rules.contains(&"pods".into()) && !pods_rules.contains(&"deployments".into()), "{pods_rules:?}");
        let binding = role("kubewasm-plugin-foo", "ClusterRoleBinding");
        assert_eq!(binding["subjects"][0]["name"], "kubewasm-plugin-foo");
        assert_eq!(binding["subjects"][0]["namespace"], "kubewasm-system");
    }

    #[test]
    fn plugins_that_admit_or_convert_may_register_webhooks_patch_their_crds_and_read_the_tls_secret() {
        let foos = kind("example.com", "Foo", "foos", true);
        let plain = manifest("plain", foos.clone(), vec![], vec![], false);
        let options = Options { tls_secret: Some("kubewasm-webhooks-tls".into()), ..Options::default() };
        assert_eq!(webhook_rules([&plain], "kubewasm"), []);
        let printed = objects(&needs(&plain), &options);
        assert!(
            printed.iter().all(|o| o["kind"] != "Role"),
            "no plugin admits: no Secret to read, no Role: {printed:?}"
        );

        let validates =
            Manifest { validates: vec![kubewasm_contract::AdmissionRule::new(foos.clone())], ..plain.clone() };
        let granted: Vec<Value> = webhook_rules([&validates], "ops").iter().map(Rule::to_json).collect();
        let mut expected = Vec::new();
        for configurations in ["mutatingwebhookconfigurations", "validatingwebhookconfigurations"] {
            expected.push(json!({"apiGroups": ["admissionregistration.k8s.io"], "resources": [configurations],
                                 "verbs": ["create", "delete", "patch"], "resourceNames": ["ops"]}));
        }
        assert_eq!(granted, expected, "others' configurations stay out of reach");
        let printed = objects(&needs(&validates), &options);
        let role = printed.iter().find(|o| o["kind"] == "Role").expect("a Role in the host's namespace");
        assert_eq!(role["metadata"]["namespace"], "kubewasm-system");
        assert_eq!(
            role["rules"],
            json!([{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"], "resourceNames": ["kubewasm-webhooks-tls"]}])
        );
        let cluster = printed.iter().find(|o| o["kind"] == "ClusterRole").unwrap();
        let cluster_rules = cluster["rules"].as_array().unwrap();
        assert!(cluster_rules.iter().all(|r| r["resources"][0] != "secrets"));
        assert!(cluster_rules.iter().any(|r| r["resourceNames"] == json!(["kubewasm"])), "the default name: {cluster}");

        let converts = Manifest { converts: true, ..plain };
        assert_eq!(
            webhook_rules([&converts], "kubewasm").iter().map(Rule::to_json).collect::<Vec<_>>(),
            [json!({"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"],
                    "verbs": ["patch"], "resourceNames": ["foos.example.com"]})],
            "only the CRDs of the kinds converted, and no webhook configuration"
        );
    }

    /// A client of the host's service account once `printed` (its RBAC) is applied.
    async fn as_host(cluster: &kubewasm_devcluster::DevCluster, printed: &[Value]) -> kube::Client {
        let stream = crate::yaml_stream(printed).unwrap();
        cluster
            .apply(&format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: kubewasm-system\n---\n{stream}"))
            .unwrap();
        let token = cluster.service_account_token("kubewasm-system", "kubewasm").await.unwrap();
        let kubeconfig = kube::config::Kubeconfig::from_yaml(&cluster.kubeconfig_for_token(&token)).unwrap();
        let config = kube::Config::from_custom_kubeconfig(kubeconfig, &kube::config::KubeConfigOptions::default())
            .await
            .unwrap();
        kube::Client::try_from(config).unwrap()
    }

    #[tokio::test]
    async fn the_host_registers_its_webhooks_with_exactly_the_rbac_printed() {
        use kubewasm::webhook::register::{Admits, Endpoint, Registrar};
        use kubewasm::webhook::tls::Identity;

        let cluster = kubewasm_devcluster::DevCluster::start(kubewasm_devcluster::Options::default()).await.unwrap();
        let foos = kind("example.com", "Foo", "foos", true);
        let crd = kubewasm_tests::crd("example.com", "Foo", "foos", &["v1", "v2"]);
        cluster.apply(&crd.to_string()).unwrap();
        let admits = Manifest {
            defaults: vec![kubewasm_contract::AdmissionRule::new(foos.clone())],
            validates: vec![kubewasm_contract::AdmissionRule::new(foos.clone())],
            converts: true,
            ..manifest("foo", foos.clone(), vec![], vec![], false)
        };
        let client = as_host(&cluster, &objects(&needs(&admits), &Options::default())).await;
        let identity = Identity::generate(&["127.0.0.1".into()]).unwrap();
        let endpoint = Endpoint::url("https://127.0.0.1:9443").unwrap();
        let registrar = Registrar::new(client, "kubewasm", endpoint, identity.ca_bundle().map(str::to_string));
        let settings = kubewasm::plugin::WebhookSettings::default();
        let registered = [Admits { manifest: &admits, settings: &settings }];
        registrar.sync(&registered).await.expect("registered as the host");
        registrar.sync(&[]).await.expect("taken back as the host");
        registrar.sync(&registered).await.expect("registered again");

        // Without a plugin that admits, the host is granted nothing of it: what another
        // registered stays, and the sync is not refused for it.
        let plain = manifest("foo", foos, vec![], vec![], false);
        let client = as_host(&cluster, &objects(&needs(&plain), &Options::default())).await;
        let registrar = Registrar::new(client, "kubewasm", Endpoint::url("https://127.0.0.1:9443").unwrap(), None);
        registrar.sync(&[]).await.expect("nothing it may do, and nothing refused");
        let admin = cluster.client();
        let validating: kube::Api<k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration> =
            kube::Api::all(admin.clone());
        assert!(validating.get_opt("kubewasm").await.unwrap().is_some());
        let crds: kube::Api<
            k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
        > = kube::Api::all(admin);
        let conversion = crds.get("foos.example.com").await.unwrap().spec.conversion.unwrap();
        assert_eq!(conversion.strategy, "Webhook", "left for whoever may set it back");
    }
}
