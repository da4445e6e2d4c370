//! What a request addresses and asks for, once its path and parameters are read: the resource
//! and object ([`Target`]), and the options of writes, deletes and lists.

use std::sync::Arc;

use serde_json::Value;

use super::apply::Scope;
use super::object;
use super::resource::{GroupResource, Version};
use super::selectors::{FieldSelector, LabelSelector};
use super::strategy::{Resource, Strategy};
use super::user::User;

/// The resource, version, namespace and name a request addresses.
#[derive(Clone)]
pub(crate) struct Target {
    /// The resource whose objects are read and written.
    pub rt: Arc<Resource>,
    pub version: String,
    /// The namespace from the URL; `None` for cluster-scoped resources and all-namespace lists.
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub subresource: Option<String>,
    /// The resource the client addressed, with its version, when it is a view of `rt`'s
    /// objects (`Strategy::stored_as`): what the client sends and reads is converted.
    pub view: Option<(Arc<Resource>, String)>,
}

impl Target {
    pub(crate) fn gr(&self) -> GroupResource {
        self.rt.group_resource()
    }

    pub(crate) fn ns(&self) -> &str {
        self.namespace.as_deref().unwrap_or("")
    }

    pub(crate) fn name(&self) -> &str {
        self.name.as_deref().unwrap_or("")
    }

    /// The strategy of the version addressed.
    pub(crate) fn strategy(&self) -> &dyn Strategy {
        self.rt.strategy(&self.version)
    }

    fn served_version(&self) -> Option<&Version> {
        self.rt.version(&self.version)
    }

    /// The schema that gives the object its list and map types.
    pub(crate) fn shape(&self) -> Option<&Value> {
        self.served_version().and_then(Version::shape)
    }

    /// A built-in's upstream definition, which decodes its objects.
    pub(crate) fn definition(&self) -> Option<&'static Value> {
        self.served_version().and_then(|v| v.definition)
    }

    /// Whether `status` is a subresource of the version addressed.
    pub(crate) fn status_separate(&self) -> bool {
        self.rt.has_status(&self.version)
    }

    /// Which fields of an object a write through this target may set.
    pub(crate) fn scope(&self) -> Scope {
        if self.subresource.as_deref() == Some("status") {
            Scope::Status
        } else {
            Scope::Main { status_separate: self.status_separate() }
        }
    }

    /// The same resource, another object (of `namespace`, when given).
    pub(crate) fn object(&self, namespace: &str, name: &str) -> Target {
        Target {
            namespace: self.namespace.clone().or_else(|| Some(namespace.to_string())).filter(|n| !n.is_empty()),
            name: Some(name.to_string()),
            subresource: None,
            ..self.clone()
        }
    }

    /// The storage version of `rt`, addressing the object at `namespace`/`name` (for the
    /// server's own controllers).
    pub(crate) fn stored(rt: Arc<Resource>, namespace: &str, name: &str) -> Target {
        Target {
            version: rt.storage_version().to_string(),
            namespace: Some(namespace.to_string()).filter(|n| !n.is_empty()),
            name: Some(name.to_string()),
            subresource: None,
            view: None,
            rt,
        }
    }
}

/// Options common to writes.
#[derive(Debug)]
pub(crate) struct WriteOptions {
    pub dry_run: bool,
    /// `fieldManager`, or the user agent's product name when the request names none.
    pub manager: String,
    /// Whether `fieldManager` was given: admission webhooks see it in the request's options
    /// only then.
    pub explicit_manager: bool,
    /// Whether an apply takes the fields other managers own (`force`).
    pub force: bool,
    /// `fieldValidation`: what happens to unknown fields.
    pub validation: FieldValidation,
    /// Warnings for the response's `Warning` headers (unknown fields dropped under `Warn`,
    /// admission's).
    pub warnings: std::sync::Mutex<Vec<String>>,
    /// Who writes (admission policies see it).
    pub user: User,
}

impl WriteOptions {
    /// The warnings gathered so far, taken for the answer.
    pub(crate) fn take_warnings(&self) -> Vec<String> {
        std::mem::take(&mut *self.warnings.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
    }
}

impl Default for WriteOptions {
    fn default() -> WriteOptions {
        WriteOptions {
            dry_run: false,
            manager: String::new(),
            explicit_manager: false,
            force: false,
            validation: FieldValidation::default(),
            warnings: std::sync::Mutex::default(),
            user: User::admin(),
        }
    }
}

/// The `fieldValidation` of a write.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum FieldValidation {
    /// Unknown fields are dropped silently.
    Ignore,
    /// Unknown fields are dropped with a warning (the default).
    #[default]
    Warn,
    /// Unknown fields refuse the request (400).
    Strict,
}

/// Selectors of a list (or watch).
#[derive(Debug, Clone, Default)]
pub(crate) struct Filter {
    pub namespace: Option<String>,
    pub labels: LabelSelector,
    pub fields: FieldSelector,
}

impl Filter {
    pub(crate) fn matches(&self, obj: &Value) -> bool {
        self.namespace.as_deref().is_none_or(|ns| object::namespace(obj) == ns)
            && self.labels.matches(&object::labels(obj))
            && self.fields.matches(obj)
    }
}

/// `limit` and `continue` of a list request.
#[derive(Debug, Clone, Default)]
pub(crate) struct Paging {
    pub limit: Option<usize>,
    pub continue_token: Option<String>,
    /// `resourceVersion` with `resourceVersionMatch=Exact`: list the state at that version.
    pub exact: Option<u64>,
}

/// How a DELETE should proceed (`DeleteOptions`, of the body or else the query).
#[derive(Debug, Clone, Default)]
pub(crate) struct DeleteOptions {
    pub propagation: Option<String>,
    pub precondition_uid: Option<String>,
    pub precondition_rv: Option<String>,
    pub dry_run: bool,
}
