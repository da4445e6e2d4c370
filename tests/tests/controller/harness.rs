//! A cluster with plugins running on it, and the waiting that end-to-end tests need.

use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use k8s_openapi::api::core::v1::Event;
use kube::Client;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::discovery::ApiResource;
use kubewasm::controller::Options;
use kubewasm::plugin::{Engine, KindRef, Plugin};
use kubewasm::runtime::{self, Runtime};
use kubewasm_devcluster::{self as devcluster, DevCluster};
use serde_json::{Value, json};

/// How long a test waits for the host to converge before it fails.
const PATIENCE: Duration = Duration::from_secs(20);

/// The built component of an example plugin or a fixture.
pub fn wasm_path(name: &str) -> PathBuf {
    kubewasm_tests::wasm_path(name)
}

/// The engine and the plugins it compiled, by name.
type Compiled = (Engine, Mutex<HashMap<String, Arc<Plugin>>>);

/// Plugins are compiled once per test binary and shared: compiling is the slow part.
pub fn plugin(name: &str) -> Arc<Plugin> {
    static CACHE: OnceLock<Compiled> = OnceLock::new();
    let (engine, plugins) = CACHE.get_or_init(|| (Engine::new().expect("engine"), Mutex::default()));
    let mut plugins = plugins.lock().expect("plugin cache");
    plugins
        .entry(name.to_string())
        .or_insert_with(|| Arc::new(Plugin::load(engine, &wasm_path(name)).expect("plugin loads")))
        .clone()
}

/// Controller settings for tests: a short debounce, so tests wait less.
pub fn quick() -> Options {
    Options { debounce: Duration::from_millis(10), ..Options::default() }
}

/// A fresh embedded API server and a client for it.
pub struct Cluster {
    pub cluster: DevCluster,
    pub client: Client,
}

/// A cluster with the named plugins' CRDs installed and their controllers running, the host
/// as the service account `kubewasm rbac` makes for those plugins, with exactly that RBAC.
pub struct Env {
    base: Cluster,
    pub host: Runtime,
    /// The host's client: the service account's, not the administrator's.
    pub host_client: Client,
}

impl std::ops::Deref for Env {
    type Target = Cluster;
    fn deref(&self) -> &Cluster {
        &self.base
    }
}

impl Env {
    pub async fn start(plugins: &[&str]) -> Env {
        Self::start_with(plugins.iter().map(|p| (*p, Value::Null)).collect()).await
    }

    /// Like [`Env::start`], with each plugin's `config`.
    pub async fn start_with(plugins: Vec<(&str, Value)>) -> Env {
        Self::start_with_options(
            plugins.into_iter().map(|(name, config)| (name, Options { config, ..quick() })).collect(),
        )
        .await
    }

    /// Like [`Env::start`], with each plugin's controller options. The CRDs are installed by
    /// the administrator, as on a cluster before the host runs.
    pub async fn start_with_options(plugins: Vec<(&str, Options)>) -> Env {
        Self::start_as(plugins, false, &[]).await
    }

    /// Like [`Env::start`], each plugin reading and writing as its own account
    /// (`kubewasm run --plugin-identities`), with the RBAC `kubewasm rbac
    /// --plugin-identities` prints.
    pub async fn start_with_identities(plugins: &[&str]) -> Env {
        Self::start_as(plugins.iter().map(|p| (*p, quick())).collect(), true, &[]).await
    }

    /// Like [`Env::start_with_identities`], each plugin with its `config`, and the host's
    /// own check of answers switched off for children of `unchecked` kinds: the host writes
    /// them as the plugin's account, whose RBAC `kubewasm rbac` made from what the plugin
    /// really declares.
    pub async fn start_unchecked_with_identities(plugins: Vec<(&str, Value)>, unchecked: &[KindRef]) -> Env {
        let plugins = plugins.into_iter().map(|(name, config)| (name, Options { config, ..quick() })).collect();
        Self::start_as(plugins, true, unchecked).await
    }

    async fn start_as(plugins: Vec<(&str, Options)>, identities: bool, unchecked: &[KindRef]) -> Env {
        let base = Cluster::start().await;
        let loaded: Vec<Arc<Plugin>> = plugins
            .iter()
            .map(|(name, _)| match unchecked {
                [] => plugin(name),
                kinds => Arc::new(Plugin::clone(&plugin(name)).unchecked_children(kinds)),
            })
            .collect();
        runtime::install_crds(&base.client, &loaded).await.expect("CRDs install");
        let paths: Vec<PathBuf> = plugins.iter().map(|(name, _)| wasm_path(name)).collect();
        let kubewasm = kubewasm_tests::kubewasm_binary();
        let kubeconfig = if identities {
            kubewasm_tests::host_kubeconfig_with_identities(&base.cluster, &kubewasm, &paths).await
        } else {
            kubewasm_tests::host_kubeconfig(&base.cluster, &kubewasm, &paths).await
        };
        let host_client = DevCluster::client_from(&kubeconfig).await.expect("the host's client");
        let with_options = loaded.into_iter().zip(plugins).map(|(p, (_, options))| (p, options)).collect();
        let identities = identities.then(|| runtime::Identities { namespace: kubewasm_tests::HOST_ACCOUNT.0.into() });
        let host = Runtime::start_as(&host_client, with_options, identities).await;
        Env { base, host, host_client }
    }

    pub async fn stop(self) {
        self.host.stop().await;
        self.base.stop().await;
    }
}

impl Cluster {
    pub async fn start() -> Cluster {
        kubewasm_tests::watchdog();
        let cluster = DevCluster::start(devcluster::Options::default()).await.expect("API server starts");
        let client = cluster.client();
        Cluster { cluster, client }
    }

    pub fn api(&self, resource: &ApiResource, namespace: &str) -> Api<DynamicObject> {
        Api::namespaced_with(self.client.clone(), namespace, resource)
    }

    /// Creates `object` (JSON with apiVersion, kind, metadata) in `default`.
    pub async fn create(&self, resource: &ApiResource, object: Value) -> DynamicObject {
        let object: DynamicObject = serde_json::from_value(object).expect("object JSON");
        self.api(resource, "default").create(&PostParams::default(), &object).await.expect("create")
    }

    /// Merge-patches `name` as a person with kubectl would.
    pub async fn merge(&self, resource: &ApiResource, name: &str, patch: Value) -> DynamicObject {
        self.api(resource, "default")
            .patch(name, &PatchParams::default(), &Patch::Merge(patch))
            .await
            .expect("merge patch")
    }

    pub async fn get(&self, resource: &ApiResource, name: &str) -> Option<DynamicObject> {
        self.api(resource, "default").get_opt(name).await.expect("get")
    }

    /// Events recorded on the object named `name` with `reason`.
    pub async fn events(&self, name: &str, reason: &str) -> Vec<Event> {
        let api: Api<Event> = Api::namespaced(self.client.clone(), "default");
        let events = api.list(&ListParams::default()).await.expect("list events");
        events
            .items
            .into_iter()
            .filter(|e| e.involved_object.name.as_deref() == Some(name) && e.reason.as_deref() == Some(reason))
            .collect()
    }

    pub async fn stop(self) {
        self.cluster.shutdown().await;
    }
}

/// The samples of a metrics exposition: each series (name and labels) and its value.
pub fn samples(text: &str) -> impl Iterator<Item = (&str, f64)> {
    text.lines().filter(|l| !l.starts_with('#')).filter_map(|l| {
        let (series, value) = l.rsplit_once(' ')?;
        Some((series, value.parse().ok()?))
    })
}

/// The sum of every series of the metric `name` in `host`'s metrics, across its
/// controllers.
pub fn metric_sum(host: &Runtime, name: &str) -> f64 {
    host.plugins()
        .filter_map(|p| host.controller(p))
        .map(|c| {
            let text = c.metrics().encode();
            samples(&text)
                .filter(|(series, _)| {
                    series.strip_prefix(name).is_some_and(|rest| rest.is_empty() || rest.starts_with('{'))
                })
                .map(|(_, value)| value)
                .sum::<f64>()
        })
        .sum()
}

/// Polls `check` until it returns `Some`, or fails the test naming `what`.
pub async fn eventually<T, F, Fut>(what: &str, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    kubewasm_tests::eventually_within(PATIENCE, what, check).await
}

/// Waits until `check` holds for an object that may not exist yet.
pub async fn wait_for(
    env: &Cluster,
    resource: &ApiResource,
    name: &str,
    what: &str,
    check: impl Fn(&Value) -> bool,
) -> Value {
    eventually(what, || async {
        let object = env.get(resource, name).await?;
        let json = serde_json::to_value(&object).expect("object JSON");
        check(&json).then_some(json)
    })
    .await
}

/// Waits until the object is gone.
pub async fn wait_gone(env: &Cluster, resource: &ApiResource, name: &str, what: &str) {
    eventually(what, || async { env.get(resource, name).await.is_none().then_some(()) }).await;
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

pub fn deployments() -> ApiResource {
    resource("apps", "v1", "Deployment", "deployments")
}

pub fn services() -> ApiResource {
    resource("", "v1", "Service", "services")
}

pub fn pods() -> ApiResource {
    resource("", "v1", "Pod", "pods")
}

pub fn configmaps() -> ApiResource {
    resource("", "v1", "ConfigMap", "configmaps")
}

pub fn gates() -> ApiResource {
    resource("test.kubewasm.io", "v1", "Gate", "gates")
}

/// A Pod in `default` labelled `app: APP`.
pub fn pod(name: &str, app: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default", "labels": {"app": app}},
           "spec": {"containers": [{"name": "app", "image": "nginx"}]}})
}

/// A Service in `default` selecting the Pods `selector` matches.
pub fn service(name: &str, selector: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": "default"},
           "spec": {"selector": selector, "ports": [{"port": 80}]}})
}

/// A `Gate` (the `gate` fixture) in `default`: its finalizer holds its deletion while
/// it is not `open`.
pub fn gate(name: &str, open: bool) -> Value {
    json!({"apiVersion": "test.kubewasm.io/v1", "kind": "Gate", "metadata": {"name": name, "namespace": "default"},
           "spec": {"open": open}})
}
