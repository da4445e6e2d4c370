//! The runners of the plugins: per plugin, a controller when its manifest names a parent
//! and an event handler when it names watches, started, swapped and stopped together; a
//! plugin whose kinds are not served yet waits here until they are.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kube::Client;
use serde_json::Value;
use tracing::{error, info};

use crate::controller::{self, Controller, Rollout, SharedCaches};
use crate::discovery::KindError;
use crate::handler::{self, Handler};
use crate::plugin::Plugin;

use super::identity::Identities;

/// How to start one plugin's runners.
#[derive(Clone, Debug)]
pub(crate) struct Launch {
    pub(crate) controller: controller::Options,
    pub(crate) handler: handler::Options,
    /// The `ServiceAccount` the plugin acts as, if its settings name one.
    pub(crate) account: Option<String>,
}

/// A plugin whose kinds are not all served yet, with what to start it with.
struct Waiting {
    plugin: Arc<Plugin>,
    launch: Launch,
    kind: String,
}

/// Running controllers and event handlers by plugin name, and the plugins waiting for
/// their kinds.
pub(crate) struct Runners {
    client: Client,
    /// Each plugin acts as its own `ServiceAccount`; `None`: as the host.
    identities: Option<Identities>,
    /// `false`: nothing is started (a standby replica only serves webhooks).
    enabled: bool,
    running: BTreeMap<String, Controller>,
    /// The watches and caches the controllers share: one per kind, not one per plugin.
    caches: SharedCaches,
    handlers: BTreeMap<String, Handler>,
    waiting: BTreeMap<String, Waiting>,
}

/// Why a plugin's runners did not start.
enum Refused {
    NotServed(String),
    Other(String),
}

impl Runners {
    pub(crate) fn new(client: &Client, identities: Option<Identities>, enabled: bool) -> Self {
        Self {
            client: client.clone(),
            identities,
            enabled,
            running: BTreeMap::new(),
            caches: SharedCaches::new(),
            handlers: BTreeMap::new(),
            waiting: BTreeMap::new(),
        }
    }

    /// The client plugin `name`'s runners read and write with: its own identity's, or the
    /// host's.
    fn client(&self, name: &str, account: Option<&str>) -> Result<Client, Refused> {
        let Some(identities) = &self.identities else { return Ok(self.client.clone()) };
        match account {
            Some(account) => identities.client_as(&self.client, name, account),
            None => identities.client(&self.client, name),
        }
        .map_err(|e| Refused::Other(e.to_string()))
    }

    /// Starts `plugin`'s controller and event handler, as its manifest asks; if one of
    /// its kinds is not served yet, neither runs and it waits for
    /// [`Runners::start_waiting`]. Another failure is logged.
    pub(crate) async fn start(&mut self, plugin: Arc<Plugin>, launch: Launch) {
        if !self.enabled {
            return;
        }
        let name = plugin.manifest().name.clone();
        let version = short(plugin.hash()).to_string();
        let metrics = launch.controller.metrics.clone();
        let hash = plugin.hash().to_string();
        match self.start_both(&plugin, &launch).await {
            Ok(()) => {
                metrics.version(&name, &hash, None);
                info!(plugin = %name, %version, "plugin started");
                self.waiting.remove(&name);
            }
            Err(Refused::NotServed(kind)) => {
                if self.waiting.get(&name).is_none_or(|w| w.kind != kind) {
                    info!(plugin = %name, "waiting for {kind}: not served by the API server yet; starts when it is");
                }
                self.waiting.insert(name, Waiting { plugin, launch, kind });
            }
            Err(Refused::Other(e)) => {
                self.waiting.remove(&name);
                error!(plugin = %name, error = %e, "plugin not started");
            }
        }
    }

    async fn start_both(&mut self, plugin: &Arc<Plugin>, launch: &Launch) -> Result<(), Refused> {
        let manifest = plugin.manifest();
        let name = manifest.name.clone();
        let client = self.client(&name, launch.account.as_deref())?;
        if !manifest.watches.is_empty() {
            let handler = Handler::start(client.clone(), plugin.clone(), launch.handler.clone()).await;
            match handler {
                Ok(h) => {
                    self.handlers.insert(name.clone(), h);
                }
                Err(handler::Error::Kind(KindError::NotServed { kind })) => return Err(Refused::NotServed(kind)),
                Err(e) => return Err(Refused::Other(e.to_string())),
            }
        }
        if manifest.parent.is_some() {
            // A plugin with an identity of its own reads only what that identity may: it
            // shares watches with the plugins acting as the same account only.
            let caches = match (&self.identities, &launch.account) {
                (None, _) => self.caches.clone(),
                (Some(_), Some(account)) => self.caches.as_identity(&format!("account/{account}")),
                (Some(_), None) => self.caches.as_identity(&format!("plugin/{name}")),
            };
            match Controller::start_sharing(client, plugin.clone(), launch.controller.clone(), &caches).await {
                Ok(c) => {
                    self.running.insert(name, c);
                }
                Err(e) => {
                    // Both or neither.
                    if let Some(h) = self.handlers.remove(&name) {
                        h.stop().await;
                    }
                    return Err(match e {
                        controller::Error::NotServed { kind } => Refused::NotServed(kind),
                        e => Refused::Other(e.to_string()),
                    });
                }
            }
        }
        Ok(())
    }

    /// Hands a new version (and config) to the running controller and handler of its
    /// name; false when none runs.
    pub(crate) fn swap(&self, plugin: Arc<Plugin>, config: &Value) -> bool {
        let name = plugin.manifest().name.clone();
        let (controller, handler) = (self.running.get(&name), self.handlers.get(&name));
        let previous = match (controller, handler) {
            (Some(c), _) => c.plugin(),
            (None, Some(h)) => h.plugin(),
            (None, None) => return false,
        };
        let metrics = controller
            .map_or_else(|| handler.map(|h| h.metrics().clone()).unwrap_or_default(), |c| c.metrics().clone());
        metrics.version(&name, plugin.hash(), Some(previous.hash()));
        let version = short(plugin.hash()).to_string();
        if let Some(c) = controller {
            c.update(plugin.clone(), config.clone());
        }
        if let Some(h) = handler {
            h.update(plugin, config.clone());
        }
        info!(plugin = %name, %version, "plugin updated in place; every parent is reconciled again");
        true
    }

    /// Rolls `rollout` out beside plugin `name`'s running controller (`None`: ends the
    /// one rolled out); false when no controller of that name runs.
    pub(crate) fn roll_out(&self, name: &str, rollout: Option<Arc<Rollout>>) -> bool {
        self.running.get(name).map(|c| c.roll_out(rollout)).is_some()
    }

    /// Tries again to start each plugin that waits for a kind; true when one started.
    pub(crate) async fn start_waiting(&mut self) -> bool {
        let waiting: Vec<Waiting> = std::mem::take(&mut self.waiting).into_values().collect();
        let mut started = false;
        for Waiting { plugin, launch, kind } in waiting {
            let name = plugin.manifest().name.clone();
            // Keep the last kind reported, so the line is not repeated while nothing changes.
            self.waiting.insert(name.clone(), Waiting { plugin: plugin.clone(), launch: launch.clone(), kind });
            self.start(plugin, launch).await;
            started |= self.running(&name);
        }
        started
    }

    /// Stops plugin `name`'s runners (or its wait); its children stay.
    pub(crate) async fn stop(&mut self, name: &str) {
        self.waiting.remove(name);
        if let Some(c) = self.running.remove(name) {
            c.metrics().unloaded(name, c.plugin().hash());
            c.stop().await;
            info!(plugin = %name, "controller stopped");
        }
        if let Some(h) = self.handlers.remove(name) {
            h.metrics().unloaded(name, h.plugin().hash());
            h.stop().await;
            info!(plugin = %name, "event handler stopped");
        }
    }

    /// Stops every runner; reconciles and deliveries in flight finish first.
    pub(crate) async fn stop_all(self) {
        for (name, c) in self.running {
            c.stop().await;
            info!(plugin = %name, "controller stopped");
        }
        for (name, h) in self.handlers {
            h.stop().await;
            info!(plugin = %name, "event handler stopped");
        }
    }

    pub(crate) fn running(&self, name: &str) -> bool {
        self.running.contains_key(name) || self.handlers.contains_key(name)
    }

    pub(crate) fn get(&self, name: &str) -> Option<&Controller> {
        self.running.get(name)
    }

    pub(crate) fn handler(&self, name: &str) -> Option<&Handler> {
        self.handlers.get(name)
    }

    pub(crate) fn names(&self) -> impl Iterator<Item = &str> {
        let handlers_only = self.handlers.keys().filter(|n| !self.running.contains_key(*n));
        self.running.keys().chain(handlers_only).map(String::as_str)
    }

    /// The kind plugin `name` waits for, if it waits.
    pub(crate) fn waiting_for(&self, name: &str) -> Option<&str> {
        self.waiting.get(name).map(|w| w.kind.as_str())
    }

    pub(crate) fn any_waiting(&self) -> bool {
        !self.waiting.is_empty()
    }

    /// Waits until every running controller's caches and every handler's watches are
    /// synced, for at most `limit` in all; false if one is not.
    pub(crate) async fn wait_synced(&self, limit: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        let left = || deadline.saturating_duration_since(tokio::time::Instant::now());
        for c in self.running.values() {
            if !c.wait_synced(left()).await {
                return false;
            }
        }
        for h in self.handlers.values() {
            if !h.wait_synced(left()).await {
                return false;
            }
        }
        true
    }

    /// Reconciles every parent of every plugin now.
    pub(crate) fn resync(&self) {
        self.running.values().for_each(Controller::resync);
    }
}

fn short(hash: &str) -> &str {
    &hash[..hash.len().min(12)]
}
