//! The SDK as a plugin author uses it: every field of a response survives the trip
//! through the export glue, and mistakes in the parent come back as errors that
//! name the field.

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kubewasm_sdk::prelude::*;
use kubewasm_sdk::testing::{self, TestRequest};
use kubewasm_sdk::{EventType, k8s_openapi, log};
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Deserialize)]
struct Spec {
    size: u32,
}

#[derive(Deserialize)]
struct Widget {
    spec: Spec,
}

struct Everything;

impl Reconciler for Everything {
    fn describe() -> Manifest {
        Manifest::new("everything", KindRef::namespaced("example.com", "v1", "Widget", "widgets"))
            .child(KindRef::of::<ConfigMap>())
            .related(KindRef::of::<Deployment>())
            .finalizer()
    }

    fn reconcile(req: &Request) -> Result<Response, Error> {
        let widget: Widget = req.parent_as()?;
        log::log(log::Level::Info, "sizing", &[("size", &widget.spec.size.to_string())]);
        if req.finalizing() {
            return Ok(Response::new().finalized());
        }
        let cm = ConfigMap {
            metadata: req.parent().child_meta(&format!("{}-size", req.parent().name())),
            data: Some([("size".to_string(), widget.spec.size.to_string())].into()),
            ..ConfigMap::default()
        };
        let related = req.find_related::<Deployment>("db").map_or("none", |d| d.name());
        let response = Response::new()
            .child(&cm)?
            .status(&json!({"observedSize": widget.spec.size, "now": req.now()}))?
            .label("example.com/sized", "true")
            .annotation("example.com/related", related)
            .requeue_after(Duration::from_secs(30))
            .event(Event::normal("Sized", format!("size {}", widget.spec.size)))
            .event(Event::warning("Big", "that is a big widget"));
        Ok(response)
    }
}

fn widget(spec: Value) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget",
           "metadata": {"name": "w", "namespace": "shop", "uid": "w-uid", "labels": {"team": "a"}},
           "spec": spec})
}

#[test]
fn every_response_field_survives_the_export_glue() {
    let db = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "db", "namespace": "shop"}});
    let req = TestRequest::new(widget(json!({"size": 3}))).related(db).now("2026-05-01T10:00:00Z");
    let out = testing::reconcile::<Everything>(req).unwrap();

    let cm: ConfigMap = out.child("w-size");
    assert_eq!(cm.metadata.namespace.as_deref(), Some("shop"), "child_meta copies the namespace");
    assert_eq!(cm.metadata.labels.unwrap()["team"], "a", "child_meta copies the labels");
    assert_eq!(cm.data.unwrap()["size"], "3");
    assert_eq!(out.children[0].kind(), "ConfigMap", "k8s-openapi objects carry their kind");
    assert_eq!(out.status, Some(json!({"observedSize": 3, "now": "2026-05-01T10:00:00Z"})));
    assert_eq!(out.labels["example.com/sized"], "true");
    assert_eq!(out.annotations["example.com/related"], "db");
    assert_eq!(out.requeue_after, Some(Duration::from_secs(30)));
    assert_eq!(out.events.len(), 2);
    assert_eq!(out.warnings()[0].reason, "Big");
    assert_eq!(out.events[0].type_, EventType::Normal);
    assert!(!out.finalized);
    assert_eq!(out.logs.len(), 1);
    assert_eq!(out.logs[0].1, "sizing");
    assert_eq!(out.logs[0].2, vec![("size".to_string(), "3".to_string())]);
}

#[test]
fn finalizing_request_can_release_the_parent() {
    let out = testing::reconcile::<Everything>(TestRequest::new(widget(json!({"size": 1}))).finalizing()).unwrap();
    assert!(out.finalized);
    assert!(out.children.is_empty());
}

#[test]
fn a_parent_that_does_not_parse_names_the_object_and_field() {
    let err = testing::reconcile::<Everything>(TestRequest::new(widget(json!({"size": "big"})))).unwrap_err();
    assert!(!err.retryable);
    assert!(err.message.starts_with("Widget shop/w: spec.size: invalid type"), "{}", err.message);
}

#[test]
fn manifest_declares_kinds_from_k8s_openapi_types() {
    let m = testing::describe::<Everything>();
    assert_eq!(
        m.children[0],
        KindRef {
            group: String::new(),
            version: "v1".into(),
            kind: "ConfigMap".into(),
            plural: "configmaps".into(),
            namespaced: true
        }
    );
    assert_eq!(m.related[0].api_version(), "apps/v1");
    assert!(m.finalizer);
    let ns = KindRef::of::<k8s_openapi::api::core::v1::Namespace>();
    assert!(!ns.namespaced, "Namespace is cluster-scoped");
}

#[test]
fn object_accessors_read_metadata_and_ownership() {
    let owner = Object::new(widget(json!({})));
    let child = Object::new(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "shop", "annotations": {"a": "1"},
                     "ownerReferences": [{"uid": "other", "controller": false}, {"uid": "w-uid", "controller": true}]}}));
    assert!(child.is_controlled_by(&owner));
    assert!(child.is::<ConfigMap>());
    assert!(!child.is::<Deployment>());
    assert_eq!(child.annotations()["a"], "1");
    assert_eq!(child.describe(), "ConfigMap shop/c");
    assert_eq!(owner.spec(), &json!({}));
    assert!(owner.status().is_null());
    let orphan = Object::new(json!({"metadata": {"name": "o"}}));
    assert!(!orphan.is_controlled_by(&owner));
}
