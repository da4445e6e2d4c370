//! JSON merge patch, JSON patch (with `test`), and strategic merge patch on built-ins.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

use super::{api_error, foo, install_foo, raw, start};

#[tokio::test]
async fn merge_patch_sets_and_removes_keys() {
    let dc = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(dc.client(), "default");
    let cm: ConfigMap =
        serde_json::from_value(json!({ "metadata": { "name": "m" }, "data": { "a": "1", "b": "2" } })).unwrap();
    cms.create(&PostParams::default(), &cm).await.unwrap();
    let out = cms
        .patch("m", &PatchParams::default(), &Patch::Merge(json!({ "data": { "a": null, "c": "3" } })))
        .await
        .unwrap();
    assert_eq!(out.data.unwrap(), [("b".to_string(), "2".to_string()), ("c".to_string(), "3".to_string())].into());
    dc.shutdown().await;
}

#[tokio::test]
async fn json_patch_applies_operations_and_test_failures_are_refused() {
    let dc = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(dc.client(), "default");
    let cm: ConfigMap = serde_json::from_value(json!({ "metadata": { "name": "j" }, "data": { "a": "1" } })).unwrap();
    cms.create(&PostParams::default(), &cm).await.unwrap();
    let path = "/api/v1/namespaces/default/configmaps/j";
    let ops = json!([
        { "op": "test", "path": "/data/a", "value": "1" },
        { "op": "replace", "path": "/data/a", "value": "2" },
        { "op": "add", "path": "/data/b", "value": "3" },
    ]);
    let (code, out) = raw(&dc, "PATCH", path, "application/json-patch+json", &ops.to_string()).await;
    assert_eq!(code, 200);
    assert_eq!(out["data"]["a"], "2");
    let failing = json!([
        { "op": "test", "path": "/data/a", "value": "1" },
        { "op": "remove", "path": "/data/b" },
    ]);
    let (code, status) = raw(&dc, "PATCH", path, "application/json-patch+json", &failing.to_string()).await;
    assert_eq!((code, status["reason"].as_str()), (422, Some("Invalid")));
    let (code, _) = raw(&dc, "PATCH", path, "application/json-patch+json", r#"{"op": "nope"}"#).await;
    assert_eq!(code, 400);
    assert_eq!(cms.get("j").await.unwrap().data.unwrap()["b"], "3", "a failed patch changes nothing");
    dc.shutdown().await;
}

#[tokio::test]
async fn strategic_merge_patch_merges_containers_by_name() {
    let dc = start().await;
    let deployments: Api<Deployment> = Api::namespaced(dc.client(), "default");
    let d: Deployment = serde_json::from_value(json!({
        "metadata": { "name": "d" },
        "spec": { "selector": { "matchLabels": { "app": "d" } }, "template": {
            "metadata": { "labels": { "app": "d" } },
            "spec": { "containers": [
                { "name": "app", "image": "app:1", "env": [{ "name": "A", "value": "1" }] },
                { "name": "sidecar", "image": "side:1" }
            ] } } }
    }))
    .unwrap();
    deployments.create(&PostParams::default(), &d).await.unwrap();
    let patch = json!({ "spec": { "template": { "spec": { "containers": [
        { "name": "app", "image": "app:2", "env": [{ "name": "B", "value": "2" }] },
        { "name": "sidecar", "$patch": "delete" }
    ] } } } });
    let out = deployments.patch("d", &PatchParams::default(), &Patch::Strategic(patch)).await.unwrap();
    let containers = out.spec.unwrap().template.spec.unwrap().containers;
    assert_eq!(containers.len(), 1);
    assert_eq!(containers[0].image.as_deref(), Some("app:2"));
    let env: Vec<String> = containers[0].env.clone().unwrap().into_iter().map(|e| e.name).collect();
    assert_eq!(env, ["A", "B"]);
    dc.shutdown().await;
}

#[tokio::test]
async fn custom_resources_refuse_strategic_merge_patch() {
    let dc = start().await;
    let foos = install_foo(&dc).await;
    foos.create(&PostParams::default(), &foo("f", 1)).await.unwrap();
    let err = api_error(
        foos.patch("f", &PatchParams::default(), &Patch::Strategic(json!({ "spec": { "replicas": 2 } })))
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (415, "UnsupportedMediaType"));
    let out =
        foos.patch("f", &PatchParams::default(), &Patch::Merge(json!({ "spec": { "replicas": 2 } }))).await.unwrap();
    assert_eq!(out.data["spec"]["replicas"], 2);
    let (code, _) = raw(&dc, "PATCH", "/api/v1/namespaces/default/configmaps/none", "text/plain", "x").await;
    assert_eq!(code, 415);
    dc.shutdown().await;
}
