//! The pieces server-side printing is made of, as kubectl's printers make them: column
//! definitions, the cells every kind shares, and the formatting of labels, selectors and ages.
//! Each kind's strategy assembles its columns from these (`Strategy::columns`).

use serde_json::{Value, json};

use super::builtins;
use super::object;

/// Turns one object into the cells of its table row.
pub(crate) type Cells = Box<dyn Fn(&Value) -> Vec<Value>>;

/// Server-side printing of a kind: column definitions and the cells of one object.
pub(crate) struct Columns {
    pub defs: Vec<Value>,
    pub cells: Cells,
}

impl Columns {
    /// `Name` and `Age`: what a kind without a printer of its own prints.
    pub(crate) fn name_and_age() -> Columns {
        Columns { defs: vec![name_column(), age_column()], cells: Box::new(|o| vec![name(o), age(o)]) }
    }

    /// `Name`, one column of the kind's own (`def`, whose cell `cell` gives), and `Age`: the
    /// printer of many kinds.
    pub(crate) fn one(def: Value, cell: impl Fn(&Value) -> Value + 'static) -> Columns {
        Columns {
            defs: vec![name_column(), def, age_column()],
            cells: Box::new(move |o| vec![name(o), cell(o), age(o)]),
        }
    }

    /// Name and creation time as a date, as roles and CRDs print.
    pub(crate) fn created_at() -> Columns {
        Columns {
            defs: vec![
                name_column(),
                column(
                    "Created At",
                    "date",
                    "CreationTimestamp is a timestamp representing the server time when this object was created.",
                    0,
                ),
            ],
            cells: Box::new(|o| vec![name(o), json!(object::meta_str(o, "creationTimestamp"))]),
        }
    }
}

/// A column definition of a server-side table.
pub(crate) fn column(name: &str, kind: &str, description: &str, priority: i64) -> Value {
    let format = if name == "Name" { "name" } else { "" };
    json!({ "name": name, "type": kind, "format": format, "description": description, "priority": priority })
}

/// The description of `field` of the upstream definition `definition` (what the real
/// printers take from `SwaggerDoc()`).
pub(crate) fn doc(definition: &str, field: &str) -> String {
    builtins::definitions()
        .get(definition)
        .and_then(|d| d.pointer(&format!("/properties/{field}/description")))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// The definition of every object's `metadata`.
pub(crate) const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

pub(crate) fn name_column() -> Value {
    column("Name", "string", &doc(OBJECT_META, "name"), 0)
}

pub(crate) fn age_column() -> Value {
    column("Age", "string", &doc(OBJECT_META, "creationTimestamp"), 0)
}

/// The `Containers` and `Images` columns of kinds with a pod template.
pub(crate) fn container_columns() -> [Value; 2] {
    [
        column("Containers", "string", "Names of each container in the template.", 1),
        column("Images", "string", "Images referenced by each container in the template.", 1),
    ]
}

/// The cell of `Name`.
pub(crate) fn name(obj: &Value) -> Value {
    json!(object::name(obj))
}

/// The cell of `Age`.
pub(crate) fn age(obj: &Value) -> Value {
    json!(since(object::meta_str(obj, "creationTimestamp")))
}

/// An integer at `pointer`, 0 when absent (Go's zero value).
pub(crate) fn int(obj: &Value, pointer: &str) -> i64 {
    obj.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

/// A string at `pointer`, empty when absent.
pub(crate) fn text<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer).and_then(Value::as_str).unwrap_or_default()
}

/// A string at `pointer`, or `fallback` when it is absent or empty.
pub(crate) fn text_or<'a>(obj: &'a Value, pointer: &str, fallback: &'a str) -> &'a str {
    match text(obj, pointer) {
        "" => fallback,
        s => s,
    }
}

/// `layoutContainerCells`: container names and images, comma separated.
pub(crate) fn container_cells(pod_spec: Option<&Value>) -> [Value; 2] {
    let containers = pod_spec.and_then(|s| s.get("containers")).and_then(Value::as_array);
    let field = |f: &str| {
        containers
            .into_iter()
            .flatten()
            .map(|c| c.get(f).and_then(Value::as_str).unwrap_or_default())
            .collect::<Vec<_>>()
            .join(",")
    };
    [json!(field("name")), json!(field("image"))]
}

/// `labels.FormatLabels`: `k=v,...` sorted by key, `<none>` when empty.
pub(crate) fn format_labels(map: Option<&Value>) -> String {
    let mut pairs: Vec<String> = map
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
        .collect();
    pairs.sort();
    if pairs.is_empty() { "<none>".to_string() } else { pairs.join(",") }
}

/// `metav1.FormatLabelSelector`: the selector in label selector syntax, `<none>` when empty.
pub(crate) fn format_selector(selector: Option<&Value>) -> String {
    let Some(selector) = selector.filter(|s| !s.is_null()) else {
        return "<none>".to_string();
    };
    let mut parts: Vec<String> = Vec::new();
    let mut labels: Vec<(&String, &Value)> =
        selector.get("matchLabels").and_then(Value::as_object).into_iter().flatten().collect();
    labels.sort_by_key(|(k, _)| *k);
    for (k, v) in labels {
        parts.push(format!("{k}={}", v.as_str().unwrap_or_default()));
    }
    for expr in selector.get("matchExpressions").and_then(Value::as_array).into_iter().flatten() {
        let key = expr.get("key").and_then(Value::as_str).unwrap_or_default();
        let values: Vec<&str> =
            expr.get("values").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
        parts.push(match expr.get("operator").and_then(Value::as_str).unwrap_or_default() {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_string(),
            "DoesNotExist" => format!("!{key}"),
            other => format!("{key} {other} ({})", values.join(",")),
        });
    }
    if parts.is_empty() { "<none>".to_string() } else { parts.join(",") }
}

/// Whether the condition `kind` of `obj` has status `True`.
pub(crate) fn condition_true(obj: &Value, kind: &str) -> bool {
    obj.pointer("/status/conditions").and_then(Value::as_array).into_iter().flatten().any(|c| {
        c.get("type").and_then(Value::as_str) == Some(kind) && c.get("status").and_then(Value::as_str) == Some("True")
    })
}

/// The load balancer's IPs or host names (`status.loadBalancer.ingress`), sorted, each once.
pub(crate) fn load_balancer_addresses(obj: &Value) -> Vec<&str> {
    let mut all: Vec<&str> = obj
        .pointer("/status/loadBalancer/ingress")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|i| {
            i.get("ip")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .or_else(|| i.get("hostname").and_then(Value::as_str))
        })
        .collect();
    all.sort_unstable();
    all.dedup();
    all
}

/// How long ago `timestamp` was, as kubectl prints it (`45s`, `5m`, `3h12m`, `2d`);
/// `<unknown>` for no time (`translateTimestampSince`).
pub(crate) fn since(timestamp: &str) -> String {
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

/// `duration.HumanDuration` of apimachinery, of a duration in seconds: up to a second in the
/// future reads as now, further is `<invalid>` (clocks that disagree).
pub(crate) fn human_duration(secs: i64) -> String {
    if secs < -1 {
        return "<invalid>".to_string();
    }
    let secs = secs.max(0);
    let (minutes, hours) = (secs / 60, secs / 3600);
    let days = hours / 24;
    let with = |big: i64, unit: &str, small: i64, small_unit: &str| {
        if small == 0 { format!("{big}{unit}") } else { format!("{big}{unit}{small}{small_unit}") }
    };
    if secs < 120 {
        format!("{secs}s")
    } else if minutes < 10 {
        with(minutes, "m", secs % 60, "s")
    } else if minutes < 180 {
        format!("{minutes}m")
    } else if hours < 8 {
        with(hours, "h", minutes % 60, "m")
    } else if hours < 48 {
        format!("{hours}h")
    } else if hours < 24 * 8 {
        with(days, "d", hours % 24, "h")
    } else if hours < 24 * 365 * 2 {
        format!("{days}d")
    } else if hours < 24 * 365 * 8 {
        with(days / 365, "y", days % 365, "d")
    } else {
        format!("{}y", days / 365)
    }
}

/// A JSON scalar as Go's `fmt.Sprint` prints it (a custom resource's field selector values
/// and printer cells): a string as it is, an integer in full, a float in `%v`'s shortest
/// form (`1.5`, `1e+06`), `true`/`false`; `null` as `<nil>`. Objects and arrays are left to
/// the caller.
pub(crate) fn go_print(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Null => "<nil>".to_string(),
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => i.to_string(),
            (None, Some(f)) => go_float_v(f),
            _ => n.to_string(),
        },
        other => other.to_string(),
    }
}

/// `%v` of a `float64` (`strconv.FormatFloat(f, 'g', -1, 64)`): the shortest digits, in
/// `%e` form with two exponent digits at least when the exponent is below -4 or 6 or more.
fn go_float_v(f: f64) -> String {
    if f == 0.0 || !f.is_finite() {
        return format!("{f}");
    }
    let scientific = format!("{f:e}");
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if (-4..6).contains(&exponent) {
        return format!("{f}");
    }
    let sign = if exponent < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exponent.abs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_numbers_print_as_go_prints_them() {
        let cases = [
            (-5, "<invalid>"),
            (-1, "0s"),
            (119, "119s"),
            (125, "2m5s"),
            (600, "10m"),
            (3 * 3600 + 120, "3h2m"),
            (30 * 3600, "30h"),
            (3 * 86400 + 7200, "3d2h"),
            (400 * 86400, "400d"),
            (800 * 86400, "2y70d"),
            (9 * 365 * 86400, "9y"),
        ];
        for (secs, text) in cases {
            assert_eq!(human_duration(secs), text, "{secs}s");
        }
        assert_eq!(go_print(&json!(1.5)), "1.5");
        assert_eq!(go_print(&json!(123_456.0)), "123456");
        assert_eq!(go_print(&json!(1_234_567.0)), "1.234567e+06");
        assert_eq!(go_print(&json!(0.000_01)), "1e-05");
        assert_eq!(go_print(&json!(42)), "42");
    }

    #[test]
    fn selectors_print_as_kubectl_does() {
        let sel = json!({ "matchLabels": { "b": "2", "a": "1" }, "matchExpressions": [
            { "key": "tier", "operator": "In", "values": ["x", "y"] },
            { "key": "legacy", "operator": "DoesNotExist" },
        ]});
        assert_eq!(format_selector(Some(&sel)), "a=1,b=2,tier in (x,y),!legacy");
        assert_eq!(format_selector(Some(&json!({}))), "<none>");
        assert_eq!(format_labels(Some(&json!({ "z": "1", "a": "2" }))), "a=2,z=1");
    }
}
