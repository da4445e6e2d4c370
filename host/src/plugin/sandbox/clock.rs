//! The clocks a plugin reads. The wall clock starts at the request's `now` (what `kubewasm
//! render --now` sets; a delivered event's `now`), the monotonic clock at one second, and both
//! move together: one microsecond per reading, and by the whole span of every wait, which
//! returns at once.
//!
//! So a plugin's `Date.now()`, `time.time()` or `time.Now()` is the time of the request it
//! answers, elapsed time adds up (a `sleep(0.5)` reads as half a second), a call on the same
//! input reads the same times, and a plugin that sleeps holds no thread: `wasi:clocks`' own
//! timers wait in real time, in a host call where the epoch deadline cannot stop them.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use wasmtime::component::{HasData, Linker, Resource, ResourceTable};
use wasmtime_wasi::p2::bindings::clocks::monotonic_clock;
use wasmtime_wasi::p2::{DynPollable, Pollable, subscribe};
use wasmtime_wasi::{HostMonotonicClock, HostWallClock};

/// How far a reading moves the clocks.
const STEP_NANOS: u64 = 1_000;

/// Where the monotonic clock starts: not zero, which some runtimes take for "no clock".
const MONOTONIC_START_NANOS: u64 = 1_000_000_000;

/// The clocks of one call's store; cheap to clone (the clones read and move one clock).
#[derive(Clone)]
pub(crate) struct Clock(Arc<Shared>);

struct Shared {
    /// The wall time the call started at, in nanoseconds since the Unix epoch.
    start: AtomicU64,
    /// How far both clocks have moved since.
    elapsed: AtomicU64,
}

impl Clock {
    /// A clock that starts at the host's time: what a plugin reads before a request
    /// sets its `now` (while it describes itself, say).
    pub(crate) fn new() -> Self {
        let now = u64::try_from(jiff::Timestamp::now().as_nanosecond()).unwrap_or(0);
        Self(Arc::new(Shared { start: AtomicU64::new(now), elapsed: AtomicU64::new(0) }))
    }

    /// The wall clock starts at `now` from here on; time already elapsed stays elapsed,
    /// so the monotonic clock never goes back.
    pub(crate) fn start_at(&self, now: jiff::Timestamp) {
        let nanos = u64::try_from(now.as_nanosecond()).unwrap_or(0);
        self.0.start.store(nanos, Ordering::Relaxed);
    }

    /// Time elapsed at this reading; the reading moves the clocks one step.
    fn read(&self) -> u64 {
        self.0.elapsed.fetch_add(STEP_NANOS, Ordering::Relaxed)
    }

    fn wall(&self) -> Duration {
        Duration::from_nanos(self.0.start.load(Ordering::Relaxed).saturating_add(self.read()))
    }

    fn monotonic(&self) -> u64 {
        MONOTONIC_START_NANOS.saturating_add(self.read())
    }

    /// The monotonic time now, without moving the clocks.
    fn monotonic_now(&self) -> u64 {
        MONOTONIC_START_NANOS.saturating_add(self.0.elapsed.load(Ordering::Relaxed))
    }

    /// Moves both clocks to the monotonic time `at`, if they are not past it.
    fn advance_to(&self, at: u64) {
        self.0.elapsed.fetch_max(at.saturating_sub(MONOTONIC_START_NANOS), Ordering::Relaxed);
    }

    /// The wall clock, for `WasiCtxBuilder::wall_clock`.
    pub(crate) fn wall_clock(&self) -> impl HostWallClock + use<> {
        WallClock(self.clone())
    }

    /// The monotonic clock, for `WasiCtxBuilder::monotonic_clock`.
    pub(crate) fn monotonic_clock(&self) -> impl HostMonotonicClock + use<> {
        MonotonicClock(self.clone())
    }
}

struct WallClock(Clock);

impl HostWallClock for WallClock {
    fn resolution(&self) -> Duration {
        Duration::from_nanos(STEP_NANOS)
    }
    fn now(&self) -> Duration {
        self.0.wall()
    }
}

struct MonotonicClock(Clock);

impl HostMonotonicClock for MonotonicClock {
    fn resolution(&self) -> u64 {
        STEP_NANOS
    }
    fn now(&self) -> u64 {
        self.0.monotonic()
    }
}

/// What `wasi:clocks/monotonic-clock` works on: the call's clock, and the table its
/// timers go in.
pub(crate) struct ClockView<'a> {
    pub(crate) clock: &'a Clock,
    pub(crate) table: &'a mut ResourceTable,
}

/// [`HasData`] of [`ClockView`], for the linker.
pub(crate) struct Clocks;

impl HasData for Clocks {
    type Data<'a> = ClockView<'a>;
}

impl monotonic_clock::Host for ClockView<'_> {
    fn now(&mut self) -> wasmtime::Result<monotonic_clock::Instant> {
        Ok(self.clock.monotonic())
    }

    fn resolution(&mut self) -> wasmtime::Result<monotonic_clock::Duration> {
        Ok(STEP_NANOS)
    }

    fn subscribe_instant(&mut self, when: monotonic_clock::Instant) -> wasmtime::Result<Resource<DynPollable>> {
        let timer = self.table.push(Timer { clock: self.clock.clone(), at: when })?;
        subscribe(self.table, timer)
    }

    fn subscribe_duration(&mut self, duration: monotonic_clock::Duration) -> wasmtime::Result<Resource<DynPollable>> {
        let at = self.clock.monotonic_now().saturating_add(duration);
        let timer = self.table.push(Timer { clock: self.clock.clone(), at })?;
        subscribe(self.table, timer)
    }
}

/// A wait until the monotonic time `at`: ready at once, the clocks moved to `at`.
struct Timer {
    clock: Clock,
    at: u64,
}

#[wasmtime_wasi::async_trait]
impl Pollable for Timer {
    async fn ready(&mut self) {
        self.clock.advance_to(self.at);
    }
}

/// Puts this module's `wasi:clocks/monotonic-clock` in place of `wasmtime-wasi`'s, which
/// `wasi::add_to_linker` linked first.
pub(crate) fn add_to_linker<T: 'static>(
    linker: &mut Linker<T>,
    view: fn(&mut T) -> ClockView<'_>,
) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let added = monotonic_clock::add_to_linker::<T, Clocks>(linker, view);
    linker.allow_shadowing(false);
    added
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> jiff::Timestamp {
        text.parse().expect("timestamp")
    }

    /// 2026-01-01T00:00:00Z, as a time since the Unix epoch.
    const NEW_YEAR: Duration = Duration::from_hours(490_896);

    #[test]
    fn the_wall_clock_reads_the_requests_time_and_both_clocks_move_together() {
        let clock = Clock::new();
        clock.start_at(at("2026-01-01T00:00:00Z"));
        let (wall, monotonic) = (clock.wall_clock(), clock.monotonic_clock());
        let first = wall.now();
        assert_eq!(first, NEW_YEAR, "the request's now, to the nanosecond");
        let (m1, m2) = (monotonic.now(), monotonic.now());
        assert!(m1 >= MONOTONIC_START_NANOS && m1 < m2, "{m1} {m2}");
        let later = wall.now();
        assert_eq!(
            later.checked_sub(first),
            Some(Duration::from_nanos(3 * STEP_NANOS)),
            "every reading moved both clocks"
        );
    }

    #[test]
    fn a_wait_returns_at_once_and_moves_both_clocks_by_its_span() {
        let clock = Clock::new();
        clock.start_at(at("2026-01-01T00:00:00Z"));
        let before = clock.monotonic_clock().now();
        let half_a_second = 500_000_000;
        let mut table = ResourceTable::new();
        let mut view = ClockView { clock: &clock, table: &mut table };
        monotonic_clock::Host::subscribe_duration(&mut view, half_a_second).expect("a timer");
        // What a guest's `poll` does with the timer: waits until it is ready.
        let started = std::time::Instant::now();
        let mut sleep = Timer { clock: clock.clone(), at: clock.monotonic_now() + half_a_second };
        futures::executor::block_on(sleep.ready());
        assert!(started.elapsed() < Duration::from_millis(100), "no real wait");
        let after = clock.monotonic_clock().now();
        assert!(after - before >= half_a_second, "half a second elapsed: {}", after - before);
        let wall = clock.wall_clock().now();
        assert!(wall >= NEW_YEAR + Duration::from_millis(500), "{wall:?}");
        // A time already past moves nothing back.
        let mut past = Timer { clock: clock.clone(), at: 0 };
        futures::executor::block_on(past.ready());
        assert!(clock.monotonic_clock().now() > after);
    }

    #[test]
    fn a_fresh_clock_reads_the_same_times_for_the_same_now() {
        let readings = || {
            let clock = Clock::new();
            clock.start_at(at("2026-01-01T00:00:00Z"));
            let (wall, monotonic) = (clock.wall_clock(), clock.monotonic_clock());
            (monotonic.now(), wall.now(), monotonic.now())
        };
        assert_eq!(readings(), readings());
    }
}
