//! The review resources: created, answered at once, never stored
//! (`pkg/registry/authorization/*`, `pkg/registry/authentication/*`). Access reviews ask the
//! authorizer the requests themselves go through (`kubectl auth can-i`), the rules review lists
//! what a user holds (`kubectl auth can-i --list`), the self subject review says who the caller
//! is (`kubectl auth whoami`), and the token review authenticates a token as a request's bearer
//! token would be.

use serde_json::{Value, json};

use super::rbac::{aggregate, authorize, rules_for};
use super::serviceaccounts;
use crate::access::Attributes;
use crate::status::{ApiError, Cause, go_quote};
use crate::strategy::{Answering, Strategy};
use crate::tokens::ISSUER;
use crate::user::User;

const AUTHORIZATION: &str = "authorization.k8s.io";

/// The resources answered here, as `(group, plural)`.
pub(super) const REVIEWS: &[(&str, &str)] = &[
    (AUTHORIZATION, "selfsubjectaccessreviews"),
    (AUTHORIZATION, "subjectaccessreviews"),
    (AUTHORIZATION, "localsubjectaccessreviews"),
    (AUTHORIZATION, "selfsubjectrulesreviews"),
    ("authentication.k8s.io", "selfsubjectreviews"),
    ("authentication.k8s.io", "tokenreviews"),
];

/// The strategy of the review resource `plural`.
pub(super) fn strategy(plural: &str) -> Box<dyn Strategy> {
    match plural {
        "selfsubjectaccessreviews" => Box::new(AccessReviews::Own),
        "subjectaccessreviews" => Box::new(AccessReviews::Named),
        "localsubjectaccessreviews" => Box::new(AccessReviews::Local),
        "selfsubjectrulesreviews" => Box::new(RulesReviews),
        "selfsubjectreviews" => Box::new(SelfSubjectReviews),
        _ => Box::new(TokenReviews),
    }
}

/// The access reviews: may this user do this?
enum AccessReviews {
    /// `SelfSubjectAccessReview`: the caller.
    Own,
    /// `SubjectAccessReview`: the user the spec names (no group added to it).
    Named,
    /// `LocalSubjectAccessReview`: the user the spec names, in the namespace of the path.
    Local,
}

impl AccessReviews {
    fn kind(&self) -> &'static str {
        match self {
            AccessReviews::Own => "SelfSubjectAccessReview",
            AccessReviews::Named => "SubjectAccessReview",
            AccessReviews::Local => "LocalSubjectAccessReview",
        }
    }
}

impl Strategy for AccessReviews {
    fn answer(&self, review: &Value, context: &Answering<'_>) -> Option<Result<Value, ApiError>> {
        let spec = review.get("spec").cloned().unwrap_or_else(|| json!({}));
        let mut causes = Vec::new();
        let attributes = attributes_of(&spec, &mut causes);
        let named;
        let user = match self {
            AccessReviews::Own => context.user,
            AccessReviews::Named | AccessReviews::Local => {
                named = user_of(&spec);
                if named.name.is_empty() && named.groups.is_empty() {
                    causes.push(Cause::new(
                        "FieldValueInvalid",
                        "spec.user",
                        "Invalid value: \"\": at least one of user or group must be specified",
                    ));
                }
                &named
            }
        };
        if matches!(self, AccessReviews::Local) {
            if let Some(given) = spec.pointer("/resourceAttributes/namespace").map(|n| n.as_str().unwrap_or_default())
                && given != context.namespace
            {
                causes.push(Cause::new(
                    "FieldValueInvalid",
                    "spec.resourceAttributes.namespace",
                    format!("Invalid value: {}: must match metadata.namespace", go_quote(given)),
                ));
            }
            if let Some(given) = spec.get("nonResourceAttributes").filter(|a| !a.is_null()) {
                causes.push(Cause::new(
                    "FieldValueInvalid",
                    "spec.nonResourceAttributes",
                    format!("Invalid value: {given}: disallowed on this kind of request"),
                ));
            }
        }
        if !causes.is_empty() {
            return Some(Err(ApiError::invalid_kind(AUTHORIZATION, self.kind(), "", &causes)));
        }
        let decision = authorize(context.store, user, &attributes);
        let mut status = json!({ "allowed": decision.allowed() });
        if !decision.reason().is_empty() {
            status["reason"] = json!(decision.reason());
        }
        Some(Ok(status))
    }
}

/// The attributes of an access review's spec, with the causes of a spec that names neither or
/// both kinds of attributes (`ValidateSubjectAccessReviewSpec`).
fn attributes_of(spec: &Value, causes: &mut Vec<Cause>) -> Attributes {
    let resource = spec.get("resourceAttributes").filter(|a| !a.is_null());
    let non_resource = spec.get("nonResourceAttributes").filter(|a| !a.is_null());
    let text =
        |attributes: &Value, field: &str| attributes.get(field).and_then(Value::as_str).unwrap_or_default().to_string();
    match (resource, non_resource) {
        (Some(r), None) => Attributes {
            verb: text(r, "verb"),
            resource_request: true,
            namespace: text(r, "namespace"),
            group: text(r, "group"),
            version: text(r, "version"),
            resource: text(r, "resource"),
            subresource: text(r, "subresource"),
            name: text(r, "name"),
            path: String::new(),
        },
        (None, Some(n)) => Attributes::path(&text(n, "verb"), &text(n, "path")),
        (Some(_), Some(n)) => {
            causes.push(Cause::new(
                "FieldValueInvalid",
                "spec.nonResourceAttributes",
                format!("Invalid value: {n}: cannot be specified in combination with resourceAttributes"),
            ));
            Attributes::default()
        }
        (None, None) => {
            causes.push(Cause::new(
                "FieldValueInvalid",
                "spec.resourceAttributes",
                "Invalid value: \"null\": exactly one of nonResourceAttributes or resourceAttributes must be specified",
            ));
            Attributes::default()
        }
    }
}

/// The user a `SubjectAccessReview` names.
fn user_of(spec: &Value) -> User {
    let strings = |v: &Value| -> Vec<String> {
        v.as_array().into_iter().flatten().filter_map(Value::as_str).map(String::from).collect()
    };
    User {
        name: spec.get("user").and_then(Value::as_str).unwrap_or_default().to_string(),
        uid: spec.get("uid").and_then(Value::as_str).unwrap_or_default().to_string(),
        groups: spec.get("groups").map(strings).unwrap_or_default(),
        extra: spec
            .get("extra")
            .and_then(Value::as_object)
            .map(|extra| extra.iter().map(|(k, v)| (k.clone(), strings(v))).collect())
            .unwrap_or_default(),
    }
}

/// `SelfSubjectRulesReview`: the rules the caller holds in the namespace of its spec.
struct RulesReviews;

impl Strategy for RulesReviews {
    fn answer(&self, review: &Value, context: &Answering<'_>) -> Option<Result<Value, ApiError>> {
        let namespace = review.pointer("/spec/namespace").and_then(Value::as_str).unwrap_or_default();
        if namespace.is_empty() {
            return Some(Err(ApiError::bad_request("no namespace on request")));
        }
        let (rules, errors) = rules_for(context.store, context.user, namespace);
        let pick = |rule: &Value, fields: &[&str]| {
            let mut picked = serde_json::Map::new();
            for field in fields {
                if let Some(list) = rule.get(*field).filter(|l| l.as_array().is_some_and(|l| !l.is_empty())) {
                    picked.insert((*field).to_string(), list.clone());
                }
            }
            picked.entry("verbs").or_insert_with(|| json!([]));
            Value::Object(picked)
        };
        let has = |rule: &Value, field: &str| rule.get(field).and_then(Value::as_array).is_some_and(|l| !l.is_empty());
        let resource_rules: Vec<Value> = rules
            .iter()
            .filter(|r| has(r, "resources"))
            .map(|r| pick(r, &["verbs", "apiGroups", "resources", "resourceNames"]))
            .collect();
        let non_resource_rules: Vec<Value> = rules
            .iter()
            .filter(|r| has(r, "nonResourceURLs"))
            .map(|r| pick(r, &["verbs", "nonResourceURLs"]))
            .collect();
        let mut status = json!({
            "resourceRules": resource_rules,
            "nonResourceRules": non_resource_rules,
            "incomplete": false,
        });
        if !errors.is_empty() {
            status["evaluationError"] = json!(aggregate(&errors));
        }
        Some(Ok(status))
    }
}

/// `SelfSubjectReview`: who the caller is.
struct SelfSubjectReviews;

impl Strategy for SelfSubjectReviews {
    fn answer(&self, _review: &Value, context: &Answering<'_>) -> Option<Result<Value, ApiError>> {
        Some(Ok(json!({ "userInfo": user_info(context.user) })))
    }
}

/// `TokenReview`: whom a token authenticates, for the audiences asked for (the API's when none).
struct TokenReviews;

impl Strategy for TokenReviews {
    fn answer(&self, review: &Value, context: &Answering<'_>) -> Option<Result<Value, ApiError>> {
        let token = review.pointer("/spec/token").and_then(Value::as_str).unwrap_or_default();
        if token.is_empty() {
            return Some(Err(ApiError::bad_request("token is required for TokenReview in authentication.k8s.io")));
        }
        let audiences: Vec<String> =
            match crate::tokens::audience_list(&json!({ "aud": review.pointer("/spec/audiences") })) {
                given if given.is_empty() => vec![ISSUER.to_string()],
                given => given,
            };
        Some(Ok(match serviceaccounts::authenticate(context.store, context.signer, token, &audiences) {
            Ok((user, token_audiences)) => {
                let matching: Vec<&String> = token_audiences.iter().filter(|a| audiences.contains(a)).collect();
                json!({
                    "authenticated": true,
                    "user": user_info(&user.authenticated()),
                    "audiences": matching,
                })
            }
            Err(crate::tokens::TokenError::NotOurs) => json!({ "user": {}, "error": "invalid bearer token" }),
            Err(e) => json!({ "user": {}, "error": format!("[invalid bearer token, {e}]") }),
        }))
    }
}

/// A user as the reviews show it (`UserInfo`: empty fields left out).
fn user_info(user: &User) -> Value {
    let mut info = json!({ "username": user.name });
    if !user.uid.is_empty() {
        info["uid"] = json!(user.uid);
    }
    if !user.groups.is_empty() {
        info["groups"] = json!(user.groups);
    }
    if !user.extra.is_empty() {
        info["extra"] = json!(user.extra);
    }
    info
}
