//! WASI as a plugin sees it: no files, no environment, no arguments, no sockets; the
//! call's [`Clock`]; real randomness (`wasi:random`: every store seeds its own generators
//! from the host's, so no two calls draw the same numbers); stderr captured for failure
//! reports. The one exception, under `kubewasm dev` only: a development component reads
//! a copy of its project's sources (see [`development`](crate::plugin::development)).
//!
//! A `wasm32-wasip2` guest built with `std` imports WASI interfaces, so they are linked,
//! each denying what it would give.

use std::path::Path;

use wasmtime::component::{Linker, ResourceTable};
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxView, WasiView};

use super::clock::Clock;
use crate::plugin::development::GUEST_DIR;

/// Enough of stderr to carry a panic message.
const STDERR_CAPTURE: usize = 16 << 10;

/// One call's WASI context and what the guest wrote to stderr.
pub(crate) struct Wasi {
    ctx: WasiCtx,
    stderr: MemoryOutputPipe,
}

impl Wasi {
    /// `sources`: the copy of its project's sources a development component reads, given
    /// only by `kubewasm dev`; `None` for every other plugin.
    pub(crate) fn new(clock: &Clock, sources: Option<&Path>) -> Self {
        let stderr = MemoryOutputPipe::new(STDERR_CAPTURE);
        // No preopened directories, no environment, no arguments, no network: the
        // builder's defaults deny everything; only stderr is captured. Its default
        // random generators are real ones, seeded afresh for this store.
        let mut builder = WasiCtx::builder();
        if let Some(dir) = sources
            && let Err(e) = builder.preopened_dir(dir, GUEST_DIR, FsPerms::ReadOnly)
        {
            // The call fails saying it finds no sources; this says why.
            tracing::warn!(dir = %dir.display(), error = %e, "the copy of the project's sources cannot be opened");
        }
        let ctx = builder
            .stderr(stderr.clone())
            .wall_clock(clock.wall_clock())
            .monotonic_clock(clock.monotonic_clock())
            .build();
        Self { ctx, stderr }
    }

    /// The view `wasmtime-wasi` works on, over the store's resource table.
    pub(crate) fn view<'a>(&'a mut self, table: &'a mut ResourceTable) -> WasiCtxView<'a> {
        WasiCtxView { ctx: &mut self.ctx, table }
    }

    /// What the guest wrote to stderr so far (up to the capture's size).
    pub(crate) fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.stderr.contents()).into_owned()
    }
}

/// Links WASI preview 2 (synchronous) for stores whose data is a [`WasiView`].
pub(crate) fn add_to_linker<T: WasiView + 'static>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    wasmtime_wasi::p2::add_to_linker_sync(linker)
}
