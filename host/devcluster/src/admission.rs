//! Admission: the steps every create and update passes between its kind's preparation and
//! storage, as kube-apiserver's admission chain: mutating steps first (they may change the
//! object, before it is validated), validating steps after the kind's own validation (they
//! may only refuse). The built-in plugins live with what they are about (`kinds::admission`,
//! `crd::admission`, the CEL admission policies in `kinds::policies`); admission webhooks
//! would be steps of this chain too, and are not implemented.

use std::cell::RefCell;
use std::sync::Arc;

use serde_json::Value;

use super::resource::GroupResource;
use super::status::ApiError;
use super::strategy::Resource;
use super::user::User;

/// Which write a step sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Operation {
    Create,
    Update,
}

/// What a step knows of the write besides the object (`admission.Attributes`).
pub(crate) struct Attributes<'a> {
    pub operation: Operation,
    /// The resource written (for a view, the resource it is stored as).
    pub resource: &'a Resource,
    /// The version the request addressed.
    pub version: &'a str,
    /// The subresource written (`status`), if any.
    pub subresource: Option<&'a str>,
    /// The namespace of the object; empty for cluster-scoped resources.
    pub namespace: &'a str,
    pub name: &'a str,
    /// The object as stored, on an update (in the version addressed).
    pub old: Option<&'a Value>,
    /// Who makes the request.
    pub user: &'a User,
    pub dry_run: bool,
    /// Warnings for the answer's `Warning` headers.
    pub warnings: &'a RefCell<Vec<String>>,
}

/// What a step may read of the server: stored objects and served resources, never a write
/// (the pipeline writes once every step has agreed).
pub(crate) trait Lookup {
    fn object(&self, resource: &GroupResource, namespace: &str, name: &str) -> Option<Arc<Value>>;

    /// The resource served at `group` and `plural`, in any version.
    fn served(&self, group: &str, plural: &str) -> Option<Arc<Resource>>;

    /// Every stored object of `resource` (in `namespace`, when given).
    fn objects(&self, resource: &GroupResource, namespace: Option<&str>) -> Vec<Arc<Value>>;

    /// The resource of `kind` served in `api_version` (`group/version`, or `v1`).
    fn kind(&self, api_version: &str, kind: &str) -> Option<Arc<Resource>>;
}

/// A step that may change the object, or refuse the write.
pub(crate) trait Mutating: Send + Sync {
    fn admit(&self, attributes: &Attributes<'_>, obj: &mut Value, lookup: &dyn Lookup) -> Result<(), ApiError>;
}

/// A step that may refuse the write once the object is valid.
pub(crate) trait Validating: Send + Sync {
    fn validate(&self, attributes: &Attributes<'_>, obj: &Value, lookup: &dyn Lookup) -> Result<(), ApiError>;
}

/// The chain: every mutating step in order, then every validating one.
#[derive(Default)]
pub(crate) struct Admission {
    mutating: Vec<Box<dyn Mutating>>,
    validating: Vec<Box<dyn Validating>>,
}

impl Admission {
    pub(crate) fn new(mutating: Vec<Box<dyn Mutating>>, validating: Vec<Box<dyn Validating>>) -> Admission {
        Admission { mutating, validating }
    }

    /// This chain followed by `other`'s steps.
    #[must_use]
    pub(crate) fn then(mut self, other: Admission) -> Admission {
        self.mutating.extend(other.mutating);
        self.validating.extend(other.validating);
        self
    }

    /// The mutating steps, in order; the first refusal ends the write.
    pub(crate) fn admit(
        &self,
        attributes: &Attributes<'_>,
        obj: &mut Value,
        lookup: &dyn Lookup,
    ) -> Result<(), ApiError> {
        self.mutating.iter().try_for_each(|step| step.admit(attributes, obj, lookup))
    }

    /// The validating steps, in order; the first refusal ends the write.
    pub(crate) fn validate(
        &self,
        attributes: &Attributes<'_>,
        obj: &Value,
        lookup: &dyn Lookup,
    ) -> Result<(), ApiError> {
        self.validating.iter().try_for_each(|step| step.validate(attributes, obj, lookup))
    }
}
