//! CRDs generated from a plugin's types, in every SDK, on the embedded API server: each
//! SDK describes plugins/demo-application's CRD in its own idiom (Rust's from the built
//! plugin itself), the server accepts it, defaults what it defaults and refuses an
//! object that breaks one of its markers, naming the field.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, PostParams};
use kube::runtime::wait::{await_condition, conditions};
use kubewasm_devcluster::{DevCluster, Options};
use kubewasm_tests::{target_dir, wasm_path};
use serde_json::{Value, json};

const NAME: &str = "demoapplications.paas.cmft.com";

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the repository").to_path_buf()
}

fn here() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join("crds")
}

/// What `program` prints: the CRD.
fn printed(command: &mut Command) -> String {
    let out = command.output().unwrap_or_else(|e| panic!("{command:?} runs: {e}"));
    assert!(out.status.success(), "{command:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// Installs `crd`, then creates DemoApplications: a valid one is stored with the
/// defaulted replica count, and each breaking one marker is refused naming its field.
async fn served_and_enforced(crd: &str) {
    let cluster = DevCluster::start(Options::default()).await.expect("the embedded API server starts");
    let client = cluster.client();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd: CustomResourceDefinition = serde_json::from_str(crd).expect("the generated CRD is a CRD");
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
    let engine = kubewasm::plugin::Engine::new().expect("engine");
    let plugin = kubewasm::plugin::Plugin::load(&engine, &wasm_path("demo-application")).expect("load");
    kubewasm::runtime::install_crds(&client, &[Arc::new(plugin)]).await.expect("the API server accepts the CRD");
    served_objects(client).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn python_dataclasses() {
    let crd = printed(
        Command::new(std::env::var("PYTHON").unwrap_or_else(|_| "python3".into()))
            .arg(here().join("demo.py"))
            .env("PYTHONPATH", repository().join("guest-sdk").join("python")),
    );
    served_and_enforced(&crd).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn javascript_schema_builder() {
    let crd = printed(Command::new("node").arg(here().join("demo.mjs")));
    served_and_enforced(&crd).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn go_struct_tags() {
    // Go from the virtualenv `make go-plugins` creates, fetching nothing.
    let go = target_dir().join("go-venv").join("bin").join("go");
    assert!(go.exists(), "{} is missing: run `make go-plugins` first", go.display());
    let crd = printed(
        Command::new(go)
            .args(["run", "."])
            .current_dir(here().join("go"))
            .envs([("GOTOOLCHAIN", "local"), ("GOPROXY", "off"), ("GOFLAGS", "-mod=mod")])
            .env("GOCACHE", target_dir().join("go-cache")),
    );
    served_and_enforced(&crd).await;
}
