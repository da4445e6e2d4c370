//! `demo-application`: a DemoApplication becomes a Deployment and a Service, kept as
//! specified whatever happens to them. Each test runs for the Rust plugin and for its
//! Python, JavaScript, TypeScript and Go ports, `demo-application-python`, `-js`, `-ts`
//! and `-go` (modules `rust`, `python`, `js`, `ts` and `go`).

use serde_json::{Value, json};

use crate::harness::{Env, deployments, resource, services, wait_for, wait_gone};

fn demo_applications() -> kube::discovery::ApiResource {
    resource("paas.cmft.com", "v1beta1", "DemoApplication", "demoapplications")
}

fn demo(name: &str, replica: i64, ports: Value) -> Value {
    json!({
        "apiVersion": "paas.cmft.com/v1beta1",
        "kind": "DemoApplication",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"image": "nginx:1.27", "replica": replica, "ports": ports},
    })
}

fn container_ports(deployment: &Value) -> Vec<i64> {
    deployment["spec"]["template"]["spec"]["containers"][0]["ports"]
        .as_array()
        .map(|ports| ports.iter().filter_map(|p| p["containerPort"].as_i64()).collect())
        .unwrap_or_default()
}

async fn children_appear_as_specified_and_follow_spec_changes(plugin: &str) {
    let env = Env::start(&[plugin]).await;
    let parent = env
        .create(
            &demo_applications(),
            demo("web", 2, json!([{"port": 80}, {"port": 8443, "targetPort": 443, "nodePort": 30443}])),
        )
        .await;

    let deployment = wait_for(&env, &deployments(), "web", "the Deployment", |_| true).await;
    assert_eq!(deployment["spec"]["replicas"], 2);
    assert_eq!(deployment["metadata"]["labels"]["app"], "web");
    assert_eq!(deployment["spec"]["template"]["spec"]["containers"][0]["image"], "nginx:1.27");
    assert_eq!(container_ports(&deployment), [80, 443], "container ports come from targetPort");
    let owner = &deployment["metadata"]["ownerReferences"][0];
    assert_eq!(owner["uid"].as_str(), parent.metadata.uid.as_deref());
    assert_eq!(owner["controller"], true);

    let service = wait_for(&env, &services(), "web", "the Service", |_| true).await;
    assert_eq!(service["spec"]["type"], "NodePort");
    assert_eq!(service["spec"]["selector"], json!({"app": "web"}));
    assert_eq!(service["spec"]["ports"][1]["port"], 8443);
    assert_eq!(service["spec"]["ports"][1]["targetPort"], 443);
    assert_eq!(service["spec"]["ports"][1]["nodePort"], 30443);

    env.merge(&demo_applications(), "web", json!({"spec": {"replica": 3, "ports": [{"port": 8080}]}})).await;
    let deployment = wait_for(&env, &deployments(), "web", "replicas 3", |d| d["spec"]["replicas"] == 3).await;
    assert_eq!(container_ports(&deployment), [8080]);
    let service =
        wait_for(&env, &services(), "web", "a ClusterIP Service on 8080", |s| s["spec"]["type"] == "ClusterIP").await;
    let ports = service["spec"]["ports"].as_array().expect("ports");
    assert_eq!(ports.len(), 1);
    assert_eq!(ports[0]["port"], 8080);
    assert!(ports[0].get("nodePort").is_none(), "the nodePort the plugin no longer sets is gone: {service}");
    env.stop().await;
}

async fn children_edited_or_deleted_by_hand_are_restored(plugin: &str) {
    let env = Env::start(&[plugin]).await;
    env.create(&demo_applications(), demo("web", 2, json!([{"port": 80}]))).await;
    wait_for(&env, &services(), "web", "the Service", |_| true).await;

    env.merge(&deployments(), "web", json!({"spec": {"replicas": 9}})).await;
    wait_for(&env, &deployments(), "web", "replicas reverted to 2", |d| d["spec"]["replicas"] == 2).await;

    env.merge(
        &services(),
        "web",
        json!({"spec": {"ports": [{"name": "port-80", "port": 80, "targetPort": 9999, "protocol": "TCP"}]}}),
    )
    .await;
    wait_for(&env, &services(), "web", "the Service's targetPort reverted to 80", |s| {
        s["spec"]["ports"][0]["targetPort"] == 80
    })
    .await;

    let old = env.get(&deployments(), "web").await.expect("deployment").metadata.uid;
    env.api(&deployments(), "default").delete("web", &Default::default()).await.expect("delete");
    wait_for(&env, &deployments(), "web", "a new Deployment", |d| d["metadata"]["uid"].as_str() != old.as_deref())
        .await;
    env.stop().await;
}

async fn children_are_collected_with_their_parent(plugin: &str) {
    let env = Env::start(&[plugin]).await;
    env.create(&demo_applications(), demo("web", 1, json!([{"port": 80}]))).await;
    wait_for(&env, &services(), "web", "the Service", |_| true).await;
    wait_for(&env, &deployments(), "web", "the Deployment", |_| true).await;

    env.api(&demo_applications(), "default").delete("web", &Default::default()).await.expect("delete");
    wait_gone(&env, &deployments(), "web", "the Deployment to be collected").await;
    wait_gone(&env, &services(), "web", "the Service to be collected").await;
    env.stop().await;
}

async fn a_child_no_longer_desired_is_pruned(plugin: &str) {
    let env = Env::start(&[plugin]).await;
    env.create(&demo_applications(), demo("web", 1, json!([{"port": 80}]))).await;
    wait_for(&env, &services(), "web", "the Service", |_| true).await;

    env.merge(&demo_applications(), "web", json!({"spec": {"ports": []}})).await;
    wait_gone(&env, &services(), "web", "the Service of an application without ports to be pruned").await;
    assert!(env.get(&deployments(), "web").await.is_some(), "the Deployment stays");
    env.stop().await;
}

async fn status_reports_the_deployments_available_replicas(plugin: &str) {
    let env = Env::start(&[plugin]).await;
    env.create(&demo_applications(), demo("web", 2, json!([]))).await;
    wait_for(&env, &demo_applications(), "web", "status 0 before any replica is up", |p| {
        p["status"]["availableReplicas"] == 0
    })
    .await;

    // No kubelet here: the test plays the Deployment controller.
    env.api(&deployments(), "default")
        .patch_status(
            "web",
            &Default::default(),
            &kube::api::Patch::Merge(json!({"status": {"availableReplicas": 2, "replicas": 2}})),
        )
        .await
        .expect("status patch");
    wait_for(&env, &demo_applications(), "web", "status availableReplicas 2", |p| {
        p["status"]["availableReplicas"] == 2
    })
    .await;
    env.stop().await;
}

async fn a_plugin_without_related_kinds_is_not_asked_for_related_queries(plugin: &str) {
    // One instance per reconcile instead of two: for some language runtimes an instance
    // costs hundreds of milliseconds.
    let env = Env::start(&[plugin]).await;
    env.create(&demo_applications(), demo("solo", 1, json!([{"port": 80}]))).await;
    wait_for(&env, &services(), "solo", "the Service", |_| true).await;
    let controller = env.host.controller(plugin).expect("running");
    let text = controller.metrics().encode();
    let calls = |call: &str| {
        crate::harness::samples(&text)
            .filter(|(series, _)| {
                series.starts_with("kubewasm_plugin_call_duration_seconds_count{") && series.contains(call)
            })
            .map(|(_, value)| value)
            .sum::<f64>()
    };
    assert!(calls("call=\"reconcile\"") >= 1.0, "{text}");
    assert_eq!(calls("call=\"related\""), 0.0, "{text}");
    env.stop().await;
}

async fn a_deployment_someone_else_made_is_left_alone_with_a_warning(plugin: &str) {
    let env = Env::start(&[plugin]).await;
    let theirs = env
        .create(
            &deployments(),
            json!({
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "web", "namespace": "default"},
                "spec": {"replicas": 5, "selector": {"matchLabels": {"team": "b"}},
                         "template": {"metadata": {"labels": {"team": "b"}},
                                      "spec": {"containers": [{"name": "app", "image": "busybox:1"}]}}},
            }),
        )
        .await;
    env.create(&demo_applications(), demo("web", 2, json!([{"port": 80}]))).await;

    // The Service is the plugin's; the Deployment stays someone else's, untouched.
    wait_for(&env, &services(), "web", "the Service", |_| true).await;
    crate::harness::eventually("a ChildConflict warning on the parent", || async {
        (!env.events("web", "ChildConflict").await.is_empty()).then_some(())
    })
    .await;
    let deployment = env.get(&deployments(), "web").await.expect("their Deployment");
    assert_eq!(deployment.metadata.resource_version, theirs.metadata.resource_version, "never written");
    assert!(deployment.metadata.owner_references.is_none());
    env.stop().await;
}

kubewasm_tests::for_each_plugin!(
    [
        (rust, "demo-application", "The Rust plugin."),
        (python, "demo-application-python", "Its Python port."),
        (js, "demo-application-js", "Its JavaScript port."),
        (ts, "demo-application-ts", "Its TypeScript port."),
        (go, "demo-application-go", "Its Go port."),
    ],
    (
        children_appear_as_specified_and_follow_spec_changes,
        children_edited_or_deleted_by_hand_are_restored,
        children_are_collected_with_their_parent,
        a_child_no_longer_desired_is_pruned,
        status_reports_the_deployments_available_replicas,
        a_plugin_without_related_kinds_is_not_asked_for_related_queries,
        a_deployment_someone_else_made_is_left_alone_with_a_warning
    )
);
