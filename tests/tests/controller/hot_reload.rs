//! The plugin directory as `kubewasm dev` follows it: replaced, corrupt, added and
//! removed files, and changed settings, while the host runs.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kubewasm::metrics::Metrics;
use kubewasm::plugin::{Engine, EngineOptions, Plugin, Tier};
use kubewasm::runtime::{self, PluginStatus, Runtime};
use serde_json::json;
use tokio::sync::oneshot;

use kubewasm_tests::eventually_within;

use crate::harness::{
    Cluster, deployments, eventually, gate, gates, quick, resource, samples, services, wait_for, wasm_path,
};

/// A cluster and a host following a plugin directory in the background, as
/// `kubewasm dev` runs it; the test sees the host's status after each rescan.
struct DirEnv {
    base: Cluster,
    dir: PathBuf,
    seen: Arc<Mutex<Seen>>,
    metrics: Metrics,
    stop: oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

/// What the host showed after its last rescan, and every error it ever showed.
#[derive(Default)]
struct Seen {
    status: Vec<PluginStatus>,
    compiles: u64,
    errors: Vec<String>,
    /// The plugin each running controller runs, as it held it then.
    running: Vec<Arc<Plugin>>,
}

impl Seen {
    fn record(&mut self, host: &Runtime) {
        self.status = host.status();
        self.compiles = host.compiles();
        self.errors.extend(self.status.iter().filter_map(|s| s.error.clone()));
        self.running = host.plugins().filter_map(|name| host.controller(name)).map(|c| c.plugin()).collect();
    }
}

impl std::ops::Deref for DirEnv {
    type Target = Cluster;
    fn deref(&self) -> &Cluster {
        &self.base
    }
}

impl DirEnv {
    /// `files`: (plugin or fixture name, file name in the directory).
    async fn start(test: &str, files: &[(&str, &str)]) -> DirEnv {
        Self::start_with_settings(test, files, &[]).await
    }

    /// Like [`DirEnv::start`], with settings files (file name, text) in place.
    async fn start_with_settings(test: &str, files: &[(&str, &str)], settings: &[(&str, &str)]) -> DirEnv {
        Self::start_with(test, files, settings, true).await
    }

    /// Like [`DirEnv::start_with_settings`]; `install_crds` as `kubewasm dev` (true) or `run` (false).
    async fn start_with(test: &str, files: &[(&str, &str)], settings: &[(&str, &str)], install_crds: bool) -> DirEnv {
        let dir = std::env::temp_dir().join(format!("kubewasm-reload-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("plugin dir");
        for (source, file) in files {
            std::fs::copy(wasm_path(source), dir.join(file)).expect("copy plugin");
        }
        for (file, text) in settings {
            std::fs::write(dir.join(file), text).expect("write settings");
        }
        let base = Cluster::start().await;
        let engine = Engine::with_options(&EngineOptions { pooling: true, tiered: true, ..EngineOptions::default() })
            .expect("engine");
        let options = runtime::Options { install_crds, controller: quick(), ..runtime::Options::default() };
        let metrics = options.controller.metrics.clone();
        let host = Runtime::from_dir(&base.client, &engine, &dir, options).await.expect("host");
        let seen = Arc::new(Mutex::new(Seen::default()));
        seen.lock().expect("seen").record(&host);
        let record = seen.clone();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let shutdown = async {
                let _ = stopped.await;
            };
            host.watch(shutdown, move |h| record.lock().expect("status").record(h))
                .await
                .expect("the directory is watched");
        });
        DirEnv { base, dir, seen, metrics, stop, task }
    }

    fn status(&self, file: &str) -> Option<PluginStatus> {
        let path = self.dir.join(file).display().to_string();
        self.seen.lock().expect("status").status.iter().find(|s| s.file == path).cloned()
    }

    /// The value of one series of the host's metrics (`name{labels}`), 0 if absent.
    fn series(&self, series: &str) -> f64 {
        let text = self.metrics.encode();
        samples(&text).find(|(s, _)| *s == series).map_or(0.0, |(_, value)| value)
    }

    /// `kubewasm_plugin_reloads_total` of `file` with `result`.
    fn reloads(&self, file: &str, result: &str) -> f64 {
        let file = self.dir.join(file).display().to_string();
        self.series(&format!(r#"kubewasm_plugin_reloads_total{{file="{file}",result="{result}"}}"#))
    }

    fn compiles(&self) -> u64 {
        self.seen.lock().expect("status").compiles
    }

    /// Every error the host has shown since it started.
    fn errors_shown(&self) -> Vec<String> {
        self.seen.lock().expect("status").errors.clone()
    }

    /// The plugin the controller of `name` runs.
    fn running(&self, name: &str) -> Option<Arc<Plugin>> {
        self.seen.lock().expect("status").running.iter().find(|p| p.manifest().name == name).cloned()
    }

    async fn until(&self, what: &str, check: impl Fn(&DirEnv) -> bool) {
        eventually(what, || async { check(self).then_some(()) }).await;
    }

    /// Replaces a file the way build tools and `cp` do: written in place.
    fn put(&self, file: &str, bytes: &[u8]) {
        std::fs::write(self.dir.join(file), bytes).expect("write plugin file");
    }

    async fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.task.await;
        self.base.stop().await;
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).expect("read plugin")
}

fn demo_app(name: &str, replica: i64) -> serde_json::Value {
    json!({"apiVersion": "paas.cmft.com/v1beta1", "kind": "DemoApplication",
           "metadata": {"name": name, "namespace": "default"},
           "spec": {"image": "nginx", "replica": replica, "ports": [{"port": 80}]}})
}

fn demo_applications() -> kube::discovery::ApiResource {
    resource("paas.cmft.com", "v1beta1", "DemoApplication", "demoapplications")
}

fn foos() -> kube::discovery::ApiResource {
    resource("samplecontroller.k8s.io", "v1alpha1", "Foo", "foos")
}

fn foo(name: &str) -> serde_json::Value {
    json!({"apiVersion": "samplecontroller.k8s.io/v1alpha1", "kind": "Foo",
           "metadata": {"name": name, "namespace": "default"},
           "spec": {"deploymentName": format!("{name}-nginx"), "replicas": 1}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_version_takes_over_and_a_corrupt_one_never_does() {
    let env = DirEnv::start("takeover", &[("demo-application", "demo-application.wasm")]).await;
    env.create(&demo_applications(), demo_app("web", 1)).await;
    let before = wait_for(&env, &deployments(), "web", "the Deployment", |_| true).await;
    assert!(before["metadata"]["labels"].get("kubewasm.io/version").is_none());

    env.put("demo-application.wasm", &read(&wasm_path("demo-relabel")));
    let relabelled = wait_for(&env, &deployments(), "web", "the new version's label on the existing Deployment", |d| {
        d["metadata"]["labels"]["kubewasm.io/version"] == "v2"
    })
    .await;
    assert_eq!(relabelled["metadata"]["uid"], before["metadata"]["uid"], "updated in place, not recreated");
    wait_for(&env, &services(), "web", "the label on the Service too", |s| {
        s["metadata"]["labels"]["kubewasm.io/version"] == "v2"
    })
    .await;
    // v2's CRD, installed with it, keeps the field it adds.
    env.merge(&demo_applications(), "web", json!({"spec": {"tier": "gold"}})).await;
    let parent = env.get(&demo_applications(), "web").await.expect("the parent");
    assert_eq!(parent.data["spec"]["tier"], "gold", "the field v2's CRD adds was pruned: its CRD was not installed");
    let v2 = env.status("demo-application.wasm").expect("status").hash;
    assert!(env.reloads("demo-application.wasm", "success") >= 2.0, "the first version and v2 were loaded");
    let version = |hash: &str| format!(r#"kubewasm_plugin_version_info{{plugin="demo-application",sha256="{hash}"}}"#);
    assert_eq!(env.series(&version(v2.as_deref().expect("a hash"))), 1.0, "v2 is the version reported");
    let failed_before = env.reloads("demo-application.wasm", "error");

    env.put("demo-application.wasm", b"\0asm\x0d\0\x01\0 truncated by a bad copy");
    env.until("the corrupt file reported", |e| e.status("demo-application.wasm").and_then(|s| s.error).is_some()).await;
    let status = env.status("demo-application.wasm").expect("status");
    assert!(status.error.as_deref().unwrap_or_default().contains("demo-application.wasm"), "{status:?}");
    assert!(status.running, "the last good version keeps running");
    assert_eq!(status.hash, v2, "still the v2 version");
    assert!(env.reloads("demo-application.wasm", "error") > failed_before, "the failed reload is counted");
    assert_eq!(env.series(&version(v2.as_deref().expect("a hash"))), 1.0, "v2 is still the version reported");

    env.merge(&demo_applications(), "web", json!({"spec": {"replica": 4}})).await;
    let d =
        wait_for(&env, &deployments(), "web", "replicas 4 from the running version", |d| d["spec"]["replicas"] == 4)
            .await;
    assert_eq!(d["metadata"]["labels"]["kubewasm.io/version"], "v2");
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_still_being_written_is_not_loaded_until_its_writer_closes_it() {
    use std::io::Write as _;
    let env = DirEnv::start("partial", &[("demo-application", "demo-application.wasm")]).await;
    env.create(&demo_applications(), demo_app("web", 1)).await;
    wait_for(&env, &deployments(), "web", "the Deployment", |_| true).await;
    let v1 = env.status("demo-application.wasm").and_then(|s| s.hash);

    // A slow copy: half the new version written, the file still open.
    let v2 = read(&wasm_path("demo-relabel"));
    let mut file = std::fs::File::create(env.dir.join("demo-application.wasm")).expect("open for writing");
    file.write_all(&v2[..v2.len() / 2]).expect("first half");
    file.flush().expect("flush");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let status = env.status("demo-application.wasm").expect("status");
    assert_eq!(
        (status.hash, status.error, status.running),
        (v1, None, true),
        "half a file is neither loaded nor an error"
    );

    file.write_all(&v2[v2.len() / 2..]).expect("second half");
    drop(file);
    wait_for(&env, &deployments(), "web", "the new version, once the file is whole", |d| {
        d["metadata"]["labels"]["kubewasm.io/version"] == "v2"
    })
    .await;
    assert_eq!(env.errors_shown(), Vec::<String>::new(), "no error was ever shown for the half-written file");
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_optimised_code_replaces_the_baseline_without_a_visible_change() {
    let env = DirEnv::start("tiers", &[("demo-application", "demo-application.wasm")]).await;
    let plugin = env.running("demo-application").expect("the controller's plugin");
    assert_eq!(plugin.tier(), Tier::Baseline, "a component the cache lacks starts on baseline code");
    env.create(&demo_applications(), demo_app("web", 2)).await;
    wait_for(&env, &deployments(), "web", "the Deployment", |_| true).await;
    let reconciles = r#"kubewasm_reconciles_total{plugin="demo-application",result="success"}"#;
    let counts = || (env.cluster.write_requests(), env.series(reconciles));
    // Converged on baseline code (the optimising compile of a 1 MiB component takes
    // seconds on its low-priority thread): nothing more is written.
    let converged = eventually("the cluster converged", || async {
        let before = counts();
        tokio::time::sleep(Duration::from_millis(300)).await;
        (counts() == before).then_some(before)
    })
    .await;
    assert_eq!(plugin.tier(), Tier::Baseline, "converged before the optimised code was ready");
    let status = env.status("demo-application.wasm").expect("status");
    let deployment = env.get(&deployments(), "web").await.expect("the Deployment");

    // The optimising compile runs on one thread at nice 10: on a machine whose cores
    // are busy with other work it gets a small share of one, and may take minutes.
    eventually_within(Duration::from_secs(600), "the optimised code in place", || async {
        (plugin.tier() == Tier::Optimized).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Invisible: no restart, no reconcile, no write; the same version shown.
    assert_eq!(counts(), converged, "nothing reconciled or written");
    assert_eq!(env.status("demo-application.wasm"), Some(status), "the same version, running");
    let unchanged = env.get(&deployments(), "web").await.expect("the Deployment");
    assert_eq!(unchanged.metadata.resource_version, deployment.metadata.resource_version);
    let running = env.running("demo-application").expect("plugin");
    assert_eq!(running.hash(), plugin.hash(), "the same version");
    assert_eq!(running.tier(), Tier::Optimized, "the controller's copy runs the optimised code");

    // The optimised code acts as the baseline code did.
    env.merge(&demo_applications(), "web", json!({"spec": {"replica": 5}})).await;
    wait_for(&env, &deployments(), "web", "replicas 5 from the optimised code", |d| d["spec"]["replicas"] == 5).await;
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_added_plugin_starts_and_a_removed_one_stops_leaving_its_children() {
    let env = DirEnv::start("add-remove", &[("demo-application", "demo-application.wasm")]).await;
    env.put("foo.wasm", &read(&wasm_path("foo")));
    env.until("foo running", |e| e.status("foo.wasm").is_some_and(|s| s.running)).await;
    env.create(&foos(), foo("first")).await;
    wait_for(&env, &deployments(), "first-nginx", "the new plugin reconciling its CRD kind", |_| true).await;

    std::fs::remove_file(env.dir.join("foo.wasm")).expect("remove foo.wasm");
    env.until("foo gone", |e| e.status("foo.wasm").is_none()).await;
    env.create(&foos(), foo("second")).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(env.get(&deployments(), "second-nginx").await.is_none(), "a removed plugin reconciles nothing");
    assert!(env.get(&deployments(), "first-nginx").await.is_some(), "its children stay");
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_contract_restarts_the_controller() {
    let env = DirEnv::start("contract", &[("demo-application", "app.wasm")]).await;
    env.put("app.wasm", &read(&wasm_path("foo")));
    env.until("the file now runs foo", |e| {
        e.status("app.wasm").is_some_and(|s| s.running && s.name.as_deref() == Some("foo"))
    })
    .await;
    env.create(&foos(), foo("switched")).await;
    wait_for(&env, &deployments(), "switched-nginx", "foo reconciling", |_| true).await;
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settings_apply_without_recompiling() {
    let settings = [("misbehave.toml", "[config]\nmode = \"error\"\n")];
    let env = DirEnv::start_with_settings("settings", &[("misbehave", "misbehave.wasm")], &settings).await;
    let misbehaves = resource("test.kubewasm.io", "v1", "Misbehave", "misbehaves");
    env.create(&misbehaves, json!({"apiVersion": "test.kubewasm.io/v1", "kind": "Misbehave", "metadata": {"name": "m", "namespace": "default"}})).await;
    eventually("the configured error", || async {
        (!env.events("m", "ReconcileError").await.is_empty()).then_some(())
    })
    .await;

    env.put("misbehave.toml", b"[config]\nmode = \"behave\"\n");
    wait_for(&env, &deployments(), "m", "the Deployment once configured to behave", |_| true).await;
    assert_eq!(env.compiles(), 1, "a settings change does not recompile");

    env.put("misbehave.toml", b"enabled = false\n");
    env.until("disabled", |e| e.status("misbehave.wasm").is_some_and(|s| !s.running)).await;
    env.put("misbehave.toml", b"enabled = tru\n");
    env.until("bad settings reported", |e| e.status("misbehave.wasm").and_then(|s| s.error).is_some()).await;
    let error = env.status("misbehave.wasm").and_then(|s| s.error).expect("error");
    assert!(error.contains("misbehave.toml") && error.contains("line 1"), "{error}");
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_that_panics_in_describe_is_refused_and_the_others_run() {
    let env = DirEnv::start(
        "describe",
        &[("bad-describe", "bad-describe.wasm"), ("demo-application", "demo-application.wasm")],
    )
    .await;
    let bad = env.status("bad-describe.wasm").expect("status of the bad file");
    assert!(!bad.running);
    let error = bad.error.expect("an error");
    assert!(error.contains("bad-describe.wasm") && error.contains("bad-describe cannot say what it is"), "{error}");
    env.create(&demo_applications(), demo_app("web", 1)).await;
    wait_for(&env, &deployments(), "web", "the good plugin converging", |_| true).await;
    env.stop().await;
}

#[test]
fn a_restart_loads_compiled_plugins_from_the_cache() {
    let cache = std::env::temp_dir().join(format!("kubewasm-cache-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&cache);
    let options = EngineOptions { cache_dir: Some(cache.clone()), ..EngineOptions::default() };
    let first = Plugin::load(&Engine::with_options(&options).expect("engine"), &wasm_path("foo")).expect("load");
    assert!(!first.from_cache(), "nothing cached yet");
    let again = Plugin::load(&Engine::with_options(&options).expect("engine"), &wasm_path("foo")).expect("load");
    assert!(again.from_cache(), "a new engine (a restart) finds the compiled plugin");
    assert_eq!(again.manifest(), first.manifest());
    std::fs::remove_dir_all(&cache).expect("clean up");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_whose_kind_is_not_served_yet_starts_once_it_is() {
    // As under `kubewasm run`, where nobody installs the plugin's CRD for it.
    let env = DirEnv::start_with("late-crd", &[("gate", "gate.wasm")], &[], false).await;
    let waiting = eventually("the plugin to wait for its kind", || async {
        env.status("gate.wasm").filter(|s| s.waiting_for.is_some())
    })
    .await;
    assert!(!waiting.running);
    assert_eq!(waiting.waiting_for.as_deref(), Some("test.kubewasm.io/v1 Gate"));
    assert_eq!(waiting.error, None, "waiting is not an error");

    let plugin = Plugin::load(&Engine::new().expect("engine"), &wasm_path("gate")).expect("gate loads");
    kubewasm::runtime::install_crds(&env.client, &[Arc::new(plugin)]).await.expect("CRD installed");
    eventually("the controller to start", || async { env.status("gate.wasm").filter(|s| s.running) }).await;
    env.create(&gates(), gate("late", true)).await;
    let configmaps = resource("", "v1", "ConfigMap", "configmaps");
    wait_for(&env, &configmaps, "late-gate", "the Gate's ConfigMap", |_| true).await;
    env.stop().await;
}
