//! The compilers, their instance allocators and the pool's budget, the on-disk cache of
//! compiled plugins, the background thread where optimised code is compiled, and the
//! clock that enforces call deadlines.
//!
//! Two compilers, as a JIT tiers its code: a new component that is not in the cache is
//! compiled first by wasmtime's baseline compiler (Winch: a tenth of the time, code a
//! little slower) so that it runs at once, and then by the optimising one (Cranelift) in
//! the background, whose code takes its place and is cached. A component compiled by one
//! runs only in that compiler's `wasmtime::Engine`: each tier has its own engine and
//! linker, sharing the deadline clock.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, mpsc};

use wasmtime::component::{Component, Linker};
use wasmtime::{Enabled, InstanceAllocationStrategy, PoolingAllocationConfig, Strategy};

use super::pool::{Budget, PoolSlots};
use super::sandbox::limits::EPOCH_TICK;
use super::sandbox::{self, CallState};

/// Bytes of each pooled memory reset in place rather than given back to the kernel:
/// a Rust plugin's stack (1 MiB at the bottom of its memory), data and the start of
/// its heap. Only slots in use hold them.
const KEEP_RESIDENT_BYTES: usize = 2 << 20;
/// The same for tables (function references of a call's instance).
const KEEP_RESIDENT_TABLE_BYTES: usize = 64 << 10;
/// How many free slots the pool keeps for the plugin that used them last before it
/// hands one to another plugin (wasmtime's default is 100). Below this count a call
/// with no free slot of its own plugin takes a never-used slot rather than another
/// plugin's, so each plugin gathers slots of its own, each holding its memory image and
/// the pages kept resident: with ten plugins, 52 to 65 slots and 9 to 11 MiB in every
/// host process, where ten keep 16 slots and 3 MiB (BENCHMARKS.md, memory). A slot
/// that changes plugins maps the other plugin's image, as a never-used slot does.
const WARM_SLOTS: u32 = 10;
/// The largest linear memory any plugin may have; each plugin's own cap is lower.
pub(crate) const MAX_MEMORY_BYTES: usize = 512 << 20;
/// The background compiler's scheduling priority (`nice`): running reconciles, the
/// baseline compile of the next version and the user's own builds go first.
#[cfg(target_os = "linux")]
const BACKGROUND_NICE: libc::c_int = 10;

/// How an [`Engine`] allocates instances, compiles and where it caches compiled plugins.
#[derive(Clone, Debug, Default)]
pub struct EngineOptions {
    /// Keep instance slots ready (wasmtime's pooling allocator, of
    /// [`PoolSlots::default`]): a fresh instance per call then costs tens of
    /// microseconds less, and calls beyond what the pool holds wait for a slot. Falls
    /// back to on-demand allocation where the address space cannot be reserved.
    pub pooling: bool,
    /// Keep compiled plugins here, keyed by the hash of their bytes and the
    /// compiler's settings, so a restart or a reverted file loads without
    /// compiling. `None` compiles every time.
    pub cache_dir: Option<PathBuf>,
    /// Compile a component the cache does not hold with the baseline compiler first,
    /// so that it runs within a tenth of the time, and with the optimising compiler on
    /// a background thread, whose code then replaces it ([`Tier`]). What long-running
    /// hosts want; a one-shot command would compile twice for one call.
    pub tiered: bool,
}

/// Which compiler made the code a plugin runs. Both enforce the same limits (the
/// deadline clock and the memory cap are the engine's, not the compiler's) and
/// answer alike; only the speed differs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tier {
    /// wasmtime's baseline compiler (Winch): about ten times faster to compile than
    /// Cranelift, calls a little slower. Never cached: it is replaced within seconds.
    Baseline,
    /// wasmtime's optimising compiler (Cranelift); cached on disk.
    Optimized,
}

/// Compiles and runs plugins. Create one per process and share it (it is cheap to
/// clone): it owns the compilers' configuration, the instance allocator, the linker
/// offering the sandbox's capabilities, a background thread that advances the epoch
/// every 10 ms so that runaway calls are interrupted, and (when tiered) the thread
/// where optimised code is compiled.
#[derive(Clone)]
pub struct Engine(Arc<Inner>);

struct Inner {
    optimized: Compiler,
    /// The optimising compiler's configuration without the pool: each compile gets a
    /// `wasmtime::Engine` of its own from it ([`Engine::compile_optimized`]).
    compiling: wasmtime::Config,
    /// The baseline compiler, when the engine is tiered.
    baseline: Option<Compiler>,
    cache_dir: Option<PathBuf>,
    /// Jobs for the background thread (the optimising compiles); dropping it ends the
    /// thread once it has finished its current job.
    background: Option<mpsc::Sender<Job>>,
    stop: Arc<AtomicBool>,
    /// Code kept in memory by the hash of what was compiled ([`Engine::compile_kept`]):
    /// development components', whose every version is the same code.
    kept: Mutex<HashMap<String, (Component, Tier)>>,
}

/// Work for the background thread.
type Job = Box<dyn FnOnce() + Send>;

/// One compiler: its wasmtime engine, the linker of the sandbox's capabilities, and the
/// pool's budget when instances come from a pool. Code it compiled runs only here.
pub(crate) struct Compiler {
    wasmtime: wasmtime::Engine,
    linker: Linker<CallState>,
    budget: Option<Arc<Budget>>,
}

impl Compiler {
    pub(crate) fn wasmtime(&self) -> &wasmtime::Engine {
        &self.wasmtime
    }

    /// The pool's free slots; `None` when instances are allocated on demand.
    pub(crate) fn budget(&self) -> Option<&Arc<Budget>> {
        self.budget.as_ref()
    }
}

/// An [`Engine`] that does not keep it alive.
pub(crate) struct WeakEngine(std::sync::Weak<Inner>);

impl WeakEngine {
    /// The engine, unless every clone of it is gone.
    pub(crate) fn upgrade(&self) -> Option<Engine> {
        self.0.upgrade().map(Engine)
    }
}

/// What [`Engine::compile`] made of a component's bytes.
pub(crate) struct Compiled {
    pub(crate) component: Component,
    pub(crate) tier: Tier,
    /// Whether the code came from the on-disk cache.
    pub(crate) cached: bool,
}

impl Engine {
    /// An engine without pooling, cache or tiers: what one-shot commands (`describe`,
    /// `render`) need.
    ///
    /// # Errors
    ///
    /// When wasmtime rejects the configuration (not expected on supported platforms).
    pub fn new() -> wasmtime::Result<Self> {
        Self::with_options(&EngineOptions::default())
    }

    /// # Errors
    ///
    /// When wasmtime rejects the configuration (not expected on supported platforms).
    pub fn with_options(options: &EngineOptions) -> wasmtime::Result<Self> {
        Self::with_pool(options, PoolSlots::default())
    }

    /// An engine whose pool (when `options.pooling`) has `size` slots.
    ///
    /// # Errors
    ///
    /// When wasmtime rejects the configuration (not expected on supported platforms).
    pub fn with_pool(options: &EngineOptions, size: PoolSlots) -> wasmtime::Result<Self> {
        let mut config = wasmtime::Config::new();
        config.wasm_component_model(true).epoch_interruption(true).strategy(Strategy::Cranelift);
        if options.tiered {
            // Compiled in the background: one core at a time, so running reconciles and
            // the user's builds keep the others.
            config.parallel_compilation(false);
        }
        let compiling = config.clone();
        let optimized = if options.pooling { pooled(&mut config, size)? } else { on_demand(&config)? };
        // The baseline allocates on demand: its code runs for seconds per version, not
        // worth a second pool's reservation of address space.
        let baseline = options.tiered.then(baseline_compiler).flatten();

        let stop = Arc::new(AtomicBool::new(false));
        let ticking: Vec<wasmtime::Engine> =
            std::iter::once(&optimized).chain(&baseline).map(|c| c.wasmtime.clone()).collect();
        let flag = stop.clone();
        std::thread::Builder::new()
            .name("kubewasm-deadline".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    std::thread::sleep(EPOCH_TICK);
                    ticking.iter().for_each(wasmtime::Engine::increment_epoch);
                }
            })
            .map_err(wasmtime::Error::from)?;
        let background = match &baseline {
            Some(_) => Some(background_thread()?),
            None => None,
        };

        let cache_dir = options.cache_dir.clone().filter(|dir| match std::fs::create_dir_all(dir) {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(dir = %dir.display(), error = %e, "plugin cache disabled");
                false
            }
        });
        let kept = Mutex::default();
        Ok(Self(Arc::new(Inner { optimized, compiling, baseline, cache_dir, background, stop, kept })))
    }

    /// Compiles `bytes` (whose SHA-256 is `hash`): the optimised code from the cache
    /// when it holds it; otherwise, when tiered, the baseline compiler's (or, for a
    /// component it cannot compile, the optimising compiler's, cached).
    pub(crate) fn compile(&self, bytes: &[u8], hash: &str) -> wasmtime::Result<Compiled> {
        if let Some(component) = self.cached(hash) {
            return Ok(Compiled { component, tier: Tier::Optimized, cached: true });
        }
        if let Some(baseline) = &self.0.baseline {
            match Component::from_binary(&baseline.wasmtime, bytes) {
                Ok(component) => return Ok(Compiled { component, tier: Tier::Baseline, cached: false }),
                // A feature Winch lacks (tail calls, exceptions, GC), or bytes no compiler
                // takes: the optimising compiler says which.
                Err(e) => tracing::debug!(error = %e, "baseline compiler refused the component; optimising it now"),
            }
        }
        let component = self.compile_optimized(bytes, hash)?;
        Ok(Compiled { component, tier: Tier::Optimized, cached: false })
    }

    /// [`Engine::compile`], keeping the code in memory for the next component of the same
    /// code: a development component's, which `kubewasm dev` loads again at every save.
    /// The baseline code kept serves until the optimised code is in the cache; it is
    /// said to be cached, so that it is not optimised again meanwhile.
    pub(crate) fn compile_kept(&self, bytes: &[u8], hash: &str) -> wasmtime::Result<Compiled> {
        let kept = self.0.kept.lock().unwrap_or_else(PoisonError::into_inner).get(hash).cloned();
        let compiled = match kept {
            Some((component, Tier::Optimized)) => {
                return Ok(Compiled { component, tier: Tier::Optimized, cached: true });
            }
            Some((component, Tier::Baseline)) => match self.cached(hash) {
                Some(component) => Compiled { component, tier: Tier::Optimized, cached: true },
                None => return Ok(Compiled { component, tier: Tier::Baseline, cached: true }),
            },
            None => self.compile(bytes, hash)?,
        };
        let entry = (compiled.component.clone(), compiled.tier);
        self.0.kept.lock().unwrap_or_else(PoisonError::into_inner).insert(hash.to_string(), entry);
        Ok(compiled)
    }

    /// Compiles `bytes` with the optimising compiler and keeps the result in the cache.
    ///
    /// The compile runs in a `wasmtime::Engine` made for it and dropped after, and its
    /// code is loaded into the running engine as from the cache: wasmtime keeps each
    /// engine's Cranelift contexts for reuse, and a context keeps the register
    /// allocator's arena at the size of the largest function it compiled (256 MiB for a
    /// plugin built at opt-level 3 whose inlined functions run to hundreds of kilobytes),
    /// for as long as the engine lives. Plugins compile once per version; holding that
    /// much for the next compile is no saving (BENCHMARKS.md, reload).
    pub(crate) fn compile_optimized(&self, bytes: &[u8], hash: &str) -> wasmtime::Result<Component> {
        let code = wasmtime::Engine::new(&self.0.compiling)?.precompile_component(bytes)?;
        crate::memory::release_freed();
        // SAFETY: the bytes are what an engine of this engine's own configuration (less
        // the instance allocator, which compiled code does not depend on) just made.
        let component = unsafe { Component::deserialize(&self.0.optimized.wasmtime, &code) }?;
        if let Some(path) = self.0.cache_dir.as_deref().map(|dir| self.cache_path(dir, hash))
            && let Err(e) = write_atomically(&path, &code)
        {
            tracing::warn!(path = %path.display(), error = %e, "could not cache the compiled plugin");
        }
        Ok(component)
    }

    /// The optimised code of `hash` from the cache, if it holds it.
    fn cached(&self, hash: &str) -> Option<Component> {
        let path = self.0.cache_dir.as_deref().map(|dir| self.cache_path(dir, hash))?;
        if !path.exists() {
            return None;
        }
        // SAFETY: the file is one this engine wrote (`compile_optimized`) under a name
        // that binds it to these bytes and this compiler's settings; wasmtime also
        // checks the compatibility header. A file that fails is recompiled.
        match unsafe { Component::deserialize_file(&self.0.optimized.wasmtime, &path) } {
            Ok(component) => Some(component),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "cached plugin unusable; recompiling");
                None
            }
        }
    }

    fn cache_path(&self, dir: &Path, hash: &str) -> PathBuf {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        self.0.optimized.wasmtime.precompile_compatibility_hash().hash(&mut hasher);
        dir.join(format!("{hash}-{:016x}.cwasm", hasher.finish()))
    }

    /// Links `component`, compiled by `tier`, against that tier's sandbox.
    pub(crate) fn instantiate_pre(
        &self,
        component: &Component,
        tier: Tier,
    ) -> wasmtime::Result<wasmtime::component::InstancePre<CallState>> {
        self.compiler(tier).linker.instantiate_pre(component)
    }

    /// Runs `job` on the background thread, after the jobs before it; dropped unrun
    /// when the engine is not tiered (it has no such thread) or is gone.
    pub(crate) fn in_background(&self, job: impl FnOnce() + Send + 'static) {
        if let Some(jobs) = &self.0.background {
            let _ = jobs.send(Box::new(job));
        }
    }

    /// The engine without keeping it alive: what a background job holds, so that a
    /// host that is gone is not compiled for.
    pub(crate) fn downgrade(&self) -> WeakEngine {
        WeakEngine(Arc::downgrade(&self.0))
    }

    /// The compiler of `tier` (the optimising one stands in for a baseline the engine
    /// does not have).
    pub(crate) fn compiler(&self, tier: Tier) -> &Compiler {
        match (tier, &self.0.baseline) {
            (Tier::Baseline, Some(baseline)) => baseline,
            _ => &self.0.optimized,
        }
    }

    /// The pool's size; `None` when instances are allocated on demand. Code of either
    /// tier must fit it: the baseline's is replaced by the optimised code, which runs here.
    pub fn pool_size(&self) -> Option<PoolSlots> {
        self.0.optimized.budget.as_ref().map(|b| b.size())
    }

    /// Where compiled plugins are kept, if anywhere: pulled modules are kept beside them.
    pub fn cache_dir(&self) -> Option<&Path> {
        self.0.cache_dir.as_deref()
    }

    /// Whether a component the cache lacks runs first with baseline code.
    pub fn tiered(&self) -> bool {
        self.0.baseline.is_some()
    }

    /// The optimising compiler's engine: component types are the same in both.
    pub(crate) fn wasmtime(&self) -> &wasmtime::Engine {
        &self.0.optimized.wasmtime
    }
}

/// The optimising compiler with a pool of `size` slots, or allocating on demand where
/// the pool's address space cannot be reserved.
fn pooled(config: &mut wasmtime::Config, size: PoolSlots) -> wasmtime::Result<Compiler> {
    let mut pool = PoolingAllocationConfig::default();
    pool.total_component_instances(size.component_instances)
        .total_core_instances(size.core_instances)
        .total_memories(size.memories)
        .total_tables(size.tables)
        .max_memory_size(MAX_MEMORY_BYTES)
        // A fresh instance per call reuses a slot: resetting the first pages with
        // memset keeps them mapped, where madvise would make the next call fault
        // every page it touches in again (a fifth of a small call's time).
        .linear_memory_keep_resident(KEEP_RESIDENT_BYTES)
        .table_keep_resident(KEEP_RESIDENT_TABLE_BYTES)
        .max_unused_warm_slots(WARM_SLOTS)
        // Where the kernel can say which pages a call dirtied (Linux 6.7 and
        // later), only those are reset, not all of the bytes kept resident.
        .pagemap_scan(Enabled::Auto);
    config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    match wasmtime::Engine::new(config) {
        Ok(engine) => {
            Ok(Compiler { linker: sandbox::linker(&engine)?, wasmtime: engine, budget: Some(Budget::new(size)) })
        }
        Err(e) => {
            tracing::warn!(error = %e, "pooling allocator unavailable; allocating instances on demand");
            config.allocation_strategy(InstanceAllocationStrategy::OnDemand);
            on_demand(config)
        }
    }
}

fn on_demand(config: &wasmtime::Config) -> wasmtime::Result<Compiler> {
    let engine = wasmtime::Engine::new(config)?;
    Ok(Compiler { linker: sandbox::linker(&engine)?, wasmtime: engine, budget: None })
}

/// The baseline compiler, with the same deadline clock and component model as the
/// optimising one; `None` (every version then compiled by Cranelift on the spot) on a
/// platform Winch does not support.
fn baseline_compiler() -> Option<Compiler> {
    let mut config = wasmtime::Config::new();
    config.wasm_component_model(true).epoch_interruption(true).strategy(Strategy::Winch);
    match on_demand(&config) {
        Ok(compiler) => Some(compiler),
        Err(e) => {
            tracing::warn!(error = %e, "baseline compiler unavailable; each new plugin version waits for Cranelift");
            None
        }
    }
}

/// The thread that runs background jobs one at a time at a low priority; it ends when
/// the sender is dropped.
fn background_thread() -> wasmtime::Result<mpsc::Sender<Job>> {
    let (jobs, queue) = mpsc::channel::<Job>();
    std::thread::Builder::new()
        .name("kubewasm-optimize".into())
        .spawn(move || {
            lower_priority();
            while let Ok(job) = queue.recv() {
                job();
            }
        })
        .map_err(wasmtime::Error::from)?;
    Ok(jobs)
}

/// Lowers the calling thread's scheduling priority (on Linux the nice value is a
/// thread's own); elsewhere the thread keeps the process's priority.
fn lower_priority() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: setpriority only reads its integer arguments; `0` names the calling
        // thread. A failure leaves the priority as it was, which is harmless.
        let _ = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, BACKGROUND_NICE) };
    }
}

/// Writes to a temporary file and renames it, so a reader never sees half a file.
/// The directory is created if it went missing (a cleared cache).
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}
