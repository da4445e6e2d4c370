//! Kubeconfig files that point `kubectl` (or any client) at the server: over HTTPS with the
//! cluster's CA and a client certificate or a bearer token, as a real cluster's; over plain
//! HTTP without credentials.

use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

/// Who a kubeconfig authenticates as.
pub(crate) enum Credential<'a> {
    /// Nothing (plain HTTP: the server takes such requests as the administrator's).
    None,
    /// A client certificate and its key, PEM.
    Certificate { cert_pem: &'a str, key_pem: &'a str },
    /// A bearer token.
    Token(&'a str),
}

/// The kubeconfig text for a server at `url` (trusting `ca_pem`, when the server speaks HTTPS),
/// with `default` as the current namespace.
pub(crate) fn render(url: &str, ca_pem: Option<&str>, credential: &Credential<'_>) -> String {
    let authority =
        ca_pem.map_or_else(String::new, |ca| format!("\n    certificate-authority-data: {}", STANDARD.encode(ca)));
    let user = match credential {
        Credential::None => " {}".to_string(),
        Credential::Certificate { cert_pem, key_pem } => format!(
            "\n    client-certificate-data: {}\n    client-key-data: {}",
            STANDARD.encode(cert_pem),
            STANDARD.encode(key_pem)
        ),
        Credential::Token(token) => format!("\n    token: {token}"),
    };
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: kubewasm-dev
  cluster:
    server: {url}{authority}
contexts:
- name: kubewasm-dev
  context:
    cluster: kubewasm-dev
    user: kubewasm-dev
    namespace: default
current-context: kubewasm-dev
users:
- name: kubewasm-dev
  user:{user}
preferences: {{}}
"
    )
}

/// Writes a kubeconfig atomically (write to a temporary file, then rename), readable by its
/// owner only: it holds a key or a token.
pub(crate) fn write(path: &Path, text: &str) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension("tmp");
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    std::io::Write::write_all(&mut options.open(&tmp)?, text.as_bytes())?;
    std::fs::rename(&tmp, path)
}
