//! `pod-services`: each Pod's annotation names the Services that select it, kept
//! current as Services and Pod labels change.

use serde_json::{Value, json};

use crate::harness::{Env, pod, pods, service, services, wait_for};

const ANNOTATION: &str = "kubewasm.io/services";

fn annotation(pod: &Value) -> Option<&str> {
    pod["metadata"]["annotations"][ANNOTATION].as_str()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_annotation_follows_services_and_pod_labels() {
    let env = Env::start(&["pod-services"]).await;
    env.create(&pods(), pod("web-0", "web")).await;
    let reconciled = || env.host.controller("pod-services").expect("controller").reconciles();
    crate::harness::eventually("the Pod reconciled once", || async { (reconciled() > 0).then_some(()) }).await;
    let pod = env.get(&pods(), "web-0").await.expect("pod");
    assert!(pod.annotations().get(ANNOTATION).is_none(), "no Service selects it yet");

    env.create(&services(), service("a", json!({"app": "web"}))).await;
    wait_for(&env, &pods(), "web-0", "annotation a", |p| annotation(p) == Some("a")).await;

    env.create(&services(), service("b", json!({"app": "web", "tier": "fe"}))).await;
    env.create(&services(), service("elsewhere", json!({"app": "db"}))).await;
    env.merge(&pods(), "web-0", json!({"metadata": {"labels": {"tier": "fe"}}})).await;
    wait_for(&env, &pods(), "web-0", "annotation a,b after the Pod's label change", |p| annotation(p) == Some("a,b"))
        .await;

    env.merge(&services(), "a", json!({"spec": {"selector": {"app": "other"}}})).await;
    wait_for(&env, &pods(), "web-0", "annotation b after a's selector change", |p| annotation(p) == Some("b")).await;

    env.api(&services(), "default").delete("b", &Default::default()).await.expect("delete b");
    wait_for(&env, &pods(), "web-0", "no annotation once no Service selects it", |p| annotation(p).is_none()).await;
    env.stop().await;
}

use kube::ResourceExt as _;
