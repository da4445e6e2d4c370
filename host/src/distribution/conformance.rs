//! The Sigstore client conformance suite's bundle verification cases
//! (`testdata/sigstore-conformance/bundle-verify`), run through the checks a keyless or
//! keyed signature of a plugin passes: every case passes or fails as the suite expects,
//! each refusal for the reason its case is about.

use std::path::{Path, PathBuf};

use p256::ecdsa::signature::Verifier as _;
use p256::pkcs8::DecodePublicKey as _;

use super::bundle::{self, Material};
use super::keyless::{self, Identity};
use super::trusted_root::TrustedRoot;

/// The signer of the suite's bundles, unless a case names another.
const IDENTITY: &str = "https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/.github/workflows/extremely-dangerous-oidc-beacon.yml@refs/heads/main";
const ISSUER: &str = "https://token.actions.githubusercontent.com";

fn cases() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src/distribution/testdata/sigstore-conformance/bundle-verify")
}

/// Verifies the case in `dir` as the suite's protocol says: against its trusted root (else
/// the public-good one), by its key if it has one, else for its identity, over its
/// artifact (else `a.txt`), which an in-toto statement must name.
fn verify(dir: &Path) -> Result<(), String> {
    let read = |name: &str| std::fs::read(dir.join(name)).ok();
    let text = |name: &str| read(name).map(|b| String::from_utf8_lossy(&b).trim().to_owned());
    let root = match read("trusted_root.json") {
        Some(json) => {
            std::sync::Arc::new(TrustedRoot::from_json(&json, "trusted_root.json").map_err(|e| e.to_string())?)
        }
        None => TrustedRoot::public_good(),
    };
    let artifact = read("artifact").unwrap_or_else(|| std::fs::read(cases().join("a.txt")).expect("a.txt"));
    let bundle = read("bundle.sigstore.json").expect("every case has a bundle");
    let opened = bundle::read(&bundle, None, Some(&artifact))?.expect("any predicate is read");
    let digest = format!("sha256:{}", crate::plugin::digest(&artifact));
    if !opened.subjects.iter().any(|(subject, _)| *subject == digest) {
        return Err("its statement names another artifact".into());
    }
    if let Some(key) = text("key.pub") {
        if !matches!(opened.material, Material::Key) {
            return Err("it is not signed with a key".into());
        }
        let key = p256::ecdsa::VerifyingKey::from_public_key_pem(&key).map_err(|e| e.to_string())?;
        let signature = base64::Engine::decode(&base64::engine::general_purpose::STANDARD, opened.signature.trim())
            .ok()
            .and_then(|der| p256::ecdsa::Signature::from_der(&der).ok())
            .ok_or("its signature is not DER")?;
        return key.verify(&opened.message, &signature).map_err(|_| "its signature is not the key's".to_owned());
    }
    let logged = opened.logged().ok_or("it is signed with a key, and no key is given")?;
    let signer = keyless::check(&root, &logged).map_err(|e| e.to_string())?;
    let identity = Identity {
        issuer: text("issuer").unwrap_or_else(|| ISSUER.into()),
        subject: text("identity").unwrap_or_else(|| IDENTITY.into()),
        subject_prefix: None,
    };
    if !signer.is(&identity) {
        return Err(format!("it is signed by {signer}"));
    }
    Ok(())
}

#[test]
fn every_case_of_the_sigstore_conformance_suite_passes_or_fails_as_it_expects_and_why() {
    // Why each failing case fails: the part of the refusal that names its check.
    let refusals = [
        ("bundle-empty-certificate-chain_fail", "its certificate chain is empty"),
        ("bundle-from-wrong-instance_fail", "not a log of the trusted root"),
        ("bundle-invalid-base64-signature_fail", "its signature is not base64"),
        ("bundle-malformed-json_fail", "it is not a Sigstore bundle: EOF"),
        ("bundle-negative-log-index_fail", "its Rekor entry's index is negative"),
        ("bundle-unknown-version_fail", "not a Sigstore bundle's this reads"),
        ("bundle-with-root-cert_fail", "its certificate chain includes a root certificate"),
        ("checkpoint-bad-keyhint_fail", "its checkpoint carries no signature of the log that verifies"),
        ("checkpoint-wrong-roothash_fail", "its checkpoint is for another tree than its inclusion proof"),
        ("dsse-invalid-sig_fail", "its Rekor entry is for another signature"),
        ("dsse-mismatch-envelope_fail", "its Rekor entry is for another payload"),
        ("dsse-mismatch-sig_fail", "its Rekor entry is for another signature"),
        ("inclusion-proof-corrupted-hash_fail", "its inclusion proof does not lead to the tree root it names"),
        ("incorrect-public-key_fail", "its signed entry timestamp does not verify"),
        (
            "integrated-time-in-future_fail",
            "valid when logged at 2026-05-07T15:34:11Z (https://fulcio.sigstore.dev: CertExpired",
        ),
        // Rekor's `intoto` entries (cosign 2's attestations) are not read: see below.
        ("intoto-expired-certificate_fail", "its Rekor entry is a intoto 0.0.2, not a signature"),
        ("intoto-log-entry-mismatch_fail", "its Rekor entry is a intoto 0.0.2, not a signature"),
        ("intoto-missing-inclusion-proof_fail", "its Rekor entry is a intoto 0.0.2, not a signature"),
        ("intoto-set-outside-signing-cert-validity_fail", "its Rekor entry is a intoto 0.0.2, not a signature"),
        ("intoto-tsa-timestamp-outside-cert-validity_fail", "its Rekor entry is a intoto 0.0.2, not a signature"),
        ("invalid-checkpoint-signature_fail", "its checkpoint carries no signature of the log that verifies"),
        ("invalid-ct-key_fail", "verifies with a CT log of the trusted root"),
        ("invalid-inclusion-proof_fail", "its inclusion proof does not lead to the tree root it names"),
        ("managed-key-no-key_fail", "it is signed with a key, and no key is given"),
        // Its "wrong key" does not parse: refused before any signature is checked.
        ("managed-key-wrong-key_fail", "PEM Base64 error"),
        ("message-digest-mismatch_fail", "its message digest is not the artifact's"),
        ("rekor2-checkpoint-missing-log-signature_fail", "its checkpoint carries no signature of the log"),
        ("rekor2-checkpoint-missing-origin_fail", "its checkpoint does not name an origin"),
        ("rekor2-checkpoint-missing-root-hash_fail", "its checkpoint does not name an origin, a tree size and a root"),
        ("rekor2-checkpoint-missing-size_fail", "its checkpoint does not name an origin, a tree size and a root"),
        // Another log's checkpoint.
        (
            "rekor2-checkpoint-no-matching-signature_fail",
            "its checkpoint is of log2025-alpha1.rekor.github.dev, not of",
        ),
        ("rekor2-dsse-invalid-sig_fail", "its Rekor entry is for another signature"),
        ("rekor2-dsse-mismatch-envelope_fail", "its Rekor entry is for another payload"),
        ("rekor2-dsse-mismatch-sig_fail", "its Rekor entry is for another signature"),
        ("rekor2-no-inclusion-proof_fail", "neither a signed entry timestamp nor an inclusion proof"),
        ("rekor2-no-timestamp_fail", "nothing says when it was signed"),
        (
            "rekor2-timestamp-outside-trust-root-tsa-validity_fail",
            "no timestamp authority of the trusted root was valid",
        ),
        ("rekor2-timestamp-outside-tsa-cert-validity_fail", "is not a trusted timestamp authority's"),
        ("rekor2-timestamp-payload-mismatch_fail", "its timestamp is for another signature"),
        // Signed by an RSA authority the root does not name; only ECDSA authorities are read.
        ("rekor2-timestamp-untrusted-tsa-with-embedded-cert_fail", "its timestamp is signed with 1.2.840.113549.1.1.1"),
        (
            "rekor2-timestamp-untrusted-tsa-without-embedded-cert_fail",
            "its timestamp is signed with 1.2.840.113549.1.1.1",
        ),
        ("rekor2-timestamp-with-incorrect-time_fail", "valid when logged at 2025-07-15T10:33:31Z"),
        ("set-invalid-signature_fail", "its signed entry timestamp does not verify"),
        ("signature-mismatch_fail", "its Rekor entry is for another signature"),
        ("trust-root-tlog-missing-validity-start_fail", "not a Sigstore trusted root: missing field `start`"),
        ("wrong-hashedrekord-artifact_fail", "its Rekor entry is for another payload"),
        ("wrong-hashedrekord-cert-and-sig_fail", "its Rekor entry is for another signature"),
        ("wrong-hashedrekord-entry_fail", "its Rekor entry is for another payload"),
        ("wrong-material_fail", "its message digest is not the artifact's"),
    ];
    // Cases the suite expects to pass that are not supported: an attestation logged as
    // Rekor's `intoto` entry (what `cosign attest` wrote before the `dsse` kind).
    let unsupported = [("intoto-with-custom-trust-root", "its Rekor entry is a intoto 0.0.2, not a signature")];

    let mut names: Vec<String> = std::fs::read_dir(cases())
        .expect("the suite's cases")
        .filter_map(Result::ok)
        .filter(|e| e.path().is_dir())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    names.sort();
    assert!(names.len() > 60, "{} cases", names.len());
    let mut wrong = Vec::new();
    for name in &names {
        let result = verify(&cases().join(name));
        let expected = refusals.iter().chain(&unsupported).find(|(case, _)| case == name).map(|(_, why)| *why);
        let right = match (&result, expected) {
            (Ok(()), None) => !name.ends_with("_fail"),
            (Err(why), Some(expected)) => why.contains(expected),
            _ => false,
        };
        if !right {
            wrong.push(format!("{name}: {result:?}, expected {}", expected.unwrap_or("to pass")));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
