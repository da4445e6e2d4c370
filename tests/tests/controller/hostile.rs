//! Hostile plugins are contained: each fails its own reconciles with a clear
//! reason, is backed off rather than hot-looped, writes nothing, and the
//! well-behaved plugin beside it keeps converging.

use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{Env, deployments, eventually, resource, wait_for};

/// Runs misbehave with `config` beside demo-application and returns the first
/// Warning event with `reason` on the misbehaving parent.
async fn contained(config: Value, reason: &str) -> (Env, String) {
    let env = Env::start_with(vec![("misbehave", config), ("demo-application", Value::Null)]).await;
    env.create(
        &resource("test.kubewasm.io", "v1", "Misbehave", "misbehaves"),
        json!({
        "apiVersion": "test.kubewasm.io/v1", "kind": "Misbehave", "metadata": {"name": "m", "namespace": "default"}}),
    )
    .await;
    let message = eventually(&format!("a {reason} warning on the misbehaving parent"), || async {
        let events = env.events("m", reason).await;
        events.first().and_then(|e| e.message.clone())
    })
    .await;
    env.create(&resource("paas.cmft.com", "v1beta1", "DemoApplication", "demoapplications"), json!({
        "apiVersion": "paas.cmft.com/v1beta1", "kind": "DemoApplication",
        "metadata": {"name": "neighbour", "namespace": "default"}, "spec": {"image": "nginx", "replica": 1, "ports": []}}))
        .await;
    wait_for(&env, &deployments(), "neighbour", "the well-behaved plugin to converge", |_| true).await;
    assert!(env.get(&deployments(), "m").await.is_none(), "the misbehaving plugin wrote nothing");
    (env, message)
}

/// Failures back off exponentially: a hot loop would reconcile thousands of times.
async fn assert_backed_off(env: &Env) {
    let reconciles = || env.host.controller("misbehave").expect("controller").reconciles();
    let before = reconciles();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let during = reconciles() - before;
    assert!(during < 30, "{during} reconciles of one failing parent in 2 s: not backed off");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_infinite_loop_is_stopped_at_the_deadline() {
    let (env, message) = contained(json!({"mode": "loop"}), "PluginTimeout").await;
    assert!(message.contains("exceeded its deadline of 1s"), "{message}");
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allocating_until_death_is_stopped_at_the_memory_cap() {
    let (env, message) = contained(json!({"mode": "allocate"}), "PluginOutOfMemory").await;
    assert!(message.contains("memory limit of 64 MiB"), "{message}");
    assert_backed_off(&env).await;
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_100_mib_answer_cannot_be_built_within_the_memory_cap() {
    let (env, message) = contained(json!({"mode": "huge", "mib": 100}), "PluginOutOfMemory").await;
    assert!(message.contains("memory limit"), "{message}");
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_over_the_response_cap_is_refused() {
    let (env, message) = contained(json!({"mode": "huge", "mib": 20}), "ResponseRefused").await;
    assert!(message.contains("over the limit"), "{message}");
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_role_binding_is_refused() {
    let (env, message) = contained(json!({"mode": "foreign-kind"}), "ResponseRefused").await;
    assert!(message.contains("ClusterRoleBinding") && message.contains("did not declare"), "{message}");
    assert_backed_off(&env).await;
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_object_in_another_namespace_is_refused() {
    let (env, message) = contained(json!({"mode": "other-namespace"}), "ResponseRefused").await;
    assert!(message.contains("kube-system") && message.contains("outside its parent's namespace"), "{message}");
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_is_reported_with_its_message() {
    let (env, message) = contained(json!({"mode": "panic"}), "PluginFailed").await;
    assert!(message.contains("misbehave was told to panic"), "{message}");
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_flood_is_cut_short_and_the_reconcile_still_lands() {
    let env = Env::start_with(vec![("misbehave", json!({"mode": "log-flood"}))]).await;
    env.create(&resource("test.kubewasm.io", "v1", "Misbehave", "misbehaves"), json!({
        "apiVersion": "test.kubewasm.io/v1", "kind": "Misbehave", "metadata": {"name": "chatty", "namespace": "default"}}))
        .await;
    // 100,000 lines are logged in the call; the host keeps 1,000 and applies the answer.
    wait_for(&env, &deployments(), "chatty", "the chatty plugin's Deployment", |_| true).await;
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permanent_error_waits_for_a_change_instead_of_being_retried() {
    let (env, message) = contained(json!({"mode": "error"}), "ReconcileError").await;
    assert!(message.contains("spec.size: must be positive"), "{message}");
    let reconciles = || env.host.controller("misbehave").expect("controller").reconciles();
    let before = reconciles();
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(reconciles(), before, "retrying cannot fix it: no retry within 2 s");

    // A change to the parent is what can fix it: reconciled at once.
    let misbehaves = resource("test.kubewasm.io", "v1", "Misbehave", "misbehaves");
    env.merge(&misbehaves, "m", json!({"spec": {"size": 2}})).await;
    eventually("a reconcile after the change", || async { (reconciles() > before).then_some(()) }).await;
    env.stop().await;
}
