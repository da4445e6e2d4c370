//! The `kubewasm` binary: parses the command line and wires the library together.

mod cli;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Parser;
use kubewasm::controller;
use kubewasm::health::{self, Health};
use kubewasm::host::{self, DirOptions, Host};
use kubewasm::leader::Elector;
use kubewasm::logging;
use kubewasm::metrics::Metrics;
use kubewasm::plugin::{CONTRACT_VERSION, Engine, EngineOptions, Plugin};
use kubewasm::rbac;
use kubewasm::render::{self, Inputs};
use kubewasm::scaffold;
#[cfg(feature = "dev")]
use kubewasm_devcluster::{self as devcluster, DevCluster};
use serde_json::{Value, json};

use cli::{Cli, Command};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let format = match cli.log_format {
        cli::LogFormat::Text => logging::Format::Text,
        cli::LogFormat::Json => logging::Format::Json,
    };
    if let Err(e) = logging::init(format) {
        eprintln!("error: cannot set up logging: {e}");
        return ExitCode::FAILURE;
    }
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        #[cfg(feature = "dev")]
        Command::Dev { dir, data_dir, kubeconfig, port, health_addr, faults, host } => {
            let faults = faults.as_deref().map(devcluster::Faults::read).transpose()?;
            let options =
                devcluster::Options { data_dir, port, kubeconfig_path: kubeconfig, ..devcluster::Options::default() };
            let runtime = tokio_runtime()?;
            let engine = engine(&EngineOptions { pooling: true, cache_dir: host.cache_dir() })?;
            runtime.block_on(dev(&engine, &dir, options, health_addr, faults))?;
        }
        Command::Run { dir, health_addr, host, leader } => {
            let runtime = tokio_runtime()?;
            let engine = engine(&EngineOptions { pooling: true, cache_dir: host.cache_dir() })?;
            runtime.block_on(run_host(&engine, &dir, health_addr, &leader))?;
        }
        Command::New { name, path, sdk, group, version, kind, scope, lang } => {
            let dir = path.unwrap_or_else(|| PathBuf::from(&name));
            let language = match lang {
                cli::Lang::Rust => scaffold::Language::Rust,
                cli::Lang::Python => scaffold::Language::Python,
            };
            let sdk = match sdk {
                Some(dir) => scaffold::Sdk::at(&dir, language)?,
                None => scaffold::Sdk::of_this_build(language),
            };
            let parent = scaffold::Parent { group, version, kind, cluster: scope == cli::Scope::Cluster };
            let created = scaffold::create(&name, &parent, &dir, &sdk, language)?;
            println!("created {} ({}), with the SDK from {sdk}", dir.display(), created.kind);
            for file in &created.files {
                println!("  {}", file.display());
            }
            println!("next:");
            for step in &created.next_steps {
                println!("  {step}");
            }
        }
        Command::Describe { plugin } => {
            let plugin = Plugin::load(&engine(&one_shot())?, &plugin)?;
            print!("{}", serde_yaml_ng::to_string(&describe(&plugin)?)?);
        }
        Command::Render { plugin, parent, observed, related, config, now } => {
            let plugin = Plugin::load(&engine(&one_shot())?, &plugin)?;
            let now = now.unwrap_or_else(|| jiff::Timestamp::now().to_string());
            let rendered = render::render(&plugin, &Inputs { parent, observed, related, config }, &now)?;
            for note in &rendered.notes {
                eprintln!("note: {note}");
            }
            print!("{}", rendered.to_yaml()?);
        }
        Command::Crds { plugins, dir } => {
            let mut files = plugins;
            if let Some(dir) = dir {
                files.extend(host::plugin_files(&dir)?);
            }
            anyhow::ensure!(!files.is_empty(), "name plugin files or a directory with --plugins DIR");
            let engine = engine(&one_shot())?;
            for file in files {
                let plugin = Plugin::load(&engine, &file)?;
                for crd in plugin.crds() {
                    print!("---\n{}", serde_yaml_ng::to_string(crd)?);
                }
            }
        }
        Command::Rbac { dir, namespace, name, service_account_namespace } => {
            let (plugins, failures) = host::load_dir(&engine(&one_shot())?, &dir)?;
            if let Some(failure) = failures.first() {
                anyhow::bail!("{failure} (RBAC for the other plugins alone would not let it run)");
            }
            anyhow::ensure!(!plugins.is_empty(), "no plugin (*.wasm) in {}", dir.display());
            let service_account_namespace = service_account_namespace
                .or_else(|| namespace.clone())
                .unwrap_or_else(|| rbac::Options::default().service_account_namespace);
            let options = rbac::Options { name, namespace, service_account_namespace };
            for object in rbac::objects(plugins.iter().map(|p| p.manifest()), &options) {
                print!("---\n{}", serde_yaml_ng::to_string(&object)?);
            }
        }
    }
    Ok(())
}

/// The engine options of the one-shot commands: no pooling, the default cache.
fn one_shot() -> EngineOptions {
    EngineOptions { pooling: false, cache_dir: cli::default_cache_dir() }
}

fn tokio_runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread().enable_all().build()?)
}

/// One-shot commands need no pooling; a long-running host wants it.
fn engine(options: &EngineOptions) -> Result<Engine> {
    Engine::with_options(options).map_err(|e| anyhow::anyhow!("cannot start the WebAssembly engine: {e:#}"))
}

#[cfg(feature = "dev")]
/// `faults` start once the plugins run: they are for the controllers, not for installing CRDs.
async fn dev(
    engine: &Engine,
    dir: &Path,
    options: devcluster::Options,
    health_addr: Option<SocketAddr>,
    faults: Option<devcluster::Faults>,
) -> Result<()> {
    anyhow::ensure!(dir.is_dir(), "{}: not a directory", dir.display());
    let shutdown = shutdown_signal();
    let health = Health::new();
    let metrics = Metrics::new();
    let health_server = match health_addr {
        Some(addr) => Some(health::serve(addr, health.clone(), Some(metrics.router())).await?),
        None => None,
    };
    let cluster = DevCluster::start(options).await?;
    let client = cluster.client();
    println!("export KUBECONFIG={}", cluster.kubeconfig_path().display());
    eprintln!(
        "embedded API server on {}; try: kubectl --kubeconfig {} get crds",
        cluster.url(),
        cluster.kubeconfig_path().display()
    );
    let options = DirOptions {
        install_crds: true,
        controller: controller::Options { metrics, ..controller::Options::default() },
    };
    let host = Host::from_dir(&client, engine, dir, options).await?;
    let mut print_status = status_printer();
    print_status(&host);
    if faults.is_some() {
        eprintln!("injecting the faults of the --faults file from now on");
        cluster.set_faults(faults);
    }
    eprintln!("watching {} for changes; Ctrl-C stops", dir.display());
    health.set_ready(synced(&host).await);
    host.watch(not_ready_on(shutdown, &health), print_status).await?;
    if let Some(server) = health_server {
        server.shutdown().await;
    }
    cluster.shutdown().await;
    Ok(())
}

async fn run_host(engine: &Engine, dir: &Path, health_addr: SocketAddr, leader: &cli::LeaderArgs) -> Result<()> {
    let shutdown = shutdown_signal();
    let health = Health::new();
    let metrics = Metrics::new();
    let health_server = health::serve(health_addr, health.clone(), Some(metrics.router())).await?;
    let client = kube::Client::try_default().await.context("no cluster: set KUBECONFIG or run in a Pod")?;

    let leadership = leader.leader_elect.then(|| {
        let identity = leader.identity.clone().unwrap_or_else(default_identity);
        let lease = Duration::from_secs(leader.lease_duration.max(1));
        tracing::info!(%identity, lease = %leader.lease_name, namespace = %leader.lease_namespace, "standing for leader");
        Elector::new(client.clone(), &leader.lease_namespace, &leader.lease_name, identity, lease).spawn()
    });
    tokio::pin!(shutdown);
    if let Some(leadership) = &leadership {
        // A standby is healthy and ready; it just does not reconcile.
        health.set_ready(true);
        let mut leading = leadership.subscribe();
        tokio::select! {
            () = &mut shutdown => {
                health_server.shutdown().await;
                return Ok(());
            }
            acquired = leading.wait_for(|l| *l) => { acquired.context("leader election stopped")?; }
        }
        tracing::info!("leading: starting controllers");
    }

    let options = DirOptions {
        controller: controller::Options { metrics, ..controller::Options::default() },
        ..DirOptions::default()
    };
    let host = Host::from_dir(&client, engine, dir, options).await?;
    health.set_ready(synced(&host).await);
    let lost = async {
        match &leadership {
            Some(l) => {
                let _ = l.subscribe().wait_for(|leading| !leading).await;
            }
            None => std::future::pending().await,
        }
    };
    let mut lost_leadership = false;
    let stop = async {
        tokio::select! {
            () = &mut shutdown => {}
            () = lost => lost_leadership = true,
        }
    };
    host.watch(not_ready_on(stop, &health), |_| {}).await?;
    health_server.shutdown().await;
    if let Some(leadership) = leadership {
        if lost_leadership {
            // Another replica leads now; exiting lets this Pod restart as a standby.
            anyhow::bail!("lost the leader lease {}", leader.lease_name);
        }
        leadership.release().await.context("releasing the leader lease")?;
    }
    Ok(())
}

/// Waits for every controller's caches; readiness means they are synced.
async fn synced(host: &Host) -> bool {
    let synced = host.wait_synced(Duration::from_secs(60)).await;
    if !synced {
        tracing::error!("caches not synced within 60 s: not ready");
    }
    synced
}

/// The hostname and process id: unique enough outside a Pod (where POD_NAME is set).
fn default_identity() -> String {
    let host =
        std::fs::read_to_string("/etc/hostname").map(|h| h.trim().to_string()).unwrap_or_else(|_| "kubewasm".into());
    format!("{host}-{}", std::process::id())
}

/// Waits for `shutdown`, then reports not ready while the host stops.
async fn not_ready_on(shutdown: impl std::future::Future<Output = ()>, health: &Health) {
    shutdown.await;
    health.set_ready(false);
}

/// Prints the plugin table when it differs from the one printed last: the first scan and
/// a rescan that changed nothing print nothing new.
#[cfg(feature = "dev")]
fn status_printer() -> impl FnMut(&Host) {
    let mut last = None;
    move |host: &Host| {
        let table = status_table(host);
        if last.as_ref() != Some(&table) {
            eprint!("{table}");
            last = Some(table);
        }
    }
}

/// One line per plugin file: what runs, and why a file is not in use.
#[cfg(feature = "dev")]
fn status_table(host: &Host) -> String {
    use std::fmt::Write;
    let status = host.status();
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
    }
    table
}

/// Ctrl-C or SIGTERM. Listens for SIGTERM from the moment it is called, not from its
/// first poll: a SIGTERM that arrives before anyone listens kills the process outright.
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
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

/// The manifest as `kubewasm describe` shows it: CRDs by name, not in full.
fn describe(plugin: &Plugin) -> Result<Value> {
    let m = plugin.manifest();
    let mut out = serde_json::to_value(m)?;
    out["contract"] = json!(format!("kubewasm:reconciler@{CONTRACT_VERSION}"));
    out["sha256"] = json!(plugin.hash());
    out["fieldManager"] = json!(m.field_manager());
    // What each call runs under: the host's defaults, lowered by the manifest.
    let limits = plugin.limits();
    out["limits"] = json!({
        "deadline": format!("{}ms", limits.deadline.as_millis()),
        "memory": format!("{}Mi", limits.memory_bytes >> 20),
        "logLinesPerCall": limits.log_lines,
    });
    out["crds"] = plugin.crds().iter().map(|c| c["metadata"]["name"].clone()).collect();
    Ok(out)
}
