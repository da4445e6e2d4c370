//! The plugins' CRDs installed on the cluster, as `kubewasm dev`
//! does before their controllers start (in production they are deployed with the
//! host's manifests).

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, Patch, PatchParams};
use tracing::info;

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

/// Creates or updates the CRDs the plugins define (server-side apply) and waits
/// until each is established.
///
/// # Errors
///
/// When a CRD is refused by the API server or not established within 30 s.
pub async fn install_crds(client: &Client, plugins: &[Arc<Plugin>]) -> Result<(), CrdError> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let params = PatchParams::apply("kubewasm").force();
    for plugin in plugins {
        let name = &plugin.manifest().name;
        for crd in plugin.crds() {
            let crd_name = crd["metadata"]["name"].as_str().unwrap_or_default().to_string();
            let refused = |source| CrdError::Refused { plugin: name.clone(), crd: crd_name.clone(), source };
            api.patch(&crd_name, &params, &Patch::Apply(crd)).await.map_err(refused)?;
            let established = kube::runtime::wait::await_condition(
                api.clone(),
                &crd_name,
                kube::runtime::wait::conditions::is_crd_established(),
            );
            tokio::time::timeout(ESTABLISHED, established)
                .await
                .map_err(|_| CrdError::NotEstablished { plugin: name.clone(), crd: crd_name.clone(), source: None })?
                .map_err(|e| CrdError::NotEstablished {
                    plugin: name.clone(),
                    crd: crd_name.clone(),
                    source: Some(e),
                })?;
            info!(plugin = %name, crd = %crd_name, "CRD installed");
        }
    }
    Ok(())
}
