//! Hot reload and footprint, measured once per run (no criterion: each sample is a
//! whole reload through a real host):
//!
//! - reload latency: `demo-application.wasm` replaced in a watched plugin
//!   directory, until the first child written by the new version is seen in the
//!   API server; with a cold compile, and with the compiled version in the cache;
//! - resident memory added by loading 10 plugins.
//!
//! Run with `make bench-reload`. Results: BENCHMARKS.md.

use std::path::Path;
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

fn deployments() -> ApiResource {
    ApiResource {
        group: "apps".into(),
        version: "v1".into(),
        api_version: "apps/v1".into(),
        kind: "Deployment".into(),
        plural: "deployments".into(),
    }
}

/// Replaces the plugin file and waits until the Deployment carries (or lost) the
/// v2 label; returns the elapsed time.
async fn reload(api: &Api<DynamicObject>, dir: &Path, source: &Path, v2: bool) -> Duration {
    let bytes = std::fs::read(source).expect("plugin bytes");
    let start = Instant::now();
    std::fs::write(dir.join("demo-application.wasm"), bytes).expect("replace plugin");
    loop {
        let d = api.get("web").await.expect("deployment");
        if d.metadata.labels.unwrap_or_default().contains_key("kubewasm.io/version") == v2 {
            return start.elapsed();
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

async fn reload_latency() {
    let dir = std::env::temp_dir().join(format!("kubewasm-bench-reload-{}", std::process::id()));
    let cache = std::env::temp_dir().join(format!("kubewasm-bench-cache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&cache);
    std::fs::create_dir_all(&dir).expect("plugin dir");
    let (v1, v2) = (support::demo_application_wasm(), support::wasm("fixtures", "demo-relabel"));
    std::fs::copy(&v1, dir.join("demo-application.wasm")).expect("copy");

    let cluster = DevCluster::start(devcluster::Options::default()).await.expect("API server");
    let client = cluster.client();
    let engine =
        Engine::with_options(&EngineOptions { pooling: true, cache_dir: Some(cache.clone()) }).expect("engine");
    let options = runtime::Options {
        install_crds: true,
        controller: Options { debounce: Duration::ZERO, ..Options::default() },
        ..runtime::Options::default()
    };
    let host = Runtime::from_dir(&client, &engine, &dir, options).await.expect("host");
    let watcher = tokio::spawn(host.watch(std::future::pending(), |_| {}));

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
    let api = Api::<DynamicObject>::namespaced_with(client.clone(), "default", &deployments());
    while api.get_opt("web").await.expect("get").is_none() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }

    // Cold: the cache emptied before each switch to v2. Cached: both versions compiled
    // once already, so every switch loads the artefact.
    let mut cold = Vec::new();
    for _ in 0..ROUNDS {
        empty(&cache);
        cold.push(reload(&api, &dir, &v2, true).await);
        reload(&api, &dir, &v1, false).await;
    }
    let mut cached = Vec::new();
    for _ in 0..ROUNDS {
        cached.push(reload(&api, &dir, &v2, true).await);
        reload(&api, &dir, &v1, false).await;
    }
    println!("reload latency (file replaced -> first child written by the new version), median of {ROUNDS}:");
    println!("  cold compile: {:>8.1} ms", median(cold).as_secs_f64() * 1e3);
    println!("  cache hit:    {:>8.1} ms", median(cached).as_secs_f64() * 1e3);
    println!("  (includes the watcher's 200 ms quiet period and 100 ms settle check)");
    watcher.abort();
    cluster.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&cache);
}

/// Deletes every compiled artefact in the cache, keeping the directory.
fn empty(cache: &Path) {
    for entry in std::fs::read_dir(cache).into_iter().flatten().flatten() {
        let _ = std::fs::remove_file(entry.path());
    }
}

fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("/proc/self/statm");
    let pages: u64 = statm.split_whitespace().nth(1).and_then(|p| p.parse().ok()).expect("resident pages");
    pages * 4096
}

fn memory_of_ten_plugins() {
    let engine = Engine::with_options(&EngineOptions { pooling: true, cache_dir: None }).expect("engine");
    let names = [
        ("plugins", "demo-application"),
        ("plugins", "foo"),
        ("plugins", "pod-services"),
        ("fixtures", "misbehave"),
        ("fixtures", "gate"),
    ];
    let before = resident_bytes();
    let mut loaded = Vec::new();
    for i in 0..10 {
        let (folder, name) = names[i % names.len()];
        loaded.push(Plugin::load(&engine, &support::wasm(folder, name)).expect("load"));
    }
    let after = resident_bytes();
    let size: u64 = (0..10)
        .map(|i| std::fs::metadata(support::wasm(names[i % 5].0, names[i % 5].1)).map(|m| m.len()).unwrap_or(0))
        .sum();
    println!(
        "resident memory added by 10 loaded plugins ({:.1} MiB of .wasm): {:.1} MiB ({:.1} MiB each)",
        size as f64 / 1048576.0,
        (after - before) as f64 / 1048576.0,
        (after - before) as f64 / 10.0 / 1048576.0
    );
    drop(loaded);
}

#[tokio::main]
async fn main() {
    memory_of_ten_plugins();
    reload_latency().await;
}
