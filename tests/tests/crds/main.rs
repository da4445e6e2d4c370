//! CRDs generated from a plugin's types, in every SDK, on the embedded API server:
//! plugins/demo-application and its Python, JavaScript, TypeScript and Go ports each
//! generate DemoApplication's CRD in their own idiom (kube's derive, dataclasses, the
//! schema builder, struct tags). Each port's equals the Rust plugin's crd.yaml; the
//! server accepts every one, defaults what it defaults and refuses an object that breaks
//! one of its markers, naming the field.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, PostParams};
use kube::runtime::wait::{await_condition, conditions};
use kubewasm::plugin::{Engine, EngineOptions, Plugin};
use kubewasm_devcluster::{DevCluster, Options};
use kubewasm_tests::wasm_path;
use serde_json::{Value, json};

const NAME: &str = "demoapplications.paas.cmft.com";

/// The built plugin `name`, compiled by the baseline compiler first as the host
/// compiles a new plugin (the Python port is 19 MB).
fn load(name: &str) -> Plugin {
    let engine = Engine::with_options(&EngineOptions { tiered: true, ..EngineOptions::default() }).expect("engine");
    Plugin::load(&engine, &wasm_path(name)).unwrap_or_else(|e| panic!("{name} loads: {e}"))
}

/// The one CRD the port `name` defines: exactly plugins/demo-application's crd.yaml,
/// which the Rust plugin's own test holds its kube-derived CRD to (kube's derive adds
/// only descriptions, `nullable` and float bounds), so every language defines the kind
/// alike.
fn port_crd(name: &str) -> Value {
    let crds = load(name).crds().to_vec();
    assert_eq!(crds.len(), 1, "{name} defines one CRD");
    let path = repository().join("plugins").join("demo-application").join("crd.yaml");
    let written: Value = serde_yaml_ng::from_str(&std::fs::read_to_string(&path).expect("crd.yaml")).expect("a CRD");
    assert_eq!(crds[0], written, "{name}'s CRD is {}", path.display());
    crds.into_iter().next().expect("one CRD")
}

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the repository").to_path_buf()
}

/// Installs `crd`, then creates DemoApplications: a valid one is stored with the
/// defaulted replica count, and each breaking one marker is refused naming its field.
async fn served_and_enforced(crd: Value) {
    let cluster = DevCluster::start(Options::default()).await.expect("the embedded API server starts");
    let client = cluster.client();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd: CustomResourceDefinition = serde_json::from_value(crd).expect("the generated CRD is a CRD");
    crds.create(&PostParams::default(), &crd).await.expect("the API server accepts the generated CRD");
    tokio::time::timeout(Duration::from_secs(10), await_condition(crds, NAME, conditions::is_crd_established()))
        .await
        .expect("established in time")
        .expect("established");
    served_objects(client).await;
}

async fn served_objects(client: kube::Client) {
    let gvk = GroupVersionKind::gvk("paas.cmft.com", "v1beta1", "DemoApplication");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "demoapplications");
    let apps: Api<DynamicObject> = Api::namespaced_with(client, "default", &resource);
    let object = |name: &str, spec: Value| -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "paas.cmft.com/v1beta1", "kind": "DemoApplication",
            "metadata": {"name": name}, "spec": spec,
        }))
        .expect("an object")
    };

    let stored = apps
        .create(&PostParams::default(), &object("web", json!({"image": "nginx", "ports": [{"port": 80}]})))
        .await
        .expect("a valid DemoApplication is stored");
    assert_eq!(stored.data["spec"]["replica"], 1, "the default applies: {:?}", stored.data);

    for (name, spec, field) in [
        ("no-image", json!({"replica": 2}), "spec.image"),
        ("empty-image", json!({"image": ""}), "spec.image"),
        ("negative", json!({"image": "nginx", "replica": -1}), "spec.replica"),
        ("high-port", json!({"image": "nginx", "ports": [{"port": 70000}]}), "spec.ports[0].port"),
        ("low-node-port", json!({"image": "nginx", "ports": [{"port": 80, "nodePort": 80}]}), "spec.ports[0].nodePort"),
    ] {
        match apps.create(&PostParams::default(), &object(name, spec)).await {
            Err(kube::Error::Api(status)) => {
                assert_eq!(status.code, 422, "{name}: {status:?}");
                assert!(status.message.contains(field), "{name}: the refusal names {field}: {}", status.message);
            }
            other => panic!("{name}: refused as invalid, not {other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn rust_kube_derive() {
    // The CRD as the built plugin describes it, installed as the host installs it.
    let cluster = DevCluster::start(Options::default()).await.expect("the embedded API server starts");
    let client = cluster.client();
    kubewasm::runtime::install_crds(&client, &[Arc::new(load("demo-application"))])
        .await
        .expect("the API server accepts the CRD");
    served_objects(client).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn python_dataclasses() {
    served_and_enforced(port_crd("demo-application-python")).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn javascript_schema_builder() {
    served_and_enforced(port_crd("demo-application-js")).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn typescript_schema_builder() {
    served_and_enforced(port_crd("demo-application-ts")).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn go_struct_tags() {
    served_and_enforced(port_crd("demo-application-go")).await;
}
