//! `cargo run -p kubewasm-codegen`: rewrites the repository's generated files (the Go
//! SDK's ABI layer, every SDK's list of built-in kinds) from `wit/` and the API server's
//! data, and says which changed.

use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    // The repository: two levels above this crate (wit/codegen).
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let generated = match kubewasm_codegen::generate(&root) {
        Ok(generated) => generated,
        Err(e) => {
            eprintln!("kubewasm-codegen: {e}");
            return ExitCode::FAILURE;
        }
    };
    let stale = kubewasm_codegen::stale(&root, &generated);
    for file in &stale {
        let path = root.join(&file.path);
        if let Err(e) =
            path.parent().map_or(Ok(()), std::fs::create_dir_all).and_then(|()| std::fs::write(&path, &file.text))
        {
            eprintln!("kubewasm-codegen: {}: {e}", file.path.display());
            return ExitCode::FAILURE;
        }
        println!("wrote {}", file.path.display());
    }
    println!("{} generated files, {} rewritten", generated.len(), stale.len());
    ExitCode::SUCCESS
}
