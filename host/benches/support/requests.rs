//! The DemoApplication request the call benchmarks make: a parent with two ports and
//! `n` observed Deployments it controls.

use serde_json::{Value, json};

pub fn parent() -> Value {
    json!({
        "apiVersion": "paas.cmft.com/v1beta1",
        "kind": "DemoApplication",
        "metadata": {"name": "web", "namespace": "default", "uid": "uid-web"},
        "spec": {"image": "nginx:1.27", "replica": 3,
                 "ports": [{"port": 80, "targetPort": 8080}, {"port": 443, "targetPort": 8443, "nodePort": 30443}]}
    })
}

/// `n` observed Deployments controlled by the parent; the first is the plugin's own.
pub fn observed(n: usize) -> Vec<Value> {
    (0..n)
        .map(|i| {
            let name = if i == 0 { "web".to_string() } else { format!("web-old-{i}") };
            json!({
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{i}"),
                             "labels": {"app": "web"},
                             "ownerReferences": [{"apiVersion": "paas.cmft.com/v1beta1", "kind": "DemoApplication",
                                                  "name": "web", "uid": "uid-web", "controller": true}]},
                "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                         "template": {"metadata": {"labels": {"app": "web"}},
                                      "spec": {"containers": [{"name": "app", "image": "nginx:1.27",
                                                               "ports": [{"containerPort": 8080}]}]}}},
                "status": {"replicas": 3, "availableReplicas": 3}
            })
        })
        .collect()
}
