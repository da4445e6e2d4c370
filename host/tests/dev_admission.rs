//! `kubewasm dev` with a plugin that admits and converts, used through kubectl: the host
//! serves the plugin's webhooks on loopback HTTPS and registers them with the embedded API
//! server as `kubewasm run` registers them in a cluster, so a denied `kubectl apply`, a
//! defaulted object and a read in another version behave as they would there.

#[allow(dead_code)] // shared with the tests that start `kubewasm` processes, which use all of it
mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

const PATIENCE: Duration = Duration::from_secs(60);

/// `kubewasm dev` on a plugin directory, its stderr kept for failures.
struct Dev {
    child: Child,
    stderr: Arc<Mutex<String>>,
    kubeconfig: PathBuf,
}

impl Dev {
    fn start(plugins: &Path, kubeconfig: &Path) -> Dev {
        let (child, stderr) = common::spawn_collecting_stderr(&mut common::kubewasm_dev(plugins, kubeconfig));
        Dev { child, stderr, kubeconfig: kubeconfig.to_path_buf() }
    }

    fn kubectl(&self, args: &[&str], stdin: &str) -> Output {
        let mut child = Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(self.kubeconfig.with_extension("kubectl-cache"))
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("kubectl runs");
        child.stdin.take().expect("stdin").write_all(stdin.as_bytes()).expect("write stdin");
        child.wait_with_output().expect("kubectl finishes")
    }

    /// Waits until `check` holds, failing with what `kubewasm dev` printed.
    fn until(&self, what: &str, mut check: impl FnMut() -> bool) {
        let started = Instant::now();
        while !check() {
            let said = self.stderr.lock().expect("stderr").clone();
            assert!(started.elapsed() < PATIENCE, "gave up waiting for {what}; kubewasm dev said:\n{said}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Dev {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        let _ = self.child.wait();
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

const FORBIDDEN: &str =
    "apiVersion: test.kubewasm.io/v1\nkind: Widget\nmetadata:\n  name: forbidden-one\n  namespace: default\nspec: {}\n";
const PLAIN: &str = "apiVersion: test.kubewasm.io/v1\nkind: Widget\nmetadata:\n  name: plain\n  namespace: default\nspec:\n  size: large\n";

#[test]
fn kubectl_sees_the_plugins_verdicts_defaults_and_conversion_through_kubewasm_dev() {
    let base = common::target_dir().join("dev-admission-test");
    let _ = std::fs::remove_dir_all(&base);
    let plugins = base.join("plugins");
    std::fs::create_dir_all(&plugins).expect("plugin dir");
    let admit = common::target_dir().join("fixtures/admit.wasm");
    assert!(admit.exists(), "{} is missing: run `make plugins` first", admit.display());
    std::fs::copy(&admit, plugins.join("admit.wasm")).expect("copy the plugin");
    let kubeconfig = base.join("kubeconfig");
    let dev = Dev::start(&plugins, &kubeconfig);
    dev.until("the kubeconfig", || kubeconfig.exists());
    dev.until("the plugin's webhooks registered", || {
        let got = dev.kubectl(&["get", "validatingwebhookconfiguration", "kubewasm", "-o", "name"], "");
        got.status.success()
    });

    let denied = dev.kubectl(&["apply", "-f", "-"], FORBIDDEN);
    assert!(!denied.status.success(), "applied: {}", text(&denied.stdout));
    assert!(
        text(&denied.stderr).contains(
            "admission webhook \"admit.kubewasm.io\" denied the request: widgets named forbidden-* are not allowed"
        ),
        "{}",
        text(&denied.stderr)
    );

    let applied = dev.kubectl(&["apply", "-f", "-"], PLAIN);
    assert!(applied.status.success(), "{}", text(&applied.stderr));
    let got = dev.kubectl(&["get", "widgets.v1.test.kubewasm.io", "plain", "-o", "json"], "");
    let v1: Value = serde_json::from_slice(&got.stdout).expect("JSON");
    assert_eq!(v1["spec"], serde_json::json!({"size": "large", "replicas": 1, "color": "blue"}), "defaulted");
    let got = dev.kubectl(&["get", "widgets.v2.test.kubewasm.io", "plain", "-o", "json"], "");
    let v2: Value = serde_json::from_slice(&got.stdout).expect("JSON");
    assert_eq!(v2["apiVersion"], "test.kubewasm.io/v2");
    assert_eq!(v2["spec"]["size"], serde_json::json!({"name": "large"}), "converted by the plugin");
}
