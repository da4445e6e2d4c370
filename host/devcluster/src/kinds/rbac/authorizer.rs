//! Authorization as kube-apiserver's chain decides it: members of `system:masters` may do
//! anything (the privileged-group authorizer), everyone else what the rules of the roles bound
//! to them grant (the RBAC authorizer, `plugin/pkg/auth/authorizer/rbac/rbac.go`, over the rule
//! resolution of `pkg/registry/rbac/validation/rule.go` and the matching of
//! `pkg/apis/rbac/v1/evaluation_helpers.go`). Nothing is denied outright: what no rule allows
//! has no opinion, and is refused.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::access::{Attributes, Decision};
use crate::admission::Lookup;
use crate::resource::GroupResource;
use crate::status::go_quote;
use crate::store::Store;
use crate::user::{MASTERS, User, service_account_name};

pub(super) const GROUP: &str = "rbac.authorization.k8s.io";

pub(super) fn resource(plural: &str) -> GroupResource {
    (GROUP.to_string(), plural.to_string())
}

/// Where roles and bindings are read: the store, for a request's authorization, or admission's
/// view of it, for the escalation check of an RBAC write.
pub(crate) trait Policies {
    fn get(&self, resource: &GroupResource, namespace: &str, name: &str) -> Option<Arc<Value>>;
    fn list(&self, resource: &GroupResource, namespace: Option<&str>) -> Vec<Arc<Value>>;
}

impl Policies for Store {
    fn get(&self, resource: &GroupResource, namespace: &str, name: &str) -> Option<Arc<Value>> {
        Store::get(self, resource, namespace, name)
    }

    fn list(&self, resource: &GroupResource, namespace: Option<&str>) -> Vec<Arc<Value>> {
        Store::list(self, resource, namespace)
    }
}

impl Policies for dyn Lookup + '_ {
    fn get(&self, resource: &GroupResource, namespace: &str, name: &str) -> Option<Arc<Value>> {
        self.object(resource, namespace, name)
    }

    fn list(&self, resource: &GroupResource, namespace: Option<&str>) -> Vec<Arc<Value>> {
        self.objects(resource, namespace)
    }
}

/// Whether `user` may do what `attributes` say, and why.
pub(crate) fn authorize<P: Policies + ?Sized>(policies: &P, user: &User, attributes: &Attributes) -> Decision {
    if user.in_group(MASTERS) {
        return Decision::Allow(String::new());
    }
    let mut allowed_by = None;
    let errors = visit_rules(policies, user, &attributes.namespace, &mut |source, rule| {
        if rule_allows(attributes, rule) {
            allowed_by = Some(source.to_string());
            return false;
        }
        true
    });
    match allowed_by {
        Some(source) => Decision::Allow(format!("RBAC: allowed by {source}")),
        None if errors.is_empty() => Decision::NoOpinion(String::new()),
        None => Decision::NoOpinion(format!("RBAC: {}", aggregate(&errors))),
    }
}

/// The rules `user` holds in `namespace` (every namespace's, for cluster bindings): a
/// `SelfSubjectRulesReview`'s answer, the privileged group's grant first. The errors are those
/// of bindings whose role is missing.
pub(crate) fn rules_for<P: Policies + ?Sized>(policies: &P, user: &User, namespace: &str) -> (Vec<Value>, Vec<String>) {
    let mut rules = Vec::new();
    if user.in_group(MASTERS) {
        rules.push(json!({ "verbs": ["*"], "apiGroups": ["*"], "resources": ["*"] }));
        rules.push(json!({ "verbs": ["*"], "nonResourceURLs": ["*"] }));
    }
    let errors = visit_rules(policies, user, namespace, &mut |_, rule| {
        rules.push(rule.clone());
        true
    });
    (rules, errors)
}

/// A list of errors as Go's `utilerrors.NewAggregate` prints it: one alone, several in brackets.
pub(crate) fn aggregate(errors: &[String]) -> String {
    match errors {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// Calls `visitor` with each rule that applies to `user` in `namespace` and the binding it comes
/// from, cluster role bindings first, until the visitor answers `false`. Returns the errors met
/// on the way (a binding to a role that does not exist).
fn visit_rules<P: Policies + ?Sized>(
    policies: &P,
    user: &User,
    namespace: &str,
    visitor: &mut dyn FnMut(&str, &Value) -> bool,
) -> Vec<String> {
    let mut errors = Vec::new();
    for binding in policies.list(&resource("clusterrolebindings"), None) {
        let Some(subject) = applying_subject(&binding, user, "") else {
            continue;
        };
        let source = format!(
            "ClusterRoleBinding {} of {} {} to {}",
            go_quote(text(&binding, "/metadata/name")),
            text(&binding, "/roleRef/kind"),
            go_quote(text(&binding, "/roleRef/name")),
            describe_subject(subject, "")
        );
        match role_rules(policies, &binding, "") {
            Ok(role) => {
                for rule in rules_of(&role) {
                    if !visitor(&source, rule) {
                        return errors;
                    }
                }
            }
            Err(e) => errors.push(e),
        }
    }
    if namespace.is_empty() {
        return errors;
    }
    for binding in policies.list(&resource("rolebindings"), Some(namespace)) {
        let Some(subject) = applying_subject(&binding, user, namespace) else {
            continue;
        };
        let source = format!(
            "RoleBinding {} of {} {} to {}",
            go_quote(&format!("{}/{namespace}", text(&binding, "/metadata/name"))),
            text(&binding, "/roleRef/kind"),
            go_quote(text(&binding, "/roleRef/name")),
            describe_subject(subject, namespace)
        );
        match role_rules(policies, &binding, namespace) {
            Ok(role) => {
                for rule in rules_of(&role) {
                    if !visitor(&source, rule) {
                        return errors;
                    }
                }
            }
            Err(e) => errors.push(e),
        }
    }
    errors
}

pub(super) fn rules_of(role: &Value) -> &[Value] {
    role.get("rules").and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// The role a binding refers to (`GetRoleReferenceRules`).
pub(super) fn role_rules<P: Policies + ?Sized>(
    policies: &P,
    binding: &Value,
    namespace: &str,
) -> Result<Arc<Value>, String> {
    let name = text(binding, "/roleRef/name");
    let (found, singular) = match text(binding, "/roleRef/kind") {
        "ClusterRole" => (policies.get(&resource("clusterroles"), "", name), "clusterrole"),
        "Role" => (policies.get(&resource("roles"), namespace, name), "role"),
        other => return Err(format!("unsupported role reference kind: {}", go_quote(other))),
    };
    found.ok_or_else(|| format!("{singular}.{GROUP} {} not found", go_quote(name)))
}

/// The first subject of `binding` that is `user` (`appliesTo`).
fn applying_subject<'a>(binding: &'a Value, user: &User, namespace: &str) -> Option<&'a Value> {
    binding.get("subjects")?.as_array()?.iter().find(|s| applies_to_user(s, user, namespace))
}

fn applies_to_user(subject: &Value, user: &User, namespace: &str) -> bool {
    let name = text(subject, "/name");
    match text(subject, "/kind") {
        "User" => user.name == name,
        "Group" => user.in_group(name),
        "ServiceAccount" => {
            let sa_namespace = match text(subject, "/namespace") {
                "" => namespace,
                given => given,
            };
            !sa_namespace.is_empty() && user.name == service_account_name(sa_namespace, name)
        }
        _ => false,
    }
}

/// A subject as an allowed reason names it (`describeSubject`): service accounts as
/// `name/namespace`.
fn describe_subject(subject: &Value, binding_namespace: &str) -> String {
    let kind = text(subject, "/kind");
    let name = text(subject, "/name");
    if kind == "ServiceAccount" {
        let namespace = match text(subject, "/namespace") {
            "" => binding_namespace,
            given => given,
        };
        return format!("{kind} {}", go_quote(&format!("{name}/{namespace}")));
    }
    format!("{kind} {}", go_quote(name))
}

/// Whether `rule` allows the access (`RuleAllows`).
pub(crate) fn rule_allows(a: &Attributes, rule: &Value) -> bool {
    let list = |field: &str| -> Vec<&str> {
        rule.get(field).and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect()
    };
    let verb_matches = list("verbs").iter().any(|v| *v == "*" || *v == a.verb);
    if !verb_matches {
        return false;
    }
    if !a.resource_request {
        return list("nonResourceURLs").iter().any(|url| {
            *url == "*"
                || *url == a.path
                || url.strip_suffix('*').is_some_and(|_| a.path.starts_with(url.trim_end_matches('*')))
        });
    }
    let combined = a.combined_resource();
    let resource_matches = list("resources").iter().any(|r| {
        *r == "*"
            || *r == combined
            || (!a.subresource.is_empty()
                && r.len() == a.subresource.len() + 2
                && r.starts_with("*/")
                && r.ends_with(&a.subresource))
    });
    let names = list("resourceNames");
    list("apiGroups").iter().any(|g| *g == "*" || *g == a.group)
        && resource_matches
        && (names.is_empty() || names.contains(&a.name.as_str()))
}

pub(super) fn text<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer).and_then(Value::as_str).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(v: Value) -> Value {
        v
    }

    #[test]
    fn rules_match_as_upstream_evaluation_helpers_match_them() {
        let pods = Attributes::resource("get", "", "pods", "default", "p");
        let logs = Attributes::resource("get", "", "pods/log", "default", "p");
        assert!(rule_allows(&pods, &rule(json!({ "verbs": ["get"], "apiGroups": [""], "resources": ["pods"] }))));
        assert!(!rule_allows(&logs, &rule(json!({ "verbs": ["get"], "apiGroups": [""], "resources": ["pods"] }))));
        assert!(rule_allows(&logs, &rule(json!({ "verbs": ["*"], "apiGroups": [""], "resources": ["*/log"] }))));
        assert!(rule_allows(&logs, &rule(json!({ "verbs": ["get"], "apiGroups": ["*"], "resources": ["*"] }))));
        assert!(!rule_allows(&pods, &rule(json!({ "verbs": ["get"], "apiGroups": ["apps"], "resources": ["pods"] }))));
        let named = json!({ "verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "resourceNames": ["q"] });
        assert!(!rule_allows(&pods, &named));
        assert!(rule_allows(&Attributes::resource("get", "", "pods", "default", "q"), &named));

        let apis = json!({ "verbs": ["get"], "nonResourceURLs": ["/apis/*"] });
        assert!(rule_allows(&Attributes::path("get", "/apis/apps"), &apis));
        assert!(!rule_allows(&Attributes::path("get", "/apis"), &apis));
        assert!(!rule_allows(&Attributes::path("post", "/apis/apps"), &apis));
    }
}
