//! The long-running host of `kubewasm run` and `kubewasm dev`: health and metrics
//! server, leader election or sharding, the plugin directory's controllers, and an
//! orderly stop.
//!
//! The binary only parses flags, creates the client (or the embedded API server) and
//! prints; everything between start and stop is here, so tests drive it in-process.
//!
//! ```no_run
//! # async fn example(engine: kubewasm::plugin::Engine, client: kube::Client) -> Result<(), kubewasm::run::Error> {
//! use kubewasm::run::{self, Options};
//!
//! let options = Options::new("/plugins");
//! run::run(&engine, &client, &options, run::shutdown_signal(), |_runtime| {}).await
//! # }
//! ```

use std::collections::BTreeMap;
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use kube::Client;
use tracing::{error, info};

use crate::controller;
use crate::coordination::leader::Leadership;
use crate::coordination::shard::{Joined, Shard};
use crate::coordination::{self, ReplicaMode};
use crate::distribution::TrustedRoot;
use crate::health::{self, Health};
use crate::metrics::Metrics;
use crate::plugin::Engine;
use crate::runtime::{self, PluginStatus, Runtime};
use crate::webhook::{self, WebhookOptions, Webhooks};

/// How long the host waits for every controller's first list before it reports ready
/// anyway (not ready: `/readyz` stays 503).
const SYNC_LIMIT: Duration = Duration::from_mins(1);

/// What one host process runs.
#[derive(Clone, Debug)]
pub struct Options {
    /// The plugin directory: every `*.wasm` in it, followed as it changes.
    pub dir: PathBuf,
    /// Serve `/healthz`, `/readyz` and `/metrics` here.
    pub health_addr: Option<SocketAddr>,
    /// Install (server-side apply) the CRDs each plugin defines, as `kubewasm dev` does;
    /// in production the CRDs are deployed with the host's manifests.
    pub install_crds: bool,
    /// Whether this replica reconciles alone, only while it leads, or its share.
    pub replicas: ReplicaMode,
    /// The host's own namespace: the Secrets plugins' settings name are read there, and
    /// the event handlers' ledgers kept.
    pub namespace: String,
    /// Also run the cluster's `Plugin` objects, pulled from their registries (with
    /// `install_crds`, their CRD is installed too).
    pub plugin_resources: bool,
    /// Each plugin reads and writes as its own `ServiceAccount`
    /// (`kubewasm-plugin-NAME` in [`Options::namespace`]), impersonated.
    pub plugin_identities: bool,
    /// Serve the admission and conversion webhooks of the plugins that declare any.
    pub webhooks: Option<WebhookOptions>,
    /// `kubewasm dev` only: where the copies of the sources a development component in
    /// the plugin file `NAME.wasm` reads are, by `NAME` ([`runtime::Options::development`]).
    pub development: BTreeMap<String, PathBuf>,
    /// The Sigstore trusted root `Plugin` objects' keyless signatures are checked against.
    pub trusted_root: Arc<TrustedRoot>,
}

impl Options {
    /// The plugins of `dir`, no health server, no CRDs installed, every parent
    /// reconciled by this replica.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            health_addr: None,
            install_crds: false,
            replicas: ReplicaMode::Single,
            namespace: "default".into(),
            plugin_resources: false,
            plugin_identities: false,
            webhooks: None,
            development: BTreeMap::new(),
            trusted_root: TrustedRoot::public_good(),
        }
    }
}

/// Why the host stopped other than by `shutdown`.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{}: not a directory", .0.display())]
    NotADirectory(PathBuf),
    #[error(transparent)]
    Health(#[from] health::Error),
    #[error(transparent)]
    Runtime(#[from] runtime::Error),
    #[error(transparent)]
    Webhooks(#[from] webhook::FollowError),
    /// The election task ended before this replica ever led.
    #[error("leader election for lease {lease} stopped")]
    ElectionStopped { lease: String },
    /// Another replica took the Lease: this one stopped its controllers. Exiting lets
    /// its Pod restart as a standby.
    #[error("lost the leader lease {lease}: another replica leads now")]
    LostLease { lease: String },
    /// The Lease could not be released on the way out; a standby takes over once it
    /// expires.
    #[error("releasing the leader lease {lease}: {source}")]
    Release { lease: String, source: coordination::Error },
    /// This replica's shard Lease could not be deleted on the way out; the others take
    /// its parents over once it expires.
    #[error("leaving the shard group: {0}")]
    Leave(#[source] coordination::Error),
}

/// Runs the plugins of `options.dir` against `client` until `shutdown` resolves (or,
/// with leader election, the Lease is lost), then stops every controller, letting
/// in-flight reconciles finish.
///
/// `on_change` is called once the plugins are loaded and after every change of the
/// directory (`kubewasm dev` prints the plugin table).
///
/// Readiness: ready once every controller's caches are synced (a standby is ready
/// at once: it serves, it just does not reconcile); not ready from `shutdown` on.
///
/// # Errors
///
/// An [`Error`]; a bad plugin file is not one (it is reported in [`Runtime::status`]).
pub async fn run(
    engine: &Engine,
    client: &Client,
    options: &Options,
    shutdown: impl Future<Output = ()>,
    mut on_change: impl FnMut(&Runtime),
) -> Result<(), Error> {
    if !options.dir.is_dir() {
        return Err(Error::NotADirectory(options.dir.clone()));
    }
    let health = Health::new();
    let metrics = Metrics::new();
    let health_server = match options.health_addr {
        Some(addr) => Some(health::serve(addr, health.clone(), Some(metrics.router())).await?),
        None => None,
    };
    let result = lead_and_serve(engine, client, options, &health, metrics, shutdown, &mut on_change).await;
    if let Some(server) = health_server {
        server.shutdown().await;
    }
    result
}

async fn lead_and_serve(
    engine: &Engine,
    client: &Client,
    options: &Options,
    health: &Health,
    metrics: Metrics,
    shutdown: impl Future<Output = ()>,
    on_change: &mut impl FnMut(&Runtime),
) -> Result<(), Error> {
    tokio::pin!(shutdown);
    let (role, shard) = match &options.replicas {
        ReplicaMode::Single => (Role::Single, Shard::whole()),
        ReplicaMode::LeaderElected(election) => {
            let (identity, lease, namespace) = (&election.identity, &election.lease_name, &election.lease_namespace);
            info!(%identity, %lease, %namespace, "standing for leader");
            let leadership = election.elector(client).spawn();
            // A standby is ready at once: it serves, it just does not reconcile.
            health.set_ready(true);
            let mut leading = leadership.subscribe();
            let waited = stand_by(engine, client, options, &metrics, &mut leading, shutdown.as_mut()).await?;
            match waited {
                Waited::ShutDown => return Ok(()),
                Waited::ElectionStopped => return Err(Error::ElectionStopped { lease: lease.clone() }),
                Waited::Leading => {}
            }
            info!("leading: starting controllers");
            (Role::Leader { leadership, lease: lease.clone() }, Shard::whole())
        }
        ReplicaMode::Sharded(sharding) => {
            let (identity, group, namespace) = (&sharding.identity, &sharding.group, &sharding.lease_namespace);
            info!(%identity, %group, %namespace, "joining the shard group");
            let (shard, joined) = sharding.member(client).spawn();
            (Role::Member(joined), shard)
        }
    };

    let webhooks = Webhooks::new();
    let runtime_options = runtime::Options {
        install_crds: options.install_crds,
        controller: controller::Options { metrics: metrics.clone(), shard, ..controller::Options::default() },
        host_namespace: options.namespace.clone(),
        plugin_resources: options.plugin_resources,
        identities: options.plugin_identities.then(|| runtime::Identities { namespace: options.namespace.clone() }),
        webhooks: webhooks.clone(),
        controllers: true,
        development: options.development.clone(),
        trusted_root: options.trusted_root.clone(),
    };
    if options.install_crds
        && options.plugin_resources
        && let Err(e) = Box::pin(runtime::install_host_crd(client)).await
    {
        error!(error = %e, "the Plugin CRD is not installed");
    }
    let runtime = Runtime::from_dir(client, engine, &options.dir, runtime_options).await?;
    // Once the plugins are loaded: served from when one of them admits or converts.
    let webhooks = match &options.webhooks {
        Some(serving) => match webhook::follow(client.clone(), serving.clone(), webhooks, metrics).await {
            Ok(following) => Some(following),
            Err(e) => {
                runtime.stop().await;
                return Err(e.into());
            }
        },
        None => None,
    };
    on_change(&runtime);
    let synced = runtime.wait_synced(SYNC_LIMIT).await;
    if !synced {
        error!("caches not synced within {SYNC_LIMIT:?}: not ready");
    }
    // What the start freed (the components' bytes, their first calls, the first lists'
    // responses) would stay the process's for as long as it runs: 1.5 to 3.5 MiB of a
    // host loading ten plugins with no object to list (BENCHMARKS.md, memory).
    let _ = tokio::task::spawn_blocking(crate::memory::release_freed).await;
    health.set_ready(synced);

    let lost = async {
        match &role {
            Role::Leader { leadership, .. } => {
                let _ = leadership.subscribe().wait_for(|leading| !leading).await;
            }
            Role::Single | Role::Member(_) => std::future::pending().await,
        }
    };
    let mut lost_lease = false;
    let stop = async {
        tokio::select! {
            () = &mut shutdown => {}
            () = lost => lost_lease = true,
        }
        health.set_ready(false);
    };
    let watched = runtime.watch(stop, on_change).await;
    if let Some(webhooks) = webhooks {
        webhooks.stop().await;
    }
    watched?;
    match role {
        Role::Single => Ok(()),
        Role::Member(joined) => joined.leave().await.map_err(Error::Leave),
        Role::Leader { lease, .. } if lost_lease => Err(Error::LostLease { lease }),
        Role::Leader { leadership, lease } => {
            leadership.release().await.map_err(|source| Error::Release { lease, source })
        }
    }
}

/// How a standby's wait ended.
enum Waited {
    Leading,
    ShutDown,
    ElectionStopped,
}

/// Waits to lead. Meanwhile, when the host serves webhooks, the plugins are loaded only to
/// serve theirs (and follow new versions): the API server calls whichever replica the
/// Service picks, and a standby must answer as the leader would. The standby's server
/// stops before the leader's starts, on the same address.
async fn stand_by(
    engine: &Engine,
    client: &Client,
    options: &Options,
    metrics: &Metrics,
    leading: &mut tokio::sync::watch::Receiver<bool>,
    shutdown: std::pin::Pin<&mut impl Future<Output = ()>>,
) -> Result<Waited, Error> {
    let wait = async {
        tokio::select! {
            () = shutdown => Waited::ShutDown,
            acquired = leading.wait_for(|l| *l) => {
                if acquired.is_ok() { Waited::Leading } else { Waited::ElectionStopped }
            }
        }
    };
    let Some(serving) = &options.webhooks else { return Ok(wait.await) };
    let webhooks = Webhooks::new();
    let runtime_options = runtime::Options {
        controllers: false,
        // A conversion is registered on the CRD: it must exist.
        install_crds: options.install_crds,
        host_namespace: options.namespace.clone(),
        plugin_resources: options.plugin_resources,
        webhooks: webhooks.clone(),
        trusted_root: options.trusted_root.clone(),
        ..runtime::Options::default()
    };
    let runtime = Runtime::from_dir(client, engine, &options.dir, runtime_options).await?;
    let following = webhook::follow(client.clone(), serving.clone(), webhooks, metrics.clone()).await?;
    info!("standing by: serving the plugins' webhooks");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let watching = tokio::spawn(runtime.watch(
        async {
            let _ = stopped.await;
        },
        |_: &Runtime| {},
    ));
    let waited = wait.await;
    let _ = stop.send(());
    if let Ok(Err(e)) = watching.await {
        error!(error = %e, "the standby's plugin directory");
    }
    following.stop().await;
    Ok(waited)
}

/// What this replica takes part in while it runs, and leaves on the way out.
enum Role {
    Single,
    Leader { leadership: Leadership, lease: String },
    Member(Joined),
}

/// Ctrl-C or SIGTERM. Listens for SIGTERM from the moment it is called, not from its
/// first poll: a SIGTERM that arrives before anyone listens kills the process outright.
pub fn shutdown_signal() -> impl Future<Output = ()> {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    let term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate());
    async move {
        #[cfg(unix)]
        {
            let Ok(mut term) = term else {
                let _ = ctrl_c.await;
                return;
            };
            tokio::select! {
                _ = ctrl_c => {}
                _ = term.recv() => {}
            }
        }
        #[cfg(not(unix))]
        let _ = ctrl_c.await;
    }
}

/// One line per plugin file: what runs, and why a file is not in use; under a plugin, the
/// API server's last warning about its writes. `kubewasm dev` prints it whenever it changes.
pub fn plugin_table(runtime: &Runtime) -> String {
    table_of(runtime.status())
}

fn table_of(status: Vec<PluginStatus>) -> String {
    use std::fmt::Write;
    let mut table = String::new();
    if status.is_empty() {
        table.push_str("no plugins yet: drop NAME.wasm files into the plugin directory\n");
    }
    for p in status {
        let name = p.name.as_deref().unwrap_or("-");
        let version = p.hash.as_deref().map_or("-", |h| &h[..12]);
        let state = if p.running {
            "running"
        } else if p.waiting_for.is_some() {
            "waiting"
        } else {
            "stopped"
        };
        let _ = match (p.error, p.waiting_for) {
            (Some(e), _) => writeln!(table, "  {name:<20} {state:<8} {version}  ERROR {e}"),
            (None, Some(kind)) => writeln!(table, "  {name:<20} {state:<8} {version}  for {kind}, not served yet"),
            (None, None) => writeln!(table, "  {name:<20} {state:<8} {version}  {}", p.file),
        };
        if let Some(warning) = &p.warning {
            let _ = writeln!(table, "  {:<20} WARNING  {warning}", "");
        }
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_shows_the_api_servers_last_warning_under_its_plugin() {
        let status = PluginStatus {
            file: "plugins/demo.wasm".into(),
            name: Some("demo".into()),
            hash: Some("0123456789abcdef".into()),
            running: true,
            waiting_for: None,
            error: None,
            warning: Some(
                r#"DemoApplication web: apply status: the API server warned: unknown field "status.extra""#.into(),
            ),
        };
        assert_eq!(
            table_of(vec![status]),
            "  demo                 running  0123456789ab  plugins/demo.wasm\n                       WARNING  \
             DemoApplication web: apply status: the API server warned: unknown field \"status.extra\"\n"
        );
    }
}
