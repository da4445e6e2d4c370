//! Plugins: load a component, check it against the contract, describe it, and run
//! its calls in a fresh sandbox.
//!
//! Costs, from most to least expensive: an [`Engine`] is created once per process; a
//! [`Plugin`] once per `.wasm` file (it compiles the component: about a second per MiB
//! with the optimising compiler, a tenth of that with a tiered engine's baseline
//! compiler, whose code the optimised code replaces later; milliseconds from the
//! cache); an [`Instance`] once per reconcile (~50 µs), so nothing a plugin does
//! survives to the next one.
//!
//! Inside, imports go one way: [`Plugin`] (here) loads with `load` and calls through
//! [`Instance`]; both stand on the [`Engine`], which links the `sandbox`'s capabilities;
//! the sandbox stands on the `pool` and the `contract`'s bindings.

mod contract;
pub mod development;
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
pub use engine::{Engine, EngineOptions, Tier};
pub use instance::Instance;
pub use load::{LoadError, digest, hex};
pub use pool::PoolSlots;
pub use sandbox::failure::CallError;
pub use sandbox::http::allow::{Pattern, PatternError};
pub use sandbox::http::{Canned, CannedError, Egress, EgressError, HttpSettings, Recorded, Transport};
pub use sandbox::limits::Limits;
pub use settings::{
    EventSettings, FailurePolicy, InvalidSettings, MatchPolicy, Reinvocation, Settings, SettingsError, WebhookSettings,
    service_account,
};
// The contract's types and the check of an answer live in one crate the SDK shares, so
// a plugin's native tests refuse exactly what the host refuses.
pub use kubewasm_contract::{
    Change, Event, EventType, HttpError, HttpRequest, HttpResponse, KindRef, LabelOperator, Limits as DeclaredLimits,
    Manifest, Object, ObjectEvent, Query, Refusal, Request, Requirement, Response, Selector, Watch, validate, view,
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
    /// Where its requests may go: nowhere until the operator grants something.
    egress: Arc<sandbox::http::Egress>,
    /// What the host takes as declared when a test switched its check off
    /// ([`Plugin::unchecked_children`]); `None`, always outside tests: the manifest.
    unchecked: Option<Arc<Manifest>>,
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
    /// This compiles the component (tens to hundreds of milliseconds; with a tiered
    /// engine, the baseline compiler's code, optimised later in the background): run
    /// it off the async runtime.
    ///
    /// # Errors
    ///
    /// A [`LoadError`] naming `origin`.
    pub fn from_bytes(engine: &Engine, bytes: &[u8], origin: &str) -> Result<Self, LoadError> {
        Self::from_bytes_reading(engine, bytes, origin, None)
    }

    /// [`Plugin::from_bytes`] for `kubewasm dev`: if `bytes` is a
    /// [development component](development), its calls read the copy of its sources'
    /// version under `sources`, opened read-only; any other component reads nothing.
    ///
    /// # Errors
    ///
    /// A [`LoadError`] naming `origin`.
    pub fn from_bytes_reading(
        engine: &Engine,
        bytes: &[u8],
        origin: &str,
        sources: Option<&Path>,
    ) -> Result<Self, LoadError> {
        let plugin = Self::compiled_reading(engine, bytes, origin, sources)?;
        // Baseline code from the cache is a development component's, being optimised already.
        if plugin.tier() == Tier::Baseline && !plugin.from_cache() {
            let (weak_engine, weak_loaded) = (engine.downgrade(), Arc::downgrade(&plugin.loaded));
            let (bytes, origin) = (bytes.to_vec(), origin.to_string());
            engine.in_background(move || load::optimize(&weak_engine, &weak_loaded, &bytes, &origin));
        }
        Ok(plugin)
    }

    /// [`Plugin::from_bytes`] without asking for the optimised code.
    #[cfg(test)]
    fn compiled(engine: &Engine, bytes: &[u8], origin: &str) -> Result<Self, LoadError> {
        Self::compiled_reading(engine, bytes, origin, None)
    }

    fn compiled_reading(
        engine: &Engine,
        bytes: &[u8],
        origin: &str,
        sources: Option<&Path>,
    ) -> Result<Self, LoadError> {
        let loaded = Arc::new(load::load(engine, bytes, origin, sources)?);
        let declared = &loaded.manifest.limits;
        let limits = Limits::default().lowered_to(declared.deadline(), declared.memory_bytes());
        let egress = Arc::new(sandbox::http::Egress::denied(&loaded.manifest.name));
        Ok(Self { engine: engine.clone(), origin: origin.to_string(), loaded, limits, egress, unchecked: None })
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
        self.unchecked.as_deref().unwrap_or(&self.loaded.manifest)
    }

    /// For tests only: the same plugin, with the host's own check of its answers switched
    /// off for children of `kinds`: the host takes them as declared children, resolves,
    /// watches and writes them. With an identity per plugin, what is left to refuse such a
    /// write is the API server's RBAC, which a test proves. No setting or flag reaches this.
    #[doc(hidden)]
    #[must_use]
    pub fn unchecked_children(mut self, kinds: &[KindRef]) -> Self {
        let mut manifest = self.manifest().clone();
        manifest.children.extend(kinds.iter().cloned());
        self.unchecked = Some(Arc::new(manifest));
        self
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
        self.loaded.code().pre.version()
    }

    /// Whether the compiled code came from the engine's cache rather than the
    /// compiler.
    pub fn from_cache(&self) -> bool {
        self.loaded.cached
    }

    /// Which compiler's code calls starting now run: on a tiered engine, the baseline
    /// compiler's until the optimised code, compiled in the background, takes its place
    /// in this plugin and every clone of it.
    pub fn tier(&self) -> Tier {
        self.loaded.code().tier
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

    /// The same plugin whose HTTP requests go through `egress` (built from its manifest's
    /// `outbound` and the operator's grant).
    #[must_use]
    pub fn with_egress(mut self, egress: Arc<sandbox::http::Egress>) -> Self {
        self.egress = egress;
        self
    }

    /// A fresh instance for the calls of one reconcile: `related`, then `reconcile`
    /// with the request built from its queries, each with the full limits (one
    /// instance for both halves the instantiation cost).
    pub fn instance(&self) -> Instance<'_> {
        let manifest = &self.loaded.manifest;
        Instance::new(
            &self.engine,
            self.loaded.code(),
            self.loaded.slots,
            &manifest.name,
            &manifest.related,
            self.limits,
            self.egress.clone(),
        )
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A test fixture as `make plugins` builds it.
    fn fixture(name: &str) -> Vec<u8> {
        let exe = std::env::current_exe().expect("test binary path");
        // <target>/<profile>/deps/<test binary>
        let path = exe.ancestors().nth(3).expect("target directory").join("fixtures").join(format!("{name}.wasm"));
        std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}: run `make plugins` first", path.display()))
    }

    fn tiered(cache_dir: Option<std::path::PathBuf>) -> Engine {
        Engine::with_options(&EngineOptions { pooling: true, cache_dir, tiered: true }).expect("engine")
    }

    /// The misbehave fixture on baseline code, its optimised code not asked for.
    fn misbehave_on_baseline(engine: &Engine) -> (Plugin, Vec<u8>) {
        let bytes = fixture("misbehave");
        let plugin = Plugin::compiled(engine, &bytes, "misbehave.wasm").expect("loads");
        assert_eq!(plugin.tier(), Tier::Baseline, "a component the cache lacks runs on baseline code first");
        (plugin, bytes)
    }

    fn request(mode: &str) -> Request {
        let parent = json!({"apiVersion": "test.kubewasm.io/v1", "kind": "Misbehave",
                            "metadata": {"name": "m", "namespace": "default", "uid": "u-1"}});
        Request::new(parent, vec![], vec![], false, "2026-01-01T00:00:00Z".into(), json!({"mode": mode}))
    }

    #[test]
    fn baseline_code_is_stopped_at_the_deadline() {
        let engine = tiered(None);
        let (plugin, _) = misbehave_on_baseline(&engine);
        let plugin =
            plugin.with_limits(Limits { deadline: std::time::Duration::from_millis(200), ..Limits::default() });
        let started = std::time::Instant::now();
        match plugin.reconcile(&request("loop")) {
            Err(CallError::Timeout { deadline, .. }) => assert_eq!(deadline, std::time::Duration::from_millis(200)),
            other => panic!("expected the deadline to stop the loop, got {other:?}"),
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(30), "stopped, not run to the end");
    }

    #[test]
    fn baseline_code_is_stopped_at_the_memory_cap() {
        let engine = tiered(None);
        let (plugin, _) = misbehave_on_baseline(&engine);
        let plugin = plugin.with_limits(Limits { memory_bytes: 32 << 20, ..Limits::default() });
        match plugin.reconcile(&request("allocate")) {
            Err(CallError::OutOfMemory { limit_mib, .. }) => assert_eq!(limit_mib, 32),
            other => panic!("expected the memory cap to stop the allocation, got {other:?}"),
        }
    }

    #[test]
    fn a_development_components_versions_are_new_versions_of_code_compiled_once_and_read_only_what_dev_names() {
        let engine = tiered(None);
        let code = fixture("misbehave");
        let copies = std::path::Path::new("/copies");
        let load = |version: &str, sources| {
            let bytes = development::mark(&code, version);
            Plugin::compiled_reading(&engine, &bytes, "dev.wasm", sources).expect("loads")
        };
        let first = load("0001", Some(copies));
        assert!(!first.from_cache(), "compiled");
        let second = load("0002", Some(copies));
        assert!(second.from_cache(), "the same code, kept");
        assert_ne!(first.hash(), second.hash(), "another version of the sources is another version");
        assert_eq!(second.loaded.code().sources.as_deref(), Some(copies.join("0002").as_path()));
        assert_eq!(load("0003", None).loaded.code().sources, None, "no directory unless `kubewasm dev` names one");
        let built = Plugin::compiled_reading(&engine, &code, "built.wasm", Some(copies)).expect("loads");
        assert_eq!(built.loaded.code().sources, None, "a component that is not marked reads nothing");
        assert_eq!(
            second.reconcile(&request("behave")).expect("answers"),
            built.reconcile(&request("behave")).expect("answers")
        );
    }

    #[test]
    fn optimised_code_replaces_the_baseline_in_every_clone_and_answers_alike() {
        let cache = std::env::temp_dir().join(format!("kubewasm-tier-cache-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&cache);
        let engine = tiered(Some(cache.clone()));
        let (plugin, bytes) = misbehave_on_baseline(&engine);
        let held = plugin.clone().with_limits(Limits::default());
        let before = plugin.reconcile(&request("behave")).expect("baseline answers");
        let mut in_flight = plugin.instance();

        load::optimize(&engine.downgrade(), &Arc::downgrade(&plugin.loaded), &bytes, "misbehave.wasm");
        assert_eq!(plugin.tier(), Tier::Optimized);
        assert_eq!(held.tier(), Tier::Optimized, "a clone (as a controller holds one) runs the optimised code too");
        assert_eq!(plugin.reconcile(&request("behave")).expect("optimised answers"), before, "the same answer");
        assert_eq!(
            in_flight.reconcile(&request("behave")).expect("in flight"),
            before,
            "a call in flight keeps its code"
        );

        let restarted = Plugin::from_bytes(&tiered(Some(cache.clone())), &bytes, "misbehave.wasm").expect("loads");
        assert!(restarted.from_cache(), "the optimised code was cached");
        assert_eq!(restarted.tier(), Tier::Optimized, "cached code needs no baseline");
        std::fs::remove_dir_all(&cache).expect("clean up");
    }

    #[test]
    fn a_version_dropped_before_its_turn_is_not_optimised() {
        let cache = std::env::temp_dir().join(format!("kubewasm-tier-dropped-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&cache);
        let engine = tiered(Some(cache.clone()));
        let (plugin, bytes) = misbehave_on_baseline(&engine);
        let weak = Arc::downgrade(&plugin.loaded);
        drop(plugin);
        load::optimize(&engine.downgrade(), &weak, &bytes, "misbehave.wasm");
        assert_eq!(std::fs::read_dir(&cache).expect("cache").count(), 0, "nothing compiled for a replaced version");
        std::fs::remove_dir_all(&cache).expect("clean up");
    }
}
