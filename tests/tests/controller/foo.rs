//! `foo`: the sample-controller's Foo runs an nginx Deployment, and never takes over
//! one it does not own.

use serde_json::json;

use crate::harness::{Env, deployments, eventually, resource, wait_for};

fn foos() -> kube::discovery::ApiResource {
    resource("samplecontroller.k8s.io", "v1alpha1", "Foo", "foos")
}

fn foo(name: &str, deployment: &str, replicas: i64) -> serde_json::Value {
    json!({
        "apiVersion": "samplecontroller.k8s.io/v1alpha1",
        "kind": "Foo",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"deploymentName": deployment, "replicas": replicas},
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foo_runs_its_deployment_and_reports_status() {
    let env = Env::start(&["foo"]).await;
    env.create(&foos(), foo("example-foo", "example-nginx", 1)).await;
    let d = wait_for(&env, &deployments(), "example-nginx", "the Deployment", |_| true).await;
    assert_eq!(d["spec"]["replicas"], 1);
    assert_eq!(d["spec"]["template"]["spec"]["containers"][0]["image"], "nginx:latest");
    assert_eq!(d["metadata"]["labels"]["controller"], "example-foo");

    env.merge(&foos(), "example-foo", json!({"spec": {"replicas": 4}})).await;
    wait_for(&env, &deployments(), "example-nginx", "replicas 4", |d| d["spec"]["replicas"] == 4).await;

    env.merge(&deployments(), "example-nginx", json!({"spec": {"replicas": 1}})).await;
    wait_for(&env, &deployments(), "example-nginx", "replicas reverted to 4", |d| d["spec"]["replicas"] == 4).await;

    env.api(&deployments(), "default")
        .patch_status(
            "example-nginx",
            &Default::default(),
            &kube::api::Patch::Merge(json!({"status": {"availableReplicas": 4}})),
        )
        .await
        .expect("status patch");
    wait_for(&env, &foos(), "example-foo", "status availableReplicas 4", |f| f["status"]["availableReplicas"] == 4)
        .await;
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deployment_foo_does_not_own_is_left_alone_with_a_warning() {
    let env = Env::start(&["foo"]).await;
    let theirs = env
        .create(
            &deployments(),
            json!({
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "taken", "namespace": "default"},
                "spec": {"replicas": 7, "selector": {"matchLabels": {"app": "theirs"}},
                         "template": {"metadata": {"labels": {"app": "theirs"}},
                                      "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}
            }),
        )
        .await;
    env.create(&foos(), foo("greedy", "taken", 2)).await;

    let warnings = eventually("an ErrResourceExists warning on the Foo", || async {
        let events = env.events("greedy", "ErrResourceExists").await;
        (!events.is_empty()).then_some(events)
    })
    .await;
    assert_eq!(warnings[0].type_.as_deref(), Some("Warning"));
    assert!(warnings[0].message.as_deref().unwrap_or_default().contains("not managed by Foo"), "{warnings:?}");

    let d = env.get(&deployments(), "taken").await.expect("their deployment");
    assert_eq!(d.metadata.uid, theirs.metadata.uid);
    assert_eq!(d.data["spec"]["replicas"], 7, "their replicas untouched");
    assert!(d.metadata.owner_references.unwrap_or_default().is_empty(), "not adopted");

    // The same reason with another message is another event, not a repeat of the first.
    let mut other = env.get(&deployments(), "taken").await.expect("theirs");
    other.metadata = kube::api::ObjectMeta { name: Some("taken-too".into()), ..Default::default() };
    env.create(&deployments(), serde_json::to_value(other).expect("json")).await;
    env.merge(&foos(), "greedy", json!({"spec": {"deploymentName": "taken-too"}})).await;
    let messages = eventually("a warning naming taken-too", || async {
        let events = env.events("greedy", "ErrResourceExists").await;
        let messages: Vec<String> = events.into_iter().filter_map(|e| e.message).collect();
        messages.iter().any(|m| m.contains("\"taken-too\"")).then_some(messages)
    })
    .await;
    assert!(messages.iter().any(|m| m.contains("\"taken\"")), "the first message is kept too: {messages:?}");
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_crd_schema_refuses_out_of_range_replicas() {
    let env = Env::start(&["foo"]).await;
    let object: kube::api::DynamicObject = serde_json::from_value(foo("big", "big", 11)).expect("json");
    let err = env.api(&foos(), "default").create(&Default::default(), &object).await.expect_err("refused");
    let kube::Error::Api(status) = err else { panic!("expected an API error, got {err:?}") };
    assert_eq!(status.code, 422);
    assert!(status.message.contains("spec.replicas"), "{}", status.message);
    env.stop().await;
}
