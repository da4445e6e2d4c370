//! Certificate authorities and the serving certificates they sign, for kubewasm's TLS
//! servers: the embedded API server's (`kubewasm-devcluster`) and the host's webhook server
//! (`kubewasm::webhook::tls`). One place decides what such a CA and certificate carry.
//!
//! Keys are ECDSA P-256 made by `rcgen` with `ring`. Every certificate starts five minutes in
//! the past, so that a clock a little behind the signer's accepts it at once.

#![warn(clippy::pedantic)]
// Accessors like `Authority::cert_pem` have nothing to add beyond their name.
#![allow(clippy::must_use_candidate)]

use rcgen::{
    BasicConstraints, Certificate, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use time::{Duration, OffsetDateTime};

pub use rcgen::Error;

/// A certificate authority: its certificate (PEM, what clients trust) and the key it signs
/// with.
pub struct Authority {
    cert_pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl Authority {
    /// A new self-signed CA named `common_name` (`CN`), valid for `days`.
    ///
    /// # Errors
    ///
    /// When the key cannot be made or the certificate signed.
    pub fn generate(common_name: &str, days: i64) -> Result<Authority, Error> {
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.distinguished_name.push(DnType::CommonName, common_name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages =
            vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        valid_for(&mut params, days);
        let key = KeyPair::generate()?;
        let cert = params.self_signed(&key)?;
        Authority::from_pem(&cert.pem(), key)
    }

    /// The CA of a PEM certificate and its key, as kept on disk.
    ///
    /// # Errors
    ///
    /// When the PEM is no certificate.
    pub fn from_pem(cert_pem: &str, key: KeyPair) -> Result<Authority, Error> {
        Ok(Authority { cert_pem: cert_pem.to_string(), issuer: Issuer::from_ca_cert_pem(cert_pem, key)? })
    }

    /// The CA's certificate, PEM.
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// The CA's key, PEM (PKCS#8), to keep it.
    pub fn key_pem(&self) -> String {
        self.issuer.key().serialize_pem()
    }

    /// Signs `params` for `key`, valid for `days` from now, naming this CA's key
    /// (authority key identifier).
    ///
    /// # Errors
    ///
    /// When the certificate cannot be signed (a name it cannot carry).
    pub fn sign(&self, mut params: CertificateParams, key: &KeyPair, days: i64) -> Result<Certificate, Error> {
        valid_for(&mut params, days);
        params.use_authority_key_identifier_extension = true;
        params.signed_by(key, &self.issuer)
    }

    /// A new key and a serving certificate for `names` (strings that parse as addresses
    /// become IP SANs, the others DNS SANs), `CN` `common_name`, valid for `days`: the chain
    /// (the certificate alone) and the key, as a rustls server takes them.
    ///
    /// # Errors
    ///
    /// When a name is neither a DNS name nor an address, or the key cannot be made.
    pub fn serving(
        &self,
        names: &[String],
        common_name: &str,
        days: i64,
    ) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), Error> {
        let mut params = CertificateParams::new(names.to_vec())?;
        params.distinguished_name.push(DnType::CommonName, common_name);
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let key = KeyPair::generate()?;
        let cert = self.sign(params, &key, days)?;
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        Ok((vec![cert.der().clone()], key))
    }
}

fn valid_for(params: &mut CertificateParams, days: i64) {
    let now = OffsetDateTime::now_utc();
    params.not_before = now - Duration::minutes(5);
    params.not_after = now + Duration::days(days);
}
