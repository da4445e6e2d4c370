//! Delete: preconditions, finalizers, propagation policies, ownerReference garbage collection,
//! deletecollection, and namespace deletion.

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, Preconditions};
use serde_json::{Value, json};

use super::{api_error, start, start_empty};

fn cm(name: &str, extra_meta: Value) -> ConfigMap {
    let mut meta = json!({ "name": name });
    if let (Some(m), Some(extra)) = (meta.as_object_mut(), extra_meta.as_object()) {
        m.extend(extra.clone());
    }
    serde_json::from_value(json!({ "metadata": meta })).unwrap()
}

fn owned_by(owner: &ConfigMap, block: bool) -> Value {
    json!({ "ownerReferences": [{ "apiVersion": "v1", "kind": "ConfigMap", "name": owner.metadata.name,
        "uid": owner.metadata.uid, "blockOwnerDeletion": block }] })
}

async fn eventually_gone(api: &Api<ConfigMap>, name: &str) -> bool {
    super::eventually(|| async { api.get_opt(name).await.unwrap().is_none() }).await
}

#[tokio::test]
async fn finalizers_hold_the_object_until_they_are_removed() {
    let dc = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(dc.client(), "default");
    cms.create(&PostParams::default(), &cm("f", json!({ "finalizers": ["example.com/hold"] }))).await.unwrap();
    let pending = cms.delete("f", &DeleteParams::default()).await.unwrap().left().expect("the object is returned");
    assert!(pending.metadata.deletion_timestamp.is_some());
    assert_eq!(pending.metadata.deletion_grace_period_seconds, Some(0));
    let still = cms.get("f").await.unwrap();
    assert!(still.metadata.deletion_timestamp.is_some());
    let err = api_error(
        cms.patch(
            "f",
            &PatchParams::default(),
            &Patch::Merge(json!({ "metadata": { "finalizers": ["example.com/hold", "new"] } })),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(err.code, 422, "no new finalizers while deleting");
    cms.patch("f", &PatchParams::default(), &Patch::Merge(json!({ "metadata": { "finalizers": null } })))
        .await
        .unwrap();
    assert!(cms.get_opt("f").await.unwrap().is_none());
    dc.shutdown().await;
}

#[tokio::test]
async fn preconditions_guard_deletion() {
    let dc = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(dc.client(), "default");
    let created = cms.create(&PostParams::default(), &cm("p", json!({}))).await.unwrap();
    let wrong = DeleteParams {
        preconditions: Some(Preconditions { uid: Some("other".into()), resource_version: None }),
        ..DeleteParams::default()
    };
    let err = api_error(cms.delete("p", &wrong).await.unwrap_err());
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));
    assert!(err.message.contains("Precondition failed: UID in precondition: other"), "{}", err.message);
    let stale = DeleteParams {
        preconditions: Some(Preconditions { uid: None, resource_version: Some("1".into()) }),
        ..DeleteParams::default()
    };
    assert_eq!(api_error(cms.delete("p", &stale).await.unwrap_err()).code, 409);
    let right = DeleteParams {
        preconditions: Some(Preconditions {
            uid: created.metadata.uid.clone(),
            resource_version: created.metadata.resource_version.clone(),
        }),
        ..DeleteParams::default()
    };
    let status = cms.delete("p", &right).await.unwrap().right().expect("configmaps answer a Status");
    assert_eq!(status.status, Some(kube::core::response::StatusSummary::Success));
    assert_eq!(api_error(cms.delete("p", &DeleteParams::default()).await.unwrap_err()).code, 404);
    dc.shutdown().await;
}

#[tokio::test]
async fn background_deletion_collects_dependents() {
    let dc = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(dc.client(), "default");
    let owner = cms.create(&PostParams::default(), &cm("owner", json!({}))).await.unwrap();
    let other = cms.create(&PostParams::default(), &cm("other-owner", json!({}))).await.unwrap();
    cms.create(&PostParams::default(), &cm("child", owned_by(&owner, false))).await.unwrap();
    let mut two = owned_by(&owner, false);
    two["ownerReferences"].as_array_mut().unwrap().push(owned_by(&other, false)["ownerReferences"][0].clone());
    cms.create(&PostParams::default(), &cm("shared-child", two)).await.unwrap();
    cms.delete("owner", &DeleteParams::background()).await.unwrap();
    assert!(cms.get_opt("owner").await.unwrap().is_none(), "the owner goes at once");
    assert!(eventually_gone(&cms, "child").await, "the dependent is collected");
    let shared = cms.get("shared-child").await.unwrap();
    let refs = shared.metadata.owner_references.unwrap();
    assert_eq!(refs.len(), 1, "a dependent with a live owner stays, minus the dangling reference");
    assert_eq!(refs[0].name, "other-owner");
    dc.shutdown().await;
}

#[tokio::test]
async fn foreground_deletion_removes_dependents_first() {
    let dc = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(dc.client(), "default");
    let owner = cms.create(&PostParams::default(), &cm("owner", json!({}))).await.unwrap();
    cms.create(
        &PostParams::default(),
        &cm("child", {
            let mut m = owned_by(&owner, true);
            m["finalizers"] = json!(["example.com/slow"]);
            m
        }),
    )
    .await
    .unwrap();
    let pending = cms.delete("owner", &DeleteParams::foreground()).await.unwrap().left().unwrap();
    assert!(pending.metadata.deletion_timestamp.is_some());
    assert!(pending.metadata.finalizers.unwrap().contains(&"foregroundDeletion".to_string()));
    let deleting =
        super::eventually(|| async { cms.get("child").await.unwrap().metadata.deletion_timestamp.is_some() }).await;
    assert!(deleting, "the dependent is being deleted");
    assert!(cms.get_opt("owner").await.unwrap().is_some(), "the owner waits for a blocking dependent");
    cms.patch("child", &PatchParams::default(), &Patch::Merge(json!({ "metadata": { "finalizers": null } })))
        .await
        .unwrap();
    assert!(eventually_gone(&cms, "owner").await, "the owner goes once its dependents are gone");
    dc.shutdown().await;
}

#[tokio::test]
async fn orphan_deletion_keeps_dependents_and_drops_their_references() {
    let dc = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(dc.client(), "default");
    let owner = cms.create(&PostParams::default(), &cm("owner", json!({}))).await.unwrap();
    cms.create(&PostParams::default(), &cm("child", owned_by(&owner, false))).await.unwrap();
    cms.delete("owner", &DeleteParams::orphan()).await.unwrap();
    let child = cms.get("child").await.unwrap();
    assert!(child.metadata.owner_references.unwrap_or_default().is_empty());
    dc.shutdown().await;
}

#[tokio::test]
async fn a_dependent_created_after_its_owner_was_deleted_is_collected() {
    let dc = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(dc.client(), "default");
    let owner = cms.create(&PostParams::default(), &cm("owner", json!({}))).await.unwrap();
    let other = cms.create(&PostParams::default(), &cm("other-owner", json!({}))).await.unwrap();
    cms.delete("owner", &DeleteParams::background()).await.unwrap();
    cms.create(&PostParams::default(), &cm("late-child", owned_by(&owner, false))).await.unwrap();
    let mut two = owned_by(&owner, false);
    two["ownerReferences"].as_array_mut().unwrap().push(owned_by(&other, false)["ownerReferences"][0].clone());
    cms.create(&PostParams::default(), &cm("late-shared-child", two)).await.unwrap();
    assert!(eventually_gone(&cms, "late-child").await, "a dependent whose only owner is gone is collected");
    let kept = super::eventually(|| async {
        let refs = cms.get("late-shared-child").await.unwrap().metadata.owner_references.unwrap_or_default();
        refs.len() == 1 && refs[0].name == "other-owner"
    })
    .await;
    assert!(kept, "a dependent with a live owner loses only the dangling reference");
    dc.shutdown().await;
}

#[tokio::test]
async fn foreground_deletion_goes_down_a_chain_of_three() {
    let dc = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(dc.client(), "default");
    let top = cms.create(&PostParams::default(), &cm("top", json!({}))).await.unwrap();
    let middle = cms.create(&PostParams::default(), &cm("middle", owned_by(&top, true))).await.unwrap();
    cms.create(
        &PostParams::default(),
        &cm("bottom", {
            let mut m = owned_by(&middle, true);
            m["finalizers"] = json!(["example.com/slow"]);
            m
        }),
    )
    .await
    .unwrap();
    cms.delete("top", &DeleteParams::foreground()).await.unwrap();
    let deleting = |name: &'static str| {
        let cms = cms.clone();
        async move { cms.get(name).await.unwrap().metadata.deletion_timestamp.is_some() }
    };
    assert!(super::eventually(|| deleting("bottom")).await, "the deletion reaches the bottom of the chain");
    let middle_now = cms.get("middle").await.unwrap();
    assert!(
        middle_now.metadata.finalizers.unwrap_or_default().contains(&"foregroundDeletion".to_string()),
        "the middle is deleted in the foreground too"
    );
    assert!(cms.get_opt("top").await.unwrap().is_some(), "the top waits for the chain below it");
    cms.patch("bottom", &PatchParams::default(), &Patch::Merge(json!({ "metadata": { "finalizers": null } })))
        .await
        .unwrap();
    assert!(eventually_gone(&cms, "bottom").await);
    assert!(eventually_gone(&cms, "middle").await);
    assert!(eventually_gone(&cms, "top").await, "the top goes once the chain below it is gone");
    dc.shutdown().await;
}

#[tokio::test]
async fn a_dependent_added_to_an_owner_in_foreground_deletion_is_deleted() {
    let dc = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(dc.client(), "default");
    let owner = cms.create(&PostParams::default(), &cm("owner", json!({}))).await.unwrap();
    cms.create(
        &PostParams::default(),
        &cm("held", {
            let mut m = owned_by(&owner, true);
            m["finalizers"] = json!(["example.com/slow"]);
            m
        }),
    )
    .await
    .unwrap();
    cms.delete("owner", &DeleteParams::foreground()).await.unwrap();
    cms.create(&PostParams::default(), &cm("newcomer", owned_by(&owner, true))).await.unwrap();
    assert!(eventually_gone(&cms, "newcomer").await, "the new dependent is deleted with the others");
    assert!(cms.get_opt("owner").await.unwrap().is_some(), "the owner still waits for its held dependent");
    cms.patch("held", &PatchParams::default(), &Patch::Merge(json!({ "metadata": { "finalizers": null } })))
        .await
        .unwrap();
    assert!(eventually_gone(&cms, "owner").await);
    dc.shutdown().await;
}

#[tokio::test]
async fn deletecollection_honours_label_selectors() {
    let dc = start_empty().await;
    let cms: Api<ConfigMap> = Api::namespaced(dc.client(), "default");
    for (name, app) in [("a", "x"), ("b", "x"), ("c", "y")] {
        cms.create(&PostParams::default(), &cm(name, json!({ "labels": { "app": app } }))).await.unwrap();
    }
    let deleted =
        cms.delete_collection(&DeleteParams::default(), &ListParams::default().labels("app=x")).await.unwrap();
    let names: Vec<String> = deleted.left().unwrap().items.into_iter().map(|c| c.metadata.name.unwrap()).collect();
    assert_eq!(names, ["a", "b"]);
    let left: Vec<String> =
        cms.list(&ListParams::default()).await.unwrap().items.into_iter().map(|c| c.metadata.name.unwrap()).collect();
    assert_eq!(left, ["c"]);
    dc.shutdown().await;
}

#[tokio::test]
async fn deleting_a_namespace_deletes_its_objects() {
    let dc = start().await;
    let namespaces: Api<Namespace> = Api::all(dc.client());
    let ns: Namespace = serde_json::from_value(json!({ "metadata": { "name": "scratch" } })).unwrap();
    namespaces.create(&PostParams::default(), &ns).await.unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(dc.client(), "scratch");
    cms.create(&PostParams::default(), &cm("x", json!({}))).await.unwrap();
    cms.create(&PostParams::default(), &cm("held", json!({ "finalizers": ["example.com/hold"] }))).await.unwrap();
    let terminating = namespaces.delete("scratch", &DeleteParams::default()).await.unwrap().left().unwrap();
    assert_eq!(terminating.status.unwrap().phase.as_deref(), Some("Terminating"));
    let err = api_error(cms.create(&PostParams::default(), &cm("late", json!({}))).await.unwrap_err());
    assert_eq!((err.code, err.reason.as_str()), (403, "Forbidden"));
    assert!(super::eventually(|| async { cms.get_opt("x").await.unwrap().is_none() }).await, "contents are deleted");
    assert!(cms.get("held").await.unwrap().metadata.deletion_timestamp.is_some(), "finalizers are honoured");
    assert!(namespaces.get_opt("scratch").await.unwrap().is_some(), "the namespace waits for its contents");
    cms.patch("held", &PatchParams::default(), &Patch::Merge(json!({ "metadata": { "finalizers": null } })))
        .await
        .unwrap();
    assert!(super::eventually(|| async { namespaces.get_opt("scratch").await.unwrap().is_none() }).await);
    dc.shutdown().await;
}

#[tokio::test]
async fn deletes_answer_a_status_or_the_object_by_kind() {
    use k8s_openapi::api::core::v1::Pod;
    let dc = start().await;
    let foos = super::install_foo(&dc).await;
    foos.create(&PostParams::default(), &super::foo("f", 1)).await.unwrap();
    assert!(foos.delete("f", &DeleteParams::default()).await.unwrap().is_right(), "custom resources answer a Status");
    let pods: Api<Pod> = Api::namespaced(dc.client(), "default");
    let pod: Pod = serde_json::from_value(
        json!({ "metadata": { "name": "p" }, "spec": { "containers": [{ "name": "c", "image": "x" }] } }),
    )
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    assert!(pods.delete("p", &DeleteParams::default()).await.unwrap().is_left(), "pods answer the object");
    dc.shutdown().await;
}

#[tokio::test]
async fn kube_runtime_finalizer_helper_adds_runs_cleanup_and_removes() {
    use kube::runtime::controller::Action;
    use kube::runtime::finalizer::{Event, finalizer};
    use std::sync::Arc;
    let dc = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(dc.client(), "default");
    cms.create(&PostParams::default(), &cm("guarded", json!({}))).await.unwrap();
    let step = |obj: ConfigMap| {
        let cms = cms.clone();
        async move {
            let mut seen = None;
            finalizer(&cms, "kubewasm.io/test", Arc::new(obj), |event| {
                seen = Some(match event {
                    Event::Apply(_) => "apply",
                    Event::Cleanup(_) => "cleanup",
                });
                async { Ok::<_, std::io::Error>(Action::await_change()) }
            })
            .await
            .unwrap();
            seen
        }
    };
    assert_eq!(step(cms.get("guarded").await.unwrap()).await, None, "the first call adds the finalizer");
    let held = cms.get("guarded").await.unwrap();
    assert_eq!(held.metadata.finalizers, Some(vec!["kubewasm.io/test".to_string()]));
    assert_eq!(step(held).await, Some("apply"));
    cms.delete("guarded", &DeleteParams::default()).await.unwrap();
    assert_eq!(step(cms.get("guarded").await.unwrap()).await, Some("cleanup"));
    assert!(cms.get_opt("guarded").await.unwrap().is_none(), "removing the last finalizer deletes it");
    dc.shutdown().await;
}
