//! What a request asks to do, as authorization sees it (`authorizer.Attributes`), and the
//! authorizer's answer. Requests, impersonation and the access reviews all build these.

/// The attributes of an access: a verb on a resource (or on a path, for the rest).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Attributes {
    /// The Kubernetes verb of a resource request (`get`, `list`, `impersonate`...), or the
    /// lower-cased HTTP method of a non-resource one.
    pub verb: String,
    /// Whether this is about a resource (the fields below) or a path.
    pub resource_request: bool,
    pub namespace: String,
    pub group: String,
    pub version: String,
    pub resource: String,
    pub subresource: String,
    pub name: String,
    /// The path of a non-resource request.
    pub path: String,
}

impl Attributes {
    /// `verb` on `resource` (of `group`, with an optional `/subresource`) in `namespace`.
    pub(crate) fn resource(verb: &str, group: &str, resource: &str, namespace: &str, name: &str) -> Attributes {
        let (resource, subresource) = resource.split_once('/').unwrap_or((resource, ""));
        Attributes {
            verb: verb.to_string(),
            resource_request: true,
            namespace: namespace.to_string(),
            group: group.to_string(),
            resource: resource.to_string(),
            subresource: subresource.to_string(),
            name: name.to_string(),
            ..Attributes::default()
        }
    }

    /// `verb` on the non-resource `path`.
    pub(crate) fn path(verb: &str, path: &str) -> Attributes {
        Attributes { verb: verb.to_string(), path: path.to_string(), ..Attributes::default() }
    }

    /// `resource[/subresource]`.
    pub(crate) fn combined_resource(&self) -> String {
        if self.subresource.is_empty() {
            self.resource.clone()
        } else {
            format!("{}/{}", self.resource, self.subresource)
        }
    }
}

/// An authorizer's answer, with the reason a review shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decision {
    Allow(String),
    /// No authorizer allows it (RBAC has no opinion; the request is refused). The reason says
    /// why when rule resolution failed, and is empty otherwise.
    NoOpinion(String),
}

impl Decision {
    pub(crate) fn allowed(&self) -> bool {
        matches!(self, Decision::Allow(_))
    }

    pub(crate) fn reason(&self) -> &str {
        match self {
            Decision::Allow(reason) | Decision::NoOpinion(reason) => reason,
        }
    }
}
