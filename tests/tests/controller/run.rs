//! `kubewasm::run`, what `kubewasm run` and `kubewasm dev` do between start and stop,
//! driven in-process: no binary, no signals.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kubewasm::coordination::{LeaderElection, ReplicaMode};
use kubewasm::plugin::Engine;
use kubewasm::run::{self, Options};
use serde_json::json;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::harness::{Cluster, deployments, eventually, resource, wait_for, wasm_path};

const LEASE: &str = "kubewasm-run";

/// A plugin directory holding `demo-application.wasm`.
fn plugin_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temporary directory");
    std::fs::copy(wasm_path("demo-application"), dir.path().join("demo-application.wasm")).expect("copy the plugin");
    dir
}

fn free_addr() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free loopback port")
}

/// The status code of `GET path` on `addr`, or `None` when nothing listens.
fn http_status(addr: SocketAddr, path: &str) -> Option<u16> {
    let mut stream = TcpStream::connect(addr).ok()?;
    write!(stream, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    answer.split_whitespace().nth(1)?.parse().ok()
}

async fn holder(cluster: &Cluster) -> Option<String> {
    let leases: Api<Lease> = Api::namespaced(cluster.client.clone(), "default");
    leases.get_opt(LEASE).await.expect("get the lease")?.spec?.holder_identity
}

/// Starts the host on `cluster` with `options`; send on the returned sender to stop it.
fn start(cluster: &Cluster, options: Options) -> (oneshot::Sender<()>, JoinHandle<Result<(), run::Error>>) {
    let (stop, stopped) = oneshot::channel::<()>();
    let client = cluster.client.clone();
    let host = tokio::spawn(async move {
        let engine = Engine::new().expect("engine");
        let shutdown = async {
            let _ = stopped.await;
        };
        run::run(&engine, &client, &options, shutdown, |_| {}).await
    });
    (stop, host)
}

fn leader(identity: &str) -> ReplicaMode {
    ReplicaMode::LeaderElected(LeaderElection {
        lease_namespace: "default".into(),
        lease_name: LEASE.into(),
        lease_duration: Duration::from_secs(2),
        identity: identity.into(),
    })
}

async fn create_demo(cluster: &Cluster, name: &str) {
    let demo = json!({
        "apiVersion": "paas.cmft.com/v1beta1",
        "kind": "DemoApplication",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"image": "nginx:1.27", "replica": 1, "ports": [{"port": 80}]},
    });
    let demos = resource("paas.cmft.com", "v1beta1", "DemoApplication", "demoapplications");
    // The host installs the CRD once it leads; until then the kind is not served.
    eventually("the DemoApplication CRD is served", || async {
        let object = serde_json::from_value(demo.clone()).expect("object JSON");
        cluster.api(&demos, "default").create(&Default::default(), &object).await.ok()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_host_leads_installs_crds_reconciles_and_stops_cleanly() {
    let cluster = Cluster::start().await;
    let dir = plugin_dir();
    let health = free_addr();
    let options = Options {
        health_addr: Some(health),
        install_crds: true,
        replicas: leader("host-a"),
        ..Options::new(dir.path())
    };
    let (stop, host) = start(&cluster, options);

    eventually("host-a holds the lease", || async { (holder(&cluster).await? == "host-a").then_some(()) }).await;
    create_demo(&cluster, "web").await;
    wait_for(&cluster, &deployments(), "web", "the Deployment", |_| true).await;
    eventually("/readyz answers 200 once the caches are synced", || async {
        (http_status(health, "/readyz") == Some(200)).then_some(())
    })
    .await;
    assert_eq!(http_status(health, "/metrics"), Some(200), "metrics are served beside the probes");

    stop.send(()).expect("the host is running");
    let result = tokio::time::timeout(Duration::from_secs(20), host).await.expect("the host stops promptly");
    result.expect("the host task").expect("a requested stop is not an error");
    assert_eq!(holder(&cluster).await, None, "the lease is released for a standby to take at once");
    assert_eq!(http_status(health, "/healthz"), None, "the health server is stopped");
    cluster.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_whose_lease_is_taken_stops_with_an_error() {
    let cluster = Cluster::start().await;
    let dir = plugin_dir();
    let options = Options { install_crds: true, replicas: leader("host-a"), ..Options::new(dir.path()) };
    let (_stop, host) = start(&cluster, options);
    eventually("host-a holds the lease", || async { (holder(&cluster).await? == "host-a").then_some(()) }).await;

    let leases: Api<Lease> = Api::namespaced(cluster.client.clone(), "default");
    let taken = json!({ "spec": { "holderIdentity": "host-b", "leaseDurationSeconds": 3600 } });
    leases.patch(LEASE, &PatchParams::default(), &Patch::Merge(taken)).await.expect("take the lease");

    let result = tokio::time::timeout(Duration::from_secs(20), host).await.expect("the host stops");
    match result.expect("the host task") {
        Err(run::Error::LostLease { lease }) => assert_eq!(lease, LEASE),
        other => panic!("expected LostLease, got {other:?}"),
    }
    assert_eq!(holder(&cluster).await.as_deref(), Some("host-b"), "it leaves the new holder's lease alone");
    cluster.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_plugin_directory_is_named() {
    let cluster = Cluster::start().await;
    let (_stop, host) = start(&cluster, Options::new("/nonexistent/plugins"));
    let err = host.await.expect("the host task").expect_err("no directory, no host");
    assert_eq!(err.to_string(), "/nonexistent/plugins: not a directory");
    cluster.stop().await;
}

/// Serving webhooks on `listen` with a CA and certificate made now, registered at that
/// loopback address.
fn webhooks_on(listen: SocketAddr) -> Option<kubewasm::webhook::WebhookOptions> {
    Some(kubewasm::webhook::WebhookOptions {
        listen,
        identity: kubewasm::webhook::tls::Identity::generate(&["127.0.0.1".to_string()]).expect("a certificate"),
        endpoint: None,
        name: "kubewasm".into(),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_standby_serves_its_plugins_webhooks_and_keeps_serving_them_once_it_leads() {
    let cluster = Cluster::start().await;
    let dir = tempfile::tempdir().expect("temporary directory");
    std::fs::copy(wasm_path("admit"), dir.path().join("admit.wasm")).expect("copy the plugin");
    // host-a serves no webhooks: whatever the API server reaches is host-b's.
    let b = free_addr();
    let host = |identity: &str, webhooks| Options {
        install_crds: true,
        replicas: leader(identity),
        webhooks,
        ..Options::new(dir.path())
    };
    let configs = resource(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingWebhookConfiguration",
        "validatingwebhookconfigurations",
    );
    let (stop_a, host_a) = start(&cluster, host("host-a", None));
    eventually("host-a holds the lease", || async { (holder(&cluster).await? == "host-a").then_some(()) }).await;
    let (stop_b, host_b) = start(&cluster, host("host-b", webhooks_on(b)));

    // The standby serves and registers the plugin's webhooks while host-a reconciles.
    eventually("the webhook registered at host-b's address", || async {
        let config =
            Api::<DynamicObject>::all_with(cluster.client.clone(), &configs).get_opt("kubewasm").await.ok()??;
        let url = config.data["webhooks"][0]["clientConfig"]["url"].as_str()?.to_owned();
        url.contains(&b.to_string()).then_some(())
    })
    .await;
    assert_eq!(holder(&cluster).await.as_deref(), Some("host-a"), "host-b stands by");
    let widgets = resource("test.kubewasm.io", "v1", "Widget", "widgets");
    let refused = |name: &'static str| {
        let api = cluster.api(&widgets, "default");
        async move {
            let object = serde_json::from_value(json!({
                "apiVersion": "test.kubewasm.io/v1", "kind": "Widget",
                "metadata": {"name": name, "namespace": "default"}, "spec": {}
            }))
            .expect("object JSON");
            match api.create(&Default::default(), &object).await {
                Err(kube::Error::Api(status)) => status.message,
                other => panic!("expected {name} refused by the plugin, got {other:?}"),
            }
        }
    };
    let message = refused("forbidden-one").await;
    assert!(message.ends_with("widgets named forbidden-* are not allowed"), "{message}");

    // host-a goes: host-b leads, and its webhooks answer on as it starts its controllers.
    stop_a.send(()).expect("host-a is running");
    host_a.await.expect("the host task").expect("host-a stops cleanly");
    eventually("host-b leads", || async { (holder(&cluster).await? == "host-b").then_some(()) }).await;
    let message = eventually("host-b's webhooks, once it leads", || async {
        let api = cluster.api(&widgets, "default");
        let object = serde_json::from_value(json!({
            "apiVersion": "test.kubewasm.io/v1", "kind": "Widget",
            "metadata": {"name": "forbidden-two", "namespace": "default"}, "spec": {}
        }))
        .expect("object JSON");
        match api.create(&Default::default(), &object).await {
            Err(kube::Error::Api(status)) if status.message.contains("not allowed") => Some(status.message),
            _ => None,
        }
    })
    .await;
    assert!(message.ends_with("widgets named forbidden-* are not allowed"), "{message}");
    stop_b.send(()).expect("host-b is running");
    host_b.await.expect("the host task").expect("host-b stops cleanly");
    cluster.stop().await;
}
