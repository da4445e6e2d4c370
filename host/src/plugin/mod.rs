//! Plugins: load a component, check it against the contract, describe it, and run
//! its calls in a fresh sandbox.
//!
//! Costs, from most to least expensive: an [`Engine`] is created once per process; a
//! [`Plugin`] once per `.wasm` file (it compiles the component, ~100 ms); an
//! [`Instance`] once per reconcile (~50 µs), so nothing a plugin does survives to the
//! next one.
//!
//! Inside, imports go one way: [`Plugin`] (here) loads with `load` and calls through
//! [`Instance`]; both stand on the [`Engine`], which links the `sandbox`'s capabilities;
//! the sandbox stands on the `pool` and the `contract`'s bindings.

mod contract;
mod engine;
mod instance;
mod load;
mod pool;
mod sandbox;
mod settings;

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

pub use contract::{CONTRACT_VERSION, MalformedAnswer, SUPPORTED_VERSIONS, Version};
pub use engine::{Engine, EngineOptions};
pub use instance::Instance;
pub use load::{LoadError, digest};
pub use pool::PoolSlots;
pub use sandbox::failure::CallError;
pub use sandbox::limits::Limits;
pub use settings::{InvalidSettings, Settings, SettingsError};
// The contract's types and the check of an answer live in one crate the SDK shares, so
// a plugin's native tests refuse exactly what the host refuses.
pub use kubewasm_contract::{
    Change, Event, EventType, HttpError, HttpRequest, HttpResponse, KindRef, LabelOperator, Limits as DeclaredLimits,
    Manifest, ObjectEvent, Query, Refusal, Request, Requirement, Response, Selector, Watch, validate, view,
};

/// A compiled, linked and described plugin, ready to be called any number of times
/// concurrently; each reconcile runs in its own fresh [`Instance`].
#[derive(Clone)]
pub struct Plugin {
    engine: Engine,
    /// Where the plugin came from (its file), for messages.
    origin: String,
    loaded: Arc<load::Loaded>,
    limits: Limits,
}

impl std::fmt::Debug for Plugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plugin")
            .field("origin", &self.origin)
            .field("name", &self.loaded.manifest.name)
            .field("hash", &self.loaded.hash)
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
        let loaded = load::load(engine, bytes, origin)?;
        let declared = &loaded.manifest.limits;
        let limits = Limits::default().lowered_to(declared.deadline(), declared.memory_bytes());
        Ok(Self { engine: engine.clone(), origin: origin.to_string(), loaded: Arc::new(loaded), limits })
    }

    /// What each call's instance takes from the engine's instance pool; calls wait
    /// while the pool lacks it.
    pub fn pool_slots(&self) -> PoolSlots {
        self.loaded.slots
    }

    /// The plugin's `CustomResourceDefinition`s as JSON objects, in declaration order.
    pub fn crds(&self) -> &[Value] {
        &self.loaded.crds
    }

    /// What the plugin declared.
    pub fn manifest(&self) -> &Manifest {
        &self.loaded.manifest
    }

    /// Where the plugin came from (its file), for messages.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// SHA-256 of the component's bytes, hex: identifies a plugin version.
    pub fn hash(&self) -> &str {
        &self.loaded.hash
    }

    /// The contract version the component was built against.
    pub fn contract(&self) -> Version {
        self.loaded.pre.version()
    }

    /// Whether the compiled code came from the engine's cache rather than the
    /// compiler.
    pub fn from_cache(&self) -> bool {
        self.loaded.cached
    }

    /// The limits each call runs under.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// The same plugin with limits lowered by the operator's configuration.
    #[must_use]
    pub fn with_limits(mut self, operator: Limits) -> Self {
        self.limits = self.limits.min(operator);
        self
    }

    /// A fresh instance for the calls of one reconcile: `related`, then `reconcile`
    /// with the request built from its queries, each with the full limits (one
    /// instance for both halves the instantiation cost).
    pub fn instance(&self) -> Instance<'_> {
        let manifest = &self.loaded.manifest;
        Instance::new(&self.engine, &self.loaded.pre, self.loaded.slots, &manifest.name, &manifest.related, self.limits)
    }

    /// The related objects the plugin wants for `parent`, in a fresh instance; see
    /// [`Instance::related`].
    ///
    /// # Errors
    ///
    /// A [`CallError`].
    pub fn related(&self, parent: &Value) -> Result<Vec<Query>, CallError> {
        self.instance().related(parent)
    }

    /// One reconcile, in a fresh instance; see [`Instance::reconcile`].
    ///
    /// # Errors
    ///
    /// A [`CallError`] saying what went wrong.
    pub fn reconcile(&self, request: &Request) -> Result<Response, CallError> {
        self.instance().reconcile(request)
    }

    /// One event, in a fresh instance; see [`Instance::handle`].
    ///
    /// # Errors
    ///
    /// A [`CallError`] saying what went wrong.
    pub fn handle(&self, event: &ObjectEvent) -> Result<(), CallError> {
        self.instance().handle(event)
    }
}
