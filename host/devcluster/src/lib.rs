//! A Kubernetes API server in process: the cluster of `kubewasm dev` and of every end-to-end test,
//! and of any kube-rs test suite that wants a real API server without Go or a cluster.
//!
//! [`DevCluster::start`] serves the Kubernetes HTTP API on loopback from memory, so the real
//! `kube` client and the real `kubectl` work against it unchanged: discovery of every stable
//! built-in kind of its Kubernetes version (from the upstream definitions in `data/`), CRDs
//! registered at run time with schema validation, CEL rules and conversion webhooks,
//! `ValidatingAdmissionPolicies`, admission webhooks, `/openapi/v2` and `/openapi/v3`,
//! get/list/watch, create/update/patch (merge, JSON, strategic, server-side apply), delete with
//! finalizers and garbage collection, the subresources the real server serves itself
//! (eviction, binding, ephemeral containers, CSR approval), server-side tables and metadata-only
//! answers, aggregated discovery. It is not a scheduler or a kubelet: nothing runs Pods.
//!
//! It serves HTTPS with a CA of its own and authorizes every request as kube-apiserver does:
//! [`DevCluster::client`] and the kubeconfig it writes are the cluster administrator
//! (`system:masters`), [`DevCluster::kubeconfig_for_user`] makes a client certificate for another
//! user, and [`DevCluster::apply`] with [`DevCluster::service_account_token`] runs a controller
//! as the service account its RBAC manifest defines, so that RBAC is what decides.
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
//! - no controllers besides garbage collection, namespace and CRD cleanup, a namespace's
//!   `default` service account and `kube-root-ca.crt`, and cluster role aggregation:
//!   Deployments get no `ReplicaSets` or Pods, Jobs never run, Pods stay `Pending`, no status is
//!   written for you;
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
//!   `protobuf`); answers are always JSON (in Go's byte order and format), and `/openapi/v2` is
//!   served as JSON only;
//! - no scheduler or kubelet: Pods stay `Pending` unless bound (`pods/binding`), their logs are
//!   empty and their `exec`, `attach` and `portforward` fail as when no kubelet can be reached;
//!   no disruption controller writes a `PodDisruptionBudget`'s status, which evictions read;
//! - authentication knows client certificates of its own CA and its own service-account tokens
//!   (no static, bootstrap, OIDC or webhook tokens); authorization is `system:masters` and
//!   RBAC (with its escalation checks), without the Node authorizer; the default roles and
//!   bindings are created when missing, not reconciled;
//! - `autoscaling/v1` `HorizontalPodAutoscaler`s are not served (only `v2`); `pods/resize` and
//!   the `proxy` subresources are not served; admission webhooks see no `CONNECT` (the
//!   streams a kubelet would serve: `exec`, `attach`, `portforward`);
//! - streaming lists (`sendInitialEvents`) are refused, as Kubernetes 1.33 refuses them with
//!   its `WatchList` feature off, unless [`Options::watch_list`] turns them on.

#![warn(clippy::pedantic)]
// Accessors like `DevCluster::url` have nothing to add beyond their name.
#![allow(clippy::must_use_candidate)]

// The value types: they import nothing of the server.
mod access;
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
mod encode;
mod kubeconfig;
mod manifests;
mod metadata;
mod patch;
mod pki;
mod protobuf;
mod selectors;
mod tokens;
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
mod controllers;
mod faults;
mod gc;
mod persist;
mod server;
mod state;
mod watch;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use tokio::task::JoinHandle;

use self::cluster::Cluster;
pub use self::compare::comparable;
pub use self::faults::{ErrorFault, Faults, FaultsError, StaleReads, WatchFaults};
use self::kubeconfig::Credential;
pub use self::pki::PkiError;
use self::pki::{Issued, Pki};
use self::server::{Peer, TlsListener};
pub use self::state::Watches;
use self::state::{Credentials, Shared};
pub use self::store::Lifecycle;
use self::strategy::Controller;
use self::tokens::Signer;

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
    /// Serves streaming lists (`sendInitialEvents` on watches, kube-rs's
    /// `watcher::Config::streaming_lists()`), the `WatchList` feature of Kubernetes 1.32 and
    /// 1.34. Off by default, as in Kubernetes 1.33, whose servers refuse such a watch with 422
    /// (clients then list and watch); when on, a watch from "now" gets the current objects
    /// first, as in 1.34.
    pub watch_list: bool,
    /// Run the two controllers that fill every namespace as kube-controller-manager does: a
    /// `default` service account, and the `kube-root-ca.crt` `ConfigMap` with the cluster's CA
    /// (on by default). Off, a namespace holds only what clients put there, for tests that count
    /// its `ConfigMaps` or service accounts.
    pub namespace_controllers: bool,
    /// Serve plain HTTP instead of HTTPS. Then a request without credentials is the
    /// administrator's (as on kube-apiserver's old insecure port) and the kubeconfig carries
    /// none; bearer tokens still authenticate their service account, and RBAC applies to them.
    pub plain_http: bool,
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
            watch_list: false,
            namespace_controllers: true,
            plain_http: false,
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
    /// A kubeconfig for the server could not be read as a client configuration.
    #[error("could not read the kubeconfig for the server: {0}")]
    ClientConfig(#[from] kube::config::KubeconfigError),
    /// An object given to [`DevCluster::apply`] is not YAML, of a kind the server does not serve,
    /// or refused.
    #[error("could not apply {object}: {message}")]
    Manifest { object: String, message: String },
    /// The cluster's CA, keys or certificates could not be read, written or made (see
    /// [`PkiError`]).
    #[error("could not set up the cluster's certificates: {0}")]
    Certificates(#[from] PkiError),
}

/// A running embedded API server. Cheap to query; stop it with [`DevCluster::shutdown`], which
/// also writes the last snapshot. Dropping it stops the server too, without waiting for that.
pub struct DevCluster {
    url: String,
    config: kube::Config,
    client: kube::Client,
    kubeconfig: PathBuf,
    remove_kubeconfig: bool,
    shared: Arc<Shared>,
    stop: tokio::sync::watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
}

impl DevCluster {
    /// Starts the server on 127.0.0.1, on the tokio runtime of the caller: HTTPS with a CA made
    /// at the first start (kept in the data directory), unless [`Options::plain_http`].
    /// A new cluster has what a real one has before anyone writes (added to a data directory that
    /// lacks it): the namespaces `default`, `kube-system`, `kube-public` and `kube-node-lease`,
    /// the `kubernetes` Service with its endpoints, the default roles and bindings of
    /// Kubernetes 1.33, and in every namespace a `default` service account and the
    /// `kube-root-ca.crt` `ConfigMap`.
    ///
    /// # Errors
    ///
    /// [`Error`] when the port cannot be bound, or the data directory, its certificates or the
    /// kubeconfig cannot be used.
    pub async fn start(opts: Options) -> Result<DevCluster, Error> {
        // The workspace's TLS is rustls with ring; a client built in this process uses it too.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut cluster = Cluster::new(opts.watch_history);
        if let Some(dir) = &opts.data_dir {
            let fail = |source| Error::DataDir { path: dir.clone(), source };
            std::fs::create_dir_all(dir).map_err(fail)?;
            persist::load(dir, &mut cluster).map_err(fail)?;
        }
        let pki = Pki::load_or_create(opts.data_dir.as_deref())?;
        let signer = Signer::new(pki.service_account_key())
            .map_err(|message| PkiError::Invalid { path: PathBuf::from("pki/sa.key"), message })?;

        let port = opts.port.unwrap_or(0);
        let listener =
            tokio::net::TcpListener::bind(("127.0.0.1", port)).await.map_err(|source| Error::Bind { port, source })?;
        let address = listener.local_addr().map_err(|source| Error::Bind { port, source })?;

        bootstrap(&mut cluster, address.port());
        let controllers: Vec<Arc<dyn Controller>> =
            kinds::controllers(pki.ca_pem(), opts.namespace_controllers).into_iter().map(Arc::from).collect();
        controllers::settle(&mut cluster, &controllers);

        let plain = opts.plain_http;
        let (url, admin, tls) = if plain {
            (format!("http://{address}"), None, None)
        } else {
            let (chain, key) = pki.serving()?;
            let tls = server::server_config(chain, key, pki.client_verifier())
                .map_err(|e| PkiError::Invalid { path: PathBuf::from("pki/ca.crt"), message: e.to_string() })?;
            (format!("https://{address}"), Some(pki.client("kubernetes-admin", Some(user::MASTERS))?), Some(tls))
        };

        let (stop, stopped) = tokio::sync::watch::channel(false);
        let shared = Arc::new(Shared::new(
            cluster,
            opts.bookmark_interval,
            stopped.clone(),
            address.to_string(),
            faults::Injector::new(opts.faults.clone()),
            opts.watch_list,
            Credentials { pki, signer, plain_http: plain },
        ));
        let service = server::router(shared.clone()).into_make_service_with_connect_info::<Peer>();
        let mut on_stop = stopped.clone();
        let stopping = async move {
            let _ = on_stop.changed().await;
        };
        let serve = match tls {
            None => tokio::spawn(axum::serve(listener, service).with_graceful_shutdown(stopping).into_future()),
            Some(tls) => {
                let listener =
                    TlsListener::new(listener, Arc::new(tls)).map_err(|source| Error::Bind { port, source })?;
                tokio::spawn(axum::serve(listener, service).with_graceful_shutdown(stopping).into_future())
            }
        };
        let mut tasks = vec![tokio::spawn(async move {
            if let Ok(Err(e)) = serve.await {
                tracing::warn!(error = %e, "the embedded API server stopped");
            }
        })];
        tasks.push(tokio::spawn(gc::run(shared.clone())));
        tasks.push(tokio::spawn(controllers::run(shared.clone(), controllers)));
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
        // Printed for users to copy (`export KUBECONFIG=...`): whole, wherever they run it from.
        let kubeconfig = std::path::absolute(&kubeconfig).unwrap_or(kubeconfig);
        let credential = match &admin {
            Some(Issued { cert_pem, key_pem }) => Credential::Certificate { cert_pem, key_pem },
            None => Credential::None,
        };
        let ca = (!plain).then(|| shared.credentials.pki.ca_pem());
        let text = kubeconfig::render(&url, ca, &credential);
        kubeconfig::write(&kubeconfig, &text)
            .map_err(|source| Error::Kubeconfig { path: kubeconfig.clone(), source })?;
        let config = client_config(&text).await?;
        let client = kube::Client::try_from(config.clone())?;
        Ok(DevCluster { url, config, client, kubeconfig, remove_kubeconfig, shared, stop, tasks })
    }

    /// The base URL, e.g. `https://127.0.0.1:41234`.
    pub fn url(&self) -> String {
        self.url.clone()
    }

    /// A `kube` client of the cluster administrator (a member of `system:masters`, whom
    /// authorization lets do anything); clones share one connection pool.
    pub fn client(&self) -> kube::Client {
        self.client.clone()
    }

    /// The administrator's client configuration, for a client with other settings (no retries,
    /// other timeouts) than [`DevCluster::client`]'s.
    pub fn config(&self) -> kube::Config {
        self.config.clone()
    }

    /// The kubeconfig file for `kubectl --kubeconfig` (an absolute path): the administrator's (a client certificate
    /// of `kubernetes-admin` in `system:masters` and the cluster's CA; no credentials on plain
    /// HTTP).
    pub fn kubeconfig_path(&self) -> &Path {
        &self.kubeconfig
    }

    /// The cluster's CA certificate (PEM): what a client trusts to reach the server, and what
    /// every namespace's `kube-root-ca.crt` holds.
    pub fn certificate_authority(&self) -> &str {
        self.shared.credentials.pki.ca_pem()
    }

    /// The text of a kubeconfig for the user `name` (in `group`, if given): a client
    /// certificate the cluster's CA signs, as kubeadm makes for users. Authorization lets the
    /// user do what RBAC grants it (everything, in `system:masters`).
    ///
    /// # Errors
    ///
    /// [`Error::Certificates`] when a certificate cannot carry the name, or the server speaks
    /// plain HTTP (no client certificates there; use a token).
    pub fn kubeconfig_for_user(&self, name: &str, group: Option<&str>) -> Result<String, Error> {
        if self.shared.credentials.plain_http {
            return Err(Error::Certificates(PkiError::Invalid {
                path: self.kubeconfig.clone(),
                message: "a server on plain HTTP takes no client certificates".into(),
            }));
        }
        let Issued { cert_pem, key_pem } = self.shared.credentials.pki.client(name, group)?;
        let credential = Credential::Certificate { cert_pem: &cert_pem, key_pem: &key_pem };
        Ok(kubeconfig::render(&self.url, Some(self.certificate_authority()), &credential))
    }

    /// The text of a kubeconfig that authenticates with the bearer `token` (a service account's,
    /// from `kubectl create token` or a `TokenRequest`).
    pub fn kubeconfig_for_token(&self, token: &str) -> String {
        let ca = (!self.shared.credentials.plain_http).then(|| self.certificate_authority());
        kubeconfig::render(&self.url, ca, &Credential::Token(token))
    }

    /// A `kube` client of a kubeconfig's text (from [`DevCluster::kubeconfig_for_user`] or
    /// [`DevCluster::kubeconfig_for_token`]).
    ///
    /// # Errors
    ///
    /// [`Error::ClientConfig`] or [`Error::Client`] when the text is not a usable kubeconfig.
    pub async fn client_from(kubeconfig: &str) -> Result<kube::Client, Error> {
        Ok(kube::Client::try_from(client_config(kubeconfig).await?)?)
    }

    /// Applies each object of `manifests` (a YAML stream, as `kubectl apply -f` takes) as the
    /// administrator, with server-side apply: a namespace, a service account and its roles and
    /// bindings, say, to run a controller as that service account (with
    /// [`DevCluster::service_account_token`]). Objects are applied in order; the first refused
    /// one stops it.
    ///
    /// # Errors
    ///
    /// [`Error::Manifest`] naming the object that is not YAML, of a kind the server does not
    /// serve, or refused, and why.
    pub fn apply(&self, manifests: &str) -> Result<(), Error> {
        let mut applied = false;
        for (index, document) in serde_yaml_ng::Deserializer::from_str(manifests).enumerate() {
            let object = serde_json::Value::deserialize(document)
                .map_err(|e| Error::Manifest { object: format!("document {}", index + 1), message: e.to_string() })?;
            if object.is_null() {
                continue;
            }
            let mut cluster = self.shared.lock();
            let result = manifests::apply(&mut cluster, &object);
            applied |= result.is_ok();
            result.map_err(|(object, message)| Error::Manifest { object, message })?;
        }
        if applied {
            self.shared.persist.notify_one();
        }
        Ok(())
    }

    /// A token of the service account `name` in `namespace`, as `kubectl create token` asks
    /// for one (an hour long, for the API server's audience): the bearer token of
    /// [`DevCluster::kubeconfig_for_token`].
    ///
    /// # Errors
    ///
    /// [`Error::Client`] when the account does not exist.
    pub async fn service_account_token(&self, namespace: &str, name: &str) -> Result<String, Error> {
        let accounts: kube::Api<k8s_openapi::api::core::v1::ServiceAccount> =
            kube::Api::namespaced(self.client.clone(), namespace);
        let request = k8s_openapi::api::authentication::v1::TokenRequest::default();
        let answer = accounts.create_token_request(name, &kube::api::PostParams::default(), &request).await?;
        Ok(answer.status.map(|s| s.token).unwrap_or_default())
    }

    /// How many mutating requests (POST, PUT, PATCH, DELETE) the server has served, including
    /// refused ones. End-to-end tests use it to prove a steady state makes no writes.
    pub fn write_requests(&self) -> u64 {
        self.shared.writes()
    }

    /// The last 32 write requests (method, path and query), oldest first: what a test
    /// shows when it finds a write it did not expect.
    pub fn recent_writes(&self) -> Vec<String> {
        self.shared.recent_writes()
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

    /// The watches served since the server started and those open now, by resource
    /// (`deployments.apps`, `configmaps`): how many watches clients hold.
    pub fn watches(&self) -> std::collections::BTreeMap<String, Watches> {
        self.shared.watches()
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

/// The client configuration of a kubeconfig's text.
async fn client_config(kubeconfig: &str) -> Result<kube::Config, Error> {
    let parsed = kube::config::Kubeconfig::from_yaml(kubeconfig)?;
    Ok(kube::Config::from_custom_kubeconfig(parsed, &kube::config::KubeConfigOptions::default()).await?)
}

/// Creates what a new cluster has before anyone writes (or what a data directory lacks of it),
/// as the kinds list it (`kinds::initial_objects`), for a server on `port`.
fn bootstrap(cluster: &mut Cluster, port: u16) {
    let manager = request::WriteOptions { manager: "kube-apiserver".into(), ..request::WriteOptions::default() };
    for initial in kinds::initial_objects(port) {
        let Some(rt) = cluster.registry.find(initial.group, initial.version, initial.plural) else {
            continue;
        };
        let name = object::name(&initial.object).to_string();
        let target = request::Target::stored(rt, initial.namespace.as_deref().unwrap_or_default(), &name);
        if read::existing(&cluster.store, &target).is_err() {
            let _ =
                pipeline::create_local(cluster, &request::Target { name: None, ..target }, &initial.object, &manager);
        }
    }
}
