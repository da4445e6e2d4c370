//! Events, in the core group and in `events.k8s.io`, whose Events are a view of the core ones
//! (stored as them, converted on the way in and out).

use serde_json::{Map, Value, json};

use crate::object;
use crate::printers::{Columns, column, doc, since, text};
use crate::selectors::{Refusal, SelectableFields, field_value};
use crate::strategy::{StoredAs, Strategy};

pub(crate) struct CoreEvents;

impl Strategy for CoreEvents {
    /// The core conversion's labels, read from `event.ToSelectableFields`.
    fn selectable_fields(&self) -> SelectableFields {
        SelectableFields::new(
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
                "metadata.namespace",
                "metadata.name",
            ],
            Refusal::Unsupported,
            core_value,
        )
    }

    /// `printEvent` with `Wide` (a server table has every column; kubectl shows those of
    /// priority 0 unless `-o wide`): the last time seen is the series' last observation, else
    /// the last timestamp, else the first (its first timestamp, or its event time).
    fn columns(&self) -> Columns {
        let event = |f: &str| doc("io.k8s.api.core.v1.Event", f);
        let wide = |name: &str, description: &str| column(name, "string", description, 1);
        Columns {
            defs: vec![
                column("Last Seen", "string", &event("lastTimestamp"), 0),
                column("Type", "string", &event("type"), 0),
                column("Reason", "string", &event("reason"), 0),
                column("Object", "string", &event("involvedObject"), 0),
                wide("Subobject", &doc("io.k8s.api.core.v1.ObjectReference", "fieldPath")),
                wide("Source", &event("source")),
                column("Message", "string", &event("message"), 0),
                wide("First Seen", &event("firstTimestamp")),
                wide("Count", &event("count")),
                wide("Name", &doc("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "name")),
            ],
            cells: Box::new(|o| {
                let first = match text(o, "/firstTimestamp") {
                    "" => since(text(o, "/eventTime")),
                    first => since(first),
                };
                let mut last = match text(o, "/lastTimestamp") {
                    "" => first.clone(),
                    last => since(last),
                };
                let mut count = o.get("count").and_then(Value::as_i64).unwrap_or(0);
                if let Some(series) = o.get("series").filter(|s| s.is_object()) {
                    last = since(text(series, "/lastObservedTime"));
                    count = series.get("count").and_then(Value::as_i64).unwrap_or(0);
                } else if count == 0 {
                    // Events of the new API have no count of their own.
                    count = 1;
                }
                let kind = text(o, "/involvedObject/kind").to_lowercase();
                let object = match text(o, "/involvedObject/name") {
                    "" => kind,
                    name => format!("{kind}/{name}"),
                };
                let or = |a: &str, b: &str| if a.is_empty() { text(o, b).to_string() } else { a.to_string() };
                let component = or(text(o, "/source/component"), "/reportingComponent");
                let instance = or(text(o, "/source/host"), "/reportingInstance");
                let source = if instance.is_empty() { component } else { format!("{component}, {instance}") };
                vec![
                    json!(last),
                    json!(text(o, "/type")),
                    json!(text(o, "/reason")),
                    json!(object),
                    json!(text(o, "/involvedObject/fieldPath")),
                    json!(source),
                    json!(text(o, "/message").trim()),
                    json!(first),
                    json!(count),
                    json!(object::name(o)),
                ]
            }),
        }
    }
}

/// `events.k8s.io/v1` Events: stored as core Events, with other names for their fields.
pub(crate) struct Events;

impl Strategy for Events {
    /// `events/v1`'s own labels (`AddFieldLabelConversionsForEvent` of `pkg/apis/events/v1`),
    /// mapped to the core field set the stored objects are matched by.
    fn selectable_fields(&self) -> SelectableFields {
        let labels: Vec<&str> = SELECTOR_LABELS.iter().map(|(label, _)| *label).collect();
        SelectableFields::new(&labels, Refusal::Unsupported, |event, label| {
            let core = SELECTOR_LABELS.iter().find(|(l, _)| *l == label).map_or(label, |(_, core)| core);
            core_value(event, core)
        })
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
}

/// The field labels of `events.k8s.io/v1` and the core labels they stand for.
const SELECTOR_LABELS: [(&str, &str); 13] = [
    ("reason", "reason"),
    ("regarding.kind", "involvedObject.kind"),
    ("regarding.namespace", "involvedObject.namespace"),
    ("regarding.name", "involvedObject.name"),
    ("regarding.uid", "involvedObject.uid"),
    ("regarding.apiVersion", "involvedObject.apiVersion"),
    ("regarding.resourceVersion", "involvedObject.resourceVersion"),
    ("regarding.fieldPath", "involvedObject.fieldPath"),
    ("reportingController", "reportingComponent"),
    ("source", "source"),
    ("type", "type"),
    ("metadata.namespace", "metadata.namespace"),
    ("metadata.name", "metadata.name"),
];

/// The value of a core label of a (core) Event: `source` is the source's component, else the
/// reporting controller.
fn core_value(event: &Value, label: &str) -> String {
    match label {
        "source" => match text(event, "/source/component") {
            "" => text(event, "/reportingComponent").to_string(),
            component => component.to_string(),
        },
        _ => field_value(event, label),
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
