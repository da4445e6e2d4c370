//! The cluster's certificate authority and keys, as kubeadm lays them out: a CA made at the
//! first start and kept in the data directory (so kubeconfigs stay valid across restarts), the
//! serving certificate it signs for loopback and the `kubernetes` Service names, client
//! certificates for users (`CN` the user, `O` the group), the check of a client certificate
//! kube-apiserver's x509 authenticator makes, and the service-account signing key.
//!
//! Keys are ECDSA P-256, made by `rcgen` with `ring`; nothing here uses another crypto provider.
//! The CA and serving certificates are `kubewasm-pki`'s, as the host's webhook server makes
//! them.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use kubewasm_pki::Authority;
use rcgen::{CertificateParams, DnType, ExtendedKeyUsagePurpose, KeyPair, KeyUsagePurpose};
use rustls::RootCertStore;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::server::danger::ClientCertVerifier;

/// The names the serving certificate is valid for: loopback, and the names and `ClusterIP` of
/// the `kubernetes` Service in-cluster clients use (kubeadm's list).
const SERVING_NAMES: &[&str] = &[
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
    "127.0.0.1",
    "::1",
    "10.96.0.1",
];

/// How long certificates the CA signs are valid.
const ISSUED_DAYS: i64 = 365;

/// How long a new CA is valid.
const CA_DAYS: i64 = 3650;

/// The subject attribute a client certificate may carry its user's uid in
/// (`AllowParsingUserUIDFromCertAuth`, on by default in 1.33).
const UID_OID: &str = "1.3.6.1.4.1.57683.2";

/// Ways the keys and certificates cannot be had.
#[derive(Debug, thiserror::Error)]
pub enum PkiError {
    /// A file of the data directory's `pki/` could not be read or written.
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    /// A file of the data directory's `pki/` is not the key or certificate it should be. Remove
    /// the `pki/` directory to have new ones made (kubeconfigs written before stop working).
    #[error("{path} is not a usable key or certificate: {message}")]
    Invalid { path: PathBuf, message: String },
    /// A certificate could not be made (a user or group name a certificate cannot carry).
    #[error("could not make a certificate: {0}")]
    Certificate(#[from] rcgen::Error),
}

/// A certificate and its private key, both PEM.
#[derive(Debug, Clone)]
pub(crate) struct Issued {
    pub cert_pem: String,
    pub key_pem: String,
}

/// Who a verified client certificate names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CertificateSubject {
    pub common_name: String,
    /// Every `O` value, in order.
    pub organizations: Vec<String>,
    /// The uid attribute, when the certificate carries one.
    pub uid: Option<String>,
    /// The hex SHA-256 of the certificate's DER, for the `credential-id` extra.
    pub fingerprint: String,
}

/// The authority, the serving key pair and the service-account key. Made once per start.
pub(crate) struct Pki {
    authority: Authority,
    service_account_key: KeyPair,
    /// Checks client certificates against the CA, as a Go `x509.Certificate.Verify` with the
    /// client-auth usage.
    client_verifier: Arc<dyn ClientCertVerifier>,
}

impl Pki {
    /// The CA and service-account key of `dir/pki` (made and written there when absent); made
    /// in memory without a directory.
    pub(crate) fn load_or_create(dir: Option<&Path>) -> Result<Pki, PkiError> {
        let ca_path = dir.map_or_else(|| PathBuf::from("ca.crt"), |d| d.join("pki/ca.crt"));
        let invalid = |message: String| PkiError::Invalid { path: ca_path.clone(), message };
        let (authority, service_account_key) = if let Some(dir) = dir {
            let pki = dir.join("pki");
            (load_ca(&pki)?, load_key(&pki.join("sa.key"))?)
        } else {
            (new_ca()?, KeyPair::generate()?)
        };
        let ca_der = pem_der(authority.cert_pem()).map_err(&invalid)?;
        let mut roots = RootCertStore::empty();
        roots.add(ca_der).map_err(|e| invalid(e.to_string()))?;
        let client_verifier = WebPkiClientVerifier::builder_with_provider(
            Arc::new(roots),
            Arc::new(rustls::crypto::ring::default_provider()),
        )
        .allow_unauthenticated()
        .build()
        .map_err(|e| invalid(e.to_string()))?;
        Ok(Pki { authority, service_account_key, client_verifier })
    }

    /// The CA certificate, PEM: what clients trust (`certificate-authority-data`,
    /// `kube-root-ca.crt`).
    pub(crate) fn ca_pem(&self) -> &str {
        self.authority.cert_pem()
    }

    /// A new serving certificate (chain: itself) and its key.
    pub(crate) fn serving(&self) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), PkiError> {
        let names: Vec<String> = SERVING_NAMES.iter().map(ToString::to_string).collect();
        Ok(self.authority.serving(&names, "kube-apiserver", ISSUED_DAYS)?)
    }

    /// A client certificate for `user` in `group` (`CN=user`, `O=group`), as kubeadm's
    /// `kubernetes-admin` certificate. One group at most: `rcgen` writes one value per
    /// attribute type.
    pub(crate) fn client(&self, user: &str, group: Option<&str>) -> Result<Issued, PkiError> {
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.distinguished_name.push(DnType::CommonName, user);
        if let Some(group) = group {
            params.distinguished_name.push(DnType::OrganizationName, group);
        }
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let key = KeyPair::generate()?;
        let cert = self.authority.sign(params, &key, ISSUED_DAYS)?;
        Ok(Issued { cert_pem: cert.pem(), key_pem: key.serialize_pem() })
    }

    /// The subject of a client's certificate chain if it verifies against the CA for client
    /// authentication (`x509.Verifier`); the reason otherwise, worded as Go's `Verify`.
    pub(crate) fn verify_client(&self, chain: &[CertificateDer<'static>]) -> Result<CertificateSubject, String> {
        let Some((leaf, intermediates)) = chain.split_first() else {
            return Err("no client certificate".to_string());
        };
        self.client_verifier
            .verify_client_cert(leaf, intermediates, UnixTime::now())
            .map_err(|e| format!("verifying certificate failed: {e}"))?;
        let (_, cert) = x509_parser::parse_x509_certificate(leaf).map_err(|e| e.to_string())?;
        let subject = cert.subject();
        let text = |attr: &x509_parser::x509::AttributeTypeAndValue<'_>| {
            attr.as_str().map(ToString::to_string).map_err(|e| e.to_string())
        };
        let common_name = subject.iter_common_name().next().map(text).transpose()?.unwrap_or_default();
        let organizations = subject.iter_organization().map(text).collect::<Result<Vec<_>, _>>()?;
        let uid_oid = x509_parser::der_parser::oid::Oid::from(&[1, 3, 6, 1, 4, 1, 57683, 2][..])
            .map_err(|_| format!("the uid attribute {UID_OID} is not an OID"))?;
        let uids = subject.iter_by_oid(&uid_oid).map(text).collect::<Result<Vec<_>, _>>()?;
        let uid = match uids.as_slice() {
            [] => None,
            [uid] if !uid.is_empty() => Some(uid.clone()),
            _ => return Err(format!("the certificate carries {} values of the uid attribute", uids.len())),
        };
        let fingerprint = ring::digest::digest(&ring::digest::SHA256, leaf).as_ref().iter().fold(
            String::with_capacity(64),
            |mut hex, byte| {
                use std::fmt::Write;
                let _ = write!(hex, "{byte:02x}");
                hex
            },
        );
        Ok(CertificateSubject { common_name, organizations, uid, fingerprint })
    }

    /// What checks client certificates against the CA (the TLS layer asks it to check the
    /// client's signature during the handshake).
    pub(crate) fn client_verifier(&self) -> Arc<dyn ClientCertVerifier> {
        self.client_verifier.clone()
    }

    /// The key service-account tokens are signed with.
    pub(crate) fn service_account_key(&self) -> &KeyPair {
        &self.service_account_key
    }
}

/// The CA kept in `pki`, made and written there when its certificate or key is missing.
fn load_ca(pki: &Path) -> Result<Authority, PkiError> {
    let key_path = pki.join("ca.key");
    let cert_path = pki.join("ca.crt");
    if let (Some(cert), Some(key)) = (read(&cert_path)?, read(&key_path)?) {
        return Authority::from_pem(&cert, parse_key(&key_path, &key)?)
            .map_err(|e| PkiError::Invalid { path: cert_path, message: e.to_string() });
    }
    let authority = new_ca()?;
    write(&key_path, &authority.key_pem())?;
    write(&cert_path, authority.cert_pem())?;
    Ok(authority)
}

/// The key kept at `path`, made and written there when missing.
fn load_key(path: &Path) -> Result<KeyPair, PkiError> {
    if let Some(text) = read(path)? {
        return parse_key(path, &text);
    }
    let key = KeyPair::generate()?;
    write(path, &key.serialize_pem())?;
    Ok(key)
}

/// A new CA (`CN=kubernetes`, kubeadm's name) valid for ten years.
fn new_ca() -> Result<Authority, PkiError> {
    Ok(Authority::generate("kubernetes", CA_DAYS)?)
}

fn pem_der(pem_text: &str) -> Result<CertificateDer<'static>, String> {
    CertificateDer::from_pem_slice(pem_text.as_bytes()).map_err(|e| e.to_string())
}

fn parse_key(path: &Path, pem_text: &str) -> Result<KeyPair, PkiError> {
    KeyPair::from_pem(pem_text).map_err(|e| PkiError::Invalid { path: path.to_path_buf(), message: e.to_string() })
}

fn read(path: &Path) -> Result<Option<String>, PkiError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(PkiError::Io { path: path.to_path_buf(), source }),
    }
}

/// Writes `text` readable by its owner only (keys among them).
fn write(path: &Path, text: &str) -> Result<(), PkiError> {
    let fail = |source| PkiError::Io { path: path.to_path_buf(), source };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(fail)?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path).map_err(fail)?;
    std::io::Write::write_all(&mut file, text.as_bytes()).map_err(fail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_certificate_of_the_ca_names_its_user_and_group() {
        let pki = Pki::load_or_create(None).unwrap();
        let issued = pki.client("alice", Some("dev")).unwrap();
        let chain = vec![pem_der(&issued.cert_pem).unwrap()];
        let subject = pki.verify_client(&chain).unwrap();
        assert_eq!(
            (subject.common_name.as_str(), subject.organizations.as_slice()),
            ("alice", &["dev".to_string()][..])
        );
        assert_eq!(subject.uid, None);
        assert_eq!(subject.fingerprint.len(), 64);

        let other = Pki::load_or_create(None).unwrap();
        assert!(other.verify_client(&chain).is_err(), "a certificate of another CA is refused");
    }

    #[test]
    fn the_ca_and_service_account_key_are_kept_in_the_data_directory() {
        let dir = tempfile::tempdir().unwrap();
        let first = Pki::load_or_create(Some(dir.path())).unwrap();
        let again = Pki::load_or_create(Some(dir.path())).unwrap();
        assert_eq!(first.ca_pem(), again.ca_pem());
        assert_eq!(first.service_account_key().public_key_raw(), again.service_account_key().public_key_raw());
        let issued = again.client("bob", None).unwrap();
        assert!(first.verify_client(&[pem_der(&issued.cert_pem).unwrap()]).is_ok());

        std::fs::write(dir.path().join("pki/sa.key"), "not a key").unwrap();
        let err = Pki::load_or_create(Some(dir.path())).err().unwrap();
        assert!(err.to_string().contains("sa.key is not a usable key"), "{err}");
    }
}
