//! The `kubewasm` binary: parses the command line and wires the library together.
//! The command-line tools live here, not in the library, so that a user of the
//! library does not compile what they need (wit-component, wasm-encoder, clap):
//! `render` (one offline reconcile), `rbac` (the RBAC the plugins need), `webhooks` (the
//! webhook registration they need), `scaffold` (a new plugin), `componentize` (a Go
//! plugin's core module made a component) and `registry` (`push`, `pull`, `sign`,
//! `verify`: plugins in OCI registries).

#![warn(clippy::pedantic)]
#![allow(clippy::must_use_candidate)]

#[cfg(feature = "dev")]
mod build;
mod cli;
mod componentize;
#[cfg(feature = "dev")]
mod dev;
mod diff;
mod rbac;
mod registry;
mod render;
mod scaffold;
mod webhooks;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Parser;
use kubewasm::logging;
use kubewasm::plugin::{Engine, EngineOptions, Plugin};
use kubewasm::webhook::tls::{self, Identity};
use kubewasm::webhook::{WebhookOptions, register};
use kubewasm::{run, runtime};
#[cfg(feature = "dev")]
use kubewasm_devcluster as devcluster;
use serde_json::{Value, json};

use cli::{Cli, Command};
use kubewasm::plugin::Change;
use kubewasm_contract::Operation;
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

/// `kubewasm run`: the host against the cluster of the in-cluster config or KUBECONFIG.
fn run_in_cluster(mut options: run::Options, webhooks: &cli::WebhookArgs, host: &cli::HostArgs) -> Result<()> {
    options.namespace.clone_from(&host.host_namespace);
    let runtime = tokio_runtime()?;
    let engine = engine(&host.engine_options())?;
    runtime.block_on(async {
        let shutdown = run::shutdown_signal();
        let client = kube::Client::try_default().await.context("no cluster: set KUBECONFIG or run in a Pod")?;
        options.webhooks = Some(webhook_options(&client, webhooks, &options.namespace).await?);
        run::run(&engine, &client, &options, shutdown, |_| {}).await?;
        anyhow::Ok(())
    })
}

/// The webhook server of `kubewasm run`: behind the Service `--webhook-service`, with the
/// certificate of `--webhook-tls-secret` or one made for the Service's names.
async fn webhook_options(client: &kube::Client, args: &cli::WebhookArgs, namespace: &str) -> Result<WebhookOptions> {
    let endpoint = register::Endpoint::service(&format!("{namespace}/{}", args.service))?;
    let service = args.service.split(':').next().unwrap_or_default();
    let identity = match &args.tls_secret {
        Some(secret) => Identity::from_secret(client.clone(), namespace, secret).await?,
        None => Identity::generate(&tls::service_names(namespace, service))?,
    };
    Ok(WebhookOptions { listen: args.listen, identity, endpoint: Some(endpoint), name: register::DEFAULT_NAME.into() })
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        #[cfg(feature = "dev")]
        Command::Dev {
            dir,
            watch,
            data_dir,
            kubeconfig,
            port,
            health_addr,
            faults,
            insecure_http,
            webhook_listen,
            host,
        } => {
            let faults = faults.as_deref().map(devcluster::Faults::read).transpose()?;
            let projects = dev::projects(&watch, &dir)?;
            let cluster = devcluster::Options {
                data_dir,
                port,
                kubeconfig_path: kubeconfig,
                plain_http: insecure_http,
                ..devcluster::Options::default()
            };
            let options = run::Options {
                health_addr,
                install_crds: true,
                namespace: host.host_namespace.clone(),
                plugin_resources: host.plugin_resources,
                trusted_root: registry::trusted_root(host.trusted_root.as_deref())?,
                webhooks: Some(dev::webhooks(webhook_listen)?),
                ..run::Options::new(dir)
            };
            let runtime = tokio_runtime()?;
            let engine = engine(&host.engine_options())?;
            runtime.block_on(dev::dev(&engine, &options, cluster, faults, projects))?;
        }
        Command::Run { dir, health_addr, webhooks, host, leader, plugin_identities } => {
            let options = run::Options {
                health_addr: Some(health_addr),
                replicas: leader.mode(),
                plugin_resources: host.plugin_resources,
                trusted_root: registry::trusted_root(host.trusted_root.as_deref())?,
                plugin_identities,
                ..run::Options::new(dir)
            };
            run_in_cluster(options, &webhooks, &host)?;
        }
        Command::New { name, path, sdk, group, version, kind, scope, lang, webhooks } => {
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
            let created = scaffold::create(&name, &parent, &dir, &sdk, language, webhooks)?;
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
        Command::Render(args) => render_command(*args)?,
        Command::Crds { plugins, dir, host } => crds_command(plugins, dir, host)?,
        command @ Command::Rbac { .. } => rbac_command(command)?,
        Command::Webhooks(args) => webhooks_command(&args)?,
        Command::Diff { plugin, output } => tokio_runtime()?.block_on(diff::command(&plugin, output))?,
        command @ (Command::Push { .. }
        | Command::Pull { .. }
        | Command::Sign { .. }
        | Command::Verify { .. }
        | Command::GenerateKey { .. }) => registry::command(command)?,
    }
    Ok(())
}

/// `kubewasm render`: one reconcile, or one event handed to the handler, offline.
fn render_command(args: cli::RenderArgs) -> Result<()> {
    let cli::RenderArgs {
        plugin,
        parent,
        event,
        admission,
        convert,
        object,
        old,
        initial,
        final_state_unknown,
        http,
        settings,
        secrets,
        observed,
        related,
        config,
        now,
    } = args;
    let plugin = Plugin::load(&engine(&one_shot())?, &plugin)?;
    let now = now.unwrap_or_else(jiff::Timestamp::now).to_string();
    let call = match (parent, event, object) {
        (Some(parent), _, _) => render::Call::Reconcile { parent },
        (None, None, object) if let Some(admission) = admission => {
            let operation = match admission {
                cli::AdmissionOperation::Create => Operation::Create,
                cli::AdmissionOperation::Update => Operation::Update,
                cli::AdmissionOperation::Delete => Operation::Delete,
            };
            render::Call::Admit { operation, object, old }
        }
        (None, None, Some(objects)) if let Some(version) = convert => render::Call::Convert { objects, version },
        (None, Some(change), Some(object)) => {
            let change = match change {
                cli::EventChange::Added => Change::Added,
                cli::EventChange::Updated => Change::Updated,
                cli::EventChange::Deleted => Change::Deleted,
            };
            render::Call::Handle { change, object, old, initial, final_state_unknown }
        }
        _ => anyhow::bail!(
            "give --parent to reconcile, --event and --object to handle an event, --admission to admit a write, \
             or --convert and --object to convert objects"
        ),
    };
    let inputs = Inputs { observed, related, config, settings, http, secrets };
    let rendered = render::render(&plugin, &call, &inputs, &now)?;
    for line in rendered.remarks() {
        eprintln!("{line}");
    }
    print!("{}", rendered.to_yaml()?);
    if let render::Outcome::Handled { error: Some(error), .. } = &rendered.outcome {
        anyhow::bail!("the handler did not accept the event: {error}");
    }
    if let Some(message) = render::denial_message(&rendered.outcome) {
        anyhow::bail!("the write is denied: {message}");
    }
    Ok(())
}

/// `kubewasm crds`: the CRDs the plugins define, and with `host` the host's own.
fn crds_command(plugins: Vec<PathBuf>, dir: Option<PathBuf>, host: bool) -> Result<()> {
    let mut files = plugins;
    if let Some(dir) = dir {
        files.extend(runtime::plugin_files(&dir)?);
    }
    anyhow::ensure!(host || !files.is_empty(), "name plugin files, a directory with --plugins DIR, or --host");
    if host {
        print_stream(&[kubewasm::resource::crd::definition()])?;
    }
    if files.is_empty() {
        return Ok(());
    }
    let engine = engine(&one_shot())?;
    for file in files {
        print_stream(Plugin::load(&engine, &file)?.crds())?;
    }
    Ok(())
}

/// `kubewasm rbac`: what the plugins of `dir` need, with the Secrets their settings name.
fn rbac_command(command: Command) -> Result<()> {
    let Command::Rbac {
        dir,
        namespace,
        name,
        service_account_namespace,
        webhook_tls_secret,
        webhook_configuration,
        plugin_identities,
        plugin_resources,
        pull_secrets,
    } = command
    else {
        unreachable!("not the rbac command")
    };
    let service_account_namespace = service_account_namespace
        .or_else(|| namespace.clone())
        .unwrap_or_else(|| rbac::Options::default().service_account_namespace);
    let options = rbac::Options {
        name,
        namespace,
        service_account_namespace,
        tls_secret: webhook_tls_secret,
        webhook_configuration,
        plugin_resources,
        pull_secrets,
    };
    let dir = dir.as_path();
    let plugins = load_with_settings(dir, "RBAC for the other plugins alone would not let it run")?;
    // The Secrets each plugin's NAME.toml names.
    let mut secrets = Vec::new();
    for (_, settings) in &plugins {
        secrets.push(kubewasm::secrets::refs(&settings.config)?.into_iter().map(|r| r.name).collect::<Vec<_>>());
    }
    let needs: Vec<rbac::Needs<'_>> = plugins
        .iter()
        .zip(&secrets)
        .map(|((p, settings), secrets)| rbac::Needs {
            manifest: p.manifest(),
            secrets,
            account: settings.service_account.as_deref(),
        })
        .collect();
    if plugin_identities {
        print_stream(&rbac::objects_per_plugin(&needs, &options))
    } else {
        print_stream(&rbac::objects(&needs, &options))
    }
}

/// `kubewasm webhooks`: the registration of the plugins of `args.dir`, as their settings say.
fn webhooks_command(args: &cli::WebhooksArgs) -> Result<()> {
    use kubewasm::webhook::register::Endpoint;
    let endpoint = match (&args.service, &args.url) {
        (Some(service), _) => Endpoint::service(service)?,
        (None, Some(url)) => Endpoint::url(url)?,
        (None, None) => anyhow::bail!("give --service NAMESPACE/NAME[:PORT] or --url URL"),
    };
    let ca_bundle = args.ca_bundle.as_deref().map(kubewasm::webhook::tls::read_ca_bundle).transpose()?;
    let plugins = load_with_settings(&args.dir, "its webhooks would be missing")?;
    let plugins: Vec<(&kubewasm::plugin::Manifest, &kubewasm::plugin::Settings)> =
        plugins.iter().map(|(p, s)| (p.manifest(), s)).collect();
    let objects = webhooks::objects(&args.name, &plugins, &endpoint, ca_bundle.as_deref())?;
    if objects.is_empty() {
        eprintln!("no plugin in {} defaults, validates or converts: nothing to register", args.dir.display());
    }
    print_stream(&objects)
}

/// The plugins of `dir` with their settings (`NAME.toml`, or the defaults). A plugin that
/// does not load fails the whole: `consequence` says what printing the others would miss.
fn load_with_settings(
    dir: &std::path::Path,
    consequence: &str,
) -> Result<Vec<(std::sync::Arc<Plugin>, kubewasm::plugin::Settings)>> {
    let (plugins, failures) = runtime::load_dir(&engine(&one_shot())?, dir)?;
    if let Some(failure) = failures.first() {
        anyhow::bail!("{failure} ({consequence})");
    }
    anyhow::ensure!(!plugins.is_empty(), "no plugin (*.wasm) in {}", dir.display());
    plugins
        .into_iter()
        .map(|plugin| {
            let toml = std::path::Path::new(plugin.origin()).with_extension("toml");
            let settings = if toml.is_file() {
                kubewasm::plugin::Settings::read(&toml)?
            } else {
                kubewasm::plugin::Settings::default()
            };
            Ok((plugin, settings))
        })
        .collect()
}

/// Prints `objects` as a YAML stream.
fn print_stream(objects: &[Value]) -> Result<()> {
    print!("{}", yaml_stream(objects)?);
    Ok(())
}

/// `objects` as a YAML stream, each document after `---`.
fn yaml_stream(objects: &[Value]) -> Result<String, serde_yaml_ng::Error> {
    let mut out = String::new();
    for object in objects {
        out.push_str("---\n");
        out.push_str(&serde_yaml_ng::to_string(object)?);
    }
    Ok(out)
}

/// The engine options of the one-shot commands: no pooling, the default cache.
fn one_shot() -> EngineOptions {
    EngineOptions { cache_dir: cli::default_cache_dir(), ..EngineOptions::default() }
}

fn tokio_runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread().enable_all().build()?)
}

/// One-shot commands need no pooling; a long-running host wants it.
fn engine(options: &EngineOptions) -> Result<Engine> {
    Engine::with_options(options).map_err(|e| anyhow::anyhow!("cannot start the WebAssembly engine: {e:#}"))
}

/// The manifest as `kubewasm describe` shows it: CRDs by name, not in full.
fn describe(plugin: &Plugin) -> Result<Value> {
    let m = plugin.manifest();
    let mut out = serde_json::to_value(m)?;
    out["contract"] = json!(format!("kubewasm:reconciler@{}", plugin.contract().as_str()));
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
