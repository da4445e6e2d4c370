//! Convergence of N `DemoApplication`s on the embedded API server: the kubewasm host
//! running `demo-application.wasm`, beside the same plugin code called natively from
//! an ordinary kube-rs controller.
//!
//! One long run is the measurement, so this is a plain binary, not criterion. Each
//! controller gets a fresh API server; all N parents are created (16 requests in
//! flight) while the controller runs, and the clock starts when the last creation
//! returns. The clock stops when a watch has seen all N Deployments and N Services.
//! Writes are the server's mutating requests minus the N creations, counted at that
//! moment and again once no write has arrived for two seconds. Every request of the
//! controller's own client is counted too, by verb, to show where round trips go.
//!
//! Run with `make bench-convergence`; `KUBEWASM_BENCH_PARENTS` sets N (default 1000).
//! `KUBEWASM_BENCH_REPLICAS=1,2,3` measures instead the host sharded over that many
//! replicas (each its own client, Lease and controller, all in this process): how the
//! reconciles split, and the time when they share the machine's cores.
//! Results: BENCHMARKS.md.

#[path = "support/native.rs"]
mod native;
mod support;
#[path = "support/watch.rs"]
mod watch;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Service;
use kube::Client;
use kube::api::{Api, DynamicObject, ListParams, PostParams};
use kube::discovery::ApiResource;
use kubewasm::controller::{self as host_controller, Controller};
use kubewasm::coordination::shard::{Joined, Member};
use kubewasm::plugin::{Engine, Plugin};
use kubewasm::runtime;
use kubewasm_devcluster::{self as devcluster, DevCluster};
use native::Native;
use serde_json::json;

const NAMESPACE: &str = "default";
/// Parent creations in flight at once, so that creating is not the bottleneck.
const CREATORS: usize = 16;
/// No write for this long after convergence means the controller has settled.
const QUIET: Duration = Duration::from_secs(2);
/// Give up waiting (and report it) rather than hang.
const PATIENCE: Duration = Duration::from_mins(15);

fn parents() -> usize {
    std::env::var("KUBEWASM_BENCH_PARENTS")
        .ok()
        .map_or(1000, |n| n.parse().expect("KUBEWASM_BENCH_PARENTS is a number"))
}

fn parent_resource() -> ApiResource {
    ApiResource {
        group: "paas.cmft.com".into(),
        version: "v1beta1".into(),
        api_version: "paas.cmft.com/v1beta1".into(),
        kind: "DemoApplication".into(),
        plural: "demoapplications".into(),
    }
}

fn parent(i: usize) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "paas.cmft.com/v1beta1",
        "kind": "DemoApplication",
        "metadata": {"name": format!("app-{i:05}"), "namespace": NAMESPACE},
        "spec": {"image": "nginx:1.27", "replica": 2, "ports": [{"port": 80, "targetPort": 8080}]},
    }))
    .expect("parent JSON")
}

/// What one run measured.
struct Run {
    create: Duration,
    /// From the last creation to all children seen; `None` if they never were.
    converge: Option<Duration>,
    writes_converged: u64,
    writes_settled: u64,
    reconciles: u64,
    /// Reconciles per replica.
    split: Vec<u64>,
    with_status: usize,
    /// Requests of the controller's client, from its start until settled.
    requests: BTreeMap<&'static str, u64>,
}

/// Requests one client sent, by kind of request.
#[derive(Default)]
struct Requests(Mutex<BTreeMap<&'static str, u64>>);

impl Requests {
    fn count(&self, method: &http::Method, uri: &http::Uri) {
        *self.0.lock().expect("request counts").entry(request_kind(method, uri)).or_default() += 1;
    }

    fn snapshot(&self) -> BTreeMap<&'static str, u64> {
        self.0.lock().expect("request counts").clone()
    }
}

/// `watch`, `list` (a GET with a query), `get` (one namespaced object), `discovery`
/// (any other GET), or the write verb.
fn request_kind(method: &http::Method, uri: &http::Uri) -> &'static str {
    let query = uri.query().unwrap_or_default();
    match *method {
        http::Method::GET if query.split('&').any(|p| p == "watch=true" || p == "watch=1") => "watch",
        http::Method::GET if !query.is_empty() => "list",
        http::Method::GET => {
            let segments: Vec<&str> = uri.path().split('/').filter(|s| !s.is_empty()).collect();
            match segments.iter().position(|s| *s == "namespaces") {
                Some(i) if segments.len() >= i + 4 => "get",
                _ => "discovery",
            }
        }
        http::Method::PATCH => "patch",
        http::Method::POST => "create",
        http::Method::PUT => "update",
        http::Method::DELETE => "delete",
        _ => "other",
    }
}

/// A client of `cluster` like [`DevCluster::client`] that counts its requests.
fn counted_client(cluster: &DevCluster) -> (Client, Arc<Requests>) {
    let requests = Arc::new(Requests::default());
    (counted_client_with(cluster, requests.clone()), requests)
}

/// A client of `cluster` that counts its requests into `counter`.
fn counted_client_with(cluster: &DevCluster, counter: Arc<Requests>) -> Client {
    // The cluster's own configuration: its CA and the administrator's client certificate.
    kube::client::ClientBuilder::try_from(cluster.config())
        .expect("client")
        .with_layer(&tower::util::MapRequestLayer::new(move |request: http::Request<kube::client::Body>| {
            counter.count(request.method(), request.uri());
            request
        }))
        .build()
}

/// A controller under measurement.
trait UnderTest {
    fn reconciles(&self) -> u64;
    /// Reconciles per replica.
    fn split(&self) -> Vec<u64> {
        vec![self.reconciles()]
    }
    async fn stop(self);
}

impl UnderTest for Controller {
    fn reconciles(&self) -> u64 {
        Controller::reconciles(self)
    }
    async fn stop(self) {
        Controller::stop(self).await;
    }
}

async fn measure<C: UnderTest>(cluster: &DevCluster, n: usize, controller: C, requests: &Requests) -> Run {
    let client = cluster.client();
    let deployments = watch::all_seen::<Deployment>(&client, NAMESPACE, n);
    let services = watch::all_seen::<Service>(&client, NAMESPACE, n);
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), NAMESPACE, &parent_resource());

    let before = cluster.write_requests();
    let start = Instant::now();
    futures::stream::iter(0..n)
        .map(|i| {
            let api = api.clone();
            async move { api.create(&PostParams::default(), &parent(i)).await }
        })
        .buffer_unordered(CREATORS)
        .try_for_each(|_| async { Ok(()) })
        .await
        .expect("parents are created");
    let last_created = Instant::now();

    let seen = async {
        let d = deployments.await.ok()?;
        let s = services.await.ok()?;
        Some(d.max(s))
    };
    let converge =
        tokio::time::timeout(PATIENCE, seen).await.ok().flatten().map(|t| t.saturating_duration_since(last_created));
    let ours = |writes: u64| writes - before - n as u64;
    let writes_converged = ours(cluster.write_requests());

    let mut last = cluster.write_requests();
    let mut quiet_since = Instant::now();
    while quiet_since.elapsed() < QUIET && start.elapsed() < PATIENCE {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = cluster.write_requests();
        if now != last {
            (last, quiet_since) = (now, Instant::now());
        }
    }
    let writes_settled = ours(last);
    let reconciles = controller.reconciles();
    let split = controller.split();
    let requests = requests.snapshot();
    controller.stop().await;

    let listed = api.list(&ListParams::default()).await.expect("parents list");
    let with_status = listed.items.iter().filter(|p| p.data["status"]["availableReplicas"].is_number()).count();
    Run {
        create: last_created - start,
        converge,
        writes_converged,
        writes_settled,
        reconciles,
        split,
        with_status,
        requests,
    }
}

async fn cluster_with_crd(plugin: &Arc<Plugin>) -> DevCluster {
    let cluster = DevCluster::start(devcluster::Options::default()).await.expect("API server starts");
    runtime::install_crds(&cluster.client(), std::slice::from_ref(plugin)).await.expect("CRD installs");
    cluster
}

async fn run_host(plugin: Arc<Plugin>, n: usize) -> Run {
    let cluster = cluster_with_crd(&plugin).await;
    let (client, requests) = counted_client(&cluster);
    let controller =
        Controller::start(client, plugin, host_controller::Options::default()).await.expect("host controller starts");
    let run = measure(&cluster, n, controller, &requests).await;
    cluster.shutdown().await;
    run
}

async fn run_native(plugin: Arc<Plugin>, n: usize) -> Run {
    let cluster = cluster_with_crd(&plugin).await;
    let (client, requests) = counted_client(&cluster);
    let controller = Native::start(client, parent_resource());
    let run = measure(&cluster, n, controller, &requests).await;
    cluster.shutdown().await;
    run
}

/// Host replicas sharing the parents.
struct Replicas(Vec<(Controller, Joined)>);

impl UnderTest for Replicas {
    fn reconciles(&self) -> u64 {
        self.0.iter().map(|(c, _)| c.reconciles()).sum()
    }
    fn split(&self) -> Vec<u64> {
        self.0.iter().map(|(c, _)| c.reconciles()).collect()
    }
    async fn stop(self) {
        for (controller, joined) in self.0 {
            controller.stop().await;
            joined.leave().await.expect("the replica leaves its group");
        }
    }
}

/// `replicas` host controllers sharded over one group, their requests counted together.
async fn run_sharded(plugin: Arc<Plugin>, n: usize, replicas: usize) -> Run {
    let cluster = cluster_with_crd(&plugin).await;
    let requests = Arc::new(Requests::default());
    let mut members = Vec::new();
    let mut shards = Vec::new();
    for r in 0..replicas {
        let client = counted_client_with(&cluster, requests.clone());
        let member = Member::new(client.clone(), NAMESPACE, "bench", format!("replica-{r}"), Duration::from_secs(15));
        let (shard, joined) = member.spawn();
        shards.push(shard.clone());
        let options = host_controller::Options { shard, ..host_controller::Options::default() };
        let controller = Controller::start(client, plugin.clone(), options).await.expect("host controller starts");
        members.push((controller, joined));
    }
    // The clock starts once every replica hashes over all of them.
    while !shards.iter().all(|s| s.members().is_some_and(|m| m.len() == replicas)) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let run = measure(&cluster, n, Replicas(members), &requests).await;
    cluster.shutdown().await;
    run
}

impl UnderTest for Native {
    fn reconciles(&self) -> u64 {
        Native::reconciles(self)
    }
    async fn stop(self) {
        Native::stop(self).await;
    }
}

fn seconds(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

fn ratio(a: f64, b: f64) -> String {
    if b == 0.0 { "-".into() } else { format!("{:.2}", a / b) }
}

#[allow(clippy::cast_precision_loss)]
fn print(n: usize, host: &Run, native: &Run) {
    let options = host_controller::Options::default();
    println!(
        "convergence of {n} DemoApplications ({} Deployments + {} Services); concurrency {}, debounce {} ms, {CREATORS} creations in flight",
        n,
        n,
        options.concurrency,
        options.debounce.as_millis()
    );
    println!(
        "{:<16} {:>10} {:>10} {:>16} {:>14} {:>18} {:>11} {:>8}",
        "controller",
        "create",
        "converge",
        "writes@converged",
        "writes@settled",
        "writes/parent",
        "reconciles",
        "status"
    );
    for (label, run) in [("kubewasm host", host), ("native kube-rs", native)] {
        println!(
            "{:<16} {:>10} {:>10} {:>16} {:>14} {:>18.2} {:>11} {:>8}",
            label,
            seconds(run.create),
            run.converge.map_or_else(|| "none".into(), seconds),
            run.writes_converged,
            run.writes_settled,
            run.writes_settled as f64 / n as f64,
            run.reconciles,
            format!("{}/{n}", run.with_status),
        );
    }
    let time = match (host.converge, native.converge) {
        (Some(h), Some(v)) => ratio(h.as_secs_f64(), v.as_secs_f64()),
        _ => "-".into(),
    };
    println!(
        "{:<16} {:>10} {:>10} {:>16} {:>14}",
        "host / native",
        ratio(host.create.as_secs_f64(), native.create.as_secs_f64()),
        time,
        ratio(host.writes_converged as f64, native.writes_converged as f64),
        ratio(host.writes_settled as f64, native.writes_settled as f64),
    );
    println!();
    println!("requests of the controller's client, from its start until settled");
    let kinds = ["get", "list", "watch", "discovery", "patch", "create", "update", "delete", "other"];
    print!("{:<16}", "controller");
    for kind in kinds {
        print!(" {kind:>9}");
    }
    println!();
    for (label, run) in [("kubewasm host", host), ("native kube-rs", native)] {
        print!("{label:<16}");
        for kind in kinds {
            print!(" {:>9}", run.requests.get(kind).copied().unwrap_or(0));
        }
        println!();
    }
}

#[allow(clippy::cast_precision_loss)]
fn print_sharded(n: usize, runs: &[(usize, Run)]) {
    println!("convergence of {n} DemoApplications, the host sharded over R replicas in one process");
    println!(
        "{:<9} {:>10} {:>10} {:>14} {:>14} {:>8}  reconciles per replica",
        "replicas", "create", "converge", "writes@settled", "writes/parent", "status"
    );
    for (replicas, run) in runs {
        let split: Vec<String> = run.split.iter().map(u64::to_string).collect();
        println!(
            "{replicas:<9} {:>10} {:>10} {:>14} {:>14.2} {:>8}  {}",
            seconds(run.create),
            run.converge.map_or_else(|| "none".into(), seconds),
            run.writes_settled,
            run.writes_settled as f64 / n as f64,
            format!("{}/{n}", run.with_status),
            split.join(" / "),
        );
    }
}

#[tokio::main]
async fn main() {
    // Quiet unless RUST_LOG asks, e.g. RUST_LOG=kubewasm=debug with a small N.
    if std::env::var_os("RUST_LOG").is_some() {
        tracing_subscriber::fmt().with_env_filter(tracing_subscriber::EnvFilter::from_default_env()).init();
    }
    let n = parents();
    let engine = Engine::new().expect("engine");
    let plugin = Arc::new(Plugin::load(&engine, &support::demo_application_wasm()).expect("demo-application loads"));
    if let Ok(counts) = std::env::var("KUBEWASM_BENCH_REPLICAS") {
        let mut runs = Vec::new();
        for replicas in counts.split(',') {
            let replicas: usize = replicas.trim().parse().expect("KUBEWASM_BENCH_REPLICAS: numbers, comma-separated");
            runs.push((replicas, run_sharded(plugin.clone(), n, replicas).await));
        }
        print_sharded(n, &runs);
        return;
    }
    let host = run_host(plugin.clone(), n).await;
    let native = run_native(plugin, n).await;
    print(n, &host, &native);
}
