//! The `AdmissionReview` a webhook is sent (`CreateV1AdmissionReview` and its v1beta1 twin),
//! the checks of its answer (`VerifyAdmissionResponse`) and a denial as kube-apiserver words it
//! (`ToStatusErr`), with upstream's messages.

use std::collections::BTreeSet;
use std::sync::{Mutex, OnceLock};

use base64::Engine as _;
use serde_json::{Map, Value, json};

use crate::status::ApiError;

/// The first `admissionReviewVersions` entry the server speaks.
pub(super) fn version(hook: &Value) -> Option<&'static str> {
    hook.get("admissionReviewVersions").and_then(Value::as_array)?.iter().find_map(|v| match v.as_str() {
        Some("v1") => Some("v1"),
        Some("v1beta1") => Some("v1beta1"),
        _ => None,
    })
}

/// The review of `request` (an `AdmissionRequest` without `uid`, `object` and `oldObject`,
/// every field present), in `version`: empty optional fields left out as Go leaves them out,
/// and `object` and `oldObject` written `null` when absent, as a `RawExtension` is.
pub(super) fn review(version: &str, uid: &str, request: &Value, object: Option<&Value>, old: Option<&Value>) -> Value {
    let mut out = Map::new();
    out.insert("uid".into(), json!(uid));
    for (key, value) in request.as_object().into_iter().flatten() {
        let empty = value.as_str().is_some_and(str::is_empty);
        let omitted = matches!(key.as_str(), "subResource" | "requestSubResource" | "name" | "namespace") && empty;
        if !omitted {
            out.insert(key.clone(), value.clone());
        }
        if key == "userInfo" {
            out.insert("object".into(), object.cloned().unwrap_or(Value::Null));
            out.insert("oldObject".into(), old.cloned().unwrap_or(Value::Null));
        }
    }
    json!({ "kind": "AdmissionReview", "apiVersion": format!("admission.k8s.io/{version}"), "request": out })
}

/// A webhook's verdict.
pub(super) struct Verdict {
    pub allowed: bool,
    /// `status` (ignored when allowed).
    pub status: Option<Value>,
    /// The JSON Patch, decoded from base64; `None` when there is none.
    pub patch: Option<Vec<u8>>,
    /// `patchType`, when given.
    pub patch_type: Option<String>,
    pub warnings: Vec<String>,
}

/// The verdict of `answer` to the review `uid` (`VerifyAdmissionResponse`); the error is the
/// reason the answer is refused.
pub(super) fn verdict(answer: &Value, uid: &str, version: &str, mutating: bool) -> Result<Verdict, String> {
    let text = |v: &Value, p: &str| v.pointer(p).and_then(Value::as_str).unwrap_or_default().to_string();
    if version == "v1" {
        let (api_version, kind) = (text(answer, "/apiVersion"), text(answer, "/kind"));
        if (api_version.as_str(), kind.as_str()) != ("admission.k8s.io/v1", "AdmissionReview") {
            let (group, v) = api_version.rsplit_once('/').unwrap_or(("", &api_version));
            return Err(format!(
                "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got {group}/{v}, Kind={kind}"
            ));
        }
    }
    let response = answer.get("response").filter(|r| r.is_object()).ok_or("webhook response was absent")?;
    if version == "v1" && text(response, "/uid") != uid {
        return Err(format!("expected response.uid={uid:?}, got {:?}", text(response, "/uid")));
    }
    let patch = match response.get("patch").and_then(Value::as_str) {
        None | Some("") => None,
        Some(b64) => Some(
            base64::engine::general_purpose::STANDARD
                .decode(b64)
                .map_err(|e| format!("illegal base64 data in response.patch: {e}"))?,
        ),
    };
    let patch_type = response.get("patchType").and_then(Value::as_str).map(String::from);
    if version == "v1" {
        match (mutating, &patch, &patch_type) {
            (true, Some(_), None) => return Err("webhook returned response.patch but not response.patchType".into()),
            (true, None, Some(_)) => return Err("webhook returned response.patchType but not response.patch".into()),
            (true, Some(_), Some(t)) if t != "JSONPatch" => {
                return Err(format!("webhook returned invalid response.patchType of {t:?}"));
            }
            (false, Some(_), _) => return Err("validating webhook may not return response.patch".into()),
            (false, None, Some(_)) => return Err("validating webhook may not return response.patchType".into()),
            _ => {}
        }
    }
    Ok(Verdict {
        allowed: response.get("allowed").and_then(Value::as_bool).unwrap_or(false),
        status: response.get("status").filter(|s| s.is_object()).cloned(),
        patch,
        patch_type,
        warnings: response
            .get("warnings")
            .and_then(Value::as_array)
            .map(|w| w.iter().filter_map(|s| s.as_str().map(String::from)).collect())
            .unwrap_or_default(),
    })
}

/// The refusal of a webhook that did not allow the request (`ToStatusErr`): its `status`, with
/// a code of at least 400 and its message prefixed with the webhook's name.
pub(super) fn denied(hook: &str, status: Option<&Value>) -> ApiError {
    let status = status.cloned().unwrap_or_else(|| json!({}));
    let text = |f: &str| status.get(f).and_then(Value::as_str).unwrap_or_default().to_string();
    let denied_by = format!("admission webhook {hook:?} denied the request");
    let message = match (text("message"), text("reason")) {
        (message, _) if !message.is_empty() => format!("{denied_by}: {message}"),
        (_, reason) if !reason.is_empty() => format!("{denied_by}: {reason}"),
        _ => format!("{denied_by} without explanation"),
    };
    let code = status
        .get("code")
        .and_then(Value::as_u64)
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| *c >= 400)
        .unwrap_or(400);
    let mut err = ApiError::new(code, reason(&text("reason")), message);
    err.details = status.get("details").filter(|d| d.is_object()).cloned();
    err
}

/// A `Status` reason as the error type keeps it: the reasons of `metav1` as they are, any
/// other text kept once for the life of the process.
fn reason(text: &str) -> &'static str {
    const KNOWN: [&str; 19] = [
        "",
        "Unauthorized",
        "Forbidden",
        "NotFound",
        "AlreadyExists",
        "Conflict",
        "Gone",
        "Invalid",
        "ServerTimeout",
        "StoreReadError",
        "Timeout",
        "TooManyRequests",
        "BadRequest",
        "MethodNotAllowed",
        "NotAcceptable",
        "RequestEntityTooLarge",
        "UnsupportedMediaType",
        "InternalError",
        "ServiceUnavailable",
    ];
    static OTHERS: OnceLock<Mutex<BTreeSet<&'static str>>> = OnceLock::new();
    if let Some(known) = KNOWN.iter().find(|k| **k == text) {
        return known;
    }
    let mut others = OTHERS.get_or_init(Mutex::default).lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(kept) = others.get(text) {
        return kept;
    }
    let kept: &'static str = Box::leak(text.to_string().into_boxed_str());
    others.insert(kept);
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_denial_keeps_the_webhooks_code_reason_and_details() {
        let status = json!({"code": 403, "reason": "Forbidden", "message": "no", "details": {"causes": []}});
        let err = denied("deny.example.com", Some(&status));
        assert_eq!((err.code, err.reason), (403, "Forbidden"));
        assert_eq!(err.message, r#"admission webhook "deny.example.com" denied the request: no"#);
        let err = denied("deny.example.com", Some(&json!({"code": 200})));
        assert_eq!(
            (err.code, err.message.as_str()),
            (400, r#"admission webhook "deny.example.com" denied the request without explanation"#)
        );
    }

    #[test]
    fn a_create_has_a_null_old_object_and_no_empty_name() {
        let request =
            json!({"kind": {}, "subResource": "", "name": "", "namespace": "ns", "userInfo": {}, "dryRun": false});
        let review = review("v1", "u", &request, Some(&json!({"a": 1})), None);
        let request = &review["request"];
        assert!(request.get("name").is_none() && request.get("subResource").is_none());
        assert_eq!((&request["oldObject"], &request["namespace"]), (&Value::Null, &json!("ns")));
    }
}
