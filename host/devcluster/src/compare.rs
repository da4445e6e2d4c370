//! End states of two runs, compared: what the server assigns anew on every run is left out,
//! so that a run under faults can be checked against a faithful one.

use serde_json::Value;

/// `object` without what differs between two runs of one workload: uids (its own and its
/// owners'), resourceVersions, timestamps, managedFields, generation, and the cluster IPs
/// and node ports the server allocates.
#[must_use]
pub fn comparable(mut object: Value) -> Value {
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        for field in ["uid", "resourceVersion", "creationTimestamp", "deletionTimestamp", "managedFields", "generation"]
        {
            meta.remove(field);
        }
        for owner in meta.get_mut("ownerReferences").and_then(Value::as_array_mut).into_iter().flatten() {
            owner.as_object_mut().map(|o| o.remove("uid"));
        }
    }
    if let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) {
        spec.remove("clusterIP");
        spec.remove("clusterIPs");
        for port in spec.get_mut("ports").and_then(Value::as_array_mut).into_iter().flatten() {
            port.as_object_mut().map(|p| p.remove("nodePort"));
        }
    }
    object
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::comparable;

    #[test]
    fn two_runs_of_one_service_compare_equal() {
        let run = |uid: &str, ip: &str, node_port: u16| {
            json!({
                "metadata": { "name": "web", "uid": uid, "resourceVersion": uid, "generation": 1,
                              "ownerReferences": [{ "name": "app", "uid": uid }], "labels": { "app": "web" } },
                "spec": { "clusterIP": ip, "clusterIPs": [ip], "ports": [{ "port": 80, "nodePort": node_port }] },
            })
        };
        assert_eq!(comparable(run("1", "10.0.0.1", 30001)), comparable(run("2", "10.0.0.2", 30002)));
        let mut other = run("1", "10.0.0.1", 30001);
        other["metadata"]["labels"]["app"] = json!("api");
        assert_ne!(comparable(other), comparable(run("1", "10.0.0.1", 30001)));
    }
}
