//! Keyless signatures as cosign stores them beside an artifact: the signing key is an
//! ephemeral one, certified by Fulcio for an OIDC identity (an issuer and a subject), and
//! the signature was entered in Rekor while that short-lived certificate was valid.
//!
//! Everything is checked offline against a Sigstore trusted root (`trusted_root.json`,
//! the file `cosign verify --trusted-root` reads): a log of the root vouches for the
//! entry (Rekor v1's signed entry timestamp, which also says when it was logged; an
//! inclusion proof up to a checkpoint the log signed, [`super::inclusion`]), the logged
//! entry is this signature, by this certificate, over this payload, and the certificate
//! chains to one of the root's certificate authorities at every time vouched for (the
//! entry's, and those of RFC 3161 timestamps of a timestamp authority of the root,
//! [`super::timestamp`]: a Rekor v2 entry has no time of its own); and, where the root names
//! certificate transparency logs, the certificate carries a signed certificate timestamp
//! (SCT) by one of them: Fulcio logged it publicly before issuing it.

use std::collections::BTreeMap;

use base64::Engine as _;
use p256::ecdsa::signature::Verifier as _;
use p256::pkcs8::DecodePublicKey as _;
use rustls::pki_types::CertificateDer;
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};
use x509_cert::Certificate;
use x509_cert::der::asn1::{ObjectIdentifier, OctetStringRef, Utf8StringRef};
use x509_cert::der::{Decode as _, Encode as _};
use x509_cert::ext::pkix::SubjectAltName;
use x509_cert::ext::pkix::name::GeneralName;

use super::inclusion::{self, Proof};
use super::timestamp;
use super::trusted_root::{Authority, TrustedRoot};
use crate::plugin::digest;

/// The layer annotation holding the signing certificate (PEM).
pub const CERTIFICATE_ANNOTATION: &str = "dev.sigstore.cosign/certificate";
/// The layer annotation holding the certificate's chain (PEM, intermediates then root).
pub const CHAIN_ANNOTATION: &str = "dev.sigstore.cosign/chain";
/// The layer annotation holding Rekor's entry and its signed entry timestamp (JSON).
pub const BUNDLE_ANNOTATION: &str = "dev.sigstore.cosign/bundle";

/// Extended key usage id-kp-codeSigning (1.3.6.1.5.5.7.3.3), DER content octets.
const CODE_SIGNING: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x03];
/// Fulcio's OIDC issuer extension: a DER `UTF8String`.
const ISSUER_V2: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.6.1.4.1.57264.1.8");
/// Fulcio's deprecated issuer extension: the raw string.
const ISSUER_V1: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.6.1.4.1.57264.1.1");
/// The embedded SCT list extension of RFC 6962.
const SCT_LIST: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.6.1.4.1.11129.2.4.2");

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
    /// When it was signed (seconds since the epoch), as Rekor's signed entry timestamp
    /// or, for a Rekor v2 entry, a timestamp authority says.
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

/// Why a keyless signature is not trusted: which check failed.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Refused(String);

fn refused(reason: impl Into<String>) -> Refused {
    Refused(reason.into())
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
pub(super) struct Entry {
    /// The logged body, base64 (a `hashedrekord`, `rekord` or `dsse` entry's JSON).
    pub body: String,
    #[serde(rename = "integratedTime")]
    pub integrated_time: i64,
    /// The log's key id, hex.
    #[serde(rename = "logID")]
    pub log_id: String,
    #[serde(rename = "logIndex")]
    pub log_index: i64,
}

/// A keyless signature as either layout stores it: the classic signature layer, or a
/// Sigstore bundle ([`super::bundle`]).
pub(super) struct Logged<'a> {
    /// What the key signed: the payload, or a DSSE envelope's pre-authentication encoding.
    pub message: &'a [u8],
    /// The payload whose hash Rekor recorded: `message` itself, or the envelope's payload.
    pub payload: &'a [u8],
    /// The DER signature.
    pub signature: &'a [u8],
    /// The signing certificate, DER.
    pub certificate: &'a [u8],
    /// Certificates that may complete the path to a Fulcio of the root (untrusted).
    pub chain: &'a [CertificateDer<'static>],
    pub entry: &'a Entry,
    /// Rekor's signed entry timestamp over `entry`, base64 DER (Rekor v1).
    pub set: Option<&'a str>,
    /// The entry's inclusion proof and checkpoint (Rekor v2 gives only these).
    pub proof: Option<&'a Proof>,
    /// RFC 3161 timestamps of the signature, DER.
    pub timestamps: &'a [Vec<u8>],
}

/// What a logged body binds, for every kind of entry a signature is logged as.
struct Bound {
    /// The SHA-256 the entry records, hex.
    hash: String,
    /// Whether that is of the signed message itself (Rekor v2's `hashedrekord` over a
    /// DSSE envelope hashes its pre-authentication encoding), not of the payload.
    of_message: bool,
    /// Each signature logged (base64 DER) and its verifier's certificate (DER).
    signatures: Vec<(String, Option<Vec<u8>>)>,
}

impl Bound {
    fn read(body: &serde_json::Value) -> Result<Self, Refused> {
        let b64 = base64::engine::general_purpose::STANDARD;
        let text = |v: &serde_json::Value| v.as_str().map(str::to_owned);
        // Rekor v1 logs the verifier as base64 PEM; v2 as base64 DER.
        let pem = |v: &serde_json::Value| text(v).and_then(|p| b64.decode(p).ok()).and_then(|p| first_certificate(&p));
        let der = |v: &serde_json::Value| text(v).and_then(|d| b64.decode(d).ok());
        let kind = body["kind"].as_str().unwrap_or_default();
        let version = body["apiVersion"].as_str().unwrap_or_default();
        let spec = &body["spec"];
        let (hash, of_message, signatures) = match (kind, version) {
            ("hashedrekord", "0.0.2") => {
                let spec = &spec["hashedRekordV002"];
                if spec["data"]["algorithm"] != "SHA2_256" {
                    return Err(refused("its Rekor entry records no SHA-256 of what was signed"));
                }
                let hash = der(&spec["data"]["digest"]).map(|d| crate::plugin::hex(&d)).unwrap_or_default();
                let signature = &spec["signature"];
                let logged = text(&signature["content"])
                    .map(|s| (s, der(&signature["verifier"]["x509Certificate"]["rawBytes"])));
                return Ok(Self { hash, of_message: true, signatures: logged.into_iter().collect() });
            }
            ("hashedrekord" | "rekord", "0.0.1") => (
                &spec["data"]["hash"],
                false,
                text(&spec["signature"]["content"])
                    .map(|s| (s, pem(&spec["signature"]["publicKey"]["content"])))
                    .into_iter()
                    .collect(),
            ),
            ("dsse", "0.0.1") => (
                &spec["payloadHash"],
                false,
                spec["signatures"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|s| text(&s["signature"]).map(|sig| (sig, pem(&s["verifier"]))))
                    .collect(),
            ),
            ("", _) => return Err(refused("its Rekor entry names no kind")),
            (other, version) => {
                return Err(refused(format!("its Rekor entry is a {other} {version}, not a signature")));
            }
        };
        if hash["algorithm"] != "sha256" {
            return Err(refused("its Rekor entry records no SHA-256 of the payload"));
        }
        Ok(Self { hash: text(&hash["value"]).unwrap_or_default(), of_message, signatures })
    }
}

/// Checks one keyless signature layer: `signature` (base64 DER) over `payload`, with the
/// certificate, chain and bundle `annotations` cosign stores beside it.
///
/// # Errors
///
/// [`Refused`], saying which check failed.
pub fn verify(
    root: &TrustedRoot,
    payload: &[u8],
    signature: &str,
    annotations: &BTreeMap<String, String>,
) -> Result<Signer, Refused> {
    let certificate_pem = annotations.get(CERTIFICATE_ANNOTATION).ok_or_else(|| refused("it has no certificate"))?;
    let certificate = first_certificate(certificate_pem.as_bytes())
        .ok_or_else(|| refused("its certificate annotation holds no PEM certificate"))?;
    let bundle = annotations
        .get(BUNDLE_ANNOTATION)
        .ok_or_else(|| refused("it has no Rekor bundle (a keyless signature must be in the transparency log)"))?;
    let bundle: Bundle =
        serde_json::from_str(bundle).map_err(|e| refused(format!("its Rekor bundle does not parse: {e}")))?;
    let signature = base64::engine::general_purpose::STANDARD
        .decode(signature.trim())
        .map_err(|_| refused("its signature is not base64"))?;
    let chain = annotations.get(CHAIN_ANNOTATION).map(|chain| certificates(chain.as_bytes())).unwrap_or_default();
    check(
        root,
        &Logged {
            message: payload,
            payload,
            signature: &signature,
            certificate: &certificate,
            chain: &chain,
            entry: &bundle.payload,
            set: Some(&bundle.signed_entry_timestamp),
            proof: None,
            timestamps: &[],
        },
    )
}

/// Checks a keyless signature however it was stored: Rekor vouches for the entry, the
/// entry is this signature by this certificate over this payload, the certificate is a
/// Fulcio's (valid when logged, and in CT), and its key made the signature.
///
/// # Errors
///
/// [`Refused`], saying which check failed.
pub(super) fn check(root: &TrustedRoot, logged: &Logged<'_>) -> Result<Signer, Refused> {
    let b64 = base64::engine::general_purpose::STANDARD;
    let entry = logged.entry;
    let parsed = Certificate::from_der(logged.certificate)
        .map_err(|e| refused(format!("its certificate does not parse: {e}")))?;

    // Rekor vouches for the entry: by a signed entry timestamp (v1), which gives its
    // time too, or by an inclusion proof up to a checkpoint it signed.
    let log = root.logs.iter().find(|log| log.hex_id() == entry.log_id).ok_or_else(|| {
        refused(format!("its Rekor entry is from log {}, not a log of the trusted root", entry.log_id))
    })?;
    let body_json = b64.decode(&entry.body).map_err(|_| refused("its Rekor entry's body is not base64"))?;
    let mut times = Vec::new();
    if let Some(set) = logged.set {
        let canonical = serde_json::to_vec(entry).map_err(|e| refused(e.to_string()))?;
        let set = b64.decode(set.trim()).map_err(|_| refused("its signed entry timestamp is not base64"))?;
        if !log.verifies(&canonical, &set) {
            return Err(refused("its signed entry timestamp does not verify with the Rekor log's key"));
        }
        times.push(entry.integrated_time);
    }
    let signed_root = match logged.proof {
        Some(proof) => inclusion::verify(log, &body_json, proof).map_err(refused)?,
        None => false,
    };
    if logged.set.is_none() && !signed_root {
        return Err(refused(
            "its Rekor entry has neither a signed entry timestamp nor an inclusion proof to a checkpoint",
        ));
    }
    // Without a promise, only the proof says where the entry is.
    if logged.set.is_none() && logged.proof.is_some_and(|p| i64::try_from(p.index).ok() != Some(entry.log_index)) {
        return Err(refused("its inclusion proof is for another index than its entry's"));
    }
    for token in logged.timestamps {
        times.push(timestamp::verify(root, token, logged.signature).map_err(refused)?);
    }
    if times.is_empty() {
        return Err(refused("nothing says when it was signed: no signed entry timestamp and no RFC 3161 timestamp"));
    }
    if times.iter().any(|&time| !log.valid.contains(time)) {
        return Err(refused("it was logged outside the Rekor key's validity"));
    }

    // The entry is this signature, by this certificate, over this payload.
    let body: serde_json::Value =
        serde_json::from_slice(&body_json).map_err(|_| refused("its Rekor entry's body does not decode as JSON"))?;
    let bound = Bound::read(&body)?;
    let hashed = if bound.of_message { logged.message } else { logged.payload };
    if bound.hash != digest(hashed) {
        return Err(refused("its Rekor entry is for another payload"));
    }
    let ours = |(signature, _): &&(String, Option<Vec<u8>>)| {
        b64.decode(signature.trim()).ok().as_deref() == Some(logged.signature)
    };
    let Some((_, verifier)) = bound.signatures.iter().find(ours) else {
        return Err(refused("its Rekor entry is for another signature"));
    };
    if verifier.as_deref() != Some(logged.certificate) {
        return Err(refused("its Rekor entry is for another certificate"));
    }

    // The certificate was Fulcio's, valid whenever the signature is said to have existed,
    // and logged in CT.
    let mut issuer_key = Vec::new();
    for &time in &times {
        issuer_key = fulcio_issuer(root, logged.certificate, logged.chain, time)?;
    }
    check_sct(root, &parsed, &issuer_key)?;

    // And its key made the signature.
    let key = parsed
        .tbs_certificate
        .subject_public_key_info
        .to_der()
        .ok()
        .and_then(|spki| p256::ecdsa::VerifyingKey::from_public_key_der(&spki).ok())
        .ok_or_else(|| refused("its certificate's key is not ECDSA P-256"))?;
    let valid =
        p256::ecdsa::Signature::from_der(logged.signature).is_ok_and(|s| key.verify(logged.message, &s).is_ok());
    if !valid {
        return Err(refused("its signature does not verify with its certificate's key"));
    }
    Ok(Signer {
        subject: subject(&parsed).ok_or_else(|| refused("its certificate names no e-mail address or URI"))?,
        issuer: issuer(&parsed),
        log_index: entry.log_index,
        integrated_time: times[0],
    })
}

/// The key of the Fulcio that issued `certificate` (DER), verified as a code-signing
/// certificate at `time` through `chain` (untrusted) or the root's intermediates to an
/// authority of the root valid then.
fn fulcio_issuer(
    root: &TrustedRoot,
    certificate: &[u8],
    chain: &[CertificateDer<'static>],
    time: i64,
) -> Result<Vec<u8>, Refused> {
    let end_entity = CertificateDer::from(certificate);
    let end_entity = webpki::EndEntityCert::try_from(&end_entity)
        .map_err(|e| refused(format!("its certificate does not parse: {e}")))?;
    let current: Vec<&Authority> = root.authorities.iter().filter(|a| a.valid.contains(time)).collect();
    let mut failures = Vec::new();
    for authority in &current {
        match authority.certifies(&end_entity, chain, time, CODE_SIGNING, issuer_spki) {
            Ok(issuer_key) => return Ok(issuer_key),
            Err(e) => failures.push(e),
        }
    }
    let at = jiff::Timestamp::from_second(time).map(|t| t.to_string()).unwrap_or_default();
    let why =
        if current.is_empty() { "no authority of the trusted root was valid then".into() } else { failures.join("; ") };
    Err(refused(format!(
        "its certificate is not a code-signing certificate of a trusted Fulcio, valid when logged at {at} ({why})"
    )))
}

/// The DER of every PEM `CERTIFICATE` in `pem`, in order.
fn certificates(pem: &[u8]) -> Vec<CertificateDer<'static>> {
    Certificate::load_pem_chain(pem)
        .unwrap_or_default()
        .iter()
        .filter_map(|c| c.to_der().ok())
        .map(CertificateDer::from)
        .collect()
}

fn first_certificate(pem: &[u8]) -> Option<Vec<u8>> {
    certificates(pem).into_iter().next().map(|c| c.to_vec())
}

/// The `SubjectPublicKeyInfo` DER of the certificate that issued a verified path's end entity.
fn issuer_spki(verified: &webpki::VerifiedPath<'_>) -> Vec<u8> {
    if let Some(issuer) = verified.intermediate_certificates().next() {
        return issuer.subject_public_key_info().as_ref().to_vec();
    }
    // The anchor keeps the SEQUENCE's contents: wrap them again.
    let contents = verified.anchor().subject_public_key_info.as_ref();
    x509_cert::der::asn1::AnyRef::new(x509_cert::der::Tag::Sequence, contents)
        .and_then(|any| any.to_der())
        .unwrap_or_default()
}

/// The first e-mail address or URI of the subject alternative names.
fn subject(certificate: &Certificate) -> Option<String> {
    let (_, names) = certificate.tbs_certificate.get::<SubjectAltName>().ok()??;
    names.0.iter().find_map(|name| match name {
        GeneralName::Rfc822Name(s) | GeneralName::UniformResourceIdentifier(s) => Some(s.as_str().to_owned()),
        _ => None,
    })
}

fn extension(certificate: &Certificate, oid: ObjectIdentifier) -> Option<&[u8]> {
    let extensions = certificate.tbs_certificate.extensions.as_ref()?;
    extensions.iter().find(|e| e.extn_id == oid).map(|e| e.extn_value.as_bytes())
}

fn issuer(certificate: &Certificate) -> Option<String> {
    if let Some(v2) = extension(certificate, ISSUER_V2) {
        return Utf8StringRef::from_der(v2).ok().map(|s| s.as_str().to_owned());
    }
    extension(certificate, ISSUER_V1).and_then(|v1| std::str::from_utf8(v1).ok()).map(str::to_owned)
}

/// Checks the certificate's embedded SCTs (RFC 6962 3.2, a precertificate's entry): one
/// must be a CT log's of the root, over the certificate without its SCT list, issued by
/// the key `issuer_spki`. A root that names no CT log checks none.
fn check_sct(root: &TrustedRoot, certificate: &Certificate, issuer_spki: &[u8]) -> Result<(), Refused> {
    if root.ct_logs.is_empty() {
        return Ok(());
    }
    let list = extension(certificate, SCT_LIST)
        .ok_or_else(|| refused("its certificate has no SCT: Fulcio did not log it in a CT log"))?;
    let list = OctetStringRef::from_der(list).map_err(|e| refused(format!("its certificate's SCT list: {e}")))?;
    let scts = sct_list(list.as_bytes()).ok_or_else(|| refused("its certificate's SCT list does not parse"))?;
    let mut tbs = certificate.tbs_certificate.clone();
    if let Some(extensions) = tbs.extensions.as_mut() {
        extensions.retain(|e| e.extn_id != SCT_LIST);
    }
    let tbs = tbs.to_der().map_err(|e| refused(format!("its certificate does not encode: {e}")))?;
    let issuer_key_hash = Sha256::digest(issuer_spki);
    for sct in &scts {
        let Some(log) = root.ct_logs.iter().find(|log| log.id == sct.log_id) else {
            continue;
        };
        let mut signed = vec![0, 0]; // v1, certificate_timestamp
        signed.extend_from_slice(&sct.timestamp.to_be_bytes());
        signed.extend_from_slice(&[0, 1]); // precert_entry
        signed.extend_from_slice(&issuer_key_hash);
        signed.extend_from_slice(&u32::try_from(tbs.len()).unwrap_or(u32::MAX).to_be_bytes()[1..]);
        signed.extend_from_slice(&tbs);
        signed.extend_from_slice(&u16::try_from(sct.extensions.len()).unwrap_or(u16::MAX).to_be_bytes());
        signed.extend_from_slice(sct.extensions);
        let verifies = sct.ecdsa_sha256 && log.verifies(&signed, sct.signature);
        let when = i64::try_from(sct.timestamp / 1000).unwrap_or(i64::MAX);
        if verifies && log.valid.contains(when) {
            return Ok(());
        }
    }
    Err(refused(format!("none of its certificate's {} SCT(s) verifies with a CT log of the trusted root", scts.len())))
}

/// One signed certificate timestamp, as RFC 6962 encodes it.
struct Sct<'a> {
    log_id: [u8; 32],
    /// Milliseconds since the epoch.
    timestamp: u64,
    extensions: &'a [u8],
    /// Whether it is signed with ECDSA over SHA-256, what Sigstore's CT logs use.
    ecdsa_sha256: bool,
    signature: &'a [u8],
}

/// The SCTs of a `SignedCertificateTimestampList`.
fn sct_list(bytes: &[u8]) -> Option<Vec<Sct<'_>>> {
    fn take<'a>(bytes: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
        let (taken, rest) = bytes.split_at_checked(n)?;
        *bytes = rest;
        Some(taken)
    }
    fn vector<'a>(bytes: &mut &'a [u8]) -> Option<&'a [u8]> {
        let length = take(bytes, 2)?;
        take(bytes, usize::from(u16::from_be_bytes([length[0], length[1]])))
    }
    let mut list = bytes;
    let mut items = vector(&mut list)?;
    let mut scts = Vec::new();
    while !items.is_empty() {
        let mut sct = vector(&mut items)?;
        if take(&mut sct, 1)? != [0] {
            continue; // Only v1 exists.
        }
        let log_id = take(&mut sct, 32)?.try_into().ok()?;
        let timestamp = u64::from_be_bytes(take(&mut sct, 8)?.try_into().ok()?);
        let extensions = vector(&mut sct)?;
        let algorithms = take(&mut sct, 2)?;
        let signature = vector(&mut sct)?;
        scts.push(Sct { log_id, timestamp, extensions, ecdsa_sha256: algorithms == [4, 3], signature });
    }
    Some(scts)
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

    fn refusal(result: Result<Signer, Refused>) -> String {
        match result {
            Ok(signer) => panic!("taken: signed by {signer}"),
            Err(e) => e.to_string(),
        }
    }

    /// The public-good root without its CT logs: in 2021 Fulcio did not embed SCTs.
    fn root_without_ct_logs() -> TrustedRoot {
        let mut file: serde_json::Value = serde_json::from_slice(super::super::trusted_root::PUBLIC_GOOD).unwrap();
        file["ctlogs"] = serde_json::json!([]);
        TrustedRoot::from_json(file.to_string().as_bytes(), "root.json").unwrap()
    }

    #[test]
    fn a_public_good_keyless_signature_verifies_offline_against_the_public_good_root() {
        let layer = annotations(CERTIFICATE, bundle(SET, 1_634_714_717, 783_607));
        // Its certificate has no SCT: the embedded root, which names CT logs, wants one.
        assert_eq!(
            refusal(verify(&TrustedRoot::public_good(), PAYLOAD.as_bytes(), SIGNATURE, &layer)),
            "its certificate has no SCT: Fulcio did not log it in a CT log"
        );
        let root = root_without_ct_logs();
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
        let root = root_without_ct_logs();
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
        let mut file: serde_json::Value = serde_json::from_slice(super::super::trusted_root::PUBLIC_GOOD).unwrap();
        // Only the authority of 2022 on: the certificate of 2021 chains to none valid then.
        file["certificateAuthorities"].as_array_mut().unwrap().remove(0);
        file["ctlogs"] = serde_json::json!([]);
        let root = TrustedRoot::from_json(file.to_string().as_bytes(), "root.json").unwrap();
        let layer = annotations(CERTIFICATE, bundle(SET, 1_634_714_717, 783_607));
        let why = refusal(verify(&root, PAYLOAD.as_bytes(), SIGNATURE, &layer));
        assert!(why.starts_with("its certificate is not a code-signing certificate of a trusted Fulcio"), "{why}");
        assert!(why.contains("no authority of the trusted root was valid then"), "{why}");
    }

    /// A certificate the public-good Fulcio issued to a GitHub Actions release workflow in
    /// April 2026, with the SCT of the CT log it was logged in embedded.
    const WORKFLOW_CERTIFICATE: &str = "-----BEGIN CERTIFICATE-----
MIIHDDCCBpGgAwIBAgIUXk+L38bqM491YGD6gbkuf/P5FPYwCgYIKoZIzj0EAwMw
NzEVMBMGA1UEChMMc2lnc3RvcmUuZGV2MR4wHAYDVQQDExVzaWdzdG9yZS1pbnRl
cm1lZGlhdGUwHhcNMjYwNDA5MDcyMzI5WhcNMjYwNDA5MDczMzI5WjAAMFkwEwYH
KoZIzj0CAQYIKoZIzj0DAQcDQgAEFWTdikFfJZHY5aj0fTVgKdfGf9lRq35xTArY
Qa6NL2kdaeCAr5e1f0G2czF1h7fQpdjMlF5wEZytHpN8YS5E26OCBbAwggWsMA4G
A1UdDwEB/wQEAwIHgDATBgNVHSUEDDAKBggrBgEFBQcDAzAdBgNVHQ4EFgQUAmq4
MsxvxsIClZHR2N8QT2tJYKgwHwYDVR0jBBgwFoAU39Ppz1YkEZb5qNjpKFWixi4Y
ZD8wcQYDVR0RAQH/BGcwZYZjaHR0cHM6Ly9naXRodWIuY29tL2t1YmV3YXJkZW4v
a3ViZXdhcmRlbi1jb250cm9sbGVyLy5naXRodWIvd29ya2Zsb3dzL3JlbGVhc2Uu
eW1sQHJlZnMvdGFncy92MS4zNC4wMDkGCisGAQQBg78wAQEEK2h0dHBzOi8vdG9r
ZW4uYWN0aW9ucy5naXRodWJ1c2VyY29udGVudC5jb20wEgYKKwYBBAGDvzABAgQE
cHVzaDA2BgorBgEEAYO/MAEDBCgyYTZiODc5YjdhNWVmNTlkN2ZiMzQ4ZDBiNWQx
NDMxNDUzOGFjMGE2MBUGCisGAQQBg78wAQQEB1JlbGVhc2UwLgYKKwYBBAGDvzAB
BQQga3ViZXdhcmRlbi9rdWJld2FyZGVuLWNvbnRyb2xsZXIwHwYKKwYBBAGDvzAB
BgQRcmVmcy90YWdzL3YxLjM0LjAwOwYKKwYBBAGDvzABCAQtDCtodHRwczovL3Rv
a2VuLmFjdGlvbnMuZ2l0aHVidXNlcmNvbnRlbnQuY29tMHMGCisGAQQBg78wAQkE
ZQxjaHR0cHM6Ly9naXRodWIuY29tL2t1YmV3YXJkZW4va3ViZXdhcmRlbi1jb250
cm9sbGVyLy5naXRodWIvd29ya2Zsb3dzL3JlbGVhc2UueW1sQHJlZnMvdGFncy92
MS4zNC4wMDgGCisGAQQBg78wAQoEKgwoMmE2Yjg3OWI3YTVlZjU5ZDdmYjM0OGQw
YjVkMTQzMTQ1MzhhYzBhNjAdBgorBgEEAYO/MAELBA8MDWdpdGh1Yi1ob3N0ZWQw
QwYKKwYBBAGDvzABDAQ1DDNodHRwczovL2dpdGh1Yi5jb20va3ViZXdhcmRlbi9r
dWJld2FyZGVuLWNvbnRyb2xsZXIwOAYKKwYBBAGDvzABDQQqDCgyYTZiODc5Yjdh
NWVmNTlkN2ZiMzQ4ZDBiNWQxNDMxNDUzOGFjMGE2MCEGCisGAQQBg78wAQ4EEwwR
cmVmcy90YWdzL3YxLjM0LjAwGQYKKwYBBAGDvzABDwQLDAkzMTg0OTA5NzEwLQYK
KwYBBAGDvzABEAQfDB1odHRwczovL2dpdGh1Yi5jb20va3ViZXdhcmRlbjAYBgor
BgEEAYO/MAERBAoMCDgwOTE1NDk3MHMGCisGAQQBg78wARIEZQxjaHR0cHM6Ly9n
aXRodWIuY29tL2t1YmV3YXJkZW4va3ViZXdhcmRlbi1jb250cm9sbGVyLy5naXRo
dWIvd29ya2Zsb3dzL3JlbGVhc2UueW1sQHJlZnMvdGFncy92MS4zNC4wMDgGCisG
AQQBg78wARMEKgwoMmE2Yjg3OWI3YTVlZjU5ZDdmYjM0OGQwYjVkMTQzMTQ1Mzhh
YzBhNjAUBgorBgEEAYO/MAEUBAYMBHB1c2gwZwYKKwYBBAGDvzABFQRZDFdodHRw
czovL2dpdGh1Yi5jb20va3ViZXdhcmRlbi9rdWJld2FyZGVuLWNvbnRyb2xsZXIv
YWN0aW9ucy9ydW5zLzI0MTc3MDgxOTY4L2F0dGVtcHRzLzEwFgYKKwYBBAGDvzAB
FgQIDAZwdWJsaWMwgYsGCisGAQQB1nkCBAIEfQR7AHkAdwDdPTBqxscRMmMZHhyZ
ZzcCokpeuN48rf+HinKALynujgAAAZ1xH+fPAAAEAwBIMEYCIQCgL+a1+jztViYC
zO3dI6MZ2nW4PJxm+xAKGTnZDmxUVwIhAI0NkBjBdyoU9ZUjR3m5IP2CIQynB/yH
fD9HUvt5fJM/MAoGCCqGSM49BAMDA2kAMGYCMQCtTKZTXHbaR8r7r89jF/dFU+7M
FTIvUxPo9LxFmEtCz+23BMCpcJyEm/KAXewYcgACMQDOO2m0YzK7859kDYqT+oOy
/WgSnpb5dlB79Y71ha7BuMOA3wJGbRXKRtepkGKYx5s=
-----END CERTIFICATE-----
";

    #[test]
    fn a_public_good_certificates_sct_verifies_with_the_ct_log_of_the_embedded_root() {
        let root = TrustedRoot::public_good();
        let der = first_certificate(WORKFLOW_CERTIFICATE.as_bytes()).unwrap();
        let certificate = Certificate::from_der(&der).unwrap();
        let issued = "2026-04-09T07:25:00Z".parse::<jiff::Timestamp>().unwrap().as_second();
        let issuer_key = fulcio_issuer(&root, &der, &[], issued).expect("chains to the public-good Fulcio");
        check_sct(&root, &certificate, &issuer_key).expect("its SCT verifies");
        assert_eq!(
            subject(&certificate).as_deref(),
            Some("https://github.com/kubewarden/kubewarden-controller/.github/workflows/release.yml@refs/tags/v1.34.0")
        );
        assert_eq!(issuer(&certificate).as_deref(), Some("https://token.actions.githubusercontent.com"));

        // The SCT signs the issuer's key and the certificate: another issuer's key fails.
        let why = check_sct(&root, &certificate, b"another issuer").unwrap_err().to_string();
        assert_eq!(why, "none of its certificate's 1 SCT(s) verifies with a CT log of the trusted root");
        // Ten minutes later the certificate had expired.
        let why = fulcio_issuer(&root, &der, &[], issued + 600).unwrap_err().to_string();
        assert!(why.contains("CertExpired"), "{why}");
    }
}
