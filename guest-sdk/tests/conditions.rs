//! The conditions helper holds to the table every SDK's helper is held to
//! (`conditions_cases.json`: apimachinery's `SetStatusCondition` and its siblings), and a
//! plugin that uses it keeps `lastTransitionTime` across reconciles.

use kubewasm_sdk::conditions::{Conditions, NewCondition, Status};
use kubewasm_sdk::k8s_openapi::jiff::Timestamp;
use kubewasm_sdk::prelude::*;
use kubewasm_sdk::testing::{self, TestRequest};
use serde_json::{Value, json};

fn cases() -> Value {
    serde_json::from_str(include_str!("conditions_cases.json")).expect("conditions_cases.json is JSON")
}

fn list(value: &Value) -> Conditions {
    Conditions::from_status(&json!({ "conditions": value })).expect("the case's list holds conditions")
}

/// The case's condition as a plugin would build it.
fn new_condition(c: &Value) -> Result<NewCondition, Error> {
    let status: Status = c["status"].as_str().unwrap().parse()?;
    let mut new = NewCondition::new(c["type"].as_str().unwrap(), status)
        .reason(c["reason"].as_str().unwrap())
        .message(c["message"].as_str().unwrap())
        .observed_generation(c["observedGeneration"].as_i64());
    if let Some(time) = c["lastTransitionTime"].as_str() {
        new = new.last_transition_time(time.parse().unwrap());
    }
    Ok(new)
}

#[test]
fn set_does_what_set_status_condition_does() {
    let cases = cases();
    let now: Timestamp = cases["now"].as_str().unwrap().parse().unwrap();
    for case in cases["set"].as_array().unwrap() {
        let mut conditions = list(&case["before"]);
        let changed = conditions.set(new_condition(&case["condition"]).unwrap(), now).unwrap();
        assert_eq!(serde_json::to_value(&conditions).unwrap(), case["after"], "{}", case["name"]);
        assert_eq!(changed, case["changed"], "{}", case["name"]);
    }
}

#[test]
fn remove_drops_the_type_and_keeps_the_order() {
    for case in cases()["remove"].as_array().unwrap() {
        let mut conditions = list(&case["before"]);
        let removed = conditions.remove(case["type"].as_str().unwrap());
        assert_eq!(serde_json::to_value(&conditions).unwrap(), case["after"], "{}", case["name"]);
        assert_eq!(removed, case["removed"], "{}", case["name"]);
    }
}

#[test]
fn find_is_true_and_is_false_read_the_list() {
    for case in cases()["query"].as_array().unwrap() {
        let conditions = list(&case["conditions"]);
        let type_ = case["type"].as_str().unwrap();
        assert_eq!(conditions.find(type_).is_some(), case["found"], "{}", case["name"]);
        assert_eq!(conditions.is_true(type_), case["isTrue"], "{}", case["name"]);
        assert_eq!(conditions.is_false(type_), case["isFalse"], "{}", case["name"]);
    }
}

#[test]
fn what_the_api_server_would_refuse_is_an_error_naming_it_and_changes_nothing() {
    let cases = cases();
    let now: Timestamp = cases["now"].as_str().unwrap().parse().unwrap();
    for case in cases["invalid"].as_array().unwrap() {
        let mut conditions = Conditions::new();
        let error = new_condition(&case["condition"]).and_then(|c| conditions.set(c, now)).unwrap_err();
        assert!(!error.retryable, "{}", case["name"]);
        for part in case["error"].as_array().unwrap() {
            assert!(error.message.contains(part.as_str().unwrap()), "{}: {}", case["name"], error.message);
        }
        assert!(conditions.as_slice().is_empty(), "{}", case["name"]);
    }
    for case in cases["valid"].as_array().unwrap() {
        let mut conditions = Conditions::new();
        assert!(conditions.set(new_condition(&case["condition"]).unwrap(), now).unwrap(), "{}", case["name"]);
    }
}

#[test]
fn an_observed_list_that_is_not_one_is_an_error_naming_the_item() {
    let error = Conditions::from_status(&json!({"conditions": [{"type": "Ready", "status": "True"}]})).unwrap_err();
    assert!(error.message.contains("status.conditions[0]"), "{}", error.message);
    assert!(error.message.contains("lastTransitionTime"), "{}", error.message);
    assert!(Conditions::from_status(&Value::Null).unwrap().as_slice().is_empty());
}

/// Ready when the spec says so: a plugin's status written from the observed one.
struct Gauge;

impl Reconciler for Gauge {
    fn describe() -> Manifest {
        Manifest::new("gauge", KindRef::namespaced("example.com", "v1", "Gauge", "gauges"))
    }

    fn reconcile(req: &Request) -> Result<Response, Error> {
        let parent = req.parent();
        let ready = parent.spec()["ready"].as_bool().unwrap_or(false);
        let mut conditions = Conditions::from_status(parent.status())?;
        let condition = NewCondition::new("Ready", ready)
            .reason(if ready { "Available" } else { "Waiting" })
            .observed_generation(parent.generation());
        conditions.set(condition, req.now())?;
        Response::new().status(&json!({ "conditions": conditions }))
    }
}

#[test]
fn a_plugin_keeps_the_transition_time_until_the_status_changes() {
    let parent = |ready: bool, generation: i64, status: Value| {
        json!({
            "apiVersion": "example.com/v1", "kind": "Gauge",
            "metadata": {"name": "g", "namespace": "default", "uid": "u1", "generation": generation},
            "spec": {"ready": ready}, "status": status,
        })
    };
    let at = |now: &str, parent: Value| testing::reconcile::<Gauge>(TestRequest::new(parent).now(now)).unwrap();

    let first = at("2026-01-01T00:00:00Z", parent(false, 1, Value::Null)).status.unwrap();
    assert_eq!(first["conditions"][0]["lastTransitionTime"], "2026-01-01T00:00:00Z");
    let again = at("2026-01-02T00:00:00Z", parent(false, 2, first)).status.unwrap();
    assert_eq!(again["conditions"][0]["lastTransitionTime"], "2026-01-01T00:00:00Z");
    assert_eq!(again["conditions"][0]["observedGeneration"], 2);
    let ready = at("2026-01-03T00:00:00Z", parent(true, 3, again)).status.unwrap();
    assert_eq!(ready["conditions"][0]["status"], "True");
    assert_eq!(ready["conditions"][0]["reason"], "Available");
    assert_eq!(ready["conditions"][0]["lastTransitionTime"], "2026-01-03T00:00:00Z");
}
