//! `kubewasm dev`: the embedded API server, the host on it following the plugin
//! directory, the plugin projects built from source into that directory (`--watch`,
//! and projects found in it), and the table of what runs and how each build went,
//! printed whenever it changes.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use anyhow::Result;
use kubewasm::plugin::Engine;
use kubewasm::run;
use kubewasm::webhook::tls::Identity;
use kubewasm::webhook::{WebhookOptions, register};
use kubewasm_devcluster::{self as devcluster, DevCluster};
use tokio::sync::Semaphore;
use tracing::{error, info};

use crate::build::{self, Project, State};

/// The plugin projects `kubewasm dev` builds: those `--watch` names, then those found in
/// the plugin directory `dir`, each once.
///
/// # Errors
///
/// A `--watch` directory that is no plugin project.
pub fn projects(watch: &[PathBuf], dir: &Path) -> Result<Vec<Project>> {
    let mut projects = watch.iter().map(|p| Project::at(p)).collect::<Result<Vec<_>, _>>()?;
    for found in Project::found_in(dir) {
        if !projects.iter().any(|p| p.dir == found.dir) {
            projects.push(found);
        }
    }
    Ok(projects)
}

/// The webhook server of `kubewasm dev`: on `listen` (a free loopback port unless told),
/// with a CA made at start, registered with the embedded API server at the address it is
/// bound to, by the path `kubewasm run` takes in a cluster.
///
/// # Errors
///
/// When no certificate can be made for `listen`'s address.
pub fn webhooks(listen: SocketAddr) -> Result<WebhookOptions> {
    Ok(WebhookOptions {
        listen,
        identity: Identity::generate(&[listen.ip().to_string()])?,
        endpoint: None,
        name: register::DEFAULT_NAME.into(),
    })
}

/// The embedded API server, then the host on it, with `projects` built into the plugin
/// directory as they change; `faults` start once the plugins are loaded: they are for
/// the controllers, not for installing CRDs.
pub async fn dev(
    engine: &Engine,
    options: &run::Options,
    cluster: devcluster::Options,
    mut faults: Option<devcluster::Faults>,
    projects: Vec<Project>,
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
    // The Python projects' development components read copies of their project's
    // sources, and only they: `kubewasm run` names none.
    let mut options = options.clone();
    options.development = projects
        .iter()
        .filter(|p| p.language == build::Language::Python)
        .map(|p| (p.name.clone(), p.snapshots()))
        .collect();
    let options = &options;
    let table = Arc::new(Mutex::new(Table::default()));
    // One build at a time: the machine's cores go to it, and cargo locks its target
    // directory anyway. (A build a development component stands in for runs beside,
    // niced: see `build::follow`.)
    let builds = Arc::new(Semaphore::new(1));
    let followers: Vec<_> = projects
        .into_iter()
        .map(|project| {
            eprintln!(
                "building {} ({}) into {}.wasm as it changes",
                project.dir.display(),
                project.language,
                project.name
            );
            let table = table.clone();
            let report = move |project: &Project, state: State, failure: Option<&build::Error>| {
                log(project, &state, failure);
                lock(&table).set_build(project, state);
            };
            let follow = build::follow(project, options.dir.clone(), builds.clone(), report);
            tokio::spawn(async move {
                if let Err(e) = follow.await {
                    error!("{e}");
                }
            })
        })
        .collect();
    let on_change = |runtime: &kubewasm::runtime::Runtime| {
        lock(&table).set_plugins(run::plugin_table(runtime));
        if let Some(faults) = faults.take() {
            eprintln!("injecting the faults of the --faults file from now on");
            cluster.set_faults(Some(faults));
        }
    };
    let result = run::run(engine, &cluster.client(), options, shutdown, on_change).await;
    followers.iter().for_each(tokio::task::JoinHandle::abort);
    let _ = std::fs::remove_dir_all(build::scratch_root());
    cluster.shutdown().await;
    Ok(result?)
}

fn lock(table: &Mutex<Table>) -> std::sync::MutexGuard<'_, Table> {
    table.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What a building line adds when the development component runs the saved sources
/// during the build.
fn meanwhile(development: bool) -> &'static str {
    if development { " (the development component runs the saved sources meanwhile)" } else { "" }
}

/// A build's end in the log: the whole of a failure's output.
fn log(project: &Project, state: &State, failure: Option<&build::Error>) {
    let dir = project.dir.display();
    match state {
        State::Building { development } => info!(project = %dir, "building{}", meanwhile(*development)),
        State::Built { took } => info!(project = %dir, ?took, "built"),
        State::Failed(summary) => {
            error!(project = %dir, "build failed, the running version stays: {summary}");
            if let Some(output) = failure.map(build::Error::output).filter(|o| o != summary) {
                eprintln!("{output}");
            }
        }
    }
}

/// What `kubewasm dev` shows: the host's plugin table, then one line per project it
/// builds; printed when it differs from what was printed last.
#[derive(Default)]
struct Table {
    plugins: String,
    builds: BTreeMap<PathBuf, (String, State)>,
    printed: Option<String>,
}

impl Table {
    fn set_plugins(&mut self, plugins: String) {
        self.plugins = plugins;
        self.print();
    }

    fn set_build(&mut self, project: &Project, state: State) {
        self.builds.insert(project.dir.clone(), (project.name.clone(), state));
        self.print();
    }

    fn render(&self) -> String {
        let mut table = self.plugins.clone();
        for (dir, (name, state)) in &self.builds {
            let line = match state {
                State::Building { development } => {
                    let meanwhile = meanwhile(*development);
                    format!("  {name:<20} {:<8} {:<12}  {}{meanwhile}", "building", "", dir.display())
                }
                State::Built { took } => {
                    let took = format!("{:.1} s", took.as_secs_f64());
                    format!("  {name:<20} {:<8} {took:<12}  {}", "built", dir.display())
                }
                State::Failed(summary) => {
                    format!(
                        "  {name:<20} {:<8} {:<12}  BUILD ERROR {summary} (the running version stays)",
                        "failed", ""
                    )
                }
            };
            table.push_str(&line);
            table.push('\n');
        }
        table
    }

    fn print(&mut self) {
        let table = self.render();
        if self.printed.as_ref() != Some(&table) {
            eprint!("{table}");
            self.printed = Some(table);
        }
    }
}
