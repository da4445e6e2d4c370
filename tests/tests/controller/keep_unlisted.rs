//! `keep-jobs` (a fixture): child kinds the manifest keeps unlisted. The Jobs an answer
//! omits stay, whichever branch of the plugin forgot them; a ConfigMap, of a kind not kept,
//! is pruned as before; a Job the answer names by uid is deleted; deleting the parent
//! collects the kept Jobs too.

use serde_json::json;

use crate::harness::{Env, configmaps, resource, wait_for, wait_gone};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn omitted_children_of_a_kept_kind_stay_and_others_are_pruned() {
    let env = Env::start(&["keep-jobs"]).await;
    let schedules = resource("test.kubewasm.io", "v1", "Schedule", "schedules");
    let jobs = resource("batch", "v1", "Job", "jobs");
    env.create(
        &schedules,
        json!({"apiVersion": "test.kubewasm.io/v1", "kind": "Schedule",
            "metadata": {"name": "nightly", "namespace": "default"}, "spec": {"run": ["a", "b"]}}),
    )
    .await;
    let a = wait_for(&env, &jobs, "a", "the Job a", |_| true).await;
    wait_for(&env, &jobs, "b", "the Job b", |_| true).await;
    wait_for(&env, &configmaps(), "nightly", "the ConfigMap", |c| c["data"]["run"] == "a,b").await;

    // The answer drops `a`. Its status is written after the host's deletions: once it
    // shows, `a` would be gone had the host pruned it.
    env.merge(&schedules, "nightly", json!({"spec": {"run": ["b"]}})).await;
    wait_for(&env, &schedules, "nightly", "the status of the answer without a", |s| s["status"]["run"] == json!(["b"]))
        .await;
    let still = env.get(&jobs, "a").await.expect("the omitted Job a is kept");
    assert_eq!(still.metadata.uid.as_deref(), a["metadata"]["uid"].as_str(), "the same Job, not a new one");
    assert!(still.metadata.deletion_timestamp.is_none(), "Job a is being deleted");

    // The answer names the kept Job `a` in `delete`: it goes, `b` stays.
    env.merge(&schedules, "nightly", json!({"spec": {"delete": ["a"]}})).await;
    wait_gone(&env, &jobs, "a", "Job a deleted by uid").await;
    let b = env.get(&jobs, "b").await.expect("Job b is kept");
    assert!(b.metadata.deletion_timestamp.is_none(), "Job b is being deleted");

    // Suspended, the answer holds no child: the ConfigMap, of a kind not kept, is pruned by
    // the plan that keeps every Job.
    env.merge(&schedules, "nightly", json!({"spec": {"suspend": true}})).await;
    wait_for(&env, &schedules, "nightly", "the suspended status", |s| s["status"]["suspended"] == true).await;
    wait_gone(&env, &configmaps(), "nightly", "the ConfigMap pruned").await;
    let job = env.get(&jobs, "b").await.expect("Job b deleted while suspended");
    assert!(job.metadata.deletion_timestamp.is_none(), "Job b is being deleted");

    // Kept is not orphaned: the parent's deletion collects its Jobs.
    env.api(&schedules, "default").delete("nightly", &Default::default()).await.expect("delete");
    wait_gone(&env, &jobs, "b", "Job b collected with its parent").await;
    env.stop().await;
}
