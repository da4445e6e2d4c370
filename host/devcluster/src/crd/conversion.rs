//! A CRD's conversion webhook (`spec.conversion.strategy: Webhook`), as
//! apiextensions-apiserver's `webhookConverter` calls it: one `ConversionReview` per
//! conversion with the objects not yet in the desired version, and the answer checked the same
//! way, with the same messages (the review's type and uid, `result.status`, as many objects as
//! were sent, each of the desired version and kind with the same name, namespace and uid). Only
//! `labels` and `annotations` are taken from the answer's metadata; the rest is restored.

use futures_util::future::BoxFuture;
use serde_json::{Map, Value, json};

use super::str_at;
use crate::metadata;
use crate::strategy::Converter;
use crate::webhook::{ClientConfig, Endpoint, review_uid};

/// What apiextensions-apiserver waits for a conversion webhook (its client's
/// `defaultRequestTimeout`; a CRD sets no timeout of its own).
const TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// The conversion webhook of a CRD.
pub(super) struct Webhook {
    client: ClientConfig,
    /// The `ConversionReview` version spoken: the first of `conversionReviewVersions` known.
    review_version: &'static str,
}

impl Webhook {
    /// The webhook `crd` converts with; `None` for the `None` strategy (or a configuration
    /// the CRD's validation refuses).
    pub(super) fn of(crd: &Value) -> Option<Webhook> {
        if str_at(crd, &["spec", "conversion", "strategy"]) != "Webhook" {
            return None;
        }
        let webhook = crd.pointer("/spec/conversion/webhook")?;
        let client = ClientConfig::parse(webhook.get("clientConfig")?).ok()?;
        let review_version =
            webhook.get("conversionReviewVersions").and_then(Value::as_array).into_iter().flatten().find_map(|v| {
                match v.as_str() {
                    Some("v1") => Some("v1"),
                    Some("v1beta1") => Some("v1beta1"),
                    _ => None,
                }
            })?;
        Some(Webhook { client, review_version })
    }

    async fn call(
        &self,
        endpoint: &Endpoint,
        objects: Vec<Value>,
        desired: &str,
        read: &str,
    ) -> Result<Vec<Value>, String> {
        let failed = |why: &str| format!("conversion webhook for {read} failed: {why}");
        let uid = review_uid();
        let review_api = format!("apiextensions.k8s.io/{}", self.review_version);
        let review = json!({
            "kind": "ConversionReview",
            "apiVersion": review_api,
            "request": { "uid": uid, "desiredAPIVersion": desired, "objects": objects },
        });
        let answer = endpoint.post(&review, TIMEOUT, false).await.map_err(|e| failed(&e.0))?;
        let converted = check_review(&answer, &uid, self.review_version).map_err(|why| failed(&why))?;
        if converted.len() != objects.len() {
            return Err(format!(
                "conversion webhook for {read} returned {} objects, expected {}",
                converted.len(),
                objects.len()
            ));
        }
        let list = objects.len() > 1 || read.ends_with("List");
        let mut out = Vec::with_capacity(objects.len());
        for (i, (original, mut converted)) in objects.into_iter().zip(converted).enumerate() {
            // Upstream counts list items from 1 in these messages (it has moved past the item).
            let (invalid, invalid_meta) = if list {
                (
                    format!("conversion webhook for {read} returned invalid converted object at index {}", i + 1),
                    format!("conversion webhook for {read} returned invalid metadata in object at index {}", i + 1),
                )
            } else {
                (
                    format!("conversion webhook for {read} returned invalid object at index 0"),
                    format!("conversion webhook for {read} returned invalid metadata"),
                )
            };
            let got_version = converted.get("apiVersion").and_then(Value::as_str).unwrap_or_default().to_string();
            if got_version != desired {
                return Err(format!("{invalid}: invalid groupVersion (expected {desired}, received {got_version})"));
            }
            let kind = |o: &Value| o.get("kind").and_then(Value::as_str).unwrap_or_default().to_string();
            if kind(&converted) != kind(&original) {
                return Err(format!(
                    "{invalid}: invalid kind (expected {}, received {})",
                    kind(&original),
                    kind(&converted)
                ));
            }
            let invalid_object =
                if list { invalid.clone() } else { format!("conversion webhook for {read} returned invalid object") };
            same_identity(&original, &converted).map_err(|why| format!("{invalid_object}: {why}"))?;
            restore_metadata(&original, &mut converted).map_err(|why| format!("{invalid_meta}: {why}"))?;
            out.push(converted);
        }
        Ok(out)
    }
}

impl Converter for Webhook {
    fn client(&self) -> &ClientConfig {
        &self.client
    }

    fn convert<'a>(
        &'a self,
        endpoint: &'a Endpoint,
        objects: Vec<Value>,
        api_version: &'a str,
        read: &'a str,
    ) -> BoxFuture<'a, Result<Vec<Value>, String>> {
        Box::pin(self.call(endpoint, objects, api_version, read))
    }
}

/// The converted objects of an answer (`getConvertedObjectsFromResponse`).
fn check_review(answer: &Value, uid: &str, review_version: &str) -> Result<Vec<Value>, String> {
    let text = |v: &Value, p: &str| v.pointer(p).and_then(Value::as_str).unwrap_or_default().to_string();
    if review_version == "v1" {
        let (api_version, kind) = (text(answer, "/apiVersion"), text(answer, "/kind"));
        if (api_version.as_str(), kind.as_str()) != ("apiextensions.k8s.io/v1", "ConversionReview") {
            return Err(format!(
                "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got {}",
                gvk_string(&api_version, &kind)
            ));
        }
    }
    let response = answer.get("response").filter(|r| r.is_object()).ok_or("no response provided")?;
    if review_version == "v1" && text(response, "/uid") != uid {
        return Err(format!("expected response.uid={uid:?}, got {:?}", text(response, "/uid")));
    }
    let status = text(response, "/result/status");
    if status != "Success" {
        let message = text(response, "/result/message");
        return Err(if message.is_empty() {
            format!("response.result.status was '{status}', not 'Success'")
        } else {
            message
        });
    }
    Ok(response.get("convertedObjects").and_then(Value::as_array).cloned().unwrap_or_default())
}

/// `schema.GroupVersionKind.String()`: `group/version, Kind=kind` (`/, Kind=` when empty).
fn gvk_string(api_version: &str, kind: &str) -> String {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    format!("{group}/{version}, Kind={kind}")
}

/// `validateConvertedObject`: the kind, name, namespace and uid are the original's.
fn same_identity(original: &Value, converted: &Value) -> Result<(), String> {
    let kind = |o: &Value| o.get("kind").and_then(Value::as_str).unwrap_or_default().to_string();
    if kind(original) != kind(converted) {
        return Err(format!("must have the same kind: {} != {}", kind(original), kind(converted)));
    }
    for (field, label) in [("name", "name"), ("namespace", "namespace"), ("uid", "UID")] {
        let (a, b) = (crate::object::meta_str(original, field), crate::object::meta_str(converted, field));
        if a != b {
            return Err(format!("must have the same {label}: {a} != {b}"));
        }
    }
    Ok(())
}

/// `restoreObjectMeta`: the original's metadata, with the labels and annotations of the answer
/// (which may drop them), once they pass their checks.
fn restore_metadata(original: &Value, converted: &mut Value) -> Result<(), String> {
    let answered = match converted.get("metadata") {
        None => return Err("missing metadata in converted object".to_string()),
        Some(Value::Object(m)) => m.clone(),
        Some(other) => return Err(format!("invalid metadata of type {} in converted object", go_type(other))),
    };
    let mut restored: Map<String, Value> =
        original.get("metadata").and_then(Value::as_object).cloned().unwrap_or_default();
    for field in ["labels", "annotations"] {
        let given = match answered.get(field) {
            None | Some(Value::Null) => {
                restored.remove(field);
                continue;
            }
            Some(Value::Object(m)) => m,
            Some(other) => {
                return Err(format!("invalid metadata.{field} of type {} in converted object", go_type(other)));
            }
        };
        if let Some((k, v)) = given.iter().find(|(_, v)| !v.is_string()) {
            return Err(format!("metadata.{field}[{k}] must be a string, but is {} in converted object", go_type(v)));
        }
        let before = restored.get(field).and_then(Value::as_object);
        let changed = before.is_none_or(|b| b.len() != given.len() || given.iter().any(|(k, v)| b.get(k) != Some(v)));
        if changed {
            let mut probe = json!({ "metadata": {} });
            probe["metadata"][field] = Value::Object(given.clone());
            let lines: Vec<String> = metadata::validate(&probe)
                .iter()
                // Upstream checks annotations under the path `metadata.annotation`.
                .map(|c| {
                    format!("{}: {}", c.field.replacen("metadata.annotations", "metadata.annotation", 1), c.message)
                })
                .collect();
            match lines.len() {
                0 => {}
                1 => return Err(lines[0].clone()),
                _ => return Err(format!("[{}]", lines.join(", "))),
            }
        }
        restored.insert(field.to_string(), Value::Object(given.clone()));
    }
    converted["metadata"] = Value::Object(restored);
    Ok(())
}

/// How Go's `%T` names the type of a decoded JSON value.
fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(_) => "int64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_labels_and_annotations_come_from_the_answer() {
        let original =
            json!({"kind": "T", "metadata": {"name": "a", "uid": "1", "labels": {"x": "1"}, "generation": 3}});
        let mut converted =
            json!({"kind": "T", "metadata": {"name": "a", "uid": "1", "labels": {"y": "2"}, "generation": 9}});
        restore_metadata(&original, &mut converted).unwrap();
        assert_eq!(converted["metadata"], json!({"name": "a", "uid": "1", "labels": {"y": "2"}, "generation": 3}));
        let mut bad = json!({"kind": "T", "metadata": {"labels": {"x": 1}}});
        assert_eq!(
            restore_metadata(&original, &mut bad).unwrap_err(),
            "metadata.labels[x] must be a string, but is int64 in converted object"
        );
    }

    #[test]
    fn an_answer_of_another_review_is_refused_with_upstreams_words() {
        let answer = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "response": {"uid": "other", "result": {"status": "Success"}, "convertedObjects": []}});
        assert_eq!(check_review(&answer, "mine", "v1").unwrap_err(), r#"expected response.uid="mine", got "other""#);
        let failed = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "response": {"uid": "mine", "result": {"status": "Failure"}}});
        assert_eq!(
            check_review(&failed, "mine", "v1").unwrap_err(),
            "response.result.status was 'Failure', not 'Success'"
        );
    }
}
