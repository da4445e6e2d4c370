//! The review resources: created, answered at once, never stored. This server authorizes every
//! request, so it answers as a cluster would for its administrator: every access allowed
//! (`kubectl auth can-i`), every rule granted, and the caller as authentication found it
//! (`kubectl auth whoami`).

use serde_json::{Value, json};

use crate::strategy::Strategy;
use crate::user::User;

/// The resources answered here, as `(group, plural)`.
pub(super) const REVIEWS: &[(&str, &str)] = &[
    ("authorization.k8s.io", "selfsubjectaccessreviews"),
    ("authorization.k8s.io", "subjectaccessreviews"),
    ("authorization.k8s.io", "localsubjectaccessreviews"),
    ("authorization.k8s.io", "selfsubjectrulesreviews"),
    ("authentication.k8s.io", "selfsubjectreviews"),
];

/// `SubjectAccessReview` and its self and local forms: every access is allowed.
pub(super) struct AccessReviews;

impl Strategy for AccessReviews {
    fn answer(&self, _review: &Value, _user: &User) -> Option<Value> {
        Some(json!({ "allowed": true, "reason": "this API server authorizes every request" }))
    }
}

/// `SelfSubjectRulesReview`: every rule is granted.
pub(super) struct RulesReviews;

impl Strategy for RulesReviews {
    fn answer(&self, _review: &Value, _user: &User) -> Option<Value> {
        Some(json!({
            "resourceRules": [{ "verbs": ["*"], "apiGroups": ["*"], "resources": ["*"] }],
            "nonResourceRules": [{ "verbs": ["*"], "nonResourceURLs": ["*"] }],
            "incomplete": false,
        }))
    }
}

/// `SelfSubjectReview`: who the caller is.
pub(super) struct SelfSubjectReviews;

impl Strategy for SelfSubjectReviews {
    fn answer(&self, _review: &Value, user: &User) -> Option<Value> {
        Some(json!({ "userInfo": { "username": user.name, "groups": user.groups } }))
    }
}
