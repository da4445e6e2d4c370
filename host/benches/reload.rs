//! Hot reload and footprint, measured once per run (no criterion: each sample is a
//! whole reload through a real host):
//!
//! - reload latency: `demo-application.wasm` replaced in a watched plugin directory
//!   by a build that labels its children (`demo-relabel`), and back; timed until the
//!   host runs the new version (swap) and until the first child written by it is seen
//!   in the API server (acting). Cold (the compiled-plugin cache emptied before each
//!   switch) on a tiered engine (baseline code first) and, for the ratio, on an engine
//!   that compiles with Cranelift only; and with both versions in the cache;
//! - the Python plugin (19 MB): the Rust plugin's file replaced by the Python build of
//!   the same reconciler, cold and from the cache, timed until the host runs it (its
//!   children are the same, so nothing new is written);
//! - resident memory added by loading 10 plugins, compiling each, then from the cache.
//!
//! Run with `make bench-reload` (`make python-plugins` too for the Python rows).
//! Results: BENCHMARKS.md.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kube::api::{Api, DynamicObject, PostParams};
use kube::discovery::ApiResource;
use kubewasm::controller::Options;
use kubewasm::plugin::{Engine, EngineOptions, Plugin};
use kubewasm::runtime::{self, Runtime};
use kubewasm_devcluster::{self as devcluster, DevCluster};
use serde_json::json;

mod support;

const ROUNDS: usize = 5;
const FILE: &str = "demo-application.wasm";

fn deployments() -> ApiResource {
    ApiResource {
        group: "apps".into(),
        version: "v1".into(),
        api_version: "apps/v1".into(),
        kind: "Deployment".into(),
        plural: "deployments".into(),
    }
}

/// (when, the hash running for the file) after every rescan.
type Shown = Arc<Mutex<Vec<(Instant, Option<String>)>>>;

/// A host following a plugin directory that holds `demo-application.wasm`, with one
/// DemoApplication converged; every status the host shows is recorded with its time.
struct Bench {
    cluster: DevCluster,
    dir: PathBuf,
    cache: PathBuf,
    deployments: Api<DynamicObject>,
    shown: Shown,
    watcher: tokio::task::JoinHandle<()>,
}

impl Bench {
    async fn start(name: &str, tiered: bool) -> Bench {
        let dir = std::env::temp_dir().join(format!("kubewasm-bench-reload-{name}-{}", std::process::id()));
        let cache = std::env::temp_dir().join(format!("kubewasm-bench-cache-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let _ = std::fs::remove_dir_all(&cache);
        std::fs::create_dir_all(&dir).expect("plugin dir");
        std::fs::copy(support::demo_application_wasm(), dir.join(FILE)).expect("copy");

        let cluster = DevCluster::start(devcluster::Options::default()).await.expect("API server");
        let client = cluster.client();
        let options = EngineOptions { pooling: true, cache_dir: Some(cache.clone()), tiered };
        let engine = Engine::with_options(&options).expect("engine");
        let options = runtime::Options {
            install_crds: true,
            controller: Options { debounce: Duration::ZERO, ..Options::default() },
            ..runtime::Options::default()
        };
        let host = Runtime::from_dir(&client, &engine, &dir, options).await.expect("host");
        let shown = Arc::new(Mutex::new(Vec::new()));
        let record = shown.clone();
        let watcher = tokio::spawn(async move {
            let on_change = move |host: &Runtime| {
                let hash = host.status().into_iter().find(|s| s.running).and_then(|s| s.hash);
                record.lock().expect("shown").push((Instant::now(), hash));
            };
            host.watch(std::future::pending(), on_change).await.expect("watch");
        });

        let apps = ApiResource {
            group: "paas.cmft.com".into(),
            version: "v1beta1".into(),
            api_version: "paas.cmft.com/v1beta1".into(),
            kind: "DemoApplication".into(),
            plural: "demoapplications".into(),
        };
        let app: DynamicObject = serde_json::from_value(json!({"apiVersion": "paas.cmft.com/v1beta1", "kind": "DemoApplication",
            "metadata": {"name": "web", "namespace": "default"}, "spec": {"image": "nginx", "replica": 1, "ports": [{"port": 80}]}}))
            .expect("json");
        Api::<DynamicObject>::namespaced_with(client.clone(), "default", &apps)
            .create(&PostParams::default(), &app)
            .await
            .expect("create");
        let deployments = Api::<DynamicObject>::namespaced_with(client, "default", &deployments());
        while deployments.get_opt("web").await.expect("get").is_none() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        Bench { cluster, dir, cache, deployments, shown, watcher }
    }

    /// Writes `source` over the plugin file as `cp` does (in place); returns the time
    /// until the host runs it and, if `labelled` says what the Deployment's
    /// `kubewasm.io/version` label must then be, until the Deployment shows it.
    async fn reload(&self, source: &Path, labelled: Option<bool>) -> (Duration, Option<Duration>) {
        let bytes = std::fs::read(source).expect("plugin bytes");
        let hash = kubewasm::plugin::digest(&bytes);
        let start = Instant::now();
        std::fs::write(self.dir.join(FILE), bytes).expect("replace plugin");
        let mut acting = None;
        let swapped = loop {
            let swapped = self
                .shown
                .lock()
                .expect("shown")
                .iter()
                .find(|(at, h)| *at >= start && h.as_deref() == Some(&hash))
                .map(|(at, _)| *at - start);
            if let Some(want) = labelled
                && acting.is_none()
            {
                let d = self.deployments.get("web").await.expect("deployment");
                if d.metadata.labels.unwrap_or_default().contains_key("kubewasm.io/version") == want {
                    acting = Some(start.elapsed());
                }
            }
            if let Some(swapped) = swapped
                && (labelled.is_none() || acting.is_some())
            {
                break swapped;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        };
        (swapped, acting)
    }

    /// Compiles `files` into the cache with the optimising compiler, as the background
    /// compiles of a tiered host leave them.
    fn fill_cache(&self, files: &[PathBuf]) {
        let options = EngineOptions { pooling: true, cache_dir: Some(self.cache.clone()), tiered: false };
        let engine = Engine::with_options(&options).expect("engine");
        for file in files {
            Plugin::load(&engine, file).expect("loads");
        }
    }

    /// Deletes every compiled artefact in the cache, keeping the directory.
    fn empty_cache(&self) {
        for entry in std::fs::read_dir(&self.cache).into_iter().flatten().flatten() {
            let _ = std::fs::remove_file(entry.path());
        }
    }

    async fn stop(self) {
        self.watcher.abort();
        self.cluster.shutdown().await;
        let _ = std::fs::remove_dir_all(&self.dir);
        let _ = std::fs::remove_dir_all(&self.cache);
    }
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Rounds of v1 -> v2 -> v1 with the cache emptied before each switch to v2 (`cold`)
/// or not; medians of the switches to v2: (swap, acting).
async fn rust_rounds(bench: &Bench, cold: bool) -> (Duration, Duration) {
    let (v1, v2) = (support::demo_application_wasm(), support::wasm("fixtures", "demo-relabel"));
    let (mut swaps, mut acts) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        if cold {
            bench.empty_cache();
        }
        let (swap, acting) = bench.reload(&v2, Some(true)).await;
        swaps.push(swap);
        acts.push(acting.expect("acting"));
        bench.reload(&v1, Some(false)).await;
    }
    (median(swaps), median(acts))
}

async fn reload_latency() {
    println!(
        "reload latency, file written -> the host runs it (swap) / -> its first child seen (acting), median of {ROUNDS}:"
    );
    let size = std::fs::metadata(support::demo_application_wasm()).map(|m| m.len()).unwrap_or(0);
    println!("  demo-application ({:.2} MiB) <-> demo-relabel:", size as f64 / 1048576.0);
    for (name, tiered) in [("tiered", true), ("cranelift", false)] {
        let bench = Bench::start(name, tiered).await;
        let (swap, acting) = rust_rounds(&bench, true).await;
        println!("    cold, {name:<32} swap {:>8.1} ms, acting {:>8.1} ms", ms(swap), ms(acting));
        if tiered {
            bench.fill_cache(&[support::demo_application_wasm(), support::wasm("fixtures", "demo-relabel")]);
            let (swap, acting) = rust_rounds(&bench, false).await;
            println!("    cached, {:<30} swap {:>8.1} ms, acting {:>8.1} ms", "", ms(swap), ms(acting));
        }
        bench.stop().await;
    }

    let Some(python) = support::built("fixtures", "demo-application-python") else {
        println!("  (no Python rows: run `make python-plugins` first)");
        return;
    };
    let size = std::fs::metadata(&python).map(|m| m.len()).unwrap_or(0);
    println!("  demo-application-python ({:.1} MiB) replacing the Rust build, swap only:", size as f64 / 1048576.0);
    for (name, tiered) in [("tiered", true), ("cranelift", false)] {
        let bench = Bench::start(&format!("python-{name}"), tiered).await;
        let (cold, _) = bench.reload(&python, None).await;
        println!("    cold, {name:<32} swap {:>8.1} ms", ms(cold));
        if tiered {
            bench.reload(&support::demo_application_wasm(), None).await;
            bench.fill_cache(std::slice::from_ref(&python));
            let (cached, _) = bench.reload(&python, None).await;
            println!("    cached, {:<30} swap {:>8.1} ms", "", ms(cached));
        }
        bench.stop().await;
    }
}

fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("/proc/self/statm");
    let pages: u64 = statm.split_whitespace().nth(1).and_then(|p| p.parse().ok()).expect("resident pages");
    pages * 4096
}

/// The ten plugins the memory figures load: the five distinct example and fixture
/// components, twice each.
fn ten_plugins() -> Vec<PathBuf> {
    let names = [
        ("plugins", "demo-application"),
        ("plugins", "foo"),
        ("plugins", "pod-services"),
        ("fixtures", "misbehave"),
        ("fixtures", "gate"),
    ];
    (0..10).map(|i| support::wasm(names[i % names.len()].0, names[i % names.len()].1)).collect()
}

/// Resident memory added by loading `files` on a pooled engine with `options`, in MiB.
fn resident_added(options: &EngineOptions, files: &[PathBuf]) -> f64 {
    let engine = Engine::with_options(options).expect("engine");
    let before = resident_bytes();
    let loaded: Vec<Plugin> = files.iter().map(|file| Plugin::load(&engine, file).expect("load")).collect();
    let added = resident_bytes().saturating_sub(before);
    drop(loaded);
    added as f64 / 1048576.0
}

/// Resident memory added by 10 loaded plugins: each compiled by Cranelift (what a host
/// pays on its first start, compiling included), then, in a new engine, the same ten
/// from the compiled-plugin cache (what each loaded plugin costs).
fn memory_of_ten_plugins() {
    let files = ten_plugins();
    let size: u64 = files.iter().map(|f| std::fs::metadata(f).map(|m| m.len()).unwrap_or(0)).sum();
    println!("resident memory added by 10 loaded plugins ({:.1} MiB of .wasm):", size as f64 / 1048576.0);
    let compiled = resident_added(&EngineOptions { pooling: true, ..EngineOptions::default() }, &files);
    println!("  each compiled:         {compiled:>7.1} MiB ({:.1} MiB each)", compiled / 10.0);

    let cache = std::env::temp_dir().join(format!("kubewasm-bench-memory-cache-{}", std::process::id()));
    let cached = EngineOptions { pooling: true, cache_dir: Some(cache.clone()), ..EngineOptions::default() };
    resident_added(&cached, &files[..5]);
    let from_cache = resident_added(&cached, &files);
    println!("  from the cache:        {from_cache:>7.1} MiB ({:.1} MiB each)", from_cache / 10.0);
    let _ = std::fs::remove_dir_all(&cache);
}

#[tokio::main]
async fn main() {
    memory_of_ten_plugins();
    reload_latency().await;
}
