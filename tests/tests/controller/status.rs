//! The status as the API server keeps it: a field its schema does not declare is dropped
//! with a warning the host reports once and writes again once the schema declares it; the
//! echo of the host's own status write does not call the plugin again.

use std::time::Duration;

use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, ListParams, Patch, PatchParams};
use serde_json::{Value, json};

use crate::harness::{Env, deployments, eventually, plugin, quick, resource, wait_for};
use kubewasm::controller::{Options, Warnings};

/// demo-application's CRD, with a status schema that declares `phase` only.
fn without_available_replicas() -> Value {
    let mut crd = plugin("demo-application").crds()[0].clone();
    for version in crd["spec"]["versions"].as_array_mut().expect("versions") {
        version["schema"]["openAPIV3Schema"]["properties"]["status"] =
            json!({"type": "object", "properties": {"phase": {"type": "string"}}});
    }
    crd
}

/// Applies `crd` as `kubewasm dev` installs the plugins' CRDs.
async fn apply_crd(env: &Env, crd: &Value) {
    let api: Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
        Api::all(env.client.clone());
    let name = crd["metadata"]["name"].as_str().expect("CRD name");
    api.patch(name, &PatchParams::apply("kubewasm").force(), &Patch::Apply(crd)).await.expect("CRD applied");
}

/// The events on `name` with `reason`: each one's type, note and how many times it was
/// recorded.
async fn events(env: &Env, name: &str, reason: &str) -> Vec<(String, String, i32)> {
    let api: Api<Event> = Api::namespaced(env.client.clone(), "default");
    let events = api.list(&ListParams::default()).await.expect("list events");
    events
        .items
        .into_iter()
        .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name))
        .filter(|e| e.reason.as_deref() == Some(reason))
        .map(|e| (e.type_.unwrap_or_default(), e.note.unwrap_or_default(), e.series.map_or(1, |s| s.count)))
        .collect()
}

/// [`events`], once the cluster has been quiet for half a second.
async fn settled_events(env: &Env, name: &str, reason: &str) -> Vec<(String, String, i32)> {
    eventually("the cluster to settle", || async {
        let before = env.cluster.write_requests();
        tokio::time::sleep(Duration::from_millis(500)).await;
        (env.cluster.write_requests() == before).then_some(())
    })
    .await;
    events(env, name, reason).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_status_field_the_schema_drops_is_reported_once_and_written_once_the_schema_declares_it() {
    let warnings = Warnings::default();
    let options = Options { warnings: warnings.clone(), ..quick() };
    let env = Env::start_with_options(vec![("demo-application", options)]).await;
    let apps = resource("paas.cmft.com", "v1beta1", "DemoApplication", "demoapplications");
    apply_crd(&env, &without_available_replicas()).await;
    env.create(
        &apps,
        json!({"apiVersion": "paas.cmft.com/v1beta1", "kind": "DemoApplication",
               "metadata": {"name": "app", "namespace": "default"},
               "spec": {"image": "nginx", "replica": 2, "ports": [{"port": 80, "nodePort": 30080}]}}),
    )
    .await;
    wait_for(&env, &deployments(), "app", "the Deployment", |_| true).await;
    let (kind, message, _) = eventually("a Warning event naming the dropped field", || async {
        events(&env, "app", "APIServerWarning").await.into_iter().next()
    })
    .await;
    assert_eq!(kind, "Warning");
    assert!(
        message.contains(r#"apply status: the API server warned: unknown field "status.availableReplicas""#),
        "{message}"
    );
    let shown = warnings.of("demo-application").expect("the dev table's warning");
    assert!(shown.contains("DemoApplication app") && shown.contains("status.availableReplicas"), "{shown}");

    // The Deployment's own changes reconcile the parent again: the same cause is not
    // reported again, and the status, dropped alike, is not written in a loop.
    let settled = settled_events(&env, "app", "APIServerWarning").await;
    assert_eq!(settled.len(), 1, "{settled:?}");
    assert_eq!(settled[0].2, 1, "reported once: {settled:?}");
    let app = env.get(&apps, "app").await.expect("the app");
    assert!(app.data["status"].get("availableReplicas").is_none(), "dropped: {:?}", app.data["status"]);

    // The schema declares it again: the host writes the status again without the parent changing.
    apply_crd(&env, &plugin("demo-application").crds()[0]).await;
    wait_for(&env, &apps, "app", "status.availableReplicas written", |a| a["status"]["availableReplicas"] == 0).await;
    env.stop().await;
}

/// foo warns about a Deployment it does not own in every reconcile, and writes its status:
/// the watch event of that status write is the host's own, not a change to reconcile again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hosts_own_status_write_does_not_repeat_a_plugins_warning() {
    let env = Env::start(&["foo"]).await;
    let foos = resource("samplecontroller.k8s.io", "v1alpha1", "Foo", "foos");
    env.create(
        &deployments(),
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "taken", "namespace": "default"},
               "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "theirs"}},
                        "template": {"metadata": {"labels": {"app": "theirs"}},
                                     "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}),
    )
    .await;
    env.create(
        &foos,
        json!({"apiVersion": "samplecontroller.k8s.io/v1alpha1", "kind": "Foo",
               "metadata": {"name": "greedy", "namespace": "default"},
               "spec": {"deploymentName": "taken", "replicas": 1}}),
    )
    .await;
    wait_for(&env, &foos, "greedy", "the status written", |f| f["status"]["availableReplicas"] == 0).await;
    let settled = settled_events(&env, "greedy", "ErrResourceExists").await;
    assert_eq!(settled.len(), 1, "{settled:?}");
    assert_eq!(settled[0].2, 1, "one change, one warning: {settled:?}");

    // A change by someone else is reconciled: the warning counts up once.
    env.merge(&foos, "greedy", json!({"spec": {"replicas": 2}})).await;
    eventually("the warning repeated", || async {
        events(&env, "greedy", "ErrResourceExists").await.iter().any(|(_, _, count)| *count >= 2).then_some(())
    })
    .await;
    let settled = settled_events(&env, "greedy", "ErrResourceExists").await;
    assert_eq!(settled[0].2, 2, "{settled:?}");
    env.stop().await;
}
