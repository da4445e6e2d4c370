//! Plugins that watch the same kind share one watch and one cache of it: two plugins
//! with Deployment children (`demo-application` and `foo`) hold one watch of Deployments
//! on the API server, each still triggered by its children and finding them; the watch
//! stays open while one of them runs.

use std::time::Duration;

use kube::api::DeleteParams;
use kubewasm::controller::{Controller, SharedCaches};
use kubewasm::runtime;
use serde_json::json;

use crate::harness::{Cluster, Env, deployments, eventually, plugin, quick, resource, wait_for};

fn demo_applications() -> kube::discovery::ApiResource {
    resource("paas.cmft.com", "v1beta1", "DemoApplication", "demoapplications")
}

fn foos() -> kube::discovery::ApiResource {
    resource("samplecontroller.k8s.io", "v1alpha1", "Foo", "foos")
}

fn demo_application(name: &str) -> serde_json::Value {
    json!({
        "apiVersion": "paas.cmft.com/v1beta1", "kind": "DemoApplication",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"image": "nginx:1.27", "replica": 2, "ports": [{"port": 80}]},
    })
}

/// The watches of Deployments the API server serves: (opened so far, open now).
fn deployment_watches(cluster: &Cluster) -> (u64, u64) {
    cluster.cluster.watches().get("deployments.apps").map(|w| (w.opened, w.open)).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_plugins_share_one_watch_of_deployments_until_the_last_stops() {
    let env = Cluster::start().await;
    let plugins = [plugin("demo-application"), plugin("foo")];
    runtime::install_crds(&env.client, &plugins).await.expect("CRDs install");
    let shared = SharedCaches::new();
    let demo = Controller::start_sharing(env.client.clone(), plugins[0].clone(), quick(), &shared)
        .await
        .expect("demo-application starts");
    let foo =
        Controller::start_sharing(env.client.clone(), plugins[1].clone(), quick(), &shared).await.expect("foo starts");
    assert!(demo.wait_synced(Duration::from_secs(20)).await, "demo-application's caches synced");
    assert!(foo.wait_synced(Duration::from_secs(20)).await, "foo's caches synced");
    // DemoApplications, Deployments and Services for one; Foos and Deployments (its
    // children and related objects, one kind) for the other.
    assert_eq!(shared.watches(), 4, "one watch per kind: {shared:?}");
    watches_of_deployments(&env, 1).await;

    let parent = env.create(&demo_applications(), demo_application("web")).await;
    let foo_object = json!({
        "apiVersion": "samplecontroller.k8s.io/v1alpha1", "kind": "Foo",
        "metadata": {"name": "example-foo", "namespace": "default"},
        "spec": {"deploymentName": "example-nginx", "replicas": 3},
    });
    env.create(&foos(), foo_object).await;
    let web = wait_for(&env, &deployments(), "web", "demo-application's Deployment", |_| true).await;
    assert_eq!(web["metadata"]["ownerReferences"][0]["uid"].as_str(), parent.metadata.uid.as_deref());
    wait_for(&env, &deployments(), "example-nginx", "foo's Deployment", |d| d["spec"]["replicas"] == 3).await;
    // Each finds its own children in the shared cache: foo reports its Deployment's status.
    env.api(&deployments(), "default")
        .patch_status(
            "example-nginx",
            &Default::default(),
            &kube::api::Patch::Merge(json!({"status": {"availableReplicas": 3}})),
        )
        .await
        .expect("status patch");
    wait_for(&env, &foos(), "example-foo", "foo's status", |f| f["status"]["availableReplicas"] == 3).await;

    foo.stop().await;
    assert_eq!(shared.watches(), 3, "foo's Foos are no longer watched; the Deployments still are");
    // demo-application, triggered by its child's deletion through the shared watch,
    // creates it again.
    let old_uid = web["metadata"]["uid"].clone();
    env.api(&deployments(), "default").delete("web", &DeleteParams::default()).await.expect("delete");
    wait_for(&env, &deployments(), "web", "the Deployment created again", |d| d["metadata"]["uid"] != old_uid).await;
    assert_eq!(deployment_watches(&env), (1, 1), "the watch of Deployments was neither opened again nor closed");

    demo.stop().await;
    assert_eq!(shared.watches(), 0, "the last plugin to stop closed every watch");
    eventually("the API server's watch of Deployments closed", || async {
        (deployment_watches(&env) == (1, 0)).then_some(())
    })
    .await;
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_runtime_shares_watches_between_its_plugins_but_not_between_identities() {
    let env = Env::start(&["demo-application", "foo"]).await;
    assert!(env.host.wait_synced(Duration::from_secs(20)).await, "caches synced");
    watches_of_deployments(&env, 1).await;
    // Long after every watch began (each follows its list): still one.
    env.create(&demo_applications(), demo_application("web")).await;
    wait_for(&env, &deployments(), "web", "demo-application's Deployment", |_| true).await;
    assert_eq!(deployment_watches(&env), (1, 1), "one watch of Deployments for both plugins");
    env.stop().await;

    // Each plugin reads as its own account, and sees what that account may list.
    let env = Env::start_with_identities(&["demo-application", "foo"]).await;
    assert!(env.host.wait_synced(Duration::from_secs(20)).await, "caches synced");
    watches_of_deployments(&env, 2).await;
    env.stop().await;
}

/// Waits until `open` watches of Deployments are open, as many as were ever opened.
async fn watches_of_deployments(cluster: &Cluster, open: u64) {
    eventually(&format!("{open} watches of Deployments"), || async {
        (deployment_watches(cluster) == (open, open)).then_some(())
    })
    .await;
}
