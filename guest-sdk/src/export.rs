//! The glue between the WIT bindings and a [`Reconciler`] or a [`Handler`]: decode the
//! input, call the plugin, encode the answer, with the contract crate's one table of
//! conversions. The export macros ([`crate::export_reconciler!`],
//! [`crate::export_handler!`], [`crate::export_plugin!`]) and [`crate::testing`] both call
//! these functions, so native tests exercise the exact path a WebAssembly call takes.

use std::marker::PhantomData;

use serde_json::Value;

use crate::bindings::kubewasm::reconciler::types as wit;
use crate::{
    Admission, AdmissionRequest, ConversionRequest, Denial, Error, Handler, Object, ObjectEvent, Reconciler, Request,
    Verdict,
};

kubewasm_contract::wit_conversions!(crate::bindings::kubewasm::reconciler);

/// The export `describe`.
pub trait DescribeExport {
    fn describe() -> wit::Manifest;
}

/// The exports `related` and `reconcile`.
pub trait ReconcileExport {
    fn related(parent: String) -> Vec<wit::Query>;
    fn reconcile(request: wit::Request) -> Result<wit::Response, wit::ReconcileError>;
}

/// The export `handle`.
pub trait HandleExport {
    fn handle(event: wit::ObjectEvent) -> Result<(), wit::ReconcileError>;
}

/// The exports `default`, `validate` and `convert`.
pub trait AdmissionExport {
    fn default(request: wit::AdmissionRequest) -> Result<wit::Defaulted, wit::Denial>;
    fn validate(request: wit::AdmissionRequest) -> wit::Verdict;
    fn convert(request: wit::ConversionRequest) -> Result<Vec<String>, String>;
}

/// An [`Admission`]'s exports.
pub struct Admits<A>(PhantomData<A>);

/// The admission exports of a plugin that admits nothing: its manifest declares no
/// `defaults`, `validates` or `converts`, so the host never calls them.
pub struct NoAdmission;

/// A [`Reconciler`]'s exports.
pub struct Reconciles<R>(PhantomData<R>);

/// A [`Handler`]'s exports.
pub struct Handles<H>(PhantomData<H>);

/// The `related` and `reconcile` of a plugin that reconciles nothing: its manifest names
/// no parent, so the host never calls them.
pub struct NoReconciler;

/// The `handle` of a plugin without a handler: its manifest declares no watches, so the
/// host never calls it.
pub struct NoHandler;

impl<R: Reconciler> DescribeExport for Reconciles<R> {
    fn describe() -> wit::Manifest {
        describe::<R>()
    }
}

impl<R: Reconciler> ReconcileExport for Reconciles<R> {
    fn related(parent: String) -> Vec<wit::Query> {
        related::<R>(parent)
    }

    fn reconcile(request: wit::Request) -> Result<wit::Response, wit::ReconcileError> {
        reconcile::<R>(request)
    }
}

impl<H: Handler> DescribeExport for Handles<H> {
    fn describe() -> wit::Manifest {
        wit::Manifest::from(&H::describe())
    }
}

impl<H: Handler> HandleExport for Handles<H> {
    fn handle(event: wit::ObjectEvent) -> Result<(), wit::ReconcileError> {
        handle::<H>(event)
    }
}

impl ReconcileExport for NoReconciler {
    fn related(_: String) -> Vec<wit::Query> {
        Vec::new()
    }

    fn reconcile(_: wit::Request) -> Result<wit::Response, wit::ReconcileError> {
        Err(wit::ReconcileError::from(&Error::permanent(
            "this plugin reconciles nothing: its manifest names no parent",
        )))
    }
}

impl HandleExport for NoHandler {
    fn handle(_: wit::ObjectEvent) -> Result<(), wit::ReconcileError> {
        Err(wit::ReconcileError::from(&Error::permanent(
            "this plugin handles no events: its manifest declares no watches",
        )))
    }
}

impl<A: Admission> AdmissionExport for Admits<A> {
    fn default(request: wit::AdmissionRequest) -> Result<wit::Defaulted, wit::Denial> {
        default::<A>(request)
    }

    fn validate(request: wit::AdmissionRequest) -> wit::Verdict {
        validate::<A>(request)
    }

    fn convert(request: wit::ConversionRequest) -> Result<Vec<String>, String> {
        convert::<A>(request)
    }
}

struct NoAdmissionImpl;
impl Admission for NoAdmissionImpl {}

impl AdmissionExport for NoAdmission {
    fn default(request: wit::AdmissionRequest) -> Result<wit::Defaulted, wit::Denial> {
        default::<NoAdmissionImpl>(request)
    }

    fn validate(request: wit::AdmissionRequest) -> wit::Verdict {
        validate::<NoAdmissionImpl>(request)
    }

    fn convert(request: wit::ConversionRequest) -> Result<Vec<String>, String> {
        convert::<NoAdmissionImpl>(request)
    }
}

pub fn describe<R: Reconciler>() -> wit::Manifest {
    wit::Manifest::from(&R::describe())
}

#[allow(clippy::needless_pass_by_value)] // the signature of the generated export
pub fn related<R: Reconciler>(parent: String) -> Vec<wit::Query> {
    // A parent that is not JSON cannot match anything; the host never sends one.
    let Ok(parent) = serde_json::from_str::<Value>(&parent) else {
        return Vec::new();
    };
    R::related(&Object::new(parent)).iter().map(wit::Query::from).collect()
}

pub fn reconcile<R: Reconciler>(request: wit::Request) -> Result<wit::Response, wit::ReconcileError> {
    let fail = |e: Error| wit::ReconcileError::from(&e);
    let request = Request::try_from(request).map_err(|e| fail(Error::permanent(e.to_string())))?;
    R::reconcile(&request).map(|r| wit::Response::from(&r)).map_err(fail)
}

pub fn handle<H: Handler>(event: wit::ObjectEvent) -> Result<(), wit::ReconcileError> {
    let fail = |e: Error| wit::ReconcileError::from(&e);
    let event = ObjectEvent::try_from(event).map_err(|e| fail(Error::permanent(e.to_string())))?;
    H::handle(&event).map_err(fail)
}

/// The request the host sent, or a denial naming what in it does not parse: a write the
/// plugin cannot read is refused, not let through.
fn admission_request(request: wit::AdmissionRequest) -> Result<AdmissionRequest, Denial> {
    AdmissionRequest::try_from(request).map_err(|e| Denial::new(e.to_string()))
}

pub fn default<A: Admission>(request: wit::AdmissionRequest) -> Result<wit::Defaulted, wit::Denial> {
    let answer = admission_request(request).and_then(|r| A::default(&r));
    answer.map(|d| wit::Defaulted::from(&d)).map_err(|d| wit::Denial::from(&d))
}

pub fn validate<A: Admission>(request: wit::AdmissionRequest) -> wit::Verdict {
    let verdict = match admission_request(request) {
        Ok(request) => A::validate(&request),
        Err(denial) => Verdict::deny(denial),
    };
    wit::Verdict::from(&verdict)
}

pub fn convert<A: Admission>(request: wit::ConversionRequest) -> Result<Vec<String>, String> {
    let request = ConversionRequest::try_from(request).map_err(|e| e.to_string())?;
    request
        .objects
        .into_iter()
        .enumerate()
        .map(|(i, object)| {
            let object = Object::new(object);
            A::convert(&object, &request.desired_api_version)
                .map(|converted| converted.to_string())
                .map_err(|e| format!("object #{i} ({} {:?}): {e}", object.kind(), object.name()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::wit;
    use crate::bindings::kubewasm::reconciler::http as wit_http;
    use crate::http::{HttpError, HttpRequest, HttpResponse};
    use crate::{
        Change, Event, KindRef, LabelOperator, Limits, Manifest, Object, ObjectEvent, Query, Request, Requirement,
        Response, Selector, Watch,
    };
    use kubewasm_contract::wit::{Lift, Lower};

    #[test]
    fn every_field_survives_the_wit_records_both_ways() {
        let manifest = Manifest::new("demo", KindRef::namespaced("x.io", "v1", "X", "xs"))
            .child(KindRef::cluster("", "v1", "Namespace", "namespaces"))
            .related(KindRef::namespaced("", "v1", "Service", "services"))
            .finalizer()
            .crd("kind: CustomResourceDefinition")
            .limits(Limits { deadline_ms: Some(5), memory_mib: None })
            .watch(Watch::new(KindRef::namespaced("", "v1", "Pod", "pods")).labels("app=web").fields("metadata.name=a"))
            .outbound("https://hooks.slack.com");
        assert_eq!(Manifest::from(wit::Manifest::from(&manifest)), manifest);
        let handler = Manifest::handler("h").watch(Watch::new(KindRef::cluster("", "v1", "Node", "nodes")));
        assert_eq!(Manifest::from(wit::Manifest::from(&handler)), handler);

        let selectors = [
            Selector::All,
            Selector::Names(vec!["a".into()]),
            Selector::Labels(vec![Requirement { key: "k".into(), operator: LabelOperator::NotIn, values: vec![] }]),
        ];
        for selector in selectors {
            let query = Query { kind: KindRef::namespaced("", "v1", "Pod", "pods"), namespace: None, selector };
            assert_eq!(Query::from(wit::Query::from(&query)), query);
        }

        let request = Request::new(json!({"a": 1}), vec![json!({})], vec![json!([])], true, "now".into(), json!(null));
        assert_eq!(Request::try_from(wit::Request::from(&request)).unwrap(), request);

        let response = Response::new()
            .child(&json!({"kind": "X"}))
            .unwrap()
            .status(&json!({"ok": true}))
            .unwrap()
            .label("l", "1")
            .annotation("a", "2")
            .requeue_after(Duration::from_millis(1500))
            .event(Event::warning("Why", "because"))
            .finalized();
        assert_eq!(Response::try_from(wit::Response::from(&response)).unwrap(), response);

        let event = ObjectEvent {
            change: Change::Updated,
            kind: KindRef::namespaced("", "v1", "Pod", "pods"),
            object: Object::new(json!({"metadata": {"name": "new"}})),
            old_object: Some(Object::new(json!({"metadata": {"name": "old"}}))),
            initial: true,
            final_state_unknown: true,
            delivery_id: "u:1:updated".into(),
            attempt: 3,
            now: "now".into(),
            config: json!({"k": "v"}),
        };
        assert_eq!(ObjectEvent::try_from(wit::ObjectEvent::from(&event)).unwrap(), event);

        let request = HttpRequest {
            method: "POST".into(),
            url: "https://x/y".into(),
            headers: vec![("a".into(), "1".into()), ("a".into(), "2".into())],
            body: b"{}".to_vec(),
            timeout_ms: Some(5),
        };
        assert_eq!(HttpRequest::from(wit_http::HttpRequest::from(&request)), request);
        let response = HttpResponse { status: 418, headers: vec![("h".into(), "v".into())], body: vec![1, 2] };
        assert_eq!(HttpResponse::from(wit_http::HttpResponse::from(&response)), response);
        for error in
            [HttpError::Denied("d".into()), HttpError::TooManyRequests("t".into()), HttpError::Failed("f".into())]
        {
            let wire: wit_http::HttpError = error.lower();
            assert_eq!(HttpError::lift(&wire, "error"), Ok(error));
        }
    }

    #[test]
    fn admission_records_survive_the_wit_records_both_ways() {
        use crate::{AdmissionRequest, AdmissionRule, ConversionRequest, Defaulted, Denial, Operation, Verdict};
        let pods = KindRef::namespaced("", "v1", "Pod", "pods");
        let manifest = Manifest::new("x", KindRef::namespaced("x.io", "v1", "X", "xs"))
            .child(pods.clone())
            .keep_unlisted(pods.clone())
            .defaults(AdmissionRule::new(pods.clone()))
            .validates(AdmissionRule::new(pods.clone()).on(&[Operation::Delete, Operation::Connect]))
            .crd("crd")
            .converts();
        assert_eq!(Manifest::from(wit::Manifest::from(&manifest)), manifest);

        let mut request =
            AdmissionRequest::new(Operation::Update, pods, Some(json!({"metadata": {"name": "a"}})), Some(json!({})));
        request.user_info.extra.insert("scopes".into(), vec!["a".into(), "b".into()]);
        request.sub_resource = Some("status".into());
        request.dry_run = true;
        request.options = json!({"fieldManager": "kubectl"});
        assert_eq!(AdmissionRequest::try_from(wit::AdmissionRequest::from(&request)).unwrap(), request);

        for defaulted in [
            Defaulted::unchanged(),
            Defaulted::object(&json!({"a": 1})).unwrap().warning("w"),
            Defaulted::patch(json!([{"op": "add", "path": "/a", "value": 1}])),
        ] {
            assert_eq!(Defaulted::try_from(wit::Defaulted::from(&defaulted)).unwrap(), defaulted);
        }
        let verdict =
            Verdict::deny(Denial::invalid("metadata.name", "too long").cause("spec", "FieldValueRequired", "x"))
                .warning("careful");
        assert_eq!(Verdict::from(wit::Verdict::from(&verdict)), verdict);
        let conversion = ConversionRequest {
            objects: vec![json!({"apiVersion": "x.io/v1"})],
            desired_api_version: "x.io/v2".into(),
            now: "now".into(),
            config: json!(null),
        };
        assert_eq!(ConversionRequest::try_from(wit::ConversionRequest::from(&conversion)).unwrap(), conversion);
    }

    #[test]
    fn json_that_does_not_parse_is_named_by_its_field() {
        let mut wire = wit::Response::from(&Response::new());
        wire.children = vec!["{}".into(), "{".into()];
        let error = Response::try_from(wire).unwrap_err().to_string();
        assert!(error.starts_with("child #1 is not JSON: "), "{error}");
    }
}
