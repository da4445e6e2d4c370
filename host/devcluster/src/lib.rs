//! A Kubernetes API server in process: the cluster of `kubewasm dev` and of every end-to-end test,
//! and of any kube-rs test suite that wants a real API server without Go or a cluster.
//!
//! [`DevCluster::start`] serves the Kubernetes HTTP API on loopback from memory, so the real
//! `kube` client and the real `kubectl` work against it unchanged: discovery of every stable
//! built-in kind of its Kubernetes version (from the upstream definitions in `data/`), CRDs
//! registered at run time with schema validation, CEL rules and conversion webhooks,
//! `ValidatingAdmissionPolicies`, admission webhooks, `/openapi/v2` and `/openapi/v3`,
//! get/list/watch, create/update/patch (merge, JSON, strategic, server-side apply), delete with
//! finalizers and garbage collection. It is not a scheduler or a kubelet: nothing runs Pods.
//!
//! ```no_run
//! # async fn demo() -> Result<(), kubewasm_devcluster::Error> {
//! use kubewasm_devcluster::{DevCluster, Options};
//! let cluster = DevCluster::start(Options::default()).await?;
//! println!("kubectl --kubeconfig {}", cluster.kubeconfig_path().display());
//! let client = cluster.client();
//! # drop(client);
//! cluster.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! Reading the code: `server` holds the layers every request passes and its routes,
//! `pipeline` the stages of a write, `kinds` and `crd` the strategies that say what differs
//! between kinds; the README's "Layers" section draws the whole.
//!
//! Where it differs from a real API server (each is a place where a test could pass here and
//! fail on a cluster):
//! - no controllers besides garbage collection, namespace and CRD cleanup: Deployments get no
//!   `ReplicaSets` or Pods, Jobs never run, Pods stay `Pending`, no status is written for you;
//! - built-ins are decoded by their upstream definitions (types, unknown fields) and checked by a
//!   few rules of the real validation (names, selectors, containers, ports, a Job's restart
//!   policy) and by the update rules of the common kinds (immutable selectors, a `StatefulSet`'s
//!   spec, a Job's template, a Service's cluster IP, immutable `ConfigMaps` and Secrets, a
//!   binding's roleRef, a Pod's spec), not all of it; messages upstream ends with a diff stop
//!   before it; defaults are those of the common kinds (`src/kinds`), not of every field (no
//!   probe or volume source defaults, no HPA `behavior` defaults), and pod templates lack the
//!   `creationTimestamp: null` a real server prints;
//!   CRD schemas are enforced except the rarer string `format`s; CEL rules and admission
//!   policies run without a type checker or cost limits (the `cel` crate has neither), and
//!   policies skip DELETE, `authorizer` and `Audit`;
//! - admission and conversion webhooks are called over HTTPS as kube-apiserver calls them
//!   (see the README), but when several validating webhooks refuse, the first in configuration
//!   order is reported (upstream: the first to answer), match conditions have no `authorizer`,
//!   `auditAnnotations` are ignored, and a `service` reference without endpoints leads to
//!   `127.0.0.1` at its target port (no cluster network);
//! - `managedFields` of ordinary updates to built-ins can differ in `.` entries, because the real
//!   server compares against Go zero values (`tests/conformance/smd/README.md` lists the
//!   structured-merge-diff scenarios that run here and those that cannot);
//! - a protobuf body's explicit zero (`replicas: 0`, `false`, `""`) reads as unset (see
//!   `protobuf`); answers are always JSON, and `/openapi/v2` is served as JSON only;
//! - no authentication, authorization (every review is allowed); no aggregated discovery;
//!   `autoscaling/v1` `HorizontalPodAutoscaler`s are not served (only `v2`); subresources
//!   other than `status` and `scale` (logs, exec, eviction, binding, tokens, ephemeral
//!   containers) are not served.

#![warn(clippy::pedantic)]
// Accessors like `DevCluster::url` have nothing to add beyond their name.
#![allow(clippy::must_use_candidate)]

// The value types: they import nothing of the server.
mod allocator;
mod builtins;
mod names;
mod object;
mod printers;
mod request_info;
mod resource;
mod status;
mod user;

// Mechanisms over objects and the upstream data, the same for every kind.
mod apply;
mod cel;
mod compare;
mod decode;
mod kubeconfig;
mod metadata;
mod patch;
mod protobuf;
mod selectors;
mod webhook;

// Storage: objects, versions, history and indexes.
mod store;

// What differs between kinds, and the kinds.
mod admission;
mod conversion;
mod crd;
mod kinds;
mod strategy;

// The served resources and the state one lock guards.
mod cluster;
mod discovery;
mod openapi;
mod registry;

// Requests: reads, the write pipeline, how answers are rendered.
mod pipeline;
mod present;
mod read;
mod request;
mod table;

// What runs beside requests, and the HTTP server.
mod faults;
mod gc;
mod persist;
mod server;
mod state;
mod watch;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::task::JoinHandle;

use self::cluster::Cluster;
pub use self::compare::comparable;
pub use self::faults::{ErrorFault, Faults, FaultsError, StaleReads, WatchFaults};
use self::state::Shared;
pub use self::store::Lifecycle;

/// How to start a [`DevCluster`]. `Options::default()` is an ephemeral, in-memory server on a
/// free port with its kubeconfig in the temporary directory.
#[derive(Debug, Clone)]
pub struct Options {
    /// Where the store is persisted (`store.json`) and reloaded from; `None` keeps it in memory.
    pub data_dir: Option<PathBuf>,
    /// The loopback port; `None` picks a free one.
    pub port: Option<u16>,
    /// Where to write the kubeconfig; by default `<data_dir>/kubeconfig`, or a file in the
    /// temporary directory (removed at shutdown) without a data directory.
    pub kubeconfig_path: Option<PathBuf>,
    /// How many past changes are kept for watches that resume from a resourceVersion; older
    /// versions get `410 Gone`, as after an etcd compaction.
    pub watch_history: usize,
    /// How often a watch that asked for bookmarks receives one.
    pub bookmark_interval: Duration,
    /// Faults to inject from the start; see [`DevCluster::set_faults`].
    pub faults: Option<Faults>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            data_dir: None,
            port: None,
            kubeconfig_path: None,
            watch_history: 10_000,
            bookmark_interval: Duration::from_mins(1),
            faults: None,
        }
    }
}

/// Ways [`DevCluster::start`] can fail.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The port could not be bound (in use, or not allowed). Pick another or leave it unset.
    #[error("could not listen on 127.0.0.1:{port}: {source}")]
    Bind { port: u16, source: std::io::Error },
    /// The data directory could not be created or its snapshot read. Fix or remove the directory.
    #[error("could not use the data directory {path}: {source}")]
    DataDir { path: PathBuf, source: std::io::Error },
    /// The kubeconfig file could not be written. Choose a writable path.
    #[error("could not write the kubeconfig {path}: {source}")]
    Kubeconfig { path: PathBuf, source: std::io::Error },
    /// The `kube` client for the server could not be built.
    #[error("could not build a client for the server: {0}")]
    Client(#[from] kube::Error),
}

/// A running embedded API server. Cheap to query; stop it with [`DevCluster::shutdown`], which
/// also writes the last snapshot. Dropping it stops the server too, without waiting for that.
pub struct DevCluster {
    url: String,
    client: kube::Client,
    kubeconfig: PathBuf,
    remove_kubeconfig: bool,
    shared: Arc<Shared>,
    stop: tokio::sync::watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
}

impl DevCluster {
    /// Starts the server on 127.0.0.1, on the tokio runtime of the caller.
    /// A new cluster has the namespaces `default`, `kube-system`, `kube-public` and
    /// `kube-node-lease` and the `kubernetes` Service, as a real one (added to a data directory
    /// that lacks them).
    ///
    /// # Errors
    ///
    /// [`Error`] when the port cannot be bound, or the data directory or kubeconfig
    /// cannot be used.
    pub async fn start(opts: Options) -> Result<DevCluster, Error> {
        let mut cluster = Cluster::new(opts.watch_history);
        if let Some(dir) = &opts.data_dir {
            let fail = |source| Error::DataDir { path: dir.clone(), source };
            std::fs::create_dir_all(dir).map_err(fail)?;
            persist::load(dir, &mut cluster).map_err(fail)?;
        }
        bootstrap(&mut cluster);

        let port = opts.port.unwrap_or(0);
        let listener =
            tokio::net::TcpListener::bind(("127.0.0.1", port)).await.map_err(|source| Error::Bind { port, source })?;
        let address = listener.local_addr().map_err(|source| Error::Bind { port, source })?;
        let url = format!("http://{address}");

        let (stop, stopped) = tokio::sync::watch::channel(false);
        let shared = Arc::new(Shared::new(
            cluster,
            opts.bookmark_interval,
            stopped.clone(),
            address.to_string(),
            faults::Injector::new(opts.faults.clone()),
        ));
        let router = server::router(shared.clone());
        let mut on_stop = stopped.clone();
        let serve = axum::serve(listener, router).with_graceful_shutdown(async move {
            let _ = on_stop.changed().await;
        });
        let mut tasks = vec![tokio::spawn(async move {
            if let Err(e) = serve.await {
                tracing::warn!(error = %e, "the embedded API server stopped");
            }
        })];
        tasks.push(tokio::spawn(gc::run(shared.clone())));
        if let Some(dir) = &opts.data_dir {
            tasks.push(tokio::spawn(persist::run(shared.clone(), dir.clone())));
        }

        let (kubeconfig, remove_kubeconfig) = match (&opts.kubeconfig_path, &opts.data_dir) {
            (Some(path), _) => (path.clone(), false),
            (None, Some(dir)) => (dir.join("kubeconfig"), false),
            (None, None) => (
                std::env::temp_dir().join(format!("kubewasm-dev-{}-{}.kubeconfig", std::process::id(), address.port())),
                true,
            ),
        };
        kubeconfig::write(&kubeconfig, &url)
            .map_err(|source| Error::Kubeconfig { path: kubeconfig.clone(), source })?;

        let uri = url
            .parse()
            .map_err(|e| Error::Bind { port, source: std::io::Error::other(format!("{url} is not a URL: {e}")) })?;
        let config = kube::Config::new(uri);
        let client = kube::Client::try_from(config)?;
        Ok(DevCluster { url, client, kubeconfig, remove_kubeconfig, shared, stop, tasks })
    }

    /// The base URL, e.g. `http://127.0.0.1:41234`.
    pub fn url(&self) -> String {
        self.url.clone()
    }

    /// A `kube` client that talks HTTP to this server (clones share one connection pool).
    pub fn client(&self) -> kube::Client {
        self.client.clone()
    }

    /// The kubeconfig file for `kubectl --kubeconfig` (plain HTTP, no credentials).
    pub fn kubeconfig_path(&self) -> &Path {
        &self.kubeconfig
    }

    /// How many mutating requests (POST, PUT, PATCH, DELETE) the server has served, including
    /// refused ones. End-to-end tests use it to prove a steady state makes no writes.
    pub fn write_requests(&self) -> u64 {
        self.shared.writes.load(Ordering::SeqCst)
    }

    /// Replaces the faults injected from now on (`None`: serve faithfully again). The
    /// generator restarts from the new seed.
    pub fn set_faults(&self, faults: Option<Faults>) {
        self.shared.faults.set(faults);
    }

    /// Ends every open watch and answers `503` to every request for `duration`, as while an
    /// API server restarts; the stored state and resourceVersions continue.
    pub fn outage(&self, duration: Duration) {
        self.shared.faults.outage(duration);
    }

    /// Freezes writes right after the next `k` successful ones, as a client killed just after
    /// its k-th write would leave the cluster: the k-th is stored but not answered, and later
    /// writes are held unserved, until [`DevCluster::thaw_writes`] (or until their client goes
    /// away). Resolves once writes are frozen; crash tests kill the client then.
    pub fn freeze_after_writes(&self, k: u64) -> impl Future<Output = ()> + use<> {
        self.shared.faults.freeze_after(k)
    }

    /// Serves writes again after [`DevCluster::freeze_after_writes`].
    pub fn thaw_writes(&self) {
        self.shared.faults.thaw();
    }

    /// How often each object was created and removed since the server started, keyed
    /// `resource[.group]/[namespace/]name` (`deployments.apps/default/web`): a controller
    /// that creates a child twice, or deletes what it should keep, shows here.
    pub fn lifecycles(&self) -> std::collections::BTreeMap<String, Lifecycle> {
        self.shared.lock().store.lifecycles().clone()
    }

    /// How many faults have been injected since the server started.
    pub fn faults_injected(&self) -> u64 {
        self.shared.faults.injected()
    }

    /// Stops serving, ends open watches, writes the last snapshot to the data directory.
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        for task in self.tasks {
            let abort = task.abort_handle();
            if tokio::time::timeout(Duration::from_secs(5), task).await.is_err() {
                abort.abort();
            }
        }
        if self.remove_kubeconfig {
            let _ = std::fs::remove_file(&self.kubeconfig);
        }
    }
}

/// Creates what a new cluster has before anyone writes (or what a data directory lacks of it),
/// as the kinds list it (`kinds::initial_objects`).
fn bootstrap(cluster: &mut Cluster) {
    let manager = request::WriteOptions { manager: "kube-apiserver".into(), ..request::WriteOptions::default() };
    for initial in kinds::initial_objects() {
        let Some(rt) = cluster.registry.find(initial.group, initial.version, initial.plural) else {
            continue;
        };
        let name = object::name(&initial.object).to_string();
        let target = request::Target::stored(rt, initial.namespace.unwrap_or_default(), &name);
        if read::existing(&cluster.store, &target).is_err() {
            let _ =
                pipeline::create_local(cluster, &request::Target { name: None, ..target }, initial.object, &manager);
        }
    }
}
