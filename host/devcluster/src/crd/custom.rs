//! The resource a CRD defines: its type and versions (highest priority first), and the
//! strategy of each version, which its schema, status subresource and printer columns make.

use std::cmp::Ordering;
use std::sync::Arc;

use serde_json::{Value, json};

use super::conversion::Webhook;
use super::schema;
use super::validations::Rules;
use super::{str_at, strings_at};
use crate::object;
use crate::printers::{Columns, column, name, name_column, since};
use crate::resource::{ResourceType, ScalePaths, Version};
use crate::status::Cause;
use crate::strategy::{Resource, Strategy};

/// The resource `crd` defines, served under the CRD's name.
pub(super) fn resource(crd: &Value) -> Resource {
    let spec = crd.get("spec").cloned().unwrap_or_default();
    let mut versions: Vec<(Version, Box<dyn Strategy>)> = spec
        .get("versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|v| v.get("served").and_then(Value::as_bool) != Some(false))
        .map(|v| {
            let version = Version {
                name: str_at(v, &["name"]).to_string(),
                schema: v.pointer("/schema/openAPIV3Schema").cloned(),
                definition: None,
                status: v.pointer("/subresources/status").is_some(),
                storage: v.get("storage").and_then(Value::as_bool) == Some(true),
                scale: v.pointer("/subresources/scale").map(|s| ScalePaths {
                    spec_replicas: str_at(s, &["specReplicasPath"]).to_string(),
                    status_replicas: str_at(s, &["statusReplicasPath"]).to_string(),
                    label_selector: s.get("labelSelectorPath").and_then(Value::as_str).map(String::from),
                }),
            };
            let strategy = CustomResource {
                rules: version.schema.as_ref().map(Rules::compile_lenient).unwrap_or_default(),
                schema: version.schema.clone(),
                columns: v.get("additionalPrinterColumns").and_then(Value::as_array).cloned().unwrap_or_default(),
                status: version.status,
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
        namespaced: str_at(&spec, &["scope"]) != "Cluster",
        verbs: ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
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

    /// The `additionalPrinterColumns`, or name and age without them.
    fn columns(&self) -> Columns {
        if self.columns.is_empty() {
            return Columns::name_and_age();
        }
        let mut defs = vec![name_column()];
        let mut paths = Vec::new();
        for c in &self.columns {
            let text = |f: &str| c.get(f).and_then(Value::as_str).unwrap_or_default().to_string();
            let kind = c.get("type").and_then(Value::as_str).unwrap_or("string").to_string();
            let mut def = column(
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
                let mut cells = vec![name(o)];
                for (path, kind) in &paths {
                    cells.push(match (kind.as_str(), json_path(o, path)) {
                        ("date", Some(Value::String(t))) => json!(since(&t)),
                        (_, Some(v)) => v,
                        (_, None) => Value::Null,
                    });
                }
                cells
            }),
        }
    }
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
    fn versions_sort_like_kubernetes() {
        let mut v = vec!["v1alpha1", "v2", "v1beta2", "v1", "v1beta1", "foo"];
        v.sort_by(|a, b| version_priority(a, b));
        assert_eq!(v, ["v2", "v1", "v1beta2", "v1beta1", "v1alpha1", "foo"]);
    }
}
