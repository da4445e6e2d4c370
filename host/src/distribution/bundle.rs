//! Signatures as cosign 3 stores them by default: a Sigstore bundle (v0.1 to v0.3) in an
//! OCI 1.1 referrer of the signed manifest (sigstore/cosign `specs/BUNDLE_SPEC.md`). The
//! bundle holds a DSSE envelope of an in-toto statement whose subject is the manifest's
//! digest and whose predicate type is cosign's signature, the signing certificate (or a
//! hint of the key), and, for a keyless signature, its Rekor entry.
//!
//! This module reads a bundle and says what was signed and by what; [`super::signature`]
//! decides whether that signer is trusted. Read: DSSE envelopes (what `cosign sign`
//! writes), Rekor v1 entries (a signed entry timestamp, and an inclusion proof) and v2
//! entries (an inclusion proof to a signed checkpoint, and RFC 3161 timestamps). A message
//! signature (`cosign sign-blob`) names no manifest: it is read only with the artifact it
//! signs, as the conformance tests give it.

use std::collections::BTreeMap;

use base64::Engine as _;
use rustls::pki_types::CertificateDer;
use serde::{Deserialize, Deserializer};

use super::inclusion::Proof;
use super::keyless::{Entry, Logged};
use crate::plugin::hex;

/// The artifact type of a referrer holding a bundle, as cosign writes it.
pub const ARTIFACT_TYPE: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";
/// The predicate type of the statement `cosign sign` signs.
pub const SIGN_PREDICATE: &str = "https://sigstore.dev/cosign/sign/v1";
const IN_TOTO_PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";
const STATEMENT_TYPES: [&str; 2] = ["https://in-toto.io/Statement/v1", "https://in-toto.io/Statement/v0.1"];

/// Whether a layer's media type is a Sigstore bundle's, of a version this reads (0.1 to
/// 0.3; a later one may mean what this cannot check).
pub fn is_bundle(media_type: &str) -> bool {
    media_type == ARTIFACT_TYPE
        || media_type
            .strip_prefix("application/vnd.dev.sigstore.bundle+json;version=")
            .is_some_and(|version| ["0.1", "0.2", "0.3"].contains(&version))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Bundle {
    media_type: String,
    verification_material: VerificationMaterial,
    dsse_envelope: Option<Envelope>,
    message_signature: Option<MessageSignature>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MessageSignature {
    message_digest: Option<MessageDigest>,
    signature: String,
}

#[derive(Deserialize)]
struct MessageDigest {
    algorithm: String,
    digest: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct VerificationMaterial {
    public_key: Option<serde_json::Value>,
    /// v0.3.
    certificate: Option<Raw>,
    /// v0.1 and v0.2.
    x509_certificate_chain: Option<Chain>,
    #[serde(default)]
    tlog_entries: Vec<TlogEntry>,
    timestamp_verification_data: Option<TimestampData>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Raw {
    raw_bytes: String,
}

#[derive(Deserialize)]
struct Chain {
    certificates: Vec<Raw>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TlogEntry {
    #[serde(deserialize_with = "int64")]
    log_index: i64,
    log_id: LogId,
    /// Absent (zero) in a Rekor v2 entry.
    #[serde(default, deserialize_with = "int64")]
    integrated_time: i64,
    inclusion_promise: Option<Promise>,
    inclusion_proof: Option<InclusionProof>,
    canonicalized_body: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct InclusionProof {
    #[serde(deserialize_with = "int64")]
    log_index: i64,
    root_hash: String,
    #[serde(deserialize_with = "int64")]
    tree_size: i64,
    #[serde(default)]
    hashes: Vec<String>,
    /// Absent in some bundles of version 0.1, whose entries a signed timestamp vouches for.
    checkpoint: Option<Checkpoint>,
}

#[derive(Deserialize)]
struct Checkpoint {
    envelope: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TimestampData {
    #[serde(default)]
    rfc3161_timestamps: Vec<SignedTimestamp>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SignedTimestamp {
    signed_timestamp: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LogId {
    key_id: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Promise {
    signed_entry_timestamp: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Envelope {
    payload: String,
    payload_type: String,
    signatures: Vec<EnvelopeSignature>,
}

#[derive(Deserialize)]
struct EnvelopeSignature {
    sig: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Statement {
    #[serde(rename = "_type")]
    kind: String,
    subject: Vec<Subject>,
    predicate_type: String,
}

#[derive(Deserialize)]
struct Subject {
    #[serde(default)]
    digest: BTreeMap<String, String>,
    #[serde(default)]
    annotations: Option<serde_json::Map<String, serde_json::Value>>,
}

/// protobuf's JSON writes an int64 as a string; accept a number too.
fn int64<'de, D: Deserializer<'de>>(deserializer: D) -> Result<i64, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Int {
        Number(i64),
        Text(String),
    }
    match Int::deserialize(deserializer)? {
        Int::Number(n) => Ok(n),
        Int::Text(s) => s.parse().map_err(serde::de::Error::custom),
    }
}

/// How a bundle's signature is to be checked.
pub enum Material {
    /// With a key the verifier holds (the bundle carries at most a hint of it).
    Key,
    /// With the Fulcio certificate it carries, through its Rekor entry and timestamps.
    Certificate(Box<Keyless>),
}

/// What a keyless signature is checked with.
pub struct Keyless {
    certificate: Vec<u8>,
    chain: Vec<CertificateDer<'static>>,
    entry: Entry,
    set: Option<String>,
    proof: Option<Proof>,
    timestamps: Vec<Vec<u8>>,
}

/// A bundle opened: what was signed, the signature, and the signed statement's claims.
pub struct Opened {
    /// What the key signed: the DSSE envelope's pre-authentication encoding, or a message
    /// signature's artifact.
    pub message: Vec<u8>,
    /// What Rekor v1 hashed: the envelope's payload (the statement), or the artifact.
    payload: Vec<u8>,
    /// The signature, base64 DER, as the envelope holds it.
    pub signature: String,
    signature_der: Vec<u8>,
    pub material: Material,
    /// The statement's subjects with a SHA-256: `sha256:HEX`, and the subject's
    /// annotations (what `cosign sign -a` adds).
    pub subjects: Vec<(String, BTreeMap<String, serde_json::Value>)>,
}

impl Opened {
    /// The keyless signature to check; `None` for a keyed one.
    pub fn logged(&self) -> Option<Logged<'_>> {
        let Material::Certificate(keyless) = &self.material else {
            return None;
        };
        Some(Logged {
            message: &self.message,
            payload: &self.payload,
            signature: &self.signature_der,
            certificate: &keyless.certificate,
            chain: &keyless.chain,
            entry: &keyless.entry,
            set: keyless.set.as_deref(),
            proof: keyless.proof.as_ref(),
            timestamps: &keyless.timestamps,
        })
    }
}

/// DSSE's pre-authentication encoding: `DSSEv1 LEN(type) type LEN(body) body`.
fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = format!("DSSEv1 {} {payload_type} {} ", payload_type.len(), payload.len()).into_bytes();
    out.extend_from_slice(payload);
    out
}

/// Reads a bundle as a signature of a manifest; `None` when it is an attestation of
/// something else (`cosign attest` stores its bundles as the same kind of referrer).
///
/// # Errors
///
/// Saying why the bundle cannot be a signature: not a bundle, a blob's signature, or a
/// keyless signature without a Rekor v1 entry.
pub fn open(bytes: &[u8]) -> Result<Option<Opened>, String> {
    read(bytes, Some(SIGN_PREDICATE), None)
}

/// Reads a bundle of an in-toto statement of `predicate_type` (of any, with `None`), or,
/// given the `artifact` it signs, a message signature (`cosign sign-blob`'s) of it.
pub(super) fn read(
    bytes: &[u8],
    predicate_type: Option<&str>,
    artifact: Option<&[u8]>,
) -> Result<Option<Opened>, String> {
    let b64 = base64::engine::general_purpose::STANDARD;
    let bundle: Bundle = serde_json::from_slice(bytes).map_err(|e| format!("it is not a Sigstore bundle: {e}"))?;
    if !is_bundle(&bundle.media_type) {
        return Err(format!("its media type is {}, not a Sigstore bundle's this reads", bundle.media_type));
    }
    let Some(envelope) = bundle.dsse_envelope else {
        return match (bundle.message_signature, artifact) {
            (Some(signed), Some(artifact)) => message_signature(signed, artifact, bundle.verification_material),
            (Some(_), None) => Err("it holds a message signature (cosign sign-blob), which names no manifest".into()),
            (None, _) => Err("it holds no DSSE envelope".into()),
        };
    };
    if envelope.payload_type != IN_TOTO_PAYLOAD_TYPE {
        return Err(format!("its envelope holds {}, not an in-toto statement", envelope.payload_type));
    }
    let [signature] = &envelope.signatures[..] else {
        return Err(format!("its envelope has {} signatures, not one", envelope.signatures.len()));
    };
    let payload = b64.decode(&envelope.payload).map_err(|_| "its envelope's payload is not base64".to_owned())?;
    let statement: Statement =
        serde_json::from_slice(&payload).map_err(|e| format!("its statement does not parse: {e}"))?;
    if !STATEMENT_TYPES.contains(&statement.kind.as_str()) {
        return Err(format!("its statement is a {}, not an in-toto statement", statement.kind));
    }
    if predicate_type.is_some_and(|wanted| wanted != statement.predicate_type) {
        return Ok(None);
    }
    let signature_der =
        b64.decode(signature.sig.trim()).map_err(|_| "its envelope's signature is not base64".to_owned())?;
    let subjects = statement.subject.into_iter().filter_map(|mut s| {
        let digest = format!("sha256:{}", s.digest.remove("sha256")?);
        Some((digest, s.annotations.unwrap_or_default().into_iter().collect()))
    });
    Ok(Some(Opened {
        message: pae(&envelope.payload_type, &payload),
        signature: signature.sig.clone(),
        signature_der,
        material: material(bundle.verification_material)?,
        subjects: subjects.collect(),
        payload,
    }))
}

/// A message signature of `artifact`: the signature is over its bytes.
fn message_signature(
    signed: MessageSignature,
    artifact: &[u8],
    verification: VerificationMaterial,
) -> Result<Option<Opened>, String> {
    let b64 = base64::engine::general_purpose::STANDARD;
    let digest = crate::plugin::digest(artifact);
    if let Some(recorded) = signed.message_digest {
        if recorded.algorithm != "SHA2_256" {
            return Err(format!("its message digest is {}, not SHA-256", recorded.algorithm));
        }
        let recorded = b64.decode(recorded.digest.trim()).map(|d| hex(&d)).unwrap_or_default();
        if recorded != digest {
            return Err("its message digest is not the artifact's".into());
        }
    }
    let signature_der = b64.decode(signed.signature.trim()).map_err(|_| "its signature is not base64".to_owned())?;
    Ok(Some(Opened {
        message: artifact.to_vec(),
        payload: artifact.to_vec(),
        signature: signed.signature,
        signature_der,
        material: material(verification)?,
        subjects: vec![(format!("sha256:{digest}"), BTreeMap::new())],
    }))
}

/// The key or certificate a bundle's signature is to be checked with.
fn material(material: VerificationMaterial) -> Result<Material, String> {
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut certificates = match (material.certificate, material.x509_certificate_chain) {
        (Some(certificate), _) => vec![certificate],
        (None, Some(chain)) => chain.certificates,
        (None, None) if material.public_key.is_some() => return Ok(Material::Key),
        (None, None) => return Err("it names neither a key nor a certificate".into()),
    }
    .into_iter()
    .map(|raw| b64.decode(raw.raw_bytes.trim()))
    .collect::<Result<Vec<_>, _>>()
    .map_err(|_| "its certificate is not base64".to_owned())?;
    if certificates.is_empty() {
        return Err("its certificate chain is empty".into());
    }
    let certificate = certificates.remove(0);
    // The root is the trusted root's to name: a bundle that carries one could slip in its own.
    if certificates.iter().any(|c| self_signed(c)) {
        return Err("its certificate chain includes a root certificate".into());
    }
    let chain = certificates.into_iter().map(CertificateDer::from).collect();
    let Some(entry) = material.tlog_entries.into_iter().next() else {
        return Err("it has no Rekor entry (a keyless signature must be logged)".into());
    };
    // Line breaks in base64 are tolerated, as most decoders do.
    let decode = |what: &str, text: &str| {
        let text: String = text.split_ascii_whitespace().collect();
        b64.decode(text).map_err(|_| format!("its {what} is not base64"))
    };
    if entry.log_index < 0 {
        return Err("its Rekor entry's index is negative".into());
    }
    let log_id = decode("Rekor log id", &entry.log_id.key_id)?;
    let proof = match entry.inclusion_proof {
        Some(proof) => Some(Proof {
            index: u64::try_from(proof.log_index).map_err(|_| "its inclusion proof's index is negative")?,
            tree_size: u64::try_from(proof.tree_size).map_err(|_| "its inclusion proof's tree size is negative")?,
            root_hash: decode("inclusion proof's root", &proof.root_hash)?,
            hashes: (proof.hashes.len() <= 64)
                .then(|| proof.hashes.iter().map(|h| decode("inclusion proof", h)).collect::<Result<_, _>>())
                .ok_or("its inclusion proof is longer than any tree's")??,
            checkpoint: proof.checkpoint.map(|c| c.envelope),
        }),
        None => None,
    };
    let timestamps = material.timestamp_verification_data.map(|t| t.rfc3161_timestamps).unwrap_or_default();
    Ok(Material::Certificate(Box::new(Keyless {
        certificate,
        chain,
        entry: Entry {
            body: entry.canonicalized_body,
            integrated_time: entry.integrated_time,
            log_id: hex(&log_id),
            log_index: entry.log_index,
        },
        set: entry.inclusion_promise.map(|p| p.signed_entry_timestamp),
        proof,
        timestamps: timestamps.iter().map(|t| decode("timestamp", &t.signed_timestamp)).collect::<Result<_, _>>()?,
    })))
}

/// Whether a DER certificate names itself as its issuer (unparsable ones are not roots).
fn self_signed(der: &[u8]) -> bool {
    use x509_cert::der::Decode as _;
    x509_cert::Certificate::from_der(der).is_ok_and(|c| c.tbs_certificate.issuer == c.tbs_certificate.subject)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distribution::keyless;
    use crate::distribution::trusted_root::TrustedRoot;

    /// A bundle cosign made with the Sigstore public-good instance in February 2025 (an
    /// attestation, `cosign attest --new-bundle-format`; Rekor entry 175508996).
    const ATTESTATION: &[u8] = include_bytes!("testdata/public-good-attestation.sigstore.json");

    fn edited(edit: impl FnOnce(&mut serde_json::Value)) -> Vec<u8> {
        let mut bundle: serde_json::Value = serde_json::from_slice(ATTESTATION).unwrap();
        edit(&mut bundle);
        serde_json::to_vec(&bundle).unwrap()
    }

    #[test]
    fn a_public_good_bundle_verifies_offline_and_its_statement_names_its_subject() {
        let opened = read(ATTESTATION, Some("https://cosign.sigstore.dev/attestation/v1"), None).unwrap().unwrap();
        let digests: Vec<&str> = opened.subjects.iter().map(|(digest, _)| digest.as_str()).collect();
        assert_eq!(digests, ["sha256:732112270d7e59418a8c080b134b24cabd67d250d0d0147a97ed95ba5c280aa4"]);
        let logged = opened.logged().expect("keyless");
        let signer = keyless::check(&TrustedRoot::public_good(), &logged).expect("verifies");
        assert_eq!(signer.subject, "cody@soyland.com");
        assert_eq!(signer.issuer.as_deref(), Some("https://github.com/login/oauth"));
        assert_eq!((signer.log_index, signer.integrated_time), (175_508_996, 1_740_770_291));

        // It is an attestation, not a signature of the image: cosign verify does not take it.
        assert!(open(ATTESTATION).unwrap().is_none());
    }

    #[test]
    fn every_part_of_a_bundle_is_bound_to_the_others() {
        let root = TrustedRoot::public_good();
        let check = |bytes: Vec<u8>| {
            let opened = read(&bytes, None, None).unwrap().unwrap();
            keyless::check(&root, &opened.logged().unwrap()).map(|_| ()).map_err(|e| e.to_string())
        };
        // Another statement under the same signature.
        let payload = edited(|b| {
            let statement = String::from_utf8(
                base64::engine::general_purpose::STANDARD
                    .decode(b["dsseEnvelope"]["payload"].as_str().unwrap())
                    .unwrap(),
            )
            .unwrap()
            .replace("732112", "732113");
            b["dsseEnvelope"]["payload"] = base64::engine::general_purpose::STANDARD.encode(statement).into();
        });
        assert_eq!(check(payload), Err("its Rekor entry is for another payload".into()));
        // Rekor's promise covers the time: it cannot be moved into the certificate's life.
        let moved = edited(|b| b["verificationMaterial"]["tlogEntries"][0]["integratedTime"] = "1740770292".into());
        assert_eq!(check(moved), Err("its signed entry timestamp does not verify with the Rekor log's key".into()));
        // The payload type is signed too (DSSE's pre-authentication encoding).
        let typed = edited(|b| b["dsseEnvelope"]["payloadType"] = "application/json".into());
        assert_eq!(
            read(&typed, None, None).err().unwrap(),
            "its envelope holds application/json, not an in-toto statement"
        );
    }

    #[test]
    fn bundles_that_cannot_sign_a_manifest_are_refused_saying_what_they_are() {
        let unlogged = edited(|b| {
            b["verificationMaterial"]["tlogEntries"][0].as_object_mut().unwrap().remove("inclusionPromise");
        });
        // Its inclusion proof is to the log's checkpoint, but only a promise says where in
        // the log (a Rekor v1 proof counts in one shard) and when.
        let (opened, root) = (read(&unlogged, None, None).unwrap().unwrap(), TrustedRoot::public_good());
        assert_eq!(
            keyless::check(&root, &opened.logged().unwrap()).unwrap_err().to_string(),
            "its inclusion proof is for another index than its entry's"
        );
        let blob = edited(|b| {
            let object = b.as_object_mut().unwrap();
            object.remove("dsseEnvelope");
            object.insert("messageSignature".into(), serde_json::json!({"signature": "AAAA"}));
        });
        assert_eq!(
            read(&blob, None, None).err().unwrap(),
            "it holds a message signature (cosign sign-blob), which names no manifest"
        );
        let keyed = edited(|b| {
            b["verificationMaterial"] = serde_json::json!({"publicKey": {"hint": "abc"}, "tlogEntries": []});
        });
        assert!(matches!(read(&keyed, None, None).unwrap().unwrap().material, Material::Key));
        assert!(open(b"{}").err().unwrap().starts_with("it is not a Sigstore bundle: missing field"));
    }

    #[test]
    fn the_pre_authentication_encoding_is_dsses() {
        // The example of the DSSE protocol's specification.
        assert_eq!(
            pae("http://example.com/HelloWorld", b"hello world"),
            b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
        );
    }
}
