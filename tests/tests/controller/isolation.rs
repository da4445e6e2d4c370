//! A failing or misbehaving plugin fails its own reconciles only: its neighbours
//! converge, and a refused answer writes nothing.

use serde_json::json;

use crate::harness::{Env, deployments, eventually, resource, wait_for};

fn misbehave(name: &str) -> serde_json::Value {
    json!({"apiVersion": "test.kubewasm.io/v1", "kind": "Misbehave", "metadata": {"name": name, "namespace": "default"}})
}

fn misbehaves() -> kube::discovery::ApiResource {
    resource("test.kubewasm.io", "v1", "Misbehave", "misbehaves")
}

/// The `misbehave` fixture running in `mode`, and its parent `m`.
async fn misbehaving(mode: &str) -> Env {
    let env = Env::start_with(vec![("misbehave", json!({"mode": mode}))]).await;
    env.create(&misbehaves(), misbehave("m")).await;
    env
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_plugin_does_not_stop_its_neighbour() {
    // A retryable error: the failing parent keeps being retried while its neighbour converges
    // (a permanent one waits for a change instead: hostile.rs).
    let env =
        Env::start_with(vec![("misbehave", json!({"mode": "retryable-error"})), ("demo-application", json!(null))])
            .await;
    env.create(&misbehaves(), misbehave("m")).await;
    env.create(
        &resource("paas.cmft.com", "v1beta1", "DemoApplication", "demoapplications"),
        json!({
        "apiVersion": "paas.cmft.com/v1beta1", "kind": "DemoApplication",
        "metadata": {"name": "web", "namespace": "default"}, "spec": {"image": "nginx", "replica": 1, "ports": []}}),
    )
    .await;

    wait_for(&env, &deployments(), "web", "the neighbour's Deployment", |_| true).await;
    let events = eventually("a ReconcileError warning on the failing parent", || async {
        let events = env.events("m", "ReconcileError").await;
        (!events.is_empty()).then_some(events)
    })
    .await;
    assert!(events[0].message.as_deref().unwrap_or_default().contains("backend unavailable"), "{events:?}");
    // Backoff retries it: more than one reconcile of the one failing parent.
    eventually("the failing parent retried", || async {
        (env.host.controller("misbehave").expect("controller").reconciles() >= 3).then_some(())
    })
    .await;
    assert!(env.get(&deployments(), "m").await.is_none(), "a failed reconcile writes nothing");
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_response_writes_nothing() {
    let env = misbehaving("foreign-kind").await;
    let events = eventually("a ResponseRefused warning", || async {
        let events = env.events("m", "ResponseRefused").await;
        (!events.is_empty()).then_some(events)
    })
    .await;
    assert!(events[0].message.as_deref().unwrap_or_default().contains("ClusterRoleBinding"), "{events:?}");
    let bindings = resource("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings");
    let api: kube::Api<kube::api::DynamicObject> = kube::Api::all_with(env.client.clone(), &bindings);
    assert!(api.get_opt("misbehave-cluster-admin").await.expect("get").is_none(), "no ClusterRoleBinding");
    env.stop().await;
}

/// `Response::keep`: an observed child returned as it is is not pruned, keeps what others
/// changed in it, and costs no write once settled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_child_is_neither_pruned_nor_rewritten() {
    let env = misbehaving("keep").await;
    wait_for(&env, &deployments(), "m", "the Deployment built once", |_| true).await;

    // Someone else scales it, as an autoscaler would: the plugin keeps it as it is.
    env.merge(&deployments(), "m", json!({"spec": {"replicas": 5}})).await;
    let settle = || {
        eventually("the cluster to settle", || async {
            let before = env.cluster.write_requests();
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
            (env.cluster.write_requests() == before).then_some(before)
        })
    };
    settle().await;
    let kept = env.get(&deployments(), "m").await.expect("the kept Deployment is not pruned");
    assert_eq!(kept.data["spec"]["replicas"], 5, "kept as it was changed, not rebuilt");

    // Every parent reconciled again: the kept child is not written again.
    let controller = env.host.controller("misbehave").expect("controller");
    let (reconciles, quiet) = (controller.reconciles(), env.cluster.write_requests());
    env.host.resync();
    eventually("the parent reconciled again", || async { (controller.reconciles() > reconciles).then_some(()) }).await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(env.cluster.write_requests(), quiet, "no write for a kept child");
    let again = env.get(&deployments(), "m").await.expect("still there");
    assert_eq!(again.metadata.resource_version, kept.metadata.resource_version, "not rewritten");
    assert!(env.events("m", "KeptChildChanged").await.is_empty(), "a child kept unchanged raises no warning");
    env.stop().await;
}

/// An observed child edited and returned with its uid still on is kept as it is (the
/// uid says so), and the parent gets a Warning saying the edit was not written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edited_child_with_its_uid_is_kept_and_the_mistake_is_reported() {
    let env = misbehaving("keep-edited").await;
    let built = wait_for(&env, &deployments(), "m", "the Deployment built once", |_| true).await;
    let events = eventually("a KeptChildChanged warning", || async {
        let events = env.events("m", "KeptChildChanged").await;
        (!events.is_empty()).then_some(events)
    })
    .await;
    let note = events[0].message.as_deref().unwrap_or_default();
    assert!(note.contains("Deployment m") && note.contains("drop metadata.uid"), "{note}");
    let kept = env.get(&deployments(), "m").await.expect("kept, not pruned");
    assert_eq!(kept.data["spec"]["replicas"], built["spec"]["replicas"], "the edit is not written");
    env.stop().await;
}

/// One reconcile runs `related` and `reconcile` in one instance, and every reconcile
/// gets a fresh one: the fixture counts the calls its instance served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_reconcile_has_one_fresh_instance_for_both_calls() {
    let env = misbehaving("count-calls").await;
    wait_for(&env, &misbehaves(), "m", "the status", |m| m["status"]["callsInInstance"] == 2).await;
    let controller = env.host.controller("misbehave").expect("controller");
    let reconciles = controller.reconciles();
    env.host.resync();
    eventually("the parent reconciled again", || async { (controller.reconciles() > reconciles).then_some(()) }).await;
    let again = env.get(&misbehaves(), "m").await.expect("the parent");
    assert_eq!(again.data["status"]["callsInInstance"], 2, "a fresh instance again, not the previous one");
    env.stop().await;
}

/// Pooled instance slots are reused, their memory reset in place: no call sees what an
/// earlier one left in memory.
#[test]
fn a_reused_pool_slot_starts_from_the_plugin_s_initial_state() {
    use kubewasm::plugin::{Engine, EngineOptions, Plugin, Request};
    let engine =
        Engine::with_options(&EngineOptions { pooling: true, ..EngineOptions::default() }).expect("pooled engine");
    let plugin = Plugin::load(&engine, &crate::harness::wasm_path("misbehave")).expect("misbehave loads");
    let parent = json!({"apiVersion": "test.kubewasm.io/v1", "kind": "Misbehave",
                        "metadata": {"name": "m", "namespace": "default", "uid": "u-1"}});
    for _ in 0..50 {
        let mut instance = plugin.instance();
        instance.related(&parent).expect("related");
        let config = json!({"mode": "count-calls"});
        let request = Request::new(parent.clone(), vec![], vec![], false, "2026-01-01T00:00:00Z".into(), config);
        let response = instance.reconcile(&request).expect("reconcile");
        assert_eq!(response.status, Some(json!({"callsInInstance": 2})));
    }
}
