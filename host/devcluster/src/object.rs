//! Reading and writing the `metadata` of stored objects, which are kept as plain JSON.

use serde_json::{Map, Value, json};

/// The finalizer that holds an owner deleted with `propagationPolicy: Foreground`.
pub(crate) const FOREGROUND: &str = "foregroundDeletion";

/// A string field of `metadata`, or `""`.
pub(crate) fn meta_str<'a>(obj: &'a Value, field: &str) -> &'a str {
    obj.get("metadata").and_then(|m| m.get(field)).and_then(Value::as_str).unwrap_or("")
}

pub(crate) fn name(obj: &Value) -> &str {
    meta_str(obj, "name")
}

pub(crate) fn namespace(obj: &Value) -> &str {
    meta_str(obj, "namespace")
}

pub(crate) fn uid(obj: &Value) -> &str {
    meta_str(obj, "uid")
}

/// `metadata`, created as an empty object when absent or not an object.
pub(crate) fn meta_mut(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj.is_object() {
        *obj = json!({});
    }
    let map = obj.as_object_mut().expect("just made an object");
    let meta = map.entry("metadata").or_insert_with(|| json!({}));
    if !meta.is_object() {
        *meta = json!({});
    }
    meta.as_object_mut().expect("just made an object")
}

pub(crate) fn set_meta(obj: &mut Value, field: &str, value: Value) {
    meta_mut(obj).insert(field.to_string(), value);
}

pub(crate) fn remove_meta(obj: &mut Value, field: &str) {
    meta_mut(obj).remove(field);
}

/// `metadata.labels` as string pairs (non-string values are ignored).
pub(crate) fn labels(obj: &Value) -> Vec<(&str, &str)> {
    obj.get("metadata")
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object)
        .map(|l| l.iter().filter_map(|(k, v)| v.as_str().map(|v| (k.as_str(), v))).collect())
        .unwrap_or_default()
}

pub(crate) fn finalizers(obj: &Value) -> Vec<String> {
    obj.get("metadata")
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .map(|f| f.iter().filter_map(|v| v.as_str().map(String::from)).collect())
        .unwrap_or_default()
}

pub(crate) fn set_finalizers(obj: &mut Value, finalizers: &[String]) {
    if finalizers.is_empty() {
        remove_meta(obj, "finalizers");
    } else {
        set_meta(obj, "finalizers", json!(finalizers));
    }
}

pub(crate) fn is_deleting(obj: &Value) -> bool {
    obj.get("metadata").and_then(|m| m.get("deletionTimestamp")).is_some_and(|v| !v.is_null())
}

/// The ownerReferences of an object, borrowed.
pub(crate) fn owner_refs(obj: &Value) -> &[Value] {
    obj.pointer("/metadata/ownerReferences").and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// Whether `obj` lists the finalizer `name`.
pub(crate) fn has_finalizer(obj: &Value, name: &str) -> bool {
    obj.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|f| f.iter().any(|v| v.as_str() == Some(name)))
}

pub(crate) fn generation(obj: &Value) -> i64 {
    obj.get("metadata").and_then(|m| m.get("generation")).and_then(Value::as_i64).unwrap_or(0)
}

/// The current time as the API server prints it (RFC 3339, seconds, UTC).
pub(crate) fn now() -> String {
    jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// The object without the fields that change on every write (resourceVersion, managedFields),
/// to tell a no-op write from a real one.
pub(crate) fn without_volatile(obj: &Value) -> Value {
    let mut copy = obj.clone();
    if let Some(meta) = copy.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("resourceVersion");
        meta.remove("managedFields");
    }
    copy
}
