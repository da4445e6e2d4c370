//! The `kubewasm` binary: parses the command line and wires the library together.
//! The command-line tools live here, not in the library, so that a user of the
//! library does not compile what they need (wit-component, wasm-encoder, clap):
//! `render` (one offline reconcile), `rbac` (the RBAC the plugins need), `scaffold`
//! (a new plugin) and `componentize` (a Go plugin's core module made a component).

#![warn(clippy::pedantic)]
#![allow(clippy::must_use_candidate)]

mod cli;
mod componentize;
mod rbac;
mod render;
mod scaffold;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Parser;
use kubewasm::logging;
use kubewasm::plugin::{CONTRACT_VERSION, Engine, EngineOptions, Plugin};
use kubewasm::{run, runtime};
#[cfg(feature = "dev")]
use kubewasm_devcluster::{self as devcluster, DevCluster};
use serde_json::{Value, json};

use cli::{Cli, Command};
use render::Inputs;

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
            eprintln!("error: {}", report(&e));
            ExitCode::FAILURE
        }
    }
}

/// The error and its causes, each said once: the library's errors name their cause in
/// their message and also keep it as `source()` for callers that match on it.
fn report(e: &anyhow::Error) -> String {
    let mut out = e.to_string();
    for cause in e.chain().skip(1) {
        let cause = cause.to_string();
        if !out.contains(&cause) {
            out.push_str(": ");
            out.push_str(&cause);
        }
    }
    out
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        #[cfg(feature = "dev")]
        Command::Dev { dir, data_dir, kubeconfig, port, health_addr, faults, insecure_http, host } => {
            let faults = faults.as_deref().map(devcluster::Faults::read).transpose()?;
            let cluster = devcluster::Options {
                data_dir,
                port,
                kubeconfig_path: kubeconfig,
                plain_http: insecure_http,
                ..devcluster::Options::default()
            };
            let options = run::Options { health_addr, install_crds: true, ..run::Options::new(dir) };
            let runtime = tokio_runtime()?;
            let engine = engine(&EngineOptions { pooling: true, cache_dir: host.cache_dir() })?;
            runtime.block_on(dev(&engine, &options, cluster, faults))?;
        }
        Command::Run { dir, health_addr, host, leader } => {
            let options =
                run::Options { health_addr: Some(health_addr), replicas: leader.mode(), ..run::Options::new(dir) };
            let runtime = tokio_runtime()?;
            let engine = engine(&EngineOptions { pooling: true, cache_dir: host.cache_dir() })?;
            runtime.block_on(async {
                let shutdown = run::shutdown_signal();
                let client = kube::Client::try_default().await.context("no cluster: set KUBECONFIG or run in a Pod")?;
                run::run(&engine, &client, &options, shutdown, |_| {}).await?;
                anyhow::Ok(())
            })?;
        }
        Command::New { name, path, sdk, group, version, kind, scope, lang } => {
            let dir = path.unwrap_or_else(|| PathBuf::from(&name));
            let language = match lang {
                cli::Lang::Rust => scaffold::Language::Rust,
                cli::Lang::Python => scaffold::Language::Python,
                cli::Lang::Js => scaffold::Language::JavaScript,
                cli::Lang::Ts => scaffold::Language::TypeScript,
                cli::Lang::Go => scaffold::Language::Go,
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
        Command::Componentize { core, output } => {
            let size = componentize::componentize_to(&core, &output)?;
            eprintln!("wrote {} ({size} bytes)", output.display());
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
                files.extend(runtime::plugin_files(&dir)?);
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
            let (plugins, failures) = runtime::load_dir(&engine(&one_shot())?, &dir)?;
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

/// The embedded API server, then the host on it; `faults` start once the plugins are
/// loaded: they are for the controllers, not for installing CRDs.
#[cfg(feature = "dev")]
async fn dev(
    engine: &Engine,
    options: &run::Options,
    cluster: devcluster::Options,
    mut faults: Option<devcluster::Faults>,
) -> Result<()> {
    // Before anything slow: a SIGTERM during start-up must stop the process promptly.
    let shutdown = run::shutdown_signal();
    let cluster = DevCluster::start(cluster).await?;
    println!("export KUBECONFIG={}", cluster.kubeconfig_path().display());
    eprintln!(
        "embedded API server on {}; try: kubectl --kubeconfig {} get crds",
        cluster.url(),
        cluster.kubeconfig_path().display()
    );
    eprintln!("watching {} for changes; Ctrl-C stops", options.dir.display());
    // The table is printed when it differs from the last one: a rescan that changed
    // nothing prints nothing.
    let mut last_table = None;
    let on_change = |runtime: &kubewasm::runtime::Runtime| {
        let table = run::plugin_table(runtime);
        if last_table.as_ref() != Some(&table) {
            eprint!("{table}");
            last_table = Some(table);
        }
        if let Some(faults) = faults.take() {
            eprintln!("injecting the faults of the --faults file from now on");
            cluster.set_faults(Some(faults));
        }
    };
    let result = run::run(engine, &cluster.client(), options, shutdown, on_change).await;
    cluster.shutdown().await;
    Ok(result?)
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
