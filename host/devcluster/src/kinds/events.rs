//! Events, in the core group and in `events.k8s.io`.

use serde_json::json;

use super::{Columns, Strategy, column, doc, text};
use crate::object;

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

    fn columns(&self) -> Option<Columns> {
        let event = |f: &str| doc("io.k8s.api.core.v1.Event", f);
        Some(Columns {
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
                    json!(crate::table::age(seen)),
                    json!(text(o, "/type")),
                    json!(text(o, "/reason")),
                    json!(format!("{kind}/{name}")),
                    json!(text(o, "/message")),
                ]
            }),
        })
    }
}

pub(crate) struct Events;

impl Strategy for Events {
    fn selectable_fields(&self) -> &'static [&'static str] {
        &["regarding.kind", "regarding.name", "regarding.namespace", "regarding.uid", "reason", "type"]
    }
}
