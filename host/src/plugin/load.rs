//! Loading a plugin: read, check the contract version, compile, link, describe.

use std::path::{Path, PathBuf};

use serde_json::Value;
use wasmtime::component::Component;

use super::contract::{CONTRACT_VERSION, EXPORT_PREFIX, MalformedAnswer, bindings, wit};
use super::engine::Engine;
use super::pool::{Permit, PoolSlots};
use super::sandbox::{self, CallError, CallState, Limits};
use kubewasm_contract::{KindRef, Manifest, ManifestError, Query, Request, Response};

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
    /// A component that does not export the reconciler interface at all.
    #[error(
        "{origin}: not a kubewasm plugin: it does not export kubewasm:reconciler/reconciler (its exports: {exports})"
    )]
    NotAPlugin { origin: String, exports: String },
    /// A plugin built against another version of the contract.
    #[error(
        "{origin}: built against contract kubewasm:reconciler@{found}, but this host supports {supported}; rebuild it with a matching kubewasm-sdk"
    )]
    ContractVersion { origin: String, found: String, supported: &'static str },
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
    /// The plugin imports something the host does not offer (a plugin may only log).
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

/// A compiled, linked and described plugin, ready to be called any number of times
/// concurrently; each call runs in its own fresh instance.
#[derive(Clone)]
pub struct Plugin {
    engine: Engine,
    origin: String,
    hash: String,
    cached: bool,
    pre: bindings::PluginPre<CallState>,
    /// What each call's instance takes from the engine's pool.
    slots: PoolSlots,
    manifest: Manifest,
    /// The manifest's CRDs, parsed once at load.
    crds: Vec<Value>,
    limits: Limits,
}

impl std::fmt::Debug for Plugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plugin")
            .field("origin", &self.origin)
            .field("name", &self.manifest.name)
            .field("hash", &self.hash)
            .finish_non_exhaustive()
    }
}

impl Plugin {
    /// Loads the plugin in the file at `path`.
    ///
    /// # Errors
    ///
    /// A [`LoadError`] naming the file.
    pub fn load(engine: &Engine, path: &Path) -> Result<Self, LoadError> {
        let bytes = std::fs::read(path).map_err(|source| LoadError::Read { path: path.to_path_buf(), source })?;
        Self::from_bytes(engine, &bytes, &path.display().to_string())
    }

    /// Loads a plugin from its bytes; `origin` names it in errors and logs.
    ///
    /// This compiles the component (tens to hundreds of milliseconds): run it off the
    /// async runtime.
    ///
    /// # Errors
    ///
    /// A [`LoadError`] naming `origin`.
    pub fn from_bytes(engine: &Engine, bytes: &[u8], origin: &str) -> Result<Self, LoadError> {
        let origin = origin.to_string();
        check_header(bytes).map_err(|why| LoadError::NotAComponent { origin: origin.clone(), why })?;
        let hash = super::directory::digest(bytes);
        let (component, cached) =
            engine.compile(bytes, &hash).map_err(|source| LoadError::Compile { origin: origin.clone(), source })?;
        check_contract(engine, &component, &origin)?;
        let link = |source: wasmtime::Error| LoadError::Link { origin: origin.clone(), source };
        let instance_pre = engine.linker().instantiate_pre(&component).map_err(link)?;
        let pre = bindings::PluginPre::new(instance_pre).map_err(link)?;

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
                Err(e) if sandbox::is_instance_limit(&e) => slots.core_instances += 1,
                // Any other failure `describe` reports, instantiating afresh (this store
                // counts what the failed instantiation created).
                Err(_) => {
                    drop(instance);
                    break Instance::new(engine, &pre, slots, &origin, &[], describe_limits);
                }
            }
        };
        let manifest = instance
            .call("describe", |store, instance| instance.kubewasm_reconciler_reconciler().call_describe(store))
            .map_err(|source| LoadError::Describe { origin: origin.clone(), source })?;
        drop(instance);
        let manifest = Manifest::from(manifest);
        manifest.check().map_err(|source| LoadError::InvalidManifest { origin: origin.clone(), source })?;
        let crds = parse_crds(&manifest.crds, &origin)?;
        Ok(Self {
            engine: engine.clone(),
            hash,
            cached,
            limits: describe_limits.lowered_to(manifest.limits.deadline(), manifest.limits.memory_bytes()),
            origin,
            pre,
            slots,
            manifest,
            crds,
        })
    }

    /// What each call's instance takes from the engine's instance pool; calls wait
    /// while the pool lacks it.
    pub fn pool_slots(&self) -> PoolSlots {
        self.slots
    }

    /// The plugin's `CustomResourceDefinition`s as JSON objects, in declaration order.
    pub fn crds(&self) -> &[Value] {
        &self.crds
    }

    /// What the plugin declared.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// Where the plugin came from (its file), for messages.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// SHA-256 of the component's bytes, hex: identifies a plugin version.
    pub fn hash(&self) -> &str {
        &self.hash
    }

    /// Whether the compiled code came from the engine's cache rather than the
    /// compiler.
    pub fn from_cache(&self) -> bool {
        self.cached
    }

    /// The limits each call runs under.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// The same plugin with limits lowered by the operator's configuration.
    #[must_use]
    pub fn with_limits(mut self, operator: Limits) -> Self {
        self.limits = Limits {
            deadline: self.limits.deadline.min(operator.deadline),
            memory_bytes: self.limits.memory_bytes.min(operator.memory_bytes),
            log_lines: self.limits.log_lines.min(operator.log_lines),
        };
        self
    }

    /// The related objects the plugin wants for `parent`, in a fresh instance; not
    /// asked when the manifest declares no related kinds.
    ///
    /// # Errors
    ///
    /// A [`CallError`] when the call fails, or [`CallError::Malformed`] when a query
    /// names a kind the manifest does not declare in `related`.
    pub fn related(&self, parent: &Value) -> Result<Vec<Query>, CallError> {
        self.instance().related(parent)
    }

    /// One reconcile, in a fresh instance. The answer is decoded, not validated:
    /// pass it through [`super::validate`] before acting on it.
    ///
    /// # Errors
    ///
    /// A [`CallError`] saying what went wrong.
    pub fn reconcile(&self, request: &Request) -> Result<Response, CallError> {
        self.instance().reconcile(request)
    }

    /// A whole reconcile in one fresh instance: `related` for `parent` (skipped when
    /// the manifest declares no related kinds), then `reconcile` with the request
    /// `request_for` builds from the parent, handed back, and the queries. Each call
    /// has the full limits; one instance instead of two halves the instantiation cost.
    ///
    /// # Errors
    ///
    /// The first [`CallError`].
    pub fn reconcile_with(
        &self,
        parent: Value,
        request_for: impl FnOnce(Value, &[Query]) -> Request,
    ) -> Result<Reconciled, CallError> {
        let mut instance = self.instance();
        let queries = instance.related(&parent)?;
        let request = request_for(parent, &queries);
        let response = instance.reconcile(&request)?;
        Ok(Reconciled { queries, request, response })
    }

    fn instance(&self) -> Instance<'_> {
        Instance::new(&self.engine, &self.pre, self.slots, &self.manifest.name, &self.manifest.related, self.limits)
    }
}

/// What [`Plugin::reconcile_with`] asked, was asked, and answered.
#[derive(Clone, Debug)]
pub struct Reconciled {
    pub queries: Vec<Query>,
    pub request: Request,
    pub response: Response,
}

/// One fresh sandbox, instantiated at its first call; the calls of one reconcile run
/// in it. It holds its slots of the instance pool from creation until it is dropped.
struct Instance<'a> {
    pre: &'a bindings::PluginPre<CallState>,
    /// The plugin's name (its file before it described itself), in errors and logs.
    label: &'a str,
    /// The kinds `related` may ask for.
    related: &'a [KindRef],
    limits: Limits,
    store: wasmtime::Store<CallState>,
    exports: Option<bindings::Plugin>,
    /// Given back after the store (declared after it, so dropped after it) has freed
    /// the pool's slots.
    _permit: Option<Permit>,
}

impl<'a> Instance<'a> {
    /// Waits, when the engine pools instances, until the pool has `slots` free.
    fn new(
        engine: &Engine,
        pre: &'a bindings::PluginPre<CallState>,
        slots: PoolSlots,
        label: &'a str,
        related: &'a [KindRef],
        limits: Limits,
    ) -> Self {
        let permit = engine.budget().map(|budget| budget.take(slots));
        let store = sandbox::new_store(engine, label, limits, slots);
        Self { pre, label, related, limits, store, exports: None, _permit: permit }
    }

    /// Instantiates the component now rather than at the first call.
    fn instantiate(&mut self) -> wasmtime::Result<()> {
        if self.exports.is_none() {
            self.exports = Some(self.pre.instantiate(&mut self.store)?);
        }
        Ok(())
    }

    fn related(&mut self, parent: &Value) -> Result<Vec<Query>, CallError> {
        if self.related.is_empty() {
            // Nothing it could ask for: spare the call (and, alone, the instance).
            return Ok(Vec::new());
        }
        let parent = parent.to_string();
        let queries = self.call("related", |store, instance| {
            instance.kubewasm_reconciler_reconciler().call_related(store, &parent)
        })?;
        let queries: Vec<Query> = queries.into_iter().map(Query::from).collect();
        if let Some(q) = queries.iter().find(|q| !self.related.contains(&q.kind)) {
            return Err(CallError::Malformed {
                plugin: self.label.to_string(),
                source: MalformedAnswer::UndeclaredRelated { kind: q.kind.to_string() },
            });
        }
        Ok(queries)
    }

    fn reconcile(&mut self, request: &Request) -> Result<Response, CallError> {
        let wire = wit::Request::from(request);
        let answer = self.call("reconcile", |store, instance| {
            instance.kubewasm_reconciler_reconciler().call_reconcile(store, &wire)
        })?;
        let plugin = || self.label.to_string();
        match answer {
            Ok(response) => {
                Response::try_from(response).map_err(|e| CallError::Malformed { plugin: plugin(), source: e.into() })
            }
            Err(e) => Err(CallError::Plugin { plugin: plugin(), message: e.message, retryable: e.retryable }),
        }
    }

    fn call<R>(
        &mut self,
        name: &'static str,
        f: impl FnOnce(&mut wasmtime::Store<CallState>, &bindings::Plugin) -> wasmtime::Result<R>,
    ) -> Result<R, CallError> {
        sandbox::rearm(&mut self.store, self.limits);
        let result = match &self.exports {
            Some(exports) => f(&mut self.store, exports),
            None => self.pre.instantiate(&mut self.store).and_then(|exports| {
                let result = f(&mut self.store, &exports);
                self.exports = Some(exports);
                result
            }),
        };
        let dropped = self.store.data().logs_dropped();
        if dropped > 0 {
            tracing::warn!(plugin = %self.label, dropped, "plugin exceeded its log budget for one {name} call");
        }
        result.map_err(|e| sandbox::classify(&e, &self.store, name, self.limits))
    }
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

fn check_contract(engine: &Engine, component: &Component, origin: &str) -> Result<(), LoadError> {
    let ty = component.component_type();
    let exports: Vec<&str> = ty.exports(engine.wasmtime()).map(|(name, _)| name).collect();
    match exports.iter().find_map(|name| name.strip_prefix(EXPORT_PREFIX)) {
        Some(CONTRACT_VERSION) => Ok(()),
        Some(found) => {
            Err(LoadError::ContractVersion { origin: origin.into(), found: found.into(), supported: CONTRACT_VERSION })
        }
        None => Err(LoadError::NotAPlugin {
            origin: origin.into(),
            exports: if exports.is_empty() { "none".into() } else { exports.join(", ") },
        }),
    }
}
