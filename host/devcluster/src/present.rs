//! How objects reach a client: whole, as a server-side `Table`, or as metadata only.

use serde_json::{Value, json};

use super::table::{self, Include};
use super::verbs::{Listed, Target};

/// How objects are rendered, from the `Accept` header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Presentation {
    Full,
    Table(Include),
    Metadata,
}

/// One object as the client asked for it (a one-row table, metadata only, or whole).
pub(crate) fn present_one(t: &Target, obj: &Value, how: Presentation) -> Value {
    match how {
        Presentation::Full => obj.clone(),
        Presentation::Table(include) => table::table(
            &t.rt,
            &t.version,
            std::slice::from_ref(obj),
            &json!({ "resourceVersion": obj.pointer("/metadata/resourceVersion").cloned().unwrap_or_default() }),
            include,
        ),
        Presentation::Metadata => json!({
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": obj.get("metadata").cloned().unwrap_or_default(),
        }),
    }
}

/// A list as the client asked for it (a table, metadata only, or whole).
pub(crate) fn present_list(t: &Target, list: &Listed, how: Presentation) -> Value {
    match how {
        Presentation::Full => list.render(),
        Presentation::Table(include) => table::table(&t.rt, &t.version, &list.presented(), &list.metadata, include),
        Presentation::Metadata => json!({
            "kind": "PartialObjectMetadataList",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": list.metadata,
            "items": list.items.iter().map(|o| present_one(t, o, Presentation::Metadata)).collect::<Vec<_>>(),
        }),
    }
}
