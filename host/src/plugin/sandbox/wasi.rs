//! WASI as a plugin sees it: no files, no environment, no arguments, no sockets;
//! clocks that read the same in every call; stderr captured for failure reports.
//!
//! A `wasm32-wasip2` guest built with `std` imports WASI interfaces, so they are linked,
//! each denying what it would give.

use std::time::Duration;

use wasmtime::component::{Linker, ResourceTable};
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{HostMonotonicClock, HostWallClock, WasiCtx, WasiCtxView, WasiView};

/// Enough of stderr to carry a panic message.
const STDERR_CAPTURE: usize = 16 << 10;

/// One call's WASI context and what the guest wrote to stderr.
pub(crate) struct Wasi {
    ctx: WasiCtx,
    stderr: MemoryOutputPipe,
}

impl Wasi {
    pub(crate) fn new() -> Self {
        let stderr = MemoryOutputPipe::new(STDERR_CAPTURE);
        // No preopened directories, no environment, no arguments, no network: the
        // builder's defaults deny everything; only stderr is captured.
        let ctx = WasiCtx::builder()
            .stderr(stderr.clone())
            .wall_clock(FrozenClock)
            .monotonic_clock(SteppedClock::default())
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

/// The wall clock a plugin reads: 2000-01-01T00:00:00Z, always. Plugins get the time
/// from the request's `now`, so a reconcile depends on its inputs only; the clock is not
/// zero because some language runtimes (Go's) refuse to start on a zero clock.
struct FrozenClock;

/// Seconds from the Unix epoch to 2000-01-01T00:00:00Z.
const FROZEN_WALL_SECONDS: u64 = 946_684_800;

impl HostWallClock for FrozenClock {
    fn resolution(&self) -> Duration {
        Duration::from_secs(1)
    }
    fn now(&self) -> Duration {
        Duration::from_secs(FROZEN_WALL_SECONDS)
    }
}

/// A monotonic clock that starts at one second and moves one microsecond per reading:
/// runtimes that wait for time to pass make progress, and every call of a plugin on the
/// same input still reads the same times.
#[derive(Default)]
struct SteppedClock(std::sync::atomic::AtomicU64);

impl HostMonotonicClock for SteppedClock {
    fn resolution(&self) -> u64 {
        1_000
    }
    fn now(&self) -> u64 {
        1_000_000_000 + 1_000 * self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clocks_are_not_zero_and_read_the_same_in_every_call() {
        assert_eq!(FrozenClock.now(), Duration::from_secs(FROZEN_WALL_SECONDS));
        let readings = || {
            let clock = SteppedClock::default();
            [clock.now(), clock.now(), clock.now()]
        };
        let first = readings();
        assert!(first[0] > 0 && first[0] < first[1] && first[1] < first[2], "{first:?}");
        assert_eq!(first, readings(), "a fresh call reads the same times");
    }
}
