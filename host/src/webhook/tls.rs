//! The webhook server's TLS identity: the certificate and key it serves with, and the CA
//! bundle the API server trusts it by (`caBundle` of the webhook configurations and of the
//! CRDs' conversion).
//!
//! Three sources, in the order an operator prefers them: PEM files (mounted from anywhere),
//! a Secret of type `kubernetes.io/tls` (`tls.crt`, `tls.key` and, for the bundle, `ca.crt`:
//! what cert-manager writes), or a CA and a leaf made at start. A made identity lives as long
//! as the process: every start registers its new CA, so it suits `kubewasm dev` and a single
//! replica; replicas behind one Service need one identity, from a Secret or files.
//!
//! A made CA and leaf are `kubewasm-pki`'s, as the embedded API server makes its own; TLS is
//! rustls with the ring provider, as everywhere in the host.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use k8s_openapi::api::core::v1::Secret;
use kubewasm_pki::Authority;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// Keys of a `kubernetes.io/tls` Secret.
const TLS_CRT: &str = "tls.crt";
const TLS_KEY: &str = "tls.key";
const CA_CRT: &str = "ca.crt";

/// How long a made leaf is valid: longer than any process is expected to run without a
/// restart, short enough that a copied key does not serve for ever.
const LEAF_DAYS: i64 = 365;

/// Ways the identity cannot be had.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file could not be read.
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    /// A certificate, key or bundle (of the file or Secret key `origin`) is not PEM of what
    /// it should be.
    #[error("{origin}: {message}")]
    Invalid { origin: String, message: String },
    /// The Secret could not be read (absent, or the host may not `get` it).
    #[error("Secret {namespace}/{name}: {source}")]
    Secret {
        namespace: String,
        name: String,
        #[source]
        source: kube::Error,
    },
    /// The Secret lacks `tls.crt` or `tls.key`.
    #[error("Secret {namespace}/{name} has no key {key:?} (a kubernetes.io/tls Secret has tls.crt and tls.key)")]
    MissingKey { namespace: String, name: String, key: &'static str },
    /// A certificate could not be made (a name that is neither a DNS name nor an address).
    #[error("could not make the webhook certificate: {0}")]
    Generate(#[from] kubewasm_pki::Error),
}

/// The names the webhook Service `name` of `namespace` is dialed by: kube-apiserver checks
/// `NAME.NAMESPACE.svc`; the others serve clients inside the cluster.
pub fn service_names(namespace: &str, name: &str) -> Vec<String> {
    vec![
        name.to_string(),
        format!("{name}.{namespace}"),
        format!("{name}.{namespace}.svc"),
        format!("{name}.{namespace}.svc.cluster.local"),
    ]
}

/// The CA bundle of the PEM file `path`, checked to hold certificates: for configurations
/// that name a server whose key the host does not hold (`kubewasm webhooks --ca-bundle`).
///
/// # Errors
///
/// [`TlsError::Io`] for a file that cannot be read, [`TlsError::Invalid`] for one that
/// holds no PEM certificate.
pub fn read_ca_bundle(path: &Path) -> Result<String, TlsError> {
    let pem = std::fs::read(path).map_err(|source| TlsError::Io { path: path.to_path_buf(), source })?;
    bundle(&path.display().to_string(), &pem)
}

/// `pem` as text, checked to hold certificates.
fn bundle(origin: &str, pem: &[u8]) -> Result<String, TlsError> {
    certificates(origin, pem)?;
    std::str::from_utf8(pem)
        .map(str::to_string)
        .map_err(|e| TlsError::Invalid { origin: origin.to_string(), message: e.to_string() })
}

/// The PEM certificates of `pem`, at least one.
fn certificates(origin: &str, pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let invalid = |message: String| TlsError::Invalid { origin: origin.to_string(), message };
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| invalid(format!("not PEM certificates: {e}")))?;
    if certs.is_empty() {
        return Err(invalid("holds no PEM certificate".into()));
    }
    Ok(certs)
}

/// The certificate chain and key the webhook server presents, and the CA bundle to register.
/// Cheap to clone; make the [`ServerConfig`](rustls::ServerConfig) once per identity.
#[derive(Clone)]
pub struct Identity {
    chain: Vec<CertificateDer<'static>>,
    key: Arc<PrivateKeyDer<'static>>,
    ca_bundle: Option<String>,
}

impl std::fmt::Debug for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Identity")
            .field("chain", &self.chain.len())
            .field("ca_bundle", &self.ca_bundle.is_some())
            .finish_non_exhaustive()
    }
}

impl Identity {
    /// A new CA and a leaf it signs for `names`: DNS names (`kubewasm-webhooks.ns.svc`) and
    /// addresses (`127.0.0.1`, `::1`). The CA's PEM is the bundle.
    ///
    /// # Errors
    ///
    /// [`TlsError::Generate`] for a name a certificate cannot carry.
    pub fn generate(names: &[String]) -> Result<Identity, TlsError> {
        // The CA outlives the leaf by a day: the leaf's end is the identity's.
        let authority = Authority::generate("kubewasm webhook CA", LEAF_DAYS + 1)?;
        let common_name = names.first().map_or("kubewasm", String::as_str);
        let (chain, key) = authority.serving(names, common_name, LEAF_DAYS)?;
        Ok(Identity { chain, key: Arc::new(key), ca_bundle: Some(authority.cert_pem().to_string()) })
    }

    /// The identity of PEM texts: a certificate chain (leaf first), its key, and the CA
    /// bundle if any. `origin` names where each came from, for errors.
    ///
    /// # Errors
    ///
    /// [`TlsError::Invalid`] naming the text that holds no certificate, no key, or a bundle
    /// without a certificate.
    pub fn from_pem(
        chain: (&str, &[u8]),
        key: (&str, &[u8]),
        ca_bundle: Option<(&str, &[u8])>,
    ) -> Result<Identity, TlsError> {
        let invalid = |origin: &str, message: String| TlsError::Invalid { origin: origin.to_string(), message };
        let chain_der = certificates(chain.0, chain.1)?;
        let key_der =
            PrivateKeyDer::from_pem_slice(key.1).map_err(|e| invalid(key.0, format!("no PEM private key: {e}")))?;
        let ca_bundle = match ca_bundle {
            Some((origin, pem)) => Some(bundle(origin, pem)?),
            None => None,
        };
        let identity = Identity { chain: chain_der, key: Arc::new(key_der), ca_bundle };
        // A key that does not match the certificate fails here, not at the first handshake.
        identity.server_config().map_err(|e| invalid(key.0, e.to_string()))?;
        Ok(identity)
    }

    /// The identity of PEM files: `cert` (the chain, leaf first), `key`, and the CA bundle
    /// `ca` (absent: the API server trusts the certificate by its system roots).
    ///
    /// # Errors
    ///
    /// [`TlsError::Io`] for a file that cannot be read, [`TlsError::Invalid`] naming a file
    /// that is not what it should be.
    pub fn from_files(cert: &Path, key: &Path, ca: Option<&Path>) -> Result<Identity, TlsError> {
        let read =
            |path: &Path| std::fs::read(path).map_err(|source| TlsError::Io { path: path.to_path_buf(), source });
        let (cert_pem, key_pem) = (read(cert)?, read(key)?);
        let ca_pem = ca.map(read).transpose()?;
        let (cert_name, key_name) = (cert.display().to_string(), key.display().to_string());
        let ca_name = ca.map(|p| p.display().to_string());
        Identity::from_pem((&cert_name, &cert_pem), (&key_name, &key_pem), ca_name.as_deref().zip(ca_pem.as_deref()))
    }

    /// The identity of the `kubernetes.io/tls` Secret `namespace/name`: `tls.crt`, `tls.key`
    /// and, when present, `ca.crt` as the bundle.
    ///
    /// # Errors
    ///
    /// [`TlsError::Secret`] when it cannot be read, [`TlsError::MissingKey`] or
    /// [`TlsError::Invalid`] naming the Secret's key.
    pub async fn from_secret(client: kube::Client, namespace: &str, name: &str) -> Result<Identity, TlsError> {
        let secret = kube::Api::<Secret>::namespaced(client, namespace)
            .get(name)
            .await
            .map_err(|source| TlsError::Secret { namespace: namespace.to_string(), name: name.to_string(), source })?;
        Identity::from_secret_object(&secret, namespace, name)
    }

    /// [`Identity::from_secret`] of a Secret already read.
    fn from_secret_object(secret: &Secret, namespace: &str, name: &str) -> Result<Identity, TlsError> {
        let data = secret.data.clone().unwrap_or_default();
        let value = |key: &'static str| data.get(key).map(|b| b.0.clone());
        let required = |key: &'static str| {
            value(key).ok_or_else(|| TlsError::MissingKey {
                namespace: namespace.to_string(),
                name: name.to_string(),
                key,
            })
        };
        let (cert, key, ca) = (required(TLS_CRT)?, required(TLS_KEY)?, value(CA_CRT));
        let origin = |key: &str| format!("Secret {namespace}/{name} key {key}");
        let (cert_origin, key_origin, ca_origin) = (origin(TLS_CRT), origin(TLS_KEY), origin(CA_CRT));
        Identity::from_pem((&cert_origin, &cert), (&key_origin, &key), ca.as_deref().map(|ca| (ca_origin.as_str(), ca)))
    }

    /// The PEM certificates the API server trusts the server by (`caBundle`); `None`: its
    /// system roots.
    pub fn ca_bundle(&self) -> Option<&str> {
        self.ca_bundle.as_deref()
    }

    /// A rustls server configuration presenting this identity, HTTP/1.1 by ALPN, no
    /// client certificates (kube-apiserver sends none unless configured to).
    ///
    /// # Errors
    ///
    /// The key does not match the certificate, or is of a kind ring cannot sign with.
    pub fn server_config(&self) -> Result<Arc<rustls::ServerConfig>, rustls::Error> {
        let mut config =
            rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_safe_default_protocol_versions()?
                .with_no_client_auth()
                .with_single_cert(self.chain.clone(), self.key.clone_key())?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use rustls::pki_types::ServerName;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Completes a handshake with `server` as `name`, trusting only `bundle`, and echoes a byte.
    async fn handshake(server: Arc<rustls::ServerConfig>, bundle: &str, name: &str) -> Result<(), String> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(server);
        let serve = tokio::spawn(async move {
            let (tcp, _) = listener.accept().await.unwrap();
            let mut tls = acceptor.accept(tcp).await.map_err(|e| e.to_string())?;
            let mut byte = [0u8; 1];
            tls.read_exact(&mut byte).await.map_err(|e| e.to_string())?;
            tls.write_all(&byte).await.map_err(|e| e.to_string())?;
            tls.shutdown().await.map_err(|e| e.to_string())
        });
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(bundle.as_bytes()) {
            roots.add(cert.unwrap()).unwrap();
        }
        let client = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let connector = tokio_rustls::TlsConnector::from(Arc::new(client));
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let server_name = ServerName::try_from(name.to_string()).unwrap();
        let result = async {
            let mut tls = connector.connect(server_name, tcp).await.map_err(|e| e.to_string())?;
            tls.write_all(b"k").await.map_err(|e| e.to_string())?;
            let mut byte = [0u8; 1];
            tls.read_exact(&mut byte).await.map_err(|e| e.to_string())?;
            assert_eq!(&byte, b"k");
            Ok(())
        }
        .await;
        if result.is_ok() {
            serve.await.unwrap()?;
        } else {
            serve.abort();
        }
        result
    }

    #[tokio::test]
    async fn a_client_trusting_the_bundle_reaches_a_made_identity_by_service_name_and_address() {
        let mut names = service_names("kubewasm-system", "kubewasm-webhooks");
        names.push("127.0.0.1".into());
        let identity = Identity::generate(&names).unwrap();
        let bundle = identity.ca_bundle().unwrap().to_string();
        let config = identity.server_config().unwrap();
        handshake(config.clone(), &bundle, "kubewasm-webhooks.kubewasm-system.svc").await.unwrap();
        handshake(config.clone(), &bundle, "127.0.0.1").await.unwrap();

        let err = handshake(config.clone(), &bundle, "other.kubewasm-system.svc").await.unwrap_err();
        assert!(err.contains("not valid for name"), "{err}");
        let stranger = Identity::generate(&names).unwrap();
        let err = handshake(config, stranger.ca_bundle().unwrap(), "127.0.0.1").await.unwrap_err();
        assert!(err.contains("invalid peer certificate"), "another CA is not trusted: {err}");
    }

    /// A leaf and key as PEM, and the CA's PEM, as cert-manager would write them.
    fn pem_files() -> (String, String, String) {
        let ca = Authority::generate("test CA", 1).unwrap();
        let key = rcgen::KeyPair::generate().unwrap();
        let params = rcgen::CertificateParams::new(vec!["hooks.team.svc".to_string()]).unwrap();
        let leaf = ca.sign(params, &key, 1).unwrap();
        (leaf.pem(), key.serialize_pem(), ca.cert_pem().to_string())
    }

    #[tokio::test]
    async fn an_identity_of_files_serves_and_bundles_its_ca() {
        let (cert, key, ca) = pem_files();
        let dir = std::env::temp_dir().join(format!("kubewasm-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (cert_path, key_path, ca_path) = (dir.join("tls.crt"), dir.join("tls.key"), dir.join("ca.crt"));
        std::fs::write(&cert_path, &cert).unwrap();
        std::fs::write(&key_path, &key).unwrap();
        std::fs::write(&ca_path, &ca).unwrap();
        let identity = Identity::from_files(&cert_path, &key_path, Some(&ca_path)).unwrap();
        assert_eq!(identity.ca_bundle(), Some(ca.as_str()));
        handshake(identity.server_config().unwrap(), &ca, "hooks.team.svc").await.unwrap();
        assert_eq!(Identity::from_files(&cert_path, &key_path, None).unwrap().ca_bundle(), None);

        std::fs::write(&key_path, "not a key").unwrap();
        let err = Identity::from_files(&cert_path, &key_path, None).unwrap_err().to_string();
        assert!(err.starts_with(&format!("{}: no PEM private key", key_path.display())), "{err}");
        let (_, other_key, _) = pem_files();
        std::fs::write(&key_path, other_key).unwrap();
        let err = Identity::from_files(&cert_path, &key_path, None).unwrap_err().to_string();
        assert!(err.starts_with(&key_path.display().to_string()), "a key of another certificate: {err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_tls_secret_gives_its_certificate_and_ca_and_a_missing_key_is_named() {
        let (cert, key, ca) = pem_files();
        let secret = |keys: &[(&str, &str)]| Secret {
            data: Some(
                keys.iter().map(|(k, v)| ((*k).to_string(), k8s_openapi::ByteString(v.as_bytes().to_vec()))).collect(),
            ),
            type_: Some("kubernetes.io/tls".into()),
            ..Secret::default()
        };
        let full = secret(&[("tls.crt", &cert), ("tls.key", &key), ("ca.crt", &ca)]);
        let identity = Identity::from_secret_object(&full, "kubewasm-system", "kubewasm-webhooks").unwrap();
        assert_eq!(identity.ca_bundle(), Some(ca.as_str()));

        let err = Identity::from_secret_object(&secret(&[("tls.crt", &cert)]), "ns", "hooks").unwrap_err();
        assert_eq!(
            err.to_string(),
            "Secret ns/hooks has no key \"tls.key\" (a kubernetes.io/tls Secret has tls.crt and tls.key)"
        );
        let err = Identity::from_secret_object(&secret(&[("tls.crt", "x"), ("tls.key", &key)]), "ns", "hooks")
            .unwrap_err()
            .to_string();
        assert_eq!(err, "Secret ns/hooks key tls.crt: holds no PEM certificate");
    }
}
