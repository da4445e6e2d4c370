//! The kubeconfig file that points `kubectl` at the server (plain HTTP, no credentials).

use std::path::Path;

/// The kubeconfig text for a server at `url`, with `default` as the current namespace.
pub(crate) fn render(url: &str) -> String {
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: kubewasm-dev
  cluster:
    server: {url}
contexts:
- name: kubewasm-dev
  context:
    cluster: kubewasm-dev
    user: kubewasm-dev
    namespace: default
current-context: kubewasm-dev
users:
- name: kubewasm-dev
  user: {{}}
preferences: {{}}
"
    )
}

/// Writes the kubeconfig atomically (write to a temporary file, then rename).
pub(crate) fn write(path: &Path, url: &str) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, render(url))?;
    std::fs::rename(&tmp, path)
}
