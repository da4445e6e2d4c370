//! Talking to an OCI registry (the distribution API, through oci-client): pushing a
//! plugin as a Wasm artifact, reading manifests and blobs with their digests checked.
//!
//! TLS is rustls with the host's ring provider; plain HTTP is allowed only to a registry
//! on a loopback address (`--insecure`, for tests and local registries), so that a
//! typo cannot send credentials or take modules over an open network unprotected.

use std::collections::BTreeMap;
use std::net::IpAddr;

use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::errors::{DigestError, OciDistributionError, OciErrorCode};
use oci_client::manifest::{OciDescriptor, OciImageManifest};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};

use super::artifact::{self, ArtifactError, WasmConfig};
use super::credentials::DockerConfig;
use crate::plugin::digest;

/// The largest blob pulled: a module or config beyond it is refused before it is read.
pub const MAX_BLOB_BYTES: usize = 512 << 20;

/// A blob being received: refuses bytes beyond what its descriptor announced.
struct Bounded {
    bytes: Vec<u8>,
    limit: usize,
}

impl tokio::io::AsyncWrite for Bounded {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        if self.bytes.len() + buf.len() > self.limit {
            let e = std::io::Error::new(std::io::ErrorKind::FileTooLarge, "more bytes than the descriptor's size");
            return std::task::Poll::Ready(Err(e));
        }
        self.bytes.extend_from_slice(buf);
        std::task::Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
}

/// How to reach registries.
#[derive(Clone, Debug, Default)]
pub struct RegistryOptions {
    /// Credentials per registry.
    pub credentials: DockerConfig,
    /// Plain HTTP instead of HTTPS; refused for a registry not on loopback.
    pub insecure: bool,
}

/// What went wrong talking to a registry, or with what it served.
#[derive(Debug, thiserror::Error)]
pub enum OciError {
    #[error("{text:?} is not an OCI reference (REGISTRY/REPOSITORY[:TAG][@sha256:DIGEST]): {source}")]
    Reference { text: String, source: oci_client::ParseError },
    #[error("--insecure (plain HTTP) is only for registries on loopback, not {registry}")]
    InsecureRemote { registry: String },
    #[error("{reference}: not found in the registry")]
    NotFound { reference: String },
    #[error(
        "{reference}: the registry {registry} wants credentials, or refused those given (HTTP 401): \
         give them in a docker config (--registry-config, auths.\"{registry}\")"
    )]
    Unauthorized { reference: String, registry: String },
    #[error("{reference}: {source}")]
    Registry { reference: String, source: OciDistributionError },
    #[error("{reference}: {source}")]
    Artifact { reference: String, source: ArtifactError },
    #[error("{reference}: the registry served {what} of digest {actual}, expected {expected} (tampered or corrupt)")]
    DigestMismatch { reference: String, what: &'static str, expected: String, actual: String },
    #[error("{reference}: the blob {digest} is {size} bytes, more than a plugin may be")]
    TooLarge { reference: String, digest: String, size: usize },
}

/// Parses `text` as an OCI reference.
///
/// # Errors
///
/// When `text` is not a reference.
pub fn parse_reference(text: &str) -> Result<Reference, OciError> {
    text.parse().map_err(|source| OciError::Reference { text: text.to_owned(), source })
}

/// A manifest as the registry served it: its bytes (what a signature's digest names),
/// their digest, and the parsed image manifest.
#[derive(Clone, Debug)]
pub struct Manifest {
    pub bytes: Vec<u8>,
    /// `sha256:HEX` of `bytes`.
    pub digest: String,
    pub manifest: OciImageManifest,
}

/// A client of one registry, with the credentials it is given in the docker config.
pub struct Registry {
    client: Client,
    auth: RegistryAuth,
}

impl Registry {
    /// A client for the registry of `reference`.
    ///
    /// # Errors
    ///
    /// [`OciError::InsecureRemote`] when plain HTTP is asked for a registry off loopback.
    pub fn for_reference(reference: &Reference, options: &RegistryOptions) -> Result<Self, OciError> {
        let registry = reference.resolve_registry();
        if options.insecure && !is_loopback(registry) {
            return Err(OciError::InsecureRemote { registry: registry.to_owned() });
        }
        // reqwest is built without a provider of its own: it takes the process's, ring.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = Client::new(ClientConfig {
            protocol: if options.insecure { ClientProtocol::Http } else { ClientProtocol::Https },
            // One blob upload per request: fewer round trips for a module of megabytes,
            // and what every registry accepts.
            use_monolithic_push: true,
            ..ClientConfig::default()
        });
        Ok(Self { client, auth: options.credentials.auth_for(registry) })
    }

    /// Pushes `component` as a Wasm artifact under `reference` (its tag), the layer
    /// named `title`. Returns the manifest's digest.
    ///
    /// # Errors
    ///
    /// When `component` is not a component or the registry refuses.
    pub async fn push_component(
        &self,
        reference: &Reference,
        component: &[u8],
        title: &str,
        created: String,
    ) -> Result<String, OciError> {
        let artifact_err = |source| OciError::Artifact { reference: reference.whole(), source };
        let layer_digest = format!("sha256:{}", digest(component));
        let config = WasmConfig::of_component(component, &layer_digest, created.clone()).map_err(artifact_err)?;
        let config = serde_json::to_vec(&config).map_err(|e| artifact_err(ArtifactError::Config(e)))?;
        let layer = descriptor(
            artifact::LAYER_MEDIA_TYPE,
            component,
            Some(BTreeMap::from([(artifact::TITLE_ANNOTATION.to_owned(), title.to_owned())])),
        );
        let manifest = OciImageManifest {
            schema_version: 2,
            media_type: Some(artifact::MANIFEST_MEDIA_TYPE.into()),
            config: descriptor(artifact::CONFIG_MEDIA_TYPE, &config, None),
            layers: vec![layer],
            annotations: Some(BTreeMap::from([(artifact::CREATED_ANNOTATION.to_owned(), created)])),
            ..OciImageManifest::default()
        };
        self.push_blob(reference, component).await?;
        self.push_blob(reference, &config).await?;
        self.push_manifest(reference, &manifest).await
    }

    /// The manifest `reference` names; `None` when the registry has none of that name.
    ///
    /// # Errors
    ///
    /// When the registry cannot be reached or refuses, serves something that is not an
    /// OCI image manifest, or (for a reference by digest) other bytes.
    pub async fn manifest(&self, reference: &Reference) -> Result<Option<Manifest>, OciError> {
        let result = self
            .client
            .pull_manifest_raw(
                reference,
                &self.auth,
                &[artifact::MANIFEST_MEDIA_TYPE, "application/vnd.docker.distribution.manifest.v2+json"],
            )
            .await;
        let bytes = match result {
            Ok((bytes, _)) => bytes.to_vec(),
            Err(e) if is_not_found(&e) => return Ok(None),
            Err(e) => return Err(registry_error(reference, e)),
        };
        // The digest is the bytes', whatever a header claims: it is what a signature names.
        let actual = format!("sha256:{}", digest(&bytes));
        if let Some(expected) = reference.digest()
            && expected != actual
        {
            return Err(OciError::DigestMismatch {
                reference: reference.whole(),
                what: "a manifest",
                expected: expected.to_owned(),
                actual,
            });
        }
        let manifest = serde_json::from_slice(&bytes).map_err(|e| OciError::Artifact {
            reference: reference.whole(),
            source: ArtifactError::Layout(format!("the manifest is not an OCI image manifest: {e}")),
        })?;
        Ok(Some(Manifest { bytes, digest: actual, manifest }))
    }

    /// The blob `descriptor` names, in the repository of `reference`, its digest checked
    /// and its size bounded by the descriptor's (so a registry cannot fill the host's
    /// memory) and by [`MAX_BLOB_BYTES`].
    ///
    /// # Errors
    ///
    /// When the registry cannot be reached or refuses, or serves other bytes.
    pub async fn blob(&self, reference: &Reference, descriptor: &OciDescriptor) -> Result<Vec<u8>, OciError> {
        let mismatch = |actual: String| OciError::DigestMismatch {
            reference: reference.whole(),
            what: "a blob",
            expected: descriptor.digest.clone(),
            actual,
        };
        let limit = usize::try_from(descriptor.size).unwrap_or(0);
        if limit > MAX_BLOB_BYTES {
            return Err(OciError::TooLarge {
                reference: reference.whole(),
                digest: descriptor.digest.clone(),
                size: limit,
            });
        }
        let mut out = Bounded { bytes: Vec::with_capacity(limit.min(16 << 20)), limit };
        self.client.pull_blob(reference, descriptor, &mut out).await.map_err(|source| match source {
            OciDistributionError::DigestError(DigestError::VerificationError { actual, .. }) => mismatch(actual),
            OciDistributionError::IoError(e) if e.kind() == std::io::ErrorKind::FileTooLarge => {
                mismatch(format!("more than the {limit} bytes its descriptor says"))
            }
            source => registry_error(reference, source),
        })?;
        // oci-client checks as it streams; checked again here because what runs is
        // decided by this digest.
        let actual = format!("sha256:{}", digest(&out.bytes));
        if actual != descriptor.digest {
            return Err(mismatch(actual));
        }
        Ok(out.bytes)
    }

    /// The digests of the manifests that name `digest` as their subject, in the repository of
    /// `reference`, of `artifact_type`: from the referrers API, or from the tag
    /// `sha256-HEX` on a registry without it (the OCI distribution spec's fallback,
    /// which cosign and oras write).
    ///
    /// # Errors
    ///
    /// When the registry cannot be reached or refuses.
    pub async fn referrers(
        &self,
        reference: &Reference,
        digest: &str,
        artifact_type: &str,
    ) -> Result<Vec<String>, OciError> {
        let subject = Reference::with_digest(
            reference.registry().to_owned(),
            reference.repository().to_owned(),
            digest.to_owned(),
        );
        self.client.store_auth_if_needed(subject.resolve_registry(), &self.auth).await;
        let index = self
            .client
            .pull_referrers(&subject, Some(artifact_type))
            .await
            .map_err(|source| registry_error(&subject, source))?;
        // A registry may ignore the filter (the spec allows it).
        Ok(index
            .manifests
            .into_iter()
            .filter(|m| m.artifact_type.as_deref() == Some(artifact_type))
            .map(|m| m.digest)
            .collect())
    }

    /// Uploads `bytes` as a blob to the repository of `reference`. Returns its descriptor's digest.
    ///
    /// # Errors
    ///
    /// When the registry cannot be reached or refuses.
    pub async fn push_blob(&self, reference: &Reference, bytes: &[u8]) -> Result<String, OciError> {
        let blob_digest = format!("sha256:{}", digest(bytes));
        self.client.store_auth_if_needed(reference.resolve_registry(), &self.auth).await;
        self.client
            .push_blob(reference, bytes.to_vec(), &blob_digest)
            .await
            .map_err(|source| registry_error(reference, source))?;
        Ok(blob_digest)
    }

    /// Uploads `manifest` under `reference` (its tag, or its digest). Returns the
    /// digest of the bytes sent.
    ///
    /// # Errors
    ///
    /// When the registry cannot be reached or refuses.
    pub async fn push_manifest(&self, reference: &Reference, manifest: &OciImageManifest) -> Result<String, OciError> {
        let bytes = serde_json::to_vec(manifest).map_err(|e| registry_error(reference, e.into()))?;
        self.client.store_auth_if_needed(reference.resolve_registry(), &self.auth).await;
        self.client
            .push_manifest_raw(reference, bytes.clone(), http::HeaderValue::from_static(artifact::MANIFEST_MEDIA_TYPE))
            .await
            .map_err(|source| registry_error(reference, source))?;
        Ok(format!("sha256:{}", digest(&bytes)))
    }
}

/// A descriptor of `bytes` as a blob of `media_type`.
pub(crate) fn descriptor(
    media_type: &str,
    bytes: &[u8],
    annotations: Option<BTreeMap<String, String>>,
) -> OciDescriptor {
    OciDescriptor {
        media_type: media_type.to_owned(),
        digest: format!("sha256:{}", digest(bytes)),
        size: i64::try_from(bytes.len()).unwrap_or(i64::MAX),
        annotations,
        ..OciDescriptor::default()
    }
}

/// The error of a request for `reference`, a refusal of credentials said as such.
fn registry_error(reference: &Reference, source: OciDistributionError) -> OciError {
    let unauthorized = match &source {
        OciDistributionError::UnauthorizedError { .. } | OciDistributionError::AuthenticationFailure(_) => true,
        OciDistributionError::RegistryError { envelope, .. } => {
            envelope.errors.iter().any(|e| matches!(e.code, OciErrorCode::Unauthorized | OciErrorCode::Denied))
        }
        OciDistributionError::ServerError { code, .. } => *code == 401,
        _ => false,
    };
    if unauthorized {
        OciError::Unauthorized { reference: reference.whole(), registry: reference.resolve_registry().to_owned() }
    } else {
        OciError::Registry { reference: reference.whole(), source }
    }
}

/// Whether the registry said it has nothing of that name.
fn is_not_found(error: &OciDistributionError) -> bool {
    match error {
        OciDistributionError::ImageManifestNotFoundError(_) => true,
        OciDistributionError::RegistryError { envelope, .. } => envelope.errors.iter().any(|e| {
            matches!(e.code, OciErrorCode::ManifestUnknown | OciErrorCode::NameUnknown | OciErrorCode::NotFound)
        }),
        OciDistributionError::ServerError { code, .. } => *code == 404,
        _ => false,
    }
}

/// Whether `registry` (`host[:port]`) is on a loopback address.
fn is_loopback(registry: &str) -> bool {
    let host = match registry.rsplit_once(':') {
        // `[::1]:5000`, or `127.0.0.1:5000`; a bare IPv6 address has more colons.
        Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) && !host.ends_with(':') => host,
        _ => registry,
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host == "localhost" || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_blob_longer_than_its_descriptor_is_refused_as_it_arrives() {
        use tokio::io::AsyncWriteExt as _;
        let mut blob = Bounded { bytes: Vec::new(), limit: 8 };
        blob.write_all(b"1234").await.unwrap();
        blob.write_all(b"5678").await.unwrap();
        let err = blob.write_all(b"9").await.unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::FileTooLarge);
        assert_eq!(blob.bytes, b"12345678");
    }

    #[test]
    fn plain_http_is_refused_off_loopback() {
        for registry in ["127.0.0.1:5000", "localhost", "localhost:5000", "[::1]:5000", "127.0.0.2"] {
            assert!(is_loopback(registry), "{registry}");
        }
        for registry in ["registry.example", "10.0.0.1:5000", "localhost.example:5000", "[::2]:5000"] {
            assert!(!is_loopback(registry), "{registry}");
        }
        let reference = parse_reference("registry.example/plugins/cronjob:1").unwrap();
        let options = RegistryOptions { insecure: true, ..RegistryOptions::default() };
        let err = Registry::for_reference(&reference, &options).err().unwrap();
        assert_eq!(err.to_string(), "--insecure (plain HTTP) is only for registries on loopback, not registry.example");
    }
}
