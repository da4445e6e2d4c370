//! RFC 3161 signed timestamps: a timestamp authority's word that a signature existed at a
//! time. A Rekor v2 entry has no time of its own, so a keyless signature logged there is
//! judged at the time a timestamp authority of the trusted root gives it.

use cms::content_info::ContentInfo;
use cms::signed_data::SignedData;
use sha2::Digest as _;
use x509_cert::der::asn1::{ObjectIdentifier, OctetString};
use x509_cert::der::{Decode as _, Encode as _};
use x509_tsp::{TimeStampResp, TstInfo};

use super::trusted_root::{TimestampAuthority, TrustedRoot};

const SIGNED_DATA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.7.2");
const TST_INFO: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.16.1.4");
const CONTENT_TYPE: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.3");
const MESSAGE_DIGEST: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.4");
const SHA256: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.16.840.1.101.3.4.2.1");
const SHA384: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.16.840.1.101.3.4.2.2");
const SHA512: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.16.840.1.101.3.4.2.3");
/// The extended key usage of a timestamping certificate (RFC 3161, 2.3).
const TIME_STAMPING: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x08];

/// The time (seconds since the epoch) a timestamp authority of `root` signed, in
/// `token` (a DER `TimeStampResp`, or its `TimeStampToken`), for `signature`.
///
/// # Errors
///
/// Saying which check failed: the token's form, the imprint of another signature, the
/// authority's signature, or no authority of the root valid then.
pub fn verify(root: &TrustedRoot, token: &[u8], signature: &[u8]) -> Result<i64, String> {
    let content = match TimeStampResp::from_der(token) {
        Ok(response) => {
            use cmpv2::status::PkiStatus;
            if !matches!(response.status.status, PkiStatus::Accepted | PkiStatus::GrantedWithMods) {
                return Err("its timestamp response is not a granted one".into());
            }
            response.time_stamp_token.ok_or("its timestamp response holds no token")?
        }
        Err(_) => ContentInfo::from_der(token).map_err(|e| format!("its timestamp does not parse: {e}"))?,
    };
    if content.content_type != SIGNED_DATA {
        return Err("its timestamp is not CMS signed data".into());
    }
    let signed_data: SignedData =
        content.content.decode_as().map_err(|e| format!("its timestamp's signed data: {e}"))?;
    if signed_data.encap_content_info.econtent_type != TST_INFO {
        return Err("its timestamp signs no timestamp information".into());
    }
    let info = signed_data
        .encap_content_info
        .econtent
        .as_ref()
        .and_then(|any| any.decode_as::<OctetString>().ok())
        .ok_or("its timestamp's information is missing")?;
    let info_der = info.as_bytes();
    let tst = TstInfo::from_der(info_der).map_err(|e| format!("its timestamp's information does not parse: {e}"))?;
    let imprint =
        digest(&tst.message_imprint.hash_algorithm.oid, signature).ok_or("its timestamp's hash is unknown")?;
    if imprint != tst.message_imprint.hashed_message.as_bytes() {
        return Err("its timestamp is for another signature".into());
    }
    let time = i64::try_from(tst.gen_time.to_unix_duration().as_secs()).unwrap_or(i64::MAX);

    let signer_info = signed_data.signer_infos.0.get(0).ok_or("its timestamp has no signer")?;
    let attributes = signer_info.signed_attrs.as_ref().ok_or("its timestamp's signer signs no attributes")?;
    let wanted = digest(&signer_info.digest_alg.oid, info_der).ok_or("its timestamp's digest algorithm is unknown")?;
    let digests_info = attributes
        .iter()
        .filter(|a| a.oid == MESSAGE_DIGEST)
        .flat_map(|a| a.values.iter())
        .any(|v| v.decode_as::<OctetString>().is_ok_and(|d| d.as_bytes() == wanted.as_slice()));
    let of_info = attributes
        .iter()
        .filter(|a| a.oid == CONTENT_TYPE)
        .flat_map(|a| a.values.iter())
        .any(|v| v.decode_as::<ObjectIdentifier>().is_ok_and(|t| t == TST_INFO));
    if !digests_info || !of_info {
        return Err("its timestamp's signed attributes are for other information".into());
    }
    // The attributes are signed as a DER SET OF, not under their [0] tag.
    let signed_attributes = attributes.to_der().map_err(|e| e.to_string())?;
    let signature_value = signer_info.signature.as_bytes();
    let algorithms: &[&dyn rustls::pki_types::SignatureVerificationAlgorithm] =
        match signer_info.signature_algorithm.oid.to_string().as_str() {
            "1.2.840.10045.4.3.2" => &[webpki::ring::ECDSA_P256_SHA256, webpki::ring::ECDSA_P384_SHA256],
            "1.2.840.10045.4.3.3" => &[webpki::ring::ECDSA_P256_SHA384, webpki::ring::ECDSA_P384_SHA384],
            other => return Err(format!("its timestamp is signed with {other}, not ECDSA")),
        };
    let current: Vec<&TimestampAuthority> =
        root.timestamp_authorities.iter().filter(|a| a.chain.valid.contains(time)).collect();
    let mut failures = Vec::new();
    for authority in &current {
        let Ok(certificate) = webpki::EndEntityCert::try_from(&authority.signer) else {
            continue;
        };
        let signs = algorithms
            .iter()
            .any(|alg| certificate.verify_signature(*alg, &signed_attributes, signature_value).is_ok());
        if !signs {
            failures.push(format!("{}: not its signature", authority.chain.uri));
            continue;
        }
        match authority.chain.certifies(&certificate, &[], time, TIME_STAMPING, |_| ()) {
            Ok(()) => return Ok(time),
            Err(e) => failures.push(e),
        }
    }
    let at = jiff::Timestamp::from_second(time).map(|t| t.to_string()).unwrap_or_default();
    let why = if current.is_empty() {
        "no timestamp authority of the trusted root was valid then".to_owned()
    } else {
        failures.join("; ")
    };
    Err(format!("its timestamp of {at} is not a trusted timestamp authority's ({why})"))
}

fn digest(algorithm: &ObjectIdentifier, bytes: &[u8]) -> Option<Vec<u8>> {
    Some(match *algorithm {
        SHA256 => sha2::Sha256::digest(bytes).to_vec(),
        SHA384 => sha2::Sha384::digest(bytes).to_vec(),
        SHA512 => sha2::Sha512::digest(bytes).to_vec(),
        _ => return None,
    })
}
