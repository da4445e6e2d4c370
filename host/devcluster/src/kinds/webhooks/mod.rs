//! Admission webhooks (`admissionregistration.k8s.io/v1` `MutatingWebhookConfigurations` and
//! `ValidatingWebhookConfigurations`): the strategy of the two kinds (upstream's defaults and
//! checks), and the `MutatingAdmissionWebhook` and `ValidatingAdmissionWebhook` plugins that
//! call them (`dispatch`) with `AdmissionReview`s (`review`).

mod dispatch;
mod review;

use serde_json::{Value, json};

pub(crate) use self::dispatch::AdmissionWebhooks;
use super::matching::strings;
use crate::cel::Expression;
use crate::selectors::LabelSelector;
use crate::status::Cause;
use crate::strategy::Strategy;
use crate::webhook;

/// The strategy of `MutatingWebhookConfigurations` (`mutating`) and
/// `ValidatingWebhookConfigurations`.
pub(crate) struct Configurations {
    pub mutating: bool,
}

impl Strategy for Configurations {
    fn tracks_generation(&self) -> bool {
        true
    }

    /// `SetDefaults_ValidatingWebhook`, `SetDefaults_MutatingWebhook`, `SetDefaults_Rule` and
    /// `SetDefaults_ServiceReference` of admissionregistration/v1.
    fn defaults(&self, obj: &mut Value) {
        for hook in obj.get_mut("webhooks").and_then(Value::as_array_mut).into_iter().flatten() {
            let Some(map) = hook.as_object_mut() else {
                continue;
            };
            map.entry("failurePolicy").or_insert(json!("Fail"));
            map.entry("matchPolicy").or_insert(json!("Equivalent"));
            map.entry("namespaceSelector").or_insert(json!({}));
            map.entry("objectSelector").or_insert(json!({}));
            map.entry("timeoutSeconds").or_insert(json!(10));
            if self.mutating {
                map.entry("reinvocationPolicy").or_insert(json!("Never"));
            }
            for rule in map.get_mut("rules").and_then(Value::as_array_mut).into_iter().flatten() {
                if let Some(rule) = rule.as_object_mut() {
                    rule.entry("scope").or_insert(json!("*"));
                }
            }
            if let Some(service) =
                map.get_mut("clientConfig").and_then(|c| c.get_mut("service")).and_then(Value::as_object_mut)
            {
                service.entry("port").or_insert(json!(443));
            }
        }
    }

    fn validate(&self, obj: &Value) -> Vec<Cause> {
        let mut causes = Vec::new();
        let mut names: Vec<&str> = Vec::new();
        for (i, hook) in obj.get("webhooks").and_then(Value::as_array).into_iter().flatten().enumerate() {
            let path = format!("webhooks[{i}]");
            causes.extend(validate_webhook(hook, &path, self.mutating));
            let name = hook.get("name").and_then(Value::as_str).unwrap_or_default();
            if !name.is_empty() {
                if names.contains(&name) {
                    causes.push(Cause::new(
                        "FieldValueDuplicate",
                        format!("{path}.name"),
                        format!("Duplicate value: {name:?}"),
                    ));
                } else {
                    names.push(name);
                }
            }
        }
        causes
    }
}

/// Supported values in a `NotSupported` cause, as Go lists them.
fn supported(values: &[&str]) -> String {
    values.iter().map(|v| format!("{v:?}")).collect::<Vec<_>>().join(", ")
}

/// One webhook's checks (`validateMutatingWebhook`, `validateValidatingWebhook` and
/// `validateAdmissionReviewVersions`), as for a v1 configuration.
fn validate_webhook(hook: &Value, path: &str, mutating: bool) -> Vec<Cause> {
    let mut causes = Vec::new();
    let text = |f: &str| hook.get(f).and_then(Value::as_str);
    let mut one_of = |field: &str, allowed: &[&str]| {
        if let Some(value) = text(field)
            && !allowed.contains(&value)
        {
            causes.push(Cause::new(
                "FieldValueNotSupported",
                format!("{path}.{field}"),
                format!("Unsupported value: {value:?}: supported values: {}", supported(allowed)),
            ));
        }
    };
    one_of("failurePolicy", &["Fail", "Ignore"]);
    one_of("matchPolicy", &["Equivalent", "Exact"]);
    one_of("sideEffects", &["None", "NoneOnDryRun"]);
    if mutating {
        one_of("reinvocationPolicy", &["IfNeeded", "Never"]);
    }
    let name = text("name").unwrap_or_default();
    if name.is_empty() {
        causes.push(Cause::new("FieldValueRequired", format!("{path}.name"), "Required value"));
    } else if name.split('.').count() < 3 || name.split('.').any(str::is_empty) {
        causes.push(Cause::new(
            "FieldValueInvalid",
            format!("{path}.name"),
            format!("Invalid value: {name:?}: should be a domain with at least three segments separated by dots"),
        ));
    }
    if text("sideEffects").is_none() {
        causes.push(Cause::new(
            "FieldValueRequired",
            format!("{path}.sideEffects"),
            "Required value: must specify one of None, NoneOnDryRun",
        ));
    }
    if let Some(timeout) = hook.get("timeoutSeconds").and_then(Value::as_i64)
        && !(1..=30).contains(&timeout)
    {
        causes.push(Cause::new(
            "FieldValueInvalid",
            format!("{path}.timeoutSeconds"),
            format!("Invalid value: {timeout}: the timeout value must be between 1 and 30 seconds"),
        ));
    }
    for selector in ["namespaceSelector", "objectSelector"] {
        if let Some(sel) = hook.get(selector).filter(|s| !s.is_null())
            && let Err(e) = LabelSelector::from_object(sel)
        {
            causes.push(Cause::new("FieldValueInvalid", format!("{path}.{selector}"), format!("Invalid value: {e}")));
        }
    }
    for (i, rule) in hook.get("rules").and_then(Value::as_array).into_iter().flatten().enumerate() {
        causes.extend(validate_rule(rule, &format!("{path}.rules[{i}]")));
    }
    match hook.get("clientConfig") {
        Some(config) => causes.extend(webhook::validate(config, &format!("{path}.clientConfig"))),
        None => causes.push(Cause::new(
            "FieldValueRequired",
            format!("{path}.clientConfig"),
            "Required value: exactly one of url or service is required",
        )),
    }
    causes.extend(validate_review_versions(hook, path));
    causes.extend(validate_match_conditions(hook, path));
    causes
}

fn validate_rule(rule: &Value, path: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    let operations = strings(rule, "/operations");
    if operations.is_empty() {
        causes.push(Cause::new("FieldValueRequired", format!("{path}.operations"), "Required value"));
    }
    for (i, op) in operations.iter().enumerate() {
        let allowed = ["*", "CONNECT", "CREATE", "DELETE", "UPDATE"];
        if !allowed.contains(&op.as_str()) {
            causes.push(Cause::new(
                "FieldValueNotSupported",
                format!("{path}.operations[{i}]"),
                format!("Unsupported value: {op:?}: supported values: {}", supported(&allowed)),
            ));
        }
    }
    for field in ["apiGroups", "apiVersions", "resources"] {
        if strings(rule, &format!("/{field}")).is_empty() {
            causes.push(Cause::new("FieldValueRequired", format!("{path}.{field}"), "Required value"));
        }
    }
    if let Some(scope) = rule.get("scope").and_then(Value::as_str)
        && !["*", "Cluster", "Namespaced"].contains(&scope)
    {
        causes.push(Cause::new(
            "FieldValueNotSupported",
            format!("{path}.scope"),
            format!("Unsupported value: {scope:?}: supported values: \"*\", \"Cluster\", \"Namespaced\""),
        ));
    }
    causes
}

fn validate_review_versions(hook: &Value, path: &str) -> Vec<Cause> {
    let versions = strings(hook, "/admissionReviewVersions");
    let field = format!("{path}.admissionReviewVersions");
    if versions.is_empty() {
        return vec![Cause::new("FieldValueRequired", field, "Required value: must specify one of v1, v1beta1")];
    }
    if versions.iter().any(|v| v == "v1" || v == "v1beta1") {
        return Vec::new();
    }
    let listed: Vec<String> = versions.iter().map(|v| format!("{v:?}")).collect();
    vec![Cause::new(
        "FieldValueInvalid",
        field,
        format!("Invalid value: []string{{{}}}: must include at least one of v1, v1beta1", listed.join(", ")),
    )]
}

/// `matchConditions`: at most 64, names unique, expressions that compile.
fn validate_match_conditions(hook: &Value, path: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    let conditions = hook.get("matchConditions").and_then(Value::as_array).cloned().unwrap_or_default();
    if conditions.len() > 64 {
        causes.push(Cause::new(
            "FieldValueTooMany",
            format!("{path}.matchConditions"),
            format!("Too many: {}: must have at most 64 items", conditions.len()),
        ));
    }
    let mut names: Vec<String> = Vec::new();
    for (i, condition) in conditions.iter().enumerate() {
        let at = format!("{path}.matchConditions[{i}]");
        let name = condition.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
        if name.is_empty() {
            causes.push(Cause::new("FieldValueRequired", format!("{at}.name"), "Required value"));
        } else if names.contains(&name) {
            causes.push(Cause::new("FieldValueDuplicate", format!("{at}.name"), format!("Duplicate value: {name:?}")));
        } else {
            names.push(name);
        }
        let expression = condition.get("expression").and_then(Value::as_str).unwrap_or_default();
        if expression.is_empty() {
            causes.push(Cause::new("FieldValueRequired", format!("{at}.expression"), "Required value"));
        } else if let Err(e) = Expression::compile(expression) {
            causes.push(Cause::new(
                "FieldValueInvalid",
                format!("{at}.expression"),
                format!("Invalid value: {expression:?}: compilation failed: {e}"),
            ));
        }
    }
    causes
}
