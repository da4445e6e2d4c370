//! The plugins' CRDs installed on the cluster, as `kubewasm dev`
//! does before their controllers start (in production they are deployed with the
//! host's manifests).

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, Patch, PatchParams};
use serde_json::Value;
use tracing::{debug, info};

use crate::plugin::Plugin;

/// How long a CRD may take to be established.
const ESTABLISHED: Duration = Duration::from_secs(30);

/// Why a plugin's CRD is not installed.
#[derive(Debug, thiserror::Error)]
pub enum CrdError {
    /// The API server refused a plugin's CRD, or could not be reached.
    #[error("plugin {plugin}: CRD {crd}: {source}")]
    Refused { plugin: String, crd: String, source: kube::Error },
    /// The CRD was accepted but its API is not served after 30 s, or could not be watched.
    #[error("plugin {plugin}: CRD {crd} was not established{}", source.as_ref().map_or(" within 30 s".into(), |e| format!(": {e}")))]
    NotEstablished { plugin: String, crd: String, source: Option<kube::runtime::wait::Error> },
}

/// What an install did to one CRD.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Installed {
    Created,
    Updated,
    /// The CRD was already as the plugin defines it: the apply changed nothing.
    Unchanged,
}

/// Creates or updates the CRDs the plugins define (server-side apply) and waits
/// until each is established; says what became of each, by name. Only a created or
/// updated CRD is logged at info: a reload of a plugin whose CRDs did not change is quiet.
///
/// # Errors
///
/// When a CRD is refused by the API server or not established within 30 s.
pub async fn install_crds(client: &Client, plugins: &[Arc<Plugin>]) -> Result<Vec<(String, Installed)>, CrdError> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut installed = Vec::new();
    for plugin in plugins {
        let name = &plugin.manifest().name;
        for crd in plugin.crds() {
            let crd_name = crd["metadata"]["name"].as_str().unwrap_or_default().to_string();
            let done = install(&api, &crd_name, crd).await.map_err(|e| match e {
                Failed::Refused(source) => CrdError::Refused { plugin: name.clone(), crd: crd_name.clone(), source },
                Failed::NotEstablished(source) => {
                    CrdError::NotEstablished { plugin: name.clone(), crd: crd_name.clone(), source }
                }
            })?;
            match done {
                Installed::Created => info!(plugin = %name, crd = %crd_name, "CRD installed"),
                Installed::Updated => info!(plugin = %name, crd = %crd_name, "CRD updated"),
                Installed::Unchanged => debug!(plugin = %name, crd = %crd_name, "CRD unchanged"),
            }
            installed.push((crd_name, done));
        }
    }
    Ok(installed)
}

/// Installs the host's own CRD (the `Plugin` kind), as `install_crds` does a plugin's.
///
/// # Errors
///
/// When the API server refuses it or it is not established within 30 s.
pub async fn install_host_crd(client: &Client) -> Result<Installed, CrdError> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd = crate::resource::crd::definition();
    let crd_name = crd["metadata"]["name"].as_str().unwrap_or_default().to_string();
    install(&api, &crd_name, &crd).await.map_err(|e| match e {
        Failed::Refused(source) => CrdError::Refused { plugin: "kubewasm".into(), crd: crd_name, source },
        Failed::NotEstablished(source) => CrdError::NotEstablished { plugin: "kubewasm".into(), crd: crd_name, source },
    })
}

/// Why one CRD was not installed, before the plugin is named.
enum Failed {
    Refused(kube::Error),
    NotEstablished(Option<kube::runtime::wait::Error>),
}

/// Applies `crd` and waits until it is established. An apply that changes nothing leaves
/// the CRD's resourceVersion as it was (the API server skips a write that changes
/// nothing), which tells an unchanged CRD from an updated one.
async fn install(api: &Api<CustomResourceDefinition>, name: &str, crd: &Value) -> Result<Installed, Failed> {
    let before = api.get_opt(name).await.map_err(Failed::Refused)?;
    let params = PatchParams::apply("kubewasm").force();
    let after = api.patch(name, &params, &Patch::Apply(crd)).await.map_err(Failed::Refused)?;
    let installed = match before {
        None => Installed::Created,
        Some(before) if before.metadata.resource_version != after.metadata.resource_version => Installed::Updated,
        Some(_) => Installed::Unchanged,
    };
    let established =
        kube::runtime::wait::await_condition(api.clone(), name, kube::runtime::wait::conditions::is_crd_established());
    tokio::time::timeout(ESTABLISHED, established)
        .await
        .map_err(|_| Failed::NotEstablished(None))?
        .map_err(|e| Failed::NotEstablished(Some(e)))?;
    Ok(installed)
}

#[cfg(test)]
mod tests {
    use kubewasm_devcluster::{DevCluster, Options};
    use serde_json::json;

    use super::*;

    fn crd(description: &str) -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.test.kubewasm.io"},
            "spec": {"group": "test.kubewasm.io", "scope": "Namespaced",
                     "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
                     "versions": [{"name": "v1", "served": true, "storage": true,
                                   "schema": {"openAPIV3Schema": {"type": "object", "description": description}}}]}
        })
    }

    #[tokio::test]
    async fn an_install_says_whether_the_crd_was_created_updated_or_left_as_it_was() {
        let cluster = DevCluster::start(Options::default()).await.expect("API server starts");
        let api: Api<CustomResourceDefinition> = Api::all(cluster.client());
        let name = "widgets.test.kubewasm.io";
        let install = |crd: Value| {
            let api = api.clone();
            async move { install(&api, name, &crd).await.map_err(|_| "refused or not established") }
        };
        assert_eq!(install(crd("first")).await, Ok(Installed::Created));
        assert_eq!(install(crd("first")).await, Ok(Installed::Unchanged), "a reload with the same CRD");
        assert_eq!(install(crd("second")).await, Ok(Installed::Updated));
        cluster.shutdown().await;
    }
}
