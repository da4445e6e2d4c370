//! One fresh instance of a plugin: the calls of one reconcile (`related`, then
//! `reconcile`), or one event's `handle`, run in it, each with the whole of the plugin's
//! limits. The component may be built against any contract version the host runs; each
//! call is made through that version's bindings.

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use super::contract::{MalformedAnswer, Version, bindings, bindings_0_1_0, wit, wit_0_1_0};
use super::engine::{Engine, Tier};
use super::pool::{Permit, PoolSlots};
use super::sandbox::failure::CallError;
use super::sandbox::http::Egress;
use super::sandbox::limits::Limits;
use super::sandbox::logging::Redact;
use super::sandbox::{self, CallState};
use kubewasm_contract::{
    AdmissionRequest, ConversionRequest, Defaulted, Denial, KindRef, Manifest, ObjectEvent, Query, Request, Response,
    Verdict,
};

/// What a 0.1.0 component answers an admission call: its manifest admits nothing, so
/// the host never asks.
fn no_admission() -> Denial {
    Denial::new("built against contract 0.1.0, which has no admission")
}

/// A component, compiled and linked, ready to instantiate: through the bindings of the
/// contract version it was built against.
pub(crate) enum Pre {
    Current(bindings::PluginPre<CallState>),
    V0_1_0(bindings_0_1_0::PluginPre<CallState>),
}

impl Pre {
    /// The bindings of `version` over `pre`; fails when the component lacks an export
    /// of that version.
    pub(crate) fn new(version: Version, pre: wasmtime::component::InstancePre<CallState>) -> wasmtime::Result<Self> {
        Ok(match version {
            Version::Current => Self::Current(bindings::PluginPre::new(pre)?),
            Version::V0_1_0 => Self::V0_1_0(bindings_0_1_0::PluginPre::new(pre)?),
        })
    }

    /// The contract version the component was built against.
    pub(crate) fn version(&self) -> Version {
        match self {
            Self::Current(_) => Version::Current,
            Self::V0_1_0(_) => Version::V0_1_0,
        }
    }

    fn instantiate(&self, store: &mut wasmtime::Store<CallState>) -> wasmtime::Result<Exports> {
        Ok(match self {
            Self::Current(pre) => Exports::Current(pre.instantiate(store)?),
            Self::V0_1_0(pre) => Exports::V0_1_0(pre.instantiate(store)?),
        })
    }
}

/// A component compiled by one tier and linked against its sandbox, through the bindings
/// of its contract version: what each call's instance is made from, in that tier's engine.
pub(crate) struct Code {
    pub(crate) tier: Tier,
    pub(crate) pre: Pre,
    /// The copy of the sources a development component reads (`kubewasm dev` only).
    pub(crate) sources: Option<Arc<Path>>,
}

impl Code {
    /// Links `component`, compiled by `tier`, for a component built against `version`.
    pub(crate) fn link(
        engine: &Engine,
        component: &wasmtime::component::Component,
        tier: Tier,
        version: Version,
    ) -> wasmtime::Result<Self> {
        Ok(Self { tier, pre: Pre::new(version, engine.instantiate_pre(component, tier)?)?, sources: None })
    }

    /// The same code, its calls reading `sources` (see [`development`](super::development)).
    pub(crate) fn reading(self, sources: Option<Arc<Path>>) -> Self {
        Self { sources, ..self }
    }
}

/// An instantiated component's exports, of its contract version.
pub(crate) enum Exports {
    Current(bindings::Plugin),
    V0_1_0(bindings_0_1_0::Plugin),
}

/// One fresh sandbox of a plugin, from [`Plugin::instance`](super::Plugin::instance).
///
/// Costs: creating it takes the plugin's slots of the engine's instance pool (waiting,
/// when the pool is full, until they are free) and gives them back when it is dropped;
/// the component is instantiated at the first call (tens of microseconds). Create one
/// per reconcile or event: nothing a plugin does in it survives to the next.
pub struct Instance<'a> {
    /// The code this instance runs, kept even if the plugin's code is replaced meanwhile.
    code: Arc<Code>,
    /// The plugin's name (its file before it described itself), in errors and logs.
    label: &'a str,
    /// The kinds `related` may ask for.
    related: &'a [KindRef],
    limits: Limits,
    store: wasmtime::Store<CallState>,
    exports: Option<Exports>,
    /// Values never shown in what the plugin writes.
    redact: Redact,
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
        egress: Arc<Egress>,
    ) -> Self {
        let compiler = engine.compiler(code.tier);
        let permit = compiler.budget().map(|budget| budget.take(slots));
        let store = sandbox::new_store(compiler.wasmtime(), label, limits, slots, egress, code.sources.as_deref());
        Self { code, label, related, limits, store, exports: None, redact: Redact::default(), _permit: permit }
    }

    /// Never shows `values` (the plugin's Secret values, in its config) in what the
    /// plugin writes: its log lines, its errors, its events.
    pub fn hide(&mut self, values: Vec<String>) {
        self.redact = Redact::new(values);
        self.store.data_mut().hide(self.redact.clone());
    }

    /// Instantiates the component now rather than at the first call.
    pub(crate) fn instantiate(&mut self) -> wasmtime::Result<()> {
        if self.exports.is_none() {
            self.exports = Some(self.code.pre.instantiate(&mut self.store)?);
        }
        Ok(())
    }

    /// The clocks the plugin reads from now on start at `now` (RFC 3339): the time of the
    /// request it is about to answer. [`Instance::reconcile`] and [`Instance::handle`] set
    /// it from their request; set it before [`Instance::related`], which has none. Until
    /// then the clocks read the host's time; a `now` that is no RFC 3339 time leaves them
    /// as they are.
    pub fn set_time(&mut self, now: &str) {
        if let Ok(now) = now.parse::<jiff::Timestamp>() {
            self.store.data().start_clocks_at(now);
        }
    }

    /// What the plugin says it is: the load's self-test.
    pub(crate) fn describe(&mut self) -> Result<Manifest, CallError> {
        self.call("describe", |store, exports| match exports {
            Exports::Current(e) => e.kubewasm_reconciler_plugin_info().call_describe(store).map(Manifest::from),
            Exports::V0_1_0(e) => e.kubewasm_reconciler_reconciler().call_describe(store).map(Manifest::from),
        })
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
        let queries: Vec<Query> = self.call("related", |store, exports| match exports {
            Exports::Current(e) => e
                .kubewasm_reconciler_reconciler()
                .call_related(&mut *store, &parent)
                .map(|qs| qs.into_iter().map(Query::from).collect()),
            Exports::V0_1_0(e) => e
                .kubewasm_reconciler_reconciler()
                .call_related(&mut *store, &parent)
                .map(|qs| qs.into_iter().map(Query::from).collect()),
        })?;
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
        self.set_time(request.now_rfc3339());
        let plugin = self.label.to_string();
        let redact = self.redact.clone();
        let answer = self.call("reconcile", |store, exports| match exports {
            Exports::Current(e) => {
                let wire = wit::Request::from(request);
                e.kubewasm_reconciler_reconciler().call_reconcile(store, &wire).map(|answer| {
                    answer.map(Response::try_from).map_err(|e| CallError::Plugin {
                        plugin: plugin.clone(),
                        message: redact.apply(&e.message),
                        retryable: e.retryable,
                    })
                })
            }
            Exports::V0_1_0(e) => {
                let wire = wit_0_1_0::Request::from(request);
                e.kubewasm_reconciler_reconciler().call_reconcile(store, &wire).map(|answer| {
                    answer.map(Response::try_from).map_err(|e| CallError::Plugin {
                        plugin: plugin.clone(),
                        message: redact.apply(&e.message),
                        retryable: e.retryable,
                    })
                })
            }
        })?;
        let mut response = answer?.map_err(|e| CallError::Malformed { plugin, source: e.into() })?;
        for event in &mut response.events {
            event.message = self.redact.apply(&event.message);
        }
        Ok(response)
    }

    /// Hands the plugin's handler one change of a watched object.
    ///
    /// # Errors
    ///
    /// A [`CallError`] saying what went wrong; [`CallError::Plugin`] for the handler's
    /// own error (retryable or not, as it says).
    pub fn handle(&mut self, event: &ObjectEvent) -> Result<(), CallError> {
        self.set_time(&event.now);
        let plugin = self.label.to_string();
        let answer = self.call("handle", |store, exports| match exports {
            Exports::Current(e) => {
                let wire = wit::ObjectEvent::from(event);
                e.kubewasm_reconciler_handler().call_handle(store, &wire)
            }
            // Its manifest has no watches: nothing is delivered to it.
            Exports::V0_1_0(_) => Ok(Err(wit::ReconcileError {
                message: "built against contract 0.1.0, which has no handler".into(),
                retryable: false,
            })),
        })?;
        answer.map_err(|e| CallError::Plugin { plugin, message: self.redact.apply(&e.message), retryable: e.retryable })
    }

    /// Asks the plugin's `default` to complete one write: the defaulted write, or the
    /// plugin's refusal.
    ///
    /// # Errors
    ///
    /// A [`CallError`] when the call fails or its answer holds JSON that does not parse.
    pub fn default(&mut self, request: &AdmissionRequest) -> Result<Result<Defaulted, Denial>, CallError> {
        self.set_time(&request.now);
        let answer = self.call("default", |store, exports| match exports {
            Exports::Current(e) => {
                e.kubewasm_reconciler_admission().call_default(store, &wit::AdmissionRequest::from(request))
            }
            Exports::V0_1_0(_) => Ok(Err(wit::Denial::from(&no_admission()))),
        })?;
        match answer {
            Ok(defaulted) => Defaulted::try_from(defaulted)
                .map(Ok)
                .map_err(|e| CallError::Malformed { plugin: self.label.to_string(), source: e.into() }),
            Err(denial) => Ok(Err(self.redacted(Denial::from(denial)))),
        }
    }

    /// Asks the plugin's `validate` whether one write may be stored.
    ///
    /// # Errors
    ///
    /// A [`CallError`] when the call fails.
    pub fn validate(&mut self, request: &AdmissionRequest) -> Result<Verdict, CallError> {
        self.set_time(&request.now);
        let verdict = self.call("validate", |store, exports| match exports {
            Exports::Current(e) => {
                e.kubewasm_reconciler_admission().call_validate(store, &wit::AdmissionRequest::from(request))
            }
            Exports::V0_1_0(_) => Ok(wit::Verdict::from(&Verdict::deny(no_admission()))),
        })?;
        let mut verdict = Verdict::from(verdict);
        verdict.denied = verdict.denied.map(|d| self.redacted(d));
        Ok(verdict)
    }

    /// Asks the plugin's `convert` for the request's objects in its desired version, in
    /// order: the objects, or the plugin's reason why not.
    ///
    /// # Errors
    ///
    /// A [`CallError`] when the call fails or an object it returns does not parse.
    pub fn convert(&mut self, request: &ConversionRequest) -> Result<Result<Vec<Value>, String>, CallError> {
        self.set_time(&request.now);
        let answer = self.call("convert", |store, exports| match exports {
            Exports::Current(e) => {
                e.kubewasm_reconciler_admission().call_convert(store, &wit::ConversionRequest::from(request))
            }
            Exports::V0_1_0(_) => Ok(Err(no_admission().message)),
        })?;
        let objects = match answer {
            Ok(objects) => objects,
            Err(message) => return Ok(Err(self.redact.apply(&message))),
        };
        let parsed: Result<Vec<Value>, _> = objects
            .iter()
            .enumerate()
            .map(|(i, text)| {
                serde_json::from_str(text).map_err(|source| kubewasm_contract::wit::NotJson {
                    what: format!("converted object #{i}"),
                    source,
                })
            })
            .collect();
        parsed.map(Ok).map_err(|e| CallError::Malformed { plugin: self.label.to_string(), source: e.into() })
    }

    fn redacted(&self, mut denial: Denial) -> Denial {
        denial.message = self.redact.apply(&denial.message);
        for cause in &mut denial.causes {
            cause.message = self.redact.apply(&cause.message);
        }
        denial
    }

    /// Calls an export through `f`, `name` naming it in errors, instantiating first if
    /// this is the first call, with the whole deadline and log budget.
    pub(crate) fn call<R>(
        &mut self,
        name: &'static str,
        f: impl FnOnce(&mut wasmtime::Store<CallState>, &Exports) -> wasmtime::Result<R>,
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
        result.map_err(|e| self.store.data().failure(&e, name, self.limits).redacted(&self.redact))
    }
}
