//! The resource a CRD defines: its type and versions (highest priority first), and the
//! strategy of each version, which its schema, status subresource and printer columns make.

use std::cmp::Ordering;
use std::sync::Arc;

use serde_json::{Value, json};

use super::conversion::Webhook;
use super::schema;
use super::validations::Rules;
use super::{str_at, strings_at};
use crate::encode;
use crate::object;
use crate::printers::{Columns, OBJECT_META, column, doc, go_print, name, name_column, since};
use crate::resource::{ResourceType, ScalePaths, Subresource, Version};
use crate::selectors::{Refusal, SelectableFields, field_value};
use crate::status::Cause;
use crate::strategy::{Resource, Strategy};

/// The resource `crd` defines, served under the CRD's name.
pub(super) fn resource(crd: &Value) -> Resource {
    let spec = crd.get("spec").cloned().unwrap_or_default();
    let namespaced = str_at(&spec, &["scope"]) != "Cluster";
    let mut versions: Vec<(Version, Box<dyn Strategy>)> = spec
        .get("versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|v| v.get("served").and_then(Value::as_bool) != Some(false))
        .map(|v| {
            let name = str_at(v, &["name"]);
            let kind = str_at(&spec, &["names", "kind"]);
            let served = |sub: &str, group: &str, version: &str, kind: &str| Subresource {
                name: sub.to_string(),
                group: group.to_string(),
                version: version.to_string(),
                kind: kind.to_string(),
                verbs: ["get", "patch", "update"].map(String::from).to_vec(),
            };
            let mut subresources = Vec::new();
            if v.pointer("/subresources/scale").is_some() {
                subresources.push(served("scale", "autoscaling", "v1", "Scale"));
            }
            if v.pointer("/subresources/status").is_some() {
                subresources.push(served("status", str_at(&spec, &["group"]), name, kind));
            }
            let version = Version {
                name: name.to_string(),
                schema: v.pointer("/schema/openAPIV3Schema").cloned(),
                definition: None,
                status: v.pointer("/subresources/status").is_some(),
                storage: v.get("storage").and_then(Value::as_bool) == Some(true),
                scale: v.pointer("/subresources/scale").map(|s| ScalePaths {
                    spec_replicas: str_at(s, &["specReplicasPath"]).to_string(),
                    status_replicas: str_at(s, &["statusReplicasPath"]).to_string(),
                    label_selector: s.get("labelSelectorPath").and_then(Value::as_str).map(String::from),
                }),
                subresources,
            };
            let mut selectable = vec!["metadata.name".to_string()];
            if namespaced {
                selectable.push("metadata.namespace".to_string());
            }
            for field in v.get("selectableFields").and_then(Value::as_array).into_iter().flatten() {
                selectable.push(str_at(field, &["jsonPath"]).trim_start_matches('.').to_string());
            }
            let strategy = CustomResource {
                rules: version.schema.as_ref().map(Rules::compile_lenient).unwrap_or_default(),
                schema: version.schema.clone(),
                columns: v.get("additionalPrinterColumns").and_then(Value::as_array).cloned().unwrap_or_default(),
                status: version.status,
                selectable,
            };
            (version, Box::new(strategy) as Box<dyn Strategy>)
        })
        .collect();
    versions.sort_by(|a, b| version_priority(&a.0.name, &b.0.name));
    let (versions, strategies): (Vec<Version>, Vec<Box<dyn Strategy>>) = versions.into_iter().unzip();
    let kind = str_at(&spec, &["names", "kind"]).to_string();
    let singular = str_at(&spec, &["names", "singular"]);
    let ty = ResourceType {
        group: str_at(&spec, &["group"]).to_string(),
        versions,
        singular: if singular.is_empty() { kind.to_lowercase() } else { singular.to_string() },
        kind,
        plural: str_at(&spec, &["names", "plural"]).to_string(),
        namespaced,
        // In the order the CRD discovery controller lists them.
        verbs: ["delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"]
            .map(String::from)
            .to_vec(),
        short_names: strings_at(&spec, &["names", "shortNames"]),
        categories: strings_at(&spec, &["names", "categories"]),
    };
    let resource = Resource::new(ty, strategies, Some(object::name(crd).to_string()));
    match Webhook::of(crd) {
        Some(webhook) => resource.with_converter(Arc::new(webhook)),
        None => resource,
    }
}

/// The schema errors that keep CEL rules from running (`hasBlockingErr`).
const BLOCKING: [&str; 5] =
    ["FieldValueNotSupported", "FieldValueRequired", "FieldValueTooLong", "FieldValueTooMany", "FieldValueTypeInvalid"];

/// One version of a custom resource, as its CRD defines it.
struct CustomResource {
    /// The `openAPIV3Schema`.
    schema: Option<Value>,
    /// Its `x-kubernetes-validations`.
    rules: Rules,
    /// `additionalPrinterColumns`.
    columns: Vec<Value>,
    /// Whether `status` is a subresource.
    status: bool,
    /// The field labels a field selector may name: name, namespace (of a namespaced
    /// resource) and the version's `selectableFields` (`crConverter.ConvertFieldLabel`).
    selectable: Vec<String>,
}

impl Strategy for CustomResource {
    fn tracks_generation(&self) -> bool {
        true
    }

    /// With a status subresource, a create may not set status.
    fn prepare_for_create(&self, obj: &mut Value) {
        if self.status
            && let Some(map) = obj.as_object_mut()
        {
            map.remove("status");
        }
    }

    fn prune(&self, obj: &mut Value) -> Vec<String> {
        self.schema.as_ref().map(|schema| schema::prune(obj, schema)).unwrap_or_default()
    }

    fn defaults(&self, obj: &mut Value) {
        if let Some(schema) = &self.schema {
            schema::apply_defaults(obj, schema);
        }
    }

    fn validate(&self, obj: &Value) -> Vec<Cause> {
        self.schema.as_ref().map(|schema| schema::validate(obj, schema)).unwrap_or_default()
    }

    fn selectable_fields(&self) -> SelectableFields {
        SelectableFields { labels: self.selectable.clone(), refusal: Refusal::Unsupported, value: field_value }
    }

    /// The CEL rules, unless the schema found an error that keeps them from running
    /// (`hasBlockingErr` of the real custom resource strategy): then one cause says so.
    fn validate_rules(&self, old: Option<&Value>, new: &Value) -> Vec<Cause> {
        if self.rules.is_empty() {
            return Vec::new();
        }
        if self.validate(new).iter().any(|c| BLOCKING.contains(&c.reason)) {
            return vec![Cause::new(
                "FieldValueInvalid",
                "<nil>",
                "Invalid value: \"null\": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
            )];
        }
        self.rules.validate(new, old)
    }

    /// The `additionalPrinterColumns` after the name (the CRD's table convertor), or an `Age`
    /// column of type `date` without them (`serveDefaultColumnsIfEmpty`).
    fn columns(&self) -> Columns {
        let printed: Vec<Value> = if self.columns.is_empty() {
            vec![json!({ "name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp",
                         "description": doc(OBJECT_META, "creationTimestamp") })]
        } else {
            self.columns.clone()
        };
        let mut defs = vec![name_column()];
        let mut paths = Vec::new();
        for c in &printed {
            let text = |f: &str| c.get(f).and_then(Value::as_str).unwrap_or_default().to_string();
            let path = text("jsonPath");
            let description = match text("description") {
                d if d.is_empty() => format!("Custom resource definition column (in JSONPath format): {path}"),
                d => d,
            };
            let kind = text("type");
            let mut def =
                column(&text("name"), &kind, &description, c.get("priority").and_then(Value::as_i64).unwrap_or(0));
            def["format"] = json!(text("format"));
            defs.push(def);
            paths.push((path, kind));
        }
        Columns {
            defs,
            cells: Box::new(move |o| {
                let mut cells = vec![name(o)];
                cells.extend(paths.iter().map(|(path, kind)| cell(o, path, kind)));
                cells
            }),
        }
    }
}

/// A printer column's cell (`tableconvertor.ConvertToTable`): the first value the column's
/// `JSONPath` finds, as the column's type prints it; `null` when it finds nothing, or a value
/// the type cannot show. A string column prints any value (`PrintResults`: scalars as Go
/// prints them, objects and arrays as JSON).
fn cell(obj: &Value, path: &str, kind: &str) -> Value {
    use jsonpath_rust::JsonPath as _;
    let path = path.trim().trim_start_matches('{').trim_end_matches('}');
    let found = obj.query(&format!("${path}")).ok().and_then(|found| found.into_iter().next().cloned());
    let Some(value) = found.filter(|v| !v.is_null()) else {
        return Value::Null;
    };
    match (kind, &value) {
        ("string", Value::Object(_) | Value::Array(_)) => json!(encode::compact(&value)),
        ("string", scalar) => json!(go_print(scalar)),
        // A float is truncated, as Go's int64 conversion does.
        #[allow(clippy::cast_possible_truncation)]
        ("integer", Value::Number(n)) => {
            n.as_i64().map_or_else(|| json!(n.as_f64().unwrap_or(0.0) as i64), |i| json!(i))
        }
        ("number", Value::Number(n)) => json!(n.as_f64()),
        ("boolean", Value::Bool(b)) => json!(b),
        ("date", Value::String(t)) => match t.parse::<jiff::Timestamp>() {
            Ok(_) => json!(since(t)),
            Err(_) => json!("<invalid>"),
        },
        _ => Value::Null,
    }
}

/// Kubernetes version ordering: GA before beta before alpha, higher numbers first.
fn version_priority(a: &str, b: &str) -> Ordering {
    fn parse(v: &str) -> Option<(u32, u32, u32)> {
        let rest = v.strip_prefix('v')?;
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        let major: u32 = digits.parse().ok()?;
        let tail = &rest[digits.len()..];
        if tail.is_empty() {
            return Some((3, major, 0));
        }
        let (stage, n) = if let Some(n) = tail.strip_prefix("beta") {
            (2, n)
        } else if let Some(n) = tail.strip_prefix("alpha") {
            (1, n)
        } else {
            return None;
        };
        Some((stage, major, n.parse().ok()?))
    }
    match (parse(a), parse(b)) {
        (Some((sa, ma, na)), Some((sb, mb, nb))) => (sb, mb, nb).cmp(&(sa, ma, na)),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => a.cmp(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printer_cells_take_the_first_match_as_their_type_prints_it() {
        let obj = json!({ "spec": { "list": ["a", "b"], "size": "3", "ratio": 1.5, "map": { "z": 1, "a": "<" } },
            "status": { "conditions": [{ "type": "Available", "status": "False" }, { "type": "Ready", "status": "True" }] } });
        assert_eq!(cell(&obj, r#".status.conditions[?(@.type=="Ready")].status"#, "string"), json!("True"));
        assert_eq!(cell(&obj, ".spec.list[*]", "string"), json!("a"));
        assert_eq!(cell(&obj, ".spec.size", "integer"), Value::Null, "a string is no integer");
        assert_eq!(cell(&obj, ".spec.ratio", "integer"), json!(1));
        assert_eq!(cell(&obj, ".spec.ratio", "string"), json!("1.5"));
        assert_eq!(cell(&obj, ".spec.map", "string"), json!("{\"a\":\"\\u003c\",\"z\":1}"));
        assert_eq!(cell(&obj, ".status.missing", "string"), Value::Null);
        assert_eq!(cell(&obj, ".spec.size", "date"), json!("<invalid>"));
    }

    #[test]
    fn versions_sort_like_kubernetes() {
        let mut v = vec!["v1alpha1", "v2", "v1beta2", "v1", "v1beta1", "foo"];
        v.sort_by(|a, b| version_priority(a, b));
        assert_eq!(v, ["v2", "v1", "v1beta2", "v1beta1", "v1alpha1", "foo"]);
    }
}
