//! `kubewasm dev` with a plugin that admits and converts, used through kubectl: the host
//! serves the plugin's webhooks on loopback HTTPS and registers them with the embedded API
//! server as `kubewasm run` registers them in a cluster, so a denied `kubectl apply`, a
//! defaulted object and a read in another version behave as they would there.

#[allow(dead_code)] // shared with the tests that start `kubewasm` processes, which use all of it
mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
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
        common::kubectl(&self.kubeconfig, args, stdin)
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

/// `kubewasm dev` on a directory holding `plugin` (from `folder` of the target directory),
/// once it has registered the plugin's webhooks.
fn dev_with(folder: &str, plugin: &str) -> Dev {
    let base = common::target_dir().join(format!("dev-admission-test-{plugin}"));
    let _ = std::fs::remove_dir_all(&base);
    let plugins = base.join("plugins");
    std::fs::create_dir_all(&plugins).expect("plugin dir");
    let wasm = common::target_dir().join(folder).join(format!("{plugin}.wasm"));
    assert!(wasm.exists(), "{} is missing: run `make plugins` first", wasm.display());
    std::fs::copy(&wasm, plugins.join(format!("{plugin}.wasm"))).expect("copy the plugin");
    let kubeconfig = base.join("kubeconfig");
    let dev = Dev::start(&plugins, &kubeconfig);
    dev.until("the kubeconfig", || kubeconfig.exists());
    dev.until("the plugin's webhooks registered", || {
        let got = dev.kubectl(&["get", "validatingwebhookconfiguration", "kubewasm", "-o", "name"], "");
        got.status.success()
    });
    dev
}

#[test]
fn kubectl_sees_the_plugins_verdicts_defaults_and_conversion_through_kubewasm_dev() {
    let dev = dev_with("fixtures", "admit");

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

/// The Kubebuilder tutorial's CronJob as `plugins/cronjob` ships it: its examples applied.
#[test]
fn the_cronjob_examples_are_denied_and_defaulted_as_in_the_kubebuilder_tutorial() {
    cronjob_examples_through_kubewasm_dev("cronjob");
}

/// The same CronJob written in TypeScript (`plugins/cronjob-ts`): the same webhooks,
/// through the same host path.
#[test]
fn the_typescript_cronjob_denies_defaults_and_converts_as_the_rust_one() {
    cronjob_examples_through_kubewasm_dev("cronjob-ts");
}

fn cronjob_examples_through_kubewasm_dev(plugin: &str) {
    let dev = dev_with("fixtures", plugin);
    let example = |name: &str| {
        let path = common::workspace().join("plugins/cronjob/examples").join(name);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    };

    let denied = dev.kubectl(&["apply", "-f", "-"], &example("invalid.yaml"));
    assert!(!denied.status.success(), "applied: {}", text(&denied.stdout));
    let name = "a-cronjob-whose-name-is-far-too-long-for-the-names-of-its-jobs";
    // kubectl shows a 422's causes, as it shows the tutorial's validator's.
    assert_eq!(
        text(&denied.stderr).trim_end(),
        format!(
            "The CronJob \"{name}\" is invalid: \n\
             * metadata.name: Invalid value: \"{name}\": must be no more than 52 characters\n\
             * spec.schedule: Invalid value: \"invalid-cron-schedule\": Expected exactly 5 fields, found 1: invalid-cron-schedule"
        )
    );

    let applied = dev.kubectl(&["apply", "-f", "-"], &example("defaulted.yaml"));
    assert!(applied.status.success(), "{}", text(&applied.stderr));
    let got = dev.kubectl(&["get", "cronjobs.v1.batch.tutorial.kubebuilder.io", "cronjob-sample", "-o", "json"], "");
    let v1: Value = serde_json::from_slice(&got.stdout).expect("JSON");
    let spec = &v1["spec"];
    assert_eq!(
        (
            &spec["concurrencyPolicy"],
            &spec["suspend"],
            &spec["successfulJobsHistoryLimit"],
            &spec["failedJobsHistoryLimit"]
        ),
        (&serde_json::json!("Allow"), &serde_json::json!(false), &serde_json::json!(3), &serde_json::json!(1)),
        "the tutorial's defaults: {spec}"
    );
    let got = dev.kubectl(&["get", "cronjobs.v2.batch.tutorial.kubebuilder.io", "cronjob-sample", "-o", "json"], "");
    let v2: Value = serde_json::from_slice(&got.stdout).expect("JSON");
    assert_eq!(v2["spec"]["schedule"], serde_json::json!({"minute": "*/1"}), "v2's schedule, converted");
}
