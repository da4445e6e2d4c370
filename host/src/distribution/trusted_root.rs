//! A Sigstore trusted root (`trusted_root.json`, sigstore protobuf-specs' `TrustedRoot`,
//! the file `cosign verify --trusted-root` reads): the Fulcio certificate authorities,
//! the Rekor logs, the certificate transparency logs and the timestamp authorities a
//! keyless signature must come from, each with the time its key was in use. The Sigstore
//! public-good instance's is embedded; a private instance's, or a newer one, is read from
//! a file.

use std::sync::{Arc, LazyLock};

use base64::Engine as _;
use p256::pkcs8::DecodePublicKey as _;
use rustls::pki_types::{CertificateDer, TrustAnchor};
use serde::Deserialize;
use sha2::{Digest as _, Sha256};

/// The Sigstore public-good instance's trusted root, as its TUF repository published it.
pub(super) const PUBLIC_GOOD: &[u8] = include_bytes!("sigstore-public-good.json");

/// Why a trusted root could not be read.
#[derive(Debug, thiserror::Error)]
#[error("{origin}: not a Sigstore trusted root: {reason}")]
pub struct RootError {
    origin: String,
    reason: String,
}

/// The Fulcio authorities, Rekor logs and CT logs a keyless signature must come from.
#[derive(Debug)]
pub struct TrustedRoot {
    pub(super) authorities: Vec<Authority>,
    pub(super) logs: Vec<Log>,
    /// Empty: this Sigstore has no CT log, and certificates carry no SCT to check.
    pub(super) ct_logs: Vec<Log>,
    /// Who may say when a signature existed, where a log entry does not (Rekor v2).
    pub(super) timestamp_authorities: Vec<TimestampAuthority>,
}

/// A timestamp authority: the certificate it signs with, and the chain from it to its
/// root with the time it was in use.
#[derive(Debug)]
pub(super) struct TimestampAuthority {
    pub(super) signer: CertificateDer<'static>,
    pub(super) chain: Authority,
}

/// A certificate authority (a Fulcio, or a timestamp authority's chain): its root, the
/// intermediates it certifies through, and when it was in use.
#[derive(Debug)]
pub(super) struct Authority {
    pub(super) uri: String,
    pub(super) anchor: TrustAnchor<'static>,
    pub(super) intermediates: Vec<CertificateDer<'static>>,
    pub(super) valid: Validity,
}

/// A Rekor or CT log's key: ECDSA P-256 (Rekor v1, CT logs) or Ed25519 (Rekor v2).
#[derive(Debug)]
pub(super) struct Log {
    /// What an entry's log ID names: the root's `logId`, else the SHA-256 of the key's DER.
    pub(super) id: [u8; 32],
    /// The host of its base URL: the name it signs checkpoints with, and their origin.
    pub(super) host: String,
    key: LogKey,
    pub(super) valid: Validity,
}

#[derive(Debug)]
enum LogKey {
    P256(p256::ecdsa::VerifyingKey),
    /// The raw 32-byte key.
    Ed25519(Vec<u8>),
}

impl Log {
    /// The log ID in hex, as a Rekor entry names it.
    pub(super) fn hex_id(&self) -> String {
        crate::plugin::hex(&self.id)
    }

    /// Whether `signature` (DER for ECDSA, 64 bytes for Ed25519) is this log's over `message`.
    pub(super) fn verifies(&self, message: &[u8], signature: &[u8]) -> bool {
        use p256::ecdsa::signature::Verifier as _;
        match &self.key {
            LogKey::P256(key) => {
                p256::ecdsa::Signature::from_der(signature).is_ok_and(|s| key.verify(message, &s).is_ok())
            }
            LogKey::Ed25519(key) => ring::signature::UnparsedPublicKey::new(&ring::signature::ED25519, key)
                .verify(message, signature)
                .is_ok(),
        }
    }
}

/// Seconds since the epoch; no end is open.
#[derive(Debug)]
pub(super) struct Validity {
    start: i64,
    end: Option<i64>,
}

impl Authority {
    /// Verifies `end_entity` as certified by this authority at `time` for `usage` (an
    /// extended key usage's OID, DER), through `untrusted` certificates and this
    /// authority's intermediates; `read` takes what the caller needs from the path.
    ///
    /// # Errors
    ///
    /// webpki's reason, after the authority's URI.
    pub(super) fn certifies<T>(
        &self,
        end_entity: &webpki::EndEntityCert<'_>,
        untrusted: &[CertificateDer<'static>],
        time: i64,
        usage: &'static [u8],
        read: impl FnOnce(&webpki::VerifiedPath<'_>) -> T,
    ) -> Result<T, String> {
        let mut path = untrusted.to_vec();
        path.extend(self.intermediates.iter().cloned());
        let when =
            rustls::pki_types::UnixTime::since_unix_epoch(std::time::Duration::from_secs(time.max(0).unsigned_abs()));
        end_entity
            .verify_for_usage(
                webpki::ALL_VERIFICATION_ALGS,
                std::slice::from_ref(&self.anchor),
                &path,
                when,
                webpki::KeyUsage::required(usage),
                None,
                None,
            )
            .map(|verified| read(&verified))
            .map_err(|e| format!("{}: {e}", self.uri))
    }
}

impl Validity {
    pub(super) fn contains(&self, time: i64) -> bool {
        self.start <= time && self.end.is_none_or(|end| time <= end)
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RootFile {
    #[serde(default)]
    tlogs: Vec<LogFile>,
    #[serde(default)]
    certificate_authorities: Vec<AuthorityFile>,
    #[serde(default)]
    ctlogs: Vec<LogFile>,
    #[serde(default)]
    timestamp_authorities: Vec<AuthorityFile>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LogFile {
    #[serde(default)]
    base_url: String,
    public_key: PublicKeyFile,
    log_id: Option<LogIdFile>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LogIdFile {
    key_id: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PublicKeyFile {
    raw_bytes: String,
    #[serde(default)]
    key_details: String,
    valid_for: ValidityFile,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AuthorityFile {
    #[serde(default)]
    uri: String,
    cert_chain: ChainFile,
    valid_for: ValidityFile,
}

#[derive(Deserialize)]
struct ChainFile {
    certificates: Vec<RawBytes>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawBytes {
    raw_bytes: String,
}

#[derive(Deserialize)]
struct ValidityFile {
    start: String,
    end: Option<String>,
}

impl TrustedRoot {
    /// The Sigstore public-good instance (fulcio.sigstore.dev, rekor.sigstore.dev,
    /// ctfe.sigstore.dev), read once and shared.
    ///
    /// # Panics
    ///
    /// Never: the embedded root is read by a test.
    pub fn public_good() -> Arc<Self> {
        static ROOT: LazyLock<Arc<TrustedRoot>> = LazyLock::new(|| {
            Arc::new(
                TrustedRoot::from_json(PUBLIC_GOOD, "the embedded public-good trusted root")
                    .expect("the embedded root reads"),
            )
        });
        ROOT.clone()
    }

    /// Reads a `trusted_root.json`; `origin` names it in errors. Only ECDSA P-256 and
    /// Ed25519 log keys are read (what Rekor and Sigstore's CT logs sign with); other logs
    /// are skipped.
    ///
    /// # Errors
    ///
    /// When it is not JSON of that shape, a certificate or key in it does not parse, or
    /// it names no authority or no Rekor log.
    pub fn from_json(json: &[u8], origin: &str) -> Result<Self, RootError> {
        let err = |reason: String| RootError { origin: origin.to_owned(), reason };
        let file: RootFile = serde_json::from_slice(json).map_err(|e| err(e.to_string()))?;
        let b64 = |s: &str, what: &str| {
            base64::engine::general_purpose::STANDARD.decode(s).map_err(|e| err(format!("{what}: {e}")))
        };
        let logs = |files: &[LogFile], field: &str| {
            let mut logs = Vec::new();
            for (i, log) in files.iter().enumerate() {
                let der = b64(&log.public_key.raw_bytes, &format!("{field}[{i}].publicKey"))?;
                let key = match log.public_key.key_details.as_str() {
                    "PKIX_ECDSA_P256_SHA_256" | "" => LogKey::P256(
                        p256::ecdsa::VerifyingKey::from_public_key_der(&der)
                            .map_err(|e| err(format!("{field}[{i}] ({}): not a P-256 key: {e}", log.base_url)))?,
                    ),
                    "PKIX_ED25519" => {
                        const ED25519: x509_cert::der::asn1::ObjectIdentifier =
                            x509_cert::der::asn1::ObjectIdentifier::new_unwrap("1.3.101.112");
                        let key = x509_cert::spki::SubjectPublicKeyInfoRef::try_from(der.as_slice())
                            .ok()
                            .filter(|info| info.algorithm.oid == ED25519)
                            .map(|info| info.subject_public_key.raw_bytes().to_vec())
                            .filter(|key| key.len() == 32)
                            .ok_or_else(|| err(format!("{field}[{i}] ({}): not an Ed25519 key", log.base_url)))?;
                        LogKey::Ed25519(key)
                    }
                    _ => continue,
                };
                let valid =
                    validity(&log.public_key.valid_for).map_err(|e| err(format!("{field}[{i}].validFor: {e}")))?;
                let id = match &log.log_id {
                    Some(id) => b64(&id.key_id, &format!("{field}[{i}].logId"))?
                        .try_into()
                        .map_err(|_| err(format!("{field}[{i}].logId: not 32 bytes")))?,
                    None => Sha256::digest(&der).into(),
                };
                let host = log.base_url.split("://").last().unwrap_or_default();
                let host = host.split('/').next().unwrap_or_default().to_owned();
                logs.push(Log { id, host, key, valid });
            }
            Ok(logs)
        };
        // A chain from the leaf-most certificate to the root, which is the anchor.
        let authority = |file: &AuthorityFile, field: &str| {
            let mut chain = file
                .cert_chain
                .certificates
                .iter()
                .map(|c| b64(&c.raw_bytes, field).map(CertificateDer::from))
                .collect::<Result<Vec<_>, _>>()?;
            let root = chain.pop().ok_or_else(|| err(format!("{field}: no certificate")))?;
            let anchor = webpki::anchor_from_trusted_cert(&root)
                .map_err(|e| err(format!("{field} ({}): {e}", file.uri)))?
                .to_owned();
            let valid = validity(&file.valid_for).map_err(|e| err(format!("{field}.validFor: {e}")))?;
            Ok(Authority { uri: file.uri.clone(), anchor, intermediates: chain, valid })
        };
        let authorities = (file.certificate_authorities.iter().enumerate())
            .map(|(i, ca)| authority(ca, &format!("certificateAuthorities[{i}]")))
            .collect::<Result<Vec<_>, _>>()?;
        let mut timestamp_authorities = Vec::new();
        for (i, tsa) in file.timestamp_authorities.iter().enumerate() {
            let field = format!("timestampAuthorities[{i}]");
            let mut chain = authority(tsa, &field)?;
            // The signing certificate comes first.
            if chain.intermediates.is_empty() {
                return Err(err(format!("{field}: not a signing certificate and its root")));
            }
            let signer = chain.intermediates.remove(0);
            timestamp_authorities.push(TimestampAuthority { signer, chain });
        }
        let root = Self {
            authorities,
            logs: logs(&file.tlogs, "tlogs")?,
            ct_logs: logs(&file.ctlogs, "ctlogs")?,
            timestamp_authorities,
        };
        if root.authorities.is_empty() || root.logs.is_empty() {
            return Err(err("it names no certificate authority or no Rekor log with a key it reads".into()));
        }
        Ok(root)
    }
}

fn validity(file: &ValidityFile) -> Result<Validity, String> {
    let seconds =
        |s: &str| s.parse::<jiff::Timestamp>().map(jiff::Timestamp::as_second).map_err(|e| format!("{s:?}: {e}"));
    Ok(Validity { start: seconds(&file.start)?, end: file.end.as_deref().map(seconds).transpose()? })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_public_good_root_names_its_fulcios_rekor_and_ct_logs_and_a_bad_root_is_named() {
        let root = TrustedRoot::public_good();
        assert_eq!((root.authorities.len(), root.logs.len(), root.ct_logs.len()), (2, 1, 2));
        // rekor.sigstore.dev's log ID, as every entry of the public-good log names it.
        assert_eq!(root.logs[0].hex_id(), "c0d23d6ad406973f9559f3ba2d1ca01f84147d8ffc5b8445c224f98b9591801d");

        let err = TrustedRoot::from_json(br#"{"tlogs": []}"#, "empty.json").unwrap_err();
        assert_eq!(
            err.to_string(),
            "empty.json: not a Sigstore trusted root: it names no certificate authority or no Rekor log with a key it \
             reads"
        );
        let err = TrustedRoot::from_json(b"[", "cut.json").unwrap_err();
        assert!(err.to_string().starts_with("cut.json: not a Sigstore trusted root: EOF"), "{err}");
    }
}
