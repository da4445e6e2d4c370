//! How objects reach a client: whole, as a server-side `Table`, or as metadata only.

use serde_json::{Value, json};

use super::read::Listed;
use super::request::Target;
use super::table::{self, Include, metadata_only};

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
            t.strategy(),
            std::slice::from_ref(obj),
            &json!({ "resourceVersion": obj.pointer("/metadata/resourceVersion").cloned().unwrap_or_default() }),
            include,
        ),
        Presentation::Metadata => metadata_only(obj),
    }
}

/// A list as the client asked for it (a table, metadata only, or whole).
pub(crate) fn present_list(t: &Target, list: &Listed, how: Presentation) -> Value {
    match how {
        Presentation::Full => list.render(),
        Presentation::Table(include) => table::table(t.strategy(), &list.presented(), &list.metadata, include),
        Presentation::Metadata => json!({
            "kind": "PartialObjectMetadataList",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": list.metadata,
            "items": list.items.iter().map(|o| metadata_only(o)).collect::<Vec<_>>(),
        }),
    }
}
