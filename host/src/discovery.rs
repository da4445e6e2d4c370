//! The kinds a manifest names, resolved against the API server's discovery: for the
//! controllers (parent, children, related kinds) and the event handlers (watched kinds).

use kube::Client;
use kube::core::GroupVersionKind;
use kube::discovery::{self, ApiResource, Scope};
use kube::error::DiscoveryError;

use crate::plugin::KindRef;

/// Why a kind a manifest names cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum KindError {
    /// The kind is not in the API server's discovery (a CRD not installed yet, an API
    /// the cluster does not serve). The host starts the plugin once it is.
    #[error("{kind} is not served by the API server")]
    NotServed { kind: String },
    /// The kind is served differently from what the plugin declares: another plural or
    /// scope.
    #[error("kind {kind} cannot be used: {message}")]
    Unknown { kind: String, message: String },
    /// Discovery failed (the API server unreachable, say).
    #[error("kind {kind}: discovery failed: {source}")]
    Discovery { kind: String, source: kube::Error },
}

/// The served resource for `kind`, checked against what the plugin declared.
///
/// # Errors
///
/// A [`KindError`] saying why the kind cannot be used.
pub async fn resolve(client: &Client, kind: &KindRef) -> Result<ApiResource, KindError> {
    let gvk = GroupVersionKind::gvk(&kind.group, &kind.version, &kind.kind);
    let (resource, capabilities) = discovery::pinned_kind(client, &gvk).await.map_err(|e| match e {
        // Its group, version or kind is not in discovery: a CRD not installed (yet), an API the
        // cluster does not serve (yet).
        kube::Error::Api(status) if status.code == 404 => KindError::NotServed { kind: kind.to_string() },
        kube::Error::Discovery(
            DiscoveryError::MissingKind(_) | DiscoveryError::MissingApiGroup(_) | DiscoveryError::MissingResource(_),
        ) => KindError::NotServed { kind: kind.to_string() },
        source => KindError::Discovery { kind: kind.to_string(), source },
    })?;
    let namespaced = capabilities.scope == Scope::Namespaced;
    if namespaced != kind.namespaced || resource.plural != kind.plural {
        return Err(KindError::Unknown {
            kind: kind.to_string(),
            message: format!(
                "the plugin declares plural {:?} ({}), the API server serves {:?} ({})",
                kind.plural,
                scope_name(kind.namespaced),
                resource.plural,
                scope_name(namespaced)
            ),
        });
    }
    Ok(resource)
}

fn scope_name(namespaced: bool) -> &'static str {
    if namespaced { "namespaced" } else { "cluster-scoped" }
}
