//! What kubewasm generates, and from what: the Go SDK's canonical ABI layer from the
//! contract (`wit/`), and every SDK's list of built-in kinds from the API server's
//! upstream data (`host/devcluster/data/resources.json`).
//!
//! `cargo run -p kubewasm-codegen` writes the files; this crate's test regenerates them
//! in memory and fails, naming each file that is not current, so CI refuses a change to
//! `wit/` or to the data whose generated files were not refreshed. (The JavaScript SDK's
//! `.d.ts` files of the contract come from jco's own type generation: `make js-plugins`
//! checks them.)

#![warn(clippy::pedantic)]
// Generators return the text they make; a caller that drops it has nothing to forget.
#![allow(clippy::must_use_candidate)]

pub mod go;
pub mod kinds;

use std::path::{Path, PathBuf};

use wit_parser::Resolve;

/// The command that refreshes every generated file.
pub const REGENERATE: &str = "cargo run -p kubewasm-codegen";

/// The contract, the world the SDKs implement, and the data of the built-in kinds,
/// relative to the repository.
const WIT: &str = "wit";
const WORLD: &str = "plugin";
const RESOURCES: &str = "host/devcluster/data/resources.json";
/// A world of every shape the Go bindings support, for the Go SDK's test of them.
const ABI_TEST_WIT: &str = "wit/codegen/tests/abi";
const ABI_TEST_WORLD: &str = "shapes";

/// One generated file: where it goes, relative to the repository, and its text.
#[derive(Debug)]
pub struct Generated {
    pub path: PathBuf,
    pub text: String,
}

/// Why nothing was generated.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    /// WIT that does not parse or resolve.
    #[error("{}: {reason}", path.display())]
    Wit { path: PathBuf, reason: String },
    /// A type or function the Go bindings cannot express.
    #[error("{}: {source}", path.display())]
    Go { path: PathBuf, source: go::Unsupported },
    /// `resources.json` not as upstream writes it.
    #[error("{}: {reason}", path.display())]
    Resources { path: PathBuf, reason: String },
}

/// Every generated file of the repository at `root`.
///
/// # Errors
///
/// [`Error`] naming the input that could not be read or used.
pub fn generate(root: &Path) -> Result<Vec<Generated>, Error> {
    let mut out = Vec::new();
    for (wit, world, package, dir) in [
        (WIT, WORLD, "wire", "guest-sdk/go/internal/wire"),
        (ABI_TEST_WIT, ABI_TEST_WORLD, "shapes", "guest-sdk/go/internal/cabi/shapes"),
    ] {
        let files = go_bindings(&root.join(wit), world, package, &format!("{wit}/"))?;
        let stem = if package == "wire" { "reconciler" } else { package };
        out.push(Generated { path: Path::new(dir).join(format!("{stem}_gen.go")), text: files.portable });
        out.push(Generated { path: Path::new(dir).join(format!("{stem}_gen_wasip1.go")), text: files.wasip1 });
    }

    let path = root.join(RESOURCES);
    let text = std::fs::read_to_string(&path).map_err(|source| Error::Read { path: path.clone(), source })?;
    let kinds = kinds::parse(&text).map_err(|reason| Error::Resources { path, reason })?;
    out.push(Generated { path: "guest-sdk/python/kubewasm/kinds.py".into(), text: kinds::python(&kinds) });
    out.push(Generated { path: "guest-sdk/js/src/builtin-kinds.js".into(), text: kinds::javascript(&kinds) });
    out.push(Generated { path: "guest-sdk/js/src/builtin-kinds.d.ts".into(), text: kinds::typescript(&kinds) });
    out.push(Generated { path: "guest-sdk/go/kinds/kinds.go".into(), text: kinds::go(&kinds) });
    Ok(out)
}

fn go_bindings(dir: &Path, world: &str, package: &str, source: &str) -> Result<go::GoFiles, Error> {
    let mut resolve = Resolve::default();
    let (pkg, _) = resolve.push_dir(dir).map_err(|e| wit_error(dir, &e))?;
    let world = resolve.select_world(&[pkg], Some(world)).map_err(|e| wit_error(dir, &e))?;
    go::generate(&resolve, world, package, source).map_err(|source| Error::Go { path: dir.to_path_buf(), source })
}

/// WIT that does not parse or resolve, with every cause.
fn wit_error(dir: &Path, e: &dyn std::fmt::Display) -> Error {
    Error::Wit { path: dir.to_path_buf(), reason: format!("{e:#}") }
}

/// The files of `generated` whose text differs from the repository's at `root` (or that
/// are missing).
pub fn stale<'a>(root: &Path, generated: &'a [Generated]) -> Vec<&'a Generated> {
    generated.iter().filter(|g| std::fs::read_to_string(root.join(&g.path)).ok().as_deref() != Some(&g.text)).collect()
}
