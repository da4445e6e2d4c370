//! The host's checks against the table of cases every implementation of them must agree
//! on (`validate_cases.json`; the Python SDK's tests read the same file).

use std::collections::BTreeMap;
use std::time::Duration;

use kubewasm_contract::{
    AdmissionRule, Event, EventType, KindRef, Limits, Manifest, Operation, Request, Response, Watch, validate,
};
use serde_json::{Map, Value, json};

fn cases() -> Value {
    let text = include_str!("validate_cases.json");
    expand(serde_json::from_str(text).expect("validate_cases.json is JSON"))
}

/// Replaces each `{"$repeat": [[text, n], ...]}` with the string it stands for.
fn expand(value: Value) -> Value {
    match value {
        Value::Object(map) if map.len() == 1 && map.contains_key("$repeat") => {
            let parts = map["$repeat"].as_array().expect("$repeat holds [text, n] pairs");
            Value::String(
                parts
                    .iter()
                    .map(|p| {
                        let n = usize::try_from(p[1].as_u64().expect("repeat count")).expect("count fits");
                        p[0].as_str().expect("repeated text").repeat(n)
                    })
                    .collect(),
            )
        }
        Value::Object(map) => Value::Object(map.into_iter().map(|(k, v)| (k, expand(v))).collect()),
        Value::Array(items) => Value::Array(items.into_iter().map(expand).collect()),
        other => other,
    }
}

fn text(v: &Value, field: &str) -> String {
    v[field].as_str().unwrap_or_else(|| panic!("{field} is a string in {v}")).to_string()
}

fn kind(v: &Value) -> KindRef {
    let namespaced = v["namespaced"].as_bool().expect("namespaced");
    let (group, version, kind, plural) = (text(v, "group"), text(v, "version"), text(v, "kind"), text(v, "plural"));
    if namespaced {
        KindRef::namespaced(&group, &version, &kind, &plural)
    } else {
        KindRef::cluster(&group, &version, &kind, &plural)
    }
}

fn kinds(v: &Value) -> Vec<KindRef> {
    v.as_array().map(|a| a.iter().map(kind).collect()).unwrap_or_default()
}

fn manifest(v: &Value) -> Manifest {
    let limit = |field: &str| v["limits"][field].as_u64().map(|n| u32::try_from(n).expect("a u32 limit"));
    let mut m = Manifest::handler(&text(v, "name"))
        .limits(Limits { deadline_ms: limit("deadlineMs"), memory_mib: limit("memoryMib") });
    m.parent = v.get("parent").map(kind);
    m.children = kinds(&v["children"]);
    m.related = kinds(&v["related"]);
    m.finalizer = v["finalizer"].as_bool().unwrap_or(false);
    m.watches = v["watches"].as_array().map(|a| a.iter().map(watch).collect()).unwrap_or_default();
    m.outbound = v["outbound"]
        .as_array()
        .map(|a| a.iter().map(|p| p.as_str().expect("a URL pattern").to_string()).collect())
        .unwrap_or_default();
    m.keep_unlisted = kinds(&v["keepUnlisted"]);
    m.defaults = rules(&v["defaults"]);
    m.validates = rules(&v["validates"]);
    m.converts = v["converts"].as_bool().unwrap_or(false);
    m.crds = v["crds"]
        .as_array()
        .map(|a| a.iter().map(|c| c.as_str().expect("a CRD's text").to_string()).collect())
        .unwrap_or_default();
    m
}

fn rules(v: &Value) -> Vec<AdmissionRule> {
    let rule = |r: &Value| AdmissionRule {
        kind: kind(&r["kind"]),
        operations: r["operations"]
            .as_array()
            .map(|a| {
                a.iter().map(|o| Operation::parse(o.as_str().expect("an operation")).expect("an operation")).collect()
            })
            .unwrap_or_default(),
    };
    v.as_array().map(|a| a.iter().map(rule).collect()).unwrap_or_default()
}

fn watch(v: &Value) -> Watch {
    Watch {
        kind: kind(&v["kind"]),
        label_selector: v["labelSelector"].as_str().map(str::to_string),
        field_selector: v["fieldSelector"].as_str().map(str::to_string),
    }
}

fn strings(v: &Value) -> BTreeMap<String, String> {
    v.as_object()
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.as_str().expect("a string value").to_string())).collect())
        .unwrap_or_default()
}

fn response(v: &Value) -> Response {
    Response {
        children: v["children"].as_array().cloned().unwrap_or_default(),
        status: v.get("status").cloned(),
        labels: strings(&v["labels"]),
        annotations: strings(&v["annotations"]),
        requeue_after: v["requeueAfterMs"].as_u64().map(Duration::from_millis),
        events: v["events"]
            .as_array()
            .map(|events| {
                events
                    .iter()
                    .map(|e| {
                        let (reason, message) = (text(e, "reason"), text(e, "message"));
                        match e["type"].as_str() {
                            Some("Normal") => Event::normal(&reason, message),
                            Some("Warning") => Event::warning(&reason, message),
                            other => panic!("event type {other:?}"),
                        }
                    })
                    .collect()
            })
            .unwrap_or_default(),
        finalized: v["finalized"].as_bool().unwrap_or(false),
        delete: v["delete"]
            .as_array()
            .map(|a| a.iter().map(|u| u.as_str().expect("a uid to delete").to_string()).collect())
            .unwrap_or_default(),
    }
}

/// The wire form of a response, as the cases write it: only what is set.
fn wire(r: &Response) -> Value {
    let mut out = Map::new();
    if !r.children.is_empty() {
        out.insert("children".into(), Value::Array(r.children.clone()));
    }
    if let Some(status) = &r.status {
        out.insert("status".into(), status.clone());
    }
    if !r.labels.is_empty() {
        out.insert("labels".into(), json!(r.labels));
    }
    if !r.annotations.is_empty() {
        out.insert("annotations".into(), json!(r.annotations));
    }
    if !r.events.is_empty() {
        let events = r.events.iter().map(|e| {
            let type_ = if e.type_ == EventType::Normal { "Normal" } else { "Warning" };
            json!({"type": type_, "reason": e.reason, "message": e.message})
        });
        out.insert("events".into(), Value::Array(events.collect()));
    }
    if let Some(after) = r.requeue_after {
        out.insert("requeueAfterMs".into(), json!(u64::try_from(after.as_millis()).expect("ms fit")));
    }
    if r.finalized {
        out.insert("finalized".into(), json!(true));
    }
    if !r.delete.is_empty() {
        out.insert("delete".into(), json!(r.delete));
    }
    Value::Object(out)
}

#[test]
fn manifests_are_checked_as_the_cases_say() {
    let cases = cases();
    let list = cases["manifests"].as_array().expect("manifests");
    assert!(!list.is_empty());
    for case in list {
        let name = text(case, "name");
        let got = manifest(&case["manifest"]).check().err().map(|e| e.0);
        assert_eq!(got.as_deref(), case["error"].as_str(), "case {name:?}");
    }
}

#[test]
fn responses_are_validated_as_the_cases_say() {
    let cases = cases();
    let defaults = &cases["defaults"];
    let list = cases["responses"].as_array().expect("responses");
    assert!(!list.is_empty());
    for case in list {
        let name = text(case, "name");
        let m = manifest(case.get("manifest").unwrap_or(&defaults["manifest"]));
        let parent = case.get("parent").unwrap_or(&defaults["parent"]).clone();
        let observed = case["observed"].as_array().cloned().unwrap_or_default();
        let request = Request::new(parent, observed, Vec::new(), false, String::new(), Value::Null);
        match (validate(&m, &request, response(&case["response"])), case.get("accepted")) {
            (Ok(accepted), Some(expected)) => assert!(wire(&accepted) == *expected, "case {name:?}: accepted as {}", {
                let mut shown = wire(&accepted).to_string();
                shown.truncate(2000);
                shown
            }),
            (Ok(_), None) => panic!("case {name:?}: accepted, expected problems {}", case["problems"]),
            (Err(refusal), None) => assert_eq!(json!(refusal.problems), case["problems"], "case {name:?}"),
            (Err(refusal), Some(_)) => panic!("case {name:?}: refused, expected accepted: {refusal}"),
        }
    }
}
