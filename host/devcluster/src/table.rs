//! Server-side printing: the `Table` kubectl asks for with `Accept: ...;as=Table`.

use serde_json::{Value, json};

use super::discovery::ResourceType;
use super::kinds::{self, Columns};

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

/// Column definitions and the cells of one object: a built-in kind's own printer, a
/// custom resource's `additionalPrinterColumns`, or name and age.
fn columns(rt: &ResourceType, version: &str) -> Columns {
    if rt.builtin {
        return rt.strategy().columns().unwrap_or_else(name_and_age);
    }
    let printer: Vec<Value> = rt.version(version).map(|v| v.columns.clone()).unwrap_or_default();
    if printer.is_empty() {
        return name_and_age();
    }
    let mut defs = vec![kinds::name_column()];
    let mut paths = Vec::new();
    for c in &printer {
        let text = |f: &str| c.get(f).and_then(Value::as_str).unwrap_or_default().to_string();
        let kind = c.get("type").and_then(Value::as_str).unwrap_or("string").to_string();
        let mut def = kinds::column(
            &text("name"),
            &kind,
            &text("description"),
            c.get("priority").and_then(Value::as_i64).unwrap_or(0),
        );
        def["format"] = json!(text("format"));
        defs.push(def);
        paths.push((text("jsonPath"), kind));
    }
    Columns {
        defs,
        cells: Box::new(move |o| {
            let mut cells = vec![kinds::name(o)];
            for (path, kind) in &paths {
                cells.push(match (kind.as_str(), json_path(o, path)) {
                    ("date", Some(Value::String(t))) => json!(age(&t)),
                    (_, Some(v)) => v,
                    (_, None) => Value::Null,
                });
            }
            cells
        }),
    }
}

fn name_and_age() -> Columns {
    Columns {
        defs: vec![kinds::name_column(), kinds::age_column()],
        cells: Box::new(|o| vec![kinds::name(o), kinds::age(o)]),
    }
}

/// A `Table` of `objects` (each as the client asked for it).
pub(crate) fn table(rt: &ResourceType, version: &str, objects: &[Value], list_meta: &Value, include: Include) -> Value {
    let Columns { defs, cells } = columns(rt, version);
    let rows: Vec<Value> = objects
        .iter()
        .map(|o| {
            let mut row = json!({ "cells": cells(o) });
            match include {
                Include::None => {}
                Include::Object => row["object"] = o.clone(),
                Include::Metadata => {
                    row["object"] = json!({
                        "kind": "PartialObjectMetadata",
                        "apiVersion": "meta.k8s.io/v1",
                        "metadata": o.get("metadata").cloned().unwrap_or_default(),
                    });
                }
            }
            row
        })
        .collect();
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta,
        "columnDefinitions": defs,
        "rows": rows,
    })
}

/// A minimal `JSONPath`: `.a.b`, `.a[0].b`, `{.a.b}`.
fn json_path(obj: &Value, path: &str) -> Option<Value> {
    let path = path.trim().trim_start_matches('{').trim_end_matches('}');
    let mut cur = obj;
    for part in path.trim_start_matches('.').split('.') {
        if part.is_empty() {
            continue;
        }
        let (field, index) = match part.split_once('[') {
            Some((f, i)) => (f, i.trim_end_matches(']').parse::<usize>().ok()),
            None => (part, None),
        };
        if !field.is_empty() {
            cur = cur.get(field)?;
        }
        if let Some(i) = index {
            cur = cur.get(i)?;
        }
    }
    Some(cur.clone())
}

/// How long ago `timestamp` was, as kubectl prints it (`45s`, `5m`, `3h12m`, `2d`).
pub(crate) fn age(timestamp: &str) -> String {
    let Ok(then) = timestamp.parse::<jiff::Timestamp>() else {
        return "<unknown>".to_string();
    };
    human_duration(jiff::Timestamp::now().as_second().saturating_sub(then.as_second()))
}

/// The time from `start` to `end`, as kubectl prints a Job's duration.
pub(crate) fn duration_between(start: &str, end: &str) -> String {
    match (start.parse::<jiff::Timestamp>(), end.parse::<jiff::Timestamp>()) {
        (Ok(start), Ok(end)) => human_duration(end.as_second().saturating_sub(start.as_second())),
        _ => "<unknown>".to_string(),
    }
}

/// `duration.HumanDuration` of apimachinery.
fn human_duration(secs: i64) -> String {
    let secs = secs.max(0);
    let (m, h, d) = (secs / 60, secs / 3600, secs / 86400);
    if secs < 120 {
        format!("{secs}s")
    } else if m < 10 {
        let s = secs % 60;
        if s == 0 { format!("{m}m") } else { format!("{m}m{s}s") }
    } else if h < 3 {
        format!("{m}m")
    } else if h < 8 {
        let rest = m % 60;
        if rest == 0 { format!("{h}h") } else { format!("{h}h{rest}m") }
    } else if h < 48 {
        format!("{h}h")
    } else if d < 8 {
        let rest = h % 24;
        if rest == 0 { format!("{d}d") } else { format!("{d}d{rest}h") }
    } else {
        format!("{d}d")
    }
}
