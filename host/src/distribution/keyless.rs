//! Keyless signatures as cosign stores them beside an artifact: the signing key is an
//! ephemeral one, certified by Fulcio for an OIDC identity (an issuer and a subject), and
//! the signature was entered in Rekor while that short-lived certificate was valid.
//!
//! Everything is checked offline against a Sigstore trusted root (`trusted_root.json`,
//! the file `cosign verify --trusted-root` reads): the certificate chains to one of its
//! certificate authorities at the time Rekor logged the entry, Rekor's signed entry
//! timestamp verifies with one of its logs' keys, and the logged entry is this signature,
//! by this certificate, over this payload. The embedded root is the Sigstore public-good
//! instance's; a private instance's is passed as a file. The certificate's embedded SCT
//! (the certificate transparency log's promise) is not checked.

use std::collections::BTreeMap;

use base64::Engine as _;
use p256::ecdsa::signature::Verifier as _;
use p256::pkcs8::DecodePublicKey as _;
use rustls::pki_types::{CertificateDer, TrustAnchor, UnixTime};
use serde::{Deserialize, Serialize};
use x509_parser::prelude::{FromDer as _, GeneralName, X509Certificate};

use crate::plugin::digest;

/// The layer annotation holding the signing certificate (PEM).
pub const CERTIFICATE_ANNOTATION: &str = "dev.sigstore.cosign/certificate";
/// The layer annotation holding the certificate's chain (PEM, intermediates then root).
pub const CHAIN_ANNOTATION: &str = "dev.sigstore.cosign/chain";
/// The layer annotation holding Rekor's entry and its signed entry timestamp (JSON).
pub const BUNDLE_ANNOTATION: &str = "dev.sigstore.cosign/bundle";

/// The Sigstore public-good instance's trusted root (Fulcio, Rekor and CT log keys),
/// as its TUF repository published it.
const PUBLIC_GOOD: &[u8] = include_bytes!("sigstore-public-good.json");

/// Extended key usage id-kp-codeSigning (1.3.6.1.5.5.7.3.3), DER content octets.
const CODE_SIGNING: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x03];
/// Fulcio's OIDC issuer extension (1.3.6.1.4.1.57264.1.8): a DER `UTF8String`.
const ISSUER_V2: &str = "1.3.6.1.4.1.57264.1.8";
/// Fulcio's deprecated issuer extension (1.3.6.1.4.1.57264.1.1): the raw string.
const ISSUER_V1: &str = "1.3.6.1.4.1.57264.1.1";

/// An identity whose signatures are trusted: the OIDC issuer that vouched for it (exact,
/// as cosign's `--certificate-oidc-issuer`) and the subject it names: exactly (an e-mail
/// address, or a URI, as `--certificate-identity`), or any URI under a prefix that ends
/// at a `/` (a CI workflow's identity names the ref it ran for:
/// `https://github.com/ORG/REPO/.github/workflows/release.yaml@refs/tags/` trusts every tag).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Identity {
    pub issuer: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub subject: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject_prefix: Option<String>,
}

impl Identity {
    /// Why this identity can match nothing, or too much.
    ///
    /// # Errors
    ///
    /// Without an issuer; with both or neither of a subject and a prefix; with a prefix
    /// that is not an `https://` URL ending at a `/` (`https://github.com/team` would
    /// trust `https://github.com/team-b/...` too).
    pub fn check(&self) -> Result<(), String> {
        if self.issuer.is_empty() {
            return Err("the issuer is required".into());
        }
        match (self.subject.is_empty(), &self.subject_prefix) {
            (false, None) => Ok(()),
            (true, Some(prefix)) if prefix.starts_with("https://") && prefix.ends_with('/') => Ok(()),
            (true, Some(prefix)) => Err(format!(
                "the subject prefix {prefix:?} must be an https:// URL ending at a `/`, so that it names a whole \
                 path segment"
            )),
            _ => Err("exactly one of a subject and a subject prefix is required".into()),
        }
    }
}

/// Who signed, as the verified certificate and Rekor entry say.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signer {
    /// The certificate's subject alternative name: e-mail address or URI.
    pub subject: String,
    /// The OIDC issuer the certificate names; certificates from before Fulcio recorded
    /// it have none.
    pub issuer: Option<String>,
    /// The entry's index in the Rekor log.
    pub log_index: i64,
    /// When Rekor logged it (seconds since the epoch).
    pub integrated_time: i64,
}

impl Signer {
    /// Whether this is `identity`: its issuer exactly, its subject exactly or under its prefix.
    pub fn is(&self, identity: &Identity) -> bool {
        let subject = match &identity.subject_prefix {
            Some(prefix) => identity.check().is_ok() && self.subject.starts_with(prefix.as_str()),
            None => !identity.subject.is_empty() && self.subject == identity.subject,
        };
        subject && self.issuer.as_deref() == Some(identity.issuer.as_str())
    }
}

impl std::fmt::Display for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (issuer {})", self.subject, self.issuer.as_deref().unwrap_or("not recorded"))
    }
}

/// Why a trusted root could not be read, or a keyless signature is not trusted.
#[derive(Debug, thiserror::Error)]
pub enum KeylessError {
    #[error("{origin}: not a Sigstore trusted root: {reason}")]
    Root { origin: String, reason: String },
    #[error("{0}")]
    Refused(String),
}

fn refused(reason: impl Into<String>) -> KeylessError {
    KeylessError::Refused(reason.into())
}

/// The Fulcio certificate authorities and Rekor logs a keyless signature must come from.
#[derive(Debug)]
pub struct TrustedRoot {
    authorities: Vec<Authority>,
    logs: Vec<Log>,
}

#[derive(Debug)]
struct Authority {
    uri: String,
    anchor: TrustAnchor<'static>,
    intermediates: Vec<CertificateDer<'static>>,
    valid: Validity,
}

#[derive(Debug)]
struct Log {
    /// SHA-256 of the key's DER, hex: what a Rekor entry's `logID` names.
    id: String,
    key: p256::ecdsa::VerifyingKey,
    valid: Validity,
}

/// Seconds since the epoch; no end is open.
#[derive(Debug)]
struct Validity {
    start: i64,
    end: Option<i64>,
}

impl Validity {
    fn contains(&self, time: i64) -> bool {
        self.start <= time && self.end.is_none_or(|end| time <= end)
    }
}

/// `trusted_root.json`, the fields read (sigstore protobuf-specs' `TrustedRoot`).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RootFile {
    #[serde(default)]
    tlogs: Vec<LogFile>,
    #[serde(default)]
    certificate_authorities: Vec<AuthorityFile>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LogFile {
    #[serde(default)]
    base_url: String,
    public_key: PublicKeyFile,
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
    /// The Sigstore public-good instance (fulcio.sigstore.dev, rekor.sigstore.dev).
    ///
    /// # Panics
    ///
    /// Never: the embedded root is read by a test.
    pub fn public_good() -> Self {
        Self::from_json(PUBLIC_GOOD, "the embedded public-good trusted root").expect("the embedded root reads")
    }

    /// Reads a `trusted_root.json`; `origin` names it in errors. Only ECDSA P-256 Rekor
    /// keys are read (what Rekor signs with); other logs are skipped.
    ///
    /// # Errors
    ///
    /// When it is not JSON of that shape, or a certificate or key in it does not parse.
    pub fn from_json(json: &[u8], origin: &str) -> Result<Self, KeylessError> {
        let err = |reason: String| KeylessError::Root { origin: origin.to_owned(), reason };
        let file: RootFile = serde_json::from_slice(json).map_err(|e| err(e.to_string()))?;
        let b64 = |s: &str, what: &str| {
            base64::engine::general_purpose::STANDARD.decode(s).map_err(|e| err(format!("{what}: {e}")))
        };
        let mut logs = Vec::new();
        for (i, log) in file.tlogs.iter().enumerate() {
            if !matches!(log.public_key.key_details.as_str(), "PKIX_ECDSA_P256_SHA_256" | "") {
                continue;
            }
            let der = b64(&log.public_key.raw_bytes, &format!("tlogs[{i}].publicKey"))?;
            let key = p256::ecdsa::VerifyingKey::from_public_key_der(&der)
                .map_err(|e| err(format!("tlogs[{i}] ({}): not a P-256 key: {e}", log.base_url)))?;
            let valid = validity(&log.public_key.valid_for).map_err(|e| err(format!("tlogs[{i}].validFor: {e}")))?;
            logs.push(Log { id: digest(&der), key, valid });
        }
        let mut authorities = Vec::new();
        for (i, ca) in file.certificate_authorities.iter().enumerate() {
            let mut chain = ca
                .cert_chain
                .certificates
                .iter()
                .map(|c| b64(&c.raw_bytes, &format!("certificateAuthorities[{i}]")).map(CertificateDer::from))
                .collect::<Result<Vec<_>, _>>()?;
            // Leaf-most first: the last is the root.
            let root = chain.pop().ok_or_else(|| err(format!("certificateAuthorities[{i}]: no certificate")))?;
            let anchor = webpki::anchor_from_trusted_cert(&root)
                .map_err(|e| err(format!("certificateAuthorities[{i}] ({}): {e}", ca.uri)))?
                .to_owned();
            let valid =
                validity(&ca.valid_for).map_err(|e| err(format!("certificateAuthorities[{i}].validFor: {e}")))?;
            authorities.push(Authority { uri: ca.uri.clone(), anchor, intermediates: chain, valid });
        }
        if authorities.is_empty() || logs.is_empty() {
            return Err(err("it names no certificate authority or no Rekor log with a P-256 key".into()));
        }
        Ok(Self { authorities, logs })
    }
}

fn validity(file: &ValidityFile) -> Result<Validity, String> {
    let seconds =
        |s: &str| s.parse::<jiff::Timestamp>().map(jiff::Timestamp::as_second).map_err(|e| format!("{s:?}: {e}"));
    Ok(Validity { start: seconds(&file.start)?, end: file.end.as_deref().map(seconds).transpose()? })
}

/// What cosign's bundle annotation holds: Rekor's entry and its signed entry timestamp.
#[derive(Deserialize)]
struct Bundle {
    #[serde(rename = "SignedEntryTimestamp")]
    signed_entry_timestamp: String,
    #[serde(rename = "Payload")]
    payload: Entry,
}

/// The entry as Rekor signs it: its canonical JSON is these fields, in this order,
/// without spaces.
#[derive(Serialize, Deserialize)]
struct Entry {
    body: String,
    #[serde(rename = "integratedTime")]
    integrated_time: i64,
    #[serde(rename = "logID")]
    log_id: String,
    #[serde(rename = "logIndex")]
    log_index: i64,
}

/// A `hashedrekord` or `rekord` v0.0.1 entry's body, the fields read.
#[derive(Deserialize)]
struct Body {
    kind: String,
    spec: BodySpec,
}

#[derive(Deserialize)]
struct BodySpec {
    data: BodyData,
    signature: BodySignature,
}

#[derive(Deserialize)]
struct BodyData {
    hash: BodyHash,
}

#[derive(Deserialize)]
struct BodyHash {
    algorithm: String,
    value: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BodySignature {
    content: String,
    public_key: BodyContent,
}

#[derive(Deserialize)]
struct BodyContent {
    content: String,
}

/// Checks one keyless signature layer: `signature` (base64 DER) over `payload`, with the
/// certificate, chain and bundle `annotations` cosign stores beside it.
///
/// # Errors
///
/// [`KeylessError::Refused`], saying which check failed.
pub fn verify(
    root: &TrustedRoot,
    payload: &[u8],
    signature: &str,
    annotations: &BTreeMap<String, String>,
) -> Result<Signer, KeylessError> {
    let b64 = base64::engine::general_purpose::STANDARD;
    let certificate_pem = annotations.get(CERTIFICATE_ANNOTATION).ok_or_else(|| refused("it has no certificate"))?;
    let certificate = first_certificate(certificate_pem.as_bytes())
        .ok_or_else(|| refused("its certificate annotation holds no PEM certificate"))?;
    let bundle = annotations
        .get(BUNDLE_ANNOTATION)
        .ok_or_else(|| refused("it has no Rekor bundle (a keyless signature must be in the transparency log)"))?;
    let bundle: Bundle =
        serde_json::from_str(bundle).map_err(|e| refused(format!("its Rekor bundle does not parse: {e}")))?;
    let entry = &bundle.payload;

    // Rekor vouches for the entry and its time.
    let log = root.logs.iter().find(|log| log.id == entry.log_id).ok_or_else(|| {
        refused(format!("its Rekor entry is from log {}, not a log of the trusted root", entry.log_id))
    })?;
    let canonical = serde_json::to_vec(entry).map_err(|e| refused(e.to_string()))?;
    let set = b64
        .decode(bundle.signed_entry_timestamp.trim())
        .ok()
        .and_then(|der| p256::ecdsa::Signature::from_der(&der).ok())
        .ok_or_else(|| refused("its signed entry timestamp is not a DER ECDSA signature"))?;
    if log.key.verify(&canonical, &set).is_err() {
        return Err(refused("its signed entry timestamp does not verify with the Rekor log's key"));
    }
    if !log.valid.contains(entry.integrated_time) {
        return Err(refused("it was logged outside the Rekor key's validity"));
    }

    // The entry is this signature, by this certificate, over this payload.
    let body: Body = b64
        .decode(&entry.body)
        .ok()
        .and_then(|json| serde_json::from_slice(&json).ok())
        .ok_or_else(|| refused("its Rekor entry's body is not a rekord or hashedrekord entry"))?;
    if !matches!(body.kind.as_str(), "hashedrekord" | "rekord") {
        return Err(refused(format!("its Rekor entry is a {}, not a signature", body.kind)));
    }
    let payload_hash = digest(payload);
    if body.spec.data.hash.algorithm != "sha256" || body.spec.data.hash.value != payload_hash {
        return Err(refused("its Rekor entry is for another payload"));
    }
    let signature_der = b64.decode(signature.trim()).map_err(|_| refused("its signature is not base64"))?;
    if b64.decode(body.spec.signature.content.trim()).ok().as_deref() != Some(&signature_der[..]) {
        return Err(refused("its Rekor entry is for another signature"));
    }
    let logged = b64.decode(&body.spec.signature.public_key.content).ok().and_then(|pem| first_certificate(&pem));
    if logged.as_deref() != Some(&certificate[..]) {
        return Err(refused("its Rekor entry is for another certificate"));
    }

    // The certificate was Fulcio's, valid when the entry was logged.
    let intermediates: Vec<CertificateDer<'_>> =
        annotations.get(CHAIN_ANNOTATION).map(|chain| certificates(chain.as_bytes())).unwrap_or_default();
    let when = UnixTime::since_unix_epoch(std::time::Duration::from_secs(entry.integrated_time.max(0).unsigned_abs()));
    let end_entity = CertificateDer::from(&certificate[..]);
    let end_entity = webpki::EndEntityCert::try_from(&end_entity)
        .map_err(|e| refused(format!("its certificate does not parse: {e}")))?;
    let current: Vec<&Authority> =
        root.authorities.iter().filter(|a| a.valid.contains(entry.integrated_time)).collect();
    let mut failures = Vec::new();
    let chained = current.iter().any(|authority| {
        let mut path = intermediates.clone();
        path.extend(authority.intermediates.iter().cloned());
        let verified = end_entity.verify_for_usage(
            webpki::ALL_VERIFICATION_ALGS,
            std::slice::from_ref(&authority.anchor),
            &path,
            when,
            webpki::KeyUsage::required(CODE_SIGNING),
            None,
            None,
        );
        verified.map_err(|e| failures.push(format!("{}: {e}", authority.uri))).is_ok()
    });
    if !chained {
        let at = jiff::Timestamp::from_second(entry.integrated_time).map(|t| t.to_string()).unwrap_or_default();
        let why = if current.is_empty() {
            "no authority of the trusted root was valid then".into()
        } else {
            failures.join("; ")
        };
        return Err(refused(format!(
            "its certificate is not a code-signing certificate of a trusted Fulcio, valid when logged at {at} ({why})"
        )));
    }

    // And its key made the signature.
    let (_, parsed) =
        X509Certificate::from_der(&certificate).map_err(|e| refused(format!("its certificate does not parse: {e}")))?;
    let key = p256::ecdsa::VerifyingKey::from_public_key_der(parsed.public_key().raw)
        .map_err(|_| refused("its certificate's key is not ECDSA P-256"))?;
    let valid = p256::ecdsa::Signature::from_der(&signature_der).is_ok_and(|s| key.verify(payload, &s).is_ok());
    if !valid {
        return Err(refused("its signature does not verify with its certificate's key"));
    }
    Ok(Signer {
        subject: subject(&parsed).ok_or_else(|| refused("its certificate names no e-mail address or URI"))?,
        issuer: issuer(&parsed),
        log_index: entry.log_index,
        integrated_time: entry.integrated_time,
    })
}

/// The DER of every PEM `CERTIFICATE` in `pem`, in order.
fn certificates(pem: &[u8]) -> Vec<CertificateDer<'static>> {
    x509_parser::pem::Pem::iter_from_buffer(pem)
        .map_while(Result::ok)
        .filter(|p| p.label == "CERTIFICATE")
        .map(|p| CertificateDer::from(p.contents))
        .collect()
}

fn first_certificate(pem: &[u8]) -> Option<Vec<u8>> {
    certificates(pem).into_iter().next().map(|c| c.to_vec())
}

/// The first e-mail address or URI of the subject alternative names.
fn subject(certificate: &X509Certificate<'_>) -> Option<String> {
    let names = certificate.subject_alternative_name().ok()??;
    names.value.general_names.iter().find_map(|name| match name {
        GeneralName::RFC822Name(s) | GeneralName::URI(s) => Some((*s).to_owned()),
        _ => None,
    })
}

fn issuer(certificate: &X509Certificate<'_>) -> Option<String> {
    let extension = |oid: &str| certificate.extensions().iter().find(|e| e.oid.to_id_string() == oid);
    if let Some(v2) = extension(ISSUER_V2) {
        // A DER UTF8String: tag 12, a length, the bytes.
        let (_, string) = x509_parser::der_parser::der::parse_der_utf8string(v2.value).ok()?;
        return string.as_str().ok().map(str::to_owned);
    }
    extension(ISSUER_V1).and_then(|v1| std::str::from_utf8(v1.value).ok()).map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A signature `cosign sign` made with the Sigstore public-good instance in October
    /// 2021 (Rekor entry 783607), as stored beside the signed image.
    const PAYLOAD: &str = r#"{"critical":{"identity":{"docker-reference":"registry-testing.svc.lan/kubewarden/disallow-service-nodeport"},"image":{"docker-manifest-digest":"sha256:5f481572d088dc4023afb35fced9530ced3d9b03bf7299c6f492163cb9f0452e"},"type":"cosign container image signature"},"optional":null}"#;
    const SIGNATURE: &str =
        "MEUCIGqWScz7s9aP2sGXNFKeqivw3B6kPRs56AITIHnvd5igAiEA1kzbaV2Y5yPE81EN92NUFOl31LLJSvwsjFQ07m2XqaA=";
    const CERTIFICATE: &str = "-----BEGIN CERTIFICATE-----
MIICdzCCAfygAwIBAgITA+PsaKjaEZqn7IY94b1e/jJnizAKBggqhkjOPQQDAzAq
MRUwEwYDVQQKEwxzaWdzdG9yZS5kZXYxETAPBgNVBAMTCHNpZ3N0b3JlMB4XDTIx
MTAyMDA3MjUxNloXDTIxMTAyMDA3NDUxNVowADBZMBMGByqGSM49AgEGCCqGSM49
AwEHA0IABINewQBS1f4AmNIENdL+U/HJotMSM7ZNnkTnYefxwV9TErpvnAZ0+DzL
yfAAVaeJtKjFvbOTb8F1yhJFU0XY+RijggEpMIIBJTAOBgNVHQ8BAf8EBAMCB4Aw
EwYDVR0lBAwwCgYIKwYBBQUHAwMwDAYDVR0TAQH/BAIwADAdBgNVHQ4EFgQUMf1R
MMsqNFBrWbx8mRNdxOkEEYswHwYDVR0jBBgwFoAUyMUdAEGaJCkyUSTrDa5K7UoG
0+wwgY0GCCsGAQUFBwEBBIGAMH4wfAYIKwYBBQUHMAKGcGh0dHA6Ly9wcml2YXRl
Y2EtY29udGVudC02MDNmZTdlNy0wMDAwLTIyMjctYmY3NS1mNGY1ZTgwZDI5NTQu
c3RvcmFnZS5nb29nbGVhcGlzLmNvbS9jYTM2YTFlOTYyNDJiOWZjYjE0Ni9jYS5j
cnQwIAYDVR0RAQH/BBYwFIESZmxhdmlvQGNhc3RlbGxpLm1lMAoGCCqGSM49BAMD
A2kAMGYCMQC3Y2ulPTsPmNS4czaKeje0BnOQHz5e6NBX0Bqx9Xca+t2kOi17sopc
/v/xH1xLuPoCMQDKND4WjHfKqXXOeUvZ9A96DqrEwGaqGMtnIuN4JzZYaULZrx9g
oXqqo/C9QnOHTto=
-----END CERTIFICATE-----
";
    const SET: &str =
        "MEUCIDBGJijj2FqU25yRWzlEWHqE64XKwUvychBs1bSM1PaKAiEAwcR2u81c42TLBk3lWJqhtB7SnM7Lh0OYEl6Bfa7ZA4s=";
    const BODY: &str = "eyJhcGlWZXJzaW9uIjoiMC4wLjEiLCJraW5kIjoicmVrb3JkIiwic3BlYyI6eyJkYXRhIjp7Imhhc2giOnsiYWxnb3JpdGhtIjoic2hhMjU2IiwidmFsdWUiOiJlNzgwMWRlOTM1NTEyZTIyYjIzN2M3YjU3ZTQyY2E0ZDIwZTIxMzRiZGYxYjk4Zjk3NmM4ZjU1ZDljZmU0MDY3In19LCJzaWduYXR1cmUiOnsiY29udGVudCI6Ik1FVUNJR3FXU2N6N3M5YVAyc0dYTkZLZXFpdnczQjZrUFJzNTZBSVRJSG52ZDVpZ0FpRUExa3piYVYyWTV5UEU4MUVOOTJOVUZPbDMxTExKU3Z3c2pGUTA3bTJYcWFBPSIsImZvcm1hdCI6Ing1MDkiLCJwdWJsaWNLZXkiOnsiY29udGVudCI6IkxTMHRMUzFDUlVkSlRpQkRSVkpVU1VaSlEwRlVSUzB0TFMwdENrMUpTVU5rZWtORFFXWjVaMEYzU1VKQlowbFVRU3RRYzJGTGFtRkZXbkZ1TjBsWk9UUmlNV1V2YWtwdWFYcEJTMEpuWjNGb2EycFBVRkZSUkVGNlFYRUtUVkpWZDBWM1dVUldVVkZMUlhkNGVtRlhaSHBrUnpsNVdsTTFhMXBZV1hoRlZFRlFRbWRPVmtKQlRWUkRTRTV3V2pOT01HSXpTbXhOUWpSWVJGUkplQXBOVkVGNVRVUkJNMDFxVlhoT2JHOVlSRlJKZUUxVVFYbE5SRUV6VGtSVmVFNVdiM2RCUkVKYVRVSk5SMEo1Y1VkVFRUUTVRV2RGUjBORGNVZFRUVFE1Q2tGM1JVaEJNRWxCUWtsT1pYZFJRbE14WmpSQmJVNUpSVTVrVEN0VkwwaEtiM1JOVTAwM1drNXVhMVJ1V1dWbWVIZFdPVlJGY25CMmJrRmFNQ3RFZWt3S2VXWkJRVlpoWlVwMFMycEdkbUpQVkdJNFJqRjVhRXBHVlRCWVdTdFNhV3BuWjBWd1RVbEpRa3BVUVU5Q1owNVdTRkU0UWtGbU9FVkNRVTFEUWpSQmR3cEZkMWxFVmxJd2JFSkJkM2REWjFsSlMzZFpRa0pSVlVoQmQwMTNSRUZaUkZaU01GUkJVVWd2UWtGSmQwRkVRV1JDWjA1V1NGRTBSVVpuVVZWTlpqRlNDazFOYzNGT1JrSnlWMko0T0cxU1RtUjRUMnRGUlZsemQwaDNXVVJXVWpCcVFrSm5kMFp2UVZWNVRWVmtRVVZIWVVwRGEzbFZVMVJ5UkdFMVN6ZFZiMGNLTUN0M2QyZFpNRWREUTNOSFFWRlZSa0ozUlVKQ1NVZEJUVWcwZDJaQldVbExkMWxDUWxGVlNFMUJTMGRqUjJnd1pFaEJOa3g1T1hkamJXd3lXVmhTYkFwWk1rVjBXVEk1ZFdSSFZuVmtRekF5VFVST2JWcFVaR3hPZVRCM1RVUkJkMHhVU1hsTmFtTjBXVzFaTTA1VE1XMU9SMWt4V2xSbmQxcEVTVFZPVkZGMUNtTXpVblpqYlVadVdsTTFibUl5T1c1aVIxWm9ZMGRzZWt4dFRuWmlVemxxV1ZSTk1sbFVSbXhQVkZsNVRrUkthVTlYV21wWmFrVXdUbWs1YWxsVE5Xb0tZMjVSZDBsQldVUldVakJTUVZGSUwwSkNXWGRHU1VWVFdtMTRhR1J0YkhaUlIwNW9Zek5TYkdKSGVIQk1iVEZzVFVGdlIwTkRjVWRUVFRRNVFrRk5SQXBCTW10QlRVZFpRMDFSUXpOWk1uVnNVRlJ6VUcxT1V6UmplbUZMWldwbE1FSnVUMUZJZWpWbE5rNUNXREJDY1hnNVdHTmhLM1F5YTA5cE1UZHpiM0JqQ2k5MkwzaElNWGhNZFZCdlEwMVJSRXRPUkRSWGFraG1TM0ZZV0U5bFZYWmFPVUU1TmtSeGNrVjNSMkZ4UjAxMGJrbDFUalJLZWxwWllWVk1Xbko0T1djS2IxaHhjVzh2UXpsUmJrOUlWSFJ2UFFvdExTMHRMVVZPUkNCRFJWSlVTVVpKUTBGVVJTMHRMUzB0Q2c9PSJ9fX19";

    fn bundle(set: &str, integrated_time: i64, log_index: i64) -> String {
        serde_json::json!({
            "SignedEntryTimestamp": set,
            "Payload": {
                "body": BODY,
                "integratedTime": integrated_time,
                "logIndex": log_index,
                "logID": "c0d23d6ad406973f9559f3ba2d1ca01f84147d8ffc5b8445c224f98b9591801d",
            }
        })
        .to_string()
    }

    fn annotations(certificate: &str, bundle: String) -> BTreeMap<String, String> {
        BTreeMap::from([
            (CERTIFICATE_ANNOTATION.to_owned(), certificate.to_owned()),
            (BUNDLE_ANNOTATION.to_owned(), bundle),
        ])
    }

    #[test]
    fn a_subject_prefix_trusts_the_uris_under_it_and_must_end_a_path_segment() {
        let signer = |subject: &str| Signer {
            subject: subject.into(),
            issuer: Some("https://token.actions.githubusercontent.com".into()),
            log_index: 1,
            integrated_time: 1,
        };
        let workflow = "https://github.com/team-a/demo/.github/workflows/release.yaml@refs/tags/";
        let tags = Identity {
            issuer: "https://token.actions.githubusercontent.com".into(),
            subject: String::new(),
            subject_prefix: Some(workflow.into()),
        };
        assert_eq!(tags.check(), Ok(()));
        assert!(signer(&format!("{workflow}v1.2.0")).is(&tags));
        assert!(!signer("https://github.com/team-a/demo/.github/workflows/release.yaml@refs/heads/main").is(&tags));
        let other_issuer = Identity { issuer: "https://gitlab.com".into(), ..tags.clone() };
        assert!(!signer(&format!("{workflow}v1.2.0")).is(&other_issuer));

        let loose = Identity { subject_prefix: Some("https://github.com/team".into()), ..tags.clone() };
        assert!(loose.check().unwrap_err().contains("must be an https:// URL ending at a `/`"));
        assert!(!signer("https://github.com/team-b/x").is(&loose), "an unchecked prefix matches nothing");
        let both = Identity { subject: "a@example.com".into(), ..tags.clone() };
        assert_eq!(both.check(), Err("exactly one of a subject and a subject prefix is required".into()));
        let neither = Identity { subject_prefix: None, ..tags.clone() };
        assert!(neither.check().is_err() && !signer("").is(&neither));
        assert_eq!(Identity { issuer: String::new(), ..tags }.check(), Err("the issuer is required".into()));
    }

    fn refusal(result: Result<Signer, KeylessError>) -> String {
        match result {
            Ok(signer) => panic!("taken: signed by {signer}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn a_public_good_keyless_signature_verifies_offline_against_the_embedded_root() {
        let root = TrustedRoot::public_good();
        let layer = annotations(CERTIFICATE, bundle(SET, 1_634_714_717, 783_607));
        let signer = verify(&root, PAYLOAD.as_bytes(), SIGNATURE, &layer).expect("verifies");
        assert_eq!(signer.subject, "flavio@castelli.me");
        // Fulcio began recording the OIDC issuer in certificates later.
        assert_eq!(signer.issuer, None);
        assert_eq!((signer.log_index, signer.integrated_time), (783_607, 1_634_714_717));
        let identity = Identity {
            issuer: "https://github.com/login/oauth".into(),
            subject: signer.subject.clone(),
            subject_prefix: None,
        };
        assert!(!signer.is(&identity));
    }

    #[test]
    fn every_part_of_a_keyless_signature_is_bound_to_the_others() {
        let root = TrustedRoot::public_good();
        let good = annotations(CERTIFICATE, bundle(SET, 1_634_714_717, 783_607));
        let other_payload = PAYLOAD.replace("5f4815", "5f4816");
        assert_eq!(
            refusal(verify(&root, other_payload.as_bytes(), SIGNATURE, &good)),
            "its Rekor entry is for another payload"
        );
        let other_signature =
            "MEUCIQD6q/COgzOyW0YH1Dk+CCYSt4uAhm3FDHUwvPI55zwnlwIgE0ZK58ZOWpZw8YVmBapJhBqCfdPekIknimuO0xH8Jh8=";
        assert_eq!(
            refusal(verify(&root, PAYLOAD.as_bytes(), other_signature, &good)),
            "its Rekor entry is for another signature"
        );
        // Rekor's promise covers the time and the index: neither can be moved.
        let moved = annotations(CERTIFICATE, bundle(SET, 1_634_714_718, 783_607));
        assert_eq!(
            refusal(verify(&root, PAYLOAD.as_bytes(), SIGNATURE, &moved)),
            "its signed entry timestamp does not verify with the Rekor log's key"
        );
        let unlogged = BTreeMap::from([(CERTIFICATE_ANNOTATION.to_owned(), CERTIFICATE.to_owned())]);
        assert!(refusal(verify(&root, PAYLOAD.as_bytes(), SIGNATURE, &unlogged)).starts_with("it has no Rekor bundle"));
    }

    #[test]
    fn a_root_without_the_signatures_authority_or_log_refuses_it() {
        let mut file: serde_json::Value = serde_json::from_slice(PUBLIC_GOOD).unwrap();
        // Only the authority of 2022 on: the certificate of 2021 chains to none valid then.
        file["certificateAuthorities"].as_array_mut().unwrap().remove(0);
        let root = TrustedRoot::from_json(file.to_string().as_bytes(), "root.json").unwrap();
        let layer = annotations(CERTIFICATE, bundle(SET, 1_634_714_717, 783_607));
        let why = refusal(verify(&root, PAYLOAD.as_bytes(), SIGNATURE, &layer));
        assert!(why.starts_with("its certificate is not a code-signing certificate of a trusted Fulcio"), "{why}");
        assert!(why.contains("no authority of the trusted root was valid then"), "{why}");

        let err = TrustedRoot::from_json(br#"{"tlogs": []}"#, "empty.json").unwrap_err();
        assert_eq!(
            err.to_string(),
            "empty.json: not a Sigstore trusted root: it names no certificate authority or no Rekor log with a P-256 key"
        );
    }
}
