//! The `openAPIV3Schema` of a custom resource version: defaulting, structural pruning and
//! validation.

use serde_json::{Map, Value};

use crate::status::Cause;

/// Fills in `default` values of absent properties, recursively. A null where the schema is
/// not `nullable` counts as absent: it takes the default, or goes (the real server's
/// defaulting and `PruneNonNullableNullsWithoutDefaults`; server-side apply leaves such nulls).
pub(crate) fn apply_defaults(value: &mut Value, schema: &Value) {
    match value {
        Value::Object(map) => {
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                for (key, prop) in props {
                    let nullable = prop.get("nullable").and_then(Value::as_bool) == Some(true);
                    if map.get(key).is_some_and(Value::is_null) && !nullable {
                        map.remove(key);
                    }
                    if !map.contains_key(key)
                        && let Some(default) = prop.get("default")
                    {
                        map.insert(key.clone(), default.clone());
                    }
                    if let Some(child) = map.get_mut(key) {
                        apply_defaults(child, prop);
                    }
                }
            } else if let Some(extra) = schema.get("additionalProperties").filter(|s| s.is_object()) {
                for child in map.values_mut() {
                    apply_defaults(child, extra);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for item in items {
                    apply_defaults(item, item_schema);
                }
            }
        }
        _ => {}
    }
}

/// Removes fields the schema does not declare, unless `x-kubernetes-preserve-unknown-fields`.
/// At the root, `apiVersion`, `kind` and `metadata` are always kept. Returns the paths removed
/// (`spec.foo`, `spec.list[0].bar`), which strict field validation reports.
pub(crate) fn prune(value: &mut Value, schema: &Value) -> Vec<String> {
    let mut removed = Vec::new();
    prune_at(value, schema, true, "", &mut removed);
    removed
}

fn prune_at(value: &mut Value, schema: &Value, root: bool, path: &str, removed: &mut Vec<String>) {
    let preserve = schema.get("x-kubernetes-preserve-unknown-fields").and_then(Value::as_bool) == Some(true);
    let embedded = schema.get("x-kubernetes-embedded-resource").and_then(Value::as_bool) == Some(true);
    match value {
        Value::Object(map) => {
            let props = schema.get("properties").and_then(Value::as_object);
            let extra = schema.get("additionalProperties");
            if let Some(extra) = extra.filter(|e| e.is_object()) {
                for (key, child) in map.iter_mut() {
                    prune_at(child, extra, false, &join(path, key), removed);
                }
                return;
            }
            if extra.and_then(Value::as_bool) == Some(true) {
                return;
            }
            map.retain(|key, _| {
                let keep = preserve
                    || props.is_some_and(|p| p.contains_key(key))
                    || ((root || embedded) && matches!(key.as_str(), "apiVersion" | "kind" | "metadata"));
                if !keep {
                    removed.push(join(path, key));
                }
                keep
            });
            if let Some(props) = props {
                for (key, child) in map.iter_mut() {
                    // A resource's metadata is `ObjectMeta` whatever its schema says
                    // (kubebuilder writes `metadata: {type: object}` into every CRD).
                    if (root || embedded) && key == "metadata" {
                        continue;
                    }
                    if let Some(prop) = props.get(key) {
                        prune_at(child, prop, false, &join(path, key), removed);
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (i, item) in items.iter_mut().enumerate() {
                    prune_at(item, item_schema, false, &format!("{path}[{i}]"), removed);
                }
            }
        }
        _ => {}
    }
}

/// Checks a custom resource against its schema. `metadata`, `apiVersion` and `kind` at the
/// root are checked elsewhere.
pub(crate) fn validate(obj: &Value, schema: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let Some(map) = obj.as_object() else {
        causes.push(Cause::new("FieldValueTypeInvalid", "", "must be an object"));
        return causes;
    };
    let mut body = Map::new();
    for (k, v) in map {
        if !matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
            body.insert(k.clone(), v.clone());
        }
    }
    let mut root_schema = schema.clone();
    if let Some(req) = root_schema.get_mut("required").and_then(Value::as_array_mut) {
        req.retain(|r| !matches!(r.as_str(), Some("apiVersion" | "kind" | "metadata")));
    }
    if let Some(props) = root_schema.get_mut("properties").and_then(Value::as_object_mut) {
        props.remove("metadata");
    }
    check(&Value::Object(body), &root_schema, "", &mut causes);
    causes
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() { key.to_string() } else { format!("{path}.{key}") }
}

/// How Go prints a value in `Invalid value: ...`.
fn show(value: &Value) -> String {
    match value {
        Value::String(s) => format!("{s:?}"),
        Value::Object(_) => "\"object\"".to_string(),
        Value::Array(_) => "\"array\"".to_string(),
        Value::Null => "\"null\"".to_string(),
        other => other.to_string(),
    }
}

/// A `set` list holds each value once and a `map` list each key once (the real server's
/// list-type validation); a later repeat is a `Duplicate value` naming the item.
fn check_list_duplicates(items: &[Value], schema: &Value, path: &str, causes: &mut Vec<Cause>) {
    let keys: Vec<&str> = match schema.get("x-kubernetes-list-type").and_then(Value::as_str) {
        Some("set") => Vec::new(),
        Some("map") => schema
            .get("x-kubernetes-list-map-keys")
            .and_then(Value::as_array)
            .map(|k| k.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default(),
        _ => return,
    };
    let mut seen: Vec<Value> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let identity = if keys.is_empty() {
            item.clone()
        } else {
            Value::Object(keys.iter().filter_map(|k| Some(((*k).to_string(), item.get(*k)?.clone()))).collect())
        };
        if seen.contains(&identity) {
            let shown = match &identity {
                Value::Object(fields) => {
                    let parts: Vec<String> = fields.iter().map(|(k, v)| format!("{k:?}:{}", show(v))).collect();
                    format!("map[string]interface {{}}{{{}}}", parts.join(", "))
                }
                other => show(other),
            };
            causes.push(Cause::new("FieldValueDuplicate", format!("{path}[{i}]"), format!("Duplicate value: {shown}")));
        } else {
            seen.push(identity);
        }
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn type_matches(value: &Value, want: &str) -> bool {
    match (want, value) {
        ("object", Value::Object(_))
        | ("array", Value::Array(_))
        | ("string", Value::String(_))
        | ("boolean", Value::Bool(_))
        | ("number", Value::Number(_)) => true,
        ("integer", Value::Number(n)) => n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0),
        _ => false,
    }
}

#[allow(clippy::too_many_lines)] // one arm per schema keyword
fn check(value: &Value, schema: &Value, path: &str, causes: &mut Vec<Cause>) {
    let int_or_string = schema.get("x-kubernetes-int-or-string").and_then(Value::as_bool) == Some(true);
    if value.is_null() {
        let nullable = schema.get("nullable").and_then(Value::as_bool) == Some(true);
        if !nullable && schema.get("type").is_some() {
            let want = schema.get("type").and_then(Value::as_str).unwrap_or("object");
            causes.push(Cause::new(
                "FieldValueTypeInvalid",
                path,
                format!("Invalid value: \"null\": {path} in body must be of type {want}: \"null\""),
            ));
        }
        return;
    }
    if int_or_string {
        if !(value.is_string() || type_matches(value, "integer")) {
            // The real server checks an int-or-string as the types `integer,string`.
            let actual = type_name(value);
            causes.push(Cause::new(
                "FieldValueTypeInvalid",
                path,
                format!("Invalid value: \"{actual}\": {path} in body must be of type integer,string: \"{actual}\""),
            ));
            return;
        }
    } else if let Some(want) = schema.get("type").and_then(Value::as_str)
        && !type_matches(value, want)
    {
        let actual = type_name(value);
        causes.push(Cause::new(
            "FieldValueTypeInvalid",
            path,
            format!("Invalid value: \"{actual}\": {path} in body must be of type {want}: \"{actual}\""),
        ));
        return;
    }

    if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
        && !allowed.contains(value)
    {
        let listed: Vec<String> = allowed.iter().map(show).collect();
        causes.push(Cause::new(
            "FieldValueNotSupported",
            path,
            format!("Unsupported value: {}: supported values: {}", show(value), listed.join(", ")),
        ));
    }

    check_combinators(value, schema, path, causes);

    match value {
        Value::Number(n) => check_number(n.as_f64().unwrap_or_default(), value, schema, path, causes),
        Value::String(s) => check_string(s, value, schema, path, causes),
        Value::Array(items) => {
            let len = items.len() as u64;
            if let Some(max) = schema.get("maxItems").and_then(Value::as_u64)
                && len > max
            {
                causes.push(Cause::new(
                    "FieldValueTooMany",
                    path,
                    format!("Too many: {len}: must have at most {max} items"),
                ));
            }
            if let Some(min) = schema.get("minItems").and_then(Value::as_u64)
                && len < min
            {
                causes.push(Cause::new(
                    "FieldValueInvalid",
                    path,
                    format!("Invalid value: \"array\": {path} in body should have at least {min} items"),
                ));
            }
            if let Some(item_schema) = schema.get("items") {
                for (i, item) in items.iter().enumerate() {
                    check(item, item_schema, &format!("{path}[{i}]"), causes);
                }
            }
            check_list_duplicates(items, schema, path, causes);
        }
        Value::Object(map) => {
            for req in schema.get("required").and_then(Value::as_array).into_iter().flatten() {
                if let Some(req) = req.as_str()
                    && !map.contains_key(req)
                {
                    causes.push(Cause::new("FieldValueRequired", join(path, req), "Required value"));
                }
            }
            let count = map.len() as u64;
            if let Some(max) = schema.get("maxProperties").and_then(Value::as_u64)
                && count > max
            {
                causes.push(Cause::new(
                    "FieldValueTooMany",
                    path,
                    format!("Too many: {count}: must have at most {max} items"),
                ));
            }
            if let Some(min) = schema.get("minProperties").and_then(Value::as_u64)
                && count < min
            {
                causes.push(Cause::new(
                    "FieldValueInvalid",
                    path,
                    format!("Invalid value: \"object\": {path} in body should have at least {min} properties"),
                ));
            }
            let props = schema.get("properties").and_then(Value::as_object);
            let extra = schema.get("additionalProperties").filter(|e| e.is_object());
            for (key, child) in map {
                let child_path = join(path, key);
                if let Some(prop) = props.and_then(|p| p.get(key)) {
                    check(child, prop, &child_path, causes);
                } else if let Some(extra) = extra {
                    check(child, extra, &child_path, causes);
                }
            }
        }
        _ => {}
    }
}

/// `allOf`, `anyOf`, `oneOf` and `not`, which structural schemas allow for validation.
fn check_combinators(value: &Value, schema: &Value, path: &str, causes: &mut Vec<Cause>) {
    let passes = |s: &Value| {
        let mut inner = Vec::new();
        check(value, s, path, &mut inner);
        inner.is_empty()
    };
    let shown = show(value);
    if let Some(all) = schema.get("allOf").and_then(Value::as_array) {
        for s in all {
            check(value, s, path, causes);
        }
    }
    if let Some(any) = schema.get("anyOf").and_then(Value::as_array)
        && !any.iter().any(passes)
    {
        causes.push(Cause::new(
            "FieldValueInvalid",
            path,
            format!("Invalid value: {shown}: {path} in body must validate at least one schema (anyOf)"),
        ));
    }
    if let Some(one) = schema.get("oneOf").and_then(Value::as_array)
        && one.iter().filter(|s| passes(s)).count() != 1
    {
        causes.push(Cause::new(
            "FieldValueInvalid",
            path,
            format!("Invalid value: {shown}: {path} in body must validate one and only one schema (oneOf)"),
        ));
    }
    if let Some(not) = schema.get("not")
        && passes(not)
    {
        causes.push(Cause::new(
            "FieldValueInvalid",
            path,
            format!("Invalid value: {shown}: {path} in body must not validate the schema (not)"),
        ));
    }
}

fn check_number(n: f64, value: &Value, schema: &Value, path: &str, causes: &mut Vec<Cause>) {
    let shown = show(value);
    if let Some(max) = schema.get("maximum").and_then(Value::as_f64) {
        let exclusive = schema.get("exclusiveMaximum").and_then(Value::as_bool) == Some(true);
        if n > max || (exclusive && n >= max) {
            let rel = if exclusive { "less than" } else { "less than or equal to" };
            causes.push(Cause::new(
                "FieldValueInvalid",
                path,
                format!("Invalid value: {shown}: {path} in body should be {rel} {}", number_text(max)),
            ));
        }
    }
    if let Some(min) = schema.get("minimum").and_then(Value::as_f64) {
        let exclusive = schema.get("exclusiveMinimum").and_then(Value::as_bool) == Some(true);
        if n < min || (exclusive && n <= min) {
            let rel = if exclusive { "greater than" } else { "greater than or equal to" };
            causes.push(Cause::new(
                "FieldValueInvalid",
                path,
                format!("Invalid value: {shown}: {path} in body should be {rel} {}", number_text(min)),
            ));
        }
    }
    if let Some(step) = schema.get("multipleOf").and_then(Value::as_f64)
        && step > 0.0
        && (n / step).fract().abs() > 1e-9
    {
        causes.push(Cause::new(
            "FieldValueInvalid",
            path,
            format!("Invalid value: {shown}: {path} in body should be a multiple of {}", number_text(step)),
        ));
    }
}

/// The string formats of the real server's validation that CRDs use most; others pass.
fn format_matches(format: &str, s: &str) -> bool {
    use std::net::IpAddr;
    match format {
        "date-time" | "datetime" => s.parse::<jiff::Timestamp>().is_ok(),
        "date" => s.parse::<jiff::civil::Date>().is_ok(),
        "uuid" => uuid::Uuid::parse_str(s).is_ok(),
        "ipv4" => s.parse::<std::net::Ipv4Addr>().is_ok(),
        "ipv6" => s.parse::<std::net::Ipv6Addr>().is_ok(),
        "cidr" => {
            s.split_once('/').is_some_and(|(ip, bits)| ip.parse::<IpAddr>().is_ok() && bits.parse::<u8>().is_ok())
        }
        "byte" => {
            use base64::Engine as _;
            base64::engine::general_purpose::STANDARD.decode(s).is_ok()
        }
        _ => true,
    }
}

#[allow(clippy::cast_possible_truncation)] // a whole number below 1e15 converts exactly
fn number_text(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 { format!("{}", n as i64) } else { n.to_string() }
}

fn check_string(s: &str, value: &Value, schema: &Value, path: &str, causes: &mut Vec<Cause>) {
    let len = s.chars().count() as u64;
    if let Some(max) = schema.get("maxLength").and_then(Value::as_u64)
        && len > max
    {
        causes.push(Cause::new("FieldValueTooLong", path, format!("Too long: may not be more than {max} bytes")));
    }
    if let Some(min) = schema.get("minLength").and_then(Value::as_u64)
        && len < min
    {
        causes.push(Cause::new(
            "FieldValueInvalid",
            path,
            format!("Invalid value: {}: {path} in body should be at least {min} chars long", show(value)),
        ));
    }
    if let Some(format) = schema.get("format").and_then(Value::as_str)
        && !format_matches(format, s)
    {
        causes.push(Cause::new(
            "FieldValueInvalid",
            path,
            format!("Invalid value: {}: {path} in body must be of type {format}: {s:?}", show(value)),
        ));
    }
    if let Some(pattern) = schema.get("pattern").and_then(Value::as_str) {
        match regex::Regex::new(pattern) {
            Ok(re) if !re.is_match(s) => causes.push(Cause::new(
                "FieldValueInvalid",
                path,
                format!("Invalid value: {}: {path} in body should match '{pattern}'", show(value)),
            )),
            Ok(_) => {}
            Err(_) => causes.push(Cause::new(
                "FieldValueInvalid",
                path,
                format!("Invalid value: {}: the schema pattern '{pattern}' does not compile", show(value)),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn foo_schema() -> Value {
        json!({"type": "object", "properties": {"spec": {"type": "object", "required": ["deploymentName"], "properties": {
            "deploymentName": {"type": "string", "pattern": "^[a-z-]+$"},
            "replicas": {"type": "integer", "minimum": 1, "maximum": 10},
            "mode": {"type": "string", "enum": ["a", "b"]}}}}})
    }

    #[test]
    fn maximum_names_the_field_like_the_real_server() {
        let causes = validate(&json!({"spec": {"deploymentName": "x", "replicas": 11}}), &foo_schema());
        assert_eq!(causes.len(), 1);
        assert_eq!(causes[0].field, "spec.replicas");
        assert_eq!(causes[0].message, "Invalid value: 11: spec.replicas in body should be less than or equal to 10");
    }

    #[test]
    fn an_int_or_string_names_both_types_like_the_real_server() {
        let schema = json!({"type": "object", "properties": {"port": {"x-kubernetes-int-or-string": true}}});
        assert!(validate(&json!({"port": 80}), &schema).is_empty());
        assert!(validate(&json!({"port": "http"}), &schema).is_empty());
        let causes = validate(&json!({"port": true}), &schema);
        assert_eq!(
            causes[0].message,
            "Invalid value: \"boolean\": port in body must be of type integer,string: \"boolean\""
        );
    }

    #[test]
    fn type_required_enum_and_pattern() {
        let causes = validate(&json!({"spec": {"replicas": "three", "mode": "c"}}), &foo_schema());
        let fields: Vec<&str> = causes.iter().map(|c| c.field.as_str()).collect();
        assert!(fields.contains(&"spec.deploymentName"));
        assert!(fields.contains(&"spec.replicas"));
        assert!(fields.contains(&"spec.mode"));
        let causes = validate(&json!({"spec": {"deploymentName": "X_1"}}), &foo_schema());
        assert_eq!(causes[0].message, "Invalid value: \"X_1\": spec.deploymentName in body should match '^[a-z-]+$'");
    }

    #[test]
    fn common_string_formats_are_checked() {
        let schema = json!({"type": "object", "properties": {"at": {"type": "string", "format": "date-time"}, "ip": {"type": "string", "format": "ipv4"}}});
        assert!(validate(&json!({"at": "2024-01-02T03:04:05Z", "ip": "10.0.0.1"}), &schema).is_empty());
        let bad = validate(&json!({"at": "yesterday", "ip": "10.0.0"}), &schema);
        assert_eq!(bad.len(), 2);
        assert_eq!(bad[0].message, "Invalid value: \"yesterday\": at in body must be of type date-time: \"yesterday\"");
    }

    #[test]
    fn combinators_are_checked() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
            "oneOf": [{"required": ["a"]}, {"required": ["b"]}]}}});
        assert!(validate(&json!({"spec": {"a": "x"}}), &schema).is_empty());
        let both = validate(&json!({"spec": {"a": "x", "b": "y"}}), &schema);
        assert_eq!(
            both[0].message,
            "Invalid value: \"object\": spec in body must validate one and only one schema (oneOf)"
        );
    }

    #[test]
    fn unknown_fields_are_pruned_and_defaults_filled() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "a": {"type": "integer", "default": 3},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}});
        let mut obj = json!({"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "n"}, "spec": {"b": 1, "free": {"z": 1}}, "other": 1});
        assert_eq!(prune(&mut obj, &schema), ["other", "spec.b"]);
        apply_defaults(&mut obj, &schema);
        assert_eq!(
            obj,
            json!({"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "n"}, "spec": {"a": 3, "free": {"z": 1}}})
        );
    }

    #[test]
    fn a_declared_metadata_keeps_the_object_meta() {
        let schema = json!({"type": "object", "properties": {"metadata": {"type": "object"}}});
        let mut obj = json!({"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "n", "labels": {"a": "b"}}});
        assert!(prune(&mut obj, &schema).is_empty());
        assert_eq!(obj["metadata"], json!({"name": "n", "labels": {"a": "b"}}));
    }

    #[test]
    fn a_null_that_is_not_nullable_is_defaulted_or_dropped() {
        let schema = json!({"type": "object", "properties": {
            "a": {"type": "integer", "default": 3}, "b": {"type": "object"},
            "c": {"type": "object", "nullable": true}}});
        let mut obj = json!({"a": null, "b": null, "c": null});
        apply_defaults(&mut obj, &schema);
        assert_eq!(obj, json!({"a": 3, "c": null}));
    }

    #[test]
    fn set_and_map_lists_refuse_duplicates() {
        let schema = json!({"type": "object", "properties": {
            "set": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "map": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "properties": {"name": {"type": "string"}, "v": {"type": "integer"}}}}}});
        let obj = json!({"set": ["a", "b", "a"], "map": [{"name": "x", "v": 1}, {"name": "x", "v": 2}]});
        let causes: Vec<(String, String)> = validate(&obj, &schema).into_iter().map(|c| (c.field, c.message)).collect();
        assert_eq!(
            causes,
            [
                ("set[2]".to_string(), "Duplicate value: \"a\"".to_string()),
                ("map[1]".to_string(), "Duplicate value: map[string]interface {}{\"name\":\"x\"}".to_string()),
            ]
        );
    }
}
