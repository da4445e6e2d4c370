//! Response bodies, byte for byte as kube-apiserver writes them: every body and watch frame of
//! the server goes through [`body`] or [`watch_event`].
//!
//! Go's `encoding/json` writes a struct's fields in their declaration order and a map's keys
//! sorted, so a built-in object starts `{"kind":...,"apiVersion":...,"metadata":{"name":...`
//! and a `Status` ends `..."details":{...},"code":404}`. The declaration order of every Go type
//! is the order of its message in `data/protobuf.json` (the `generated.proto` files are made
//! from the Go structs, field by field); structs embedded inline (`VolumeSource` in `Volume`)
//! are spliced in place, and the `Table` types, which have no message, are written out below;
//! a document without a `kind` (`/version`, `/openapi`) is written in the order it was built. Custom resources are maps in Go (`unstructured.Unstructured`): their keys are
//! sorted at every level. Strings are escaped as Go escapes them (`<`, `>`, `&`, U+2028 and
//! U+2029 as `\u` escapes) and numbers printed as Go prints them (`1`, not `1.0`; `1e+21`);
//! a compact body ends with a newline (`json.Encoder`), an indented one (`?pretty`) does not
//! (`json.MarshalIndent`).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::OnceLock;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde_json::{Map, Value};

use super::builtins;
use super::protobuf;
use super::status::ApiError;

/// How the keys of an object are ordered.
#[derive(Clone, Copy)]
enum Order {
    /// By the Go type of this name (a message, `map:KEY:VALUE`, or a scalar).
    Typed(&'static str),
    /// A runtime object: by its `apiVersion` and `kind`, sorted when they name no Go type.
    Detect,
    /// Go maps all the way down (custom resources).
    Sorted,
    /// As it is (raw JSON kept as stored: `RawExtension`, `FieldsV1`, documents without a kind).
    Kept,
}

/// `value` as the body of a response: compact, in Go's order, with the final newline.
pub(crate) fn body(value: &Value) -> Vec<u8> {
    let mut w = Writer { out: Vec::with_capacity(256), indent: None };
    w.value(value, Order::Detect, true);
    w.out.push(b'\n');
    w.out
}

/// One frame of a watch: `{"type":...,"object":...}` and a newline.
pub(crate) fn watch_event(kind: &str, object: &Value) -> Bytes {
    let mut w = Writer { out: Vec::with_capacity(256), indent: None };
    w.out.extend_from_slice(b"{\"type\":");
    w.string(kind);
    w.out.extend_from_slice(b",\"object\":");
    w.value(object, Order::Detect, true);
    w.out.extend_from_slice(b"}\n");
    Bytes::from(w.out)
}

/// `value` as Go's `json.Marshal` writes a `map[string]interface{}`: compact, keys sorted at
/// every level, without a newline (a printer cell holding an object).
pub(crate) fn compact(value: &Value) -> String {
    let mut w = Writer { out: Vec::new(), indent: None };
    w.value(value, Order::Sorted, true);
    String::from_utf8(w.out).unwrap_or_default()
}

/// A JSON response: `value` as its body, `code` as its status.
pub(crate) fn response(code: u16, value: &Value) -> Response {
    let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (status, [(header::CONTENT_TYPE, "application/json")], body(value)).into_response()
}

impl IntoResponse for ApiError {
    /// The `Status` as JSON, with `code` as the HTTP status; a 429 (or a 504 with a retry delay)
    /// says when to come back in `Retry-After`, as the real server does.
    fn into_response(self) -> Response {
        let mut response = response(self.code, &self.to_status());
        if let Some(seconds) = self.details.as_ref().and_then(|d| d.get("retryAfterSeconds")).and_then(Value::as_u64)
            && let Ok(value) = HeaderValue::from_str(&seconds.to_string())
        {
            response.headers_mut().insert(header::RETRY_AFTER, value);
        }
        response
    }
}

/// A body written by [`body`], indented by two spaces as `json.MarshalIndent` writes it (what
/// `?pretty=true` and curl's or a browser's requests get); `None` when it is not JSON.
pub(crate) fn pretty(compact: &[u8]) -> Option<Vec<u8>> {
    let value: Value = serde_json::from_slice(compact).ok()?;
    let mut w = Writer { out: Vec::with_capacity(compact.len() * 2), indent: Some(0) };
    w.value(&value, Order::Kept, true);
    Some(w.out)
}

/// The Go field order of each message: JSON name and type, inline structs spliced in.
struct Message {
    fields: Vec<(&'static str, &'static str)>,
}

impl Message {
    fn has(&self, key: &str) -> bool {
        self.fields.iter().any(|(name, _)| *name == key)
    }
}

/// Go types without a protobuf message, in their declaration order (`meta/v1/types.go`).
const HAND_WRITTEN: &[(&str, &[(&str, &str)])] = &[
    (
        TABLE,
        &[
            ("metadata", "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"),
            ("columnDefinitions", "io.k8s.apimachinery.pkg.apis.meta.v1.TableColumnDefinition"),
            ("rows", "io.k8s.apimachinery.pkg.apis.meta.v1.TableRow"),
        ],
    ),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.TableColumnDefinition",
        &[
            ("name", "string"),
            ("type", "string"),
            ("format", "string"),
            ("description", "string"),
            ("priority", "int32"),
        ],
    ),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.TableRow",
        &[("cells", RAW), ("conditions", "io.k8s.apimachinery.pkg.apis.meta.v1.TableRowCondition"), ("object", OBJECT)],
    ),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.TableRowCondition",
        &[("type", "string"), ("status", "string"), ("reason", "string"), ("message", "string")],
    ),
];

const TABLE: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Table";
/// A field holding an embedded runtime object (a table row's `object`).
const OBJECT: &str = "@object";
/// A field holding raw JSON.
const RAW: &str = "@raw";

/// Types whose JSON is not an object of their fields: written as they are stored.
const LEAVES: &[&str] = &[
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time",
    "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Duration",
    "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1",
    "io.k8s.apimachinery.pkg.api.resource.Quantity",
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString",
    "io.k8s.apimachinery.pkg.runtime.RawExtension",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON",
];

/// A schema, or an array of schemas, or a bool (`JSONSchemaPropsOrArray`/`OrBool`/
/// `OrStringArray`): written as the schemas they hold.
const SCHEMA: &str = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps";

/// The Go type of the objects of an `apiVersion` and `kind`, when there is one.
fn type_of(api_version: Option<&str>, kind: &str) -> Option<&'static str> {
    let Some(api_version) = api_version else {
        // The one kind written without an apiVersion.
        return (kind == "APIVersions").then_some("io.k8s.apimachinery.pkg.apis.meta.v1.APIVersions");
    };
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    if group == "meta.k8s.io" {
        return match kind {
            "Table" => Some(TABLE),
            "PartialObjectMetadata" => Some("io.k8s.apimachinery.pkg.apis.meta.v1.PartialObjectMetadata"),
            "PartialObjectMetadataList" => Some(PARTIAL_OBJECT_METADATA_LIST),
            _ => None,
        };
    }
    if (group, version, kind) == ("apidiscovery.k8s.io", "v2", "APIGroupDiscoveryList") {
        return Some("io.k8s.api.apidiscovery.v2.APIGroupDiscoveryList");
    }
    if let Some(name) = builtins::definition_name(group, version, kind) {
        return Some(name);
    }
    let item = builtins::definition_name(group, version, kind.strip_suffix("List")?)?;
    messages().get_key_value(format!("{item}List").as_str()).map(|(name, _)| *name)
}

/// Every Go type the server writes, by name: its fields in order, inline structs spliced in.
fn messages() -> &'static HashMap<&'static str, Message> {
    static MESSAGES: OnceLock<HashMap<&'static str, Message>> = OnceLock::new();
    MESSAGES.get_or_init(|| {
        let mut all: HashMap<&'static str, Message> = protobuf::names()
            .map(|name| {
                let mut fields = Vec::new();
                flatten(name, &mut fields, 0);
                (name, Message { fields })
            })
            .collect();
        for (name, fields) in HAND_WRITTEN {
            all.insert(name, Message { fields: fields.to_vec() });
        }
        all
    })
}

/// The fields of the message `name`, with those of the structs it embeds inline in their place.
fn flatten(name: &str, out: &mut Vec<(&'static str, &'static str)>, depth: usize) {
    let Some(fields) = protobuf::fields(name) else {
        return;
    };
    for (json_name, ty) in fields {
        // Embedding is a few levels deep at most (`Volume` > `VolumeSource`).
        if json_name.is_empty() && depth < 8 {
            flatten(ty, out, depth + 1);
        } else {
            out.push((json_name, ty));
        }
    }
}

struct Writer {
    out: Vec<u8>,
    /// The depth of an indented body; `None` for a compact one.
    indent: Option<usize>,
}

impl Writer {
    /// Writes `value` ordered as `order` says; `type_meta`: an object's own `kind` and
    /// `apiVersion` are written (the items of a built-in list have none in Go).
    fn value(&mut self, value: &Value, order: Order, type_meta: bool) {
        match value {
            Value::Null => self.out.extend_from_slice(b"null"),
            Value::Bool(b) => self.out.extend_from_slice(if *b { b"true" } else { b"false" }),
            Value::Number(n) => self.number(n),
            Value::String(s) => self.string(s),
            Value::Array(items) => self.array(items, order, type_meta),
            Value::Object(map) => self.object(map, order, type_meta),
        }
    }

    fn array(&mut self, items: &[Value], order: Order, type_meta: bool) {
        if items.is_empty() {
            self.out.extend_from_slice(b"[]");
            return;
        }
        self.out.push(b'[');
        self.open();
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                self.out.push(b',');
            }
            self.newline();
            self.value(item, order, type_meta);
        }
        self.close();
        self.out.push(b']');
    }

    fn object(&mut self, map: &Map<String, Value>, order: Order, type_meta: bool) {
        // The items of a built-in list are typed objects with an empty `TypeMeta` in Go; those of
        // a `PartialObjectMetadataList` have theirs set.
        let typed_items = matches!(order, Order::Typed(t) if t.ends_with("List") && t != PARTIAL_OBJECT_METADATA_LIST);
        let entries: Vec<(&str, &Value, Order)> = match order {
            Order::Kept => map.iter().map(|(k, v)| (k.as_str(), v, Order::Kept)).collect(),
            Order::Sorted => sorted(map, Order::Sorted),
            Order::Detect => {
                let api_version = map.get("apiVersion").and_then(Value::as_str);
                match map.get("kind").and_then(Value::as_str).and_then(|kind| type_of(api_version, kind)) {
                    Some(ty) => return self.object(map, Order::Typed(ty), type_meta),
                    None if map.contains_key("kind") => sorted(map, Order::Sorted),
                    None => map.iter().map(|(k, v)| (k.as_str(), v, Order::Kept)).collect(),
                }
            }
            Order::Typed(ty) => typed(map, ty, type_meta),
        };
        if entries.is_empty() {
            self.out.extend_from_slice(b"{}");
            return;
        }
        self.out.push(b'{');
        self.open();
        for (i, (key, value, order)) in entries.into_iter().enumerate() {
            if i > 0 {
                self.out.push(b',');
            }
            self.newline();
            self.string(key);
            self.out.push(b':');
            if self.indent.is_some() {
                self.out.push(b' ');
            }
            self.value(value, order, !(typed_items && key == "items"));
        }
        self.close();
        self.out.push(b'}');
    }

    fn open(&mut self) {
        if let Some(depth) = &mut self.indent {
            *depth += 1;
        }
    }

    fn close(&mut self) {
        if let Some(depth) = &mut self.indent {
            *depth -= 1;
        }
        self.newline();
    }

    fn newline(&mut self) {
        if let Some(depth) = self.indent {
            self.out.push(b'\n');
            self.out.resize(self.out.len() + 2 * depth, b' ');
        }
    }

    /// A JSON string as Go's encoder escapes it (HTML-safe).
    fn string(&mut self, s: &str) {
        self.out.push(b'"');
        let mut start = 0;
        for (i, c) in s.char_indices() {
            let escape: Option<&str> = match c {
                '"' => Some("\\\""),
                '\\' => Some("\\\\"),
                '\n' => Some("\\n"),
                '\r' => Some("\\r"),
                '\t' => Some("\\t"),
                '\u{8}' => Some("\\b"),
                '\u{c}' => Some("\\f"),
                c if c < ' ' || matches!(c, '<' | '>' | '&' | '\u{2028}' | '\u{2029}') => None,
                _ => continue,
            };
            self.out.extend_from_slice(&s.as_bytes()[start..i]);
            if let Some(e) = escape {
                self.out.extend_from_slice(e.as_bytes());
            } else {
                let mut text = String::new();
                let _ = write!(text, "\\u{:04x}", u32::from(c));
                self.out.extend_from_slice(text.as_bytes());
            }
            start = i + c.len_utf8();
        }
        self.out.extend_from_slice(&s.as_bytes()[start..]);
        self.out.push(b'"');
    }

    /// A number as Go prints it: integers as they are, floats in their shortest form without
    /// `.0`, with an exponent (`1e+21`, `1e-7`) only when very large or small. An integer
    /// beyond `int64` was a `float64` in Go.
    fn number(&mut self, n: &serde_json::Number) {
        let text = match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => i.to_string(),
            #[allow(clippy::cast_precision_loss)] // as Go, which decoded it as a float64
            (None, Some(u), _) => go_float(u as f64),
            (None, None, Some(f)) => go_float(f),
            _ => n.to_string(),
        };
        self.out.extend_from_slice(text.as_bytes());
    }
}

const PARTIAL_OBJECT_METADATA_LIST: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.PartialObjectMetadataList";

/// The entries of `map` with sorted keys (Go's map order), each ordered by `order`.
fn sorted(map: &Map<String, Value>, order: Order) -> Vec<(&str, &Value, Order)> {
    let mut entries: Vec<(&str, &Value, Order)> = map.iter().map(|(k, v)| (k.as_str(), v, order)).collect();
    entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
    entries
}

/// The entries of `map` in the order of the Go type `ty`: a map's keys sorted, a struct's
/// `kind` and `apiVersion` (its inline `TypeMeta`) first, then its fields, then what the
/// type does not know (nothing, once decoding has dropped unknown fields), sorted.
fn typed<'a>(map: &'a Map<String, Value>, ty: &'static str, type_meta: bool) -> Vec<(&'a str, &'a Value, Order)> {
    if let Some((_, value_type)) = ty.strip_prefix("map:").and_then(|kv| kv.split_once(':')) {
        return sorted(map, field_order(value_type));
    }
    let ty = if ty.starts_with(SCHEMA) { SCHEMA } else { ty };
    let Some(message) = messages().get(ty).filter(|_| !LEAVES.contains(&ty)) else {
        return map.iter().map(|(k, v)| (k.as_str(), v, Order::Kept)).collect();
    };
    let mut entries = Vec::with_capacity(map.len());
    if type_meta {
        for key in ["kind", "apiVersion"] {
            if let Some((k, v)) = map.get_key_value(key).filter(|_| !message.has(key)) {
                entries.push((k.as_str(), v, Order::Kept));
            }
        }
    }
    for (name, field_type) in &message.fields {
        if let Some((k, v)) = map.get_key_value(*name) {
            entries.push((k.as_str(), v, field_order(field_type)));
        }
    }
    let mut unknown: Vec<(&str, &Value, Order)> = map
        .iter()
        .filter(|(k, _)| !message.has(k) && !matches!(k.as_str(), "kind" | "apiVersion"))
        .map(|(k, v)| (k.as_str(), v, Order::Sorted))
        .collect();
    unknown.sort_unstable_by(|a, b| a.0.cmp(b.0));
    entries.extend(unknown);
    entries
}

/// How a field of type `ty` is ordered.
fn field_order(ty: &'static str) -> Order {
    match ty {
        OBJECT => Order::Detect,
        RAW => Order::Kept,
        t if LEAVES.contains(&t) => Order::Kept,
        t => Order::Typed(t),
    }
}

/// Go's `encoding/json` float format: `strconv.FormatFloat(f, 'f', -1, 64)`, or `'e'` with a
/// signed exponent of at least one digit below 1e-6 and from 1e21.
fn go_float(f: f64) -> String {
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let text = format!("{f:e}");
        match text.split_once('e') {
            Some((mantissa, exponent)) if !exponent.starts_with('-') => format!("{mantissa}e+{exponent}"),
            _ => text,
        }
    } else {
        format!("{f}")
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn text(value: &Value) -> String {
        String::from_utf8(body(value)).unwrap()
    }

    #[test]
    fn a_status_is_written_in_the_go_struct_order_with_a_newline() {
        let status = json!({ "code": 404, "details": { "kind": "pods", "name": "x" }, "reason": "NotFound",
            "message": "pods \"x\" not found", "status": "Failure", "metadata": {}, "apiVersion": "v1", "kind": "Status" });
        assert_eq!(
            text(&status),
            "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"pods \\\"x\\\" not found\",\"reason\":\"NotFound\",\"details\":{\"name\":\"x\",\"kind\":\"pods\"},\"code\":404}\n"
        );
    }

    #[test]
    fn built_ins_follow_their_type_and_maps_are_sorted() {
        let cm = json!({ "data": { "b": "1", "a": "<&>" }, "metadata": { "namespace": "d", "name": "c" },
            "apiVersion": "v1", "kind": "ConfigMap" });
        assert_eq!(
            text(&cm),
            "{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"c\",\"namespace\":\"d\"},\"data\":{\"a\":\"\\u003c\\u0026\\u003e\",\"b\":\"1\"}}\n"
        );
        let volume = json!({ "apiVersion": "v1", "kind": "Pod", "spec": { "volumes": [
            { "configMap": { "name": "c" }, "name": "v" }] } });
        assert!(text(&volume).contains("{\"name\":\"v\",\"configMap\":{\"name\":\"c\"}}"), "inline VolumeSource");
    }

    #[test]
    fn list_items_of_built_ins_carry_no_type_and_custom_resources_sort() {
        let list = json!({ "items": [{ "metadata": { "name": "a" }, "kind": "ConfigMap", "apiVersion": "v1" }],
            "metadata": { "resourceVersion": "3" }, "apiVersion": "v1", "kind": "ConfigMapList" });
        assert_eq!(
            text(&list),
            "{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"3\"},\"items\":[{\"metadata\":{\"name\":\"a\"}}]}\n"
        );
        let cr = json!({ "spec": { "z": 1, "a": 1.0 }, "metadata": { "name": "x", "creationTimestamp": "t" },
            "kind": "Foo", "apiVersion": "e.com/v1" });
        assert_eq!(
            text(&cr),
            "{\"apiVersion\":\"e.com/v1\",\"kind\":\"Foo\",\"metadata\":{\"creationTimestamp\":\"t\",\"name\":\"x\"},\"spec\":{\"a\":1,\"z\":1}}\n"
        );
    }

    #[test]
    fn numbers_print_as_go_prints_them() {
        assert_eq!(go_float(1.0), "1");
        assert_eq!(go_float(1.5), "1.5");
        assert_eq!(go_float(1e21), "1e+21");
        assert_eq!(go_float(1e-7), "1e-7");
        assert_eq!(go_float(0.000_001), "0.000001");
        assert_eq!(go_float(1e20), "100000000000000000000");
        assert_eq!(text(&json!(18_446_744_073_709_551_615_u64)), "18446744073709552000\n");
    }

    #[test]
    fn pretty_bodies_are_indented_without_a_newline() {
        let compact = body(&json!({ "kind": "Status", "apiVersion": "v1", "metadata": {}, "code": 200 }));
        let indented = String::from_utf8(pretty(&compact).unwrap()).unwrap();
        assert_eq!(
            indented,
            "{\n  \"kind\": \"Status\",\n  \"apiVersion\": \"v1\",\n  \"metadata\": {},\n  \"code\": 200\n}"
        );
    }
}
