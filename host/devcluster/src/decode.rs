//! Reading a built-in object as the real server does when it decodes JSON into the object's Go
//! type, driven by the kind's upstream definition: fields the type lacks are dropped (and
//! reported, for `fieldValidation`), `null` reads as unset, timestamps are truncated as
//! `metav1.Time` keeps them, and a value of the wrong JSON type is refused with the Go
//! decoder's message, which names the field.

use base64::Engine as _;
use serde_json::{Map, Value};

use super::builtins;

/// The object as its type keeps it, and the paths of the fields the type does not have.
pub(crate) struct Decoded {
    pub object: Value,
    pub unknown: Vec<String>,
}

/// Decodes `obj` of the built-in `kind` whose upstream definition is `definition`.
pub(crate) fn decode(kind: &str, definition: &Value, obj: &Value) -> Result<Decoded, String> {
    let mut decoder = Decoder { unknown: Vec::new() };
    let object = decoder.value(obj, definition, &mut Vec::new(), kind)?.unwrap_or(Value::Null);
    Ok(Decoded { object, unknown: decoder.unknown })
}

struct Decoder {
    unknown: Vec<String>,
}

/// The Go type name of a definition (`DeploymentSpec` for `io.k8s.api.apps.v1.DeploymentSpec`).
fn type_name(schema: &Value) -> &str {
    builtins::reference(schema).and_then(|r| r.rsplit('.').next()).unwrap_or_default()
}

/// How Go's `encoding/json` names the kind of a JSON value in its errors.
fn json_kind(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(_) => "bool".into(),
        Value::Number(n) if n.is_f64() => format!("number {n}"),
        Value::Number(_) => "number".into(),
        Value::String(_) => "string".into(),
        Value::Array(_) => "array".into(),
        Value::Object(_) => "object".into(),
    }
}

/// The Go type a schema decodes into, as `encoding/json` spells it in errors (`int32`,
/// `[]v1.Container`, `map[string]string`, `v1.PodSpec`).
fn go_type(schema: &Value) -> String {
    if let Some(name) = builtins::reference(schema) {
        let mut parts = name.rsplit('.');
        let kind = parts.next().unwrap_or_default();
        return match name {
            "io.k8s.apimachinery.pkg.util.intstr.IntOrString" => "intstr.IntOrString".into(),
            "io.k8s.apimachinery.pkg.api.resource.Quantity" => "resource.Quantity".into(),
            _ => format!("{}.{kind}", parts.next().unwrap_or_default()),
        };
    }
    match (schema.get("type").and_then(Value::as_str), schema.get("format").and_then(Value::as_str)) {
        (Some("integer"), Some(format)) => format.to_string(),
        (Some("integer"), None) => "int".into(),
        (Some("number"), _) => "float64".into(),
        (Some("boolean"), _) => "bool".into(),
        (Some("string"), _) => "string".into(),
        (Some("array"), _) => format!("[]{}", schema.get("items").map(go_type).unwrap_or_default()),
        (Some("object"), _) => match schema.get("additionalProperties") {
            Some(values) => format!("map[string]{}", go_type(values)),
            None => "struct".into(),
        },
        _ => "interface {}".into(),
    }
}

impl Decoder {
    /// The decoded value; `None` when it reads as unset.
    fn value(
        &mut self,
        value: &Value,
        schema: &Value,
        path: &mut Vec<String>,
        struct_name: &str,
    ) -> Result<Option<Value>, String> {
        if value.is_null() {
            return Ok(None);
        }
        let mismatch = || {
            Err(format!(
                "json: cannot unmarshal {} into Go struct field {struct_name}.{} of type {}",
                json_kind(value),
                path.join("."),
                go_type(schema)
            ))
        };
        match builtins::reference(schema) {
            Some("io.k8s.apimachinery.pkg.api.resource.Quantity") => {
                return match value {
                    Value::String(_) => Ok(Some(value.clone())),
                    // A number is a quantity too; the real server keeps it in its string form.
                    Value::Number(n) => Ok(Some(Value::String(n.to_string()))),
                    _ => mismatch(),
                };
            }
            Some("io.k8s.apimachinery.pkg.apis.meta.v1.Time") => {
                let Some(text) = value.as_str() else {
                    return mismatch();
                };
                let time: jiff::Timestamp = text.parse().map_err(|_| {
                    format!("parsing time {text:?} as \"2006-01-02T15:04:05Z07:00\": cannot parse {text:?}")
                })?;
                // `metav1.Time` keeps whole seconds.
                return Ok(Some(Value::String(time.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())));
            }
            _ => {}
        }
        let resolved = builtins::resolve(schema);
        let inner_struct = match builtins::reference(schema) {
            Some(_) => type_name(schema),
            None => struct_name,
        };
        let format = resolved.get("format").and_then(Value::as_str);
        match resolved.get("type").and_then(Value::as_str) {
            Some("string") if format == Some("int-or-string") => match value {
                Value::String(_) => Ok(Some(value.clone())),
                Value::Number(n) if n.is_i64() => Ok(Some(value.clone())),
                _ => mismatch(),
            },
            Some("string") if format == Some("byte") => match value {
                // `[]byte` reads base64 (standard alphabet, padded), as Go's decoder does.
                Value::String(text) => match base64::engine::general_purpose::STANDARD.decode(text) {
                    Ok(_) => Ok(Some(value.clone())),
                    Err(e) => Err(format!("illegal base64 data at {}: {e}", path.join("."))),
                },
                _ => mismatch(),
            },
            Some("string") => {
                if value.is_string() {
                    Ok(Some(value.clone()))
                } else {
                    mismatch()
                }
            }
            Some("boolean") => {
                if value.is_boolean() {
                    Ok(Some(value.clone()))
                } else {
                    mismatch()
                }
            }
            Some("number") => {
                if value.is_number() {
                    Ok(Some(value.clone()))
                } else {
                    mismatch()
                }
            }
            Some("integer") => {
                let fits = match format {
                    Some("int32") => value.as_i64().is_some_and(|n| i32::try_from(n).is_ok()),
                    _ => value.is_i64() || value.is_u64(),
                };
                if fits { Ok(Some(value.clone())) } else { mismatch() }
            }
            Some("array") => {
                let Some(items) = value.as_array() else {
                    return mismatch();
                };
                let item_schema = resolved.get("items").unwrap_or(&Value::Null);
                let mut out = Vec::with_capacity(items.len());
                for item in items {
                    // A null item decodes to the item type's zero value, which the server keeps.
                    out.push(self.value(item, item_schema, path, inner_struct)?.unwrap_or(Value::Null));
                }
                Ok(Some(Value::Array(out)))
            }
            Some("object") => {
                let Some(map) = value.as_object() else {
                    return mismatch();
                };
                self.object(map, resolved, path, inner_struct).map(|m| Some(Value::Object(m)))
            }
            // No type: anything goes (`RawExtension`, `JSON`, preserved unknown fields).
            _ => Ok(Some(value.clone())),
        }
    }

    fn object(
        &mut self,
        map: &Map<String, Value>,
        schema: &Value,
        path: &mut Vec<String>,
        struct_name: &str,
    ) -> Result<Map<String, Value>, String> {
        let properties = schema.get("properties").and_then(Value::as_object);
        let values = schema.get("additionalProperties").filter(|a| a.is_object());
        if properties.is_none() && values.is_none() {
            return Ok(map.clone());
        }
        let mut out = Map::new();
        for (key, value) in map {
            let Some(field) = properties.and_then(|p| p.get(key)).or(values) else {
                path.push(key.clone());
                self.unknown.push(path.join("."));
                path.pop();
                continue;
            };
            path.push(key.clone());
            let decoded = self.value(value, field, path, struct_name);
            path.pop();
            if let Some(decoded) = decoded? {
                out.insert(key.clone(), decoded);
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deployment(obj: &Value) -> Result<Decoded, String> {
        decode("Deployment", builtins::definition("apps", "v1", "Deployment").unwrap(), obj)
    }

    fn pod(obj: &Value) -> Result<Decoded, String> {
        decode("Pod", builtins::definition("", "v1", "Pod").unwrap(), obj)
    }

    #[test]
    fn a_wrong_type_is_refused_with_the_go_decoders_message() {
        let obj = json!({ "spec": { "replicas": "three" } });
        let err = deployment(&obj).err().unwrap();
        assert_eq!(
            err,
            "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32"
        );
        let obj = json!({ "spec": { "template": { "spec": { "containers": [{ "name": "a", "ports": [{ "containerPort": "80" }] }] } } } });
        let err = deployment(&obj).err().unwrap();
        assert_eq!(
            err,
            "json: cannot unmarshal string into Go struct field ContainerPort.spec.template.spec.containers.ports.containerPort of type int32"
        );
    }

    #[test]
    fn unknown_fields_are_dropped_and_reported_nulls_read_as_unset() {
        let obj = json!({
            "metadata": { "name": "d", "labels": { "a": "b" }, "colour": "red" },
            "spec": { "replicas": 2, "paused": null, "strategy": { "type": "Recreate", "speed": 9 } },
        });
        let decoded = deployment(&obj).unwrap();
        assert_eq!(decoded.unknown, ["metadata.colour", "spec.strategy.speed"]);
        assert_eq!(
            decoded.object,
            json!({ "metadata": { "name": "d", "labels": { "a": "b" } }, "spec": { "replicas": 2, "strategy": { "type": "Recreate" } } })
        );
    }

    #[test]
    fn quantities_int_or_strings_and_times_read_as_the_go_types_keep_them() {
        let obj = json!({
            "metadata": { "creationTimestamp": "2025-01-02T03:04:05.678Z" },
            "spec": { "containers": [{ "name": "a", "resources": { "limits": { "cpu": 2, "memory": "1Gi" } },
                "livenessProbe": { "httpGet": { "port": "http" } }, "readinessProbe": { "httpGet": { "port": 8080 } } }] },
        });
        let decoded = pod(&obj).unwrap();
        assert_eq!(decoded.object["metadata"]["creationTimestamp"], "2025-01-02T03:04:05Z");
        assert_eq!(
            decoded.object["spec"]["containers"][0]["resources"]["limits"],
            json!({ "cpu": "2", "memory": "1Gi" })
        );
        assert_eq!(decoded.object["spec"]["containers"][0]["livenessProbe"]["httpGet"]["port"], "http");
        assert_eq!(decoded.object["spec"]["containers"][0]["readinessProbe"]["httpGet"]["port"], 8080);
        let bad =
            json!({ "spec": { "containers": [{ "name": "a", "livenessProbe": { "httpGet": { "port": true } } }] } });
        assert_eq!(
            pod(&bad).err().unwrap(),
            "json: cannot unmarshal bool into Go struct field HTTPGetAction.spec.containers.livenessProbe.httpGet.port of type intstr.IntOrString"
        );
    }
}
