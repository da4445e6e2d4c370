//! The cluster role aggregation controller (kube-controller-manager's
//! `pkg/controller/clusterroleaggregation`): a cluster role with an `aggregationRule` holds the
//! rules of every cluster role its selectors match, so that `view` flows into `edit` and `edit`
//! into `admin`, and a CRD's roles labelled `aggregate-to-view` extend all three.

use serde_json::{Value, json};

use super::authorizer::{GROUP, resource};
use crate::object;
use crate::resource::GroupResource;
use crate::selectors::LabelSelector;
use crate::store::Store;
use crate::strategy::{Controller, How, Write};

/// The field manager of its writes.
const MANAGER: &str = "clusterrole-aggregation-controller";

/// The fields of a rule the controller copies.
const RULE_FIELDS: &[&str] = &["verbs", "apiGroups", "resources", "resourceNames", "nonResourceURLs"];

pub(in crate::kinds) struct Aggregation;

impl Controller for Aggregation {
    fn watches(&self) -> Vec<GroupResource> {
        vec![resource("clusterroles")]
    }

    /// For every aggregated role, the rules of the roles each selector matches, in selector
    /// order, each selector's roles by name, the role itself skipped and exact duplicates
    /// dropped (`syncClusterRole`); applied when they differ from what the role holds.
    fn reconcile(&self, store: &Store) -> Vec<Write> {
        let roles = store.list(&resource("clusterroles"), None);
        let mut writes = Vec::new();
        for role in &roles {
            let Some(selectors) = role.pointer("/aggregationRule/clusterRoleSelectors").and_then(Value::as_array)
            else {
                continue;
            };
            let mut aggregated: Vec<Value> = Vec::new();
            for selector in selectors {
                let Ok(selector) = LabelSelector::from_object(selector) else {
                    continue;
                };
                for other in roles.iter().filter(|r| object::name(r) != object::name(role)) {
                    if !selector.matches(&object::labels(other)) {
                        continue;
                    }
                    for rule in other.get("rules").and_then(Value::as_array).into_iter().flatten() {
                        let rule = copied(rule);
                        if !aggregated.contains(&rule) {
                            aggregated.push(rule);
                        }
                    }
                }
            }
            let held: Vec<Value> =
                role.get("rules").and_then(Value::as_array).into_iter().flatten().map(copied).collect();
            if held == aggregated {
                continue;
            }
            let name = object::name(role).to_string();
            writes.push(Write {
                resource: resource("clusterroles"),
                namespace: String::new(),
                name: name.clone(),
                manager: MANAGER,
                how: How::Apply(json!({
                    "apiVersion": format!("{GROUP}/v1"),
                    "kind": "ClusterRole",
                    "metadata": { "name": name },
                    "rules": aggregated,
                })),
            });
        }
        writes
    }
}

/// A rule with only the fields the controller copies, empty lists left out (Go's semantic
/// equality takes an empty list for an absent one).
fn copied(rule: &Value) -> Value {
    let mut out = serde_json::Map::new();
    for field in RULE_FIELDS {
        if let Some(list) = rule.get(*field).and_then(Value::as_array).filter(|l| !l.is_empty()) {
            out.insert((*field).to_string(), json!(list));
        }
    }
    Value::Object(out)
}
