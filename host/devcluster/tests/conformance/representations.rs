//! `Accept: ...;as=PartialObjectMetadata`, `...List` and `as=Table` on every verb, as
//! kube-apiserver transforms any verb's answer (`transformResponseObject`): a `Status` passes
//! unchanged, a list representation of one object (or the reverse) is 406, and an
//! unacceptable `Accept` is 406 before anything is done.

use futures_util::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use serde_json::{Value, json};

use super::kubectl::{Streaming, kubectl, ok};
use super::{exchange, start, start_empty};

const METADATA: &str = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
const METADATA_LIST: &str = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
const TABLE: &str = "application/json;as=Table;g=meta.k8s.io;v=v1";
const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

fn pod(name: &str) -> Pod {
    serde_json::from_value(
        json!({ "metadata": { "name": name }, "spec": { "containers": [{ "name": "c", "image": "busybox" }] } }),
    )
    .unwrap()
}

async fn send(
    dc: &kubewasm_devcluster::DevCluster,
    method: &str,
    path: &str,
    accept: &str,
    body: &str,
) -> (u16, Value) {
    let content_type = if method == "PATCH" { "application/merge-patch+json" } else { "application/json" };
    let (code, _, text) = exchange(dc, method, path, &[("accept", accept), ("content-type", content_type)], body).await;
    (code, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

#[tokio::test]
async fn kube_s_metadata_verbs_answer_partial_objects_for_a_pod() {
    let dc = start().await;
    let pods: Api<Pod> = Api::namespaced(dc.client(), "default");
    pods.create(&PostParams::default(), &pod("meta")).await.unwrap();
    // kube-rs's `can_operate_on_pod_metadata`.
    let got = pods.get_metadata("meta").await.unwrap();
    assert_eq!(got.metadata.name.as_deref(), Some("meta"));
    let listed = pods.list_metadata(&ListParams::default()).await.unwrap();
    assert_eq!(listed.items.len(), 1);
    let patch = Patch::Merge(json!({ "metadata": { "labels": { "tier": "db" } } }));
    let patched = pods.patch_metadata("meta", &PatchParams::default(), &patch).await.unwrap();
    assert_eq!(patched.metadata.labels.unwrap()["tier"], "db");
    let mut watched = pods.watch_metadata(&WatchParams::default().timeout(2), "0").await.unwrap().boxed();
    match watched.try_next().await.unwrap() {
        Some(WatchEvent::Added(o)) => assert_eq!(o.metadata.name.as_deref(), Some("meta")),
        other => panic!("expected ADDED, got {other:?}"),
    }

    let path = "/api/v1/namespaces/default/pods/meta";
    let (code, answer) = send(&dc, "PATCH", path, METADATA, r#"{"metadata":{"labels":{"a":"b"}}}"#).await;
    assert_eq!(code, 200);
    assert_eq!(answer["kind"], "PartialObjectMetadata");
    assert_eq!(answer["apiVersion"], "meta.k8s.io/v1");
    assert!(answer.get("spec").is_none(), "{answer}");
    let (_, list) = send(&dc, "GET", "/api/v1/namespaces/default/pods", METADATA_LIST, "").await;
    assert_eq!(list["items"][0]["kind"], "PartialObjectMetadata", "items carry their type: {list}");
    // A pod's DELETE returns the object, so the answer is its metadata.
    let (code, gone) = send(&dc, "DELETE", path, METADATA, "").await;
    assert_eq!((code, gone["kind"].as_str()), (200, Some("PartialObjectMetadata")), "{gone}");
    dc.shutdown().await;
}

#[tokio::test]
async fn writes_answer_tables_and_a_status_passes_unchanged() {
    let dc = start().await;
    let body = json!({ "metadata": { "name": "t" }, "data": { "a": "1" } }).to_string();
    let (code, table) = send(&dc, "POST", CONFIGMAPS, TABLE, &body).await;
    assert_eq!((code, table["kind"].as_str()), (201, Some("Table")), "{table}");
    assert_eq!(table["rows"].as_array().map(Vec::len), Some(1));
    assert_eq!(table["rows"][0]["cells"][0], "t");
    assert_eq!(table["rows"][0]["object"]["kind"], "PartialObjectMetadata");
    let put = json!({ "metadata": { "name": "t" }, "data": { "a": "2" } }).to_string();
    let (code, updated) = send(&dc, "PUT", &format!("{CONFIGMAPS}/t"), METADATA, &put).await;
    assert_eq!((code, updated["kind"].as_str()), (200, Some("PartialObjectMetadata")));
    // A ConfigMap's DELETE answers a Status, whatever representation was asked for.
    let (code, status) = send(&dc, "DELETE", &format!("{CONFIGMAPS}/t"), METADATA, "").await;
    assert_eq!((code, status["kind"].as_str(), status["status"].as_str()), (200, Some("Status"), Some("Success")));
    assert_eq!(status["details"]["kind"], "configmaps");
    dc.shutdown().await;
}

#[tokio::test]
async fn representations_that_do_not_fit_are_406() {
    let dc = start().await;
    let body = json!({ "metadata": { "name": "x" } }).to_string();
    // No group and version: not a representation this server makes; refused before the write.
    let (code, status) = send(&dc, "POST", CONFIGMAPS, "application/json;as=Table", &body).await;
    assert_eq!(code, 406);
    assert_eq!(
        status["message"],
        "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"
    );
    let cms: Api<ConfigMap> = Api::namespaced(dc.client(), "default");
    assert!(cms.get_opt("x").await.unwrap().is_none(), "nothing was created");
    cms.create(&PostParams::default(), &serde_json::from_value(json!({ "metadata": { "name": "x" } })).unwrap())
        .await
        .unwrap();
    let (code, status) = send(&dc, "GET", &format!("{CONFIGMAPS}/x"), METADATA_LIST, "").await;
    assert_eq!(code, 406);
    assert_eq!(
        status["message"],
        "you requested PartialObjectMetadataList, but the requested object is not a list (*core.ConfigMap)"
    );
    let (code, status) = send(&dc, "GET", CONFIGMAPS, METADATA, "").await;
    assert_eq!(code, 406);
    assert_eq!(
        status["message"],
        "you requested PartialObjectMetadata, but the requested object is a list (*core.ConfigMapList)"
    );
    let (code, status) = send(&dc, "GET", &format!("{CONFIGMAPS}?includeObject=All"), TABLE, "").await;
    assert_eq!(code, 400);
    assert_eq!(
        status["message"],
        "Unable to convert to Table as requested: includeObject: Invalid value: \"All\": must be 'Metadata', 'Object', 'None', or empty"
    );
    dc.shutdown().await;
}

#[tokio::test]
async fn a_collection_delete_answers_a_metadata_list_and_a_table_watch_sends_headers_once() {
    let dc = start_empty().await;
    let cms: Api<ConfigMap> = Api::namespaced(dc.client(), "default");
    for name in ["a", "b"] {
        cms.create(&PostParams::default(), &serde_json::from_value(json!({ "metadata": { "name": name } })).unwrap())
            .await
            .unwrap();
    }
    let (_, _, frames) =
        exchange(&dc, "GET", &format!("{CONFIGMAPS}?watch=1&timeoutSeconds=1"), &[("accept", TABLE)], "").await;
    let events: Vec<Value> = frames.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(events.len(), 2, "{frames}");
    assert!(events[0]["object"]["columnDefinitions"].is_array(), "{frames}");
    assert!(events[1]["object"]["columnDefinitions"].is_null(), "{frames}");
    assert_eq!(events[1]["object"]["rows"][0]["cells"][0], "b");

    let (code, deleted) = send(&dc, "DELETE", CONFIGMAPS, METADATA_LIST, "").await;
    assert_eq!((code, deleted["kind"].as_str()), (200, Some("PartialObjectMetadataList")), "{deleted}");
    assert_eq!(deleted["items"].as_array().map(Vec::len), Some(2));
    assert!(cms.list(&ListParams::default()).await.unwrap().items.is_empty());
    cms.delete_collection(&DeleteParams::default(), &ListParams::default()).await.unwrap();
    dc.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_prints_server_side_tables_for_get_and_for_watches() {
    let dc = start().await;
    ok(&kubectl(&dc, &["create", "configmap", "one", "--from-literal=a=b"]).await);
    let table = ok(&kubectl(&dc, &["get", "configmaps", "one"]).await);
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].starts_with("NAME") && lines[0].contains("DATA") && lines[0].contains("AGE"), "{table}");
    assert!(lines[1].starts_with("one") && lines[1].contains(" 1 "), "{table}");
    let watch = Streaming::start(&dc, &["get", "configmaps", "-w"]);
    let first = watch.until("one").await;
    assert!(first.iter().any(|l| l.starts_with("NAME")), "{first:?}");
    ok(&kubectl(&dc, &["create", "configmap", "two", "--from-literal=a=b"]).await);
    let next = watch.until("two").await;
    assert!(next.iter().all(|l| !l.starts_with("NAME")), "headers once: {next:?}");
    drop(watch);
    let out = ok(&kubectl(&dc, &["get", "configmap", "one", "-o", "name"]).await);
    assert_eq!(out.trim(), "configmap/one");
    let out = ok(&kubectl(&dc, &["delete", "configmap", "one"]).await);
    assert!(out.contains("configmap \"one\" deleted"), "{out}");
    dc.shutdown().await;
}
