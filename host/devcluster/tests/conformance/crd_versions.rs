//! Multi-version CRDs with the `None` conversion: objects are stored in the storage version,
//! and every read, list and watch in another version is pruned by that version's schema, as
//! apiextensions-apiserver prunes after each conversion; through the `kube` client and kubectl.

use futures_util::{StreamExt, TryStreamExt};
use kube::api::{Api, DynamicObject, PostParams, WatchEvent, WatchParams};
use kube::core::{ApiResource, GroupVersionKind};
use kubewasm_devcluster::DevCluster;
use serde_json::{Value, json};

use super::kubectl::{kubectl, ok};
use super::{crd_resource, install_things, start};

fn version_schema(props: &[&str]) -> Value {
    let props: serde_json::Map<String, Value> =
        props.iter().map(|p| ((*p).to_string(), json!({"type": "string"}))).collect();
    json!({"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object", "properties": props}}}})
}

/// `Thing` in v1 (`spec.a`, `spec.c`) and v2 (`spec.a`, `spec.b`), stored in `storage`.
async fn install(dc: &DevCluster, storage: &str) {
    let versions = json!([
        {"name": "v1", "served": true, "storage": storage == "v1", "schema": version_schema(&["a", "c"])},
        {"name": "v2", "served": true, "storage": storage == "v2", "schema": version_schema(&["a", "b"])}]);
    install_things(dc, versions, None).await;
}

fn things(dc: &DevCluster, version: &str) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("example.com", version, "Thing"), "things");
    Api::namespaced_with(dc.client(), "default", &ar)
}

fn thing(version: &str, name: &str, spec: Value) -> DynamicObject {
    serde_json::from_value(json!({"apiVersion": format!("example.com/{version}"), "kind": "Thing",
        "metadata": {"name": name}, "spec": spec}))
    .unwrap()
}

#[tokio::test]
async fn a_field_only_another_version_knows_does_not_survive_a_read() {
    let dc = start().await;
    install(&dc, "v2").await;
    let (v1, v2) = (things(&dc, "v1"), things(&dc, "v2"));
    v2.create(&PostParams::default(), &thing("v2", "x", json!({"a": "1", "b": "2"}))).await.unwrap();
    let as_v1 = v1.get("x").await.unwrap();
    assert_eq!(as_v1.data["spec"], json!({"a": "1"}), "b is pruned in v1");
    assert_eq!(as_v1.types.unwrap().api_version, "example.com/v1");
    assert_eq!(v2.get("x").await.unwrap().data["spec"], json!({"a": "1", "b": "2"}), "kept in storage");
    let listed = v1.list(&Default::default()).await.unwrap();
    assert_eq!(listed.items[0].data["spec"], json!({"a": "1"}));

    // A field only v1 knows is written through v1 and lost in v2 storage.
    v1.create(&PostParams::default(), &thing("v1", "y", json!({"a": "1", "c": "3"}))).await.unwrap();
    assert_eq!(v1.get("y").await.unwrap().data["spec"], json!({"a": "1"}));
    let out = ok(&kubectl(&dc, &["get", "things.v2.example.com", "y", "-o", "json"]).await);
    let shown: Value = serde_json::from_str(&out).unwrap();
    assert_eq!((shown["apiVersion"].as_str(), &shown["spec"]), (Some("example.com/v2"), &json!({"a": "1"})));
    let out = ok(&kubectl(&dc, &["get", "things.v1.example.com", "x", "-o", "jsonpath={.spec}"]).await);
    assert_eq!(out, r#"{"a":"1"}"#);
    dc.shutdown().await;
}

#[tokio::test]
async fn a_watch_in_another_version_sees_objects_pruned_by_its_schema() {
    let dc = start().await;
    install(&dc, "v2").await;
    let (v1, v2) = (things(&dc, "v1"), things(&dc, "v2"));
    let mut events = v1.watch(&WatchParams::default(), "0").await.unwrap().boxed();
    v2.create(&PostParams::default(), &thing("v2", "x", json!({"a": "1", "b": "2"}))).await.unwrap();
    let event =
        tokio::time::timeout(std::time::Duration::from_secs(5), events.try_next()).await.unwrap().unwrap().unwrap();
    let WatchEvent::Added(obj) = event else { panic!("an ADDED event: {event:?}") };
    assert_eq!(obj.data["spec"], json!({"a": "1"}));
    assert_eq!(obj.types.unwrap().api_version, "example.com/v1");
    dc.shutdown().await;
}

#[tokio::test]
async fn objects_are_stored_in_the_storage_version_not_the_preferred_one() {
    let dc = start().await;
    install(&dc, "v1").await;
    let v2 = things(&dc, "v2");
    let created = v2.create(&PostParams::default(), &thing("v2", "x", json!({"a": "1", "b": "2"}))).await.unwrap();
    // Stored in v1, which has no `b`: the answer, converted back to v2, has lost it.
    assert_eq!(created.data["spec"], json!({"a": "1"}));
    assert_eq!(v2.get("x").await.unwrap().data["spec"], json!({"a": "1"}));
    let crds: Api<DynamicObject> = Api::all_with(dc.client(), &crd_resource());
    let crd = crds.get("things.example.com").await.unwrap();
    assert_eq!(crd.data["status"]["storedVersions"], json!(["v1"]));
    dc.shutdown().await;
}
