//! Which version of each plugin answers its webhooks now: the runtime writes a plugin in
//! when it starts or swaps it and takes it out when it stops, and every webhook call
//! reads the table afresh, so a hot-reloaded plugin admits with its new logic at once.

use std::collections::BTreeMap;
use std::sync::{Arc, PoisonError, RwLock};

use serde_json::Value;
use tokio::sync::watch;

use crate::plugin::{Plugin, WebhookSettings};
use crate::secrets::Secrets;

/// One plugin as its webhooks call it.
#[derive(Clone, Debug)]
pub struct Served {
    /// With the limits and egress it runs under.
    pub plugin: Arc<Plugin>,
    pub settings: WebhookSettings,
    /// Its `[config]`, Secret references unresolved: resolved at each call.
    pub config: Value,
    pub secrets: Secrets,
}

/// The plugins whose webhooks are served, by name. Cheap to clone; clones share it.
#[derive(Clone, Debug)]
pub struct Webhooks(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    table: RwLock<BTreeMap<String, Served>>,
    /// Bumped at every change, for what registers the plugins with the API server.
    changes: watch::Sender<u64>,
}

impl Default for Webhooks {
    fn default() -> Self {
        Self(Arc::new(Inner { table: RwLock::default(), changes: watch::channel(0).0 }))
    }
}

impl Webhooks {
    pub fn new() -> Self {
        Self::default()
    }

    /// Changes from now on: the receiver sees one after each [`Webhooks::set`],
    /// [`Webhooks::swap`] and [`Webhooks::remove`].
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.0.changes.subscribe()
    }

    fn changed(&self) {
        self.0.changes.send_modify(|n| *n += 1);
    }

    fn table(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, Served>> {
        self.0.table.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Serves `served`'s webhooks from now on, in place of any version before; a plugin
    /// that admits nothing is taken out.
    pub fn set(&self, served: Served) {
        let name = served.plugin.manifest().name.clone();
        let mut table = self.0.table.write().unwrap_or_else(PoisonError::into_inner);
        if served.plugin.manifest().admits() {
            table.insert(name, served);
        } else if table.remove(&name).is_none() {
            return;
        }
        drop(table);
        self.changed();
    }

    /// A new version of `plugin` or new settings, its Secrets followed as before.
    pub fn swap(&self, plugin: Arc<Plugin>, settings: WebhookSettings, config: Value) {
        let secrets = self.get(&plugin.manifest().name).map(|s| s.secrets).unwrap_or_default();
        self.set(Served { plugin, settings, config, secrets });
    }

    /// Stops serving plugin `name`: its webhooks answer 404.
    pub fn remove(&self, name: &str) {
        let removed = self.0.table.write().unwrap_or_else(PoisonError::into_inner).remove(name);
        if removed.is_some() {
            self.changed();
        }
    }

    /// The version of plugin `name` that answers now.
    pub fn get(&self, name: &str) -> Option<Served> {
        self.table().get(name).cloned()
    }

    /// Whether any plugin's webhooks are served.
    pub fn any(&self) -> bool {
        !self.table().is_empty()
    }

    /// Every served plugin, in name order.
    pub fn all(&self) -> Vec<Served> {
        self.table().values().cloned().collect()
    }
}
