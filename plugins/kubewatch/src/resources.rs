//! kubewatch's resource list: the key of each kind in its `resource:` configuration
//! (the lower-cased Go field names its YAML parser reads, not the json tags of its
//! `config.go`), and the kind it watches (robusta-dev/kubewatch `pkg/controller`; for
//! `hpa`, the version Kubernetes prefers today, `autoscaling/v2`, where kubewatch reads
//! `autoscaling/v1`).

use kubewasm_sdk::KindRef;

/// `(resource key, group, version, kind, plural, namespaced)`.
const RESOURCES: &[(&str, &str, &str, &str, &str, bool)] = &[
    ("deployment", "apps", "v1", "Deployment", "deployments", true),
    ("replicationcontroller", "", "v1", "ReplicationController", "replicationcontrollers", true),
    ("replicaset", "apps", "v1", "ReplicaSet", "replicasets", true),
    ("daemonset", "apps", "v1", "DaemonSet", "daemonsets", true),
    ("statefulset", "apps", "v1", "StatefulSet", "statefulsets", true),
    ("services", "", "v1", "Service", "services", true),
    ("pod", "", "v1", "Pod", "pods", true),
    ("job", "batch", "v1", "Job", "jobs", true),
    ("node", "", "v1", "Node", "nodes", false),
    ("clusterrole", "rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", false),
    ("clusterrolebinding", "rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", false),
    ("serviceaccount", "", "v1", "ServiceAccount", "serviceaccounts", true),
    ("persistentvolume", "", "v1", "PersistentVolume", "persistentvolumes", false),
    ("namespace", "", "v1", "Namespace", "namespaces", false),
    ("secret", "", "v1", "Secret", "secrets", true),
    ("configmap", "", "v1", "ConfigMap", "configmaps", true),
    ("ingress", "networking.k8s.io", "v1", "Ingress", "ingresses", true),
    ("hpa", "autoscaling", "v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", true),
    ("event", "events.k8s.io", "v1", "Event", "events", true),
    ("coreevent", "", "v1", "Event", "events", true),
];

/// Every kind kubewatch can watch.
pub fn kinds() -> impl Iterator<Item = KindRef> {
    RESOURCES.iter().map(|&(_, group, version, kind, plural, namespaced)| {
        if namespaced {
            KindRef::namespaced(group, version, kind, plural)
        } else {
            KindRef::cluster(group, version, kind, plural)
        }
    })
}

/// The `resource:` key of `kind`, if kubewatch watches it.
pub fn key_of(kind: &KindRef) -> Option<&'static str> {
    RESOURCES
        .iter()
        .find(|&&(_, group, version, k, _, _)| kind.group == group && kind.version == version && kind.kind == k)
        .map(|&(key, ..)| key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_its_key_and_the_two_events_are_told_apart() {
        assert_eq!(kinds().count(), 20);
        for kind in kinds() {
            assert!(key_of(&kind).is_some(), "{kind}");
        }
        assert_eq!(key_of(&KindRef::namespaced("", "v1", "Event", "events")), Some("coreevent"));
        assert_eq!(key_of(&KindRef::namespaced("events.k8s.io", "v1", "Event", "events")), Some("event"));
        assert_eq!(key_of(&KindRef::namespaced("x.io", "v1", "Foo", "foos")), None);
    }
}
