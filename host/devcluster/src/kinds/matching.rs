//! What admission webhooks and admission policies match a request by, as kube-apiserver's
//! `predicates/rules`, `namespace` and `object` matchers do: rules (`RuleWithOperations`, with
//! the resource names of a policy's rules), namespace and object selectors, and the
//! `AdmissionRequest` they are told about (the `request` variable of their CEL expressions, and
//! the body of a webhook's review).

use std::sync::Arc;

use serde_json::{Value, json};

use crate::admission::{Attributes, Lookup, Operation};
use crate::selectors::LabelSelector;
use crate::status::ApiError;

const NAMESPACES: (&str, &str) = ("", "namespaces");

/// Whether the request is about a Namespace object itself.
fn is_namespace(a: &Attributes<'_>) -> bool {
    (a.resource.group.as_str(), a.resource.plural.as_str()) == NAMESPACES
}

/// The strings of the array at `pointer` of `v`.
pub(crate) fn strings(v: &Value, pointer: &str) -> Vec<String> {
    v.pointer(pointer)
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|s| s.as_str().map(String::from)).collect())
        .unwrap_or_default()
}

/// Whether `rule` (a `RuleWithOperations`, or a policy's `NamedRuleWithOperations`) matches the
/// request, its resource taken in `version`.
pub(crate) fn rule_matches(rule: &Value, a: &Attributes<'_>, version: &str) -> bool {
    let listed = |field: &str, value: &str| strings(rule, &format!("/{field}")).iter().any(|v| v == "*" || v == value);
    let rt = a.resource;
    let scope_ok = match rule.get("scope").and_then(Value::as_str).unwrap_or("*") {
        "Cluster" => !rt.namespaced || is_namespace(a),
        "Namespaced" => rt.namespaced && !is_namespace(a),
        _ => true,
    };
    let subresource = a.subresource.unwrap_or_default();
    let resource_ok = strings(rule, "/resources").iter().any(|r| {
        let (res, sub) = r.split_once('/').unwrap_or((r, ""));
        (res == "*" || res == rt.plural) && (sub == "*" || sub == subresource)
    });
    let names = strings(rule, "/resourceNames");
    listed("apiGroups", &rt.group)
        && listed("apiVersions", version)
        && listed("operations", a.operation.as_str())
        && scope_ok
        && resource_ok
        && (names.is_empty() || names.iter().any(|n| n == a.name))
}

/// The labels of the request's namespace, for a namespace selector: the object's own on a
/// create or update of a Namespace, else the stored namespace's. `None`: a cluster-scoped
/// request, which every namespace selector matches.
pub(crate) fn namespace_labels(
    a: &Attributes<'_>,
    obj: Option<&Value>,
    lookup: &dyn Lookup,
) -> Result<Option<Value>, ApiError> {
    if labels_of_object(a) {
        return Ok(Some(obj.and_then(|o| o.pointer("/metadata/labels")).cloned().unwrap_or(Value::Null)));
    }
    let namespace = if is_namespace(a) { a.name } else { a.namespace };
    if namespace.is_empty() {
        return Ok(None);
    }
    let found = lookup.object(&(NAMESPACES.0.to_string(), NAMESPACES.1.to_string()), "", namespace);
    match found {
        Some(ns) => Ok(Some(ns.pointer("/metadata/labels").cloned().unwrap_or(Value::Null))),
        // As upstream, for compatibility: the namespace's 404.
        None => Err(ApiError::not_found(NAMESPACES.0, NAMESPACES.1, namespace)),
    }
}

/// Whether a namespace selector reads the labels of the request's object: a create or update
/// of a Namespace (the stored one does not have them yet).
pub(crate) fn labels_of_object(a: &Attributes<'_>) -> bool {
    is_namespace(a) && a.subresource.is_none() && matches!(a.operation, Operation::Create | Operation::Update)
}

/// The namespace object of the request, for a policy's `namespaceObject`.
pub(crate) fn namespace_object(a: &Attributes<'_>, lookup: &dyn Lookup) -> Option<Arc<Value>> {
    (!a.namespace.is_empty())
        .then(|| lookup.object(&(NAMESPACES.0.to_string(), NAMESPACES.1.to_string()), "", a.namespace))
        .flatten()
}

/// Whether a selector selects everything (absent, `null` or `{}`).
pub(crate) fn selects_all(selector: Option<&Value>) -> bool {
    selector.is_none_or(|s| s.is_null() || s.as_object().is_some_and(serde_json::Map::is_empty))
}

/// Whether `selector` (a `LabelSelector`; absent or `null`: everything) selects `labels`.
pub(crate) fn selects(selector: Option<&Value>, labels: Option<&Value>) -> bool {
    match selector {
        None | Some(Value::Null) => true,
        Some(sel) => LabelSelector::from_object(sel).is_ok_and(|s| s.matches(&pairs(labels))),
    }
}

/// Whether an object selector selects the request: its object's labels or its old object's.
pub(crate) fn object_selected(selector: Option<&Value>, obj: Option<&Value>, old: Option<&Value>) -> bool {
    selects_all(selector) || [obj, old].into_iter().flatten().any(|o| selects(selector, o.pointer("/metadata/labels")))
}

/// The labels of an object's `metadata.labels`, as pairs.
pub(crate) fn pairs(labels: Option<&Value>) -> Vec<(&str, &str)> {
    labels
        .and_then(Value::as_object)
        .map(|m| m.iter().filter_map(|(k, v)| Some((k.as_str(), v.as_str()?))).collect())
        .unwrap_or_default()
}

/// The `AdmissionRequest` of a request whose resource is taken in `version` (the version a
/// webhook matched), without `uid`, `object` and `oldObject`, every field present as CEL sees
/// it.
pub(crate) fn request(a: &Attributes<'_>, version: &str) -> Value {
    let rt = a.resource;
    let group_version = |version: &str| {
        (
            json!({ "group": rt.group, "version": version, "kind": rt.kind }),
            json!({ "group": rt.group, "version": version, "resource": rt.plural }),
        )
    };
    let (mut kind, resource) = group_version(version);
    let (mut request_kind, request_resource) = group_version(a.version);
    // A subresource of a kind of its own (`pods/eviction`, `deployments/scale`) is a request
    // about that kind (`policy/v1` `Eviction`, `autoscaling/v1` `Scale`).
    if let Some(sub) = a.subresource.and_then(|sub| rt.version(a.version)?.subresources.iter().find(|s| s.name == sub))
        && !sub.kind.is_empty()
        && sub.kind != rt.kind
    {
        kind = json!({ "group": sub.group, "version": sub.version, "kind": sub.kind });
        request_kind = kind.clone();
    }
    // The namespace of a request about a Namespace object (by its name) is that namespace.
    let namespace = if is_namespace(a) && a.operation != Operation::Create { a.name } else { a.namespace };
    json!({
        "kind": kind, "resource": resource, "subResource": a.subresource.unwrap_or_default(),
        "requestKind": request_kind, "requestResource": request_resource,
        "requestSubResource": a.subresource.unwrap_or_default(),
        "name": a.name, "namespace": namespace, "operation": a.operation.as_str(),
        "userInfo": { "username": a.user.name, "groups": a.user.groups },
        "dryRun": a.dry_run,
        "options": a.options,
    })
}
