//! The `CustomResourceDefinition` kind: its checks and defaults, its `Established` status,
//! serving the resource it defines, and the cleanup of that resource's objects when it goes.

use std::sync::Arc;

use serde_json::{Value, json};

use super::validations::Rules;
use super::{DEFINITIONS, custom, str_at};
use crate::object;
use crate::printers::Columns;
use crate::status::Cause;
use crate::strategy::{Contents, Effect, Finish, Holds, Strategy};
use crate::webhook;

/// The strategy of `CustomResourceDefinitions`.
pub(crate) struct Definitions;

impl Strategy for Definitions {
    fn tracks_generation(&self) -> bool {
        true
    }

    fn returns_deleted(&self) -> bool {
        true
    }

    fn columns(&self) -> Columns {
        Columns::created_at()
    }

    fn defaults(&self, obj: &mut Value) {
        default_crd(obj);
    }

    fn validate(&self, obj: &Value) -> Vec<Cause> {
        validate(obj)
    }

    fn canonicalize(&self, obj: &mut Value) {
        set_established(obj);
    }

    /// A stored CRD serves its resource (in place of what it served before).
    fn after_write(&self, obj: &Value) -> Vec<Effect> {
        vec![Effect::Serve(Arc::new(custom::resource(obj)))]
    }

    /// While it keeps its cleanup finalizer, a deleted CRD holds its custom resources.
    fn contents(&self, obj: &Value) -> Option<Contents> {
        object::has_finalizer(obj, CLEANUP)
            .then(|| Contents { holds: Holds::Objects(served(obj)), then: Finish::LiftFinalizer(CLEANUP) })
    }

    /// A removed CRD takes its resource, and any objects left, with it.
    fn after_delete(&self, gone: &Value) -> Vec<Effect> {
        vec![Effect::Unserve(object::name(gone).to_string())]
    }
}

/// The group and plural of the resource `crd` defines.
pub(super) fn served(crd: &Value) -> (String, String) {
    (str_at(crd, &["spec", "group"]).to_string(), str_at(crd, &["spec", "names", "plural"]).to_string())
}

/// Whether `resource` is where CRDs are stored.
pub(super) fn is_definitions(group: &str, plural: &str) -> bool {
    (group, plural) == DEFINITIONS
}

/// Checks the parts of a CRD the server relies on; the causes of a 422 when something is wrong.
fn validate(crd: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let group = str_at(crd, &["spec", "group"]);
    let plural = str_at(crd, &["spec", "names", "plural"]);
    let kind = str_at(crd, &["spec", "names", "kind"]);
    let scope = str_at(crd, &["spec", "scope"]);
    if group.is_empty() {
        causes.push(Cause::new("FieldValueRequired", "spec.group", "Required value"));
    }
    if plural.is_empty() {
        causes.push(Cause::new("FieldValueRequired", "spec.names.plural", "Required value"));
    }
    if kind.is_empty() {
        causes.push(Cause::new("FieldValueRequired", "spec.names.kind", "Required value"));
    }
    if scope != "Namespaced" && scope != "Cluster" {
        causes.push(Cause::new(
            "FieldValueNotSupported",
            "spec.scope",
            format!("Unsupported value: {scope:?}: supported values: \"Cluster\", \"Namespaced\""),
        ));
    }
    let name = object::name(crd);
    if !group.is_empty() && !plural.is_empty() && name != format!("{plural}.{group}") {
        causes.push(Cause::new(
            "FieldValueInvalid",
            "metadata.name",
            format!("Invalid value: {name:?}: must be spec.names.plural+\".\"+spec.group"),
        ));
    }
    let versions = crd.pointer("/spec/versions").and_then(Value::as_array).cloned().unwrap_or_default();
    if versions.is_empty() {
        causes.push(Cause::new(
            "FieldValueInvalid",
            "spec.versions",
            "Invalid value: null: must have exactly one version marked as storage version",
        ));
    } else {
        let storage = versions.iter().filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true)).count();
        if storage != 1 {
            causes.push(Cause::new(
                "FieldValueInvalid",
                "spec.versions",
                format!(
                    "Invalid value: \"array\": must have exactly one version marked as storage version, found {storage}"
                ),
            ));
        }
    }
    for (i, version) in versions.iter().enumerate() {
        if let Some(schema) = version.pointer("/schema/openAPIV3Schema")
            && let Err(bad) = Rules::compile(schema, &format!("spec.versions[{i}].schema.openAPIV3Schema"))
        {
            causes.extend(bad);
        }
    }
    causes.extend(validate_conversion(crd));
    causes
}

/// `spec.conversion` (`ValidateCustomResourceConversion`), with the field paths of the internal
/// type upstream reports (`spec.conversion.webhookClientConfig`).
fn validate_conversion(crd: &Value) -> Vec<Cause> {
    let Some(conversion) = crd.pointer("/spec/conversion") else {
        return Vec::new();
    };
    let strategy = str_at(conversion, &["strategy"]);
    let webhook = conversion.get("webhook").filter(|w| !w.is_null());
    let client = webhook.and_then(|w| w.get("clientConfig")).filter(|c| !c.is_null());
    let versions = webhook.and_then(|w| w.get("conversionReviewVersions")).and_then(Value::as_array);
    let mut causes = Vec::new();
    match strategy {
        "None" => {
            if client.is_some() {
                causes.push(Cause::new(
                    "FieldValueForbidden",
                    "spec.conversion.webhookClientConfig",
                    "Forbidden: should not be set when strategy is not set to Webhook",
                ));
            }
            if versions.is_some() {
                causes.push(Cause::new(
                    "FieldValueForbidden",
                    "spec.conversion.conversionReviewVersions",
                    "Forbidden: should not be set when strategy is not set to Webhook",
                ));
            }
        }
        "Webhook" => {
            match client {
                None => causes.push(Cause::new(
                    "FieldValueRequired",
                    "spec.conversion.webhookClientConfig",
                    "Required value: required when strategy is set to Webhook",
                )),
                Some(client) => causes.extend(webhook::validate(client, "spec.conversion.webhookClientConfig")),
            }
            let versions: Vec<&str> = versions.into_iter().flatten().filter_map(Value::as_str).collect();
            if versions.is_empty() {
                causes.push(Cause::new(
                    "FieldValueRequired",
                    "spec.conversion.conversionReviewVersions",
                    "Required value: must specify one of v1, v1beta1",
                ));
            } else if !versions.iter().any(|v| matches!(*v, "v1" | "v1beta1")) {
                causes.push(Cause::new(
                    "FieldValueInvalid",
                    "spec.conversion.conversionReviewVersions",
                    format!("Invalid value: {}: must include at least one of v1, v1beta1", go_strings(&versions)),
                ));
            }
            if crd.pointer("/spec/preserveUnknownFields").and_then(Value::as_bool) == Some(true) {
                causes.push(Cause::new(
                    "FieldValueInvalid",
                    "spec.conversion.strategy",
                    "Invalid value: \"Webhook\": must be None if spec.preserveUnknownFields is true",
                ));
            }
        }
        "" => causes.push(Cause::new("FieldValueRequired", "spec.conversion.strategy", "Required value")),
        other => causes.push(Cause::new(
            "FieldValueNotSupported",
            "spec.conversion.strategy",
            format!("Unsupported value: {other:?}: supported values: \"None\", \"Webhook\""),
        )),
    }
    causes
}

/// A list of strings as Go's `%v` prints a `[]string` in a field error: `[]string{"a", "b"}`.
fn go_strings(items: &[&str]) -> String {
    let quoted: Vec<String> = items.iter().map(|i| format!("{i:?}")).collect();
    format!("[]string{{{}}}", quoted.join(", "))
}

/// Sets the status a real server reports for an accepted, established CRD.
fn set_established(crd: &mut Value) {
    let now = object::now();
    let names = crd.pointer("/spec/names").cloned().unwrap_or_else(|| json!({}));
    let mut accepted = names.clone();
    if accepted.get("singular").is_none()
        && let Some(kind) = names.get("kind").and_then(Value::as_str)
    {
        accepted["singular"] = json!(kind.to_lowercase());
    }
    if accepted.get("listKind").is_none()
        && let Some(kind) = names.get("kind").and_then(Value::as_str)
    {
        accepted["listKind"] = json!(format!("{kind}List"));
    }
    let storage: Vec<String> = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .filter_map(|v| v.get("name").and_then(Value::as_str).map(String::from))
        .collect();
    let mut stored: Vec<String> = crd
        .pointer("/status/storedVersions")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|s| s.as_str().map(String::from)).collect())
        .unwrap_or_default();
    for s in storage {
        if !stored.contains(&s) {
            stored.push(s);
        }
    }
    let keep_time = |kind: &str| -> String {
        crd.pointer("/status/conditions")
            .and_then(Value::as_array)
            .and_then(|c| c.iter().find(|c| c.get("type").and_then(Value::as_str) == Some(kind)))
            .and_then(|c| c.get("lastTransitionTime").and_then(Value::as_str))
            .map_or_else(|| now.clone(), String::from)
    };
    let status = json!({
        "conditions": [
            { "type": "NamesAccepted", "status": "True", "lastTransitionTime": keep_time("NamesAccepted"),
              "reason": "NoConflicts", "message": "no conflicts found" },
            { "type": "Established", "status": "True", "lastTransitionTime": keep_time("Established"),
              "reason": "InitialNamesAccepted", "message": "the initial names have been accepted" },
        ],
        "acceptedNames": accepted,
        "storedVersions": stored,
    });
    crd["status"] = status;
}

/// The finalizer that holds a deleted CRD until its custom resources are gone.
const CLEANUP: &str = "customresourcecleanup.apiextensions.k8s.io";

/// Fills the defaults a real server adds to a CRD (`conversion`, `listKind`, `singular`, and
/// the cleanup finalizer).
fn default_crd(crd: &mut Value) {
    let mut finalizers = object::finalizers(crd);
    if !object::is_deleting(crd) && !finalizers.iter().any(|f| f == CLEANUP) {
        finalizers.push(CLEANUP.to_string());
        object::set_finalizers(crd, &finalizers);
    }
    if crd.pointer("/spec/conversion").is_none()
        && let Some(spec) = crd.get_mut("spec").and_then(Value::as_object_mut)
    {
        spec.insert("conversion".into(), json!({ "strategy": "None" }));
    }
    if let Some(names) = crd.pointer_mut("/spec/names").and_then(Value::as_object_mut) {
        let kind = names.get("kind").and_then(Value::as_str).unwrap_or_default().to_string();
        if !names.contains_key("singular") {
            names.insert("singular".into(), json!(kind.to_lowercase()));
        }
        if !names.contains_key("listKind") {
            names.insert("listKind".into(), json!(format!("{kind}List")));
        }
    }
}
