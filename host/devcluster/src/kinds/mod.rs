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
use super::strategy::{Controller, Plain, Strategy};

mod apps;
mod autoscaling;
mod batch;
mod certificates;
mod config;
mod coordination;
mod core;
mod events;
mod eviction;
mod go_value;
mod kubelet;
mod matching;
mod networking;
mod pods;
mod policies;
mod rbac;
mod reviews;
mod routing;
mod serviceaccounts;
mod services;
mod storage;
mod webhooks;

pub(crate) use self::routing::service_address;

pub(crate) use self::rbac::authorize;
pub(crate) use self::serviceaccounts::authenticate as authenticate_token;

/// The strategy of a built-in resource.
pub(crate) fn strategy(group: &str, plural: &str) -> Box<dyn Strategy> {
    match (group, plural) {
        ("", "pods") => Box::new(pods::Pods),
        ("", "podtemplates") => Box::new(pods::PodTemplates),
        ("", "replicationcontrollers") => Box::new(pods::ReplicationControllers),
        ("", "services") => Box::new(services::Services),
        ("", "namespaces") => Box::new(core::Namespaces),
        ("", "nodes") => Box::new(core::Nodes),
        ("", "serviceaccounts") => Box::new(serviceaccounts::ServiceAccounts),
        ("", "endpoints") => Box::new(core::Endpoints),
        ("", "componentstatuses") => Box::new(core::ComponentStatuses),
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
        ("certificates.k8s.io", "certificatesigningrequests") => Box::new(certificates::SigningRequests),
        ("apiextensions.k8s.io", "customresourcedefinitions") => Box::new(crd::Definitions),
        ("rbac.authorization.k8s.io", "roles" | "clusterroles") => Box::new(rbac::Roles),
        ("rbac.authorization.k8s.io", "rolebindings" | "clusterrolebindings") => Box::new(rbac::Bindings),
        ("rbac.authorization.k8s.io", _) => Box::new(rbac::Other),
        (group, plural) if reviews::REVIEWS.contains(&(group, plural)) => reviews::strategy(plural),
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
/// resources that are only created and never stored (bindings) except the reviews answered
/// by `reviews` (in `v1`), and `autoscaling/v1` `HorizontalPodAutoscaler`, whose conversion to
/// and from `v2` is not implemented. `componentstatuses` are made on each read
/// (`core::ComponentStatuses`).
pub(crate) fn serves(r: &builtins::Resource) -> bool {
    let verbs = |v: &str| r.verbs.iter().any(|x| x == v);
    if reviews::REVIEWS.contains(&(r.group.as_str(), r.plural.as_str())) {
        return r.version == "v1";
    }
    if r.group.is_empty() && r.plural == "componentstatuses" {
        return true;
    }
    verbs("create") && verbs("get") && !(r.group == "autoscaling" && r.version == "v1")
}

/// The admission plugins of the built-in kinds, the admission webhooks last.
pub(crate) fn admission() -> Admission {
    Admission::new(
        vec![Box::new(core::NamespaceLifecycle)],
        vec![Box::new(rbac::Escalation), Box::new(policies::ValidatingPolicies)],
    )
    .with_webhooks(Box::new(webhooks::AdmissionWebhooks))
}

/// The controllers of kube-controller-manager the server runs itself (beside garbage
/// collection): aggregated cluster roles and, with `namespaces`, a `default` service account
/// and the CA `ca` (PEM) in every namespace.
pub(crate) fn controllers(ca: &str, namespaces: bool) -> Vec<Box<dyn Controller>> {
    let mut controllers: Vec<Box<dyn Controller>> = vec![Box::new(rbac::Aggregation)];
    if namespaces {
        controllers.push(Box::new(serviceaccounts::DefaultServiceAccounts));
        controllers.push(Box::new(config::RootCaPublisher { ca: ca.to_string() }));
    }
    controllers
}

/// An object a new cluster has before anyone writes.
pub(crate) struct Initial {
    pub group: &'static str,
    pub version: &'static str,
    pub plural: &'static str,
    pub namespace: Option<String>,
    pub object: Value,
}

/// What a new cluster holds (and what a data directory that lacks it gets): the namespaces
/// `default`, `kube-system`, `kube-public` and `kube-node-lease`, the `kubernetes` Service in
/// `default` with its Endpoints and `EndpointSlice` (the server on loopback at `port`), and the
/// default roles and bindings.
pub(crate) fn initial_objects(port: u16) -> Vec<Initial> {
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
        namespace: Some("default".into()),
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
    let endpoints = Initial {
        group: "",
        version: "v1",
        plural: "endpoints",
        namespace: Some("default".into()),
        object: json!({
            "apiVersion": "v1",
            "kind": "Endpoints",
            "metadata": { "name": "kubernetes", "labels": { "endpointslice.kubernetes.io/skip-mirror": "true" } },
            "subsets": [{
                "addresses": [{ "ip": "127.0.0.1" }],
                "ports": [{ "name": "https", "port": port, "protocol": "TCP" }],
            }],
        }),
    };
    let slice = Initial {
        group: "discovery.k8s.io",
        version: "v1",
        plural: "endpointslices",
        namespace: Some("default".into()),
        object: json!({
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": { "name": "kubernetes", "labels": { "kubernetes.io/service-name": "kubernetes" } },
            "addressType": "IPv4",
            "endpoints": [{ "addresses": ["127.0.0.1"], "conditions": { "ready": true } }],
            "ports": [{ "name": "https", "port": port, "protocol": "TCP" }],
        }),
    };
    namespaces.into_iter().chain([service, endpoints, slice]).chain(rbac::bootstrap_objects()).collect()
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
