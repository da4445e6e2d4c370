//! Events, in the core group and in `events.k8s.io`, whose Events are a view of the core ones
//! (stored as them, converted on the way in and out).

use serde_json::{Map, Value, json};

use crate::object;
use crate::printers::{Columns, column, doc, since, text};
use crate::strategy::{StoredAs, Strategy};

pub(crate) struct CoreEvents;

impl Strategy for CoreEvents {
    fn selectable_fields(&self) -> &'static [&'static str] {
        &[
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        ]
    }

    fn columns(&self) -> Columns {
        let event = |f: &str| doc("io.k8s.api.core.v1.Event", f);
        Columns {
            defs: vec![
                column("Last Seen", "string", &event("lastTimestamp"), 0),
                column("Type", "string", &event("type"), 0),
                column("Reason", "string", &event("reason"), 0),
                column("Object", "string", &event("involvedObject"), 0),
                column("Message", "string", &event("message"), 0),
            ],
            cells: Box::new(|o| {
                let seen = [text(o, "/lastTimestamp"), text(o, "/eventTime"), object::meta_str(o, "creationTimestamp")]
                    .into_iter()
                    .find(|t| !t.is_empty())
                    .unwrap_or_default();
                let kind = text(o, "/involvedObject/kind").to_lowercase();
                let name = text(o, "/involvedObject/name");
                vec![
                    json!(since(seen)),
                    json!(text(o, "/type")),
                    json!(text(o, "/reason")),
                    json!(format!("{kind}/{name}")),
                    json!(text(o, "/message")),
                ]
            }),
        }
    }
}

/// `events.k8s.io/v1` Events: stored as core Events, with other names for their fields.
pub(crate) struct Events;

impl Strategy for Events {
    fn selectable_fields(&self) -> &'static [&'static str] {
        &["regarding.kind", "regarding.name", "regarding.namespace", "regarding.uid", "reason", "type"]
    }

    fn stored_as(&self) -> Option<StoredAs> {
        Some(StoredAs { group: "", version: "v1", plural: "events" })
    }

    fn convert_from_stored(&self, stored: &Value) -> Value {
        rename(stored, "events.k8s.io/v1", false)
    }

    fn convert_to_stored(&self, obj: &Value) -> Value {
        rename(obj, "v1", true)
    }

    fn stored_field_selector(&self, selector: &str) -> String {
        selector.replace("regarding.", "involvedObject.").replace("reportingController", "reportingComponent")
    }
}

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

/// An Event with its fields renamed to the other form; `from_new`: from `events.k8s.io/v1`.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_two_forms_round_trip() {
        let v1 = json!({ "apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": { "name": "e" },
            "regarding": { "name": "x" }, "note": "hi", "reason": "R", "type": "Warning", "reportingController": "c" });
        let core = Events.convert_to_stored(&v1);
        assert_eq!(core["involvedObject"]["name"], "x");
        assert_eq!(core["message"], "hi");
        assert_eq!(core["reportingComponent"], "c");
        assert_eq!(Events.convert_from_stored(&core), v1);
    }
}
