//! Loading a plugin: check the bytes and the contract version, compile, link, count
//! what an instance takes from the pool, and describe (the load's self-test); and, for
//! code of the baseline compiler, the optimised code that replaces it.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock, Weak};
use std::time::Instant;

use serde_json::Value;
use sha2::{Digest, Sha256};
use wasmtime::component::Component;

use super::contract::{PACKAGE, SUPPORTED_VERSIONS, Version};
use super::development;
use super::engine::{Compiled, Engine, Tier, WeakEngine};
use super::instance::{Code, Instance};
use super::pool::PoolSlots;
use super::sandbox::failure::{self, CallError};
use super::sandbox::http::{Egress, allow};
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
    /// The code calls run: the baseline compiler's until [`optimize`] replaces it.
    code: RwLock<Arc<Code>>,
    /// What each call's instance takes from the engine's pool.
    pub(crate) slots: PoolSlots,
    pub(crate) manifest: Manifest,
    /// The manifest's CRDs, parsed.
    pub(crate) crds: Vec<Value>,
}

impl Loaded {
    /// The code a call starting now runs; a call keeps it to the end even if it is
    /// replaced meanwhile.
    pub(crate) fn code(&self) -> Arc<Code> {
        self.code.read().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

/// Compiles, links and describes the component in `bytes`; `origin` names it in errors.
/// A development component's calls read the copy of its sources' version under
/// `sources` (given by `kubewasm dev` only; other components read nothing, whatever it
/// is). Compiling takes tens to hundreds of
/// milliseconds (seconds for an interpreter's component): run it off the async runtime.
pub(crate) fn load(engine: &Engine, bytes: &[u8], origin: &str, sources: Option<&Path>) -> Result<Loaded, LoadError> {
    let origin = origin.to_string();
    check_header(bytes).map_err(|why| LoadError::NotAComponent { origin: origin.clone(), why })?;
    let hash = digest(bytes);
    let (code_bytes, code_hash, version) = code_of(bytes, &hash);
    let sources = sources.zip(version).and_then(|(copies, version)| development::sources(copies, version));
    let compiled = match version {
        Some(_) => engine.compile_kept(&code_bytes, &code_hash),
        None => engine.compile(&code_bytes, &code_hash),
    };
    let Compiled { component, tier, cached } =
        compiled.map_err(|source| LoadError::Compile { origin: origin.clone(), source })?;
    let version = check_contract(engine, &component, &origin)?;
    let code = Arc::new(
        Code::link(engine, &component, tier, version)
            .map_err(|source| LoadError::Link { origin: origin.clone(), source })?
            .reading(sources.map(Arc::from)),
    );
    let slots =
        PoolSlots::of(&code_bytes, &component).map_err(|why| LoadError::Unpoolable { origin: origin.clone(), why })?;
    let (manifest, slots) = describe(engine, &code, slots, &origin)?;
    manifest.check().map_err(|source| LoadError::InvalidManifest { origin: origin.clone(), source })?;
    if let Err(e) = allow::parse_all(&manifest.outbound) {
        let source = ManifestError(format!("outbound: {e}"));
        return Err(LoadError::InvalidManifest { origin: origin.clone(), source });
    }
    let crds = parse_crds(&manifest.crds, &origin)?;
    Ok(Loaded { hash, cached, code: RwLock::new(code), slots, manifest, crds })
}

/// The manifest `code` describes itself with, and what one instance of it takes from
/// the pool: `slots` counted from the component's sections, then one more core
/// instance each time the store's limit stops the instantiation (wasmtime adds adapter
/// modules between nested components). The instance that fits answers `describe`.
fn describe(
    engine: &Engine,
    code: &Arc<Code>,
    mut slots: PoolSlots,
    origin: &str,
) -> Result<(Manifest, PoolSlots), LoadError> {
    let describe_limits = Limits::default();
    let no_network = Arc::new(Egress::denied(origin));
    let mut instance = loop {
        if let Some((what, need, have)) = engine.pool_size().and_then(|pool| slots.excess_over(pool)) {
            return Err(LoadError::TooLargeForPool { origin: origin.into(), what, need, have });
        }
        let mut instance = Instance::new(engine, code.clone(), slots, origin, &[], describe_limits, no_network.clone());
        match instance.instantiate() {
            Ok(()) => break instance,
            Err(e) if failure::is_instance_limit(&e) => slots.core_instances += 1,
            // Any other failure `describe` reports, instantiating afresh (this store
            // counts what the failed instantiation created).
            Err(_) => {
                drop(instance);
                break Instance::new(engine, code.clone(), slots, origin, &[], describe_limits, no_network);
            }
        }
    };
    let manifest = instance.describe().map_err(|source| LoadError::Describe { origin: origin.into(), source })?;
    Ok((manifest, slots))
}

/// Replaces the baseline code of `loaded` (compiled from `bytes`) with the optimising
/// compiler's, once that describes itself as the baseline code did; the optimised code
/// is cached either way. Calls in flight finish on the code they started with. Does
/// nothing when the version was dropped (a newer one replaced it) or the engine is
/// gone before its turn: a background job, run by [`Plugin::from_bytes`](super::Plugin::from_bytes).
pub(crate) fn optimize(engine: &WeakEngine, loaded: &Weak<Loaded>, bytes: &[u8], origin: &str) {
    let Some(engine) = engine.upgrade() else { return };
    let Some((hash, version, sources)) = loaded.upgrade().map(|l| {
        let code = l.code();
        (l.hash.clone(), code.pre.version(), code.sources.clone())
    }) else {
        return;
    };
    let (bytes, hash, _) = code_of(bytes, &hash);
    let started = Instant::now();
    let compiled = engine
        .compile_optimized(&bytes, &hash)
        .and_then(|component| Code::link(&engine, &component, Tier::Optimized, version))
        .map(|code| Arc::new(code.reading(sources)));
    let Some(loaded) = loaded.upgrade() else { return };
    let result = match compiled {
        Ok(code) => describe(&engine, &code, loaded.slots, origin).map(|(manifest, _)| (code, manifest)),
        Err(source) => Err(LoadError::Compile { origin: origin.into(), source }),
    };
    match result {
        Ok((code, manifest)) if manifest == loaded.manifest => {
            *loaded.code.write().unwrap_or_else(PoisonError::into_inner) = code;
            tracing::debug!(plugin = %manifest.name, elapsed = ?started.elapsed(), "optimised code in place");
        }
        Ok((_, manifest)) => tracing::warn!(
            plugin = %manifest.name,
            "the optimised code describes the plugin otherwise than the baseline code; the baseline code stays"
        ),
        Err(e) => tracing::warn!("optimising failed, the baseline code stays: {e}"),
    }
}

/// The code to compile of the component in `bytes` (whose digest is `hash`), its digest
/// (what the compiled code is cached by), and, for a development component, the version
/// of the sources it reads: then the code is the component without its mark, the same
/// for every version of the sources, so that it compiles once.
fn code_of<'a>(bytes: &'a [u8], hash: &str) -> (Cow<'a, [u8]>, String, Option<&'a str>) {
    match development::split(bytes) {
        Some((code, version)) => {
            let hash = digest(&code);
            (Cow::Owned(code), hash, Some(version))
        }
        None => (Cow::Borrowed(bytes), hash.to_string(), None),
    }
}

/// SHA-256 of `bytes`, hex: how plugin versions (and applied children) are named.
pub fn digest(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Lowercase hex, as digests and log ids are written.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::with_capacity(2 * bytes.len()), |mut hex, b| {
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
