//! A Rust plugin built with cargo for the development loop: the `plugin-dev` profile
//! (the crate at opt-level 1 in many incrementally compiled units, no LTO, no debug
//! info; its dependencies optimised once), which rebuilds in about half a second where
//! the shipping `plugin` profile's LTO takes tens of seconds, into a component of about
//! the same size. Errors and the component's path come from cargo's JSON messages.

use std::path::Path;

use cargo_metadata::diagnostic::{Diagnostic, DiagnosticLevel};
use cargo_metadata::{Message, Metadata, TargetKind};
use tokio::process::Command;

use super::{Error, first_or_last_line};

/// The profile `kubewasm dev` builds Rust plugins with.
pub const PROFILE: &str = "plugin-dev";

/// `[profile.plugin-dev]` as `kubewasm new` writes it, given to cargo on its command
/// line for a crate whose workspace does not define it.
const PROFILE_SETTINGS: &[(&str, &str)] = &[
    ("inherits", "\"dev\""),
    ("opt-level", "1"),
    ("debug", "0"),
    ("strip", "\"debuginfo\""),
    ("incremental", "true"),
    ("codegen-units", "256"),
    ("lto", "false"),
    ("package.\"*\".opt-level", "3"),
    ("package.\"*\".debug", "0"),
];

/// Builds the crate in `dir`; returns its component's bytes.
pub async fn build(dir: &Path) -> Result<Vec<u8>, Error> {
    let metadata = metadata(dir).await?;
    let manifest = dir.join("Cargo.toml");
    let layout = |why: &str| Error::Layout { dir: dir.to_path_buf(), why: why.to_string() };
    let package = metadata
        .packages
        .iter()
        .find(|p| p.manifest_path.as_std_path() == manifest)
        .ok_or_else(|| layout("Cargo.toml declares no package (a workspace of several plugins? watch each one)"))?;
    let lib = package
        .targets
        .iter()
        .find(|t| t.is_kind(TargetKind::CDyLib))
        .ok_or_else(|| layout("not a component: its [lib] needs crate-type = [\"cdylib\", \"rlib\"]"))?;

    let mut command = cargo();
    command.args([
        "build",
        "--target",
        "wasm32-wasip2",
        "--profile",
        PROFILE,
        "--message-format=json",
        "--color=never",
    ]);
    command.arg("-p").arg(format!("{}@{}", package.name, package.version));
    if !defines_profile(metadata.workspace_root.as_std_path()) {
        for (key, value) in PROFILE_SETTINGS {
            command.arg("--config").arg(format!("profile.{PROFILE}.{key}={value}"));
        }
    }
    // Incremental compilation is what makes a rebuild take half a second rather than
    // fifteen: on, whatever the environment says.
    command.env("CARGO_INCREMENTAL", "1").current_dir(dir).kill_on_drop(true);
    let output = command.output().await.map_err(no_cargo)?;

    let (mut errors, mut component) = (Vec::new(), None);
    for message in Message::parse_stream(&output.stdout[..]).flatten() {
        match message {
            Message::CompilerMessage(m) if matches!(m.message.level, DiagnosticLevel::Error | DiagnosticLevel::Ice) => {
                errors.push(m.message);
            }
            Message::CompilerArtifact(a) if a.package_id == package.id && a.target.name == lib.name => {
                component = a.filenames.into_iter().find(|f| f.extension() == Some("wasm"));
            }
            _ => {}
        }
    }
    match component {
        Some(path) if output.status.success() => {
            std::fs::read(&path).map_err(|source| Error::Io { path: path.into_std_path_buf(), source })
        }
        _ => Err(failure(&errors, &String::from_utf8_lossy(&output.stderr))),
    }
}

/// The first error, located (`src/lib.rs:12:5: error[E0425]: cannot find value ...`),
/// and everything rustc and cargo said; cargo's own errors (a manifest it cannot
/// read, a dependency it cannot find) come on stderr.
fn failure(errors: &[Diagnostic], stderr: &str) -> Error {
    let rendered: String = errors.iter().filter_map(|d| d.rendered.as_deref()).collect();
    let summary = match errors.first() {
        Some(first) => {
            let code = first.code.as_ref().map(|c| format!("[{}]", c.code)).unwrap_or_default();
            match first.spans.iter().find(|s| s.is_primary) {
                Some(at) => {
                    format!("{}:{}:{}: error{code}: {}", at.file_name, at.line_start, at.column_start, first.message)
                }
                None => format!("error{code}: {}", first.message),
            }
        }
        None => first_or_last_line(stderr, |l| l.starts_with("error")),
    };
    Error::Failed { summary, output: format!("{rendered}{stderr}") }
}

/// What cargo knows of the crate in `dir` and its workspace, without dependencies.
async fn metadata(dir: &Path) -> Result<Metadata, Error> {
    let output = cargo()
        .args(["metadata", "--format-version", "1", "--no-deps", "--color=never"])
        .current_dir(dir)
        .kill_on_drop(true)
        .output()
        .await
        .map_err(no_cargo)?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        return Err(Error::Failed { summary: first_or_last_line(&stderr, |l| l.starts_with("error")), output: stderr });
    }
    serde_json::from_slice(&output.stdout).map_err(|e| Error::Layout {
        dir: dir.to_path_buf(),
        why: format!("cargo metadata said what cannot be read: {e}"),
    })
}

/// Whether the workspace at `root` defines `[profile.plugin-dev]` itself.
fn defines_profile(root: &Path) -> bool {
    std::fs::read_to_string(root.join("Cargo.toml"))
        .ok()
        .and_then(|text| text.parse::<toml::Table>().ok())
        .is_some_and(|manifest| manifest.get("profile").and_then(|p| p.get(PROFILE)).is_some())
}

/// cargo: the one that runs `kubewasm` when cargo does (`CARGO`), else the one on the PATH.
fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

fn no_cargo(source: std::io::Error) -> Error {
    Error::NoTool { tool: "cargo".into(), hint: "install Rust (rustup.rs) to build Rust plugins".into(), source }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn diagnostic(json: serde_json::Value) -> Diagnostic {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn a_failure_is_summed_up_by_its_first_error_where_it_is() {
        let first = diagnostic(serde_json::json!({
            "message": "mismatched types", "code": {"code": "E0308", "explanation": null}, "level": "error",
            "spans": [{"file_name": "src/lib.rs", "byte_start": 10, "byte_end": 12, "line_start": 133, "line_end": 133,
                       "column_start": 9, "column_end": 11, "is_primary": true, "text": [], "label": null,
                       "suggested_replacement": null, "suggestion_applicability": null, "expansion": null}],
            "children": [], "rendered": "error[E0308]: mismatched types\n --> src/lib.rs:133:9\n"}));
        let second = diagnostic(serde_json::json!({
            "message": "aborting", "code": null, "level": "error", "spans": [], "children": [], "rendered": "error: aborting\n"}));
        let e = failure(&[first, second], "error: could not compile `hello`\n");
        assert_eq!(e.to_string(), "src/lib.rs:133:9: error[E0308]: mismatched types");
        assert!(
            e.output().contains("--> src/lib.rs:133:9") && e.output().contains("could not compile"),
            "{}",
            e.output()
        );
    }

    #[test]
    fn cargos_own_error_sums_up_a_failure_without_a_compiler_error() {
        let stderr =
            "    Updating crates.io index\nerror: failed to parse manifest at `/p/Cargo.toml`\n\nCaused by:\n  ...\n";
        assert_eq!(failure(&[], stderr).to_string(), "error: failed to parse manifest at `/p/Cargo.toml`");
    }

    #[test]
    fn the_profile_is_given_on_the_command_line_only_where_the_workspace_lacks_it() {
        let dir = std::env::temp_dir().join(format!("kubewasm-profile-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("Cargo.toml"), "[package]\nname = \"x\"\n").unwrap();
        assert!(!defines_profile(&dir));
        std::fs::write(dir.join("Cargo.toml"), "[package]\nname = \"x\"\n[profile.plugin-dev]\ninherits = \"dev\"\n")
            .unwrap();
        assert!(defines_profile(&dir));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
