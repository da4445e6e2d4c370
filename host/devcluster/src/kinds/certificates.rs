//! `certificates.k8s.io/v1`: `CertificateSigningRequests`, with their `approval` subresource
//! (`kubectl certificate approve`). Issuing a certificate for an approved request is a
//! signer's work (kube-controller-manager's), which does not run here.

use serde_json::{Value, json};

use crate::object;
use crate::printers::{Columns, age, age_column, column, doc, human_duration, name, name_column, text};
use crate::selectors::{Refusal, SelectableFields, field_value};
use crate::status::{Cause, go_quote};
use crate::strategy::Strategy;

pub(crate) struct SigningRequests;

impl Strategy for SigningRequests {
    /// `certificates/v1`'s field label conversion.
    fn selectable_fields(&self) -> SelectableFields {
        SelectableFields::new(&["metadata.name", "spec.signerName"], Refusal::Unsupported, field_value)
    }

    /// A request starts with no status: nobody has decided on it yet.
    fn prepare_for_create(&self, obj: &mut Value) {
        obj["status"] = json!({});
    }

    /// Conditions that come without their times get the server's (`approval`'s
    /// `populateConditionTimestamps`).
    fn defaults(&self, obj: &mut Value) {
        stamp_conditions(obj);
    }

    fn subresources(&self) -> &'static [&'static str] {
        &["approval"]
    }

    /// An approval writes the conditions, nothing else (`csrApprovalStrategy`).
    fn subresource_fields(&self, subresource: &str) -> Option<&'static [&'static str]> {
        (subresource == "approval").then_some(&["/status/conditions"][..])
    }

    /// `ValidateCertificateSigningRequestApprovalUpdate`: the conditions' rules, and no
    /// decision taken back.
    fn validate_subresource(&self, _subresource: &str, old: &Value, new: &Value) -> Vec<Cause> {
        approval(old, new)
    }

    fn columns(&self) -> Columns {
        let spec = |f: &str| doc("io.k8s.api.certificates.v1.CertificateSigningRequestSpec", f);
        Columns {
            defs: vec![
                name_column(),
                age_column(),
                column("SignerName", "string", &spec("signerName"), 0),
                column("Requestor", "string", "Name of the user that submitted the request", 0),
                column("RequestedDuration", "string", &spec("expirationSeconds"), 0),
                column("Condition", "string", "Current approval state of the request", 0),
            ],
            cells: Box::new(|o| {
                let signer = match text(o, "/spec/signerName") {
                    "" => "<none>",
                    s => s,
                };
                let duration = o
                    .pointer("/spec/expirationSeconds")
                    .and_then(Value::as_i64)
                    .map_or_else(|| "<none>".to_string(), human_duration);
                vec![
                    name(o),
                    age(o),
                    json!(signer),
                    json!(text(o, "/spec/username")),
                    json!(duration),
                    json!(condition(o)),
                ]
            }),
        }
    }
}

/// `extractCSRStatus`: denied over approved over pending, then failed and issued.
fn condition(csr: &Value) -> String {
    let has = |kind: &str| {
        csr.pointer("/status/conditions")
            .and_then(Value::as_array)
            .is_some_and(|c| c.iter().any(|c| text(c, "/type") == kind))
    };
    let mut status = if has("Denied") {
        "Denied".to_string()
    } else if has("Approved") {
        "Approved".to_string()
    } else {
        "Pending".to_string()
    };
    if has("Failed") {
        status.push_str(",Failed");
    }
    if !text(csr, "/status/certificate").is_empty() {
        status.push_str(",Issued");
    }
    status
}

/// The checks of an update of a request's approval.
fn approval(old: &Value, new: &Value) -> Vec<Cause> {
    let conditions =
        |csr: &Value| csr.pointer("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default();
    let (before, after) = (conditions(old), conditions(new));
    let mut causes = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for (i, c) in after.iter().enumerate() {
        let path = format!("status.conditions[{i}]");
        let kind = text(c, "/type");
        let status = text(c, "/status");
        if kind.is_empty() {
            causes.push(Cause::new("FieldValueRequired", format!("{path}.type"), "Required value"));
        } else if seen.contains(&kind) {
            causes.push(Cause::new(
                "FieldValueDuplicate",
                format!("{path}.type"),
                format!("Duplicate value: {}", go_quote(kind)),
            ));
        }
        let supported: &[&str] =
            if matches!(kind, "Approved" | "Denied") { &["True"] } else { &["True", "False", "Unknown"] };
        if status.is_empty() {
            causes.push(Cause::new("FieldValueRequired", format!("{path}.status"), "Required value"));
        } else if !supported.contains(&status) {
            let listed: Vec<String> = supported.iter().map(|s| go_quote(s)).collect();
            causes.push(Cause::new(
                "FieldValueNotSupported",
                format!("{path}.status"),
                format!("Unsupported value: {}: supported values: {}", go_quote(status), listed.join(", ")),
            ));
        }
        let other = match kind {
            "Approved" => Some("Denied"),
            "Denied" => Some("Approved"),
            _ => None,
        };
        if other.is_some_and(|o| seen.contains(&o)) {
            causes.push(Cause::new(
                "FieldValueInvalid",
                format!("{path}.type"),
                format!("Invalid value: {}: Approved and Denied conditions are mutually exclusive", go_quote(kind)),
            ));
        }
        seen.push(kind);
    }
    for kind in ["Approved", "Denied", "Failed"] {
        let had = before.iter().any(|c| text(c, "/type") == kind);
        if had && !seen.contains(&kind) {
            causes.push(Cause::new(
                "FieldValueForbidden",
                "status.conditions",
                format!("Forbidden: updates may not remove a condition of type {}", go_quote(kind)),
            ));
        }
    }
    causes
}

/// Conditions without their update and transition times get now.
fn stamp_conditions(csr: &mut Value) {
    let now = object::now();
    for c in csr.pointer_mut("/status/conditions").and_then(Value::as_array_mut).into_iter().flatten() {
        let Some(map) = c.as_object_mut() else { continue };
        for field in ["lastUpdateTime", "lastTransitionTime"] {
            if map.get(field).is_none_or(Value::is_null) {
                map.insert(field.into(), json!(now));
            }
        }
    }
}
