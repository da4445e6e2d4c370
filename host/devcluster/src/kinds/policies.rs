//! `ValidatingAdmissionPolicies` and their bindings (`admissionregistration.k8s.io/v1`): the
//! strategy that refuses a policy whose expressions do not compile, and the admission step
//! that evaluates every bound policy on a create or update, as kube-apiserver's
//! `ValidatingAdmissionPolicy` plugin does: match constraints and the binding's match resources
//! (rules, excluded rules, namespace and object selectors), match conditions, params, variables,
//! validations and their messages, `Deny` and `Warn` actions, and the failure policy.
//!
//! Not done: `Audit` (there is no audit log; such a failure is not recorded), the `authorizer`
//! variable, `auditAnnotations`, DELETE and CONNECT requests, `matchPolicy: Equivalent` across
//! versions, and the status a type-checking controller writes (`status.typeChecking` stays empty).

use serde_json::{Value, json};

use super::matching;
use crate::admission::{Attributes, Lookup, Validating};
use crate::cel::{self, CelValue, Expression};
use crate::object;
use crate::selectors::LabelSelector;
use crate::status::{ApiError, Cause};
use crate::strategy::Strategy;

const GROUP: &str = "admissionregistration.k8s.io";

/// The strategy of `ValidatingAdmissionPolicies`: every expression must compile.
pub(crate) struct Policies;

impl Strategy for Policies {
    fn tracks_generation(&self) -> bool {
        true
    }

    fn validate(&self, obj: &Value) -> Vec<Cause> {
        let mut causes = Vec::new();
        let mut check = |list: &str, field: &str| {
            let items = obj.pointer(&format!("/spec/{list}")).and_then(Value::as_array).cloned().unwrap_or_default();
            for (i, item) in items.iter().enumerate() {
                let Some(source) = item.get(field).and_then(Value::as_str) else {
                    continue;
                };
                if let Err(e) = Expression::compile(source) {
                    causes.push(Cause::new(
                        "FieldValueInvalid",
                        format!("spec.{list}[{i}].{field}"),
                        format!("Invalid value: {source:?}: compilation failed: {e}"),
                    ));
                }
            }
        };
        check("validations", "expression");
        check("validations", "messageExpression");
        check("matchConditions", "expression");
        check("variables", "expression");
        causes
    }
}

/// The `ValidatingAdmissionPolicy` admission plugin.
pub(crate) struct ValidatingPolicies;

impl Validating for ValidatingPolicies {
    fn validate(&self, a: &Attributes<'_>, obj: &Value, lookup: &dyn Lookup) -> Result<(), ApiError> {
        let bindings = lookup.objects(&(GROUP.to_string(), "validatingadmissionpolicybindings".to_string()), None);
        if bindings.is_empty() {
            return Ok(());
        }
        let policies = (GROUP.to_string(), "validatingadmissionpolicies".to_string());
        let request = Request::new(a, obj, lookup);
        for binding in &bindings {
            let policy_name = binding.pointer("/spec/policyName").and_then(Value::as_str).unwrap_or_default();
            let Some(policy) = lookup.object(&policies, "", policy_name) else {
                continue;
            };
            let decision = evaluate(&policy, binding, &request, lookup);
            let (message, reason) = match decision {
                Decision::Allow => continue,
                Decision::Fail { message, reason } => (message, reason),
            };
            let actions = matching::strings(binding, "/spec/validationActions");
            let binding_name = object::name(binding);
            if actions.iter().any(|a| a == "Warn") {
                a.warn(format!(
                    "Validation failed for ValidatingAdmissionPolicy '{policy_name}' with binding '{binding_name}': {message}"
                ));
            }
            if actions.iter().any(|a| a == "Deny") {
                let text = format!(
                    "ValidatingAdmissionPolicy '{policy_name}' with binding '{binding_name}' denied request: {message}"
                );
                return Err(denied(a, &text, &reason));
            }
        }
        Ok(())
    }
}

/// The answer to a denied request: `NewForbidden`'s message, re-coded by the validation's
/// `reason` (`Invalid`, 422, unless it names another).
fn denied(a: &Attributes<'_>, message: &str, reason: &str) -> ApiError {
    let (code, reason) = match reason {
        "Forbidden" => (403, "Forbidden"),
        "Unauthorized" => (401, "Unauthorized"),
        "RequestEntityTooLarge" => (413, "RequestEntityTooLarge"),
        _ => (422, "Invalid"),
    };
    let mut err = ApiError::forbidden(&a.resource.group, &a.resource.plural, a.name, message);
    err.code = code;
    err.reason = reason;
    if let Some(details) = err.details.as_mut() {
        details["causes"] = json!([{ "message": message }]);
    }
    err
}

/// What one policy decided through one binding.
enum Decision {
    Allow,
    /// A validation failed (or an error under `failurePolicy: Fail`): its message and reason.
    Fail {
        message: String,
        reason: String,
    },
}

/// The request as policies see it.
struct Request<'a> {
    a: &'a Attributes<'a>,
    obj: &'a Value,
    /// The object's namespace, for `namespaceObject`.
    namespace: Option<std::sync::Arc<Value>>,
    /// The labels a namespace selector is matched with (`None`: a cluster-scoped request).
    namespace_labels: Option<Value>,
    /// The `request` variable.
    variable: CelValue,
}

impl<'a> Request<'a> {
    fn new(a: &'a Attributes<'a>, obj: &'a Value, lookup: &dyn Lookup) -> Request<'a> {
        Request {
            a,
            obj,
            namespace: matching::namespace_object(a, lookup),
            namespace_labels: matching::namespace_labels(a, Some(obj), lookup).ok().flatten(),
            variable: cel::value(&matching::request(a, a.version)),
        }
    }

    /// Whether `constraints` (`matchConstraints` or a binding's `matchResources`) select this
    /// request; a binding without resource rules narrows by its selectors only.
    fn matches(&self, constraints: &Value, rules_required: bool) -> bool {
        let rules = constraints.get("resourceRules").and_then(Value::as_array);
        let rule_match = |list: Option<&Vec<Value>>| {
            list.into_iter().flatten().any(|r| matching::rule_matches(r, self.a, self.a.version))
        };
        if (rules_required || rules.is_some_and(|r| !r.is_empty())) && !rule_match(rules) {
            return false;
        }
        if rule_match(constraints.get("excludeResourceRules").and_then(Value::as_array)) {
            return false;
        }
        let namespace_ok = self
            .namespace_labels
            .as_ref()
            .is_none_or(|labels| matching::selects(constraints.get("namespaceSelector"), Some(labels)));
        namespace_ok && matching::object_selected(constraints.get("objectSelector"), Some(self.obj), self.a.old)
    }

    /// The variables every expression sees, with `params` bound.
    fn variables(&self, params: Option<&Value>) -> Vec<(&'static str, CelValue)> {
        vec![
            ("object", cel::value(self.obj)),
            ("oldObject", self.a.old.map_or(CelValue::Null, cel::value)),
            ("request", self.variable.clone()),
            ("params", params.map_or(CelValue::Null, cel::value)),
            ("namespaceObject", self.namespace.as_deref().map_or(CelValue::Null, cel::value)),
        ]
    }
}

/// What `policy` decides about the request through `binding`.
fn evaluate(policy: &Value, binding: &Value, request: &Request<'_>, lookup: &dyn Lookup) -> Decision {
    let spec = policy.get("spec").cloned().unwrap_or_default();
    let fail_closed = spec.get("failurePolicy").and_then(Value::as_str) != Some("Ignore");
    let error = |message: String| {
        if fail_closed { Decision::Fail { message, reason: String::new() } } else { Decision::Allow }
    };
    if !request.matches(spec.get("matchConstraints").unwrap_or(&Value::Null), true) {
        return Decision::Allow;
    }
    if let Some(resources) = binding.pointer("/spec/matchResources").filter(|m| !m.is_null())
        && !request.matches(resources, false)
    {
        return Decision::Allow;
    }
    let params = match params(&spec, binding, request, lookup) {
        Ok(params) => params,
        Err(message) => return error(message),
    };
    for param in &params {
        let decision = evaluate_with(&spec, param.as_ref(), request, fail_closed);
        if !matches!(decision, Decision::Allow) {
            return decision;
        }
    }
    Decision::Allow
}

/// The params each evaluation gets (`[None]` for a policy without `paramKind`), or the message
/// of a binding whose params cannot be found and may not be missing.
fn params(
    spec: &Value,
    binding: &Value,
    request: &Request<'_>,
    lookup: &dyn Lookup,
) -> Result<Vec<Option<Value>>, String> {
    let Some(kind) = spec.get("paramKind").filter(|k| !k.is_null()) else {
        return Ok(vec![None]);
    };
    let Some(reference) = binding.pointer("/spec/paramRef").filter(|r| !r.is_null()) else {
        return Err("failed to configure binding: no paramRef in binding".to_string());
    };
    let text = |v: &Value, f: &str| v.get(f).and_then(Value::as_str).unwrap_or_default().to_string();
    let (api_version, kind_name) = (text(kind, "apiVersion"), text(kind, "kind"));
    let Some(resource) = lookup.kind(&api_version, &kind_name) else {
        return Err(format!(
            "failed to configure policy: failed to find resource referenced by paramKind: '{api_version}, Kind={kind_name}'"
        ));
    };
    let namespace = match text(reference, "namespace") {
        ns if !ns.is_empty() => Some(ns),
        _ if resource.namespaced => Some(request.a.namespace.to_string()),
        _ => None,
    };
    let gr = resource.group_resource();
    let found: Vec<Option<Value>> = match text(reference, "name") {
        name if !name.is_empty() => lookup
            .object(&gr, namespace.as_deref().unwrap_or(""), &name)
            .map(|p| Some((*p).clone()))
            .into_iter()
            .collect(),
        _ => {
            let selector = reference.get("selector").cloned().unwrap_or_else(|| json!({}));
            let selector =
                LabelSelector::from_object(&selector).map_err(|e| format!("invalid paramRef selector: {e}"))?;
            lookup
                .objects(&gr, namespace.as_deref())
                .into_iter()
                .filter(|p| selector.matches(&matching::pairs(p.pointer("/metadata/labels"))))
                .map(|p| Some((*p).clone()))
                .collect()
        }
    };
    if !found.is_empty() {
        return Ok(found);
    }
    if text(reference, "parameterNotFoundAction") == "Allow" {
        return Ok(Vec::new());
    }
    Err("no params found for policy binding with `Deny` parameterNotFoundAction".to_string())
}

/// Match conditions, variables and validations of a policy with one set of params.
fn evaluate_with(spec: &Value, params: Option<&Value>, request: &Request<'_>, fail_closed: bool) -> Decision {
    let error = |message: String| {
        if fail_closed { Decision::Fail { message, reason: String::new() } } else { Decision::Allow }
    };
    let mut variables = request.variables(params);
    let mut named: Vec<(String, CelValue)> = Vec::new();
    for variable in spec.get("variables").and_then(Value::as_array).into_iter().flatten() {
        let name = variable.get("name").and_then(Value::as_str).unwrap_or_default();
        let source = variable.get("expression").and_then(Value::as_str).unwrap_or_default();
        let mut scope = variables.clone();
        scope.push(("variables", cel::object(named.iter().cloned())));
        // A variable that fails is left out: an expression that reads it fails in turn.
        if let Ok(value) = Expression::compile(source).and_then(|e| e.eval(&scope)) {
            named.push((name.to_string(), value));
        }
    }
    variables.push(("variables", cel::object(named.into_iter())));
    for condition in spec.get("matchConditions").and_then(Value::as_array).into_iter().flatten() {
        let source = condition.get("expression").and_then(Value::as_str).unwrap_or_default();
        match Expression::compile(source).and_then(|e| e.eval(&variables)) {
            Ok(CelValue::Bool(true)) => {}
            Ok(CelValue::Bool(false)) => return Decision::Allow,
            Ok(_) => return error(format!("expression '{source}' resulted in error: must evaluate to bool")),
            Err(e) => return error(format!("expression '{source}' resulted in error: {e}")),
        }
    }
    for validation in spec.get("validations").and_then(Value::as_array).into_iter().flatten() {
        let text = |f: &str| validation.get(f).and_then(Value::as_str).unwrap_or_default();
        let source = text("expression");
        match Expression::compile(source).and_then(|e| e.eval(&variables)) {
            Ok(CelValue::Bool(true)) => continue,
            Ok(CelValue::Bool(false)) => {}
            Ok(_) => return error(format!("expression '{source}' resulted in error: must evaluate to bool")),
            Err(e) => return error(format!("expression '{source}' resulted in error: {e}")),
        }
        let from_expression = Some(text("messageExpression"))
            .filter(|m| !m.is_empty())
            .and_then(|m| Expression::compile(m).and_then(|e| e.eval(&variables)).ok())
            .and_then(|v| cel::as_string(&v).map(|s| s.trim().to_string()))
            .filter(|s| !s.is_empty() && !s.contains('\n') && s.len() <= 5 * 1024);
        let message = from_expression.unwrap_or_else(|| match text("message") {
            "" => format!("failed expression: {}", source.trim()),
            m => m.to_string(),
        });
        return Decision::Fail { message, reason: text("reason").to_string() };
    }
    Decision::Allow
}
