//! Everything particular to `CustomResourceDefinitions`: the strategy of the CRD kind itself
//! (checks, defaults, `Established` status, serving its resource, the cleanup of its objects
//! when it goes), the strategy of the custom resources it defines (schema pruning, defaults
//! and validation, printer columns, the status subresource), their versions, and the admission
//! plugins that keep the two consistent. The rest of the server knows CRDs only through these
//! strategies and the effects their hooks return.

mod admission;
mod conversion;
mod custom;
mod definition;
mod schema;
mod validations;

use serde_json::Value;

pub(crate) use self::admission::admission;
pub(crate) use self::definition::Definitions;

/// Where CRDs are stored.
const DEFINITIONS: (&str, &str) = ("apiextensions.k8s.io", "customresourcedefinitions");

/// The string at `path` of `v`, or `""`.
fn str_at<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    path.iter().try_fold(v, |cur, p| cur.get(*p)).and_then(Value::as_str).unwrap_or("")
}

/// The strings of the array at `path` of `v`.
fn strings_at(v: &Value, path: &[&str]) -> Vec<String> {
    path.iter()
        .try_fold(v, |cur, p| cur.get(*p))
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|s| s.as_str().map(String::from)).collect())
        .unwrap_or_default()
}
