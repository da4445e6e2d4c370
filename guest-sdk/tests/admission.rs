//! A plugin's webhooks through the SDK's native harness: what the harness hands the
//! plugin, how it reads a defaulted write back, and the answers the host (or the API
//! server) would refuse, refused here too.

use kubewasm_sdk::prelude::*;
use kubewasm_sdk::testing::{self, TestWrite};
use serde_json::{Value, json};

/// Answers as its config's `mode` says.
struct Hooks;

fn widget_kind(version: &str) -> KindRef {
    KindRef::namespaced("example.com", version, "Widget", "widgets")
}

impl Reconciler for Hooks {
    fn describe() -> Manifest {
        Manifest::new("hooks", widget_kind("v1"))
            .defaults(AdmissionRule::new(widget_kind("v1")))
            .validates(AdmissionRule::new(widget_kind("v1")).on(&[Operation::Create, Operation::Delete]))
            .crd("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition")
            .converts()
    }

    fn reconcile(_: &Request) -> Result<Response, Error> {
        Ok(Response::new())
    }
}

impl Admission for Hooks {
    fn default(request: &AdmissionRequest) -> Result<Defaulted, Denial> {
        match request.config["mode"].as_str() {
            Some("object") => {
                let mut object = request.object.as_ref().map(|o| o.json().clone()).unwrap_or_default();
                object["spec"]["size"] = json!(1);
                Defaulted::object(&object).map(|d| d.warning("sized"))
            }
            Some("bad-patch") => Ok(Defaulted::patch(json!([{"op": "replace", "path": "/nope/size", "value": 1}]))),
            Some("refuse") => Err(Denial::invalid("spec.size", "Required value")),
            _ => Ok(Defaulted::unchanged()),
        }
    }

    fn validate(request: &AdmissionRequest) -> Verdict {
        // Says back what it was handed, as warnings.
        Verdict::allow()
            .warning(format!("{} {} by {}", request.operation, request.name, request.user_info.username))
            .warning(format!("dry run: {}, old: {}", request.dry_run, request.old_object.is_some()))
    }

    fn convert(object: &Object, desired: &str) -> Result<Value, String> {
        let mut converted = object.json().clone();
        converted["apiVersion"] = json!(desired);
        converted["metadata"]["generation"] = json!(99);
        converted["metadata"]["labels"] = json!({"converted": "yes"});
        if object.name() == "rename" {
            converted["metadata"]["name"] = json!("renamed");
        }
        Ok(converted)
    }
}

fn widget(name: &str) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget",
           "metadata": {"name": name, "namespace": "default", "generation": 3}, "spec": {}})
}

#[test]
fn a_whole_object_answer_reads_back_with_its_warnings() {
    let write = TestWrite::create(widget("a")).config(json!({"mode": "object"}));
    let defaulted = testing::default::<Hooks>(write).unwrap();
    assert!(defaulted.changed());
    assert_eq!(defaulted.object["spec"], json!({"size": 1}));
    assert_eq!(defaulted.warnings, ["sized"]);
    let unchanged = testing::default::<Hooks>(TestWrite::create(widget("a"))).unwrap();
    assert_eq!((unchanged.changed(), unchanged.object), (false, widget("a")));
}

#[test]
fn a_refusal_in_defaulting_comes_back_as_the_denial() {
    let denial =
        testing::default::<Hooks>(TestWrite::create(widget("a")).config(json!({"mode": "refuse"}))).unwrap_err();
    assert_eq!(denial.causes[0].field, "spec.size");
}

#[test]
#[should_panic(expected = "the host would refuse this answer: the defaulting patch does not apply")]
fn a_patch_that_does_not_apply_fails_the_test() {
    let _ = testing::default::<Hooks>(TestWrite::create(widget("a")).config(json!({"mode": "bad-patch"})));
}

#[test]
fn validation_is_handed_the_operation_the_user_and_the_old_object() {
    let verdict = testing::validate::<Hooks>(TestWrite::create(widget("a")).by("alice", &["devs"]).dry_run());
    assert_eq!(verdict.warnings, ["CREATE a by alice", "dry run: true, old: false"]);
    let verdict = testing::validate::<Hooks>(TestWrite::delete(widget("b")));
    assert_eq!(verdict.warnings, ["DELETE b by ", "dry run: false, old: true"]);
}

#[test]
#[should_panic(expected = "the manifest's validates has no rule for UPDATE of example.com/v1 Widget")]
fn a_write_the_manifest_does_not_name_fails_the_test() {
    let _ = testing::validate::<Hooks>(TestWrite::update(widget("a"), widget("a")));
}

#[test]
fn converted_objects_keep_their_metadata_but_labels_and_annotations() {
    let converted = testing::convert::<Hooks>([widget("a")], "example.com/v2").unwrap();
    assert_eq!(converted[0]["apiVersion"], "example.com/v2");
    assert_eq!(converted[0]["metadata"]["generation"], 3, "restored, as the API server restores it");
    assert_eq!(converted[0]["metadata"]["labels"], json!({"converted": "yes"}));
    let error = testing::convert::<Hooks>([widget("rename")], "example.com/v2").unwrap_err();
    assert!(error.contains("must have the same name"), "{error}");
}
