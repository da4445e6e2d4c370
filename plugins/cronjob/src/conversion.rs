//! `v1` <-> `v2` as the multi-version tutorial converts them: `v1`'s `schedule` string
//! `"0 9 * * 1"` is `v2`'s `schedule: {minute: "0", hour: "9", dayOfWeek: "1"}`, a `*`
//! field left out. Everything else (the rest of the spec, the whole status with its
//! conditions, which the tutorial drops, and any field this plugin does not know) is
//! carried over as it is, so `v1` -> `v2` -> `v1` gives back the same object.

use kubewasm_sdk::serde_json::{Map, Value};

use crate::GROUP;

/// The `v2` fields, in the order of the five `v1` fields.
const FIELDS: [&str; 5] = ["minute", "hour", "dayOfMonth", "month", "dayOfWeek"];

/// `object` (a `CronJob` of either version) in `desired` (`group/version`).
///
/// # Errors
///
/// A version this plugin does not know, or a `v1` schedule `v2` cannot hold (the
/// tutorial's `invalid schedule: not a standard 5-field schedule`).
pub fn convert(object: &kubewasm_sdk::Object, desired: &str) -> Result<Value, String> {
    let version = |api_version: &str| {
        api_version
            .strip_prefix(GROUP)
            .and_then(|v| v.strip_prefix('/'))
            .filter(|v| ["v1", "v2"].contains(v))
            .map(str::to_string)
            .ok_or_else(|| format!("{api_version} is not a version of {GROUP} this plugin knows (v1, v2)"))
    };
    let (from, to) = (version(object.api_version())?, version(desired)?);
    let mut converted = object.json().clone();
    converted["apiVersion"] = Value::String(desired.to_string());
    let Some(spec) = converted.get_mut("spec").and_then(Value::as_object_mut) else {
        return Ok(converted);
    };
    match (from.as_str(), to.as_str()) {
        ("v1", "v2") => {
            let schedule = spec.get("schedule").and_then(Value::as_str).unwrap_or_default();
            let v2 = v2_schedule(schedule).ok_or("invalid schedule: not a standard 5-field schedule")?;
            spec.insert("schedule".into(), Value::Object(v2));
        }
        ("v2", "v1") => {
            let schedule = spec.get("schedule").cloned().unwrap_or(Value::Null);
            let parts: Vec<&str> = FIELDS.iter().map(|f| schedule[*f].as_str().unwrap_or("*")).collect();
            spec.insert("schedule".into(), Value::String(parts.join(" ")));
        }
        _ => {}
    }
    Ok(converted)
}

/// `schedule` as `v2`'s struct: five fields split at single spaces, `*` left out; `None`
/// for anything else (a descriptor such as `@daily`, tabs, double spaces).
pub fn v2_schedule(schedule: &str) -> Option<Map<String, Value>> {
    let parts: Vec<&str> = schedule.split(' ').collect();
    if parts.len() != FIELDS.len() {
        return None;
    }
    Some(
        FIELDS
            .iter()
            .zip(parts)
            .filter(|(_, part)| *part != "*")
            .map(|(field, part)| ((*field).to_string(), Value::String(part.to_string())))
            .collect(),
    )
}
