//! `x-kubernetes-validations`: the CEL rules of a CRD's structural schema, compiled when the
//! CRD is written (its errors refuse the CRD) and evaluated on every write of a custom resource
//! as apiextensions-apiserver's `schema/cel` validator does: depth first, `self` the node's
//! value with property names escaped, transition rules (`oldSelf`) only where the old object
//! has a value at the same place, ratcheting of unchanged values, and causes worded as the
//! real server words them (the schema type as the value, `<nil>` for the root).
//!
//! Not done: the estimated and runtime cost limits (the `cel` crate has no cost model), type
//! checking at compile time (a rule naming an unknown field fails when evaluated), the
//! `Warning` a ratcheted rule gets upstream, and typed `date-time`/`duration`/`byte` strings
//! (they are strings here).

use std::fmt::Write as _;

use serde_json::Value;

use crate::cel::{self, CelValue, Expression};
use crate::status::Cause;

/// The compiled rules of one version's schema: a tree that follows the schema.
#[derive(Default)]
pub(super) struct Rules {
    root: Node,
}

#[derive(Default)]
struct Node {
    /// The schema's `type` (`""` for an int-or-string), printed as the value of a cause.
    ty: String,
    rules: Vec<Rule>,
    /// Declared properties; an object that has them shows CEL only these, names escaped.
    properties: Vec<(String, Node)>,
    items: Option<Box<Node>>,
    additional: Option<Box<Node>>,
    /// The keys of an `x-kubernetes-list-type: map` list, whose items correlate with the old
    /// list's by key; `None` for lists whose items do not correlate.
    map_keys: Option<Vec<String>>,
    /// `x-kubernetes-embedded-resource`: `apiVersion`, `kind` and `metadata.name` are readable.
    embedded: bool,
}

struct Rule {
    expression: Expression,
    message: String,
    message_expression: Option<Expression>,
    reason: String,
    /// `fieldPath` without its leading dot.
    field_path: String,
    optional_old_self: bool,
}

impl Rule {
    fn transition(&self) -> bool {
        self.expression.uses("oldSelf")
    }

    /// `ruleErrorString`: the message, or the rule.
    fn error_string(&self) -> &str {
        if self.message.is_empty() { self.expression.source.trim() } else { &self.message }
    }
}

impl Rules {
    /// Compiles the rules of `schema`; the causes name where each bad rule sits under `at`
    /// (the schema's path in the CRD).
    pub(super) fn compile(schema: &Value, at: &str) -> Result<Rules, Vec<Cause>> {
        let mut causes = Vec::new();
        let root = compile_node(schema, at, None, &mut causes);
        if causes.is_empty() { Ok(Rules { root }) } else { Err(causes) }
    }

    /// The rules of `schema` that compile (a stored CRD's, checked when it was written).
    pub(super) fn compile_lenient(schema: &Value) -> Rules {
        Rules { root: compile_node(schema, "", None, &mut Vec::new()) }
    }

    pub(super) fn is_empty(&self) -> bool {
        fn empty(n: &Node) -> bool {
            n.rules.is_empty()
                && n.properties.iter().all(|(_, p)| empty(p))
                && n.items.as_deref().is_none_or(empty)
                && n.additional.as_deref().is_none_or(empty)
        }
        empty(&self.root)
    }

    /// The causes of the rules `obj` fails; `old` is the object as stored, on an update.
    pub(super) fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        let mut causes = Vec::new();
        walk(&self.root, obj, old, None, true, &mut causes);
        causes
    }
}

/// The rules of the node at schema path `at`, and of its children; `uncorrelatable` is the path
/// of the nearest list above whose items do not correlate with an old object's.
fn compile_node(schema: &Value, at: &str, uncorrelatable: Option<&str>, causes: &mut Vec<Cause>) -> Node {
    let mut node = Node {
        ty: schema.get("type").and_then(Value::as_str).unwrap_or_default().to_string(),
        embedded: schema.get("x-kubernetes-embedded-resource").and_then(Value::as_bool) == Some(true),
        ..Node::default()
    };
    for (i, rule) in schema.get("x-kubernetes-validations").and_then(Value::as_array).into_iter().flatten().enumerate()
    {
        let path = format!("{at}.x-kubernetes-validations[{i}]");
        if let Some(rule) = compile_rule(rule, &path, uncorrelatable, causes) {
            node.rules.push(rule);
        }
    }
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (name, prop) in props {
            let child = compile_node(prop, &format!("{at}.properties[{name}]"), uncorrelatable, causes);
            node.properties.push((name.clone(), child));
        }
    }
    if let Some(items) = schema.get("items").filter(|i| i.is_object()) {
        let list_type = schema.get("x-kubernetes-list-type").and_then(Value::as_str).unwrap_or("atomic");
        let keys: Vec<String> = schema
            .get("x-kubernetes-list-map-keys")
            .and_then(Value::as_array)
            .map(|k| k.iter().filter_map(Value::as_str).map(String::from).collect())
            .unwrap_or_default();
        let items_at = format!("{at}.items");
        let below = if list_type == "map" { uncorrelatable } else { Some(uncorrelatable.unwrap_or(&items_at)) };
        node.map_keys = (list_type == "map").then_some(keys);
        node.items = Some(Box::new(compile_node(items, &items_at, below, causes)));
    }
    if let Some(extra) = schema.get("additionalProperties").filter(|e| e.is_object()) {
        node.additional =
            Some(Box::new(compile_node(extra, &format!("{at}.additionalProperties"), uncorrelatable, causes)));
    }
    node
}

/// One rule, or the causes of a 422 for the CRD that declares it.
fn compile_rule(rule: &Value, at: &str, uncorrelatable: Option<&str>, causes: &mut Vec<Cause>) -> Option<Rule> {
    let text = |f: &str| rule.get(f).and_then(Value::as_str).unwrap_or_default().to_string();
    let source = text("rule");
    let expression = match Expression::compile(&source) {
        Ok(e) => e,
        Err(e) => {
            causes.push(Cause::new(
                "FieldValueInvalid",
                format!("{at}.rule"),
                format!("Invalid value: {}: compilation failed: {e}", go_rule(rule)),
            ));
            return None;
        }
    };
    let message_expression = match text("messageExpression") {
        m if m.is_empty() => None,
        m => match Expression::compile(&m) {
            Ok(e) => Some(e),
            Err(e) => {
                causes.push(Cause::new(
                    "FieldValueInvalid",
                    format!("{at}.messageExpression"),
                    format!("Invalid value: {m:?}: messageExpression compilation failed: {e}"),
                ));
                return None;
            }
        },
    };
    let optional_old_self = rule.get("optionalOldSelf").and_then(Value::as_bool) == Some(true);
    let transition = expression.uses("oldSelf");
    if optional_old_self && !transition {
        causes.push(Cause::new(
            "FieldValueInvalid",
            format!("{at}.optionalOldSelf"),
            "Invalid value: true: may not be set if oldSelf is not used in rule",
        ));
        return None;
    }
    if transition && let Some(list) = uncorrelatable {
        causes.push(Cause::new(
            "FieldValueInvalid",
            format!("{at}.rule"),
            format!(
                "Invalid value: {source:?}: oldSelf cannot be used on the uncorrelatable portion of the schema within {list}"
            ),
        ));
        return None;
    }
    Some(Rule {
        expression,
        message: text("message").trim().to_string(),
        message_expression,
        reason: text("reason"),
        field_path: text("fieldPath").trim_start_matches('.').to_string(),
        optional_old_self,
    })
}

/// A rule as Go prints the internal `apiextensions.ValidationRule` (`%#v`), as the real server
/// shows a rule that does not compile.
fn go_rule(rule: &Value) -> String {
    let text = |f: &str| format!("{:?}", rule.get(f).and_then(Value::as_str).unwrap_or_default());
    let pointer = |f: &str, ty: &str| match rule.get(f) {
        Some(v) if !v.is_null() => format!("(*{ty})(0xc000000000)"),
        _ => format!("(*{ty})(nil)"),
    };
    format!(
        "apiextensions.ValidationRule{{Rule:{}, Message:{}, MessageExpression:{}, Reason:{}, FieldPath:{}, OptionalOldSelf:{}}}",
        text("rule"),
        text("message"),
        text("messageExpression"),
        pointer("reason", "apiextensions.FieldValueErrorReason"),
        text("fieldPath"),
        pointer("optionalOldSelf", "bool"),
    )
}

/// A path as `field.Path` prints it; `None` is the root, a nil path.
fn shown(path: Option<&str>) -> String {
    path.map_or_else(|| "<nil>".to_string(), str::to_string)
}

fn child(path: Option<&str>, name: &str) -> String {
    match path {
        None => name.to_string(),
        Some(p) => format!("{p}.{name}"),
    }
}

/// Evaluates the rules of `node` on `value` and then of its children, depth first.
fn walk(node: &Node, value: &Value, old: Option<&Value>, path: Option<&str>, root: bool, causes: &mut Vec<Cause>) {
    if value.is_null() {
        return;
    }
    if !node.rules.is_empty() {
        let this = to_cel(node, value, root);
        let before = old.map(|o| to_cel(node, o, root));
        for rule in &node.rules {
            if let Some(cause) =
                evaluate(node, rule, &this, before.as_ref(), path, value == old.unwrap_or(&Value::Null))
            {
                causes.push(cause);
            }
        }
    }
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                if root && key == "metadata" {
                    continue;
                }
                let declared = node.properties.iter().find(|(name, _)| name == key).map(|(_, n)| n);
                let Some(child_node) = declared.or(node.additional.as_deref()) else {
                    continue;
                };
                let key_path = if declared.is_some() { child(path, key) } else { format!("{}[{key}]", shown(path)) };
                walk(child_node, v, old.and_then(|o| o.get(key)), Some(&key_path), false, causes);
            }
        }
        Value::Array(items) => {
            let Some(item_node) = node.items.as_deref() else {
                return;
            };
            for (i, item) in items.iter().enumerate() {
                let before = node.map_keys.as_ref().and_then(|keys| {
                    old.and_then(Value::as_array)?.iter().find(|o| keys.iter().all(|k| o.get(k) == item.get(k)))
                });
                walk(item_node, item, before, Some(&format!("{}[{i}]", shown(path))), false, causes);
            }
        }
        _ => {}
    }
}

/// One rule on one value: `None` when it holds, or is not evaluated (a transition rule without
/// an old value, or a rule whose value did not change: ratcheting).
fn evaluate(
    node: &Node,
    rule: &Rule,
    this: &CelValue,
    before: Option<&CelValue>,
    path: Option<&str>,
    unchanged: bool,
) -> Option<Cause> {
    let transition = rule.transition();
    let mut variables = vec![("self", this.clone())];
    match (transition, rule.optional_old_self, before) {
        (false, _, _) => {}
        (true, true, before) => variables.push(("oldSelf", cel::optional(before.cloned()))),
        (true, false, Some(before)) => variables.push(("oldSelf", before.clone())),
        (true, false, None) => return None,
    }
    let value = format!("{:?}", node.ty);
    let invalid =
        |message: String| Cause::new("FieldValueInvalid", shown(path), format!("Invalid value: {value}: {message}"));
    let failed = match rule.expression.eval(&variables) {
        Ok(CelValue::Bool(true)) => return None,
        Ok(CelValue::Bool(false)) => true,
        Ok(_) => {
            return Some(invalid(format!("rule did not evaluate to a boolean for rule: {}", rule.error_string())));
        }
        Err(e) if e.starts_with("no such overload") => {
            return Some(invalid(format!(
                "'{e}': call arguments did not match a supported operator, function or macro signature for rule: {}",
                rule.error_string()
            )));
        }
        Err(e) => return Some(invalid(format!("{e} evaluating rule: {}", rule.error_string()))),
    };
    // `CRDValidationRatcheting`: a rule that does not read the old value, failing on a value
    // the update did not change, lets the update through.
    if failed && !transition && unchanged && before.is_some() {
        return None;
    }
    let message = rule
        .message_expression
        .as_ref()
        .and_then(|m| m.eval(&variables).ok())
        .and_then(|v| cel::as_string(&v).map(|s| s.trim().to_string()))
        .filter(|s| !s.is_empty() && !s.contains('\n') && s.len() <= 5 * 1024)
        .unwrap_or_else(|| {
            if rule.message.is_empty() { format!("failed rule: {}", rule.error_string()) } else { rule.message.clone() }
        });
    let field = if rule.field_path.is_empty() { shown(path) } else { child(path, &rule.field_path) };
    Some(match rule.reason.as_str() {
        "FieldValueForbidden" => Cause::new("FieldValueForbidden", field, format!("Forbidden: {message}")),
        "FieldValueRequired" => Cause::new("FieldValueRequired", field, format!("Required value: {message}")),
        "FieldValueDuplicate" => Cause::new("FieldValueDuplicate", field, format!("Duplicate value: {value}")),
        _ => Cause::new("FieldValueInvalid", field, format!("Invalid value: {value}: {message}")),
    })
}

/// A value as a rule sees it: declared properties under their escaped names (of a resource's
/// metadata, only `name` and `generateName`), maps with their keys, lists of items.
fn to_cel(node: &Node, value: &Value, resource: bool) -> CelValue {
    match value {
        Value::Object(map) if !node.properties.is_empty() || resource || node.embedded => {
            let fields = map.iter().filter_map(|(key, v)| {
                if (resource || node.embedded) && key == "metadata" {
                    let names = ["name", "generateName"]
                        .into_iter()
                        .filter_map(|f| Some((f.to_string(), cel::value(v.get(f)?))));
                    return Some((key.clone(), cel::object(names)));
                }
                if (resource || node.embedded) && (key == "apiVersion" || key == "kind") {
                    return Some((key.clone(), cel::value(v)));
                }
                let (_, prop) = node.properties.iter().find(|(name, _)| name == key)?;
                Some((escape(key)?, to_cel(prop, v, false)))
            });
            cel::object(fields.collect::<Vec<_>>().into_iter())
        }
        Value::Object(map) => match node.additional.as_deref() {
            Some(extra) => cel::object(map.iter().map(|(k, v)| (k.clone(), to_cel(extra, v, false)))),
            None => cel::value(value),
        },
        Value::Array(items) => match node.items.as_deref() {
            Some(item) => cel::list(items.iter().map(|v| to_cel(item, v, false)).collect()),
            None => cel::value(value),
        },
        Value::Number(n) if node.ty == "number" => CelValue::Float(n.as_f64().unwrap_or_default()),
        other => cel::value(other),
    }
}

/// A property name as CEL reads it (`__`, `.`, `-` and `/` spelled out, reserved words
/// wrapped in `__`); `None` for a name no expression can read.
fn escape(name: &str) -> Option<String> {
    const RESERVED: [&str; 21] = [
        "true",
        "false",
        "null",
        "in",
        "as",
        "break",
        "const",
        "continue",
        "else",
        "for",
        "function",
        "if",
        "import",
        "let",
        "loop",
        "package",
        "namespace",
        "return",
        "var",
        "void",
        "while",
    ];
    if RESERVED.contains(&name) {
        return Some(format!("__{name}__"));
    }
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | '/');
    let first_ok = name.chars().next().is_some_and(|c| !c.is_ascii_digit() && allowed(c));
    if !first_ok || !name.chars().all(allowed) {
        return None;
    }
    let mut out = String::new();
    let mut rest = name;
    while let Some(c) = rest.chars().next() {
        if rest.starts_with("__") {
            out.push_str("__underscores__");
            rest = &rest[2..];
            continue;
        }
        match c {
            '.' => out.push_str("__dot__"),
            '-' => out.push_str("__dash__"),
            '/' => out.push_str("__slash__"),
            c => {
                let _ = write!(out, "{c}");
            }
        }
        rest = &rest[c.len_utf8()..];
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema(rules: &Value) -> Value {
        json!({"type": "object", "properties": {"spec": {"type": "object", "x-kubernetes-validations": rules,
            "properties": {"replicas": {"type": "integer"}, "maxReplicas": {"type": "integer"}, "name": {"type": "string"},
                "x-y": {"type": "string"}}}}})
    }

    fn lines(causes: &[Cause]) -> Vec<String> {
        causes.iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
    }

    #[test]
    fn a_failing_rule_prints_the_schema_type_and_its_message() {
        let rules = Rules::compile(
            &schema(
                &json!([{"rule": "self.replicas <= self.maxReplicas", "message": "replicas must be <= maxReplicas"}]),
            ),
            "",
        )
        .unwrap();
        let obj = json!({"spec": {"replicas": 5, "maxReplicas": 3}});
        assert_eq!(
            lines(&rules.validate(&obj, None)),
            ["spec: Invalid value: \"object\": replicas must be <= maxReplicas"]
        );
        assert!(rules.validate(&json!({"spec": {"replicas": 1, "maxReplicas": 3}}), None).is_empty());
    }

    #[test]
    fn a_root_rule_reports_a_nil_path() {
        let schema = json!({"type": "object", "x-kubernetes-validations": [{"rule": "has(self.spec)"}],
            "properties": {"spec": {"type": "object"}}});
        let rules = Rules::compile(&schema, "").unwrap();
        assert_eq!(
            lines(&rules.validate(&json!({"metadata": {"name": "x"}}), None)),
            ["<nil>: Invalid value: \"object\": failed rule: has(self.spec)"]
        );
    }

    #[test]
    fn transition_rules_see_the_old_value_and_escaped_names() {
        let rules = Rules::compile(
            &schema(&json!([{"rule": "self.name == oldSelf.name", "message": "name is immutable", "fieldPath": ".name"},
                {"rule": "!has(self.x__dash__y) || self.x__dash__y != 'bad'", "reason": "FieldValueForbidden", "messageExpression": "'x-y is ' + self.x__dash__y"}])),
            "",
        )
        .unwrap();
        let old = json!({"spec": {"name": "a"}});
        assert!(rules.validate(&json!({"spec": {"name": "b"}}), None).is_empty(), "no old value: not evaluated");
        assert_eq!(
            lines(&rules.validate(&json!({"spec": {"name": "b", "x-y": "bad"}}), Some(&old))),
            ["spec.name: Invalid value: \"object\": name is immutable", "spec: Forbidden: x-y is bad",]
        );
    }

    #[test]
    fn bad_rules_refuse_the_crd() {
        let err = Rules::compile(
            &schema(&json!([{"rule": "self.replicas >"}, {"rule": "self.a", "optionalOldSelf": true}])),
            "s",
        )
        .err()
        .unwrap();
        assert_eq!(err[0].field, "s.properties[spec].x-kubernetes-validations[0].rule");
        assert!(err[0].message.contains("compilation failed: ERROR: <input>:1:"), "{}", err[0].message);
        assert_eq!(err[1].message, "Invalid value: true: may not be set if oldSelf is not used in rule");
    }

    #[test]
    fn names_are_escaped_as_upstream() {
        assert_eq!(escape("x-y.z/w__v").as_deref(), Some("x__dash__y__dot__z__slash__w__underscores__v"));
        assert_eq!(escape("namespace").as_deref(), Some("__namespace__"));
        assert_eq!(escape("1a"), None);
    }
}
