//! A `Plugin` resource's module: pulled from its OCI source, its signature checked
//! against the resource's keys or keyless identities, compiled and described by the same
//! load as a file of the plugin directory. Each failure says which step failed and why,
//! in the terms of the status condition it sets.

use std::sync::Arc;

use super::crd::PluginSpec;
use crate::distribution::{
    self, BlobCache, DockerConfig, OciError, PullError, RegistryOptions, SignatureError, SignedBy, Trust, TrustedRoot,
};
use crate::plugin::{Engine, LoadError, Plugin, Settings};

/// The steps of taking a module from a registry, as the status's condition types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    Pulled,
    Verified,
    Loaded,
}

impl Step {
    /// Every step, in order.
    pub const ALL: [Step; 3] = [Step::Pulled, Step::Verified, Step::Loaded];

    /// The condition type.
    pub fn as_str(self) -> &'static str {
        match self {
            Step::Pulled => "Pulled",
            Step::Verified => "Verified",
            Step::Loaded => "Loaded",
        }
    }
}

/// A step that failed: the version that runs stays.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{} failed ({reason}): {message}", step.as_str())]
pub struct Failure {
    pub step: Step,
    /// CamelCase, for machines: `PullFailed`, `NotAWasmArtifact`, `DigestMismatch`,
    /// `NoSignatures`, `UntrustedSigner`, `SignatureForAnotherDigest`, `KeyInvalid`,
    /// `IdentityInvalid`, `SettingsInvalid`, `LoadFailed`.
    pub reason: &'static str,
    pub message: String,
}

/// A module taken from its registry, trusted and loaded.
pub struct Fetched {
    pub plugin: Arc<Plugin>,
    pub settings: Settings,
    /// The manifest's digest: what runs, pinned.
    pub digest: String,
    /// Who signed it, when a signature was required: for the `Verified` condition.
    pub signed_by: Option<String>,
}

/// What fetching needs besides the spec.
pub struct Context<'a> {
    pub engine: &'a Engine,
    /// The registry's credentials (from the spec's pull Secret), if any.
    pub credentials: DockerConfig,
    /// Where pulled modules are kept by digest.
    pub cache: Option<&'a BlobCache>,
    /// Where keyless signatures must come from.
    pub trusted_root: Arc<TrustedRoot>,
    /// Modules loaded already (the version that runs, its candidate): one pulled again
    /// is not compiled again.
    pub loaded: Vec<Arc<Plugin>>,
}

/// Pulls, verifies and loads the module of `spec`. `name` is the resource's, for messages.
///
/// # Errors
///
/// The first step that failed, and why.
pub async fn fetch(name: &str, spec: &PluginSpec, context: Context<'_>) -> Result<Fetched, Failure> {
    let failure = |step, reason, message: String| Failure { step, reason, message };
    let mut settings = match &spec.settings {
        Some(value) => Settings::from_json(value)
            .map_err(|e| failure(Step::Loaded, "SettingsInvalid", format!("spec.settings: {e}")))?,
        None => Settings::default(),
    };
    settings.enabled = spec.enabled;
    if let Some(identity) = &spec.identity {
        let account = crate::plugin::service_account(identity.service_account_name.clone())
            .map_err(|e| failure(Step::Loaded, "SettingsInvalid", format!("spec.identity.serviceAccountName: {e}")))?;
        settings.service_account = Some(account);
    }
    let keys = spec
        .verification
        .keys
        .iter()
        .enumerate()
        .map(|(i, pem)| distribution::VerifyingKey::from_pem(pem, &format!("spec.verification.keys[{i}]")))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| failure(Step::Verified, "KeyInvalid", e.to_string()))?;
    for (i, identity) in spec.verification.keyless.iter().enumerate() {
        if let Err(why) = identity.check() {
            return Err(failure(Step::Verified, "IdentityInvalid", format!("spec.verification.keyless[{i}]: {why}")));
        }
    }
    let trust = Trust { keys, identities: spec.verification.keyless.clone(), root: context.trusted_root.clone() };
    let mut reference = distribution::parse_reference(&spec.source.oci)
        .map_err(|e| failure(Step::Pulled, "PullFailed", format!("spec.source.oci: {e}")))?;
    if let Some(digest) = &spec.source.digest {
        // The registry must serve exactly this manifest, whatever the tag says now.
        reference = reference.clone_with_digest(digest.clone());
    }
    let options = RegistryOptions { credentials: context.credentials, insecure: spec.source.insecure };
    let pulled = distribution::pull(&reference, &options, &trust, context.cache).await.map_err(|e| match e {
        PullError::Signature(e) => {
            let reason = match &e {
                SignatureError::Unsigned { .. } => "NoSignatures",
                SignatureError::Untrusted { .. } => "UntrustedSigner",
                SignatureError::WrongDigest { .. } => "SignatureForAnotherDigest",
                SignatureError::Key { .. } => "KeyInvalid",
                SignatureError::Registry(_) => "PullFailed",
            };
            failure(if reason == "PullFailed" { Step::Pulled } else { Step::Verified }, reason, e.to_string())
        }
        PullError::Registry(e) => {
            let reason = match &e {
                OciError::Artifact { .. } => "NotAWasmArtifact",
                OciError::DigestMismatch { .. } => "DigestMismatch",
                _ => "PullFailed",
            };
            failure(Step::Pulled, reason, e.to_string())
        }
    })?;
    let signed_by = pulled.verified.as_ref().map(|verified| match &verified.by {
        SignedBy::Key(i) => format!("the key spec.verification.keys[{i}]"),
        SignedBy::Identity(signer) => format!("{signer}, Rekor entry {}", signer.log_index),
    });
    let origin =
        format!("Plugin {name} ({}/{}@{})", reference.registry(), reference.repository(), pulled.manifest_digest);
    let engine = context.engine.clone();
    let bytes = pulled.bytes;
    let hash = crate::plugin::digest(&bytes);
    if let Some(plugin) = context.loaded.iter().find(|p| p.hash() == hash) {
        return Ok(Fetched {
            plugin: plugin.clone(),
            settings,
            digest: pulled.manifest_digest,
            signed_by: signed_by.clone(),
        });
    }
    let loaded = tokio::task::spawn_blocking(move || Plugin::from_bytes(&engine, &bytes, &origin))
        .await
        .map_err(|source| LoadError::Interrupted { origin: name.to_owned(), source })
        .and_then(|loaded| loaded)
        .map_err(|e| failure(Step::Loaded, "LoadFailed", e.to_string()))?;
    Ok(Fetched { plugin: Arc::new(loaded), settings, digest: pulled.manifest_digest, signed_by })
}
