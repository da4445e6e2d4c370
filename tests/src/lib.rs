//! What the end-to-end test binaries share. The tests themselves live in `tests/`.

use std::sync::Once;
use std::time::Duration;

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
