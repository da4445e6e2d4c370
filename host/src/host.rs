//! The running host: the plugins of a directory, one controller each, started and
//! stopped independently.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, Patch, PatchParams};
use tracing::{error, info};

use crate::controller::{self, Controller};
use crate::plugin::{Engine, LoadError, Plugin};

/// Why the host could not set up the cluster for its plugins.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{}: {error}", dir.display())]
    PluginDir { dir: PathBuf, error: std::io::Error },
    #[error("plugin {plugin}: {message}")]
    Crd { plugin: String, message: String },
}

/// Loads every `*.wasm` of `dir`, in name order. A file that fails to load is
/// reported and skipped: one bad plugin never stops the others.
///
/// # Errors
///
/// Only when `dir` itself cannot be read.
pub fn load_dir(engine: &Engine, dir: &Path) -> Result<(Vec<Arc<Plugin>>, Vec<LoadError>), Error> {
    let read = |error| Error::PluginDir { dir: dir.to_path_buf(), error };
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(read)? {
        let path = entry.map_err(read)?.path();
        if path.extension().is_some_and(|e| e == "wasm") {
            files.push(path);
        }
    }
    files.sort();
    let (mut plugins, mut failures) = (Vec::new(), Vec::new());
    for file in files {
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
        for crd in plugin.manifest().crd_objects().map_err(crd_error)? {
            let crd_name = crd["metadata"]["name"].as_str().unwrap_or_default().to_string();
            api.patch(&crd_name, &params, &Patch::Apply(&crd))
                .await
                .map_err(|e| crd_error(format!("CRD {crd_name}: {e}")))?;
            let established = kube::runtime::wait::await_condition(api.clone(), &crd_name, kube::runtime::wait::conditions::is_crd_established());
            tokio::time::timeout(Duration::from_secs(30), established)
                .await
                .map_err(|_| crd_error(format!("CRD {crd_name} was not established within 30 s")))?
                .map_err(|e| crd_error(format!("CRD {crd_name}: {e}")))?;
            info!(plugin = %name, crd = %crd_name, "CRD installed");
        }
    }
    Ok(())
}

/// Controllers by plugin name.
pub struct Host {
    controllers: BTreeMap<String, Controller>,
}

impl Host {
    /// Starts a controller for each plugin. A plugin whose controller cannot start
    /// (its kinds are not served, say) is reported and skipped.
    pub async fn start(client: &Client, plugins: Vec<(Arc<Plugin>, controller::Options)>) -> Self {
        let mut controllers = BTreeMap::new();
        for (plugin, options) in plugins {
            let name = plugin.manifest().name.clone();
            match Controller::start(client.clone(), plugin, options).await {
                Ok(c) => {
                    info!(plugin = %name, "controller started");
                    controllers.insert(name, c);
                }
                Err(e) => error!(plugin = %name, error = %e, "controller not started"),
            }
        }
        Self { controllers }
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
