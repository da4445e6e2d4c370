//! RBAC's escalation check on writes of roles and bindings
//! (`pkg/registry/rbac/*/policybased`, `pkg/registry/rbac/validation/rule.go`): a user may
//! grant only what they hold, unless allowed the `escalate` verb on the role (for roles) or
//! the `bind` verb on the role referred to (for bindings). Members of `system:masters` (and
//! the server's own writes) may grant anything.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::authorizer::{GROUP, aggregate, authorize, role_rules, rules_for, text};
use crate::access::Attributes as Access;
use crate::admission::{Attributes, Lookup, Validating};
use crate::status::{ApiError, go_quote};
use crate::user::MASTERS;

/// The admission step.
pub(crate) struct Escalation;

impl Validating for Escalation {
    fn validate(&self, a: &Attributes<'_>, obj: &Value, lookup: &dyn Lookup) -> Result<(), ApiError> {
        let plural = a.resource.plural.as_str();
        if a.resource.group != GROUP || a.user.in_group(MASTERS) {
            return Ok(());
        }
        let policies: &dyn Lookup = lookup;
        let (verb, granted, role_resource, role_name) = match plural {
            "roles" | "clusterroles" => {
                let rules = obj.get("rules").and_then(Value::as_array).cloned().unwrap_or_default();
                ("escalate", rules, plural, a.name)
            }
            "rolebindings" | "clusterrolebindings" => {
                let role = role_rules(policies, obj, a.namespace)
                    .map_err(|e| ApiError::internal(format!("Internal error occurred: {e}")));
                let role_resource = if text(obj, "/roleRef/kind") == "Role" { "roles" } else { "clusterroles" };
                let held_rules =
                    |role: &Value| role.get("rules").and_then(Value::as_array).cloned().unwrap_or_default();
                let bind = Access::resource("bind", GROUP, role_resource, a.namespace, text(obj, "/roleRef/name"));
                if authorize(policies, a.user, &bind).allowed() {
                    return Ok(());
                }
                ("", held_rules(&*role?), role_resource, text(obj, "/roleRef/name"))
            }
            _ => return Ok(()),
        };
        if !verb.is_empty()
            && authorize(policies, a.user, &Access::resource(verb, GROUP, role_resource, a.namespace, role_name))
                .allowed()
        {
            return Ok(());
        }
        let (held, errors) = rules_for(policies, a.user, a.namespace);
        let missing = uncovered(&held, &granted);
        let forbidden = |why: String| ApiError::forbidden(GROUP, plural, a.name, &why);
        if !missing.is_empty() {
            let groups: Vec<String> = a.user.groups.iter().map(|g| go_quote(g)).collect();
            let resolution = if errors.is_empty() {
                String::new()
            } else {
                format!("; resolution errors: [{}]", aggregate(&errors))
            };
            let why = format!(
                "user {} (groups=[{}]) is attempting to grant RBAC permissions not currently held:\n{}{resolution}",
                go_quote(&a.user.name),
                groups.join(" "),
                missing.join("\n")
            );
            return Err(forbidden(why));
        }
        // An aggregation rule can gather anything: it takes every permission.
        if plural == "clusterroles" && obj.get("aggregationRule").is_some_and(|r| !r.is_null()) {
            let everything = [
                json!({ "verbs": ["*"], "apiGroups": ["*"], "resources": ["*"] }),
                json!({ "verbs": ["*"], "nonResourceURLs": ["*"] }),
            ];
            if !uncovered(&held, &everything).is_empty() {
                return Err(forbidden("must have cluster-admin privileges to use the aggregationRule".into()));
            }
        }
        Ok(())
    }
}

/// The rules of `granted` no rule of `held` covers, compacted and printed as upstream's
/// message lists them (`Covers`, `CompactRules`, `CompactString`), sorted.
fn uncovered(held: &[Value], granted: &[Value]) -> Vec<String> {
    let list = |rule: &Value, field: &str| -> Vec<String> {
        rule.get(field)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(String::from)
            .collect()
    };
    // Each granted rule broken down to one group, resource, verb and name (`BreakdownRule`).
    let mut missing: Vec<Atom> = Vec::new();
    for rule in granted {
        let names = list(rule, "resourceNames");
        for group in list(rule, "apiGroups") {
            for resource in list(rule, "resources") {
                for verb in list(rule, "verbs") {
                    let atoms: Vec<Option<String>> =
                        if names.is_empty() { vec![None] } else { names.iter().cloned().map(Some).collect() };
                    for name in atoms {
                        let atom = Atom::Resource {
                            group: group.clone(),
                            resource: resource.clone(),
                            name,
                            verb: verb.clone(),
                        };
                        if !held.iter().any(|h| covers(h, &atom)) {
                            missing.push(atom);
                        }
                    }
                }
            }
        }
        for url in list(rule, "nonResourceURLs") {
            for verb in list(rule, "verbs") {
                let atom = Atom::Url { url: url.clone(), verb };
                if !held.iter().any(|h| covers(h, &atom)) {
                    missing.push(atom);
                }
            }
        }
    }
    // Rules of one group, resource and name differing by verb are printed as one.
    let mut compacted: Vec<(Atom, Vec<String>)> = Vec::new();
    for atom in missing {
        let verb = atom.verb().to_string();
        match compacted.iter_mut().find(|(a, _)| a.same_but_verb(&atom)) {
            Some((_, verbs)) => verbs.push(verb),
            None => compacted.push((atom, vec![verb])),
        }
    }
    let quoted = |items: &[String]| format!("[{}]", items.iter().map(|i| go_quote(i)).collect::<Vec<_>>().join(" "));
    let printed: BTreeSet<String> = compacted
        .iter()
        .map(|(atom, verbs)| match atom {
            Atom::Resource { group, resource, name: None, .. } => format!(
                "{{APIGroups:{}, Resources:{}, Verbs:{}}}",
                quoted(std::slice::from_ref(group)),
                quoted(std::slice::from_ref(resource)),
                quoted(verbs)
            ),
            Atom::Resource { group, resource, name: Some(name), .. } => format!(
                "{{APIGroups:{}, Resources:{}, ResourceNames:{}, Verbs:{}}}",
                quoted(std::slice::from_ref(group)),
                quoted(std::slice::from_ref(resource)),
                quoted(std::slice::from_ref(name)),
                quoted(verbs)
            ),
            Atom::Url { url, .. } => {
                format!("{{NonResourceURLs:{}, Verbs:{}}}", quoted(std::slice::from_ref(url)), quoted(verbs))
            }
        })
        .collect();
    printed.into_iter().collect()
}

/// One permission: a verb on one resource (of one name) of one group, or on one path.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Atom {
    Resource { group: String, resource: String, name: Option<String>, verb: String },
    Url { url: String, verb: String },
}

impl Atom {
    fn verb(&self) -> &str {
        match self {
            Atom::Resource { verb, .. } | Atom::Url { verb, .. } => verb,
        }
    }

    /// Whether the two differ in their verb alone (upstream compacts only resource rules).
    fn same_but_verb(&self, other: &Atom) -> bool {
        match (self, other) {
            (Atom::Resource { group, resource, name, .. }, Atom::Resource { group: g, resource: r, name: n, .. }) => {
                group == g && resource == r && name == n
            }
            _ => false,
        }
    }
}

/// Whether the held rule covers `atom` (`ruleCovers`).
fn covers(held: &Value, atom: &Atom) -> bool {
    let list = |field: &str| -> Vec<&str> {
        held.get(field).and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect()
    };
    let has = |field: &str, value: &str| list(field).contains(&value);
    if !(has("verbs", "*") || has("verbs", atom.verb())) {
        return false;
    }
    match atom {
        Atom::Resource { group, resource, name, .. } => {
            let resources = list("resources");
            let resource_covered = resources.iter().any(|r| *r == "*" || r == resource)
                || resource.split_once('/').is_some_and(|(_, sub)| resources.iter().any(|r| *r == format!("*/{sub}")));
            let names = list("resourceNames");
            let name_covered = match name {
                None => names.is_empty(),
                Some(name) => names.is_empty() || names.contains(&name.as_str()),
            };
            (has("apiGroups", "*") || has("apiGroups", group)) && resource_covered && name_covered
        }
        Atom::Url { url, .. } => {
            list("resourceNames").is_empty()
                && list("nonResourceURLs").iter().any(|owner| {
                    owner == url || owner.strip_suffix('*').is_some() && url.starts_with(owner.trim_end_matches('*'))
                })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_user_does_not_hold_is_listed_compacted_as_upstream_lists_it() {
        let held = [json!({ "verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods", "*/status"] })];
        let granted = [
            json!({ "verbs": ["get", "delete", "create"], "apiGroups": [""], "resources": ["pods", "services/status", "secrets"] }),
            json!({ "verbs": ["get"], "nonResourceURLs": ["/metrics"] }),
        ];
        assert_eq!(
            uncovered(&held, &granted),
            [
                r#"{APIGroups:[""], Resources:["pods"], Verbs:["delete" "create"]}"#,
                r#"{APIGroups:[""], Resources:["secrets"], Verbs:["get" "delete" "create"]}"#,
                r#"{APIGroups:[""], Resources:["services/status"], Verbs:["delete" "create"]}"#,
                r#"{NonResourceURLs:["/metrics"], Verbs:["get"]}"#,
            ]
        );
        assert!(
            uncovered(&[json!({ "verbs": ["*"], "apiGroups": ["*"], "resources": ["*"] })], &granted[..1]).is_empty()
        );
    }
}
