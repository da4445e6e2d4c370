//! The runners of the plugins: one controller per plugin, each started, swapped and
//! stopped on its own; a plugin whose kinds are not served yet waits here until they
//! are. Other kinds of runner (an event handler fed by informers) belong beside the
//! controllers here.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kube::Client;
use serde_json::Value;
use tracing::{error, info};

use crate::controller::{self, Controller};
use crate::plugin::Plugin;

/// A plugin whose kinds are not all served yet, with what to start it with.
struct Waiting {
    plugin: Arc<Plugin>,
    options: controller::Options,
    kind: String,
}

/// Running controllers by plugin name, and the plugins waiting for their kinds.
pub(crate) struct Runners {
    client: Client,
    running: BTreeMap<String, Controller>,
    waiting: BTreeMap<String, Waiting>,
}

impl Runners {
    pub(crate) fn new(client: &Client) -> Self {
        Self { client: client.clone(), running: BTreeMap::new(), waiting: BTreeMap::new() }
    }

    /// Starts `plugin`'s controller; if its kinds are not served yet, it waits for
    /// [`Runners::start_waiting`]. Another failure is logged.
    pub(crate) async fn start(&mut self, plugin: Arc<Plugin>, options: controller::Options) {
        let name = plugin.manifest().name.clone();
        let version = short(plugin.hash()).to_string();
        let metrics = options.metrics.clone();
        let hash = plugin.hash().to_string();
        match Controller::start(self.client.clone(), plugin.clone(), options.clone()).await {
            Ok(c) => {
                metrics.version(&name, &hash, None);
                info!(plugin = %name, %version, "controller started");
                self.waiting.remove(&name);
                self.running.insert(name, c);
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

    /// Hands a new version (and config) to the running controller of its name; false
    /// when none runs.
    pub(crate) fn swap(&self, plugin: Arc<Plugin>, config: &Value) -> bool {
        let name = plugin.manifest().name.clone();
        let Some(running) = self.running.get(&name) else { return false };
        running.metrics().version(&name, plugin.hash(), Some(running.plugin().hash()));
        let version = short(plugin.hash()).to_string();
        running.update(plugin, config.clone());
        info!(plugin = %name, %version, "plugin updated in place; every parent is reconciled again");
        true
    }

    /// Tries again to start each plugin that waits for a kind; true when one started.
    pub(crate) async fn start_waiting(&mut self) -> bool {
        let waiting: Vec<Waiting> = std::mem::take(&mut self.waiting).into_values().collect();
        let mut started = false;
        for Waiting { plugin, options, kind } in waiting {
            let name = plugin.manifest().name.clone();
            // Keep the last kind reported, so the line is not repeated while nothing changes.
            self.waiting.insert(name.clone(), Waiting { plugin: plugin.clone(), options: options.clone(), kind });
            self.start(plugin, options).await;
            started |= self.running.contains_key(&name);
        }
        started
    }

    /// Stops plugin `name`'s controller (or its wait); its children stay.
    pub(crate) async fn stop(&mut self, name: &str) {
        self.waiting.remove(name);
        if let Some(c) = self.running.remove(name) {
            c.metrics().unloaded(name, c.plugin().hash());
            c.stop().await;
            info!(plugin = %name, "controller stopped");
        }
    }

    /// Stops every controller; reconciles in flight finish first.
    pub(crate) async fn stop_all(self) {
        for (name, c) in self.running {
            c.stop().await;
            info!(plugin = %name, "controller stopped");
        }
    }

    pub(crate) fn running(&self, name: &str) -> bool {
        self.running.contains_key(name)
    }

    pub(crate) fn get(&self, name: &str) -> Option<&Controller> {
        self.running.get(name)
    }

    pub(crate) fn names(&self) -> impl Iterator<Item = &str> {
        self.running.keys().map(String::as_str)
    }

    /// The kind plugin `name` waits for, if it waits.
    pub(crate) fn waiting_for(&self, name: &str) -> Option<&str> {
        self.waiting.get(name).map(|w| w.kind.as_str())
    }

    pub(crate) fn any_waiting(&self) -> bool {
        !self.waiting.is_empty()
    }

    /// Waits until every running controller's caches are synced, for at most `limit`
    /// in all; false if one is not.
    pub(crate) async fn wait_synced(&self, limit: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        for c in self.running.values() {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if !c.wait_synced(left).await {
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
