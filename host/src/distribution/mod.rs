//! Plugins distributed through OCI registries: the Wasm artifact's layout
//! ([`artifact`]), the registry client ([`oci`]), credentials from a docker config
//! ([`credentials`]), cosign signatures ([`signature`], classic or in a Sigstore bundle,
//! `bundle.rs`; keyless ones, [`keyless`], checked against a Sigstore [`trusted_root`])
//! and the store of pulled modules ([`cache`]); [`pull`] is what a host does with a
//! reference: resolve it, check its signature, fetch the module (or find it in the store)
//! and check what it fetched.

pub mod artifact;
mod bundle;
pub mod cache;
#[cfg(test)]
mod conformance;
pub mod credentials;
mod inclusion;
pub mod keyless;
pub mod oci;
pub mod signature;
mod timestamp;
pub mod trusted_root;

use oci_client::Reference;

pub use cache::BlobCache;
pub use credentials::DockerConfig;
pub use keyless::Identity;
pub use oci::{OciError, Registry, RegistryOptions, parse_reference};
pub use signature::{SignatureError, SignedBy, SigningKey, Trust, Verified, VerifyingKey};
pub use trusted_root::TrustedRoot;

/// A module pulled from a registry.
#[derive(Clone, Debug)]
pub struct Pulled {
    /// The manifest's digest: what pins this version (`REPOSITORY@DIGEST`).
    pub manifest_digest: String,
    /// The layer's digest: `sha256:` and the SHA-256 of `bytes`, the plugin's hash.
    pub layer_digest: String,
    /// The component.
    pub bytes: Vec<u8>,
    /// The signature that made it trusted, when one was required.
    pub verified: Option<Verified>,
    /// Whether the module came from the store rather than the registry.
    pub cached: bool,
}

/// Why a module could not be pulled.
#[derive(Debug, thiserror::Error)]
pub enum PullError {
    #[error(transparent)]
    Registry(#[from] OciError),
    #[error(transparent)]
    Signature(#[from] SignatureError),
}

/// Pulls the Wasm artifact `reference` names: its manifest, then (when `trust` names
/// signers) a signature by one of them over the manifest's digest, then the config and the
/// layer, each checked against the digest that names it. The module is taken from
/// `cache` when it holds the layer's digest, and kept there otherwise.
///
/// # Errors
///
/// When the artifact does not exist, is not a Wasm artifact, is not signed by a signer
/// of `trust`, or the registry serves bytes other than the digests say.
pub async fn pull(
    reference: &Reference,
    options: &RegistryOptions,
    trust: &Trust,
    cache: Option<&BlobCache>,
) -> Result<Pulled, PullError> {
    let registry = Registry::for_reference(reference, options)?;
    let manifest =
        registry.manifest(reference).await?.ok_or_else(|| OciError::NotFound { reference: reference.whole() })?;
    let verified = if trust.requires_signature() {
        Some(signature::verify(&registry, reference, &manifest.digest, trust).await?)
    } else {
        None
    };
    let config = registry.blob(reference, &manifest.manifest.config).await?;
    artifact::check(&manifest.manifest, &config)
        .map_err(|source| OciError::Artifact { reference: reference.whole(), source })?;
    let layer = &manifest.manifest.layers[0];
    if let Some(bytes) = cache.and_then(|c| c.get(&layer.digest)) {
        return Ok(Pulled {
            manifest_digest: manifest.digest,
            layer_digest: layer.digest.clone(),
            bytes,
            verified,
            cached: true,
        });
    }
    let bytes = registry.blob(reference, layer).await?;
    if let Some(cache) = cache
        && let Err(e) = cache.put(&layer.digest, &bytes)
    {
        tracing::warn!(digest = %layer.digest, error = %e, "could not keep the pulled module");
    }
    Ok(Pulled { manifest_digest: manifest.digest, layer_digest: layer.digest.clone(), bytes, verified, cached: false })
}
