//! Native unit tests of a plugin: `cargo test`, no WebAssembly, no host.
//!
//! [`reconcile`] encodes the request exactly as the host does, runs the same export
//! glue as the WebAssembly component, decodes the answer and checks it with the host's
//! own validation (`kubewasm_contract::validate`): an answer the host would refuse
//! fails the test.
//!
//! ```
//! # use kubewasm_sdk::prelude::*;
//! # struct Noop;
//! # impl Reconciler for Noop {
//! #     fn describe() -> Manifest { Manifest::new("noop", KindRef::namespaced("x.io", "v1", "X", "xs")) }
//! #     fn reconcile(_: &Request) -> Result<Response, Error> { Ok(Response::new()) }
//! # }
//! use kubewasm_sdk::testing::{self, TestRequest};
//! use kubewasm_sdk::serde_json::json;
//!
//! let parent = json!({"apiVersion": "x.io/v1", "kind": "X", "metadata": {"name": "a"}});
//! let outcome = testing::reconcile::<Noop>(TestRequest::new(parent)).unwrap();
//! assert!(outcome.children.is_empty());
//! ```

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::Resource;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::bindings::kubewasm::reconciler::types as wit;
use crate::{Error, Event, EventType, Manifest, Object, Query, Reconciler, Request, Response, export};

/// The input of one reconcile, built the way the host builds it.
#[derive(Clone, Debug)]
pub struct TestRequest(Request);

impl TestRequest {
    /// A request for `parent` (any `Serialize`: a `json!` value, a k8s-openapi object).
    ///
    /// # Panics
    ///
    /// When `parent` does not serialize to JSON (a bug in the test).
    pub fn new(parent: impl Serialize) -> Self {
        Self(Request::new(to_json(parent), Vec::new(), Vec::new(), false, "2026-01-01T00:00:00Z".into(), Value::Null))
    }

    /// An observed child (the host only sends children the parent controls).
    #[must_use]
    pub fn child(mut self, object: impl Serialize) -> Self {
        self.0.children.push(Object::new(to_json(object)));
        self
    }

    /// An object the plugin's related queries selected.
    #[must_use]
    pub fn related(mut self, object: impl Serialize) -> Self {
        self.0.related.push(Object::new(to_json(object)));
        self
    }

    /// The parent is being deleted and waits on the plugin's finalizer.
    #[must_use]
    pub fn finalizing(mut self) -> Self {
        self.0.finalizing = true;
        self
    }

    #[must_use]
    pub fn now(mut self, rfc3339: &str) -> Self {
        self.0.now = rfc3339.into();
        self
    }

    /// The plugin's settings.
    #[must_use]
    pub fn config(mut self, config: impl Serialize) -> Self {
        self.0.config = to_json(config);
        self
    }
}

fn to_json(value: impl Serialize) -> Value {
    serde_json::to_value(value).expect("test input serializes to JSON")
}

/// What the plugin answered, decoded from the wire form.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub children: Vec<Object>,
    pub status: Option<Value>,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    pub requeue_after: Option<Duration>,
    pub events: Vec<Event>,
    pub finalized: bool,
    /// Lines the plugin logged during the call: level, message, fields.
    pub logs: Vec<crate::log::Line>,
}

impl Outcome {
    /// Desired children of the k8s-openapi type `K`.
    ///
    /// # Panics
    ///
    /// When a child of that kind does not parse as `K`.
    pub fn children_of<K: Resource + DeserializeOwned>(&self) -> Vec<K> {
        self.children.iter().filter(|o| o.is::<K>()).map(|o| o.parse().expect("desired child parses")).collect()
    }

    /// The desired child of type `K` named `name`.
    ///
    /// # Panics
    ///
    /// When the child is absent or does not parse as `K`.
    pub fn child<K: Resource + DeserializeOwned>(&self, name: &str) -> K {
        self.children
            .iter()
            .find(|o| o.is::<K>() && o.name() == name)
            .unwrap_or_else(|| panic!("no desired {} named {name}", K::KIND))
            .parse()
            .expect("desired child parses")
    }

    /// The desired status parsed into `T` (your status struct).
    ///
    /// # Panics
    ///
    /// When there is no status, or it does not parse as `T`.
    pub fn status_as<T: DeserializeOwned>(&self) -> T {
        let status = self.status.clone().expect("the response sets a status");
        serde_json::from_value(status).unwrap_or_else(|e| panic!("the status does not parse: {e}"))
    }

    /// Warning events only.
    pub fn warnings(&self) -> Vec<&Event> {
        self.events.iter().filter(|e| e.type_ == EventType::Warning).collect()
    }
}

/// The plugin's manifest, checked as the host checks it at load.
///
/// # Panics
///
/// When the host would refuse to load a plugin with this manifest.
pub fn describe<R: Reconciler>() -> Manifest {
    let manifest = R::describe();
    if let Err(e) = manifest.check() {
        panic!("the host would refuse to load this plugin: {e}");
    }
    manifest
}

/// The plugin's related queries for `parent`.
pub fn related<R: Reconciler>(parent: impl Serialize) -> Vec<Query> {
    R::related(&Object::new(to_json(parent)))
}

/// Run one reconcile of `R` natively, through the export glue, and check the answer
/// exactly as the host does before it writes anything.
///
/// # Errors
///
/// The plugin's own [`Error`], as the host would receive it.
///
/// # Panics
///
/// When the host would refuse the answer (a child of a kind the manifest does not
/// declare, in another namespace, unnamed, twice, too large...): the message lists
/// every problem, as the host's `ResponseRefused` event does. Also when the manifest
/// itself is one the host would not load.
pub fn reconcile<R: Reconciler>(request: TestRequest) -> Result<Outcome, Error> {
    let manifest = describe::<R>();
    let TestRequest(request) = request;
    crate::log::native::CAPTURED.with(|c| c.borrow_mut().clear());
    let result = export::reconcile::<R>(wit::Request::from(&request));
    let logs = crate::log::native::CAPTURED.with(|c| std::mem::take(&mut *c.borrow_mut()));
    let answer = result.map_err(Error::from)?;
    let response = Response::try_from(answer).unwrap_or_else(|e| panic!("the host would refuse this answer: {e}"));
    let response = kubewasm_contract::validate(&manifest, request.parent.json(), response)
        .unwrap_or_else(|refusal| panic!("the host would refuse this answer: {refusal}"));
    Ok(Outcome {
        children: response.children.into_iter().map(Object::new).collect(),
        status: response.status,
        labels: response.labels,
        annotations: response.annotations,
        requeue_after: response.requeue_after,
        events: response.events,
        finalized: response.finalized,
        logs,
    })
}
