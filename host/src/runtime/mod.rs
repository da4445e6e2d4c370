//! The runtime: the plugins a host runs, each with its runner (a controller), started
//! and stopped independently; with a plugin directory, kept in step with its files.
//!
//! `directory` reads the files, [`Runtime`] loads them and asks `reload` (a pure
//! function) what a new version or new settings do to what runs, and `runners` starts,
//! swaps and stops the controllers; `crds` installs the plugins' CRDs for `kubewasm dev`;
//! `resources` follows the cluster's `Plugin` objects, whose modules come from registries.

mod crds;
mod directory;
mod identity;
mod reload;
mod resources;
mod runners;

use std::collections::{BTreeMap, HashSet};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use kube::Client;
use kube::api::DynamicObject;
use kube::runtime::watcher;
use tracing::{error, info};

use crate::controller::{self, Controller, Rollback, Rollout, Strategy};
use crate::distribution::TrustedRoot;
use crate::handler::{self, Handler};
use crate::metrics::{Metrics, Outcome};
use crate::plugin::{self, Egress, Engine, LoadError, Plugin, Settings, SettingsError, Transport};
use crate::resource;
use crate::resource::crd::RolloutMode;
use crate::secrets::Secrets;
use crate::webhook::{Served, Webhooks};
use directory::{Stamp, Writes};
use reload::{Decision, Version};
use runners::{Launch, Runners};

pub use crds::{CrdError, Installed, install_crds, install_host_crd};
pub use identity::{ACCOUNT_PREFIX, Identities, IdentityError};

/// Why the runtime could not follow its plugin directory. A plugin that fails to load,
/// or whose CRDs are refused, is no error of the runtime: it is reported and skipped.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The plugin directory cannot be read or watched.
    #[error("{}: {source}", dir.display())]
    PluginDir { dir: PathBuf, source: std::io::Error },
}

/// The `.wasm` files of `dir` the host would run, in name order.
///
/// # Errors
///
/// When `dir` cannot be read.
pub fn plugin_files(dir: &Path) -> Result<Vec<PathBuf>, Error> {
    let entries = directory::scan(dir).map_err(|source| Error::PluginDir { dir: dir.to_path_buf(), source })?;
    Ok(entries.into_values().map(|e| e.wasm).collect())
}

/// Loads the plugins of `dir` ([`plugin_files`]). A file that fails to load is
/// reported and skipped: one bad plugin never stops the others.
///
/// # Errors
///
/// Only when `dir` itself cannot be read.
pub fn load_dir(engine: &Engine, dir: &Path) -> Result<(Vec<Arc<Plugin>>, Vec<LoadError>), Error> {
    let (mut plugins, mut failures) = (Vec::new(), Vec::new());
    for file in plugin_files(dir)? {
        match Plugin::load(engine, &file) {
            Ok(plugin) => plugins.push(Arc::new(plugin)),
            Err(e) => failures.push(e),
        }
    }
    Ok((plugins, failures))
}

/// How the runtime treats its plugins.
#[derive(Clone, Debug)]
pub struct Options {
    /// Install (server-side apply) the CRDs each plugin defines: `kubewasm dev`.
    pub install_crds: bool,
    /// Settings every controller starts from; `NAME.toml` overrides per plugin.
    pub controller: controller::Options,
    /// The host's own namespace: where the Secrets that settings name are read and the
    /// event handlers' ledgers are kept.
    pub host_namespace: String,
    /// Also run the cluster's `Plugin` objects (`kubewasm.io/v1alpha1`; their CRD from
    /// `kubewasm crds --host`), their pull Secrets read in the host's namespace.
    pub plugin_resources: bool,
    /// Each plugin reads and writes as its own `ServiceAccount`, impersonated; `None`: as
    /// the host.
    pub identities: Option<Identities>,
    /// Where the plugins that admit or convert are published for the webhook server: the
    /// version that runs, with its settings, at every change.
    pub webhooks: Webhooks,
    /// Run the plugins' controllers and event handlers, and report on `Plugin` objects;
    /// `false`: only load the plugins and publish them to `webhooks` (a standby replica,
    /// which serves webhooks while another reconciles).
    pub controllers: bool,
    /// `kubewasm dev` only: where the copies of the project's sources are, one per
    /// version, that a [development component](crate::plugin::development) in the plugin
    /// file `NAME.wasm` reads, by `NAME`. Empty everywhere else: no plugin reads a file.
    pub development: BTreeMap<String, PathBuf>,
    /// Where `Plugin` objects' keyless signatures must come from: a Sigstore trusted
    /// root (Fulcio authorities, Rekor logs); the public-good instance's by default.
    pub trusted_root: Arc<TrustedRoot>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            install_crds: false,
            controller: controller::Options::default(),
            host_namespace: "default".into(),
            plugin_resources: false,
            identities: None,
            webhooks: Webhooks::new(),
            controllers: true,
            development: BTreeMap::new(),
            trusted_root: TrustedRoot::public_good(),
        }
    }
}

/// What the host shows of one plugin file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PluginStatus {
    /// The `.wasm` file.
    pub file: String,
    /// The plugin's name, once a version of it loaded.
    pub name: Option<String>,
    /// The running version (SHA-256 of the file it came from).
    pub hash: Option<String>,
    pub running: bool,
    /// The kind the plugin waits for: not served by the API server yet.
    pub waiting_for: Option<String>,
    /// Why the newest version of the file (or its settings) is not in use.
    pub error: Option<String>,
    /// The API server's last warning about a write of the plugin (a status field its
    /// schema does not declare, dropped).
    pub warning: Option<String>,
}

/// One plugin file as the host runs it.
struct Slot {
    wasm: PathBuf,
    /// Stamps of the `.wasm` and settings files last read, so that a rescan reads only
    /// the files that changed.
    stamps: Option<(Stamp, Option<Stamp>)>,
    /// Hashes of the `.wasm` and settings bytes last read (empty: no settings
    /// file), good or bad, so an unchanged bad file is not reported again at every
    /// rescan.
    seen: Option<(String, String)>,
    /// The last good version and the settings in force.
    plugin: Option<Arc<Plugin>>,
    settings: Settings,
    error: Option<String>,
}

/// One plugin's files as read.
struct Files {
    wasm: Vec<u8>,
    wasm_stamp: Stamp,
    settings_text: Option<String>,
    stamps: (Stamp, Option<Stamp>),
}

impl Files {
    /// Reads `entry`'s files unless their stamps are `last`'s (or `forced`); `None`
    /// when there is nothing to read now: unchanged, gone since the scan (the next
    /// event says so), or created and not yet written (its writer's close brings it).
    async fn read(entry: &directory::Entry, last: Option<(Stamp, Option<Stamp>)>, forced: bool) -> Option<Files> {
        let wasm_stamp = Stamp::of(&entry.wasm)?;
        let stamps = (wasm_stamp, entry.settings.as_deref().and_then(Stamp::of));
        if wasm_stamp.is_empty() || (!forced && last == Some(stamps)) {
            return None;
        }
        let wasm = tokio::fs::read(&entry.wasm).await.ok()?;
        let settings_text = match &entry.settings {
            Some(path) => Some(String::from_utf8_lossy(&tokio::fs::read(path).await.ok()?).into_owned()),
            None => None,
        };
        Some(Files { wasm, wasm_stamp, settings_text, stamps })
    }
}

/// How often the host looks again for the kinds a waiting plugin needs.
const WAIT_RETRY: Duration = Duration::from_secs(2);

/// How often the `Plugin` objects' statuses report how their candidates fare.
const ROLLOUT_REPORT: Duration = Duration::from_secs(5);

/// `plugin` within `settings`' limits, its outbound HTTP as granted (over `transport`;
/// `None`: none at all).
fn limited(plugin: &Arc<Plugin>, settings: &Settings, transport: Option<Transport>, metrics: &Metrics) -> Arc<Plugin> {
    let name = &plugin.manifest().name;
    let egress = match transport {
        None => Egress::denied(name),
        Some(transport) => {
            Egress::new(name, &plugin.manifest().outbound, &settings.http, transport, Some(metrics.clone()))
                // Both lists were checked when the plugin and its settings were read.
                .unwrap_or_else(|e| {
                    error!(plugin = %name, error = %e, "outbound HTTP denied");
                    Egress::denied(name)
                })
        }
    };
    Arc::new(
        Plugin::clone(plugin)
            .with_limits(settings.lower(crate::plugin::Limits::default()))
            .with_egress(Arc::new(egress)),
    )
}

/// The running plugins, one controller each, started and stopped independently; with
/// a directory, kept in step with its files.
pub struct Runtime {
    client: Client,
    runners: Runners,
    /// The plugin directory the runtime follows, if it was started from one.
    directory: Option<Directory>,
    /// The `Plugin` objects it follows, if asked to (boxed: the host's future holds the
    /// runtime, and most hosts follow none).
    resources: Option<Box<resources::Resources>>,
    options: Options,
}

/// A plugin directory and what the host has made of its files.
struct Directory {
    path: PathBuf,
    engine: Engine,
    slots: BTreeMap<String, Slot>,
    compiles: u64,
    failures: u64,
}

impl Directory {
    /// Compiles (or takes from the cache) the component in `bytes`, read from `file`; a
    /// development component reads `sources`.
    async fn load(&mut self, file: &Path, bytes: Vec<u8>, sources: Option<PathBuf>) -> Result<Arc<Plugin>, LoadError> {
        let engine = self.engine.clone();
        let origin = file.display().to_string();
        self.compiles += 1;
        let loaded = tokio::task::spawn_blocking(move || {
            Plugin::from_bytes_reading(&engine, &bytes, &origin, sources.as_deref())
        })
        .await;
        match loaded {
            Ok(loaded) => loaded.map(Arc::new),
            Err(source) => Err(LoadError::Interrupted { origin: file.display().to_string(), source }),
        }
    }
}

impl Runtime {
    /// Starts a controller for each plugin. A plugin whose controller cannot start
    /// (its kinds are not served, say) is reported and skipped.
    pub async fn start(client: &Client, plugins: Vec<(Arc<Plugin>, controller::Options)>) -> Self {
        Self::start_as(client, plugins, None).await
    }

    /// Like [`Runtime::start`], each plugin acting as its own identity when `identities`
    /// is given.
    pub async fn start_as(
        client: &Client,
        plugins: Vec<(Arc<Plugin>, controller::Options)>,
        identities: Option<Identities>,
    ) -> Self {
        let mut runners = Runners::new(client, identities.clone(), true);
        for (plugin, options) in plugins {
            let handler = handler::Options {
                namespace: options.namespace.clone(),
                config: options.config.clone(),
                metrics: options.metrics.clone(),
                secrets: options.secrets.clone(),
                ..handler::Options::default()
            };
            runners.start(plugin, Launch { controller: options, handler, account: None }).await;
        }
        Self {
            client: client.clone(),
            runners,
            directory: None,
            resources: None,
            options: Options { identities, ..Options::default() },
        }
    }

    /// Loads the plugins of `dir` and starts their controllers; then
    /// [`Runtime::watch`] keeps them in step with the directory.
    ///
    /// # Errors
    ///
    /// Only when `dir` cannot be read; a bad plugin file is reported in
    /// [`Runtime::status`] and skipped.
    pub async fn from_dir(client: &Client, engine: &Engine, dir: &Path, options: Options) -> Result<Self, Error> {
        let directory = Directory {
            path: dir.to_path_buf(),
            engine: engine.clone(),
            slots: BTreeMap::new(),
            compiles: 0,
            failures: 0,
        };
        let resources = options.plugin_resources.then(|| Box::new(resources::Resources::new(client, &options, engine)));
        let mut runtime = Self {
            client: client.clone(),
            runners: Runners::new(client, options.identities.clone(), options.controllers),
            directory: Some(directory),
            resources,
            options,
        };
        runtime.rescan().await?;
        Ok(runtime)
    }

    /// Follows the plugin directory until `shutdown` resolves, then stops every
    /// controller. `on_change` is called after each rescan (`kubewasm dev` prints
    /// the status).
    ///
    /// A file is read as soon as its writer is done with it (closed, renamed into
    /// place, hard-linked), with no fixed wait; see `directory`.
    ///
    /// # Errors
    ///
    /// When the directory cannot be watched.
    pub async fn watch(
        mut self,
        shutdown: impl Future<Output = ()>,
        mut on_change: impl FnMut(&Runtime),
    ) -> Result<(), Error> {
        let Some(dir) = self.directory.as_ref().map(|d| d.path.clone()) else { return Ok(()) };
        let (_watcher, mut events) = directory::watch(&dir)
            .map_err(|e| Error::PluginDir { dir: dir.clone(), source: std::io::Error::other(e) })?;
        let mut writes = Writes::default();
        // What changed between the first scan and the watch would go unnoticed.
        self.sync(&writes, &HashSet::new()).await?;
        on_change(&self);
        tokio::pin!(shutdown);
        // The API server's warnings about the plugins' writes show in what `on_change` prints.
        let warnings = self.options.controller.warnings.clone();
        let mut retry = tokio::time::interval(WAIT_RETRY);
        retry.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut plugin_events = match &self.resources {
            Some(resources) => resources.watch(),
            None => futures::stream::pending().boxed(),
        };
        let mut retry_resources = tokio::time::interval(resources::RETRY);
        retry_resources.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut report_rollouts = tokio::time::interval(ROLLOUT_REPORT);
        report_rollouts.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let backstop = writes.backstop();
            let touched: HashSet<PathBuf> = tokio::select! {
                () = &mut shutdown => break,
                _ = retry.tick(), if self.runners.any_waiting() => {
                    if self.runners.start_waiting().await {
                        self.resume_rollouts();
                        Box::pin(self.publish_resources()).await;
                        on_change(&self);
                    }
                    continue;
                }
                () = tokio::time::sleep_until(backstop.unwrap_or_else(tokio::time::Instant::now)), if backstop.is_some() => {
                    writes.expire(tokio::time::Instant::now()).into_iter().collect()
                }
                event = events.recv() => {
                    let Some(event) = event else { break };
                    let mut touched: HashSet<PathBuf> = writes.note(event).into_iter().collect();
                    // The rest of a burst already here (a copy is several events): one rescan.
                    while let Ok(event) = events.try_recv() {
                        touched.extend(writes.note(event));
                    }
                    touched
                }
                () = warnings.changed() => {
                    on_change(&self);
                    continue;
                }
                _ = retry_resources.tick(), if self.resources.as_ref().is_some_and(|r| !r.due().is_empty()) => {
                    Box::pin(self.retry_resources()).await;
                    on_change(&self);
                    continue;
                }
                _ = report_rollouts.tick(), if self.resources.as_ref().is_some_and(|r| r.rolling_out()) => {
                    Box::pin(self.publish_resources()).await;
                    continue;
                }
                Some(event) = plugin_events.next() => {
                    match event {
                        // Boxed: a fetch holds a pull and a compile, which the loop need not carry.
                        Ok(event) => Box::pin(self.sync_resource(*event)).await,
                        Err(e) => error!(error = %e, "watching Plugin objects"),
                    }
                    on_change(&self);
                    continue;
                }
            };
            if let Err(e) = self.sync(&writes, &touched).await {
                error!(error = %e, "plugin directory unreadable");
            }
            on_change(&self);
        }
        self.stop().await;
        Ok(())
    }

    /// Brings the running plugins in step with the directory: loads new and
    /// changed files, applies changed settings, stops the plugins whose file is
    /// gone. A file that fails never replaces the version that runs.
    ///
    /// # Errors
    ///
    /// When the directory cannot be read.
    pub async fn rescan(&mut self) -> Result<(), Error> {
        self.sync(&Writes::default(), &HashSet::new()).await
    }

    /// [`Runtime::rescan`], leaving alone the files a writer holds open (`writes`)
    /// and reading again those events named (`touched`) even if they look unchanged.
    async fn sync(&mut self, writes: &Writes, touched: &HashSet<PathBuf>) -> Result<(), Error> {
        let Some(dir) = self.directory.as_ref().map(|d| d.path.clone()) else { return Ok(()) };
        let entries = directory::scan(&dir).map_err(|source| Error::PluginDir { dir: dir.clone(), source })?;
        let Some(directory) = self.directory.as_mut() else { return Ok(()) };
        let gone: Vec<String> = directory.slots.keys().filter(|stem| !entries.contains_key(*stem)).cloned().collect();
        for stem in gone {
            if let Some(slot) = self.directory.as_mut().and_then(|d| d.slots.remove(&stem))
                && let Some(name) = slot.plugin.map(|p| p.manifest().name.clone())
            {
                self.runners.stop(&name).await;
                self.options.webhooks.remove(&name);
                info!(file = %slot.wasm.display(), "plugin removed; its children stay");
            }
        }
        for (stem, entry) in entries {
            let files = std::iter::once(&entry.wasm).chain(&entry.settings);
            // A file a writer holds open is read once the writer is done with it.
            if files.clone().any(|f| writes.writing(f)) {
                continue;
            }
            let forced = files.clone().any(|f| touched.contains(f));
            self.sync_entry(stem, entry, forced).await;
        }
        Ok(())
    }

    /// Reads `entry`'s files if they changed (or `forced`), and carries out what the
    /// new version or settings mean for its controller.
    async fn sync_entry(&mut self, stem: String, entry: directory::Entry, forced: bool) {
        let Some(dir) = self.directory.as_mut() else { return };
        let last = dir.slots.get(&stem).and_then(|slot| slot.stamps);
        let Some(Files { wasm, wasm_stamp, settings_text, stamps }) = Files::read(&entry, last, forced).await else {
            return;
        };
        let slot = dir.slots.entry(stem).or_insert_with(|| Slot {
            wasm: entry.wasm.clone(),
            stamps: None,
            seen: None,
            plugin: None,
            settings: Settings::default(),
            error: None,
        });
        slot.stamps = Some(stamps);
        let wasm_hash = plugin::digest(&wasm);
        let settings_hash = settings_text.as_deref().map(|t| plugin::digest(t.as_bytes())).unwrap_or_default();
        let (seen_wasm, seen_settings) = slot.seen.as_ref().map(|(w, s)| (w.as_str(), s.as_str())).unzip();
        let wasm_changed = seen_wasm != Some(wasm_hash.as_str());
        let settings_changed = seen_settings != Some(settings_hash.as_str());
        if !wasm_changed && !settings_changed {
            return;
        }
        slot.seen = Some((wasm_hash, settings_hash));
        let mut errors = Vec::new();

        let mut plugin = slot.plugin.clone();
        let mut fresh = false;
        if wasm_changed {
            let sources = self.options.development.get(&entry.stem).cloned();
            match dir.load(&entry.wasm, wasm, sources).await {
                Ok(loaded) => {
                    plugin = Some(loaded);
                    fresh = true;
                }
                // Read while its writer was still at it (the file changed since): the
                // writer's close reads it again. Nothing to report.
                Err(_) if Stamp::of(&entry.wasm) != Some(wasm_stamp) => {
                    let slot = dir.slots.get_mut(&entry.stem).expect("slot inserted above");
                    (slot.stamps, slot.seen) = (None, None);
                    return;
                }
                Err(e) => errors.push(e.to_string()),
            }
            let outcome = if fresh { Outcome::Success } else { Outcome::Error };
            self.options.controller.metrics.reloaded(&entry.wasm.display().to_string(), outcome);
        }
        let slot = dir.slots.get_mut(&entry.stem).expect("slot inserted above");
        let mut settings = slot.settings.clone();
        if settings_changed {
            match settings_text.as_deref().map(Settings::parse) {
                None => {
                    settings = Settings::default();
                    fresh = true;
                }
                Some(Ok(parsed)) => {
                    settings = parsed;
                    fresh = true;
                }
                Some(Err(source)) => {
                    let file = entry.settings.clone().unwrap_or_else(|| entry.wasm.clone());
                    errors.push(SettingsError::Invalid { file, source }.to_string());
                }
            }
        }
        if let Some(new) = &plugin {
            let name = &new.manifest().name;
            let taken = dir.slots.iter().any(|(stem, other)| {
                *stem != entry.stem && other.plugin.as_ref().is_some_and(|p| p.manifest().name == *name)
            }) || self.resources.as_ref().is_some_and(|r| r.runs(name));
            if taken {
                errors.push(format!(
                    "{}: a plugin named {name} is already loaded from another file or a Plugin object",
                    entry.wasm.display()
                ));
                plugin = dir.slots[&entry.stem].plugin.clone();
                fresh = false;
            }
        }

        let slot = dir.slots.get_mut(&entry.stem).expect("slot inserted above");
        if errors.is_empty() {
            slot.error = None;
        } else {
            dir.failures += 1;
            for e in &errors {
                error!("plugin not updated, the running version stays: {e}");
            }
            slot.error = Some(errors.join("; "));
        }
        let next = plugin.filter(|_| fresh);
        let running = slot.plugin.as_ref().filter(|p| self.runners.running(&p.manifest().name));
        let decision = reload::decide(
            running.map(|p| Version { manifest: p.manifest(), settings: &slot.settings }),
            next.as_ref().map(|p| Version { manifest: p.manifest(), settings: &settings }),
        );
        let Some(plugin) = next.filter(|_| decision != Decision::Keep) else { return };
        let previous = slot.plugin.replace(plugin.clone());
        slot.settings = settings.clone();
        self.apply(decision, previous, plugin, settings).await;
    }

    /// Takes a change of a `Plugin` object: a new generation's module is fetched and, if
    /// every step succeeds, run as a new version of a file would be; a deleted object's
    /// plugin stops (its children stay).
    async fn sync_resource(&mut self, event: watcher::Event<DynamicObject>) {
        let object = match event {
            watcher::Event::Apply(object) | watcher::Event::InitApply(object) => object,
            watcher::Event::Delete(object) => {
                let removed = object.metadata.name.as_ref().and_then(|n| self.resources.as_mut()?.slots.remove(n));
                if let Some(name) = removed.and_then(|slot| slot.plugin).map(|p| p.manifest().name.clone()) {
                    self.runners.stop(&name).await;
                    info!(plugin = %name, "Plugin deleted; its children stay");
                }
                return;
            }
            watcher::Event::Init | watcher::Event::InitDone => return,
        };
        let Some(engine) = self.directory.as_ref().map(|d| d.engine.clone()) else { return };
        let Some(resources) = self.resources.as_mut() else { return };
        let Some((name, attempt)) = resources.attempt(&engine, &object).await else { return };
        self.take_resource(name, attempt).await;
    }

    /// Attempts again the `Plugin` objects whose generation failed at its registry or
    /// pull Secret.
    async fn retry_resources(&mut self) {
        let Some(engine) = self.directory.as_ref().map(|d| d.engine.clone()) else { return };
        for name in self.resources.as_ref().map(|r| r.due()).unwrap_or_default() {
            let Some(resources) = self.resources.as_ref() else { return };
            if let Some(attempt) = resources.fetch(&engine, &name).await {
                self.take_resource(name, attempt).await;
            }
        }
    }

    /// Runs what an attempt at `name`'s module fetched, as a new version of a file is
    /// run, or reports why not; either way the object's status says so.
    async fn take_resource(&mut self, name: String, attempt: Result<resource::Fetched, resource::Failure>) {
        let Some(resources) = self.resources.as_mut() else { return };
        let fetched = match attempt {
            Ok(fetched) => fetched,
            Err(failure) => {
                resources.report(&name, Err(&failure));
                return self.publish_resources().await;
            }
        };
        let plugin_name = fetched.plugin.manifest().name.clone();
        let in_directory = self.directory.as_ref().is_some_and(|d| {
            d.slots.values().any(|s| s.plugin.as_ref().is_some_and(|p| p.manifest().name == plugin_name))
        });
        let in_other = resources
            .slots
            .iter()
            .any(|(other, s)| *other != name && s.plugin.as_ref().is_some_and(|p| p.manifest().name == plugin_name));
        if in_directory || in_other {
            let message =
                format!("a plugin named {plugin_name} already runs from the plugin directory or another Plugin");
            let failure = resource::Failure { step: resource::Step::Loaded, reason: "NameTaken", message };
            resources.report(&name, Err(&failure));
            return self.publish_resources().await;
        }
        let Some(slot) = resources.slots.get_mut(&name) else { return };
        let running = slot.plugin.as_ref().filter(|p| self.runners.running(&p.manifest().name));
        let decision = reload::decide(
            running.map(|p| Version { manifest: p.manifest(), settings: &slot.settings }),
            Some(Version { manifest: fetched.plugin.manifest(), settings: &fetched.settings }),
        );
        let previous = slot.plugin.replace(fetched.plugin.clone());
        slot.settings = fetched.settings.clone();
        resources.report(&name, Ok(&fetched));
        self.apply(decision, previous, fetched.plugin, fetched.settings).await;
        self.take_candidate(&name).await;
        self.publish_resources().await;
    }

    /// Rolls out the candidate of `name`'s spec beside the version that runs, or stops
    /// the one rolled out when the spec has none. A candidate that cannot be fetched or
    /// does not declare the active's contract does not run; the status says why.
    async fn take_candidate(&mut self, name: &str) {
        let Some(engine) = self.directory.as_ref().map(|d| d.engine.clone()) else { return };
        let Some(resources) = self.resources.as_mut() else { return };
        let Some(active) = resources.slots.get(name).and_then(|s| s.plugin.clone()) else { return };
        let plugin_name = active.manifest().name.clone();
        let Some(spec) = resources.spec(name).and_then(|s| s.rollout.clone()) else {
            if resources.slots.get_mut(name).and_then(|s| s.candidate.take()).is_some() {
                self.runners.roll_out(&plugin_name, None);
                info!(plugin = %plugin_name, "rollout removed: every parent runs the active version");
            }
            return;
        };
        let attempt = resources.fetch_candidate(&engine, name).await;
        let Some(slot) = resources.slots.get_mut(name) else { return };
        let settings = slot.settings.clone();
        let candidate = match attempt {
            None => return,
            Some(Err(failure)) => Err((None, format!("candidate: {failure}"))),
            Some(Ok(fetched)) if !fetched.plugin.manifest().same_contract(active.manifest()) => Err((
                Some(fetched.digest),
                "candidate: CandidateIncompatible: it must declare the active version's name, kinds, finalizer, \
                 watches and keepUnlisted; roll out a new contract by changing spec.source"
                    .to_string(),
            )),
            Some(Ok(fetched)) => Ok(fetched),
        };
        let fetched = match candidate {
            Ok(fetched) => fetched,
            Err((digest, error)) => {
                error!(plugin = %plugin_name, "{error}; the active version runs alone");
                slot.candidate = Some(resources::Candidate::refused(spec, digest, error));
                self.runners.roll_out(&plugin_name, None);
                return;
            }
        };
        let (strategy, transport) = match spec.mode {
            // In shadow the candidate writes nothing, in the cluster or out of it.
            RolloutMode::Shadow => (Strategy::Shadow, None),
            RolloutMode::Canary => (Strategy::Canary { percent: spec.percent.min(100) }, Some(Transport::Network)),
        };
        let defaults = Rollback::default();
        let rollback = Rollback {
            error_percent: spec.rollback.error_percent.unwrap_or(defaults.error_percent),
            min_reconciles: spec.rollback.min_reconciles.unwrap_or(defaults.min_reconciles),
            window: spec.rollback.window_seconds.map_or(defaults.window, |s| Duration::from_secs(u64::from(s))),
        };
        let metrics = self.options.controller.metrics.clone();
        let limited = limited(&fetched.plugin, &settings, transport, &metrics);
        let rollout = Arc::new(Rollout::new(limited, strategy, rollback));
        slot.candidate = Some(resources::Candidate::running(spec, &fetched, rollout.clone()));
        // A canary writes what its CRDs declare.
        if strategy != Strategy::Shadow
            && self.options.install_crds
            && let Err(e) = install_crds(&self.client, std::slice::from_ref(&fetched.plugin)).await
        {
            error!(error = %e, "the candidate's CRDs not installed");
        }
        if self.runners.roll_out(&plugin_name, Some(rollout)) {
            info!(plugin = %plugin_name, digest = %fetched.digest, ?strategy, "candidate rolled out");
        }
    }

    /// Hands each candidate rolled out to its plugin's controller again: one that waited
    /// for its kinds starts without it.
    fn resume_rollouts(&self) {
        let Some(resources) = &self.resources else { return };
        for slot in resources.slots.values() {
            if let (Some(plugin), Some(rollout)) =
                (&slot.plugin, slot.candidate.as_ref().and_then(|c| c.rollout.clone()))
                && self.runners.get(&plugin.manifest().name).is_some_and(|c| c.rollout().is_none())
            {
                self.runners.roll_out(&plugin.manifest().name, Some(rollout));
            }
        }
    }

    /// Writes each `Plugin` object's status where what runs changed it (a rollout's
    /// counts among it).
    async fn publish_resources(&mut self) {
        // A standby's view of what runs is not the cluster's: the replica that reconciles reports.
        if !self.options.controllers {
            return;
        }
        let Some(resources) = self.resources.as_mut() else { return };
        for (object, plugin) in resources.plugin_names() {
            let running = plugin.as_ref().is_some_and(|p| self.runners.running(p));
            let waiting_for = plugin.as_ref().and_then(|p| self.runners.waiting_for(p));
            resources.publish(&object, running, waiting_for).await;
        }
    }

    /// Carries out `decision` for `plugin` with `settings`; `previous` is the version
    /// the file held before.
    async fn apply(
        &mut self,
        decision: Decision,
        previous: Option<Arc<Plugin>>,
        plugin: Arc<Plugin>,
        settings: Settings,
    ) {
        let name = plugin.manifest().name.clone();
        if let Some(prev) = &previous
            && prev.manifest().name != name
        {
            self.runners.stop(&prev.manifest().name).await;
            self.options.webhooks.remove(&prev.manifest().name);
        }
        if decision == Decision::Stop {
            self.options.webhooks.remove(&name);
            if self.runners.running(&name) {
                self.runners.stop(&name).await;
                info!(plugin = %name, "plugin disabled; its children stay");
            }
            return;
        }
        let limited = limited(&plugin, &settings, Some(Transport::Network), &self.options.controller.metrics);
        // Every new version's CRDs, before it reconciles: a field it adds would be pruned.
        if self.options.install_crds
            && let Err(e) = install_crds(&self.client, std::slice::from_ref(&plugin)).await
        {
            error!(error = %e, "CRDs not installed");
        }
        if decision == Decision::Swap && self.runners.swap(limited.clone(), &settings.config) {
            // Its webhooks answer with the new version from the next call on.
            self.options.webhooks.swap(limited, settings.webhooks, settings.config);
            return;
        }
        self.runners.stop(&name).await;
        let host_namespace = &self.options.host_namespace;
        let secrets = Secrets::follow(&self.client, host_namespace, &settings.config).unwrap_or_else(|e| {
            // Checked when the settings were read.
            error!(plugin = %name, error = %e, "Secret references not followed");
            Secrets::none()
        });
        let handler = handler::Options {
            namespace: settings.namespace.clone(),
            config: settings.config.clone(),
            initial: settings.events.initial,
            queue_limit: settings.events.queue_limit,
            ledger_namespace: host_namespace.clone(),
            metrics: self.options.controller.metrics.clone(),
            secrets: secrets.clone(),
            ..handler::Options::default()
        };
        self.options.webhooks.set(Served {
            plugin: limited.clone(),
            settings: settings.webhooks.clone(),
            config: settings.config.clone(),
            secrets: secrets.clone(),
        });
        let account = settings.service_account.clone();
        let controller = controller::Options {
            config: settings.config,
            namespace: settings.namespace,
            secrets,
            ..self.options.controller.clone()
        };
        self.runners.start(limited, Launch { controller, handler, account }).await;
    }

    /// Waits until every running controller's caches are synced, for at most
    /// `limit` in all; false if one is not. Readiness means this.
    pub async fn wait_synced(&self, limit: Duration) -> bool {
        self.runners.wait_synced(limit).await
    }

    /// The plugins whose webhooks are served, as this runtime keeps them.
    pub fn webhooks(&self) -> &Webhooks {
        &self.options.webhooks
    }

    /// Where reloads are counted; controllers started from the directory share it.
    pub fn metrics(&self) -> &Metrics {
        &self.options.controller.metrics
    }

    /// Every plugin file (and `Plugin` object) and how it runs.
    pub fn status(&self) -> Vec<PluginStatus> {
        let Some(dir) = &self.directory else { return Vec::new() };
        let files = dir.slots.values().map(|slot| (slot.wasm.display().to_string(), &slot.plugin, &slot.error));
        let objects = self
            .resources
            .iter()
            .flat_map(|r| &r.slots)
            .map(|(name, slot)| (format!("Plugin {name} ({})", slot.reference), &slot.plugin, &slot.error));
        files
            .chain(objects)
            .map(|(file, plugin, error)| {
                let name = plugin.as_ref().map(|p| p.manifest().name.clone());
                PluginStatus {
                    file,
                    running: name.as_ref().is_some_and(|n| self.runners.running(n)),
                    waiting_for: name.as_ref().and_then(|n| self.runners.waiting_for(n)).map(str::to_string),
                    hash: plugin.as_ref().map(|p| p.hash().to_string()),
                    warning: name.as_ref().and_then(|n| self.options.controller.warnings.of(n)),
                    name,
                    error: error.clone(),
                }
            })
            .collect()
    }

    /// Plugin files compiled (or loaded from the cache) so far.
    pub fn compiles(&self) -> u64 {
        self.directory.as_ref().map_or(0, |d| d.compiles)
    }

    /// Plugin files and settings refused so far.
    pub fn failures(&self) -> u64 {
        self.directory.as_ref().map_or(0, |d| d.failures)
    }

    /// The running controller of plugin `name`.
    pub fn controller(&self, name: &str) -> Option<&Controller> {
        self.runners.get(name)
    }

    /// The running event handler of plugin `name`.
    pub fn handler(&self, name: &str) -> Option<&Handler> {
        self.runners.handler(name)
    }

    /// Tries again to start each plugin that waits for a kind; true when one started.
    pub async fn start_waiting(&mut self) -> bool {
        let started = self.runners.start_waiting().await;
        if started {
            self.resume_rollouts();
        }
        started
    }

    /// Names of the plugins whose controllers run.
    pub fn plugins(&self) -> impl Iterator<Item = &str> {
        self.runners.names()
    }

    /// Reconciles every parent of every plugin now.
    pub fn resync(&self) {
        self.runners.resync();
    }

    /// Stops every controller; reconciles in flight finish first.
    pub async fn stop(self) {
        self.runners.stop_all().await;
    }
}
