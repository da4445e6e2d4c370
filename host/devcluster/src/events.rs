//! `events.k8s.io/v1` Events as a view of the `core/v1` Events they are stored as.

use serde_json::{Map, Value, json};

/// `(events.k8s.io/v1 field, core/v1 field)`.
const FIELDS: [(&str, &str); 14] = [
    ("eventTime", "eventTime"),
    ("series", "series"),
    ("reportingController", "reportingComponent"),
    ("reportingInstance", "reportingInstance"),
    ("action", "action"),
    ("reason", "reason"),
    ("regarding", "involvedObject"),
    ("related", "related"),
    ("note", "message"),
    ("type", "type"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
];

fn rename(obj: &Value, api_version: &str, from_new: bool) -> Value {
    let Some(map) = obj.as_object() else {
        return obj.clone();
    };
    let mut out = Map::new();
    out.insert("apiVersion".into(), json!(api_version));
    out.insert("kind".into(), json!("Event"));
    if let Some(meta) = map.get("metadata") {
        out.insert("metadata".into(), meta.clone());
    }
    for (new, core) in FIELDS {
        let (from, to) = if from_new { (new, core) } else { (core, new) };
        if let Some(v) = map.get(from) {
            out.insert(to.to_string(), v.clone());
        }
    }
    Value::Object(out)
}

/// A stored core/v1 Event as events.k8s.io/v1 shows it.
pub(crate) fn to_v1(core: &Value) -> Value {
    rename(core, "events.k8s.io/v1", false)
}

/// An events.k8s.io/v1 Event (or apply configuration) in the stored core/v1 form.
pub(crate) fn to_core(v1: &Value) -> Value {
    rename(v1, "v1", true)
}

/// A field selector on events.k8s.io/v1 fields, in core/v1 field names.
pub(crate) fn core_selector(selector: &str) -> String {
    selector.replace("regarding.", "involvedObject.").replace("reportingController", "reportingComponent")
}

/// Converts a response: an Event, an `EventList`, or anything else unchanged.
pub(crate) fn response_to_v1(value: Value) -> Value {
    match value.get("kind").and_then(Value::as_str) {
        Some("Event") => to_v1(&value),
        Some("EventList") => {
            let mut list = value;
            list["apiVersion"] = json!("events.k8s.io/v1");
            if let Some(items) = list.get_mut("items").and_then(Value::as_array_mut) {
                for item in items.iter_mut() {
                    *item = to_v1(item);
                }
            }
            list
        }
        _ => value,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_two_forms_round_trip() {
        let v1 = json!({ "apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": { "name": "e" },
            "regarding": { "name": "x" }, "note": "hi", "reason": "R", "type": "Warning", "reportingController": "c" });
        let core = to_core(&v1);
        assert_eq!(core["involvedObject"]["name"], "x");
        assert_eq!(core["message"], "hi");
        assert_eq!(core["reportingComponent"], "c");
        assert_eq!(to_v1(&core), v1);
    }
}
