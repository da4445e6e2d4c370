//! A host as an operator runs it: a plugin directory with the component and its
//! `NAME.toml`, on a fresh embedded API server, stopped and started again at will (the
//! cluster stays), and the waiting that end-to-end tests need.

use std::future::Future;
use std::time::Duration;

use kube::Client;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::discovery::ApiResource;
use kubewasm::controller;
use kubewasm::plugin::Engine;
use kubewasm::runtime::{self, Runtime};
use kubewasm::webhook::Webhooks;
use kubewasm_devcluster::{self as devcluster, DevCluster};
use serde_json::Value;

/// How long a test waits for something before it fails.
pub const PATIENCE: Duration = Duration::from_secs(30);

/// A cluster and a host running one plugin from a plugin directory.
pub struct Host {
    pub cluster: DevCluster,
    pub client: Client,
    engine: Engine,
    dir: tempfile::TempDir,
    runtime: Option<Runtime>,
    /// The plugins whose webhooks are served, kept by every start of the host.
    pub webhooks: Webhooks,
}

impl Host {
    /// A fresh cluster; the component of plugin `plugin` copied into a plugin directory
    /// as `name.wasm`, with `settings` as `name.toml`; the host started on it.
    pub async fn start(plugin: &str, name: &str, settings: &str) -> Host {
        let mut host = Host::stopped(plugin, name, settings).await;
        host.run().await;
        host
    }

    /// The same, but the host not started yet: the cluster may get objects before the
    /// plugin is first loaded.
    pub async fn stopped(plugin: &str, name: &str, settings: &str) -> Host {
        kubewasm_tests::watchdog();
        let cluster = DevCluster::start(devcluster::Options::default()).await.expect("API server starts");
        let client = cluster.client();
        let dir = tempfile::tempdir().expect("plugin directory");
        std::fs::copy(kubewasm_tests::wasm_path(plugin), dir.path().join(format!("{name}.wasm")))
            .expect("copy the plugin");
        std::fs::write(dir.path().join(format!("{name}.toml")), settings).expect("write the settings");
        Host { cluster, client, engine: Engine::new().expect("engine"), dir, runtime: None, webhooks: Webhooks::new() }
    }

    /// Starts the host (again) on the plugin directory.
    pub async fn run(&mut self) {
        let options = runtime::Options {
            install_crds: true,
            controller: controller::Options { debounce: Duration::from_millis(10), ..controller::Options::default() },
            host_namespace: "default".into(),
            webhooks: self.webhooks.clone(),
            ..runtime::Options::default()
        };
        let runtime = Runtime::from_dir(&self.client, &self.engine, self.dir.path(), options).await.expect("host");
        for status in runtime.status() {
            assert!(status.error.is_none(), "{}: {:?}", status.file, status.error);
        }
        // Once the plugin waits for no kind (its CRDs just installed) and its watches
        // have listed once.
        let mut runtime = runtime;
        let deadline = tokio::time::Instant::now() + PATIENCE;
        while runtime.status().iter().any(|s| s.waiting_for.is_some()) {
            assert!(tokio::time::Instant::now() < deadline, "the plugin still waits: {:?}", runtime.status());
            tokio::time::sleep(Duration::from_millis(100)).await;
            runtime.start_waiting().await;
        }
        assert!(runtime.wait_synced(PATIENCE).await, "the plugin's watches did not list within {PATIENCE:?}");
        self.runtime = Some(runtime);
    }

    /// Stops the host; the cluster stays.
    pub async fn halt(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.stop().await;
        }
    }

    /// Replaces the plugin's file `name.wasm` with the component of `plugin` and loads it now.
    pub async fn replace(&mut self, plugin: &str, name: &str) {
        let staged = self.dir.path().join(format!(".{name}.wasm.new"));
        std::fs::copy(kubewasm_tests::wasm_path(plugin), &staged).expect("copy the plugin");
        std::fs::rename(&staged, self.dir.path().join(format!("{name}.wasm"))).expect("replace the plugin");
        if let Some(runtime) = self.runtime.as_mut() {
            runtime.rescan().await.expect("rescan");
        }
    }

    /// Rewrites the plugin's settings and applies them now.
    pub async fn settings(&mut self, name: &str, settings: &str) {
        std::fs::write(self.dir.path().join(format!("{name}.toml")), settings).expect("write the settings");
        if let Some(runtime) = self.runtime.as_mut() {
            runtime.rescan().await.expect("rescan");
        }
    }

    pub fn runtime(&self) -> &Runtime {
        self.runtime.as_ref().expect("the host runs")
    }

    pub async fn stop(mut self) {
        self.halt().await;
        self.cluster.shutdown().await;
    }

    pub fn api(&self, resource: &ApiResource, namespace: &str) -> Api<DynamicObject> {
        Api::namespaced_with(self.client.clone(), namespace, resource)
    }

    /// Creates `object` in `default`.
    pub async fn create(&self, resource: &ApiResource, object: Value) -> DynamicObject {
        let object: DynamicObject = serde_json::from_value(object).expect("object JSON");
        self.api(resource, "default").create(&PostParams::default(), &object).await.expect("create")
    }

    /// Merge-patches `name` in `default`.
    pub async fn merge(&self, resource: &ApiResource, name: &str, patch: Value) -> DynamicObject {
        self.api(resource, "default").patch(name, &PatchParams::default(), &Patch::Merge(patch)).await.expect("merge")
    }

    pub async fn delete(&self, resource: &ApiResource, name: &str) {
        self.api(resource, "default").delete(name, &Default::default()).await.expect("delete");
    }

    pub async fn get(&self, resource: &ApiResource, name: &str) -> Option<DynamicObject> {
        self.api(resource, "default").get_opt(name).await.expect("get")
    }

    /// Events (`events.k8s.io`) with `reason` recorded on objects in `default`.
    pub async fn events(&self, reason: &str) -> Vec<k8s_openapi::api::events::v1::Event> {
        let api: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(self.client.clone(), "default");
        let events = api.list(&ListParams::default()).await.expect("list events");
        events.items.into_iter().filter(|e| e.reason.as_deref() == Some(reason)).collect()
    }

    /// The sum of the series of metric `name` whose labels contain every `labels` pair.
    pub fn metric(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        let text = self.runtime().metrics().encode();
        text.lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| l.rsplit_once(' '))
            .filter(|(series, _)| series.strip_prefix(name).is_some_and(|r| r.is_empty() || r.starts_with('{')))
            .filter(|(series, _)| labels.iter().all(|(k, v)| series.contains(&format!("{k}=\"{v}\""))))
            .filter_map(|(_, value)| value.parse::<f64>().ok())
            .sum()
    }
}

/// Polls `check` until it returns `Some`, or fails the test naming `what`.
pub async fn eventually<T, F, Fut>(what: &str, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    kubewasm_tests::eventually_within(PATIENCE, what, check).await
}

/// Waits `quiet` and asserts that `count` did not change meanwhile: nothing more arrives.
pub async fn stays(what: &str, quiet: Duration, count: impl Fn() -> usize) {
    let before = count();
    tokio::time::sleep(quiet).await;
    assert_eq!(count(), before, "{what}: more arrived after {quiet:?}");
}

pub fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: if group.is_empty() { version.into() } else { format!("{group}/{version}") },
        kind: kind.into(),
        plural: plural.into(),
    }
}
