//! What the end-to-end test binaries share (and the host's own tests that run the binary):
//! the watchdog, the identity the host runs as, and CRDs of kinds of their own. The tests
//! themselves live in `tests/`.

mod crd;
mod identity;

use std::future::Future;
use std::path::PathBuf;
use std::sync::Once;
use std::time::Duration;

pub use crd::crd;
pub use identity::{
    HOST_ACCOUNT, host_kubeconfig, host_kubeconfig_file, host_kubeconfig_with_identities, kubewasm_binary,
};

/// The longest a test binary may run before it is ended.
pub const TEST_BINARY_LIMIT: Duration = Duration::from_secs(600);

/// Ends the test process once it has run for [`TEST_BINARY_LIMIT`]: a hung test
/// must fail the run quickly, with a message, rather than hold CI until its own
/// time limit. Call it from every test's setup; it starts once per process.
pub fn watchdog() {
    static START: Once = Once::new();
    START.call_once(|| {
        std::thread::spawn(|| {
            std::thread::sleep(TEST_BINARY_LIMIT);
            eprintln!("test binary still running after {TEST_BINARY_LIMIT:?}: a test hangs; ending the run");
            std::process::exit(101);
        });
    });
}

/// Polls `check` until it returns `Some`, or fails the test naming `what` once
/// `patience` has passed.
pub async fn eventually_within<T, F, Fut>(patience: Duration, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + patience;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(tokio::time::Instant::now() < deadline, "timed out after {patience:?} waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// One `#[tokio::test]` per behaviour and build of a plugin: a module per language, each
/// test calling `super::TEST("PLUGIN")`, the name of the build's component.
///
/// ```ignore
/// kubewasm_tests::for_each_plugin!(
///     [(rust, "demo-application", "The Rust plugin."), (go, "demo-application-go", "Its Go port.")],
///     (converges, survives_a_restart)
/// );
/// ```
#[macro_export]
macro_rules! for_each_plugin {
    ([$(($module:ident, $plugin:literal, $doc:literal)),+ $(,)?], $tests:tt) => {
        $($crate::for_each_plugin!(@language $module, $plugin, $doc, $tests);)+
    };
    (@language $module:ident, $plugin:literal, $doc:literal, ($($test:ident),* $(,)?)) => {
        #[doc = $doc]
        mod $module {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $test() {
                super::$test($plugin).await;
            })*
        }
    };
}

/// The target directory of this test binary.
pub fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    // <target>/<profile>/deps/<test binary>
    exe.ancestors().nth(3).expect("target directory").to_path_buf()
}

/// The built component of an example plugin or a fixture (`target/plugins` or
/// `target/fixtures`); a missing one names the `make` target that builds it.
pub fn wasm_path(name: &str) -> PathBuf {
    let target = target_dir();
    [target.join("plugins"), target.join("fixtures")]
        .into_iter()
        .map(|dir| dir.join(format!("{name}.wasm")))
        .find(|p| p.exists())
        .unwrap_or_else(|| {
            let make = if name.ends_with("-python") || name.starts_with("python-") {
                "make python-plugins"
            } else if name.ends_with("-js")
                || name.ends_with("-ts")
                || name.starts_with("js-")
                || name.starts_with("ts-")
            {
                "make js-plugins"
            } else if name.ends_with("-go") || name.starts_with("go-") {
                "make go-plugins"
            } else {
                "make plugins"
            };
            panic!("{name}.wasm is missing under {}: run `{make}` first", target.display())
        })
}
