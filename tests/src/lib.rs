//! What the end-to-end test binaries share (and the host's own tests that run the binary):
//! the watchdog, and the identity the host runs as. The tests themselves live in `tests/`.

mod identity;

use std::sync::Once;
use std::time::Duration;

pub use identity::{HOST_ACCOUNT, host_kubeconfig, host_kubeconfig_file, kubewasm_binary};

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
