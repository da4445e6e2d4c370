//! The tutorial's webhooks: defaulting fills in what the spec leaves unset
//! (`concurrencyPolicy: Allow`, `suspend: false`, history limits 3 and 1) and nothing
//! else; validation refuses a name the Jobs' names could not extend and a schedule
//! robfig/cron does not parse, with the tutorial's messages.

use kubewasm_sdk::prelude::*;
use kubewasm_sdk::serde_json::{Value, json};

use crate::cron;

/// The Job name is the CronJob's and `-` with ten digits of a Unix time: 63 - 11.
pub const MAX_NAME: usize = 52;

/// What defaulting fills in, in the order of controller-runtime's JSON patch.
fn defaults() -> [(&'static str, Value); 4] {
    [
        ("concurrencyPolicy", json!("Allow")),
        ("failedJobsHistoryLimit", json!(1)),
        ("successfulJobsHistoryLimit", json!(3)),
        ("suspend", json!(false)),
    ]
}

/// Fills in the unset fields of the spec (an empty `concurrencyPolicy` counts as unset,
/// as Go reads it), as a JSON patch.
///
/// # Errors
///
/// A [`Denial`] when the object has no `spec` object to complete.
pub fn default(request: &AdmissionRequest) -> Result<Defaulted, Denial> {
    let Some(object) = request.object.as_ref() else {
        return Ok(Defaulted::unchanged());
    };
    let Some(spec) = object.json().get("spec").and_then(Value::as_object) else {
        return Err(Denial::invalid("spec", "Required value"));
    };
    let unset = |field: &str| match spec.get(field) {
        None | Some(Value::Null) => true,
        Some(value) => field == "concurrencyPolicy" && value == "",
    };
    let patch: Vec<Value> = defaults()
        .into_iter()
        .filter(|(field, _)| unset(field))
        .map(|(field, value)| {
            let op = if spec.contains_key(field) { "replace" } else { "add" };
            json!({"op": op, "path": format!("/spec/{field}"), "value": value})
        })
        .collect();
    Ok(if patch.is_empty() { Defaulted::unchanged() } else { Defaulted::patch(Value::Array(patch)) })
}

/// The tutorial's validation of a create or update: the name first, then the schedule;
/// a delete is allowed. A schedule that parses but that `v2` cannot hold (not five fields
/// separated by single spaces) is allowed with a warning.
pub fn validate(request: &AdmissionRequest) -> Verdict {
    if request.operation == Operation::Delete {
        return Verdict::allow();
    }
    let Some(object) = request.object.as_ref() else {
        return Verdict::allow();
    };
    let mut causes = Vec::new();
    let name = object.name();
    if name.len() > MAX_NAME {
        causes.push(("metadata.name", format!("Invalid value: {name:?}: must be no more than {MAX_NAME} characters")));
    }
    let schedule = object.spec()["schedule"].as_str().unwrap_or_default();
    if let Err(e) = cron::parse(schedule) {
        causes.push(("spec.schedule", format!("Invalid value: {schedule:?}: {e}")));
    }
    let verdict = Verdict::invalid(causes);
    if !verdict.allowed() || crate::conversion::v2_schedule(schedule).is_some() {
        return verdict;
    }
    verdict.warning(format!(
        "spec.schedule {schedule:?} is not five fields separated by single spaces: the object cannot be read as {}/v2",
        crate::GROUP
    ))
}
