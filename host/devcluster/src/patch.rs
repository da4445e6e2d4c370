//! JSON merge patch, JSON patch, and the strategic merge patch of built-in kinds.

use serde_json::{Map, Value};

use super::builtins;

/// How a list field of a built-in kind merges in a strategic merge patch: its
/// `x-kubernetes-patch-strategy` and `x-kubernetes-patch-merge-key` in the upstream definitions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ListMerge<'a> {
    /// Items are matched by this key field.
    ByKey(&'a str),
    /// A list of scalars merged as a set (e.g. `metadata.finalizers`).
    Primitives,
    /// The patch's list replaces the original.
    Replace,
}

/// The merge strategy of a list field, from the field's schema.
fn list_merge(field: Option<&Value>) -> ListMerge<'_> {
    let Some(field) = field else {
        return ListMerge::Replace;
    };
    let merge = field
        .get("x-kubernetes-patch-strategy")
        .and_then(Value::as_str)
        .is_some_and(|s| s.split(',').any(|s| s == "merge"));
    match field.get("x-kubernetes-patch-merge-key").and_then(Value::as_str) {
        Some(key) if merge => ListMerge::ByKey(key),
        None if merge => ListMerge::Primitives,
        _ => ListMerge::Replace,
    }
}

fn property<'a>(schema: Option<&'a Value>, key: &str) -> Option<&'a Value> {
    schema.and_then(|s| builtins::property(s, key))
}

/// Applies an RFC 7386 merge patch. The patch must be a JSON object.
pub(crate) fn merge_patch(original: &Value, patch: &Value) -> Result<Value, String> {
    if !patch.is_object() {
        return Err("patch must be a JSON object".to_string());
    }
    let mut doc = original.clone();
    json_patch::merge(&mut doc, patch);
    Ok(doc)
}

/// Applies an RFC 6902 JSON patch (including `test`). Errors: the first is a malformed patch
/// (400), the second one that cannot be applied (422).
pub(crate) fn json_patch(original: &Value, patch: &Value) -> Result<Value, PatchFailure> {
    let ops: json_patch::Patch =
        serde_json::from_value(patch.clone()).map_err(|e| PatchFailure::Malformed(e.to_string()))?;
    let mut doc = original.clone();
    for op in &ops.0 {
        // As in the real server's JSON patch, testing a missing field against null passes
        // (kube-runtime's finalizer helper relies on it).
        if let json_patch::PatchOperation::Test(test) = op
            && test.value.is_null()
            && doc.pointer(test.path.as_str()).is_none()
            && doc.pointer(test.path.as_str().rsplit_once('/').map_or("", |(parent, _)| parent)).is_some()
        {
            continue;
        }
        json_patch::patch(&mut doc, std::slice::from_ref(op)).map_err(|e| PatchFailure::Unappliable(e.to_string()))?;
    }
    Ok(doc)
}

/// Why a patch was refused.
#[derive(Debug)]
pub(crate) enum PatchFailure {
    Malformed(String),
    Unappliable(String),
}

/// Applies a strategic merge patch to a built-in object of the given definition.
pub(crate) fn strategic_merge(original: &Value, patch: &Value, definition: Option<&Value>) -> Result<Value, String> {
    let (Some(orig), Some(patch)) = (original.as_object(), patch.as_object()) else {
        return Err("strategic merge patch must be a JSON object".to_string());
    };
    Ok(merge_map(orig, patch, definition)?.map_or_else(|| Value::Object(Map::new()), Value::Object))
}

/// Merges one map; `None` means the patch deleted it (`$patch: delete`).
fn merge_map(
    orig: &Map<String, Value>,
    patch: &Map<String, Value>,
    schema: Option<&Value>,
) -> Result<Option<Map<String, Value>>, String> {
    match patch.get("$patch").and_then(Value::as_str) {
        Some("delete") => return Ok(None),
        Some("replace") => return Ok(Some(strip_directives(patch))),
        Some("merge") | None => {}
        Some(other) => return Err(format!("unknown patch type: {other}")),
    }
    let mut out = orig.clone();
    for (key, value) in patch {
        if key.starts_with('$') {
            continue;
        }
        match value {
            Value::Null => {
                out.remove(key);
            }
            Value::Object(child_patch) => {
                let empty = Map::new();
                let child_orig = orig.get(key).and_then(Value::as_object).unwrap_or(&empty);
                let merged = merge_map(child_orig, child_patch, property(schema, key))?;
                match merged {
                    Some(m) => {
                        out.insert(key.clone(), Value::Object(m));
                    }
                    None => {
                        out.remove(key);
                    }
                }
            }
            Value::Array(items) => {
                let merged = merge_list(orig.get(key).and_then(Value::as_array), items, property(schema, key))?;
                out.insert(key.clone(), Value::Array(merged));
            }
            scalar => {
                out.insert(key.clone(), scalar.clone());
            }
        }
    }
    // Directives that refer to sibling fields.
    for (key, value) in patch {
        if let Some(field) = key.strip_prefix("$deleteFromPrimitiveList/") {
            if let (Some(Value::Array(list)), Some(remove)) = (out.get_mut(field), value.as_array()) {
                list.retain(|v| !remove.contains(v));
            }
        } else if let Some(field) = key.strip_prefix("$setElementOrder/") {
            let strategy = list_merge(property(schema, field));
            if let (Some(Value::Array(list)), Some(order)) = (out.get_mut(field), value.as_array()) {
                reorder(list, order, strategy);
            }
        }
    }
    if let Some(keep) = patch.get("$retainKeys").and_then(Value::as_array) {
        out.retain(|k, _| keep.iter().any(|r| r.as_str() == Some(k)));
    }
    Ok(Some(out))
}

fn merge_list(orig: Option<&Vec<Value>>, patch: &[Value], schema: Option<&Value>) -> Result<Vec<Value>, String> {
    let strategy = list_merge(schema);
    let item_schema = schema.and_then(builtins::items);
    let replace_all = patch.iter().any(|i| i.get("$patch").and_then(Value::as_str) == Some("replace"));
    let orig = orig.cloned().unwrap_or_default();
    match strategy {
        ListMerge::Replace => Ok(patch.iter().map(clean).collect()),
        ListMerge::Primitives => {
            if replace_all {
                return Ok(patch.iter().filter(|i| i.get("$patch").is_none()).cloned().collect());
            }
            let mut out = orig;
            for item in patch {
                if !out.contains(item) {
                    out.push(item.clone());
                }
            }
            Ok(out)
        }
        ListMerge::ByKey(key) => {
            if replace_all {
                return Ok(patch.iter().filter(|i| i.get("$patch").is_none()).map(clean).collect());
            }
            let mut out = orig;
            for item in patch {
                let Some(item_map) = item.as_object() else {
                    out.push(item.clone());
                    continue;
                };
                let Some(key_value) = item_map.get(key) else {
                    return Err(format!("map: {item} does not contain declared merge key: {key}"));
                };
                let pos = out.iter().position(|o| o.get(key) == Some(key_value));
                if item_map.get("$patch").and_then(Value::as_str) == Some("delete") {
                    if let Some(pos) = pos {
                        out.remove(pos);
                    }
                    continue;
                }
                match pos {
                    Some(pos) => {
                        let empty = Map::new();
                        let existing = out[pos].as_object().unwrap_or(&empty).clone();
                        match merge_map(&existing, item_map, item_schema)? {
                            Some(m) => out[pos] = Value::Object(m),
                            None => {
                                out.remove(pos);
                            }
                        }
                    }
                    None => {
                        if let Some(m) = merge_map(&Map::new(), item_map, item_schema)? {
                            out.push(Value::Object(m));
                        }
                    }
                }
            }
            Ok(out)
        }
    }
}

/// Orders `list` like `order` (`$setElementOrder`); items not named keep their place at the end.
fn reorder(list: &mut [Value], order: &[Value], strategy: ListMerge) {
    let position = |item: &Value| -> usize {
        let probe = match strategy {
            ListMerge::ByKey(key) => order.iter().position(|o| o.get(key).is_some() && o.get(key) == item.get(key)),
            _ => order.iter().position(|o| o == item),
        };
        probe.unwrap_or(usize::MAX)
    };
    list.sort_by_key(position);
}

fn clean(value: &Value) -> Value {
    match value {
        Value::Object(m) => Value::Object(strip_directives(m)),
        other => other.clone(),
    }
}

fn strip_directives(map: &Map<String, Value>) -> Map<String, Value> {
    map.iter().filter(|(k, _)| !k.starts_with('$')).map(|(k, v)| (k.clone(), clean(v))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod() -> Option<&'static Value> {
        builtins::definition("", "v1", "Pod")
    }

    #[test]
    fn list_strategies_come_from_the_definitions() {
        // Service ports merge by `port`; tolerations have no patch strategy and are replaced.
        let service = builtins::definition("", "v1", "Service");
        let orig = json!({"spec": {"ports": [{"port": 80, "name": "http"}, {"port": 443, "name": "https"}]}});
        let patch = json!({"spec": {"ports": [{"port": 80, "targetPort": 8080}]}});
        let out = strategic_merge(&orig, &patch, service).unwrap();
        assert_eq!(
            out["spec"]["ports"],
            json!([{"port": 80, "name": "http", "targetPort": 8080}, {"port": 443, "name": "https"}])
        );
        let orig = json!({"spec": {"tolerations": [{"key": "a", "operator": "Exists"}]}});
        let patch = json!({"spec": {"tolerations": [{"key": "b", "operator": "Exists"}]}});
        let out = strategic_merge(&orig, &patch, pod()).unwrap();
        assert_eq!(out["spec"]["tolerations"], json!([{"key": "b", "operator": "Exists"}]));
    }

    #[test]
    fn containers_merge_by_name_and_ports_by_container_port() {
        let orig = json!({"spec": {"containers": [
            {"name": "a", "image": "a:1", "ports": [{"containerPort": 80}]},
            {"name": "b", "image": "b:1"}]}});
        let patch = json!({"spec": {"containers": [{"name": "a", "image": "a:2", "ports": [{"containerPort": 443}]}]}});
        let out = strategic_merge(&orig, &patch, pod()).unwrap();
        assert_eq!(
            out,
            json!({"spec": {"containers": [
            {"name": "a", "image": "a:2", "ports": [{"containerPort": 80}, {"containerPort": 443}]},
            {"name": "b", "image": "b:1"}]}})
        );
    }

    #[test]
    fn patch_directives_delete_and_replace() {
        let orig = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}], "selector": {"x": "1", "y": "2"}}});
        let patch = json!({"spec": {"containers": [{"name": "b", "$patch": "delete"}], "selector": {"$patch": "replace", "z": "3"}}});
        let out = strategic_merge(&orig, &patch, pod()).unwrap();
        assert_eq!(out, json!({"spec": {"containers": [{"name": "a"}], "selector": {"z": "3"}}}));
        let patch = json!({"spec": {"containers": [{"$patch": "replace"}, {"name": "c"}]}});
        let out = strategic_merge(&orig, &patch, pod()).unwrap();
        assert_eq!(out["spec"]["containers"], json!([{"name": "c"}]));
    }

    #[test]
    fn unkeyed_lists_are_replaced_and_nulls_delete() {
        let orig = json!({"spec": {"args": ["a"], "x": 1}, "metadata": {"finalizers": ["f1"]}});
        let patch = json!({"spec": {"args": ["b"], "x": null}, "metadata": {"finalizers": ["f2"]}});
        let out = strategic_merge(&orig, &patch, pod()).unwrap();
        assert_eq!(out, json!({"spec": {"args": ["b"]}, "metadata": {"finalizers": ["f1", "f2"]}}));
    }
}

#[cfg(test)]
mod json_patch_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn testing_a_missing_path_against_null_passes_like_the_real_server() {
        let orig = json!({"metadata": {"name": "x"}});
        let patch = json!([
            {"op": "test", "path": "/metadata/finalizers", "value": null},
            {"op": "add", "path": "/metadata/finalizers", "value": ["f"]}
        ]);
        let out = json_patch(&orig, &patch).unwrap();
        assert_eq!(out["metadata"]["finalizers"], json!(["f"]));
    }
}
