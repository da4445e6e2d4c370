//! Conformance of the embedded API server: each module drives one area
//! through the real `kube` client and, in `kubectl`, through the real kubectl.

mod admission_webhooks;
mod apply;
mod authorization;
mod bad_input;
mod bootstrap;
mod builtins;
mod cel;
mod concurrency;
mod conversion_webhook;
mod crd_validation;
mod crd_versions;
mod crud;
mod defaults;
mod delete_gc;
mod discovery;
mod encoding;
mod faults;
mod field_selectors;
mod hook_server;
mod https;
mod kubectl;
mod patch;
mod persistence;
mod query;
mod representations;
mod smd;
mod subresources;
mod tables;
mod tokens;
mod update_validation;
mod watch;

use std::path::PathBuf;

use kube::api::{Api, DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kubewasm_devcluster::{DevCluster, Options};
use serde_json::{Value, json};

/// Ends the test process once it has run for 10 minutes: a hung test must fail the run quickly,
/// with a message, rather than hold CI until its own time limit. Starts once per process.
fn watchdog() {
    static START: std::sync::Once = std::sync::Once::new();
    START.call_once(|| {
        std::thread::spawn(|| {
            std::thread::sleep(std::time::Duration::from_secs(600));
            eprintln!("conformance tests still running after 10 minutes: a test hangs; ending the run");
            std::process::exit(101);
        });
    });
}

/// A fresh in-memory server.
pub async fn start() -> DevCluster {
    watchdog();
    DevCluster::start(Options::default()).await.expect("the server starts")
}

/// A fresh in-memory server whose namespaces hold only what a test puts there: no
/// `kube-root-ca.crt` or `default` service account, for tests that count the objects of a
/// namespace (a real cluster has those two in every namespace).
pub async fn start_empty() -> DevCluster {
    watchdog();
    DevCluster::start(Options { namespace_controllers: false, ..Options::default() }).await.expect("the server starts")
}

pub fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/fixtures").join(name)
}

pub fn fixture_json(name: &str) -> Value {
    let text = std::fs::read_to_string(fixture(name)).expect("fixture exists");
    serde_yaml_ng::from_str(&text).expect("fixture is YAML")
}

/// The `Foo` resource of the sample-controller CRD.
pub fn foo_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("samplecontroller.k8s.io", "v1alpha1", "Foo"), "foos")
}

pub fn crd_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
        "customresourcedefinitions",
    )
}

/// Installs the sample-controller `Foo` CRD and returns the `Foo` API of namespace `default`.
pub async fn install_foo(dc: &DevCluster) -> Api<DynamicObject> {
    let crds: Api<DynamicObject> = Api::all_with(dc.client(), &crd_resource());
    let crd: DynamicObject = serde_json::from_value(fixture_json("foo-crd.yaml")).expect("CRD fixture");
    crds.create(&PostParams::default(), &crd).await.expect("CRD is created");
    Api::namespaced_with(dc.client(), "default", &foo_resource())
}

/// Installs `things.example.com` (`Thing`, namespaced) with `versions`, and `conversion` when
/// given.
pub async fn install_things(dc: &DevCluster, versions: Value, conversion: Option<Value>) {
    let mut crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "things.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "things", "singular": "thing", "kind": "Thing"}, "versions": versions},
    });
    if let Some(conversion) = conversion {
        crd["spec"]["conversion"] = conversion;
    }
    let crds: Api<DynamicObject> = Api::all_with(dc.client(), &crd_resource());
    crds.create(&PostParams::default(), &serde_json::from_value(crd).unwrap()).await.expect("the CRD is created");
}

pub fn foo(name: &str, replicas: i64) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "samplecontroller.k8s.io/v1alpha1",
        "kind": "Foo",
        "metadata": { "name": name },
        "spec": { "deploymentName": name, "replicas": replicas },
    }))
    .expect("a Foo")
}

/// The `Status` of a refused request.
pub fn api_error(err: kube::Error) -> kube::core::Status {
    match err {
        kube::Error::Api(status) => *status,
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// Polls `check` until it holds (the server's controllers work in the background, as a real
/// cluster's do); false after five seconds.
pub async fn eventually<F, Fut>(mut check: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for _ in 0..100 {
        if check().await {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    false
}

/// A raw request to the server; returns the status code and the body as JSON (or text).
pub async fn raw(dc: &DevCluster, method: &str, path: &str, content_type: &str, body: &str) -> (u16, Value) {
    raw_bytes(dc, method, path, content_type, body.as_bytes().to_vec()).await
}

/// A raw request with the given headers; returns the status, the response headers and the body
/// exactly as sent.
pub async fn exchange(
    dc: &DevCluster,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, http::HeaderMap, String) {
    let mut req = http::Request::builder().method(method).uri(path);
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    let req = req.body(body.as_bytes().to_vec()).expect("a request");
    let resp = dc.client().send(req.map(kube::client::Body::from)).await.expect("the server answers");
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let bytes = http_body_util::BodyExt::collect(resp.into_body()).await.expect("a body").to_bytes();
    (status, headers, String::from_utf8_lossy(&bytes).into_owned())
}

/// [`raw`] with a body of any bytes.
pub async fn raw_bytes(dc: &DevCluster, method: &str, path: &str, content_type: &str, body: Vec<u8>) -> (u16, Value) {
    let req = http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", content_type)
        .body(body)
        .expect("a request");
    let resp = dc.client().send(req.map(kube::client::Body::from)).await.expect("the server answers");
    let status = resp.status().as_u16();
    let bytes = http_body_util::BodyExt::collect(resp.into_body()).await.expect("a body").to_bytes();
    let value =
        serde_json::from_slice(&bytes).unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()));
    (status, value)
}
