//! A plugin with a finalizer holds its parent's deletion until it says `finalized`.

use std::time::Duration;

use kube::ResourceExt;
use serde_json::json;

use crate::harness::{Env, configmaps, gate, gates, wait_for, wait_gone};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deletion_waits_until_the_plugin_finalizes() {
    let env = Env::start(&["gate"]).await;
    let gates = gates();
    env.create(&gates, gate("g", false)).await;
    wait_for(&env, &gates, "g", "the finalizer on the Gate", |g| {
        g["metadata"]["finalizers"] == json!(["kubewasm.io/gate"])
    })
    .await;
    wait_for(&env, &configmaps(), "g-gate", "the Gate's ConfigMap", |_| true).await;

    env.api(&gates, "default").delete("g", &Default::default()).await.expect("delete");
    wait_for(&env, &gates, "g", "a deletion timestamp", |g| g["metadata"]["deletionTimestamp"].is_string()).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let held = env.get(&gates, "g").await.expect("the Gate is still there while closed");
    assert_eq!(held.finalizers(), ["kubewasm.io/gate"]);

    env.merge(&gates, "g", json!({"spec": {"open": true}})).await;
    wait_gone(&env, &gates, "g", "the Gate to go once open").await;
    wait_gone(&env, &configmaps(), "g-gate", "its ConfigMap to be collected").await;
    env.stop().await;
}
