//! `kubewasm run` killed with SIGKILL right after each write of a reconcile, then started
//! again, as Sieve tests controllers against intermediate states: after the first child
//! exists but not the second, after the children but before the status, and so on. The
//! API server stores the k-th write and holds every later one, so the kill lands exactly
//! there. Each restart must reach the end state of a run without a crash, creating no child
//! twice and leaving no orphan.
//!
//! The plugins are built to wasm32-wasip2 by `make plugins`.

mod common;

use std::collections::BTreeMap;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kube::api::{Api, DynamicObject, ListParams, PostParams};
use kube::discovery::ApiResource;
use kubewasm_devcluster::{DevCluster, Lifecycle, Options, comparable};
use serde_json::{Value, json};

use common::{readyz, target_dir};

fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    let api_version = if group.is_empty() { version.to_string() } else { format!("{group}/{version}") };
    ApiResource { group: group.into(), version: version.into(), api_version, kind: kind.into(), plural: plural.into() }
}

/// The parent and the kinds it owns, as the end state compares them.
fn kinds() -> [ApiResource; 3] {
    [
        resource("paas.cmft.com", "v1beta1", "DemoApplication", "demoapplications"),
        resource("apps", "v1", "Deployment", "deployments"),
        resource("", "v1", "Service", "services"),
    ]
}

/// What a run ends with: the objects (as two runs agree on them), each child's history, and
/// the objects whose owner is not a live parent.
#[derive(Debug, PartialEq)]
struct Outcome {
    objects: BTreeMap<String, Value>,
    children: BTreeMap<String, Lifecycle>,
    orphans: Vec<String>,
}

async fn outcome(cluster: &DevCluster) -> Outcome {
    let (mut objects, mut uids, mut owners) = (BTreeMap::new(), Vec::new(), Vec::new());
    for kind in kinds() {
        let api: Api<DynamicObject> = Api::namespaced_with(cluster.client(), "default", &kind);
        for item in api.list(&ListParams::default()).await.expect("list").items {
            let name = format!("{}/{}", kind.kind, item.metadata.name.clone().unwrap_or_default());
            if name != "Service/kubernetes" {
                uids.extend(item.metadata.uid.clone());
                owners.extend(item.metadata.owner_references.iter().flatten().map(|o| (name.clone(), o.uid.clone())));
                let mut object = comparable(serde_json::to_value(item).expect("JSON"));
                // A hash of what was applied, owner uid included.
                object["metadata"]["annotations"].as_object_mut().map(|a| a.remove("kubewasm.io/applied-hash"));
                objects.insert(name, object);
            }
        }
    }
    let orphans = owners.into_iter().filter(|(_, uid)| !uids.contains(uid)).map(|(name, _)| name).collect();
    let children = cluster
        .lifecycles()
        .into_iter()
        .filter(|(key, _)| key.starts_with("deployments.apps/default/") || key == "services/default/web")
        .collect();
    Outcome { objects, children, orphans }
}

/// A `kubewasm run` process against `cluster`, with the demo-application plugin.
struct Host {
    child: Child,
    addr: String,
}

impl Host {
    /// `kubewasm run` with the kubeconfig at `kubeconfig` (the host's service account).
    fn start(kubeconfig: &std::path::Path) -> Host {
        let dir = target_dir().join("plugins");
        let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("address").port();
        let addr = format!("127.0.0.1:{port}");
        let only_demo = target_dir().join("crash-test-plugins");
        std::fs::create_dir_all(&only_demo).expect("plugin dir");
        std::fs::copy(dir.join("demo-application.wasm"), only_demo.join("demo-application.wasm"))
            .expect("demo-application.wasm: run `make plugins` first");
        let child = Command::new(env!("CARGO_BIN_EXE_kubewasm"))
            .args(["run", "--plugins", only_demo.to_str().expect("utf-8"), "--health-addr", &addr])
            .arg("--cache-dir")
            .arg(target_dir().join("crash-test-cache"))
            .env("KUBECONFIG", kubeconfig)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("kubewasm run starts");
        Host { child, addr }
    }

    /// Waits until its caches are synced (`/readyz`).
    async fn ready(mut self) -> Host {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            assert!(self.child.try_wait().expect("poll").is_none(), "kubewasm run exited early");
            if readyz(&self.addr) == Some(200) {
                return self;
            }
            assert!(Instant::now() < deadline, "kubewasm run not ready within 120 s");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    fn kill(mut self) {
        self.child.kill().expect("SIGKILL");
        self.child.wait().expect("reap");
    }
}

/// Waits until no write has reached the server for `quiet`; returns the write count.
async fn quiet(cluster: &DevCluster, quiet: Duration) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut last = cluster.write_requests();
    let mut since = Instant::now();
    while since.elapsed() < quiet {
        assert!(Instant::now() < deadline, "writes did not stop within 30 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = cluster.write_requests();
        if now != last {
            (last, since) = (now, Instant::now());
        }
    }
    last
}

async fn create_parent(cluster: &DevCluster) {
    let api: Api<DynamicObject> = Api::namespaced_with(cluster.client(), "default", &kinds()[0]);
    let parent = json!({
        "apiVersion": "paas.cmft.com/v1beta1", "kind": "DemoApplication",
        "metadata": { "name": "web", "namespace": "default" },
        "spec": { "image": "nginx:1.27", "replica": 2, "ports": [{ "port": 80 }] },
    });
    api.create(&PostParams::default(), &serde_json::from_value(parent).expect("parent")).await.expect("create");
}

/// One run: the parent is created; with `crash_after = Some(k)` the host is killed right
/// after its k-th write and started again. Returns the end state and the host's writes.
async fn run(crds: &[Arc<kubewasm::plugin::Plugin>], crash_after: Option<u64>) -> (Outcome, u64) {
    let cluster = DevCluster::start(Options::default()).await.expect("the embedded API server starts");
    kubewasm::runtime::install_crds(&cluster.client(), crds).await.expect("CRDs");
    let demo = target_dir().join("plugins").join("demo-application.wasm");
    let kubewasm = std::path::Path::new(env!("CARGO_BIN_EXE_kubewasm"));
    let kubeconfig = kubewasm_tests::host_kubeconfig_file(&cluster, kubewasm, &[demo]).await;
    let mut host = Host::start(&kubeconfig).ready().await;
    let before = quiet(&cluster, Duration::from_millis(500)).await;
    if let Some(k) = crash_after {
        // The parent's creation is the first write counted.
        let frozen = cluster.freeze_after_writes(k + 1);
        create_parent(&cluster).await;
        tokio::time::timeout(Duration::from_secs(30), frozen)
            .await
            .unwrap_or_else(|_| panic!("the host made fewer than {k} writes"));
        host.kill();
        cluster.thaw_writes();
        host = Host::start(&kubeconfig).ready().await;
    } else {
        create_parent(&cluster).await;
    }
    let after = quiet(&cluster, Duration::from_millis(1500)).await;
    let outcome = outcome(&cluster).await;
    host.kill();
    cluster.shutdown().await;
    // The parent's creation is not the host's.
    (outcome, after - before - 1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_killed_after_any_write_of_a_reconcile_converges_as_if_it_had_not_been() {
    let engine = kubewasm::plugin::Engine::new().expect("engine");
    let demo = target_dir().join("plugins").join("demo-application.wasm");
    let crds = [Arc::new(kubewasm::plugin::Plugin::load(&engine, &demo).expect("demo-application loads"))];

    let started = Instant::now();
    let (reference, writes) = run(&crds, None).await;
    eprintln!("reference run: {:?}", started.elapsed());
    assert!(reference.objects.contains_key("Deployment/web") && reference.objects.contains_key("Service/web"));
    assert!(reference.objects["DemoApplication/web"]["status"].is_object(), "the reference writes a status");
    assert!(writes >= 3, "children and status are {writes} writes");

    for k in 1..=writes {
        let started = Instant::now();
        let (end, _) = run(&crds, Some(k)).await;
        // A row of RELIABILITY.md's table (`cargo test -p kubewasm --test crash -- --nocapture`).
        let (equal, took) = (if end == reference { "yes" } else { "no" }, started.elapsed().as_secs_f64());
        println!(
            "| host killed after write {k} of {writes} | 1 | 1 | {equal} | 0 | 0 | 0 | - | {took:.1} s, whole run |"
        );
        assert_eq!(end.objects, reference.objects, "killed after write {k} of {writes}: the end state differs");
        assert_eq!(end.children, reference.children, "killed after write {k} of {writes}: children created or removed");
        assert_eq!(end.orphans, Vec::<String>::new(), "killed after write {k} of {writes}: orphans");
    }
}
