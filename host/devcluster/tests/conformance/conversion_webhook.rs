//! CRD conversion webhooks (`spec.conversion.strategy: Webhook`), checked against
//! apiextensions-apiserver's `webhookConverter`: objects of another version go to the webhook
//! in one `ConversionReview` v1 per request (a list's items together), over HTTPS checked with
//! the `caBundle`; what it answers is checked as upstream checks it, and a failure is the
//! request's 500 with upstream's words.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures_util::{StreamExt, TryStreamExt};
use kube::api::{Api, DynamicObject, ListParams, PostParams, WatchEvent, WatchParams};
use kube::core::{ApiResource, GroupVersionKind};
use kubewasm_devcluster::DevCluster;
use serde_json::{Value, json};

use super::hook_server::HookServer;
use super::kubectl::{kubectl, ok};
use super::{api_error, crd_resource, exchange, install_things, start};

/// A version's schema: a `spec` with the one field `field` of type `ty`.
fn schema(field: &str, ty: &str) -> Value {
    json!({"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object",
        "properties": {field: {"type": ty}}}}}})
}

/// `Thing` in v1 (`spec.size`, a string) and v2 (`spec.replicas`, an integer), stored in v2,
/// converted by `client`.
async fn install(dc: &DevCluster, client: Value) {
    let versions = json!([
        {"name": "v1", "served": true, "storage": false, "schema": schema("size", "string")},
        {"name": "v2", "served": true, "storage": true, "schema": schema("replicas", "integer")}]);
    let conversion =
        json!({"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": client}});
    install_things(dc, versions, Some(conversion)).await;
}

fn things(dc: &DevCluster, version: &str) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("example.com", version, "Thing"), "things");
    Api::namespaced_with(dc.client(), "default", &ar)
}

/// What a conversion webhook of `Thing` does: `size` and `replicas` are the same number.
fn convert(obj: &Value, desired: &str) -> Value {
    let mut out = obj.clone();
    out["apiVersion"] = json!(desired);
    let spec = obj["spec"].clone();
    out["spec"] = if desired.ends_with("/v2") {
        json!({"replicas": spec["size"].as_str().and_then(|s| s.parse::<i64>().ok())})
    } else {
        json!({"size": spec["replicas"].as_i64().map(|n| n.to_string())})
    };
    out
}

/// A webhook that converts, or, once `wrong_uid` is set, answers another review's uid.
async fn converter(wrong_uid: Arc<AtomicBool>) -> HookServer {
    HookServer::start(move |_, review| {
        let request = &review["request"];
        let desired = request["desiredAPIVersion"].as_str().unwrap_or_default();
        let objects: Vec<Value> =
            request["objects"].as_array().into_iter().flatten().map(|o| convert(o, desired)).collect();
        let uid = if wrong_uid.load(Ordering::SeqCst) { json!("not-the-request") } else { request["uid"].clone() };
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "response": {"uid": uid, "result": {"status": "Success"}, "convertedObjects": objects}})
    })
    .await
}

#[tokio::test]
async fn objects_of_another_version_are_converted_by_the_webhook() {
    let dc = start().await;
    let wrong_uid = Arc::new(AtomicBool::new(false));
    let hook = converter(wrong_uid.clone()).await;
    install(&dc, hook.client_config("/convert")).await;
    let (v1, v2) = (things(&dc, "v1"), things(&dc, "v2"));
    let thing = |name: &str| -> DynamicObject {
        serde_json::from_value(json!({"apiVersion": "example.com/v1", "kind": "Thing",
            "metadata": {"name": name, "labels": {"app": "x"}}, "spec": {"size": "3"}}))
        .unwrap()
    };

    // Written in v1: converted to the storage version v2, and the answer back to v1.
    let created = v1.create(&PostParams::default(), &thing("a")).await.unwrap();
    assert_eq!(created.data["spec"], json!({"size": "3"}));
    assert_eq!(v2.get("a").await.unwrap().data["spec"], json!({"replicas": 3}), "stored as v2");
    let (path, review) = hook.received()[0].clone();
    assert_eq!(path, "/convert", "a conversion call is not told its deadline in the query");
    assert_eq!(
        (review["apiVersion"].as_str(), review["kind"].as_str()),
        (Some("apiextensions.k8s.io/v1"), Some("ConversionReview"))
    );
    assert_eq!(review["request"]["desiredAPIVersion"], "example.com/v2");
    assert_eq!(review["request"]["objects"].as_array().map(Vec::len), Some(1));
    assert_eq!(review["request"]["objects"][0]["spec"], json!({"size": "3"}));
    assert!(review["request"]["uid"].as_str().is_some_and(|u| !u.is_empty()));

    // A read in the storage version calls nobody; a list in v1 sends its items in one review.
    v2.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"apiVersion": "example.com/v2", "kind": "Thing",
            "metadata": {"name": "b"}, "spec": {"replicas": 5}}))
        .unwrap(),
    )
    .await
    .unwrap();
    let before = hook.received().len();
    let listed = v1.list(&ListParams::default()).await.unwrap();
    let specs: Vec<&Value> = listed.items.iter().map(|i| &i.data["spec"]).collect();
    assert_eq!(specs, [&json!({"size": "3"}), &json!({"size": "5"})]);
    let after = hook.received();
    assert_eq!(after.len(), before + 1, "one review for the whole list");
    assert_eq!(after[before].1["request"]["objects"].as_array().map(Vec::len), Some(2));
    assert_eq!(after[before].1["request"]["desiredAPIVersion"], "example.com/v1");
    let out = ok(&kubectl(&dc, &["get", "things.v1.example.com", "b", "-o", "jsonpath={.spec.size}"]).await);
    assert_eq!(out, "5");

    // An answer to another review fails the read, in upstream's words.
    wrong_uid.store(true, Ordering::SeqCst);
    let err = v1.get("a").await.unwrap_err();
    let status = api_error(err);
    assert_eq!((status.code, status.reason.as_str()), (500, "InternalError"));
    assert!(
        status.message.starts_with(
            "Internal error occurred: conversion webhook for example.com/v2, Kind=Thing failed: expected response.uid="
        ),
        "{}",
        status.message
    );
    assert!(status.message.ends_with(r#", got "not-the-request""#), "{}", status.message);
    dc.shutdown().await;
}

#[tokio::test]
async fn a_webhook_that_cannot_be_reached_or_trusted_fails_the_request() {
    let dc = start().await;
    let hook = converter(Arc::default()).await;
    // Another CA than the server's: the certificate is not trusted.
    let other = converter(Arc::default()).await;
    let mut client = hook.client_config("/convert");
    client["caBundle"] = json!(other.ca_bundle);
    install(&dc, client).await;
    let v1 = things(&dc, "v1");
    let thing: DynamicObject = serde_json::from_value(json!({"apiVersion": "example.com/v1", "kind": "Thing",
        "metadata": {"name": "a"}, "spec": {"size": "1"}}))
    .unwrap();
    let err = v1.create(&PostParams::default(), &thing).await.unwrap_err();
    let status = api_error(err);
    assert_eq!(status.code, 500);
    assert_eq!(
        status.message,
        format!(
            "Internal error occurred: conversion webhook for example.com/v1, Kind=Thing failed: Post \"{}/convert\": \
             tls: failed to verify certificate: x509: certificate signed by unknown authority",
            hook.base
        )
    );
    assert!(things(&dc, "v2").list(&ListParams::default()).await.unwrap().items.is_empty(), "nothing stored");

    // Nobody listening: Go's dial error.
    let base = hook.base.clone();
    drop(hook);
    let crds: Api<DynamicObject> = Api::all_with(dc.client(), &crd_resource());
    let mut crd = crds.get("things.example.com").await.unwrap();
    crd.data["spec"]["conversion"]["webhook"]["clientConfig"] =
        json!({"url": format!("{base}/convert"), "caBundle": other.ca_bundle});
    crds.replace("things.example.com", &PostParams::default(), &crd).await.unwrap();
    let err = v1.create(&PostParams::default(), &thing).await.unwrap_err();
    let status = api_error(err);
    let address = base.trim_start_matches("https://");
    assert_eq!(
        status.message,
        format!(
            "Internal error occurred: conversion webhook for example.com/v1, Kind=Thing failed: Post \"{base}/convert\": \
             dial tcp {address}: connect: connection refused"
        )
    );
    dc.shutdown().await;
}

#[tokio::test]
async fn a_webhook_conversion_needs_a_client_config_and_a_known_review_version() {
    let dc = start().await;
    let crds: Api<DynamicObject> = Api::all_with(dc.client(), &crd_resource());
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "things.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "things", "singular": "thing", "kind": "Thing"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object"}}}],
            "conversion": {"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v9"],
                "clientConfig": {"url": "http://127.0.0.1:1/convert"}}}},
    });
    let err = crds.create(&PostParams::default(), &serde_json::from_value(crd).unwrap()).await.unwrap_err();
    let status = api_error(err);
    assert_eq!(status.code, 422);
    assert!(
        status.message.contains(
            r#"spec.conversion.conversionReviewVersions: Invalid value: []string{"v9"}: must include at least one of v1, v1beta1"#
        ),
        "{}",
        status.message
    );
    assert!(
        status.message.contains(
            r#"spec.conversion.webhookClientConfig.url: Invalid value: "http": 'https' is the only allowed URL scheme"#
        ),
        "{}",
        status.message
    );
    dc.shutdown().await;
}

#[tokio::test]
async fn a_watch_in_another_version_gets_objects_the_webhook_converted() {
    let dc = start().await;
    let wrong_uid = Arc::new(AtomicBool::new(false));
    let hook = converter(wrong_uid.clone()).await;
    install(&dc, hook.client_config("/convert")).await;
    let (v1, v2) = (things(&dc, "v1"), things(&dc, "v2"));
    let mut events = v1.watch(&WatchParams::default(), "0").await.unwrap().boxed();
    let thing = |name: &str| -> DynamicObject {
        serde_json::from_value(json!({"apiVersion": "example.com/v2", "kind": "Thing",
            "metadata": {"name": name}, "spec": {"replicas": 7}}))
        .unwrap()
    };
    v2.create(&PostParams::default(), &thing("w")).await.unwrap();
    let wait = std::time::Duration::from_secs(5);
    let event = tokio::time::timeout(wait, events.try_next()).await.unwrap().unwrap().unwrap();
    let WatchEvent::Added(obj) = event else { panic!("an ADDED event: {event:?}") };
    assert_eq!((obj.types.unwrap().api_version.as_str(), &obj.data["spec"]), ("example.com/v1", &json!({"size": "7"})));

    // An object that cannot be converted ends the watch, as kube-apiserver's watch server
    // closes a stream whose object it cannot encode.
    wrong_uid.store(true, Ordering::SeqCst);
    v2.create(&PostParams::default(), &thing("x")).await.unwrap();
    let end = tokio::time::timeout(wait, events.try_next()).await.unwrap().unwrap();
    assert!(end.is_none(), "the stream ends without an event: {end:?}");
    dc.shutdown().await;
}

#[tokio::test]
async fn a_watch_as_a_table_shows_the_columns_of_the_converted_object() {
    let dc = start().await;
    let hook = converter(Arc::new(AtomicBool::new(false))).await;
    let versions = json!([
        {"name": "v1", "served": true, "storage": false, "schema": schema("size", "string"),
            "additionalPrinterColumns": [{"name": "Size", "type": "string", "jsonPath": ".spec.size"}]},
        {"name": "v2", "served": true, "storage": true, "schema": schema("replicas", "integer")}]);
    let conversion = json!({"strategy": "Webhook",
        "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": hook.client_config("/convert")}});
    install_things(&dc, versions, Some(conversion)).await;
    let thing =
        json!({"apiVersion": "example.com/v2", "kind": "Thing", "metadata": {"name": "t"}, "spec": {"replicas": 7}});
    things(&dc, "v2").create(&PostParams::default(), &serde_json::from_value(thing).unwrap()).await.unwrap();

    let accept = [("accept", "application/json;as=Table;g=meta.k8s.io;v=v1")];
    let path = "/apis/example.com/v1/namespaces/default/things?watch=1&timeoutSeconds=1";
    let (code, _, frames) = exchange(&dc, "GET", path, &accept, "").await;
    assert_eq!(code, 200, "{frames}");
    let event: Value = serde_json::from_str(frames.lines().next().expect("an event")).unwrap();
    assert_eq!((event["type"].as_str(), event["object"]["kind"].as_str()), (Some("ADDED"), Some("Table")), "{frames}");
    let columns: Vec<&str> =
        event["object"]["columnDefinitions"].as_array().unwrap().iter().filter_map(|c| c["name"].as_str()).collect();
    assert_eq!(columns, ["Name", "Size"], "{frames}");
    let cells = &event["object"]["rows"][0]["cells"];
    assert_eq!((&cells[0], &cells[1]), (&json!("t"), &json!("7")), "the v1 column of the object the webhook converted");
    dc.shutdown().await;
}
