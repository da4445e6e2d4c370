//! What the benchmarks share: where the built `demo-application` plugin is.

use std::path::PathBuf;

/// `KUBEWASM_BENCH_PLUGIN` when set (a copy kept apart from a target directory that
/// other builds also write to), otherwise `<target>/plugins/demo-application.wasm`
/// as `make plugins` leaves it.
pub fn demo_application_wasm() -> PathBuf {
    let path = std::env::var_os("KUBEWASM_BENCH_PLUGIN").map_or_else(
        || {
            let exe = std::env::current_exe().expect("bench binary path");
            // <target>/<profile>/deps/<bench binary>
            exe.ancestors().nth(3).expect("target directory").join("plugins/demo-application.wasm")
        },
        PathBuf::from,
    );
    assert!(path.exists(), "{} is missing: run `make plugins` first", path.display());
    path
}
