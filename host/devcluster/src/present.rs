//! How objects reach a client: whole, as a server-side `Table`, or as metadata only
//! (`PartialObjectMetadata` and its list), whatever the verb that produced them
//! (`transformResponseObject`): a get or list, a watch event, or the answer of a create,
//! update, patch or delete. A `Status` answer passes unchanged.

use serde_json::{Value, json};

use super::printers::Columns;
use super::request::Target;
use super::status::ApiError;
use super::table::{self, Include, metadata_only};

/// How objects are rendered, from the `Accept` header; `version` is the `meta.k8s.io`
/// version asked for (`meta.k8s.io/v1` or `meta.k8s.io/v1beta1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Presentation {
    Full,
    Table { include: Include, version: &'static str },
    Metadata { version: &'static str },
    MetadataList { version: &'static str },
}

/// One object as the client asked for it: a one-row table, its metadata, or whole; a list
/// representation of one object is refused with 406.
pub(crate) fn present_one(t: &Target, obj: &Value, how: Presentation) -> Result<Value, ApiError> {
    Ok(match how {
        Presentation::Full => obj.clone(),
        Presentation::Table { include, version } => {
            let meta =
                json!({ "resourceVersion": obj.pointer("/metadata/resourceVersion").cloned().unwrap_or_default() });
            table::table(&columns(t), std::slice::from_ref(obj), &meta, include, version)
        }
        Presentation::Metadata { version } => metadata_only(obj, version),
        Presentation::MetadataList { .. } => {
            return Err(ApiError::not_acceptable_because(format!(
                "you requested PartialObjectMetadataList, but the requested object is not a list ({})",
                go_type(t, false)
            )));
        }
    })
}

/// What a request returns (an object or a list, of any verb) as the client asked for it; a
/// `Status` passes unchanged.
pub(crate) fn present_answer(t: &Target, answer: Value, how: Presentation) -> Result<Value, ApiError> {
    let kind = answer.get("kind").and_then(Value::as_str).unwrap_or_default();
    if how == Presentation::Full || kind == "Status" {
        return Ok(answer);
    }
    match answer.get("items").and_then(Value::as_array) {
        Some(items) if kind.ends_with("List") => {
            let meta = answer.get("metadata").cloned().unwrap_or_else(|| json!({}));
            present_items(t, items, &meta, how)
        }
        _ => present_one(t, &answer, how),
    }
}

fn present_items(t: &Target, items: &[Value], meta: &Value, how: Presentation) -> Result<Value, ApiError> {
    Ok(match how {
        Presentation::Full => json!({ "items": items }),
        Presentation::Table { include, version } => table::table(&columns(t), items, meta, include, version),
        Presentation::MetadataList { version } => json!({
            "kind": "PartialObjectMetadataList",
            "apiVersion": version,
            "metadata": meta,
            "items": items.iter().map(|o| metadata_only(o, version)).collect::<Vec<_>>(),
        }),
        Presentation::Metadata { .. } => {
            return Err(ApiError::not_acceptable_because(format!(
                "you requested PartialObjectMetadata, but the requested object is a list ({})",
                go_type(t, true)
            )));
        }
    })
}

/// The printer of what `t` addresses: a `scale` subresource has the default table (name and
/// creation time), everything else its kind's.
fn columns(t: &Target) -> Columns {
    if t.subresource.as_deref() == Some("scale") { Columns::created_at() } else { t.strategy().columns() }
}

/// The Go type kube-apiserver names in its 406 (`%T` of the internal object):
/// `*core.ConfigMapList`, `*apps.Deployment`, `*unstructured.Unstructured`...
fn go_type(t: &Target, list: bool) -> String {
    let suffix = if list { "List" } else { "" };
    if t.definition().is_none() {
        return format!("*unstructured.Unstructured{suffix}");
    }
    let package = match t.rt.group.as_str() {
        "" => "core",
        group => group.split('.').next().unwrap_or(group),
    };
    format!("*{package}.{}{suffix}", t.rt.kind)
}
