//! Server-side printing: the `Table` kubectl asks for with `Accept: ...;as=Table`.

use serde_json::{Value, json};

use super::discovery::ResourceType;
use super::object;

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

fn column(name: &str, kind: &str, format: &str, description: &str, priority: i64) -> Value {
    json!({ "name": name, "type": kind, "format": format, "description": description, "priority": priority })
}

fn name_column() -> Value {
    column("Name", "string", "name", "Name must be unique within a namespace.", 0)
}

fn age_column() -> Value {
    column(
        "Age",
        "string",
        "",
        "CreationTimestamp is a timestamp representing the server time when this object was created.",
        0,
    )
}

/// Turns one object into the cells of its row.
type Cells = Box<dyn Fn(&Value) -> Vec<Value>>;

/// Column definitions and a function producing the cells of one object.
#[allow(clippy::too_many_lines)] // a table: the columns kubectl shows, per kind
fn columns(rt: &ResourceType, version: &str) -> (Vec<Value>, Cells) {
    let age = |o: &Value| json!(age(object::meta_str(o, "creationTimestamp")));
    let name = |o: &Value| json!(object::name(o));
    if !rt.builtin {
        let printer: Vec<Value> = rt.version(version).map(|v| v.columns.clone()).unwrap_or_default();
        let mut defs = vec![name_column()];
        let mut paths = Vec::new();
        for c in &printer {
            let path = c.get("jsonPath").and_then(Value::as_str).unwrap_or_default().to_string();
            let kind = c.get("type").and_then(Value::as_str).unwrap_or("string").to_string();
            defs.push(column(
                c.get("name").and_then(Value::as_str).unwrap_or_default(),
                &kind,
                c.get("format").and_then(Value::as_str).unwrap_or_default(),
                c.get("description").and_then(Value::as_str).unwrap_or_default(),
                c.get("priority").and_then(Value::as_i64).unwrap_or(0),
            ));
            paths.push((path, kind));
        }
        if printer.is_empty() {
            defs.push(age_column());
            return (defs, Box::new(move |o| vec![name(o), age(o)]));
        }
        return (
            defs,
            Box::new(move |o| {
                let mut cells = vec![name(o)];
                for (path, kind) in &paths {
                    let value = json_path(o, path);
                    cells.push(match (kind.as_str(), value) {
                        ("date", Some(Value::String(t))) => json!(self::age(&t)),
                        (_, Some(v)) => v,
                        (_, None) => Value::Null,
                    });
                }
                cells
            }),
        );
    }
    let s = |o: &Value, p: &str| o.pointer(p).cloned().unwrap_or(Value::Null);
    let count = |o: &Value, f: &str| o.get(f).and_then(Value::as_object).map_or(0, serde_json::Map::len);
    match (rt.group.as_str(), rt.plural.as_str()) {
        ("", "configmaps") => (
            vec![
                name_column(),
                column("Data", "integer", "", "Data contains the configuration data.", 0),
                age_column(),
            ],
            Box::new(move |o| vec![name(o), json!(count(o, "data") + count(o, "binaryData")), age(o)]),
        ),
        ("", "secrets") => (
            vec![
                name_column(),
                column("Type", "string", "", "The type of the secret", 0),
                column("Data", "string", "", "The number of entries in the secret", 0),
                age_column(),
            ],
            Box::new(move |o| vec![name(o), s(o, "/type"), json!(count(o, "data")), age(o)]),
        ),
        ("", "namespaces") => (
            vec![name_column(), column("Status", "string", "", "The status of the namespace", 0), age_column()],
            Box::new(move |o| vec![name(o), s(o, "/status/phase"), age(o)]),
        ),
        ("", "pods") => (
            vec![
                name_column(),
                column("Ready", "string", "", "The aggregate readiness state of this pod for accepting traffic.", 0),
                column("Status", "string", "", "The aggregate status of the containers in this pod.", 0),
                column(
                    "Restarts",
                    "string",
                    "",
                    "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
                    0,
                ),
                age_column(),
            ],
            Box::new(move |o| {
                let total = o.pointer("/spec/containers").and_then(Value::as_array).map_or(0, Vec::len);
                let statuses =
                    o.pointer("/status/containerStatuses").and_then(Value::as_array).cloned().unwrap_or_default();
                let ready = statuses.iter().filter(|c| c.get("ready").and_then(Value::as_bool) == Some(true)).count();
                let restarts: i64 = statuses.iter().filter_map(|c| c.get("restartCount").and_then(Value::as_i64)).sum();
                let phase = o.pointer("/status/phase").and_then(Value::as_str).unwrap_or("Pending");
                let phase = if object::is_deleting(o) { "Terminating" } else { phase };
                vec![name(o), json!(format!("{ready}/{total}")), json!(phase), json!(restarts.to_string()), age(o)]
            }),
        ),
        ("apps", "deployments") => (
            vec![
                name_column(),
                column("Ready", "string", "", "Number of the pod with ready state", 0),
                column(
                    "Up-to-date",
                    "string",
                    "",
                    "Total number of non-terminated pods targeted by this deployment that have the desired template spec.",
                    0,
                ),
                column(
                    "Available",
                    "string",
                    "",
                    "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.",
                    0,
                ),
                age_column(),
            ],
            Box::new(move |o| {
                let n = |p: &str| o.pointer(p).and_then(Value::as_i64).unwrap_or(0);
                vec![
                    name(o),
                    json!(format!("{}/{}", n("/status/readyReplicas"), n("/spec/replicas"))),
                    json!(n("/status/updatedReplicas")),
                    json!(n("/status/availableReplicas")),
                    age(o),
                ]
            }),
        ),
        ("", "services") => (
            vec![
                name_column(),
                column("Type", "string", "", "The type of the service.", 0),
                column("Cluster-IP", "string", "", "The cluster IP of the service.", 0),
                column("External-IP", "string", "", "The external IP of the service.", 0),
                column("Port(s)", "string", "", "The ports of the service.", 0),
                age_column(),
            ],
            Box::new(move |o| {
                let ports: Vec<String> = o
                    .pointer("/spec/ports")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(|p| {
                        format!(
                            "{}/{}",
                            p.get("port").map(ToString::to_string).unwrap_or_default(),
                            p.get("protocol").and_then(Value::as_str).unwrap_or("TCP")
                        )
                    })
                    .collect();
                let ip = o.pointer("/spec/clusterIP").and_then(Value::as_str).unwrap_or("<none>").to_string();
                vec![
                    name(o),
                    s(o, "/spec/type"),
                    json!(ip),
                    json!("<none>"),
                    json!(if ports.is_empty() { "<none>".to_string() } else { ports.join(",") }),
                    age(o),
                ]
            }),
        ),
        ("", "events") => (
            vec![
                column("Last Seen", "string", "", "Time when this event was last seen.", 0),
                column("Type", "string", "", "Type of this event.", 0),
                column("Reason", "string", "", "Reason is why the action was taken.", 0),
                column("Object", "string", "", "The object this event is about.", 0),
                column("Message", "string", "", "A human-readable description of the status of this operation.", 0),
            ],
            Box::new(move |o| {
                let seen = o
                    .get("lastTimestamp")
                    .and_then(Value::as_str)
                    .or_else(|| o.get("eventTime").and_then(Value::as_str))
                    .unwrap_or_else(|| object::meta_str(o, "creationTimestamp"));
                let kind = o.pointer("/involvedObject/kind").and_then(Value::as_str).unwrap_or_default().to_lowercase();
                let obj_name = o.pointer("/involvedObject/name").and_then(Value::as_str).unwrap_or_default();
                vec![
                    json!(self::age(seen)),
                    s(o, "/type"),
                    s(o, "/reason"),
                    json!(format!("{kind}/{obj_name}")),
                    s(o, "/message"),
                ]
            }),
        ),
        ("apiextensions.k8s.io", "customresourcedefinitions")
        | ("rbac.authorization.k8s.io", "roles" | "clusterroles") => (
            vec![
                name_column(),
                column(
                    "Created At",
                    "date",
                    "",
                    "CreationTimestamp is a timestamp representing the server time when this object was created.",
                    0,
                ),
            ],
            Box::new(move |o| vec![name(o), json!(object::meta_str(o, "creationTimestamp"))]),
        ),
        ("rbac.authorization.k8s.io", "rolebindings" | "clusterrolebindings") => (
            vec![name_column(), column("Role", "string", "", "Role is the role being bound.", 0), age_column()],
            Box::new(move |o| {
                let kind = o.pointer("/roleRef/kind").and_then(Value::as_str).unwrap_or_default();
                let role = o.pointer("/roleRef/name").and_then(Value::as_str).unwrap_or_default();
                vec![name(o), json!(format!("{kind}/{role}")), age(o)]
            }),
        ),
        ("coordination.k8s.io", "leases") => (
            vec![name_column(), column("Holder", "string", "", "The holder of the lease.", 0), age_column()],
            Box::new(move |o| vec![name(o), s(o, "/spec/holderIdentity"), age(o)]),
        ),
        ("", "serviceaccounts") => (
            vec![
                name_column(),
                column(
                    "Secrets",
                    "integer",
                    "",
                    "Secrets is the list of secrets allowed to be used by pods running using this ServiceAccount.",
                    0,
                ),
                age_column(),
            ],
            Box::new(move |o| {
                vec![name(o), json!(o.get("secrets").and_then(Value::as_array).map_or(0, Vec::len)), age(o)]
            }),
        ),
        _ => (vec![name_column(), age_column()], Box::new(move |o| vec![name(o), age(o)])),
    }
}

/// A `Table` of `objects` (each as the client asked for it).
pub(crate) fn table(rt: &ResourceType, version: &str, objects: &[Value], list_meta: &Value, include: Include) -> Value {
    let (defs, cells) = columns(rt, version);
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

/// A short human duration like kubectl prints (`45s`, `5m`, `3h12m`, `2d`).
pub(crate) fn age(timestamp: &str) -> String {
    let Ok(then) = timestamp.parse::<jiff::Timestamp>() else {
        return "<unknown>".to_string();
    };
    let secs = jiff::Timestamp::now().as_second().saturating_sub(then.as_second()).max(0);
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
