//! `stack` (a fixture): a plugin whose children are the kinds real operators own beyond
//! Deployments and Services (a StatefulSet, a Job, a PersistentVolumeClaim, an Ingress), served
//! by the embedded API server with their upstream schemas and defaults.

use std::time::Duration;

use serde_json::json;

use crate::harness::{Env, eventually, resource, wait_for, wait_gone};

fn stacks() -> kube::discovery::ApiResource {
    resource("test.kubewasm.io", "v1", "Stack", "stacks")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workload_storage_and_network_children_converge_quietly_and_are_pruned() {
    let env = Env::start(&["stack"]).await;
    let statefulsets = resource("apps", "v1", "StatefulSet", "statefulsets");
    let jobs = resource("batch", "v1", "Job", "jobs");
    let claims = resource("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims");
    let ingresses = resource("networking.k8s.io", "v1", "Ingress", "ingresses");
    let parent = env
        .create(
            &stacks(),
            json!({"apiVersion": "test.kubewasm.io/v1", "kind": "Stack",
                "metadata": {"name": "db", "namespace": "default"},
                "spec": {"image": "postgres:17", "replicas": 2, "host": "db.example.com", "migrate": true}}),
        )
        .await;
    let uid = parent.metadata.uid.clone().expect("uid");

    let sts = wait_for(&env, &statefulsets, "db", "the StatefulSet", |_| true).await;
    assert_eq!(sts["spec"]["replicas"], 2);
    assert_eq!(sts["metadata"]["ownerReferences"][0]["uid"], uid);
    let job = wait_for(&env, &jobs, "db-migrate", "the migration Job", |_| true).await;
    assert_eq!(job["spec"]["template"]["spec"]["restartPolicy"], "Never");
    let claim = wait_for(&env, &claims, "db-backup", "the PersistentVolumeClaim", |_| true).await;
    assert_eq!(claim["spec"]["resources"]["requests"]["storage"], "1Gi");
    let ingress = wait_for(&env, &ingresses, "db", "the Ingress", |_| true).await;
    assert_eq!(ingress["spec"]["rules"][0]["host"], "db.example.com");

    // Converged: the server's defaults on these kinds do not fight what the plugin applies, so
    // reconciling again writes nothing.
    let quiet = eventually("the cluster to settle", || async {
        let before = env.cluster.write_requests();
        tokio::time::sleep(Duration::from_millis(500)).await;
        (env.cluster.write_requests() == before).then_some(before)
    })
    .await;
    let controller = env.host.controller("stack").expect("controller");
    let before = controller.reconciles();
    env.host.resync();
    eventually("the Stack to be reconciled again", || async { (controller.reconciles() > before).then_some(()) }).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(env.cluster.write_requests(), quiet, "a resync of a converged Stack wrote something");

    // Drift on a StatefulSet is reverted; a Job no longer desired is pruned.
    env.merge(&statefulsets, "db", json!({"spec": {"replicas": 7}})).await;
    wait_for(&env, &statefulsets, "db", "replicas reverted to 2", |s| s["spec"]["replicas"] == 2).await;
    wait_for(&env, &stacks(), "db", "one migration in the status", |s| {
        s["status"]["migrations"] == json!([{"job": "db-migrate"}])
    })
    .await;
    env.merge(&stacks(), "db", json!({"spec": {"migrate": false}})).await;
    wait_gone(&env, &jobs, "db-migrate", "the Job pruned").await;
    // The plugin owns the whole status: a list that empties is written, not kept.
    wait_for(&env, &stacks(), "db", "no migration in the status", |s| s["status"]["migrations"] == json!([])).await;

    // Deleting the parent collects every child.
    env.api(&stacks(), "default").delete("db", &Default::default()).await.expect("delete");
    wait_gone(&env, &statefulsets, "db", "the StatefulSet collected").await;
    wait_gone(&env, &claims, "db-backup", "the PVC collected").await;
    wait_gone(&env, &ingresses, "db", "the Ingress collected").await;
    env.stop().await;
}
