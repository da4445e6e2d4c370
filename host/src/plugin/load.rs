//! Loading a plugin: check the bytes and the contract version, compile, link, count
//! what an instance takes from the pool, and describe (the load's self-test).

use std::fmt::Write as _;
use std::path::PathBuf;

use serde_json::Value;
use sha2::{Digest, Sha256};
use wasmtime::component::Component;

use super::contract::{PACKAGE, SUPPORTED_VERSIONS, Version};
use super::engine::Engine;
use super::instance::{Instance, Pre};
use super::pool::PoolSlots;
use super::sandbox::failure::{self, CallError};
use super::sandbox::limits::Limits;
use kubewasm_contract::{Manifest, ManifestError};

/// Why a file could not become a plugin. Every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    /// Not WebAssembly, or a core module rather than a component.
    #[error("{origin}: {why}")]
    NotAComponent { origin: String, why: &'static str },
    /// WebAssembly the compiler refused (malformed, or a feature the host does not enable).
    #[error("{origin}: cannot be compiled: {source:#}")]
    Compile { origin: String, source: wasmtime::Error },
    /// A component that exports no interface of the contract at all.
    #[error(
        "{origin}: not a kubewasm plugin: it does not export kubewasm:reconciler/plugin-info (its exports: {exports})"
    )]
    NotAPlugin { origin: String, exports: String },
    /// A plugin built against another version of the contract.
    #[error(
        "{origin}: built against contract kubewasm:reconciler@{found}, but this host supports {}; rebuild it with a matching kubewasm-sdk",
        supported.join(" and ")
    )]
    ContractVersion { origin: String, found: String, supported: &'static [&'static str] },
    /// One instance of the plugin needs more of the instance pool than it has: no call
    /// could ever run.
    #[error(
        "{origin}: one instance needs {need} {what}, but the host's instance pool has {have}; \
         the plugin cannot run in this host"
    )]
    TooLargeForPool { origin: String, what: &'static str, need: u32, have: u32 },
    /// What one instance needs of the pool cannot be counted.
    #[error("{origin}: cannot be pooled: {why}")]
    Unpoolable { origin: String, why: String },
    /// The plugin imports something the host does not offer (a plugin may log and send
    /// HTTP requests, nothing else).
    #[error("{origin}: cannot be linked: {source:#}")]
    Link { origin: String, source: wasmtime::Error },
    /// `describe` failed: the load self-test.
    #[error("{origin}: describe failed: {source}")]
    Describe { origin: String, source: CallError },
    /// `describe` answered, but the manifest is unusable.
    #[error("{origin}: invalid manifest: {source}")]
    InvalidManifest { origin: String, source: ManifestError },
    /// One of the manifest's CRDs is not a `CustomResourceDefinition` in YAML or JSON.
    #[error("{origin}: invalid manifest: crds[{index}]: {why}")]
    InvalidCrd { origin: String, index: usize, why: String, source: Option<serde_yaml_ng::Error> },
    /// The loading task was cancelled or panicked (the host is shutting down).
    #[error("{origin}: load interrupted: {source}")]
    Interrupted { origin: String, source: tokio::task::JoinError },
}

/// What loading made of a component's bytes.
pub(crate) struct Loaded {
    /// SHA-256 of the bytes, hex.
    pub(crate) hash: String,
    /// Whether the compiled code came from the engine's cache.
    pub(crate) cached: bool,
    pub(crate) pre: Pre,
    /// What each call's instance takes from the engine's pool.
    pub(crate) slots: PoolSlots,
    pub(crate) manifest: Manifest,
    /// The manifest's CRDs, parsed.
    pub(crate) crds: Vec<Value>,
}

/// Compiles, links and describes the component in `bytes`; `origin` names it in errors.
/// Compiling takes tens to hundreds of milliseconds: run it off the async runtime.
pub(crate) fn load(engine: &Engine, bytes: &[u8], origin: &str) -> Result<Loaded, LoadError> {
    let origin = origin.to_string();
    check_header(bytes).map_err(|why| LoadError::NotAComponent { origin: origin.clone(), why })?;
    let hash = digest(bytes);
    let (component, cached) =
        engine.compile(bytes, &hash).map_err(|source| LoadError::Compile { origin: origin.clone(), source })?;
    let version = check_contract(engine, &component, &origin)?;
    let link = |source: wasmtime::Error| LoadError::Link { origin: origin.clone(), source };
    let instance_pre = engine.linker().instantiate_pre(&component).map_err(link)?;
    let pre = Pre::new(version, instance_pre).map_err(link)?;

    // The core instances the component's sections ask for, then one more each time
    // the store's limit stops the instantiation: wasmtime adds adapter modules
    // between nested components. The instance that fits answers `describe`.
    let describe_limits = Limits::default();
    let mut slots =
        PoolSlots::of(bytes, &component).map_err(|why| LoadError::Unpoolable { origin: origin.clone(), why })?;
    let mut instance = loop {
        if let Some((what, need, have)) = engine.pool_size().and_then(|pool| slots.excess_over(pool)) {
            return Err(LoadError::TooLargeForPool { origin, what, need, have });
        }
        let mut instance = Instance::new(engine, &pre, slots, &origin, &[], describe_limits);
        match instance.instantiate() {
            Ok(()) => break instance,
            Err(e) if failure::is_instance_limit(&e) => slots.core_instances += 1,
            // Any other failure `describe` reports, instantiating afresh (this store
            // counts what the failed instantiation created).
            Err(_) => {
                drop(instance);
                break Instance::new(engine, &pre, slots, &origin, &[], describe_limits);
            }
        }
    };
    let manifest = instance.describe().map_err(|source| LoadError::Describe { origin: origin.clone(), source })?;
    drop(instance);
    manifest.check().map_err(|source| LoadError::InvalidManifest { origin: origin.clone(), source })?;
    let crds = parse_crds(&manifest.crds, &origin)?;
    Ok(Loaded { hash, cached, pre, slots, manifest, crds })
}

/// SHA-256 of `bytes`, hex: how plugin versions (and applied children) are named.
pub fn digest(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().fold(String::with_capacity(64), |mut hex, b| {
        let _ = write!(hex, "{b:02x}");
        hex
    })
}

/// Each CRD text (YAML or JSON) as a JSON object of kind `CustomResourceDefinition`.
fn parse_crds(texts: &[String], origin: &str) -> Result<Vec<Value>, LoadError> {
    let invalid = |index, why: String, source| LoadError::InvalidCrd { origin: origin.into(), index, why, source };
    texts
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let crd = serde_yaml_ng::from_str::<Value>(text)
                .map_err(|e| invalid(i, format!("not YAML or JSON: {e}"), Some(e)))?;
            if crd["kind"] == "CustomResourceDefinition" {
                Ok(crd)
            } else {
                Err(invalid(i, format!("expected kind CustomResourceDefinition, found {}", crd["kind"]), None))
            }
        })
        .collect()
}

/// Distinguishes "not WebAssembly" and "a core module" from a real component, so the
/// message says what to do.
fn check_header(bytes: &[u8]) -> Result<(), &'static str> {
    if !bytes.starts_with(b"\0asm") || bytes.len() < 8 {
        return Err("not a WebAssembly file (no \\0asm header)");
    }
    // Bytes 6..8 are the layer: 0 for a core module, 1 for a component.
    if bytes[6..8] == [0, 0] {
        return Err("a core WebAssembly module, not a component: build the plugin for the wasm32-wasip2 target");
    }
    Ok(())
}

/// The contract version the component was built against, from its exports.
fn check_contract(engine: &Engine, component: &Component, origin: &str) -> Result<Version, LoadError> {
    let ty = component.component_type();
    let exports: Vec<&str> = ty.exports(engine.wasmtime()).map(|(name, _)| name).collect();
    if let Some(version) = Version::of_exports(&exports) {
        return Ok(version);
    }
    let prefix = format!("{PACKAGE}/");
    match exports.iter().find_map(|name| name.strip_prefix(&prefix)?.split_once('@')) {
        Some((_, found)) => Err(LoadError::ContractVersion {
            origin: origin.into(),
            found: found.into(),
            supported: SUPPORTED_VERSIONS,
        }),
        None => Err(LoadError::NotAPlugin {
            origin: origin.into(),
            exports: if exports.is_empty() { "none".into() } else { exports.join(", ") },
        }),
    }
}
