//! `rbac.authorization.k8s.io/v1`: the roles and bindings (names are path segments, their
//! printers), what they grant (`authorizer`), that a write of them grants only what its writer
//! holds (`escalation`), the roles and bindings of a new cluster (`bootstrap`) and the
//! aggregation of cluster roles (`aggregation`).

mod aggregation;
mod authorizer;
mod bootstrap;
mod escalation;

pub(super) use self::aggregation::Aggregation;
pub(crate) use self::authorizer::{aggregate, authorize, rules_for};
pub(super) use self::bootstrap::objects as bootstrap_objects;
pub(super) use self::escalation::Escalation;

use serde_json::{Value, json};

use super::go_value::role_ref;
use crate::names::NameRule;
use crate::printers::{Columns, age, age_column, column, doc, name, name_column, text};
use crate::status::Cause;
use crate::strategy::Strategy;

pub(crate) struct Roles;

impl Strategy for Roles {
    fn name_rule(&self) -> NameRule {
        NameRule::PathSegment
    }

    fn columns(&self) -> Columns {
        Columns::created_at()
    }
}

pub(crate) struct Bindings;

impl Strategy for Bindings {
    fn name_rule(&self) -> NameRule {
        NameRule::PathSegment
    }

    /// `ValidateRoleBindingUpdate` and `ValidateClusterRoleBindingUpdate`: a binding keeps
    /// its role; its subjects may change.
    fn validate_update(&self, old: &Value, new: &Value) -> Vec<Cause> {
        if old.get("roleRef") == new.get("roleRef") {
            return Vec::new();
        }
        vec![Cause::new(
            "FieldValueInvalid",
            "roleRef",
            format!("Invalid value: {}: cannot change roleRef", role_ref(new.get("roleRef"))),
        )]
    }

    fn columns(&self) -> Columns {
        Columns {
            defs: vec![
                name_column(),
                column("Role", "string", &doc("io.k8s.api.rbac.v1.RoleBinding", "roleRef"), 0),
                age_column(),
                column("Users", "string", "Users in the roleBinding", 1),
                column("Groups", "string", "Groups in the roleBinding", 1),
                column("ServiceAccounts", "string", "ServiceAccounts in the roleBinding", 1),
            ],
            cells: Box::new(|o| {
                let subjects = |kind: &str| {
                    o.get("subjects")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter(|s| s.get("kind").and_then(Value::as_str) == Some(kind))
                        .map(|s| {
                            let name = s.get("name").and_then(Value::as_str).unwrap_or_default();
                            match s.get("namespace").and_then(Value::as_str) {
                                Some(ns) if kind == "ServiceAccount" => format!("{ns}/{name}"),
                                _ => name.to_string(),
                            }
                        })
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                vec![
                    name(o),
                    json!(format!("{}/{}", text(o, "/roleRef/kind"), text(o, "/roleRef/name"))),
                    age(o),
                    json!(subjects("User")),
                    json!(subjects("Group")),
                    json!(subjects("ServiceAccount")),
                ]
            }),
        }
    }
}

/// The other RBAC kinds follow the same name rule.
pub(crate) struct Other;

impl Strategy for Other {
    fn name_rule(&self) -> NameRule {
        NameRule::PathSegment
    }
}
