//! Server-side printing: the `Table` kubectl asks for with `Accept: ...;as=Table`, its columns
//! those of the resource's strategy (`Strategy::columns`).

use serde_json::{Value, json};

use super::strategy::Strategy;

/// How much of each object a row carries (`includeObject`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Include {
    None,
    Metadata,
    Object,
}

impl Include {
    pub(crate) fn parse(value: Option<&str>) -> Include {
        match value {
            Some("None") => Include::None,
            Some("Object") => Include::Object,
            _ => Include::Metadata,
        }
    }
}

/// A `Table` of `objects` (each as the client asked for it), printed by `strategy`.
pub(crate) fn table(strategy: &dyn Strategy, objects: &[Value], list_meta: &Value, include: Include) -> Value {
    let columns = strategy.columns();
    let rows: Vec<Value> = objects
        .iter()
        .map(|o| {
            let mut row = json!({ "cells": (columns.cells)(o) });
            match include {
                Include::None => {}
                Include::Object => row["object"] = o.clone(),
                Include::Metadata => row["object"] = metadata_only(o),
            }
            row
        })
        .collect();
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta,
        "columnDefinitions": columns.defs,
        "rows": rows,
    })
}

/// An object's `PartialObjectMetadata`.
pub(crate) fn metadata_only(obj: &Value) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata").cloned().unwrap_or_default(),
    })
}
