//! Which version of each plugin answers its webhooks now: the runtime writes a plugin in
//! when it starts or swaps it and takes it out when it stops, and every webhook call
//! reads the table afresh, so a hot-reloaded plugin admits with its new logic at once.

use std::collections::BTreeMap;
use std::sync::{Arc, PoisonError, RwLock};

use serde_json::Value;

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
#[derive(Clone, Debug, Default)]
pub struct Webhooks(Arc<RwLock<BTreeMap<String, Served>>>);

impl Webhooks {
    pub fn new() -> Self {
        Self::default()
    }

    /// Serves `served`'s webhooks from now on, in place of any version before; a plugin
    /// that admits nothing is taken out.
    pub fn set(&self, served: Served) {
        let name = served.plugin.manifest().name.clone();
        let mut table = self.0.write().unwrap_or_else(PoisonError::into_inner);
        if served.plugin.manifest().admits() {
            table.insert(name, served);
        } else {
            table.remove(&name);
        }
    }

    /// A new version of `plugin` or new settings, its Secrets followed as before.
    pub fn swap(&self, plugin: Arc<Plugin>, settings: WebhookSettings, config: Value) {
        let secrets = self.get(&plugin.manifest().name).map(|s| s.secrets).unwrap_or_default();
        self.set(Served { plugin, settings, config, secrets });
    }

    /// Stops serving plugin `name`: its webhooks answer 404.
    pub fn remove(&self, name: &str) {
        self.0.write().unwrap_or_else(PoisonError::into_inner).remove(name);
    }

    /// The version of plugin `name` that answers now.
    pub fn get(&self, name: &str) -> Option<Served> {
        self.0.read().unwrap_or_else(PoisonError::into_inner).get(name).cloned()
    }

    /// Whether any plugin's webhooks are served.
    pub fn any(&self) -> bool {
        !self.0.read().unwrap_or_else(PoisonError::into_inner).is_empty()
    }

    /// The names of the served plugins, in order.
    pub fn names(&self) -> Vec<String> {
        self.0.read().unwrap_or_else(PoisonError::into_inner).keys().cloned().collect()
    }
}
