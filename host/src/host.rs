//! The running host: the plugins of a directory, one controller each, started and
//! stopped independently.

use std::collections::BTreeMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, Patch, PatchParams};
use tracing::{error, info};

use crate::controller::{self, Controller};
use crate::metrics::{Metrics, Outcome};
use crate::plugin::{Engine, LoadError, Plugin, Settings, directory};

/// Why the host could not set up the cluster for its plugins.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{}: {error}", dir.display())]
    PluginDir { dir: PathBuf, error: std::io::Error },
    #[error("plugin {plugin}: {message}")]
    Crd { plugin: String, message: String },
}

/// The `.wasm` files of `dir` the host would run, in name order.
///
/// # Errors
///
/// When `dir` cannot be read.
pub fn plugin_files(dir: &Path) -> Result<Vec<PathBuf>, Error> {
    let entries = directory::scan(dir).map_err(|error| Error::PluginDir { dir: dir.to_path_buf(), error })?;
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

/// Creates or updates the CRDs the plugins define (server-side apply) and waits
/// until each is established.
///
/// # Errors
///
/// When a CRD is refused by the API server or not established within 30 s.
pub async fn install_crds(client: &Client, plugins: &[Arc<Plugin>]) -> Result<(), Error> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let params = PatchParams::apply("kubewasm").force();
    for plugin in plugins {
        let name = &plugin.manifest().name;
        let crd_error = |message: String| Error::Crd { plugin: name.clone(), message };
        for crd in plugin.crds() {
            let crd_name = crd["metadata"]["name"].as_str().unwrap_or_default().to_string();
            api.patch(&crd_name, &params, &Patch::Apply(crd))
                .await
                .map_err(|e| crd_error(format!("CRD {crd_name}: {e}")))?;
            let established = kube::runtime::wait::await_condition(
                api.clone(),
                &crd_name,
                kube::runtime::wait::conditions::is_crd_established(),
            );
            tokio::time::timeout(Duration::from_secs(30), established)
                .await
                .map_err(|_| crd_error(format!("CRD {crd_name} was not established within 30 s")))?
                .map_err(|e| crd_error(format!("CRD {crd_name}: {e}")))?;
            info!(plugin = %name, crd = %crd_name, "CRD installed");
        }
    }
    Ok(())
}

/// How long a changed file must hold still before it is read.
const SETTLE: Duration = Duration::from_millis(100);
/// Quiet period folding a burst of file events into one rescan.
const QUIET: Duration = Duration::from_millis(200);

/// How the host treats its plugin directory.
#[derive(Clone, Debug, Default)]
pub struct DirOptions {
    /// Install (server-side apply) the CRDs each plugin defines: `kubewasm dev`.
    pub install_crds: bool,
    /// Settings every controller starts from; `NAME.toml` overrides per plugin.
    pub controller: controller::Options,
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
}

/// One plugin file as the host runs it.
struct Slot {
    wasm: PathBuf,
    /// Hashes of the `.wasm` and settings bytes last read (empty: no settings
    /// file), good or bad, so an unchanged bad file is not reported again at every
    /// rescan.
    seen: Option<(String, String)>,
    /// The last good version and the settings in force.
    plugin: Option<Arc<Plugin>>,
    settings: Settings,
    error: Option<String>,
}

/// A plugin whose kinds are not all served yet.
struct Waiting {
    plugin: Arc<Plugin>,
    options: controller::Options,
    kind: String,
}

/// How often the host looks again for the kinds a waiting plugin needs.
const WAIT_RETRY: Duration = Duration::from_secs(2);

/// The running host: plugins, one controller each, started and stopped
/// independently; with a directory, kept in step with its files.
pub struct Host {
    client: Client,
    controllers: BTreeMap<String, Controller>,
    /// Plugins whose controller waits for a kind to be served, with what to start it with.
    waiting: BTreeMap<String, Waiting>,
    engine: Option<Engine>,
    dir: Option<PathBuf>,
    options: DirOptions,
    slots: BTreeMap<String, Slot>,
    compiles: u64,
    failures: u64,
}

impl Host {
    /// Starts a controller for each plugin. A plugin whose controller cannot start
    /// (its kinds are not served, say) is reported and skipped.
    pub async fn start(client: &Client, plugins: Vec<(Arc<Plugin>, controller::Options)>) -> Self {
        let mut host = Self::empty(client, None, None, DirOptions::default());
        for (plugin, options) in plugins {
            host.start_controller(plugin, options).await;
        }
        host
    }

    /// Loads the plugins of `dir` and starts their controllers; then
    /// [`Host::watch`] keeps them in step with the directory.
    ///
    /// # Errors
    ///
    /// Only when `dir` cannot be read; a bad plugin file is reported in
    /// [`Host::status`] and skipped.
    pub async fn from_dir(client: &Client, engine: &Engine, dir: &Path, options: DirOptions) -> Result<Self, Error> {
        let mut host = Self::empty(client, Some(engine.clone()), Some(dir.to_path_buf()), options);
        host.rescan().await?;
        Ok(host)
    }

    fn empty(client: &Client, engine: Option<Engine>, dir: Option<PathBuf>, options: DirOptions) -> Self {
        Self {
            client: client.clone(),
            controllers: BTreeMap::new(),
            waiting: BTreeMap::new(),
            engine,
            dir,
            options,
            slots: BTreeMap::new(),
            compiles: 0,
            failures: 0,
        }
    }

    /// Follows the plugin directory until `shutdown` resolves, then stops every
    /// controller. `on_change` is called after each rescan (`kubewasm dev` prints
    /// the status).
    ///
    /// # Errors
    ///
    /// When the directory cannot be watched.
    pub async fn watch(
        mut self,
        shutdown: impl Future<Output = ()>,
        mut on_change: impl FnMut(&Host),
    ) -> Result<(), Error> {
        let Some(dir) = self.dir.clone() else { return Ok(()) };
        let (_watcher, mut changes) = directory::watch(&dir, QUIET)
            .map_err(|e| Error::PluginDir { dir: dir.clone(), error: std::io::Error::other(e) })?;
        // What changed between the first scan and the watch would go unnoticed.
        self.rescan().await?;
        on_change(&self);
        tokio::pin!(shutdown);
        let mut retry = tokio::time::interval(WAIT_RETRY);
        retry.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = &mut shutdown => break,
                _ = retry.tick(), if !self.waiting.is_empty() => {
                    if self.start_waiting().await {
                        on_change(&self);
                    }
                }
                change = changes.recv() => {
                    if change.is_none() { break }
                    if let Err(e) = self.rescan().await {
                        error!(error = %e, "plugin directory unreadable");
                    }
                    on_change(&self);
                }
            }
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
        let Some(dir) = self.dir.clone() else { return Ok(()) };
        let entries = directory::scan(&dir).map_err(|error| Error::PluginDir { dir: dir.clone(), error })?;
        let gone: Vec<String> = self.slots.keys().filter(|stem| !entries.contains_key(*stem)).cloned().collect();
        for stem in gone {
            if let Some(slot) = self.slots.remove(&stem)
                && let Some(name) = slot.plugin.map(|p| p.manifest().name.clone())
            {
                self.stop_controller(&name).await;
                info!(file = %slot.wasm.display(), "plugin removed; its children stay");
            }
        }
        for (stem, entry) in entries {
            self.sync_entry(stem, entry).await;
        }
        Ok(())
    }

    async fn sync_entry(&mut self, stem: String, entry: directory::Entry) {
        let Some(wasm) = directory::read_settled(&entry.wasm, SETTLE).await else { return };
        let settings_text = match &entry.settings {
            Some(path) => match directory::read_settled(path, SETTLE).await {
                Some(bytes) => Some(String::from_utf8_lossy(&bytes).into_owned()),
                None => return,
            },
            None => None,
        };
        let wasm_hash = directory::digest(&wasm);
        let settings_hash = settings_text.as_deref().map(|t| directory::digest(t.as_bytes())).unwrap_or_default();
        let slot = self.slots.entry(stem).or_insert_with(|| Slot {
            wasm: entry.wasm.clone(),
            seen: None,
            plugin: None,
            settings: Settings::default(),
            error: None,
        });
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
            let Some(engine) = self.engine.clone() else { return };
            let origin = entry.wasm.display().to_string();
            self.compiles += 1;
            let loaded = tokio::task::spawn_blocking(move || Plugin::from_bytes(&engine, &wasm, &origin)).await;
            let file = entry.wasm.display().to_string();
            match loaded {
                Ok(Ok(loaded)) => {
                    plugin = Some(Arc::new(loaded));
                    fresh = true;
                    self.metrics().reloaded(&file, Outcome::Success);
                }
                Ok(Err(e)) => errors.push(e.to_string()),
                Err(e) => errors.push(format!("{file}: load interrupted: {e}")),
            }
            if !fresh {
                self.metrics().reloaded(&file, Outcome::Error);
            }
        }
        let slot = self.slots.get_mut(&entry.stem).expect("slot inserted above");
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
                Some(Err(message)) => {
                    let file = entry.settings.as_deref().unwrap_or(&entry.wasm).display();
                    errors.push(format!("{file}: {message}"));
                }
            }
        }
        if let Some(new) = &plugin {
            let name = &new.manifest().name;
            let taken = self.slots.iter().any(|(stem, other)| {
                *stem != entry.stem && other.plugin.as_ref().is_some_and(|p| p.manifest().name == *name)
            });
            if taken {
                errors.push(format!(
                    "{}: a plugin named {name} is already loaded from another file",
                    entry.wasm.display()
                ));
                plugin = self.slots[&entry.stem].plugin.clone();
                fresh = false;
            }
        }

        let slot = self.slots.get_mut(&entry.stem).expect("slot inserted above");
        if errors.is_empty() {
            slot.error = None;
        } else {
            self.failures += 1;
            for e in &errors {
                error!("plugin not updated, the running version stays: {e}");
            }
            slot.error = Some(errors.join("; "));
        }
        let Some(plugin) = plugin.filter(|_| fresh) else { return };
        let previous = slot.plugin.replace(plugin.clone());
        let old_settings = std::mem::replace(&mut slot.settings, settings.clone());
        self.apply(previous, plugin, &old_settings, settings).await;
    }

    /// Runs `plugin` with `settings`, given what ran before: swap in place when the
    /// contract and scope are unchanged, restart otherwise, stop when disabled.
    async fn apply(&mut self, previous: Option<Arc<Plugin>>, plugin: Arc<Plugin>, old: &Settings, settings: Settings) {
        let name = plugin.manifest().name.clone();
        if let Some(prev) = &previous
            && prev.manifest().name != name
        {
            self.stop_controller(&prev.manifest().name).await;
        }
        if !settings.enabled {
            if self.controllers.contains_key(&name) {
                self.stop_controller(&name).await;
                info!(plugin = %name, "plugin disabled; its children stay");
            }
            return;
        }
        let limited = Arc::new(Plugin::clone(&plugin).with_limits(settings.lower(crate::plugin::Limits::default())));
        // Every new version's CRDs, before it reconciles: a field it adds would be pruned.
        if self.options.install_crds
            && let Err(e) = install_crds(&self.client, std::slice::from_ref(&plugin)).await
        {
            error!(error = %e, "CRDs not installed");
        }
        let same = previous.as_ref().is_some_and(|p| p.manifest().same_contract(plugin.manifest()))
            && old.namespace == settings.namespace;
        if same && let Some(running) = self.controllers.get(&name) {
            running.metrics().version(&name, plugin.hash(), Some(running.plugin().hash()));
            running.update(limited, settings.config);
            info!(plugin = %name, version = %short(plugin.hash()), "plugin updated in place; every parent is reconciled again");
            return;
        }
        self.stop_controller(&name).await;
        let options = controller::Options {
            config: settings.config,
            namespace: settings.namespace,
            ..self.options.controller.clone()
        };
        self.start_controller(limited, options).await;
    }

    async fn start_controller(&mut self, plugin: Arc<Plugin>, options: controller::Options) {
        let name = plugin.manifest().name.clone();
        let version = short(plugin.hash()).to_string();
        let metrics = options.metrics.clone();
        let hash = plugin.hash().to_string();
        match Controller::start(self.client.clone(), plugin.clone(), options.clone()).await {
            Ok(c) => {
                metrics.version(&name, &hash, None);
                info!(plugin = %name, %version, "controller started");
                self.waiting.remove(&name);
                self.controllers.insert(name, c);
            }
            Err(controller::Error::NotServed { kind }) => {
                if self.waiting.get(&name).is_none_or(|w| w.kind != kind) {
                    info!(plugin = %name, "waiting for {kind}: not served by the API server yet; starts when it is");
                }
                self.waiting.insert(name, Waiting { plugin, options, kind });
            }
            Err(e) => {
                self.waiting.remove(&name);
                error!(plugin = %name, error = %e, "controller not started");
            }
        }
    }

    /// Tries again to start each plugin that waits for a kind; true when one started.
    pub async fn start_waiting(&mut self) -> bool {
        let waiting: Vec<Waiting> = std::mem::take(&mut self.waiting).into_values().collect();
        let mut started = false;
        for Waiting { plugin, options, kind } in waiting {
            let name = plugin.manifest().name.clone();
            // Keep the last kind reported, so the line is not repeated while nothing changes.
            self.waiting.insert(name.clone(), Waiting { plugin: plugin.clone(), options: options.clone(), kind });
            self.start_controller(plugin, options).await;
            started |= self.controllers.contains_key(&name);
        }
        started
    }

    async fn stop_controller(&mut self, name: &str) {
        self.waiting.remove(name);
        if let Some(c) = self.controllers.remove(name) {
            c.metrics().unloaded(name, c.plugin().hash());
            c.stop().await;
            info!(plugin = %name, "controller stopped");
        }
    }

    /// Waits until every running controller's caches are synced, for at most
    /// `limit` in all; false if one is not. Readiness means this.
    pub async fn wait_synced(&self, limit: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        for c in self.controllers.values() {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if !c.wait_synced(left).await {
                return false;
            }
        }
        true
    }

    /// Where reloads are counted; controllers started from the directory share it.
    pub fn metrics(&self) -> &Metrics {
        &self.options.controller.metrics
    }

    /// Every plugin file and how it runs.
    pub fn status(&self) -> Vec<PluginStatus> {
        self.slots
            .values()
            .map(|slot| {
                let name = slot.plugin.as_ref().map(|p| p.manifest().name.clone());
                PluginStatus {
                    file: slot.wasm.display().to_string(),
                    running: name.as_ref().is_some_and(|n| self.controllers.contains_key(n)),
                    waiting_for: name.as_ref().and_then(|n| self.waiting.get(n)).map(|w| w.kind.clone()),
                    hash: slot.plugin.as_ref().map(|p| p.hash().to_string()),
                    name,
                    error: slot.error.clone(),
                }
            })
            .collect()
    }

    /// Plugin files compiled (or loaded from the cache) so far.
    pub fn compiles(&self) -> u64 {
        self.compiles
    }

    /// Plugin files and settings refused so far.
    pub fn failures(&self) -> u64 {
        self.failures
    }

    /// The running controller of plugin `name`.
    pub fn controller(&self, name: &str) -> Option<&Controller> {
        self.controllers.get(name)
    }

    /// Names of the plugins whose controllers run.
    pub fn plugins(&self) -> impl Iterator<Item = &str> {
        self.controllers.keys().map(String::as_str)
    }

    /// Reconciles every parent of every plugin now.
    pub fn resync(&self) {
        self.controllers.values().for_each(Controller::resync);
    }

    /// Stops every controller; reconciles in flight finish first.
    pub async fn stop(self) {
        for (name, c) in self.controllers {
            c.stop().await;
            info!(plugin = %name, "controller stopped");
        }
    }
}

fn short(hash: &str) -> &str {
    &hash[..hash.len().min(12)]
}
