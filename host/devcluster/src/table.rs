//! Server-side printing: the `Table` kubectl asks for with `Accept: ...;as=Table`, its columns
//! those of the resource's strategy (`Strategy::columns`), and `PartialObjectMetadata`.

use serde_json::{Value, json};

use super::printers::Columns;
use super::status::go_quote;

/// How much of each object a row carries (`includeObject`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Include {
    None,
    Metadata,
    Object,
}

impl Include {
    /// `includeObject` (`TableOptions`): `Metadata` when absent or empty.
    pub(crate) fn parse(value: Option<&str>) -> Result<Include, String> {
        match value.unwrap_or("") {
            "None" => Ok(Include::None),
            "Object" => Ok(Include::Object),
            "Metadata" | "" => Ok(Include::Metadata),
            other => Err(format!(
                "includeObject: Invalid value: {}: must be 'Metadata', 'Object', 'None', or empty",
                go_quote(other)
            )),
        }
    }
}

/// A `Table` of `objects` as `columns` print them, each row carrying what `include` says
/// of its object; `version` is the `meta.k8s.io` version asked for.
pub(crate) fn table(columns: &Columns, objects: &[Value], list_meta: &Value, include: Include, version: &str) -> Value {
    let rows: Vec<Value> = objects
        .iter()
        .map(|o| {
            let mut row = json!({ "cells": (columns.cells)(o) });
            match include {
                Include::None => {}
                Include::Object => row["object"] = o.clone(),
                Include::Metadata => row["object"] = metadata_only(o, version),
            }
            row
        })
        .collect();
    json!({
        "kind": "Table",
        "apiVersion": version,
        "metadata": list_meta,
        "columnDefinitions": columns.defs,
        "rows": rows,
    })
}

/// An object's `PartialObjectMetadata`, of the `meta.k8s.io` version given.
pub(crate) fn metadata_only(obj: &Value, version: &str) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": version,
        "metadata": obj.get("metadata").cloned().unwrap_or_default(),
    })
}
