//! One call's sandbox: a fresh store composed of one piece per capability, as Spin
//! composes its factors. Each capability is a module with its per-call state and what
//! it links: [`limits`] (deadline, memory, pool slots), [`wasi`] (files, environment and
//! sockets denied, real randomness, stderr captured), [`clock`] (the request's time, waits
//! that return at once), [`http`] (outbound HTTP within the operator's grant, for
//! `wasi:http` and the contract's `http`), [`logging`] (the contract's `log` import,
//! Secret values masked) and [`failure`] (what went wrong, in words, with [`uncaught`]
//! reading a Python traceback or a Go panic back from stderr). A new capability is
//! a new module here, one field of [`CallState`] and one line of [`linker`].
//!
//! The CPU deadline counts the time the guest runs, not the time it waits on the
//! network: the epoch clock ticks in wall time, so each time a call reaches its deadline
//! the time its requests waited since is given back (`epoch_deadline_callback`), within a
//! wall-clock cap of the deadline plus every request of its budget at the full timeout.

pub(crate) mod clock;
pub(crate) mod failure;
pub(crate) mod http;
pub(crate) mod limits;
pub(crate) mod logging;
mod uncaught;
pub(crate) mod wasi;

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use wasmtime::component::{HasSelf, Linker, ResourceTable};
use wasmtime::{ResourceLimiter, Store, UpdateDeadline};
use wasmtime_wasi::{WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtxView, WasiHttpView};

use super::contract::{bindings, bindings_0_1_0};
use super::pool::PoolSlots;
use clock::{Clock, ClockView};
use failure::{CallError, Evidence};
use http::{Egress, Http};
use limits::{EPOCH_TICK, Limiter, Limits};
use logging::{PluginLog, Redact};
use wasi::Wasi;

/// The store's data for one call: each capability's state.
pub(crate) struct CallState {
    clock: Clock,
    wasi: Wasi,
    http: Http,
    /// The resources WASI and `wasi:http` hand the guest.
    table: ResourceTable,
    limiter: Limiter,
    log: PluginLog,
    plugin: String,
    /// When the current call began, and its limits: for the wall-clock cap.
    started: Instant,
    limits: Limits,
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        self.wasi.view(&mut self.table)
    }
}

impl WasiHttpView for CallState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        self.http.view(&mut self.table)
    }
}

/// What every store of an engine can call: each capability's imports and the
/// contract's own (`log`, `http`), of every contract version the host runs. Built once
/// per engine.
pub(crate) fn linker(engine: &wasmtime::Engine) -> wasmtime::Result<Linker<CallState>> {
    let mut linker = Linker::new(engine);
    wasi::add_to_linker(&mut linker)?;
    clock::add_to_linker(&mut linker, |state: &mut CallState| ClockView {
        clock: &state.clock,
        table: &mut state.table,
    })?;
    http::add_to_linker(&mut linker)?;
    let contract = |linker: &mut Linker<CallState>| -> wasmtime::Result<()> {
        use bindings::kubewasm::reconciler as current;
        current::types::add_to_linker::<_, HasSelf<PluginLog>>(linker, |state: &mut CallState| &mut state.log)?;
        current::log::add_to_linker::<_, HasSelf<PluginLog>>(linker, |state: &mut CallState| &mut state.log)?;
        current::http::add_to_linker::<_, HasSelf<Http>>(linker, |state: &mut CallState| &mut state.http)
    };
    contract(&mut linker)?;
    bindings_0_1_0::Plugin::add_to_linker::<_, HasSelf<PluginLog>>(&mut linker, |state: &mut CallState| {
        &mut state.log
    })?;
    Ok(linker)
}

/// A fresh store for one call of `plugin`, with `limits` in force, its requests under
/// `egress`, in which no more than `slots` core instances, memories and tables can be
/// created; reading `sources` if it is a development component under `kubewasm dev`.
pub(crate) fn new_store(
    engine: &wasmtime::Engine,
    plugin: &str,
    limits: Limits,
    slots: PoolSlots,
    egress: Arc<Egress>,
    sources: Option<&Path>,
) -> Store<CallState> {
    let clock = Clock::new();
    let state = CallState {
        wasi: Wasi::new(&clock, sources),
        clock,
        http: Http::new(egress),
        table: ResourceTable::new(),
        limiter: Limiter::new(limits, slots),
        log: PluginLog::new(plugin, limits.log_lines),
        plugin: plugin.to_string(),
        started: Instant::now(),
        limits,
    };
    let mut store = Store::new(engine, state);
    store.limiter(|state| &mut state.limiter as &mut dyn ResourceLimiter);
    store.epoch_deadline_callback(|store| Ok(store.data().deadline_reached()));
    rearm(&mut store, limits);
    store
}

/// Gives the next call in `store` the whole deadline, log and request budget of
/// `limits`: the calls of one reconcile share an instance, not their limits.
pub(crate) fn rearm(store: &mut Store<CallState>, limits: Limits) {
    store.set_epoch_deadline(limits.deadline_ticks());
    let state = store.data_mut();
    state.log.rearm(limits.log_lines);
    state.http.rearm();
    state.started = Instant::now();
    state.limits = limits;
}

impl CallState {
    /// The call ran into its deadline: it goes on by the time it waited on the network
    /// since, unless that is none or the call has run past its wall-clock cap.
    fn deadline_reached(&self) -> UpdateDeadline {
        let waited = self.http.io_wait().take_uncredited();
        let cap = self.limits.deadline + self.http.max_wait();
        if waited < EPOCH_TICK || self.started.elapsed() > cap {
            return UpdateDeadline::Interrupt;
        }
        let ticks = waited.as_millis() / EPOCH_TICK.as_millis();
        UpdateDeadline::Continue(u64::try_from(ticks).unwrap_or(u64::MAX))
    }

    /// Hides `values` (a plugin's Secret values) in what the plugin logs.
    pub(crate) fn hide(&mut self, values: Redact) {
        self.log.hide(values);
    }

    /// The clocks the plugin reads from now on start at `now`: the time of the request or
    /// event it answers.
    pub(crate) fn start_clocks_at(&self, now: jiff::Timestamp) {
        self.clock.start_at(now);
    }

    /// Log lines the plugin emitted beyond its budget in this call.
    pub(crate) fn logs_dropped(&self) -> u32 {
        self.log.dropped()
    }

    /// Why the call `call` failed with `error`, from what it left in this store.
    pub(crate) fn failure(&self, error: &wasmtime::Error, call: &'static str, limits: Limits) -> CallError {
        let stderr = self.wasi.stderr();
        let evidence = Evidence {
            plugin: &self.plugin,
            call,
            deadline: limits.deadline,
            memory_exceeded_mib: self.limiter.exceeded_mib(),
            stderr: &stderr,
        };
        failure::classify(error, &evidence)
    }
}
