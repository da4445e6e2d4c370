//! The kinds a manifest names, resolved against the API server's discovery.

use kube::Client;
use kube::core::GroupVersionKind;
use kube::discovery::{self, ApiResource, Scope};
use kube::error::DiscoveryError;

use super::error::Error;
use crate::plugin::KindRef;

/// The served resource for `kind`, checked against what the plugin declared.
pub(crate) async fn resolve(client: &Client, kind: &KindRef) -> Result<ApiResource, Error> {
    let gvk = GroupVersionKind::gvk(&kind.group, &kind.version, &kind.kind);
    let (resource, capabilities) = discovery::pinned_kind(client, &gvk).await.map_err(|e| match e {
        // Its group, version or kind is not in discovery: a CRD not installed (yet), an API the
        // cluster does not serve (yet).
        kube::Error::Api(status) if status.code == 404 => Error::NotServed { kind: kind.to_string() },
        kube::Error::Discovery(
            DiscoveryError::MissingKind(_) | DiscoveryError::MissingApiGroup(_) | DiscoveryError::MissingResource(_),
        ) => Error::NotServed { kind: kind.to_string() },
        source => Error::Discovery { kind: kind.to_string(), source },
    })?;
    let namespaced = capabilities.scope == Scope::Namespaced;
    if namespaced != kind.namespaced || resource.plural != kind.plural {
        return Err(Error::UnknownKind {
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
