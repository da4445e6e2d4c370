//! Admission: the steps every write passes between its kind's preparation and storage, as
//! kube-apiserver's admission chain: mutating steps first (they may change the object, before
//! it is validated), validating steps after the kind's own validation (they may only refuse).
//! The built-in plugins live with what they are about (`kinds::admission`, `crd::admission`,
//! the CEL admission policies in `kinds::policies`, the admission webhooks in
//! `kinds::webhooks`).
//!
//! In-tree steps run under the cluster's lock. Webhooks call out of the process, so they are
//! [`Webhooks`]: what their calls need is taken under the lock, and the calls run with the
//! cluster unlocked (the pipeline checks, before it stores, that nothing changed meanwhile).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use serde_json::Value;

use super::conversion::Conversion;
use super::resource::GroupResource;
use super::status::ApiError;
use super::strategy::Resource;
use super::user::User;
use super::webhook::ServiceRef;

/// Which write a step sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Operation {
    Create,
    Update,
    Delete,
}

impl Operation {
    /// The name webhooks and policies see (`CREATE`).
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
        }
    }
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
    /// The object as stored, on an update or delete (in the version addressed).
    pub old: Option<&'a Value>,
    /// Who makes the request.
    pub user: &'a User,
    pub dry_run: bool,
    /// The options of the operation performed (`CreateOptions`, `UpdateOptions`,
    /// `DeleteOptions`), as webhooks see them.
    pub options: &'a Value,
    /// Warnings for the answer's `Warning` headers.
    pub warnings: &'a Mutex<Vec<String>>,
}

impl Attributes<'_> {
    /// Adds a warning for the answer's `Warning` headers, once (as the server's warning
    /// recorder keeps each text once).
    pub(crate) fn warn(&self, text: String) {
        let mut warnings = self.warnings.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if !warnings.contains(&text) {
            warnings.push(text);
        }
    }
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

    /// Where a webhook's `service` reference leads (`kinds::routing`).
    fn service_address(&self, service: &ServiceRef) -> Result<SocketAddr, String>;
}

/// The two phases of admission.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    Mutating,
    Validating,
}

/// Steps that call out of the process (the admission webhooks).
pub(crate) trait Webhooks: Send + Sync {
    /// Under the lock: the calls of `phase` this request may make, with all they need of the
    /// cluster (configurations, the namespace's labels, addresses); `None` when none applies.
    fn prepare(&self, phase: Phase, attributes: &Attributes<'_>, lookup: &dyn Lookup) -> Option<Box<dyn Calls>>;
}

/// Calls prepared by [`Webhooks::prepare`], run with the cluster unlocked.
pub(crate) trait Calls: Send + Sync {
    /// Runs the calls about `obj` (`None` on a delete); mutating calls change it.
    /// `conversion` converts it to a version a webhook registered for.
    fn run<'a>(
        &'a self,
        attributes: &'a Attributes<'a>,
        obj: Option<&'a mut Value>,
        conversion: &'a Conversion,
    ) -> BoxFuture<'a, Result<(), ApiError>>;
}

/// A step that may change the object, or refuse the write.
pub(crate) trait Mutating: Send + Sync {
    fn admit(&self, attributes: &Attributes<'_>, obj: &mut Value, lookup: &dyn Lookup) -> Result<(), ApiError>;
}

/// A step that may refuse the write once the object is valid.
pub(crate) trait Validating: Send + Sync {
    fn validate(&self, attributes: &Attributes<'_>, obj: &Value, lookup: &dyn Lookup) -> Result<(), ApiError>;
}

/// The chain: every mutating step in order, then every validating one; in each phase the
/// in-tree steps before the webhooks, as kube-apiserver orders its plugins.
#[derive(Default)]
pub(crate) struct Admission {
    mutating: Vec<Box<dyn Mutating>>,
    validating: Vec<Box<dyn Validating>>,
    webhooks: Vec<Box<dyn Webhooks>>,
}

impl Admission {
    pub(crate) fn new(mutating: Vec<Box<dyn Mutating>>, validating: Vec<Box<dyn Validating>>) -> Admission {
        Admission { mutating, validating, webhooks: Vec::new() }
    }

    /// This chain with `webhooks` called after its in-tree steps.
    #[must_use]
    pub(crate) fn with_webhooks(mut self, webhooks: Box<dyn Webhooks>) -> Admission {
        self.webhooks.push(webhooks);
        self
    }

    /// This chain followed by `other`'s steps.
    #[must_use]
    pub(crate) fn then(mut self, other: Admission) -> Admission {
        self.mutating.extend(other.mutating);
        self.validating.extend(other.validating);
        self.webhooks.extend(other.webhooks);
        self
    }

    /// Under the lock: the webhook calls of `phase` for this request; empty when none applies.
    pub(crate) fn prepare(
        &self,
        phase: Phase,
        attributes: &Attributes<'_>,
        lookup: &dyn Lookup,
    ) -> Vec<Box<dyn Calls>> {
        self.webhooks.iter().filter_map(|w| w.prepare(phase, attributes, lookup)).collect()
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
