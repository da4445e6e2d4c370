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
            .status(&json!({"observedSize": widget.spec.size, "now": req.now_rfc3339()}))?
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

#[test]
fn request_times_and_object_metadata_come_typed() {
    let req = TestRequest::new(widget(json!({"size": 1}))).now("2026-05-01T10:00:00Z");
    struct Clock;
    impl Reconciler for Clock {
        fn describe() -> Manifest {
            Everything::describe()
        }
        fn reconcile(req: &Request) -> Result<Response, Error> {
            let later = req.now() + k8s_openapi::jiff::SignedDuration::from_secs(60);
            Response::new().status(&json!({"next": later.to_string()}))
        }
    }
    #[derive(Deserialize)]
    struct Status {
        next: String,
    }
    let out = testing::reconcile::<Clock>(req).unwrap();
    assert_eq!(out.status_as::<Status>().next, "2026-05-01T10:01:00Z");

    let job = Object::new(json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "j", "namespace": "shop", "uid": "j-uid", "resourceVersion": "7", "generation": 2,
                     "creationTimestamp": "2026-05-01T09:00:00Z", "deletionTimestamp": "2026-05-01T11:00:00Z"}}));
    assert_eq!(job.generation(), Some(2));
    assert_eq!(job.creation_timestamp().map(|t| t.to_string()).as_deref(), Some("2026-05-01T09:00:00Z"));
    assert!(job.deletion_timestamp() > job.creation_timestamp());
    let reference = job.object_reference();
    assert_eq!(
        (reference.kind.as_deref(), reference.name.as_deref(), reference.uid.as_deref()),
        (Some("Job"), Some("j"), Some("j-uid"))
    );
    assert_eq!((reference.api_version.as_deref(), reference.namespace.as_deref()), (Some("batch/v1"), Some("shop")));

    let cluster_parent = Object::new(json!({"apiVersion": "example.com/v1", "kind": "Propagation",
        "metadata": {"name": "p", "labels": {"team": "a"}}}));
    let meta = cluster_parent.child_meta_in("copy", "three");
    assert_eq!((meta.name.as_deref(), meta.namespace.as_deref()), (Some("copy"), Some("three")));
    assert_eq!(meta.labels.unwrap()["team"], "a");
}

#[test]
fn related_objects_are_found_by_namespace_and_name_and_queried_by_any_names() {
    struct Spread;
    impl Reconciler for Spread {
        fn describe() -> Manifest {
            Everything::describe()
        }
        fn related(_parent: &Object) -> Vec<Query> {
            let names: Vec<String> = vec!["db".into(), "cache".into()];
            vec![Query::named(KindRef::of::<Deployment>(), None, names)]
        }
        fn reconcile(req: &Request) -> Result<Response, Error> {
            let found = req.find_related_in::<Deployment>(Some("two"), "db").map_or("none", |d| d.namespace().unwrap());
            Ok(Response::new().annotation("found-in", found))
        }
    }
    let queries = testing::related::<Spread>(widget(json!({})));
    assert_eq!(queries[0].selector, kubewasm_sdk::Selector::Names(vec!["db".into(), "cache".into()]));
    let db =
        |ns: &str| json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "db", "namespace": ns}});
    let req = TestRequest::new(widget(json!({"size": 1}))).related(db("one")).related(db("two"));
    assert_eq!(testing::reconcile::<Spread>(req).unwrap().annotations["found-in"], "two");
}

#[test]
fn a_kept_child_is_returned_without_what_the_server_and_host_set() {
    struct Keeper;
    impl Reconciler for Keeper {
        fn describe() -> Manifest {
            Everything::describe()
        }
        fn reconcile(req: &Request) -> Result<Response, Error> {
            Ok(req.children().iter().fold(Response::new(), Response::keep))
        }
    }
    let observed = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "w-old", "namespace": "shop", "uid": "c-uid", "resourceVersion": "9",
                     "creationTimestamp": "2026-05-01T09:00:00Z", "managedFields": [{"manager": "kubewasm.everything"}],
                     "labels": {"team": "a"},
                     "annotations": {"kubewasm.io/applied-hash": "abc", "note": "kept"},
                     "ownerReferences": [{"apiVersion": "example.com/v1", "kind": "Widget", "name": "w", "uid": "w-uid", "controller": true}]},
        "data": {"size": "2"}});
    let out = testing::reconcile::<Keeper>(TestRequest::new(widget(json!({"size": 1}))).child(observed)).unwrap();
    assert_eq!(
        out.children[0].json(),
        &json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "w-old", "namespace": "shop", "uid": "c-uid", "labels": {"team": "a"}, "annotations": {"note": "kept"}},
            "data": {"size": "2"}})
    );
}

/// Answers whatever the test's config asks for, to show what the host would refuse.
struct Careless;

impl Reconciler for Careless {
    fn describe() -> Manifest {
        Manifest::new("careless", KindRef::namespaced("example.com", "v1", "Widget", "widgets"))
            .child(KindRef::of::<ConfigMap>())
    }

    fn reconcile(req: &Request) -> Result<Response, Error> {
        let mut response = Response::new();
        for child in req.config()["children"].as_array().into_iter().flatten() {
            response = response.child(child)?;
        }
        Ok(response)
    }
}

fn careless(children: Value) -> Result<testing::Outcome, Error> {
    testing::reconcile::<Careless>(TestRequest::new(widget(json!({}))).config(json!({"children": children})))
}

fn config_map(name: &str, namespace: Option<&str>) -> Value {
    let mut cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}});
    if let Some(ns) = namespace {
        cm["metadata"]["namespace"] = ns.into();
    }
    cm
}

#[test]
fn the_harness_fills_in_the_namespace_as_the_host_does() {
    let out = careless(json!([config_map("a", None)])).unwrap();
    assert_eq!(out.children[0].namespace(), Some("shop"), "a namespaced child lands in its parent's namespace");
}

#[test]
#[should_panic(expected = "is of a kind the plugin did not declare in `children` (declared: v1 ConfigMap)")]
fn an_undeclared_kind_fails_the_test_as_the_host_refuses_it() {
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}});
    let _ = careless(json!([secret]));
}

#[test]
#[should_panic(expected = "outside its parent's namespace \"shop\"")]
fn a_child_in_another_namespace_fails_the_test() {
    let _ = careless(json!([config_map("a", Some("kube-system"))]));
}

#[test]
#[should_panic(expected = "appears more than once")]
fn a_duplicate_child_fails_the_test() {
    let _ = careless(json!([config_map("a", None), config_map("a", None)]));
}

struct Misnamed;

impl Reconciler for Misnamed {
    fn describe() -> Manifest {
        Manifest::new("Not_A_Label", KindRef::namespaced("example.com", "v1", "Widget", "widgets"))
    }

    fn reconcile(_: &Request) -> Result<Response, Error> {
        Ok(Response::new())
    }
}

#[test]
#[should_panic(expected = "the host would refuse to load this plugin: name \"Not_A_Label\" must be a DNS label")]
fn a_manifest_the_host_would_not_load_fails_the_test() {
    let _ = testing::reconcile::<Misnamed>(TestRequest::new(widget(json!({}))));
}
