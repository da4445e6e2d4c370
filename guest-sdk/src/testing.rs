//! Native unit tests of a plugin: `cargo test`, no WebAssembly, no host, no network.
//!
//! [`reconcile`] encodes the request exactly as the host does, runs the same export
//! glue as the WebAssembly component, decodes the answer and checks it with the host's
//! own validation (`kubewasm_contract::validate`): an answer the host would refuse
//! fails the test. [`handle`] does the same with one change of a watched object;
//! [`default`], [`validate`] and [`convert`] with a write to admit or objects to convert,
//! checking the answer as kube-apiserver does (a defaulting patch must apply, converted
//! objects keep their identity and metadata). The
//! plugin's HTTP requests ([`crate::http`]) are answered from canned responses
//! ([`Http`]) and recorded, for the test to check what was sent.
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
use crate::http::{HttpError, HttpRequest, HttpResponse};
use crate::{
    Admission, AdmissionRequest, Change, ConversionRequest, Defaulted, Denial, Error, Event, EventType, Handler,
    KindRef, Manifest, Mutation, Object, ObjectEvent, Operation, Query, Reconciler, Request, Response, UserInfo,
    Verdict, export,
};

/// The input of one reconcile, built the way the host builds it.
#[derive(Clone, Debug)]
pub struct TestRequest(Request, Http);

impl TestRequest {
    /// A request for `parent` (any `Serialize`: a `json!` value, a k8s-openapi object).
    ///
    /// # Panics
    ///
    /// When `parent` does not serialize to JSON (a bug in the test).
    pub fn new(parent: impl Serialize) -> Self {
        let request = Request::new(to_json(parent), Vec::new(), Vec::new(), false, NOW.into(), Value::Null);
        Self(request, Http::new())
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

    /// Answers the plugin's HTTP requests with `http`.
    #[must_use]
    pub fn http(mut self, http: Http) -> Self {
        self.1 = http;
        self
    }
}

/// The time test inputs carry unless they say otherwise.
pub const NOW: &str = "2026-01-01T00:00:00Z";

/// Canned answers to a plugin's HTTP requests: each request gets the first entry whose
/// method and URL match (`*` in a URL stands for any text); a request no entry matches
/// fails with [`HttpError::Denied`], as one the operator did not grant.
#[derive(Clone, Debug, Default)]
pub struct Http(Vec<(String, String, Result<HttpResponse, HttpError>)>);

impl Http {
    /// No request is answered.
    pub fn new() -> Self {
        Self::default()
    }

    /// Answers `method` requests (`*`: any) to URLs matching `url` with `response`.
    #[must_use]
    pub fn on(mut self, method: &str, url: &str, response: HttpResponse) -> Self {
        self.0.push((method.to_string(), url.to_string(), Ok(response)));
        self
    }

    /// Fails `method` requests to URLs matching `url` with `error` (a timeout, a denial...).
    #[must_use]
    pub fn fail(mut self, method: &str, url: &str, error: HttpError) -> Self {
        self.0.push((method.to_string(), url.to_string(), Err(error)));
        self
    }

    fn answer(&self, request: &HttpRequest) -> Result<HttpResponse, HttpError> {
        self.0
            .iter()
            .find(|(method, url, _)| {
                (method == "*" || method.eq_ignore_ascii_case(&request.method)) && glob(url, &request.url)
            })
            .map_or_else(
                || {
                    Err(HttpError::Denied(format!(
                        "{} {}: no canned response in the test",
                        request.method, request.url
                    )))
                },
                |(_, _, answer)| answer.clone(),
            )
    }

    /// Runs `f` with this answering the plugin's requests; returns what `f` returned
    /// and every request it sent.
    fn serve<T>(&self, f: impl FnOnce() -> T) -> (T, Vec<HttpRequest>) {
        use crate::http::transport::{ANSWER, SENT};
        let canned = self.clone();
        ANSWER.with(|a| *a.borrow_mut() = Some(Box::new(move |request: &HttpRequest| canned.answer(request))));
        SENT.with(|s| s.borrow_mut().clear());
        let out = f();
        ANSWER.with(|a| *a.borrow_mut() = None);
        (out, SENT.with(|s| std::mem::take(&mut *s.borrow_mut())))
    }
}

/// A response with `status` and `body`.
pub fn respond(status: u16, body: &str) -> HttpResponse {
    HttpResponse { status, headers: Vec::new(), body: body.as_bytes().to_vec() }
}

/// Whether `text` matches `pattern`, `*` standing for any text.
fn glob(pattern: &str, text: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == text,
        Some((head, tail)) => text
            .strip_prefix(head)
            .is_some_and(|rest| (0..=rest.len()).any(|i| rest.is_char_boundary(i) && glob(tail, &rest[i..]))),
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
    /// The observed children the answer deletes by uid ([`crate::Response::delete`]).
    pub deleted: Vec<Object>,
    /// Lines the plugin logged during the call: level, message, fields.
    pub logs: Vec<crate::log::Line>,
    /// The HTTP requests the plugin sent, in order.
    pub requests: Vec<HttpRequest>,
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

/// [`describe`] once per plugin type and thread: the host reads the manifest once at load,
/// and generating it (a CRD from the plugin's types) can cost more than a reconcile.
fn described<R: Reconciler + 'static>() -> Manifest {
    thread_local! {
        static MANIFESTS: std::cell::RefCell<std::collections::HashMap<std::any::TypeId, Manifest>> =
            std::cell::RefCell::default();
    }
    MANIFESTS.with(|m| m.borrow_mut().entry(std::any::TypeId::of::<R>()).or_insert_with(describe::<R>).clone())
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
pub fn reconcile<R: Reconciler + 'static>(request: TestRequest) -> Result<Outcome, Error> {
    let manifest = described::<R>();
    let TestRequest(request, http) = request;
    crate::log::native::CAPTURED.with(|c| c.borrow_mut().clear());
    let (result, requests) = http.serve(|| export::reconcile::<R>(wit::Request::from(&request)));
    let logs = crate::log::native::CAPTURED.with(|c| std::mem::take(&mut *c.borrow_mut()));
    let answer = result.map_err(Error::from)?;
    let response = Response::try_from(answer).unwrap_or_else(|e| panic!("the host would refuse this answer: {e}"));
    let response = kubewasm_contract::validate(&manifest, &request, response)
        .unwrap_or_else(|refusal| panic!("the host would refuse this answer: {refusal}"));
    // Validation found each uid among the observed children.
    let deleted =
        request.children.iter().filter(|c| response.delete.iter().any(|uid| uid == c.uid())).cloned().collect();
    Ok(Outcome {
        children: response.children.into_iter().map(Object::new).collect(),
        status: response.status,
        labels: response.labels,
        annotations: response.annotations,
        requeue_after: response.requeue_after,
        events: response.events,
        finalized: response.finalized,
        deleted,
        logs,
        requests,
    })
}

/// The `now` and `config` setters of a test input holding `now` and `config` fields.
macro_rules! now_and_config {
    () => {
        /// The host's current time, RFC 3339 ([`NOW`] unless set).
        #[must_use]
        pub fn now(mut self, rfc3339: &str) -> Self {
            self.now = rfc3339.into();
            self
        }

        /// The plugin's settings.
        #[must_use]
        pub fn config(mut self, config: impl Serialize) -> Self {
            self.config = to_json(config);
            self
        }
    };
}

/// One change of a watched object, built the way the host builds it.
#[derive(Clone, Debug)]
pub struct TestEvent {
    change: Change,
    object: Value,
    old: Option<Value>,
    initial: bool,
    final_state_unknown: bool,
    attempt: u32,
    now: String,
    config: Value,
    http: Http,
}

impl TestEvent {
    fn new(change: Change, object: impl Serialize, old: Option<Value>) -> Self {
        Self {
            change,
            object: to_json(object),
            old,
            initial: false,
            final_state_unknown: false,
            attempt: 1,
            now: NOW.into(),
            config: Value::Null,
            http: Http::new(),
        }
    }

    /// `object` appeared.
    pub fn added(object: impl Serialize) -> Self {
        Self::new(Change::Added, object, None)
    }

    /// `old` became `new`.
    pub fn updated(old: impl Serialize, new: impl Serialize) -> Self {
        Self::new(Change::Updated, new, Some(to_json(old)))
    }

    /// `object` is gone (its last known state).
    pub fn deleted(object: impl Serialize) -> Self {
        Self::new(Change::Deleted, object, None)
    }

    /// It existed before the plugin was first loaded.
    #[must_use]
    pub fn initial(mut self) -> Self {
        self.initial = true;
        self
    }

    /// A deletion noticed by a relist or a restart.
    #[must_use]
    pub fn final_state_unknown(mut self) -> Self {
        self.final_state_unknown = true;
        self
    }

    /// The `n`th delivery of this event.
    #[must_use]
    pub fn attempt(mut self, n: u32) -> Self {
        self.attempt = n;
        self
    }

    now_and_config!();

    /// Answers the plugin's HTTP requests with `http`.
    #[must_use]
    pub fn http(mut self, http: Http) -> Self {
        self.http = http;
        self
    }

    /// The event as the host sends it, of `kind`, and the answers to its requests.
    fn into_event(self, kind: KindRef) -> (ObjectEvent, Http) {
        let meta = |field: &str| self.object["metadata"][field].as_str().unwrap_or_default().to_string();
        let delivery_id = ObjectEvent::delivery_id(&meta("uid"), &meta("resourceVersion"), self.change);
        let event = ObjectEvent {
            change: self.change,
            kind,
            object: Object::new(self.object),
            old_object: self.old.map(Object::new),
            initial: self.initial,
            final_state_unknown: self.final_state_unknown,
            delivery_id,
            attempt: self.attempt,
            now: self.now,
            config: self.config,
        };
        (event, self.http)
    }
}

/// What a handler did with one event.
#[derive(Clone, Debug)]
pub struct Handled {
    /// Its answer: accepted, or its error as the host receives it.
    pub result: Result<(), Error>,
    /// The HTTP requests it sent, in order.
    pub requests: Vec<HttpRequest>,
    /// Lines it logged: level, message, fields.
    pub logs: Vec<crate::log::Line>,
}

/// The manifest of handler `H`, checked as the host checks it at load.
///
/// # Panics
///
/// When the host would refuse to load a plugin with this manifest.
pub fn describe_handler<H: Handler>() -> Manifest {
    let manifest = H::describe();
    if let Err(e) = manifest.check() {
        panic!("the host would refuse to load this plugin: {e}");
    }
    manifest
}

/// Hands one event to handler `H` natively, through the export glue, as the host does.
///
/// # Panics
///
/// When the manifest does not watch the object's kind (the host would never deliver
/// the event), or is one the host would not load.
pub fn handle<H: Handler>(event: TestEvent) -> Handled {
    let manifest = describe_handler::<H>();
    let (api_version, kind) = (event.object["apiVersion"].as_str(), event.object["kind"].as_str());
    let Some(watch) = manifest
        .watches
        .iter()
        .find(|w| Some(w.kind.api_version().as_str()) == api_version && Some(w.kind.kind.as_str()) == kind)
    else {
        panic!(
            "the manifest watches no {} {}: the host would never deliver this event",
            api_version.unwrap_or("?"),
            kind.unwrap_or("?")
        );
    };
    let (object_event, http) = event.into_event(watch.kind.clone());
    crate::log::native::CAPTURED.with(|c| c.borrow_mut().clear());
    let (result, requests) = http.serve(|| export::handle::<H>(wit::ObjectEvent::from(&object_event)));
    let logs = crate::log::native::CAPTURED.with(|c| std::mem::take(&mut *c.borrow_mut()));
    Handled { result: result.map_err(Error::from), requests, logs }
}

/// One write to admit, built the way the host builds the admission request.
#[derive(Clone, Debug)]
pub struct TestWrite {
    operation: Operation,
    object: Option<Value>,
    old: Option<Value>,
    sub_resource: Option<String>,
    user: UserInfo,
    dry_run: bool,
    now: String,
    config: Value,
}

impl TestWrite {
    fn new(operation: Operation, object: Option<Value>, old: Option<Value>) -> Self {
        Self {
            operation,
            object,
            old,
            sub_resource: None,
            user: UserInfo::default(),
            dry_run: false,
            now: NOW.into(),
            config: Value::Null,
        }
    }

    /// `object` is created.
    pub fn create(object: impl Serialize) -> Self {
        Self::new(Operation::Create, Some(to_json(object)), None)
    }

    /// The stored `old` is replaced by `new`.
    pub fn update(old: impl Serialize, new: impl Serialize) -> Self {
        Self::new(Operation::Update, Some(to_json(new)), Some(to_json(old)))
    }

    /// The stored `old` is deleted: the request has no object, only the old one.
    pub fn delete(old: impl Serialize) -> Self {
        Self::new(Operation::Delete, None, Some(to_json(old)))
    }

    /// A write to a subresource (`status`, `scale`).
    #[must_use]
    pub fn sub_resource(mut self, name: &str) -> Self {
        self.sub_resource = Some(name.into());
        self
    }

    /// Written by `username`, member of `groups`.
    #[must_use]
    pub fn by(mut self, username: &str, groups: &[&str]) -> Self {
        self.user.username = username.into();
        self.user.groups = groups.iter().map(ToString::to_string).collect();
        self
    }

    /// A dry run: nothing the plugin decides is stored.
    #[must_use]
    pub fn dry_run(mut self) -> Self {
        self.dry_run = true;
        self
    }

    now_and_config!();

    /// The request the host sends for a write `rules` (the manifest's `defaults` or
    /// `validates`, named by `list`) cover.
    fn request(self, rules: &[crate::AdmissionRule], list: &str) -> AdmissionRequest {
        let subject = self.object.as_ref().or(self.old.as_ref()).unwrap_or(&Value::Null);
        let Some(rule) =
            rules.iter().find(|r| r.kind.matches(subject) && r.effective_operations().contains(&self.operation))
        else {
            panic!(
                "the manifest's {list} has no rule for {} of {} {}: the host would never ask",
                self.operation,
                subject["apiVersion"].as_str().unwrap_or("?"),
                subject["kind"].as_str().unwrap_or("?")
            );
        };
        let mut request = AdmissionRequest::new(self.operation, rule.kind.clone(), self.object, self.old);
        request.sub_resource = self.sub_resource;
        request.user_info = self.user;
        request.dry_run = self.dry_run;
        request.now = self.now;
        request.config = self.config;
        request
    }
}

/// What defaulting made of a write.
#[derive(Clone, Debug)]
pub struct DefaultedWrite {
    /// The object as it would be stored: the written one with the plugin's patch
    /// applied, or the object it returned (`null` for a delete).
    pub object: Value,
    /// What the plugin answered.
    pub mutation: Mutation,
    pub warnings: Vec<String>,
    /// Lines the plugin logged during the call: level, message, fields.
    pub logs: Vec<crate::log::Line>,
}

impl DefaultedWrite {
    /// The defaulted object parsed into `T` (your type of the kind).
    ///
    /// # Panics
    ///
    /// When it does not parse as `T`.
    pub fn object_as<T: DeserializeOwned>(&self) -> T {
        serde_json::from_value(self.object.clone())
            .unwrap_or_else(|e| panic!("the defaulted object does not parse: {e}"))
    }

    /// Whether defaulting changed anything.
    pub fn changed(&self) -> bool {
        self.mutation != Mutation::Unchanged
    }
}

/// Runs `P`'s defaulting of one write natively, through the export glue, and reads the
/// object back whole as the API server would store it.
///
/// # Errors
///
/// The plugin's [`Denial`], as the host would receive it.
///
/// # Panics
///
/// When the manifest's `defaults` does not cover the write (the host would never ask),
/// or the host would refuse the answer (a patch that does not apply, a change to a
/// delete): the message says why.
pub fn default<P: Reconciler + Admission>(write: TestWrite) -> Result<DefaultedWrite, Denial> {
    let manifest = describe::<P>();
    let request = write.request(&manifest.defaults, "defaults");
    crate::log::native::CAPTURED.with(|c| c.borrow_mut().clear());
    let answer = export::default::<P>(wit::AdmissionRequest::from(&request));
    let logs = crate::log::native::CAPTURED.with(|c| std::mem::take(&mut *c.borrow_mut()));
    let defaulted = Defaulted::try_from(answer.map_err(Denial::from)?)
        .unwrap_or_else(|e| panic!("the host would refuse this answer: {e}"));
    let object = defaulted.apply(&request).unwrap_or_else(|e| panic!("the host would refuse this answer: {e}"));
    Ok(DefaultedWrite { object, mutation: defaulted.mutation, warnings: defaulted.warnings, logs })
}

/// Runs `P`'s validation of one write natively, through the export glue.
///
/// # Panics
///
/// When the manifest's `validates` does not cover the write: the host would never ask.
pub fn validate<P: Reconciler + Admission>(write: TestWrite) -> Verdict {
    let manifest = describe::<P>();
    let request = write.request(&manifest.validates, "validates");
    Verdict::from(export::validate::<P>(wit::AdmissionRequest::from(&request)))
}

/// Runs `P`'s conversion of `objects` to `desired_api_version` (`group/version`)
/// natively, through the export glue, and keeps of the answer what kube-apiserver keeps:
/// only labels and annotations of each object's `metadata` may change.
///
/// # Errors
///
/// The plugin's message, or the API server's reason to refuse its answer (a missing
/// object, another version, another name...).
///
/// # Panics
///
/// When the manifest does not declare `converts`, or an object is not of its parent's
/// group and kind: the host would never ask.
pub fn convert<P: Reconciler + Admission>(
    objects: impl IntoIterator<Item = impl Serialize>,
    desired_api_version: &str,
) -> Result<Vec<Value>, String> {
    let manifest = describe::<P>();
    let parent = manifest.parent.as_ref().filter(|_| manifest.converts);
    let Some(parent) = parent else {
        panic!("the manifest does not declare `converts`: the host would never ask");
    };
    let objects: Vec<Value> = objects.into_iter().map(to_json).collect();
    let group_of = |api_version: &str| api_version.rsplit_once('/').map_or("", |(group, _)| group).to_string();
    for object in &objects {
        let ours = object["kind"] == parent.kind.as_str()
            && group_of(object["apiVersion"].as_str().unwrap_or_default()) == parent.group;
        assert!(ours, "{} {} is not of the parent's group and kind {parent}", object["apiVersion"], object["kind"]);
    }
    assert_eq!(group_of(desired_api_version), parent.group, "convert to a version of the parent's group");
    let request = ConversionRequest {
        objects,
        desired_api_version: desired_api_version.into(),
        now: NOW.into(),
        config: Value::Null,
    };
    let converted = export::convert::<P>(wit::ConversionRequest::from(&request))?;
    let converted: Vec<Value> = converted
        .iter()
        .map(|text| serde_json::from_str(text).unwrap_or_else(|e| panic!("a converted object is not JSON: {e}")))
        .collect();
    request.check(converted)
}
