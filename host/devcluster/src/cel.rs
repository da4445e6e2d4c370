//! CEL, the expression language of CRD validation rules and admission policies: compiling an
//! expression, the Kubernetes function libraries of a 1.33 server (strings, lists, sets,
//! regex, URLs, IPs and CIDRs, quantities, semver, formats; from `kube-cel`), values from JSON,
//! and errors worded as cel-go words them. Nothing here knows a kind or a schema; the rules of
//! a CRD (`crd`) and the policies (`kinds`) say what the variables are.
//!
//! The `cel` crate interprets without a type checker or a cost model: an expression that names
//! an unknown field or variable fails when it is evaluated rather than when it is compiled, and
//! no cost budget stops an expensive one.

use std::sync::Arc;

use kube_cel::KubeCelExt;
use kube_cel::cel::objects::{Map, OptionalValue};
use kube_cel::cel::{Context, ExecutionError, Program};
use serde_json::Value;

pub(crate) use kube_cel::cel::Value as CelValue;

/// A compiled expression with its source.
pub(crate) struct Expression {
    pub source: String,
    program: Program,
}

impl Expression {
    /// Parses `source`; the error is cel-go's `ERROR: <input>:line:column: message` text.
    pub(crate) fn compile(source: &str) -> Result<Expression, String> {
        let program = Program::compile(source).map_err(|e| e.to_string())?;
        Ok(Expression { source: source.to_string(), program })
    }

    /// Whether the expression reads the variable `name`.
    pub(crate) fn uses(&self, name: &str) -> bool {
        self.program.references().has_variable(name)
    }

    /// Evaluates the expression with `variables` bound; the error is the evaluation's message.
    pub(crate) fn eval(&self, variables: &[(&str, CelValue)]) -> Result<CelValue, String> {
        BASE.with(|base| {
            let mut scope = base.new_inner_scope();
            for (name, value) in variables {
                scope.add_variable_from_value(*name, value.clone());
            }
            self.program.execute(&scope).map_err(|e| error_text(&e))
        })
    }
}

const _: () = {
    const fn shared<T: Send + Sync>() {}
    shared::<Expression>();
};

thread_local! {
    /// The functions of the Kubernetes CEL environment, registered once per thread.
    static BASE: Context<'static> = Context::default().with_all();
}

/// An evaluation error as cel-go prints it (`no such key: x`, `no such overload`).
fn error_text(e: &ExecutionError) -> String {
    match e {
        ExecutionError::NoSuchKey(key) => format!("no such key: {key}"),
        ExecutionError::NoSuchOverload => "no such overload".to_string(),
        ExecutionError::UndeclaredReference(name) => format!("undeclared reference to '{name}'"),
        ExecutionError::DivisionByZero(_) => "division by zero".to_string(),
        ExecutionError::RemainderByZero(_) => "modulus by zero".to_string(),
        ExecutionError::Overflow(..) => "integer overflow".to_string(),
        ExecutionError::IndexOutOfBounds(i) => format!("index out of bounds: {}", show(i)),
        other => other.to_string(),
    }
}

/// A CEL value in the words of an error message.
fn show(v: &CelValue) -> String {
    match v {
        CelValue::Int(i) => i.to_string(),
        CelValue::UInt(u) => u.to_string(),
        CelValue::String(s) => s.to_string(),
        other => format!("{other:?}"),
    }
}

/// A JSON value as CEL sees dynamic data: objects as maps, whole numbers as `int`.
pub(crate) fn value(json: &Value) -> CelValue {
    match json {
        Value::Null => CelValue::Null,
        Value::Bool(b) => CelValue::Bool(*b),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => CelValue::Int(i),
            (None, Some(u)) => CelValue::UInt(u),
            _ => CelValue::Float(n.as_f64().unwrap_or_default()),
        },
        Value::String(s) => string(s),
        Value::Array(items) => list(items.iter().map(value).collect()),
        Value::Object(map) => object(map.iter().map(|(k, v)| (k.clone(), value(v)))),
    }
}

pub(crate) fn string(s: &str) -> CelValue {
    CelValue::String(Arc::new(s.to_string()))
}

pub(crate) fn list(items: Vec<CelValue>) -> CelValue {
    CelValue::List(Arc::new(items))
}

/// A map with string keys.
pub(crate) fn object(fields: impl Iterator<Item = (String, CelValue)>) -> CelValue {
    let map: std::collections::HashMap<kube_cel::cel::objects::Key, CelValue> =
        fields.map(|(k, v)| (kube_cel::cel::objects::Key::from(k), v)).collect();
    CelValue::Map(Map { map: Arc::new(map) })
}

/// `optional.of(v)`, or `optional.none()`.
pub(crate) fn optional(v: Option<CelValue>) -> CelValue {
    let inner = match v {
        Some(v) => OptionalValue::of(v),
        None => OptionalValue::none(),
    };
    CelValue::Opaque(Arc::new(inner))
}

/// The text of a string result, `None` for any other type.
pub(crate) fn as_string(v: &CelValue) -> Option<&str> {
    match v {
        CelValue::String(s) => Some(s.as_str()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn eval(source: &str, object: &Value) -> Result<CelValue, String> {
        Expression::compile(source)?.eval(&[("self", value(object))])
    }

    #[test]
    fn the_kubernetes_libraries_are_there() {
        let obj = json!({"name": "web-1", "replicas": 3, "ports": [80, 443], "cpu": "500m"});
        for rule in [
            "self.name.startsWith('web') && self.replicas <= 5",
            "self.ports.all(p, p > 0) && self.ports.isSorted()",
            "quantity(self.cpu).isLessThan(quantity('1'))",
            "isURL('https://example.com') && self.name.find('[0-9]+') == '1'",
            "has(self.name) && !has(self.missing)",
            "optional.of(1).hasValue() && optional.none().orValue(2) == 2",
        ] {
            assert_eq!(eval(rule, &obj), Ok(CelValue::Bool(true)), "{rule}");
        }
    }

    #[test]
    fn errors_read_as_cel_go_writes_them() {
        assert_eq!(eval("self.missing == 1", &json!({})), Err("no such key: missing".to_string()));
        let err = Expression::compile("self.a >").err().unwrap_or_default();
        assert!(err.starts_with("ERROR: <input>:1:"), "{err}");
    }
}
