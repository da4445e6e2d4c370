//! What a request is about, read from its method, path and query alone, as kube-apiserver's
//! `RequestInfoFactory` reads it: the Kubernetes verb, and for a resource path its group,
//! version, namespace, resource, name and subresource. The request layers (authorization,
//! faults) and the handler all read this one parse.

use axum::http::Method;

/// A request's verb and, for a resource path, what it addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RequestInfo {
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`;
    /// empty for a method the API does not know.
    pub verb: &'static str,
    /// Whether the method writes (POST, PUT, PATCH, DELETE), whatever the path.
    pub mutating: bool,
    /// The resource path (`/api/...` or `/apis/...` below a version); `None` for other paths.
    pub resource: Option<ResourcePath>,
}

/// The parts of a resource path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ResourcePath {
    pub group: String,
    pub version: String,
    pub namespace: Option<String>,
    /// The resource (plural); empty when the path has more segments than a resource path.
    pub resource: String,
    pub name: Option<String>,
    pub subresource: Option<String>,
}

impl RequestInfo {
    /// Reads `method`, `path` and whether the query asks to watch.
    pub(crate) fn parse(method: &Method, path: &str, watch_param: bool) -> RequestInfo {
        let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        let (group, version, rest) = match segs.as_slice() {
            ["api", version, rest @ ..] if !rest.is_empty() => ("", *version, rest),
            ["apis", group, version, rest @ ..] if !rest.is_empty() => (*group, *version, rest),
            _ => ("", "", &[][..]),
        };
        let (legacy_watch, rest) = match rest {
            ["watch", rest @ ..] => (true, rest),
            _ => (false, rest),
        };
        let resource = (!version.is_empty()).then(|| ResourcePath::parse(group, version, rest));
        let named = resource.as_ref().is_some_and(|r| r.name.is_some());
        let verb = match *method {
            Method::GET if legacy_watch || watch_param => "watch",
            Method::GET if named => "get",
            Method::GET => "list",
            Method::POST => "create",
            Method::PUT => "update",
            Method::PATCH => "patch",
            Method::DELETE if named => "delete",
            Method::DELETE => "deletecollection",
            _ => "",
        };
        let mutating = matches!(*method, Method::POST | Method::PUT | Method::PATCH | Method::DELETE);
        RequestInfo { verb, mutating, resource }
    }
}

impl ResourcePath {
    /// The segments after the version (and `watch`): `[namespaces/{ns}/]{resource}[/{name}[/{sub}]]`.
    fn parse(group: &str, version: &str, rest: &[&str]) -> ResourcePath {
        // The path grammar, not a kind: namespaced resources sit below `namespaces/{ns}/`, except
        // the subresources of a namespace itself (`namespaces/{name}/status`, `.../finalize`).
        let (namespace, rest) = match rest {
            ["namespaces", _, "status" | "finalize"] => (None, rest),
            ["namespaces", ns, rest @ ..] if !rest.is_empty() => (Some((*ns).to_string()), rest),
            _ => (None, rest),
        };
        let (resource, name, subresource) = match rest {
            [resource] => (*resource, None, None),
            [resource, name] => (*resource, Some(*name), None),
            [resource, name, sub] => (*resource, Some(*name), Some(*sub)),
            _ => ("", None, None),
        };
        ResourcePath {
            group: group.to_string(),
            version: version.to_string(),
            namespace,
            resource: resource.to_string(),
            name: name.map(String::from),
            subresource: subresource.map(String::from),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(method: &Method, path: &str) -> RequestInfo {
        RequestInfo::parse(method, path, false)
    }

    #[test]
    fn resource_paths_are_read_as_kube_apiserver_reads_them() {
        let get = info(&Method::GET, "/apis/apps/v1/namespaces/default/deployments/web/scale");
        assert_eq!(get.verb, "get");
        let path = get.resource.unwrap();
        assert_eq!(
            (path.group.as_str(), path.namespace.as_deref(), path.resource.as_str(), path.name.as_deref()),
            ("apps", Some("default"), "deployments", Some("web"))
        );
        assert_eq!(path.subresource.as_deref(), Some("scale"));

        let status = info(&Method::PUT, "/api/v1/namespaces/default/status").resource.unwrap();
        assert_eq!(
            (status.namespace, status.resource.as_str(), status.name.as_deref()),
            (None, "namespaces", Some("default"))
        );
        assert_eq!(info(&Method::GET, "/api/v1/watch/namespaces/default/pods").verb, "watch");
        assert_eq!(RequestInfo::parse(&Method::GET, "/api/v1/pods", true).verb, "watch");
        assert_eq!(info(&Method::DELETE, "/api/v1/namespaces/default/pods").verb, "deletecollection");
        assert_eq!(info(&Method::GET, "/apis/apps/v1").resource, None, "discovery is not a resource path");
        assert!(info(&Method::POST, "/version").mutating);
    }
}
