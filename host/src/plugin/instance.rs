//! One fresh instance of a plugin: the calls of one reconcile (`related`, then
//! `reconcile`) run in it, each with the whole of the plugin's limits.

use std::sync::Arc;

use serde_json::Value;

use super::contract::{MalformedAnswer, bindings, wit};
use super::engine::{Code, Engine};
use super::pool::{Permit, PoolSlots};
use super::sandbox::failure::CallError;
use super::sandbox::limits::Limits;
use super::sandbox::{self, CallState};
use kubewasm_contract::{KindRef, Query, Request, Response};

/// One fresh sandbox of a plugin, from [`Plugin::instance`](super::Plugin::instance).
///
/// Costs: creating it takes the plugin's slots of the engine's instance pool (waiting,
/// when the pool is full, until they are free) and gives them back when it is dropped;
/// the component is instantiated at the first call (tens of microseconds). Create one
/// per reconcile: nothing a plugin does in it survives to the next.
pub struct Instance<'a> {
    /// The code this instance runs, kept even if the plugin's code is replaced meanwhile.
    code: Arc<Code>,
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
    /// Waits, when the engine of `code`'s tier pools instances, until the pool has
    /// `slots` free.
    pub(crate) fn new(
        engine: &Engine,
        code: Arc<Code>,
        slots: PoolSlots,
        label: &'a str,
        related: &'a [KindRef],
        limits: Limits,
    ) -> Self {
        let compiler = engine.compiler(code.tier);
        let permit = compiler.budget().map(|budget| budget.take(slots));
        let store = sandbox::new_store(compiler.wasmtime(), label, limits, slots);
        Self { code, label, related, limits, store, exports: None, _permit: permit }
    }

    /// Instantiates the component now rather than at the first call.
    pub(crate) fn instantiate(&mut self) -> wasmtime::Result<()> {
        if self.exports.is_none() {
            self.exports = Some(self.code.pre.instantiate(&mut self.store)?);
        }
        Ok(())
    }

    /// The related objects the plugin wants for `parent`; not asked (an empty list)
    /// when the manifest declares no related kinds.
    ///
    /// # Errors
    ///
    /// A [`CallError`] when the call fails, or [`CallError::Malformed`] when a query
    /// names a kind the manifest does not declare in `related`.
    pub fn related(&mut self, parent: &Value) -> Result<Vec<Query>, CallError> {
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

    /// One reconcile. The answer is decoded, not validated: pass it through
    /// [`validate`](super::validate) before acting on it.
    ///
    /// # Errors
    ///
    /// A [`CallError`] saying what went wrong.
    pub fn reconcile(&mut self, request: &Request) -> Result<Response, CallError> {
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

    /// Calls the export `name` through `f`, instantiating first if this is the first
    /// call, with the whole deadline and log budget.
    pub(crate) fn call<R>(
        &mut self,
        name: &'static str,
        f: impl FnOnce(&mut wasmtime::Store<CallState>, &bindings::Plugin) -> wasmtime::Result<R>,
    ) -> Result<R, CallError> {
        sandbox::rearm(&mut self.store, self.limits);
        let result = match &self.exports {
            Some(exports) => f(&mut self.store, exports),
            None => self.code.pre.instantiate(&mut self.store).and_then(|exports| {
                let result = f(&mut self.store, &exports);
                self.exports = Some(exports);
                result
            }),
        };
        let dropped = self.store.data().logs_dropped();
        if dropped > 0 {
            tracing::warn!(plugin = %self.label, dropped, "plugin exceeded its log budget for one {name} call");
        }
        result.map_err(|e| self.store.data().failure(&e, name, self.limits))
    }
}
