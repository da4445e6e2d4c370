//! What the benchmarks share: where the built plugins are.

use std::path::PathBuf;

/// `<target>/<folder>/<name>.wasm`, as `make plugins` leaves it (`folder`: `plugins`
/// for the examples, `fixtures` for the test fixtures).
pub fn wasm(folder: &str, name: &str) -> PathBuf {
    built(folder, name).unwrap_or_else(|| panic!("{folder}/{name}.wasm is missing: run `make plugins` first"))
}

/// `<target>/<folder>/<name>.wasm` if it was built.
pub fn built(folder: &str, name: &str) -> Option<PathBuf> {
    let exe = std::env::current_exe().expect("bench binary path");
    // <target>/<profile>/deps/<bench binary>
    let target = exe.ancestors().nth(3).expect("target directory");
    let path = target.join(folder).join(format!("{name}.wasm"));
    path.exists().then_some(path)
}

/// `KUBEWASM_BENCH_PLUGIN` when set (a copy kept apart from a target directory that
/// other builds also write to), otherwise the built `demo-application`.
pub fn demo_application_wasm() -> PathBuf {
    std::env::var_os("KUBEWASM_BENCH_PLUGIN").map_or_else(|| wasm("plugins", "demo-application"), PathBuf::from)
}
