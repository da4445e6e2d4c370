//! The compiler, its instance allocator and that allocator's budget, the on-disk cache
//! of compiled plugins, and the clock that enforces call deadlines.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use wasmtime::component::{Component, Linker};
use wasmtime::{Enabled, InstanceAllocationStrategy, PoolingAllocationConfig};

use super::pool::{Budget, PoolSlots};
use super::sandbox::limits::EPOCH_TICK;
use super::sandbox::{self, CallState};

/// Bytes of each pooled memory reset in place rather than given back to the kernel:
/// a Rust plugin's stack (1 MiB at the bottom of its memory), data and the start of
/// its heap. Only slots in use hold them.
const KEEP_RESIDENT_BYTES: usize = 2 << 20;
/// The same for tables (function references of a call's instance).
const KEEP_RESIDENT_TABLE_BYTES: usize = 64 << 10;
/// The largest linear memory any plugin may have; each plugin's own cap is lower.
pub(crate) const MAX_MEMORY_BYTES: usize = 512 << 20;

/// How an [`Engine`] allocates instances and where it caches compiled plugins.
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
}

/// Compiles and runs plugins. Create one per process and share it (it is cheap to
/// clone): it owns the compiler configuration, the instance allocator, the linker
/// offering the sandbox's capabilities, and a background thread that advances the
/// epoch every 10 ms so that runaway calls are interrupted.
#[derive(Clone)]
pub struct Engine(Arc<Inner>);

struct Inner {
    wasmtime: wasmtime::Engine,
    /// The pool's free slots, when instances come from a pool.
    budget: Option<Arc<Budget>>,
    linker: Linker<CallState>,
    cache_dir: Option<PathBuf>,
    stop: Arc<AtomicBool>,
}

impl Engine {
    /// An engine without pooling or cache: what one-shot commands (`describe`,
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
        config.wasm_component_model(true).epoch_interruption(true);
        let mut budget = None;
        let wasmtime = if options.pooling {
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
                // Where the kernel can say which pages a call dirtied (Linux 6.7 and
                // later), only those are reset, not all of the bytes kept resident.
                .pagemap_scan(Enabled::Auto);
            config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
            match wasmtime::Engine::new(&config) {
                Ok(engine) => {
                    budget = Some(Budget::new(size));
                    engine
                }
                Err(e) => {
                    tracing::warn!(error = %e, "pooling allocator unavailable; allocating instances on demand");
                    config.allocation_strategy(InstanceAllocationStrategy::OnDemand);
                    wasmtime::Engine::new(&config)?
                }
            }
        } else {
            wasmtime::Engine::new(&config)?
        };

        let linker = sandbox::linker(&wasmtime)?;

        let stop = Arc::new(AtomicBool::new(false));
        let (ticker, flag) = (wasmtime.clone(), stop.clone());
        std::thread::Builder::new()
            .name("kubewasm-deadline".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    std::thread::sleep(EPOCH_TICK);
                    ticker.increment_epoch();
                }
            })
            .map_err(wasmtime::Error::from)?;

        let cache_dir = options.cache_dir.clone().filter(|dir| match std::fs::create_dir_all(dir) {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(dir = %dir.display(), error = %e, "plugin cache disabled");
                false
            }
        });
        Ok(Self(Arc::new(Inner { wasmtime, budget, linker, cache_dir, stop })))
    }

    /// Compiles `bytes` (whose SHA-256 is `hash`), or loads the compiled artefact
    /// from the cache. Returns the component and whether it came from the cache.
    pub(crate) fn compile(&self, bytes: &[u8], hash: &str) -> wasmtime::Result<(Component, bool)> {
        let cached = self.0.cache_dir.as_deref().map(|dir| self.cache_path(dir, hash));
        if let Some(path) = &cached
            && path.exists()
        {
            // SAFETY: the file is one this engine wrote (below) under a name that
            // binds it to these bytes and this compiler's settings; wasmtime also
            // checks the compatibility header. A file that fails is recompiled.
            match unsafe { Component::deserialize_file(&self.0.wasmtime, path) } {
                Ok(component) => return Ok((component, true)),
                Err(e) => tracing::warn!(path = %path.display(), error = %e, "cached plugin unusable; recompiling"),
            }
        }
        let component = Component::from_binary(&self.0.wasmtime, bytes)?;
        if let Some(path) = cached
            && let Err(e) =
                component.serialize().map_err(std::io::Error::other).and_then(|b| write_atomically(&path, &b))
        {
            tracing::warn!(path = %path.display(), error = %e, "could not cache the compiled plugin");
        }
        Ok((component, false))
    }

    fn cache_path(&self, dir: &Path, hash: &str) -> PathBuf {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        self.0.wasmtime.precompile_compatibility_hash().hash(&mut hasher);
        dir.join(format!("{hash}-{:016x}.cwasm", hasher.finish()))
    }

    /// The pool's budget; `None` when instances are allocated on demand.
    pub(crate) fn budget(&self) -> Option<&Arc<Budget>> {
        self.0.budget.as_ref()
    }

    /// The pool's size; `None` when instances are allocated on demand.
    pub fn pool_size(&self) -> Option<PoolSlots> {
        self.0.budget.as_ref().map(|b| b.size())
    }

    pub(crate) fn wasmtime(&self) -> &wasmtime::Engine {
        &self.0.wasmtime
    }

    pub(crate) fn linker(&self) -> &Linker<CallState> {
        &self.0.linker
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
