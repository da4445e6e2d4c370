//! The generated files in the repository are what the generator makes of today's
//! `wit/` and API server data.

use std::path::Path;

#[test]
fn every_generated_file_is_current() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let generated = kubewasm_codegen::generate(&root).unwrap_or_else(|e| panic!("{e}"));
    assert!(generated.len() >= 8, "the Go bindings and four kind lists");
    let stale: Vec<String> =
        kubewasm_codegen::stale(&root, &generated).iter().map(|g| g.path.display().to_string()).collect();
    assert!(
        stale.is_empty(),
        "generated files are not current: {}; run `{}` and commit the result",
        stale.join(", "),
        kubewasm_codegen::REGENERATE
    );
}
