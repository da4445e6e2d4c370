//! The glue between the WIT bindings and a [`Reconciler`]: decode the request, call
//! the plugin, encode the answer, with the contract crate's one table of conversions.
//! [`crate::export_reconciler!`] and [`crate::testing`] both call these functions, so
//! native tests exercise the exact path a WebAssembly call takes.

use serde_json::Value;

use crate::bindings::kubewasm::reconciler::types as wit;
use crate::{Error, Object, Reconciler, Request};

kubewasm_contract::wit_conversions!(crate::bindings::kubewasm::reconciler);

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

/// The `handle` of a plugin without a handler: its manifest declares no watches, so the
/// host never calls it.
#[allow(clippy::needless_pass_by_value)] // the signature of the generated export
pub fn no_handler(event: wit::ObjectEvent) -> Result<(), wit::ReconcileError> {
    let _ = event;
    Err(wit::ReconcileError::from(&Error::permanent("this plugin handles no events: its manifest declares no watches")))
}

pub fn reconcile<R: Reconciler>(request: wit::Request) -> Result<wit::Response, wit::ReconcileError> {
    let fail = |e: Error| wit::ReconcileError::from(&e);
    let request = Request::try_from(request).map_err(|e| fail(Error::permanent(e.to_string())))?;
    R::reconcile(&request).map(|r| wit::Response::from(&r)).map_err(fail)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::wit;
    use crate::{Event, KindRef, LabelOperator, Limits, Manifest, Query, Request, Requirement, Response, Selector};

    #[test]
    fn every_field_survives_the_wit_records_both_ways() {
        let manifest = Manifest::new("demo", KindRef::namespaced("x.io", "v1", "X", "xs"))
            .child(KindRef::cluster("", "v1", "Namespace", "namespaces"))
            .related(KindRef::namespaced("", "v1", "Service", "services"))
            .finalizer()
            .crd("kind: CustomResourceDefinition")
            .limits(Limits { deadline_ms: Some(5), memory_mib: None });
        assert_eq!(Manifest::from(wit::Manifest::from(&manifest)), manifest);

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
    }

    #[test]
    fn json_that_does_not_parse_is_named_by_its_field() {
        let mut wire = wit::Response::from(&Response::new());
        wire.children = vec!["{}".into(), "{".into()];
        let error = Response::try_from(wire).unwrap_err().to_string();
        assert!(error.starts_with("child #1 is not JSON: "), "{error}");
    }
}
