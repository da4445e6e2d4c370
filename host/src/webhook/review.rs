//! The API server's side of admission and conversion: an `AdmissionReview` v1 read into
//! the contract's [`AdmissionRequest`], the plugin's answer written back as the
//! `AdmissionReview` kube-apiserver expects (a base64 JSON patch for a defaulted object, a
//! 403 or 422 `Status` for a denial, as controller-runtime answers for Kubebuilder's
//! validators), and a `ConversionReview` v1 read and answered. Pure functions: the server
//! (`serve`) runs the plugin between them.

use base64::Engine as _;
use kube::core::admission::{AdmissionRequest as Review, AdmissionReview, Operation as ReviewOperation};
use kube::core::conversion::{ConversionRequest as ConversionReviewRequest, ConversionResponse, ConversionReview};
use kube::core::{DynamicObject, Status};
use kubewasm_contract::{
    AdmissionRequest, ConversionRequest, Defaulted, Denial, KindRef, Object, Operation, UserInfo, Verdict,
};
use serde::Serialize;
use serde_json::Value;

/// A request body the server cannot read: answered 400, never passed to a plugin.
#[derive(Debug, thiserror::Error)]
pub enum BadReview {
    #[error("the body is not an AdmissionReview: {0}")]
    NotAdmissionReview(serde_json::Error),
    #[error("the body is not a ConversionReview: {0}")]
    NotConversionReview(serde_json::Error),
    #[error("the {0} has no request")]
    NoRequest(&'static str),
    #[error("expected apiVersion {expected}, got {got:?}")]
    Version { expected: &'static str, got: String },
}

/// What makes a plugin's answer unusable: a failure of the plugin, answered by its
/// failure policy. The words are the contract's checks', which the SDK's tests share.
#[derive(Debug, thiserror::Error)]
pub enum BadAnswer {
    /// Defaulting the API server would refuse: a patch that does not apply, a change to
    /// a delete.
    #[error("{0}")]
    Defaulting(String),
    /// Converted objects that are not the ones asked about, in the desired version.
    #[error("conversion webhook {0}")]
    Conversion(String),
}

/// Reads an `AdmissionReview` v1; the plugin's settings (`config`, its Secret references
/// resolved) and the host's time (`now`, RFC 3339) complete the request.
///
/// # Errors
///
/// A [`BadReview`] for a body that is not an `admission.k8s.io/v1` `AdmissionReview` with a
/// request.
pub fn admission_request(body: &[u8], now: String, config: Value) -> Result<AdmissionRequest, BadReview> {
    // The objects are taken as written, not through `DynamicObject`, whose typed metadata
    // would drop what it does not know: the patch is computed against them.
    let raw: Value = serde_json::from_slice(body).map_err(BadReview::NotAdmissionReview)?;
    let review: AdmissionReview<DynamicObject> =
        serde_json::from_value(raw.clone()).map_err(BadReview::NotAdmissionReview)?;
    if review.types.api_version != "admission.k8s.io/v1" {
        return Err(BadReview::Version { expected: "admission.k8s.io/v1", got: review.types.api_version });
    }
    let request: Review<DynamicObject> = review.request.ok_or(BadReview::NoRequest("AdmissionReview"))?;
    let object = |field: &str| raw["request"].get(field).filter(|o| o.is_object()).cloned().map(Object::new);
    let user = request.user_info;
    let kind = KindRef {
        group: request.kind.group,
        version: request.kind.version,
        kind: request.kind.kind,
        plural: request.resource.resource,
        namespaced: request.namespace.is_some(),
    };
    Ok(AdmissionRequest {
        uid: request.uid,
        kind,
        operation: match request.operation {
            ReviewOperation::Create => Operation::Create,
            ReviewOperation::Update => Operation::Update,
            ReviewOperation::Delete => Operation::Delete,
            ReviewOperation::Connect => Operation::Connect,
        },
        sub_resource: request.sub_resource.filter(|s| !s.is_empty()),
        namespace: request.namespace,
        name: request.name,
        object: object("object"),
        old_object: object("oldObject"),
        user_info: UserInfo {
            username: user.username.unwrap_or_default(),
            uid: user.uid.unwrap_or_default(),
            groups: user.groups.unwrap_or_default(),
            extra: user.extra.unwrap_or_default().into_iter().collect(),
        },
        dry_run: request.dry_run,
        options: raw["request"].get("options").cloned().unwrap_or(Value::Null),
        now,
        config,
    })
}

/// The `response` of an `AdmissionReview` v1, as kube-apiserver reads it: the patch as
/// base64 text (Go's `[]byte`).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Response {
    uid: String,
    allowed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    patch: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    patch_type: Option<&'static str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    warnings: Vec<String>,
}

impl Response {
    fn allow(uid: &str, warnings: Vec<String>) -> Self {
        Self { uid: uid.to_string(), allowed: true, status: None, patch: None, patch_type: None, warnings }
    }

    fn review(self) -> Value {
        serde_json::json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": self})
    }
}

/// How a plugin's answer came out, for the metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Allowed,
    Denied,
    Mutated,
}

/// The answer to `request` from the plugin's `default`: a JSON patch from the written
/// object to the defaulted one, or the denial.
///
/// # Errors
///
/// A [`BadAnswer`] when the plugin's patch is no JSON patch or does not apply, or when it
/// changes what a delete does not have.
pub fn defaulted(request: &AdmissionRequest, answer: Result<Defaulted, Denial>) -> Result<(Value, Outcome), BadAnswer> {
    let defaulted = match answer {
        Ok(defaulted) => defaulted,
        Err(denial) => return Ok((denied(request, &denial, Vec::new()), Outcome::Denied)),
    };
    // The patch the API server applies is the one from the written object to the
    // defaulted one, whichever way the plugin said it.
    let object = defaulted.apply(request).map_err(BadAnswer::Defaulting)?;
    let patch = request
        .object
        .as_ref()
        .map(|written| json_patch::diff(written.json(), &object))
        .filter(|patch| !patch.0.is_empty());
    let mut response = Response::allow(&request.uid, defaulted.warnings);
    let Some(patch) = patch else { return Ok((response.review(), Outcome::Allowed)) };
    // A `Patch` serializes to JSON always.
    let bytes = serde_json::to_vec(&patch).unwrap_or_default();
    response.patch = Some(base64::engine::general_purpose::STANDARD.encode(bytes));
    response.patch_type = Some("JSONPatch");
    Ok((response.review(), Outcome::Mutated))
}

/// The answer to `request` from the plugin's `validate`.
pub fn validated(request: &AdmissionRequest, verdict: Verdict) -> (Value, Outcome) {
    match verdict.denied {
        None => (Response::allow(&request.uid, verdict.warnings).review(), Outcome::Allowed),
        Some(denial) => (denied(request, &denial, verdict.warnings), Outcome::Denied),
    }
}

/// The answer when the plugin could not answer (`reason`: it trapped, ran out of time, or
/// answered what does not parse): a denial naming the reason, or, when the plugin's
/// failure policy says `Ignore`, the write let through with the reason as a warning.
pub fn failed(uid: &str, reason: &str, ignore: bool) -> Value {
    if ignore {
        let warning = format!("{reason}; admitted by failurePolicy Ignore");
        return Response::allow(uid, vec![warning]).review();
    }
    // A `Status` serializes always.
    let status = serde_json::to_value(Status::failure(reason, "InternalError").with_code(500)).unwrap_or_default();
    Response { status: Some(status), allowed: false, ..Response::allow(uid, Vec::new()) }.review()
}

/// A denial as controller-runtime answers for a Kubebuilder validator: 403 Forbidden with
/// the message; with field causes, 422 Invalid worded as `apierrors.NewInvalid`.
fn denied(request: &AdmissionRequest, denial: &Denial, warnings: Vec<String>) -> Value {
    let name = if request.name.is_empty() { object_name(request) } else { request.name.clone() };
    let status = denial.status(&request.kind, &name);
    Response { allowed: false, status: Some(status), ..Response::allow(&request.uid, warnings) }.review()
}

/// The written object's name (or, on delete, the stored one's); empty if it has none yet.
fn object_name(request: &AdmissionRequest) -> String {
    let object = request.object.as_ref().or(request.old_object.as_ref());
    object.and_then(|o| o.json()["metadata"]["name"].as_str()).unwrap_or_default().to_string()
}

/// A `ConversionReview` v1 as the server reads it: the contract's request and the
/// review's request, which the answer echoes.
#[derive(Debug)]
pub struct Conversion {
    pub request: ConversionRequest,
    review: ConversionReviewRequest,
}

impl Conversion {
    /// The review's uid.
    pub fn uid(&self) -> &str {
        &self.review.uid
    }
}

/// Reads a `ConversionReview` v1.
///
/// # Errors
///
/// A [`BadReview`] for a body that is not an `apiextensions.k8s.io/v1` `ConversionReview`
/// with a request.
pub fn conversion_request(body: &[u8], now: String, config: Value) -> Result<Conversion, BadReview> {
    let review: ConversionReview = serde_json::from_slice(body).map_err(BadReview::NotConversionReview)?;
    if review.types.api_version != "apiextensions.k8s.io/v1" {
        return Err(BadReview::Version { expected: "apiextensions.k8s.io/v1", got: review.types.api_version });
    }
    let review = ConversionReviewRequest::from_review(review).map_err(|_| BadReview::NoRequest("ConversionReview"))?;
    let request = ConversionRequest {
        objects: review.objects.clone(),
        desired_api_version: review.desired_api_version.clone(),
        now,
        config,
    };
    Ok(Conversion { request, review })
}

/// The answer to a conversion: the converted objects, or the plugin's reason as
/// `result.status: Failure`.
///
/// # Errors
///
/// A [`BadAnswer`] when the plugin returned another number of objects, or objects that
/// are not the ones asked about (uid, name, namespace, kind) in the desired version. Their
/// metadata is restored but for labels and annotations, as the API server restores it.
pub fn converted(conversion: Conversion, answer: Result<Vec<Value>, String>) -> Result<Value, BadAnswer> {
    let response = ConversionResponse::for_request(conversion.review);
    let response = match answer {
        Err(message) => response.failure(Status::failure(&message, "")),
        Ok(objects) => response.success(conversion.request.check(objects).map_err(BadAnswer::Conversion)?),
    };
    // A review of JSON values serializes always.
    Ok(serde_json::to_value(response.into_review()).unwrap_or_default())
}

/// The answer when the plugin could not convert: conversion has no failure policy.
pub fn conversion_failed(uid: &str, reason: &str) -> Value {
    let review = ConversionReviewRequest {
        types: None,
        uid: uid.to_string(),
        desired_api_version: String::new(),
        objects: Vec::new(),
    };
    let response = ConversionResponse::for_request(review).failure(Status::failure(reason, ""));
    serde_json::to_value(response.into_review()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use kubewasm_contract::Mutation;
    use serde_json::json;

    use super::*;

    fn admission_review(operation: &str, object: &Value, old: &Value) -> Vec<u8> {
        serde_json::to_vec(&json!({
            "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {
                "uid": "705ab4f5", "operation": operation, "name": "sample", "namespace": "default",
                "kind": {"group": "batch.tutorial.kubebuilder.io", "version": "v1", "kind": "CronJob"},
                "resource": {"group": "batch.tutorial.kubebuilder.io", "version": "v1", "resource": "cronjobs"},
                "userInfo": {"username": "kubernetes-admin", "groups": ["system:authenticated"]},
                "object": object, "oldObject": old, "dryRun": true,
                "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1", "fieldManager": "kubectl"},
            }
        }))
        .expect("JSON")
    }

    fn cronjob(spec: &Value) -> Value {
        json!({"apiVersion": "batch.tutorial.kubebuilder.io/v1", "kind": "CronJob",
               "metadata": {"name": "sample", "namespace": "default", "creationTimestamp": null}, "spec": spec})
    }

    fn read(body: &[u8]) -> AdmissionRequest {
        admission_request(body, "2026-01-01T00:00:00Z".into(), json!({"k": "v"})).expect("reads")
    }

    fn response(review: &Value) -> &Value {
        assert_eq!(review["apiVersion"], "admission.k8s.io/v1");
        assert_eq!(review["kind"], "AdmissionReview");
        assert_eq!(review["response"]["uid"], "705ab4f5", "the uid is echoed");
        &review["response"]
    }

    fn patch_of(response: &Value) -> Value {
        assert_eq!(response["patchType"], "JSONPatch");
        let bytes = base64::engine::general_purpose::STANDARD.decode(response["patch"].as_str().expect("base64 text"));
        serde_json::from_slice(&bytes.expect("base64")).expect("a JSON patch")
    }

    #[test]
    fn a_review_reads_into_the_contracts_request_with_the_objects_as_written() {
        let written = cronjob(&json!({"schedule": "*/1 * * * *"}));
        let request = read(&admission_review("UPDATE", &written, &cronjob(&json!({}))));
        assert_eq!(request.operation, Operation::Update);
        assert_eq!(request.kind, KindRef::namespaced("batch.tutorial.kubebuilder.io", "v1", "CronJob", "cronjobs"));
        assert_eq!((request.namespace.as_deref(), request.name.as_str()), (Some("default"), "sample"));
        assert_eq!(request.object.as_ref().map(Object::json), Some(&written), "metadata.creationTimestamp: null kept");
        assert_eq!(request.old_object.as_ref().map(|o| &o.json()["spec"]), Some(&json!({})));
        assert_eq!(request.user_info.username, "kubernetes-admin");
        assert_eq!(request.user_info.groups, ["system:authenticated"]);
        assert!(request.dry_run);
        assert_eq!(request.options["fieldManager"], "kubectl");
        assert_eq!((request.now.as_str(), &request.config), ("2026-01-01T00:00:00Z", &json!({"k": "v"})));
    }

    #[test]
    fn null_objects_are_absent() {
        let request = read(&admission_review("CREATE", &cronjob(&json!({})), &Value::Null));
        assert!(request.old_object.is_none());
        let request = read(&admission_review("DELETE", &Value::Null, &cronjob(&json!({}))));
        assert!(request.object.is_none());
        assert_eq!(request.operation, Operation::Delete);
    }

    #[test]
    fn what_is_not_an_admission_review_is_refused_saying_why() {
        let err = admission_request(b"{", String::new(), Value::Null).unwrap_err();
        assert!(err.to_string().starts_with("the body is not an AdmissionReview: "), "{err}");
        let v1beta1 = br#"{"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview", "request": null}"#;
        let err = admission_request(v1beta1, String::new(), Value::Null).unwrap_err();
        assert_eq!(err.to_string(), r#"expected apiVersion admission.k8s.io/v1, got "admission.k8s.io/v1beta1""#);
        let empty = br#"{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}"#;
        let err = admission_request(empty, String::new(), Value::Null).unwrap_err();
        assert_eq!(err.to_string(), "the AdmissionReview has no request");
    }

    #[test]
    fn a_defaulted_object_becomes_a_base64_json_patch_from_the_written_one() {
        let request = read(&admission_review("CREATE", &cronjob(&json!({"schedule": "@daily"})), &Value::Null));
        let object = cronjob(&json!({"schedule": "@daily", "suspend": false, "concurrencyPolicy": "Allow"}));
        let answer = Defaulted { mutation: Mutation::Object(object.clone()), warnings: vec!["w".into()] };
        let (review, outcome) = defaulted(&request, Ok(answer)).expect("a good answer");
        assert_eq!(outcome, Outcome::Mutated);
        let response = response(&review);
        assert_eq!(response["allowed"], true);
        assert_eq!(response["warnings"], json!(["w"]));
        let patch: json_patch::Patch = serde_json::from_value(patch_of(response)).expect("patch");
        let mut written = request.object.expect("object").json().clone();
        json_patch::patch(&mut written, &patch).expect("applies");
        assert_eq!(written, object, "the patch turns the written object into the defaulted one");
    }

    #[test]
    fn an_unchanged_object_is_allowed_without_a_patch() {
        let written = cronjob(&json!({"schedule": "@daily"}));
        let request = read(&admission_review("CREATE", &written, &Value::Null));
        for mutation in [Mutation::Unchanged, Mutation::Object(written), Mutation::Patch(json!([]))] {
            let (review, outcome) =
                defaulted(&request, Ok(Defaulted { mutation, warnings: vec![] })).expect("a good answer");
            assert_eq!(outcome, Outcome::Allowed);
            assert_eq!(response(&review), &json!({"uid": "705ab4f5", "allowed": true}));
        }
    }

    #[test]
    fn a_plugins_patch_is_passed_on_once_checked() {
        let request = read(&admission_review("CREATE", &cronjob(&json!({})), &Value::Null));
        let ops = json!([{"op": "add", "path": "/spec/suspend", "value": false}]);
        let (review, _) =
            defaulted(&request, Ok(Defaulted { mutation: Mutation::Patch(ops.clone()), warnings: vec![] })).unwrap();
        assert_eq!(patch_of(response(&review)), ops);

        let not_a_patch = Defaulted { mutation: Mutation::Patch(json!({"spec": {}})), warnings: vec![] };
        let err = defaulted(&request, Ok(not_a_patch)).unwrap_err();
        assert!(err.to_string().starts_with("the defaulting patch is not a list of JSON patch operations: "), "{err}");
        let missing = json!([{"op": "replace", "path": "/spec/nothing/here", "value": 1}]);
        let err =
            defaulted(&request, Ok(Defaulted { mutation: Mutation::Patch(missing), warnings: vec![] })).unwrap_err();
        assert!(err.to_string().starts_with("the defaulting patch does not apply to the written object: "), "{err}");

        let delete = read(&admission_review("DELETE", &Value::Null, &cronjob(&json!({}))));
        let err = defaulted(&delete, Ok(Defaulted { mutation: Mutation::Patch(ops), warnings: vec![] })).unwrap_err();
        assert_eq!(err.to_string(), "defaulting changed the object of a DELETE request, which has none to change");
    }

    #[test]
    fn a_denial_without_causes_is_403_forbidden() {
        let request = read(&admission_review("CREATE", &cronjob(&json!({})), &Value::Null));
        let (review, outcome) = validated(&request, Verdict::deny(Denial::new("no cronjobs on Sundays")).warning("w"));
        assert_eq!(outcome, Outcome::Denied);
        assert_eq!(
            response(&review),
            &json!({"uid": "705ab4f5", "allowed": false, "warnings": ["w"],
                    "status": {"apiVersion": "v1", "kind": "Status", "status": "Failure", "code": 403,
                               "reason": "Forbidden", "message": "no cronjobs on Sundays"}})
        );
        let (review, _) = defaulted(&request, Err(Denial::new("no"))).expect("a denial");
        assert_eq!(response(&review)["status"]["code"], 403);
    }

    #[test]
    fn a_denial_with_causes_is_422_invalid_as_apierrors_words_it() {
        let request = read(&admission_review("CREATE", &cronjob(&json!({})), &Value::Null));
        let one = Denial::invalid("metadata.name", "Invalid value: \"sample\": must be no more than 52 characters");
        let (review, _) = validated(&request, Verdict::deny(one));
        assert_eq!(
            response(&review)["status"],
            json!({"apiVersion": "v1", "kind": "Status", "status": "Failure", "code": 422, "reason": "Invalid",
                   "message": "CronJob.batch.tutorial.kubebuilder.io \"sample\" is invalid: metadata.name: Invalid value: \"sample\": must be no more than 52 characters",
                   "details": {"name": "sample", "group": "batch.tutorial.kubebuilder.io", "kind": "CronJob",
                               "causes": [{"reason": "FieldValueInvalid", "field": "metadata.name",
                                           "message": "Invalid value: \"sample\": must be no more than 52 characters"}]}})
        );
        let two = Denial::invalid("spec.a", "bad").cause("spec.b", "FieldValueRequired", "Required value");
        let (review, _) = validated(&request, Verdict::deny(two));
        let status = &response(&review)["status"];
        assert_eq!(
            status["message"],
            "CronJob.batch.tutorial.kubebuilder.io \"sample\" is invalid: [spec.a: bad, spec.b: Required value]"
        );
        assert_eq!(status["details"]["causes"][1]["reason"], "FieldValueRequired");
    }

    #[test]
    fn a_failed_plugin_is_a_denial_naming_the_reason_or_allowed_under_ignore() {
        let reason = "plugin p exceeded its deadline of 500ms in validate";
        assert_eq!(
            failed("u", reason, false)["response"],
            json!({"uid": "u", "allowed": false,
                   "status": {"status": "Failure", "code": 500, "reason": "InternalError", "message": reason}})
        );
        assert_eq!(
            failed("u", reason, true)["response"],
            json!({"uid": "u", "allowed": true, "warnings": [format!("{reason}; admitted by failurePolicy Ignore")]})
        );
    }

    fn conversion(objects: &[Value]) -> Conversion {
        let body = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                          "request": {"uid": "c-1", "desiredAPIVersion": "x.io/v2", "objects": objects}});
        conversion_request(&serde_json::to_vec(&body).unwrap(), "now".into(), Value::Null).expect("reads")
    }

    fn widget(version: &str, uid: &str) -> Value {
        json!({"apiVersion": format!("x.io/{version}"), "kind": "Widget",
               "metadata": {"name": "w", "namespace": "default", "uid": uid}})
    }

    #[test]
    fn a_conversion_answers_the_converted_objects_or_the_plugins_reason() {
        let asked = conversion(&[widget("v1", "a"), widget("v1", "b")]);
        assert_eq!(asked.uid(), "c-1");
        assert_eq!(asked.request.desired_api_version, "x.io/v2");
        let answer = converted(asked, Ok(vec![widget("v2", "a"), widget("v2", "b")])).expect("good objects");
        assert_eq!(answer["apiVersion"], "apiextensions.k8s.io/v1");
        assert_eq!(answer["kind"], "ConversionReview");
        assert_eq!(answer["response"]["uid"], "c-1");
        assert_eq!(answer["response"]["result"]["status"], "Success");
        assert_eq!(answer["response"]["convertedObjects"], json!([widget("v2", "a"), widget("v2", "b")]));

        let refused = converted(conversion(&[widget("v1", "a")]), Err("no v2 for you".into())).expect("answer");
        assert_eq!(refused["response"]["result"]["status"], "Failure");
        assert_eq!(refused["response"]["result"]["message"], "no v2 for you");
        assert_eq!(refused["response"]["uid"], "c-1");
    }

    #[test]
    fn a_conversion_answer_of_other_objects_is_refused() {
        let err = converted(conversion(&[widget("v1", "a")]), Ok(vec![])).unwrap_err();
        assert_eq!(err.to_string(), "conversion webhook returned 0 objects, expected 1");
        let err = converted(conversion(&[widget("v1", "a")]), Ok(vec![widget("v2", "b")])).unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"conversion webhook returned invalid converted object at index 0: must have the same uid: "b" != "a""#
        );
        let err = converted(conversion(&[widget("v1", "a")]), Ok(vec![widget("v1", "a")])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "conversion webhook returned invalid converted object at index 0: invalid groupVersion (expected x.io/v2, received x.io/v1)"
        );
        let failed = conversion_failed("c-1", "plugin p trapped in convert: boom");
        assert_eq!(failed["response"]["result"]["status"], "Failure");
        assert_eq!(failed["response"]["result"]["message"], "plugin p trapped in convert: boom");
    }
}
