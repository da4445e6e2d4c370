//! Signatures in cosign's classic format: keyed ECDSA P-256 over a "simple signing"
//! payload that names the manifest's digest, stored beside the artifact under the tag
//! `sha256-HEX.sig`, one layer per signature with the signature in the annotation
//! `dev.cosignproject.cosign/signature` (sigstore/cosign `specs/SIGNATURE_SPEC.md`).
//!
//! `cosign verify --key` accepts what [`sign`] writes, and [`verify`] accepts what
//! `cosign sign --key` writes, in this layout (`--new-bundle-format=false`) or in cosign
//! 3's default, a Sigstore bundle stored as an OCI 1.1 referrer (`bundle.rs`). Keys
//! are PEM: a public key is a `PUBLIC KEY` (what `cosign.pub` holds); a private key is an
//! unencrypted PKCS#8 `PRIVATE KEY` or SEC1 `EC PRIVATE KEY` — cosign's own
//! password-encrypted `cosign.key` is not read. Keyless signatures (a Fulcio certificate and a Rekor entry
//! instead of a key, [`super::keyless`]) are verified, not made: making one takes an OIDC
//! login and Fulcio, which `cosign sign` does.

use std::collections::BTreeMap;
use std::sync::Arc;

use base64::Engine as _;
use oci_client::Reference;
use oci_client::manifest::OciImageManifest;
use p256::ecdsa::signature::{Signer as _, Verifier as _};
use p256::pkcs8::{
    DecodePrivateKey as _, DecodePublicKey as _, EncodePrivateKey as _, EncodePublicKey as _, LineEnding,
};
use serde::{Deserialize, Serialize};

use super::bundle;
use super::keyless;
use super::oci::{self, OciError, Registry};
use super::trusted_root::TrustedRoot;

/// The media type of a signature layer: the payload, as signed.
pub const PAYLOAD_MEDIA_TYPE: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// The layer annotation holding the base64 DER signature of the payload.
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
/// `critical.type` of every cosign payload.
const SIGNATURE_TYPE: &str = "cosign container image signature";
/// The signature manifest's config: go-containerregistry's image config, as cosign writes it.
const CONFIG_MEDIA_TYPE: &str = "application/vnd.oci.image.config.v1+json";

/// A key that signs: ECDSA P-256.
pub struct SigningKey(p256::ecdsa::SigningKey);

/// A key that verifies: ECDSA P-256, as in `cosign.pub`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyingKey(p256::ecdsa::VerifyingKey);

/// Why a signature could not be made, or an artifact is not trusted.
#[derive(Debug, thiserror::Error)]
pub enum SignatureError {
    #[error("{origin}: {reason}")]
    Key { origin: String, reason: String },
    #[error(
        "{reference} is not signed: the registry has no signature at the tag {tag} and no Sigstore bundle of a \
         signature referring to it{attested}"
    )]
    Unsigned {
        reference: String,
        tag: String,
        /// What refers to it instead, if anything: ", only N attestation(s)".
        attested: String,
    },
    #[error("{reference} is not signed by a trusted {signer}: none of its {count} signature(s) {why}")]
    Untrusted { reference: String, count: usize, signer: &'static str, why: String },
    #[error(
        "{reference}: a signature by a trusted key signs {signed}, not this artifact's {digest} \
         (a signature copied from another artifact, or the artifact replaced)"
    )]
    WrongDigest { reference: String, digest: String, signed: String },
    #[error(transparent)]
    Registry(#[from] OciError),
}

impl SigningKey {
    /// A new key from the operating system's randomness.
    pub fn generate() -> Self {
        Self(p256::ecdsa::SigningKey::random(&mut rand_core::OsRng))
    }

    /// Reads a PEM private key: PKCS#8 (`PRIVATE KEY`) or SEC1 (`EC PRIVATE KEY`).
    ///
    /// # Errors
    ///
    /// When `pem` is none of those, not P-256, or cosign's encrypted format; `origin`
    /// names it.
    pub fn from_pem(pem: &str, origin: &str) -> Result<Self, SignatureError> {
        let key_err = |reason: String| SignatureError::Key { origin: origin.to_owned(), reason };
        if pem.contains("ENCRYPTED SIGSTORE PRIVATE KEY") || pem.contains("ENCRYPTED COSIGN PRIVATE KEY") {
            return Err(key_err(
                "cosign's password-encrypted keys are not supported: use an unencrypted PKCS#8 P-256 key \
                 (`kubewasm generate-key`, or `openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256`)"
                    .into(),
            ));
        }
        if pem.contains("-----BEGIN EC PRIVATE KEY-----") {
            let secret =
                p256::SecretKey::from_sec1_pem(pem).map_err(|e| key_err(format!("not a P-256 EC key: {e}")))?;
            return Ok(Self(secret.into()));
        }
        p256::ecdsa::SigningKey::from_pkcs8_pem(pem)
            .map(Self)
            .map_err(|e| key_err(format!("not a PKCS#8 P-256 private key (PEM `PRIVATE KEY`): {e}")))
    }

    /// The key as PKCS#8 PEM (secret: write it where only its owner reads).
    ///
    /// # Errors
    ///
    /// Not expected: encoding a valid key.
    pub fn to_pem(&self) -> Result<String, SignatureError> {
        self.0
            .to_pkcs8_pem(LineEnding::LF)
            .map(|pem| pem.to_string())
            .map_err(|e| SignatureError::Key { origin: "the new key".into(), reason: e.to_string() })
    }

    /// The key that verifies this key's signatures.
    pub fn verifying_key(&self) -> VerifyingKey {
        VerifyingKey(*self.0.verifying_key())
    }

    /// The base64 DER signature of `payload` (SHA-256, deterministic nonce).
    fn sign(&self, payload: &[u8]) -> String {
        let signature: p256::ecdsa::Signature = self.0.sign(payload);
        base64::engine::general_purpose::STANDARD.encode(signature.to_der().as_bytes())
    }
}

impl VerifyingKey {
    /// Reads a PEM public key (`PUBLIC KEY`, as in `cosign.pub`).
    ///
    /// # Errors
    ///
    /// When `pem` is not a P-256 public key; `origin` names it.
    pub fn from_pem(pem: &str, origin: &str) -> Result<Self, SignatureError> {
        p256::ecdsa::VerifyingKey::from_public_key_pem(pem).map(Self).map_err(|e| SignatureError::Key {
            origin: origin.to_owned(),
            reason: format!("not a P-256 public key (PEM `PUBLIC KEY`): {e}"),
        })
    }

    /// The key as PEM, as `cosign.pub` holds it.
    ///
    /// # Errors
    ///
    /// Not expected: encoding a valid key.
    pub fn to_pem(&self) -> Result<String, SignatureError> {
        self.0
            .to_public_key_pem(LineEnding::LF)
            .map_err(|e| SignatureError::Key { origin: "the public key".into(), reason: e.to_string() })
    }

    /// Whether `signature` (base64 DER) signs `payload` with this key.
    fn verifies(&self, payload: &[u8], signature: &str) -> bool {
        let Ok(der) = base64::engine::general_purpose::STANDARD.decode(signature.trim()) else {
            return false;
        };
        let Ok(signature) = p256::ecdsa::Signature::from_der(&der) else {
            return false;
        };
        self.0.verify(payload, &signature).is_ok()
    }
}

/// The simple-signing payload; field order and names as Go's `encoding/json` writes
/// sigstore's `payload.SimpleContainerImage`, so the bytes are cosign's.
#[derive(Debug, Serialize, Deserialize)]
struct Payload {
    critical: Critical,
    optional: Option<BTreeMap<String, serde_json::Value>>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Critical {
    identity: Identity,
    image: Image,
    #[serde(rename = "type")]
    kind: String,
}

#[derive(Debug, Serialize, Deserialize)]
struct Identity {
    #[serde(rename = "docker-reference")]
    docker_reference: String,
}

#[derive(Debug, Serialize, Deserialize)]
struct Image {
    #[serde(rename = "docker-manifest-digest")]
    docker_manifest_digest: String,
}

/// The tag a digest's signatures are stored under: `sha256:HEX` → `sha256-HEX.sig`.
pub fn signature_tag(manifest_digest: &str) -> String {
    format!("{}.sig", manifest_digest.replace(':', "-"))
}

/// The reference of the signatures of `manifest_digest`, in the repository of `reference`.
fn signature_reference(reference: &Reference, manifest_digest: &str) -> Reference {
    Reference::with_tag(
        reference.registry().to_owned(),
        reference.repository().to_owned(),
        signature_tag(manifest_digest),
    )
}

/// What [`sign`] did.
#[derive(Clone, Debug)]
pub struct Signed {
    /// The digest of the manifest signed.
    pub digest: String,
    /// The tag the signature is stored under.
    pub tag: String,
    /// Whether this key's signature of that payload was there already.
    pub already: bool,
}

/// Signs the artifact `reference` names (by tag or digest) with `key`, adding the
/// signature to those already stored for its digest, as cosign does.
///
/// # Errors
///
/// When the artifact does not exist or the registry refuses.
pub async fn sign(
    registry: &Registry,
    reference: &Reference,
    key: &SigningKey,
    annotations: BTreeMap<String, String>,
) -> Result<Signed, SignatureError> {
    let manifest =
        registry.manifest(reference).await?.ok_or_else(|| OciError::NotFound { reference: reference.whole() })?;
    let payload = payload(reference, &manifest.digest, annotations);
    let signature = key.sign(&payload);
    let layer_annotations = BTreeMap::from([(SIGNATURE_ANNOTATION.to_owned(), signature)]);
    let already = attach(registry, reference, &manifest.digest, &payload, layer_annotations).await?;
    Ok(Signed { tag: signature_tag(&manifest.digest), digest: manifest.digest, already })
}

/// The simple-signing payload cosign signs for the manifest `digest` in the repository
/// of `reference`, with `annotations` as its `optional`.
///
/// # Panics
///
/// Never: a payload of strings serialises.
pub fn payload(reference: &Reference, digest: &str, annotations: BTreeMap<String, String>) -> Vec<u8> {
    let optional = (!annotations.is_empty())
        .then(|| annotations.into_iter().map(|(k, v)| (k, serde_json::Value::String(v))).collect());
    let payload = Payload {
        critical: Critical {
            identity: Identity { docker_reference: format!("{}/{}", reference.registry(), reference.repository()) },
            image: Image { docker_manifest_digest: digest.to_owned() },
            kind: SIGNATURE_TYPE.into(),
        },
        optional,
    };
    serde_json::to_vec(&payload).expect("a payload of strings serialises")
}

/// Stores a signature layer, `payload` with `annotations` (the signature's, and a keyless
/// signature's certificate and Rekor bundle), beside the manifest `digest`, after those
/// stored already. Returns whether the same layer was there.
///
/// # Errors
///
/// When the registry refuses.
pub async fn attach(
    registry: &Registry,
    reference: &Reference,
    digest: &str,
    payload: &[u8],
    annotations: BTreeMap<String, String>,
) -> Result<bool, SignatureError> {
    let sig_reference = signature_reference(reference, digest);
    let mut layers = match registry.manifest(&sig_reference).await? {
        Some(existing) => existing.manifest.layers,
        None => Vec::new(),
    };
    let layer = oci::descriptor(PAYLOAD_MEDIA_TYPE, payload, Some(annotations));
    if layers.iter().any(|l| l.digest == layer.digest && l.annotations == layer.annotations) {
        return Ok(true);
    }
    layers.push(layer);
    let diff_ids: Vec<&str> = layers.iter().map(|l| l.digest.as_str()).collect();
    let config = serde_json::to_vec(&serde_json::json!({
        "architecture": "",
        "os": "",
        "config": {},
        "rootfs": {"type": "layers", "diff_ids": diff_ids},
    }))
    .map_err(|e| OciError::Registry { reference: reference.whole(), source: e.into() })?;
    registry.push_blob(&sig_reference, payload).await?;
    registry.push_blob(&sig_reference, &config).await?;
    let signature_manifest = OciImageManifest {
        schema_version: 2,
        media_type: Some(super::artifact::MANIFEST_MEDIA_TYPE.into()),
        config: oci::descriptor(CONFIG_MEDIA_TYPE, &config, None),
        layers,
        ..OciImageManifest::default()
    };
    registry.push_manifest(&sig_reference, &signature_manifest).await?;
    Ok(false)
}

/// Who may sign an artifact for it to be trusted: any one of `keys` or `identities`.
#[derive(Clone, Debug)]
pub struct Trust {
    pub keys: Vec<VerifyingKey>,
    /// Keyless signers, each an OIDC issuer and subject.
    pub identities: Vec<keyless::Identity>,
    /// Where keyless signatures' certificates and log entries must come from.
    pub root: Arc<TrustedRoot>,
}

impl Trust {
    /// Whether a signature is required at all.
    pub fn requires_signature(&self) -> bool {
        !self.keys.is_empty() || !self.identities.is_empty()
    }

    fn signer(&self) -> &'static str {
        match (self.keys.is_empty(), self.identities.is_empty()) {
            (false, true) => "key",
            (true, false) => "identity",
            _ => "key or identity",
        }
    }
}

/// Who made the signature that made an artifact trusted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SignedBy {
    /// The key of this index in [`Trust::keys`].
    Key(usize),
    /// An identity of [`Trust::identities`], as its certificate and Rekor entry say.
    Identity(keyless::Signer),
}

/// Which signature made an artifact trusted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verified {
    pub by: SignedBy,
    /// The signature's `optional` annotations.
    pub annotations: BTreeMap<String, serde_json::Value>,
}

/// Checks that the artifact of `manifest_digest` in the repository of `reference` has a
/// signature by a signer `trust` names and over that digest, stored as cosign stores it:
/// a layer under the tag `sha256-HEX.sig`, or a Sigstore bundle referring to the
/// manifest ([`super::bundle`], cosign 3's default).
///
/// # Errors
///
/// [`SignatureError::Unsigned`], [`SignatureError::Untrusted`] or
/// [`SignatureError::WrongDigest`]: what the operator needs to tell an unsigned artifact
/// from one signed by someone else or one whose signature was moved; or the registry's
/// error.
pub async fn verify(
    registry: &Registry,
    reference: &Reference,
    manifest_digest: &str,
    trust: &Trust,
) -> Result<Verified, SignatureError> {
    let mut found = Found::default();
    if let Some(verified) = classic(registry, reference, manifest_digest, trust, &mut found).await? {
        return Ok(verified);
    }
    if let Some(verified) = bundled(registry, reference, manifest_digest, trust, &mut found).await? {
        return Ok(verified);
    }
    let named = format!("{}/{}@{manifest_digest}", reference.registry(), reference.repository());
    Err(found.refusal(named, manifest_digest, trust))
}

/// The signature layers under the tag `sha256-HEX.sig`: the first trusted one over
/// `manifest_digest`.
async fn classic(
    registry: &Registry,
    reference: &Reference,
    manifest_digest: &str,
    trust: &Trust,
    found: &mut Found,
) -> Result<Option<Verified>, SignatureError> {
    let sig_reference = signature_reference(reference, manifest_digest);
    let Some(signatures) = registry.manifest(&sig_reference).await? else {
        return Ok(None);
    };
    let no_annotations = BTreeMap::new();
    for layer in &signatures.manifest.layers {
        let annotations = layer.annotations.as_ref().unwrap_or(&no_annotations);
        let Some(signature) = annotations.get(SIGNATURE_ANNOTATION) else {
            continue;
        };
        if layer.media_type != PAYLOAD_MEDIA_TYPE {
            continue;
        }
        found.count += 1;
        let payload = match registry.blob(&sig_reference, layer).await {
            Ok(payload) => payload,
            // An altered payload blob cannot verify; the others may.
            Err(OciError::DigestMismatch { .. }) => continue,
            Err(e) => return Err(e.into()),
        };
        let keyless = annotations
            .contains_key(keyless::CERTIFICATE_ANNOTATION)
            .then_some(|| keyless::verify(&trust.root, &payload, signature, annotations));
        let Some(by) = found.signed_by(trust, &payload, signature, keyless) else {
            continue;
        };
        let Ok(parsed) = serde_json::from_slice::<Payload>(&payload) else {
            continue;
        };
        if parsed.critical.kind != SIGNATURE_TYPE {
            continue;
        }
        if parsed.critical.image.docker_manifest_digest != manifest_digest {
            found.wrong_digest = Some(parsed.critical.image.docker_manifest_digest);
            continue;
        }
        return Ok(Some(Verified { by, annotations: parsed.optional.unwrap_or_default() }));
    }
    Ok(None)
}

/// The Sigstore bundles referring to `manifest_digest`: the first trusted signature of it.
async fn bundled(
    registry: &Registry,
    reference: &Reference,
    manifest_digest: &str,
    trust: &Trust,
    found: &mut Found,
) -> Result<Option<Verified>, SignatureError> {
    let bundles = match registry.referrers(reference, manifest_digest, bundle::ARTIFACT_TYPE).await {
        Ok(bundles) => bundles,
        // The classic signatures' refusal says more than a registry's refusal to list.
        Err(e) if found.count > 0 => {
            found.refusals.push(format!("its referrers could not be listed ({e})"));
            return Ok(None);
        }
        Err(e) => return Err(e.into()),
    };
    for digest in bundles {
        let holder = Reference::with_digest(reference.registry().to_owned(), reference.repository().to_owned(), digest);
        let Some(manifest) = registry.manifest(&holder).await? else {
            continue;
        };
        let Some(layer) = manifest.manifest.layers.iter().find(|l| bundle::is_bundle(&l.media_type)) else {
            continue;
        };
        let opened = match registry.blob(&holder, layer).await.map(|bytes| bundle::open(&bytes)) {
            Ok(Ok(Some(opened))) => opened,
            // `cosign attest` refers to the artifact the same way: not a signature.
            Ok(Ok(None)) => {
                found.attestations += 1;
                continue;
            }
            Ok(Err(why)) => {
                found.count += 1;
                found.refusals.push(format!("a Sigstore bundle is refused: {why}"));
                continue;
            }
            Err(OciError::DigestMismatch { .. }) => {
                found.count += 1;
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        found.count += 1;
        let keyless = opened.logged().map(|logged| move || keyless::check(&trust.root, &logged));
        let Some(by) = found.signed_by(trust, &opened.message, &opened.signature, keyless) else {
            continue;
        };
        if let Some((_, annotations)) = opened.subjects.iter().find(|(d, _)| d == manifest_digest) {
            return Ok(Some(Verified { by, annotations: annotations.clone() }));
        }
        match opened.subjects.into_iter().next() {
            Some((signed, _)) => found.wrong_digest = Some(signed),
            None => found.refusals.push("a trusted bundle's statement names no SHA-256 digest".into()),
        }
    }
    Ok(None)
}

/// What the signatures looked at so far said, for the refusal when none is trusted.
#[derive(Default)]
struct Found {
    /// Signatures seen, in either layout.
    count: usize,
    /// Bundles of statements other than a signature.
    attestations: usize,
    refusals: Vec<String>,
    /// The digest a trusted signature signed instead of the artifact's.
    wrong_digest: Option<String>,
}

impl Found {
    /// Why no signature of `named` (an artifact of `digest`) is trusted.
    fn refusal(self, named: String, digest: &str, trust: &Trust) -> SignatureError {
        if self.count == 0 {
            let attested = match self.attestations {
                0 => String::new(),
                n => format!(", only {n} attestation(s)"),
            };
            return SignatureError::Unsigned { reference: named, tag: signature_tag(digest), attested };
        }
        if let Some(signed) = self.wrong_digest {
            return SignatureError::WrongDigest { reference: named, digest: digest.to_owned(), signed };
        }
        let keys = if trust.identities.is_empty() {
            "verifies with the given key(s) (signed with another key, or the signature or payload altered)"
        } else {
            "verifies with the given key(s) or is keyless (no certificate)"
        };
        let why = match (trust.keys.is_empty(), self.refusals.is_empty()) {
            (_, true) => keys.to_owned(),
            (true, false) => format!("verifies: {}", self.refusals.join("; ")),
            (false, false) => format!("{keys}; and {}", self.refusals.join("; ")),
        };
        SignatureError::Untrusted { reference: named, count: self.count, signer: trust.signer(), why }
    }

    /// Who of `trust` made `signature` (base64 DER) over `message`: a key, or the signer
    /// `keyless` checks (given when the signature carries a certificate).
    fn signed_by(
        &mut self,
        trust: &Trust,
        message: &[u8],
        signature: &str,
        keyless: Option<impl FnOnce() -> Result<keyless::Signer, keyless::Refused>>,
    ) -> Option<SignedBy> {
        if let Some(key) = trust.keys.iter().position(|k| k.verifies(message, signature)) {
            return Some(SignedBy::Key(key));
        }
        let check = keyless.filter(|_| !trust.identities.is_empty())?;
        match check() {
            Ok(signer) if trust.identities.iter().any(|i| signer.is(i)) => Some(SignedBy::Identity(signer)),
            Ok(signer) => {
                self.refusals.push(format!("one is signed by {signer}, not a trusted identity"));
                None
            }
            Err(e) => {
                self.refusals.push(format!("a keyless one is refused: {e}"));
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_payload_is_byte_for_byte_cosigns() {
        let payload = Payload {
            critical: Critical {
                identity: Identity { docker_reference: "localhost:5000/tcpconnect".into() },
                image: Image {
                    docker_manifest_digest: "sha256:7a91c50d922925f152fec96ed1d84b7bc6b2079c169d68826f6cf307f22d40e6"
                        .into(),
                },
                kind: SIGNATURE_TYPE.into(),
            },
            optional: None,
        };
        // As printed in cosign's README.
        assert_eq!(
            String::from_utf8(serde_json::to_vec(&payload).unwrap()).unwrap(),
            r#"{"critical":{"identity":{"docker-reference":"localhost:5000/tcpconnect"},"image":{"docker-manifest-digest":"sha256:7a91c50d922925f152fec96ed1d84b7bc6b2079c169d68826f6cf307f22d40e6"},"type":"cosign container image signature"},"optional":null}"#
        );
        assert_eq!(
            signature_tag("sha256:7a91c50d922925f152fec96ed1d84b7bc6b2079c169d68826f6cf307f22d40e6"),
            "sha256-7a91c50d922925f152fec96ed1d84b7bc6b2079c169d68826f6cf307f22d40e6.sig"
        );
    }

    #[test]
    fn keys_round_trip_through_pem_and_verify_only_their_own_signatures() {
        let key = SigningKey::generate();
        let again = SigningKey::from_pem(&key.to_pem().unwrap(), "key.pem").unwrap();
        let public = VerifyingKey::from_pem(&key.verifying_key().to_pem().unwrap(), "key.pub").unwrap();
        assert_eq!(again.verifying_key(), public);
        let signature = again.sign(b"payload");
        assert!(public.verifies(b"payload", &signature));
        assert!(!public.verifies(b"payload!", &signature));
        assert!(!SigningKey::generate().verifying_key().verifies(b"payload", &signature));
        assert!(!public.verifies(b"payload", "not base64"));
    }

    #[test]
    fn a_cosign_public_key_is_read_and_encrypted_private_keys_are_refused_by_name() {
        // Crossplane's end-to-end test key, written by `cosign generate-key-pair`.
        let cosign_pub = "-----BEGIN PUBLIC KEY-----\n\
            MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEDjVkz6tbJd1RGzAdx1hmZHWh52J4\n\
            VG1xGzbFfDEhojXmFodEXLotz8qe1okeSpP0yZxjM0a8z08ljrxLgiFaPg==\n\
            -----END PUBLIC KEY-----\n";
        VerifyingKey::from_pem(cosign_pub, "cosign.pub").unwrap();
        let encrypted =
            "-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED SIGSTORE PRIVATE KEY-----\n";
        let err = SigningKey::from_pem(encrypted, "cosign.key").err().unwrap();
        assert!(err.to_string().starts_with("cosign.key: cosign's password-encrypted keys are not supported"), "{err}");
        let err = VerifyingKey::from_pem("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n", "k.pub")
            .unwrap_err();
        assert!(err.to_string().starts_with("k.pub: not a P-256 public key"), "{err}");
    }
}
