//! A converged cluster costs nothing: reconciling every parent again writes nothing.

use std::time::Duration;

use serde_json::json;

use crate::harness::{Env, deployments, eventually, metric_sum, pod, pods, resource, service, services, wait_for};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resync_of_converged_parents_makes_no_writes() {
    let env = Env::start(&["demo-application", "foo", "pod-services"]).await;
    let apps = resource("paas.cmft.com", "v1beta1", "DemoApplication", "demoapplications");
    let foos = resource("samplecontroller.k8s.io", "v1alpha1", "Foo", "foos");
    for i in 0..3 {
        env.create(
            &apps,
            json!({"apiVersion": "paas.cmft.com/v1beta1", "kind": "DemoApplication",
            "metadata": {"name": format!("app-{i}"), "namespace": "default"},
            "spec": {"image": "nginx", "replica": 2, "ports": [{"port": 80, "nodePort": 30080 + i}]}}),
        )
        .await;
        env.create(
            &foos,
            json!({"apiVersion": "samplecontroller.k8s.io/v1alpha1", "kind": "Foo",
            "metadata": {"name": format!("foo-{i}"), "namespace": "default"},
            "spec": {"deploymentName": format!("nginx-{i}"), "replicas": 2}}),
        )
        .await;
    }
    env.create(&services(), service("sel", json!({"app": "app-0"}))).await;
    env.create(&pods(), pod("p", "app-0")).await;
    for i in 0..3 {
        wait_for(&env, &services(), &format!("app-{i}"), "demo Services", |_| true).await;
        wait_for(&env, &deployments(), &format!("nginx-{i}"), "foo Deployments", |_| true).await;
        wait_for(&env, &foos, &format!("foo-{i}"), "foo status", |f| f["status"]["availableReplicas"] == 0).await;
    }
    wait_for(&env, &pods(), "p", "the Pod annotated", |p| {
        p["metadata"]["annotations"]["kubewasm.io/services"] == "app-0,sel"
    })
    .await;

    // Converged when a quiet period passes with no write.
    let quiet = eventually("the cluster to settle", || async {
        let before = env.cluster.write_requests();
        tokio::time::sleep(Duration::from_millis(500)).await;
        (env.cluster.write_requests() == before).then_some(before)
    })
    .await;

    let (writes, skipped) =
        (metric_sum(&env.host, "kubewasm_writes_total"), metric_sum(&env.host, "kubewasm_skipped_writes_total"));
    assert!(writes >= 3.0 * 3.0, "the host counted its writes: {writes}");
    let counts: Vec<(String, u64)> =
        env.host.plugins().map(|p| (p.to_string(), env.host.controller(p).expect("controller").reconciles())).collect();
    env.host.resync();
    // 3 DemoApplications, 3 Foos, 1 Pod: each reconciled again.
    for (plugin, before) in counts {
        let parents = if plugin == "pod-services" { 1 } else { 3 };
        eventually(&format!("{plugin} to reconcile its {parents} parents again"), || async {
            (env.host.controller(&plugin).expect("controller").reconciles() >= before + parents).then_some(())
        })
        .await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(env.cluster.write_requests(), quiet, "a resync of a converged cluster wrote something");
    assert_eq!(metric_sum(&env.host, "kubewasm_writes_total"), writes, "the host's count of its writes agrees");
    // Each DemoApplication skips 2 children, its status and its metadata; each Foo 1 child, status, metadata.
    let now_skipped = metric_sum(&env.host, "kubewasm_skipped_writes_total");
    assert!(now_skipped >= skipped + 3.0 * 4.0 + 3.0 * 3.0, "skipped writes counted: {skipped} -> {now_skipped}");
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn caches_report_synced_as_soon_as_every_watch_has_listed() {
    // Readiness (`/readyz`) waits on this while the controllers run; it once waited its
    // whole limit because only the controller's own wait on the parent cache was woken.
    let env = Env::start(&["demo-application", "foo", "pod-services"]).await;
    let started = std::time::Instant::now();
    assert!(env.host.wait_synced(Duration::from_secs(30)).await, "caches synced");
    assert!(started.elapsed() < Duration::from_secs(10), "synced after {:?}, not at once", started.elapsed());
    env.stop().await;
}
