//! The identity the host runs as in end-to-end tests: the service account `kubewasm rbac`
//! makes for the plugins under test, with exactly the RBAC it prints, applied to the embedded
//! API server. A test that passes this way proves that RBAC enough; a request it lacks is
//! refused with 403, as on a cluster.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use kubewasm_devcluster::DevCluster;

/// The service account `kubewasm rbac` makes by default: `(namespace, name)`, so its user is
/// `system:serviceaccount:kubewasm-system:kubewasm`.
pub const HOST_ACCOUNT: (&str, &str) = ("kubewasm-system", "kubewasm");

/// The `kubewasm` binary of the build running the tests (`cargo test --workspace` builds it,
/// as `make test` does).
pub fn kubewasm_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    // <target>/<profile>/deps/<test binary>
    let binary = exe.ancestors().nth(2).expect("profile directory").join("kubewasm");
    assert!(binary.exists(), "{} is missing: run `cargo build -p kubewasm` first", binary.display());
    binary
}

/// A kubeconfig (its text) of the host's service account on `cluster`, once the account and
/// the RBAC `kubewasm rbac --plugins` prints for `plugins` (built components) are applied: a
/// bearer token of the account, as a host in a cluster would hold.
pub async fn host_kubeconfig(cluster: &DevCluster, kubewasm: &Path, plugins: &[PathBuf]) -> String {
    kubeconfig_after(cluster, kubewasm, plugins, &[]).await
}

/// Like [`host_kubeconfig`], with the RBAC `kubewasm rbac --plugin-identities` prints: an
/// account per plugin, `kubewasm-plugin-NAME` beside the host's, and a host that may only
/// impersonate them.
pub async fn host_kubeconfig_with_identities(cluster: &DevCluster, kubewasm: &Path, plugins: &[PathBuf]) -> String {
    kubeconfig_after(cluster, kubewasm, plugins, &["--plugin-identities"]).await
}

/// The host's kubeconfig once what `kubewasm rbac ARGS` prints for `plugins` is applied.
async fn kubeconfig_after(cluster: &DevCluster, kubewasm: &Path, plugins: &[PathBuf], args: &[&str]) -> String {
    let (namespace, name) = HOST_ACCOUNT;
    let manifests = rbac(kubewasm, plugins, args);
    cluster
        .apply(&format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {namespace}\n---\n{manifests}"))
        .expect("the host's RBAC applies");
    let token = cluster.service_account_token(namespace, name).await.expect("a token of the host's account");
    cluster.kubeconfig_for_token(&token)
}

/// [`host_kubeconfig`] in a file (removed when dropped), for a `kubewasm run` process's
/// `KUBECONFIG`.
pub async fn host_kubeconfig_file(cluster: &DevCluster, kubewasm: &Path, plugins: &[PathBuf]) -> tempfile::TempPath {
    let text = host_kubeconfig(cluster, kubewasm, plugins).await;
    let mut file = tempfile::NamedTempFile::new().expect("a temporary file");
    std::io::Write::write_all(&mut file, text.as_bytes()).expect("the kubeconfig is written");
    file.into_temp_path()
}

/// What `kubewasm rbac --plugins DIR ARGS` prints for a directory of `plugins`; run once
/// per plugin set, arguments and process (loading plugins takes a while).
fn rbac(kubewasm: &Path, plugins: &[PathBuf], args: &[&str]) -> String {
    type Printed = HashMap<(Vec<PathBuf>, Vec<String>), String>;
    static PRINTED: Mutex<Option<Printed>> = Mutex::new(None);
    let mut sorted = plugins.to_vec();
    sorted.sort();
    let key = (sorted, args.iter().map(ToString::to_string).collect::<Vec<_>>());
    let mut printed = PRINTED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(text) = printed.get_or_insert_with(HashMap::new).get(&key) {
        return text.clone();
    }
    let dir = std::env::temp_dir().join(format!(
        "kubewasm-rbac-{}-{}",
        std::process::id(),
        printed.as_ref().map_or(0, HashMap::len)
    ));
    std::fs::create_dir_all(&dir).expect("a plugin directory");
    for plugin in &key.0 {
        let file = plugin.file_name().expect("a plugin file");
        std::fs::copy(plugin, dir.join(file)).unwrap_or_else(|e| panic!("{}: {e}", plugin.display()));
    }
    let out =
        Command::new(kubewasm).arg("rbac").arg("--plugins").arg(&dir).args(args).output().expect("kubewasm rbac runs");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(out.status.success(), "kubewasm rbac failed: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).expect("YAML");
    printed.get_or_insert_with(HashMap::new).insert(key, text.clone());
    text
}
