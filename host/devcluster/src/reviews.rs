//! The review resources: created, answered at once, never stored. This server has no
//! authentication or authorization, so it answers as a cluster would for its administrator:
//! every access allowed (`kubectl auth can-i`), every rule granted, and the caller is
//! `kubernetes-admin` of `system:masters` (`kubectl auth whoami`).

use serde_json::{Value, json};

use super::discovery::ResourceType;

/// The resources answered here, as `(group, plural)`.
pub(crate) const REVIEWS: &[(&str, &str)] = &[
    ("authorization.k8s.io", "selfsubjectaccessreviews"),
    ("authorization.k8s.io", "subjectaccessreviews"),
    ("authorization.k8s.io", "localsubjectaccessreviews"),
    ("authorization.k8s.io", "selfsubjectrulesreviews"),
    ("authentication.k8s.io", "selfsubjectreviews"),
];

/// Whether `rt` is one of the review resources.
pub(crate) fn is_review(rt: &ResourceType) -> bool {
    REVIEWS.contains(&(rt.group.as_str(), rt.plural.as_str()))
}

/// The created review with its `status`: the answer.
pub(crate) fn answer(rt: &ResourceType, version: &str, mut review: Value) -> Value {
    review["apiVersion"] = json!(rt.api_version(version));
    review["kind"] = json!(rt.kind);
    if review.get("metadata").is_none_or(|m| !m.is_object()) {
        review["metadata"] = json!({});
    }
    review["metadata"]["creationTimestamp"] = Value::Null;
    review["status"] = match rt.plural.as_str() {
        "selfsubjectrulesreviews" => json!({
            "resourceRules": [{ "verbs": ["*"], "apiGroups": ["*"], "resources": ["*"] }],
            "nonResourceRules": [{ "verbs": ["*"], "nonResourceURLs": ["*"] }],
            "incomplete": false,
        }),
        "selfsubjectreviews" => json!({
            "userInfo": { "username": "kubernetes-admin", "groups": ["system:masters", "system:authenticated"] },
        }),
        _ => json!({ "allowed": true, "reason": "this API server authorizes every request" }),
    };
    review
}
