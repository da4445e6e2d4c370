//! Key rules of the validation of built-in kinds.

use serde_json::Value;

use super::discovery::ResourceType;
use super::selectors::LabelSelector;
use super::status::Cause;

/// A few rules of the real validation of built-in kinds, with its field paths and messages.
pub(crate) fn validate(rt: &ResourceType, obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    match (rt.group.as_str(), rt.plural.as_str()) {
        ("", "pods") => containers(obj.get("spec"), "spec", &mut causes),
        ("apps", "deployments" | "replicasets") => {
            match obj.pointer("/spec/selector") {
                None | Some(Value::Null) => {
                    causes.push(Cause::new("FieldValueRequired", "spec.selector", "Required value"));
                }
                Some(sel) => {
                    let labels = obj.pointer("/spec/template/metadata/labels").cloned().unwrap_or_default();
                    let pairs: Vec<(&str, &str)> = labels
                        .as_object()
                        .map(|m| m.iter().filter_map(|(k, v)| v.as_str().map(|v| (k.as_str(), v))).collect())
                        .unwrap_or_default();
                    let empty =
                        sel.get("matchLabels").is_none_or(|m| m.as_object().is_none_or(serde_json::Map::is_empty))
                            && sel.get("matchExpressions").is_none_or(|m| m.as_array().is_none_or(Vec::is_empty));
                    if empty {
                        causes.push(Cause::new(
                            "FieldValueInvalid",
                            "spec.selector",
                            format!("Invalid value: {sel}: empty selector is invalid for deployment"),
                        ));
                    } else if !LabelSelector::from_object(sel).is_ok_and(|s| s.matches(&pairs)) {
                        causes.push(Cause::new(
                            "FieldValueInvalid",
                            "spec.template.metadata.labels",
                            format!("Invalid value: {labels}: `selector` does not match template `labels`"),
                        ));
                    }
                }
            }
            if let Some(replicas) = obj.pointer("/spec/replicas").and_then(Value::as_i64)
                && replicas < 0
            {
                causes.push(Cause::new(
                    "FieldValueInvalid",
                    "spec.replicas",
                    format!("Invalid value: {replicas}: must be greater than or equal to 0"),
                ));
            }
            containers(obj.pointer("/spec/template/spec"), "spec.template.spec", &mut causes);
        }
        ("", "services") => {
            let kind = obj.pointer("/spec/type").and_then(Value::as_str).unwrap_or("ClusterIP");
            let ports = obj.pointer("/spec/ports").and_then(Value::as_array).map_or(0, Vec::len);
            let headless = obj.pointer("/spec/clusterIP").and_then(Value::as_str) == Some("None");
            if kind != "ExternalName" && ports == 0 && !headless {
                causes.push(Cause::new("FieldValueRequired", "spec.ports", "Required value"));
            }
            for (i, port) in obj.pointer("/spec/ports").and_then(Value::as_array).into_iter().flatten().enumerate() {
                let number = port.get("port").and_then(Value::as_i64).unwrap_or(0);
                if !(1..=65535).contains(&number) {
                    causes.push(Cause::new(
                        "FieldValueInvalid",
                        format!("spec.ports[{i}].port"),
                        format!("Invalid value: {number}: must be between 1 and 65535, inclusive"),
                    ));
                }
            }
        }
        _ => {}
    }
    causes
}

fn containers(spec: Option<&Value>, path: &str, causes: &mut Vec<Cause>) {
    let list = spec.and_then(|s| s.get("containers")).and_then(Value::as_array);
    match list {
        None => causes.push(Cause::new("FieldValueRequired", format!("{path}.containers"), "Required value")),
        Some(list) if list.is_empty() => {
            causes.push(Cause::new("FieldValueRequired", format!("{path}.containers"), "Required value"));
        }
        Some(list) => {
            for (i, c) in list.iter().enumerate() {
                for field in ["name", "image"] {
                    if c.get(field).and_then(Value::as_str).is_none_or(str::is_empty) {
                        causes.push(Cause::new(
                            "FieldValueRequired",
                            format!("{path}.containers[{i}].{field}"),
                            "Required value",
                        ));
                    }
                }
            }
        }
    }
}
