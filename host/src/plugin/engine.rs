//! The compiler and the clock that enforces call deadlines.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use wasmtime::component::{HasSelf, Linker};

use super::contract::bindings;
use super::sandbox::CallState;

/// How often the deadline clock ticks: the granularity of every call's deadline.
pub(crate) const EPOCH_TICK: Duration = Duration::from_millis(10);

/// Compiles and runs plugins. Create one per process and share it (it is cheap to
/// clone): it owns the compiler configuration, the linker offering the contract's
/// imports and a deny-all WASI, and a background thread that advances the epoch
/// every [`EPOCH_TICK`] so that runaway calls are interrupted.
#[derive(Clone)]
pub struct Engine(Arc<Inner>);

struct Inner {
    wasmtime: wasmtime::Engine,
    linker: Linker<CallState>,
    stop: Arc<AtomicBool>,
}

impl Engine {
    /// # Errors
    ///
    /// When wasmtime rejects the configuration (not expected on supported platforms).
    pub fn new() -> wasmtime::Result<Self> {
        let mut config = wasmtime::Config::new();
        config.wasm_component_model(true).epoch_interruption(true);
        let wasmtime = wasmtime::Engine::new(&config)?;

        let mut linker = Linker::new(&wasmtime);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
        bindings::Plugin::add_to_linker::<_, HasSelf<CallState>>(&mut linker, |s| s)?;

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

        Ok(Self(Arc::new(Inner { wasmtime, linker, stop })))
    }

    pub(crate) fn wasmtime(&self) -> &wasmtime::Engine {
        &self.0.wasmtime
    }

    pub(crate) fn linker(&self) -> &Linker<CallState> {
        &self.0.linker
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}
