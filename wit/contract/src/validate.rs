//! The host's check of a plugin's answer, before anything is written: a refused
//! response writes nothing at all.

use std::collections::HashSet;
use std::fmt;

use serde_json::Value;

use crate::manifest::is_dns_label;
use crate::{Manifest, Request, Response};

/// Largest object a plugin may return (the API server's own limit is 1.5 MiB).
pub const MAX_OBJECT_BYTES: usize = 1 << 20;
/// Largest whole response.
pub const MAX_RESPONSE_BYTES: usize = 16 << 20;

/// A response the host refuses; `problems` lists every reason, not only the first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub plugin: String,
    pub problems: Vec<String>,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "response of plugin {} refused: {}", self.plugin, self.problems.join("; "))
    }
}

impl std::error::Error for Refusal {}

/// Checks `response` against what the plugin declared and the request it answers, and
/// fills in each namespaced child's namespace from a namespaced parent.
///
/// Every child must be of a declared kind, named, in the parent's namespace (for a
/// namespaced parent), unique and within size limits. Every uid to delete must be that of
/// a child the request shows (one the parent controls), and that child neither returned
/// nor kept: an answer that both wants and deletes a child says two things.
///
/// # Errors
///
/// A [`Refusal`] listing every problem found.
pub fn validate(manifest: &Manifest, request: &Request, mut response: Response) -> Result<Response, Refusal> {
    let mut problems = Vec::new();
    let parent = request.parent().json();
    let parent_ns = manifest
        .parent
        .as_ref()
        .is_some_and(|k| k.namespaced)
        .then(|| parent["metadata"]["namespace"].as_str())
        .flatten();
    let mut seen = Returned::new();
    let mut total = 0;

    for (i, child) in response.children.iter_mut().enumerate() {
        let size = child.to_string().len();
        total += size;
        let Some(meta) = child.get("metadata").and_then(Value::as_object) else {
            problems.push(format!("child #{i} has no metadata"));
            continue;
        };
        let name = meta.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
        let namespace = meta.get("namespace").and_then(Value::as_str).map(str::to_string);
        let what = format!(
            "child #{i} ({} {} {name:?})",
            child["apiVersion"].as_str().unwrap_or("<no apiVersion>"),
            child["kind"].as_str().unwrap_or("<no kind>"),
        );
        let Some(kind) = manifest.children.iter().find(|k| k.matches(child)) else {
            let declared: Vec<String> = manifest.children.iter().map(ToString::to_string).collect();
            problems.push(format!(
                "{what} is of a kind the plugin did not declare in `children` (declared: {})",
                if declared.is_empty() { "none".into() } else { declared.join(", ") }
            ));
            continue;
        };
        if !is_dns_subdomain(&name) {
            problems.push(format!("{what} needs metadata.name, a DNS subdomain"));
        }
        match (kind.namespaced, parent_ns, namespace.as_deref()) {
            (true, Some(p), None) => child["metadata"]["namespace"] = Value::from(p),
            (true, Some(p), Some(ns)) if ns != p => {
                problems.push(format!("{what} is in namespace {ns:?}, outside its parent's namespace {p:?}"));
            }
            (true, None, None) => {
                problems.push(format!("{what} needs metadata.namespace (the parent is cluster-scoped)"));
            }
            (false, Some(_), _) => {
                problems.push(format!("{what} is cluster-scoped and cannot be owned by a namespaced parent"));
            }
            (false, None, Some(_)) => {
                problems.push(format!("{what} is cluster-scoped but sets metadata.namespace"));
            }
            _ => {}
        }
        if size > MAX_OBJECT_BYTES {
            problems.push(format!("{what} is {size} bytes, over the limit of {MAX_OBJECT_BYTES}"));
        }
        let ns = child["metadata"]["namespace"].as_str().unwrap_or_default().to_string();
        if !seen.insert((kind.kind.clone(), kind.group.clone(), ns, name)) {
            problems.push(format!("{what} appears more than once"));
        }
    }
    check_deletes(manifest, request, &response, &seen, &mut problems);

    if let Some(status) = &response.status {
        let size = status.to_string().len();
        total += size;
        if !status.is_object() {
            problems.push("status must be a JSON object".into());
        }
        if size > MAX_OBJECT_BYTES {
            problems.push(format!("status is {size} bytes, over the limit of {MAX_OBJECT_BYTES}"));
        }
    }
    for (key, value) in &response.labels {
        if !is_qualified_name(key) || !is_label_value(value) {
            problems.push(format!("label {key}={value:?} is not a valid Kubernetes label"));
        }
    }
    for (key, value) in &response.annotations {
        total += key.len() + value.len();
        if !is_qualified_name(key) {
            problems.push(format!("annotation key {key:?} is not a valid Kubernetes key"));
        }
    }
    for event in &response.events {
        if event.reason.is_empty() {
            problems.push(format!("event {:?} has no reason", event.message));
        }
    }
    if total > MAX_RESPONSE_BYTES {
        problems.push(format!("response is {total} bytes, over the limit of {MAX_RESPONSE_BYTES}"));
    }

    if problems.is_empty() { Ok(response) } else { Err(Refusal { plugin: manifest.name.clone(), problems }) }
}

/// Each child (by kind, group, namespace and name) an answer returns or keeps.
type Returned = HashSet<(String, String, String, String)>;

/// Every uid in `delete` must be that of a child the request shows, and that child
/// neither `returned` nor kept by its uid.
fn check_deletes(
    manifest: &Manifest,
    request: &Request,
    response: &Response,
    returned: &Returned,
    problems: &mut Vec<String>,
) {
    let kept: HashSet<&str> = response.children.iter().filter_map(|c| c["metadata"]["uid"].as_str()).collect();
    for (i, uid) in response.delete.iter().enumerate() {
        let Some(child) = request.children().iter().find(|c| !uid.is_empty() && c.uid() == uid) else {
            problems.push(format!(
                "delete #{i} ({uid:?}) is not the metadata.uid of an observed child the parent controls"
            ));
            continue;
        };
        let json = child.json();
        let what = format!("delete #{i} ({} {:?})", json["kind"].as_str().unwrap_or("<no kind>"), child.name());
        let answered = manifest.children.iter().find(|k| k.matches(json)).is_some_and(|kind| {
            let ns = child.namespace().unwrap_or_default().to_string();
            returned.contains(&(kind.kind.clone(), kind.group.clone(), ns, child.name().to_string()))
        });
        if answered || kept.contains(uid.as_str()) {
            problems.push(format!("{what} is also among the children: an answer returns or deletes a child, not both"));
        }
    }
}

fn is_dns_subdomain(s: &str) -> bool {
    !s.is_empty() && s.len() <= 253 && s.split('.').all(is_dns_label)
}

/// `[prefix/]name`, as label and annotation keys.
fn is_qualified_name(key: &str) -> bool {
    let (prefix, name) = key.rsplit_once('/').unwrap_or(("", key));
    (prefix.is_empty() || is_dns_subdomain(prefix))
        && !name.is_empty()
        && name.len() <= 63
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
        && name.bytes().next().is_some_and(|b| b.is_ascii_alphanumeric())
        && name.bytes().last().is_some_and(|b| b.is_ascii_alphanumeric())
}

fn is_label_value(v: &str) -> bool {
    v.is_empty() || (is_qualified_name(v) && !v.contains('/'))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::KindRef;

    fn manifest() -> Manifest {
        Manifest::new("demo", KindRef::namespaced("example.com", "v1", "App", "apps")).child(KindRef::namespaced(
            "apps",
            "v1",
            "Deployment",
            "deployments",
        ))
    }

    fn parent() -> Value {
        json!({"apiVersion": "example.com/v1", "kind": "App", "metadata": {"name": "a", "namespace": "team"}})
    }

    fn request() -> Request {
        Request::new(parent(), Vec::new(), Vec::new(), false, String::new(), Value::Null)
    }

    fn deployment(name: &str, namespace: Option<&str>) -> Value {
        let mut d = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name}});
        if let Some(ns) = namespace {
            d["metadata"]["namespace"] = ns.into();
        }
        d
    }

    fn answer(children: Vec<Value>) -> Response {
        Response { children, ..Response::default() }
    }

    #[test]
    fn namespace_is_filled_from_the_parent() {
        let ok = validate(&manifest(), &request(), answer(vec![deployment("web", None)])).unwrap();
        assert_eq!(ok.children[0]["metadata"]["namespace"], "team");
    }

    #[test]
    fn undeclared_kind_is_refused_by_name() {
        let crb = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "own-the-cluster"}});
        let err = validate(&manifest(), &request(), answer(vec![deployment("web", None), crb])).unwrap_err();
        assert_eq!(err.problems.len(), 1);
        assert!(err.problems[0].contains("ClusterRoleBinding"), "{err}");
        assert!(err.problems[0].contains("declared: apps/v1 Deployment"), "{err}");
    }

    #[test]
    fn child_in_another_namespace_is_refused() {
        let err = validate(&manifest(), &request(), answer(vec![deployment("web", Some("kube-system"))])).unwrap_err();
        assert!(err.to_string().contains("outside its parent's namespace"), "{err}");
    }

    #[test]
    fn every_problem_is_reported() {
        let children = vec![deployment("", None), deployment("web", None), deployment("web", None)];
        let mut response = answer(children);
        response.labels.insert("bad key!".into(), "v".into());
        let err = validate(&manifest(), &request(), response).unwrap_err();
        assert_eq!(err.problems.len(), 3, "{err}");
    }

    #[test]
    fn oversized_child_is_refused() {
        let mut big = deployment("web", None);
        big["spec"] = json!({"blob": "x".repeat(MAX_OBJECT_BYTES)});
        let err = validate(&manifest(), &request(), answer(vec![big])).unwrap_err();
        assert!(err.to_string().contains("over the limit"), "{err}");
    }

    #[test]
    fn label_keys_and_values_follow_kubernetes_rules() {
        assert!(is_qualified_name("app"));
        assert!(is_qualified_name("kubewasm.io/services"));
        assert!(!is_qualified_name("-app"));
        assert!(!is_qualified_name("a/b/c"));
        assert!(is_label_value(""));
        assert!(is_label_value("v1.2_x"));
        assert!(!is_label_value("a,b"));
    }
}
