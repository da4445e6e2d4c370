//! The values of the built-in kinds' update rules as kube-apiserver prints them in a cause
//! (`field.Invalid`'s `%#v` of the internal Go type, `%q` of a string, `%v` of a number), and
//! the causes those rules share (`ValidateImmutableField`), so a refused update reads as on a
//! real cluster.

use serde_json::Value;

use crate::status::Cause;

/// `ValidateImmutableField`: `field` may not change; `shown` is the new value as printed.
pub(crate) fn immutable(field: &str, shown: &str) -> Cause {
    Cause::new("FieldValueInvalid", field, format!("Invalid value: {shown}: field is immutable"))
}

/// `field` is immutable when its new and old values differ, with the new value printed by
/// `show` (a Go pointer field: absent prints `null`).
pub(crate) fn check_immutable(
    old: &Value,
    new: &Value,
    pointer: &str,
    field: &str,
    show: impl Fn(Option<&Value>) -> String,
    causes: &mut Vec<Cause>,
) {
    let (before, after) =
        (old.pointer(pointer).filter(|v| !v.is_null()), new.pointer(pointer).filter(|v| !v.is_null()));
    if before != after {
        causes.push(immutable(field, &show(after)));
    }
}

/// A string as Go's `%q` prints it.
pub(crate) fn quote(s: &str) -> String {
    format!("{s:?}")
}

/// A scalar behind a Go pointer, as `field.Invalid` prints it: `null` when unset, strings
/// quoted, numbers and booleans bare.
pub(crate) fn scalar(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "null".to_string(),
        Some(Value::String(s)) => quote(s),
        Some(other) => other.to_string(),
    }
}

/// A `[]string`: `[]string{"a", "b"}`, or `[]string(nil)` when unset.
pub(crate) fn strings(v: Option<&Value>) -> String {
    match v.and_then(Value::as_array) {
        None => "[]string(nil)".to_string(),
        Some(items) => {
            let items: Vec<String> = items.iter().map(|i| quote(i.as_str().unwrap_or_default())).collect();
            format!("[]string{{{}}}", items.join(", "))
        }
    }
}

/// A `map[string]string`, keys sorted as `fmt` sorts them; `map[string]string(nil)` unset.
fn string_map(v: Option<&Value>) -> String {
    match v.and_then(Value::as_object) {
        None => "map[string]string(nil)".to_string(),
        Some(map) => {
            let mut pairs: Vec<(&String, String)> =
                map.iter().map(|(k, v)| (k, quote(v.as_str().unwrap_or_default()))).collect();
            pairs.sort();
            let pairs: Vec<String> = pairs.into_iter().map(|(k, v)| format!("{}:{v}", quote(k))).collect();
            format!("map[string]string{{{}}}", pairs.join(", "))
        }
    }
}

/// A `metav1.LabelSelector` behind a pointer: `null`, or
/// `v1.LabelSelector{MatchLabels:map[string]string{...}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}`.
pub(crate) fn label_selector(v: Option<&Value>) -> String {
    let Some(sel) = v.filter(|v| !v.is_null()) else {
        return "null".to_string();
    };
    let expressions = match sel.get("matchExpressions").and_then(Value::as_array) {
        None => "[]v1.LabelSelectorRequirement(nil)".to_string(),
        Some(list) => {
            let items: Vec<String> = list
                .iter()
                .map(|r| {
                    let text = |f: &str| quote(r.get(f).and_then(Value::as_str).unwrap_or_default());
                    format!(
                        "v1.LabelSelectorRequirement{{Key:{}, Operator:{}, Values:{}}}",
                        text("key"),
                        text("operator"),
                        strings(r.get("values"))
                    )
                })
                .collect();
            format!("[]v1.LabelSelectorRequirement{{{}}}", items.join(", "))
        }
    };
    format!("v1.LabelSelector{{MatchLabels:{}, MatchExpressions:{expressions}}}", string_map(sel.get("matchLabels")))
}

/// An internal RBAC `RoleRef`: `rbac.RoleRef{APIGroup:"...", Kind:"...", Name:"..."}`.
pub(crate) fn role_ref(v: Option<&Value>) -> String {
    let text = |f: &str| quote(v.and_then(|r| r.get(f)).and_then(Value::as_str).unwrap_or_default());
    format!("rbac.RoleRef{{APIGroup:{}, Kind:{}, Name:{}}}", text("apiGroup"), text("kind"), text("name"))
}

/// A struct too large to print whole (a pod template): its Go type and an ellipsis, where the
/// real server prints every field. Clients match the start and end of such a message.
pub(crate) fn abridged(go_type: &'static str) -> impl Fn(Option<&Value>) -> String {
    move |v| if v.is_none_or(Value::is_null) { "null".to_string() } else { format!("{go_type}{{...}}") }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_label_selector_prints_as_go_prints_it() {
        let sel = json!({"matchLabels": {"tier": "web", "app": "x"}});
        assert_eq!(
            label_selector(Some(&sel)),
            "v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"x\", \"tier\":\"web\"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}"
        );
        let sel = json!({"matchExpressions": [{"key": "k", "operator": "In", "values": ["a"]}]});
        assert_eq!(
            label_selector(Some(&sel)),
            "v1.LabelSelector{MatchLabels:map[string]string(nil), MatchExpressions:[]v1.LabelSelectorRequirement{v1.LabelSelectorRequirement{Key:\"k\", Operator:\"In\", Values:[]string{\"a\"}}}}"
        );
        assert_eq!(label_selector(None), "null");
    }
}
