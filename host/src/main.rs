//! The `kubewasm` binary: parses the command line and wires the library together.

mod cli;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Parser;
use kubewasm::plugin::{CONTRACT_VERSION, Engine, Plugin};
use kubewasm::render::{self, Inputs};
use serde_json::{Value, json};

use cli::{Cli, Command};

fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<()> {
    let engine = Engine::new().map_err(|e| anyhow::anyhow!("cannot start the WebAssembly engine: {e:#}"))?;
    match cli.command {
        Command::Describe { plugin } => {
            let plugin = Plugin::load(&engine, &plugin)?;
            print!("{}", serde_yaml_ng::to_string(&describe(&plugin)?)?);
        }
        Command::Render { plugin, parent, observed, related, config, now } => {
            let plugin = Plugin::load(&engine, &plugin)?;
            let now = now.unwrap_or_else(|| jiff::Timestamp::now().to_string());
            let rendered = render::render(&plugin, &Inputs { parent, observed, related, config }, &now)?;
            for note in &rendered.notes {
                eprintln!("note: {note}");
            }
            print!("{}", rendered.to_yaml()?);
        }
        Command::Crds { plugins, dir } => {
            let mut files = plugins;
            if let Some(dir) = dir {
                files.extend(wasm_files(&dir)?);
            }
            anyhow::ensure!(!files.is_empty(), "name plugin files or a directory with --plugins DIR");
            for file in files {
                let plugin = Plugin::load(&engine, &file)?;
                let crds = plugin.manifest().crd_objects().map_err(anyhow::Error::msg)?;
                for crd in crds {
                    print!("---\n{}", serde_yaml_ng::to_string(&crd)?);
                }
            }
        }
    }
    Ok(())
}

/// The manifest as `kubewasm describe` shows it: CRDs by name, not in full.
fn describe(plugin: &Plugin) -> Result<Value> {
    let m = plugin.manifest();
    let mut out = serde_json::to_value(m)?;
    out["contract"] = json!(format!("kubewasm:reconciler@{CONTRACT_VERSION}"));
    out["sha256"] = json!(plugin.hash());
    out["fieldManager"] = json!(m.field_manager());
    let crds = m.crd_objects().map_err(anyhow::Error::msg)?;
    out["crds"] = crds.iter().map(|c| c["metadata"]["name"].clone()).collect();
    Ok(out)
}

fn wasm_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("{}", dir.display()))? {
        let path = entry.with_context(|| format!("{}", dir.display()))?.path();
        if path.extension().is_some_and(|e| e == "wasm") {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}
