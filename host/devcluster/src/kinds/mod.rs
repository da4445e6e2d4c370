//! The built-in kinds: one module per API family, each kind's [`Strategy`] as kube-apiserver's
//! registry has one per resource. The server asks a resource's strategy and never names a
//! kind; this module says which strategy serves which built-in, which built-ins of the
//! upstream data are served, which admission plugins are built in, and what a new cluster holds.
//! What is the same for every kind (decoding, pruning and list semantics) comes from the
//! upstream schemas instead.

use serde_json::{Value, json};

use super::admission::Admission;
use super::builtins;
use super::crd;
use super::strategy::{Plain, Strategy};

mod apps;
mod autoscaling;
mod batch;
mod config;
mod coordination;
mod core;
mod events;
mod go_value;
mod matching;
mod networking;
mod pods;
mod policies;
mod rbac;
mod reviews;
mod routing;
mod services;
mod storage;
mod webhooks;

pub(crate) use self::routing::service_address;

/// The strategy of a built-in resource.
pub(crate) fn strategy(group: &str, plural: &str) -> Box<dyn Strategy> {
    match (group, plural) {
        ("", "pods") => Box::new(pods::Pods),
        ("", "podtemplates") => Box::new(pods::PodTemplates),
        ("", "replicationcontrollers") => Box::new(pods::ReplicationControllers),
        ("", "services") => Box::new(services::Services),
        ("", "namespaces") => Box::new(core::Namespaces),
        ("", "nodes") => Box::new(core::Nodes),
        ("", "serviceaccounts") => Box::new(core::ServiceAccounts),
        ("", "endpoints") => Box::new(core::Endpoints),
        ("", "configmaps") => Box::new(config::ConfigMaps),
        ("", "secrets") => Box::new(config::Secrets),
        ("", "events") => Box::new(events::CoreEvents),
        ("events.k8s.io", "events") => Box::new(events::Events),
        ("", "persistentvolumeclaims") => Box::new(storage::Claims),
        ("", "persistentvolumes") => Box::new(storage::Volumes),
        ("apps", "deployments") => Box::new(apps::DEPLOYMENTS),
        ("apps", "replicasets") => Box::new(apps::REPLICA_SETS),
        ("apps", "statefulsets") => Box::new(apps::STATEFUL_SETS),
        ("apps", "daemonsets") => Box::new(apps::DAEMON_SETS),
        ("batch", "jobs") => Box::new(batch::Jobs),
        ("batch", "cronjobs") => Box::new(batch::CronJobs),
        ("networking.k8s.io", "ingresses") => Box::new(networking::Ingresses),
        ("networking.k8s.io", "networkpolicies") => Box::new(networking::NetworkPolicies),
        ("networking.k8s.io", "ingressclasses") => Box::new(networking::IngressClasses),
        ("storage.k8s.io", "storageclasses") => Box::new(storage::StorageClasses),
        ("autoscaling", "horizontalpodautoscalers") => Box::new(autoscaling::HorizontalPodAutoscalers),
        ("policy", "poddisruptionbudgets") => Box::new(autoscaling::PodDisruptionBudgets),
        ("coordination.k8s.io", "leases") => Box::new(coordination::Leases),
        ("apiextensions.k8s.io", "customresourcedefinitions") => Box::new(crd::Definitions),
        ("rbac.authorization.k8s.io", "roles" | "clusterroles") => Box::new(rbac::Roles),
        ("rbac.authorization.k8s.io", "rolebindings" | "clusterrolebindings") => Box::new(rbac::Bindings),
        ("rbac.authorization.k8s.io", _) => Box::new(rbac::Other),
        ("authorization.k8s.io", "selfsubjectrulesreviews") => Box::new(reviews::RulesReviews),
        ("authentication.k8s.io", "selfsubjectreviews") => Box::new(reviews::SelfSubjectReviews),
        ("authorization.k8s.io", _) => Box::new(reviews::AccessReviews),
        ("admissionregistration.k8s.io", "validatingadmissionpolicies") => Box::new(policies::Policies),
        ("admissionregistration.k8s.io", "mutatingwebhookconfigurations") => {
            Box::new(webhooks::Configurations { mutating: true })
        }
        ("admissionregistration.k8s.io", "validatingwebhookconfigurations") => {
            Box::new(webhooks::Configurations { mutating: false })
        }
        ("admissionregistration.k8s.io", "validatingadmissionpolicybindings")
        | ("flowcontrol.apiserver.k8s.io", "flowschemas" | "prioritylevelconfigurations") => Box::new(Generational),
        _ => Box::new(Plain),
    }
}

/// A kind whose only addition to the generic pipeline is `metadata.generation` (its registry
/// strategy sets it).
struct Generational;

impl Strategy for Generational {
    fn tracks_generation(&self) -> bool {
        true
    }
}

/// Whether a built-in resource of the upstream data is served. Not served: the virtual
/// resources that are only created and never stored (bindings, token reviews) except the
/// reviews answered by `reviews` (in `v1`), `componentstatuses` (computed by the real server
/// from its components), and `autoscaling/v1` `HorizontalPodAutoscaler`, whose conversion to
/// and from `v2` is not implemented.
pub(crate) fn serves(r: &builtins::Resource) -> bool {
    let verbs = |v: &str| r.verbs.iter().any(|x| x == v);
    if reviews::REVIEWS.contains(&(r.group.as_str(), r.plural.as_str())) {
        return r.version == "v1";
    }
    verbs("create")
        && verbs("get")
        && !(r.group == "autoscaling" && r.version == "v1")
        && !(r.group.is_empty() && r.plural == "componentstatuses")
}

/// The admission plugins of the built-in kinds, the admission webhooks last.
pub(crate) fn admission() -> Admission {
    Admission::new(vec![Box::new(core::NamespaceLifecycle)], vec![Box::new(policies::ValidatingPolicies)])
        .with_webhooks(Box::new(webhooks::AdmissionWebhooks))
}

/// An object a new cluster has before anyone writes.
pub(crate) struct Initial {
    pub group: &'static str,
    pub version: &'static str,
    pub plural: &'static str,
    pub namespace: Option<&'static str>,
    pub object: Value,
}

/// What a new cluster holds (and what a data directory that lacks it gets): the namespaces
/// `default`, `kube-system`, `kube-public` and `kube-node-lease`, and the `kubernetes`
/// Service in `default`.
pub(crate) fn initial_objects() -> Vec<Initial> {
    let namespaces = ["default", "kube-system", "kube-public", "kube-node-lease"].map(|name| Initial {
        group: "",
        version: "v1",
        plural: "namespaces",
        namespace: None,
        object: json!({ "apiVersion": "v1", "kind": "Namespace", "metadata": { "name": name } }),
    });
    let service = Initial {
        group: "",
        version: "v1",
        plural: "services",
        namespace: Some("default"),
        object: json!({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "name": "kubernetes",
                "labels": { "component": "apiserver", "provider": "kubernetes" },
            },
            "spec": {
                "type": "ClusterIP",
                "clusterIP": "10.96.0.1",
                "ports": [{ "name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443 }],
                "sessionAffinity": "None",
            },
        }),
    };
    namespaces.into_iter().chain([service]).collect()
}

// Helpers the strategies share.

/// Inserts `value` at `key` of the object at `pointer` when the key is absent. Defaults work
/// field by field, as Go's `SetDefaults` functions do on nil fields, so `strategy: {}` is
/// filled in too.
pub(crate) fn default_at(obj: &mut Value, pointer: &str, key: &str, value: Value) {
    if let Some(map) = obj.pointer_mut(pointer).and_then(Value::as_object_mut) {
        map.entry(key).or_insert(value);
    }
}

/// The object at `pointer`, created empty under its parent when absent.
pub(crate) fn ensure_object<'a>(obj: &'a mut Value, pointer: &str) -> Option<&'a mut serde_json::Map<String, Value>> {
    let (parent, key) = pointer.rsplit_once('/')?;
    let parent = obj.pointer_mut(parent)?.as_object_mut()?;
    let entry = parent.entry(key).or_insert_with(|| json!({}));
    if entry.is_null() {
        *entry = json!({});
    }
    entry.as_object_mut()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_defaults_fill_an_empty_object() {
        let mut obj = json!({ "spec": { "strategy": {} } });
        default_at(&mut obj, "/spec/strategy", "type", json!("RollingUpdate"));
        let rolling = ensure_object(&mut obj, "/spec/strategy/rollingUpdate").unwrap();
        rolling.entry("maxSurge").or_insert(json!("25%"));
        assert_eq!(
            obj,
            json!({ "spec": { "strategy": { "type": "RollingUpdate", "rollingUpdate": { "maxSurge": "25%" } } } })
        );
    }
}
