//! What a plugin answers: the desired children, status, parent metadata, events.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

/// The plugin's decision for one parent.
///
/// `children` is the FULL desired set: an observed child the parent controls that is
/// missing from it is deleted by the host, unless its kind is one the manifest keeps
/// unlisted; `delete` names, by uid, observed children to delete whatever their kind.
/// Likewise labels and annotations set by an earlier response and missing from this one
/// are removed from the parent.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Response {
    pub children: Vec<Value>,
    pub status: Option<Value>,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    pub requeue_after: Option<Duration>,
    pub events: Vec<Event>,
    pub finalized: bool,
    /// The `metadata.uid`s of observed children to delete.
    pub delete: Vec<String>,
}

impl Response {
    pub fn new() -> Self {
        Self::default()
    }

    /// Add a desired child (a k8s-openapi object, or any `Serialize` with
    /// `apiVersion`, `kind` and `metadata.name`).
    ///
    /// # Errors
    ///
    /// When `object` does not serialize to JSON.
    pub fn child(mut self, object: &impl Serialize) -> Result<Self, Error> {
        let value =
            serde_json::to_value(object).map_err(|e| Error::permanent(format!("child does not serialize: {e}")))?;
        self.children.push(value);
        Ok(self)
    }

    /// Keep an observed child as it is: the host neither prunes nor writes it, so what
    /// others changed in it since stays. For children the plugin no longer rebuilds, such
    /// as a `CronJob`'s finished Jobs; when every child of a kind should be kept so, the
    /// manifest's [`crate::Manifest::keep_unlisted`] says it once for every branch. The child is returned with its `metadata.uid`, which
    /// is what marks it as kept, and without what else the API server and the host set
    /// (resourceVersion, managedFields, timestamps, generation, status, the host's
    /// ownerReference and annotation), as the plugin would have written it.
    #[must_use]
    pub fn keep(mut self, observed: &crate::Object) -> Self {
        let mut child = observed.json().clone();
        if let Some(meta) = child.get_mut("metadata").and_then(Value::as_object_mut) {
            for field in [
                "resourceVersion",
                "managedFields",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "generation",
                "selfLink",
                "ownerReferences",
            ] {
                meta.remove(field);
            }
            if let Some(annotations) = meta.get_mut("annotations").and_then(Value::as_object_mut) {
                annotations.remove(crate::view::APPLIED_HASH);
                if annotations.is_empty() {
                    meta.remove("annotations");
                }
            }
        }
        if let Some(object) = child.as_object_mut() {
            object.remove("status");
        }
        self.children.push(child);
        self
    }

    /// Delete an observed child, whatever its kind: how a plugin whose manifest keeps a
    /// kind unlisted (so that no branch deletes a running Job by omitting it) still
    /// deletes the children it means to, such as finished Jobs beyond a history limit.
    /// The child goes by its `metadata.uid`; one also returned or kept is refused.
    #[must_use]
    pub fn delete(mut self, observed: &crate::Object) -> Self {
        // An object without a uid (not one the request showed) goes as "", which the host
        // refuses by name rather than this builder dropping it.
        self.delete.push(observed.uid().to_string());
        self
    }

    /// The desired `.status` of the parent.
    ///
    /// # Errors
    ///
    /// When `status` does not serialize to JSON.
    pub fn status(mut self, status: &impl Serialize) -> Result<Self, Error> {
        let value =
            serde_json::to_value(status).map_err(|e| Error::permanent(format!("status does not serialize: {e}")))?;
        self.status = Some(value);
        Ok(self)
    }

    /// Set a label on the parent.
    #[must_use]
    pub fn label(mut self, key: &str, value: &str) -> Self {
        self.labels.insert(key.into(), value.into());
        self
    }

    /// Set an annotation on the parent.
    #[must_use]
    pub fn annotation(mut self, key: &str, value: &str) -> Self {
        self.annotations.insert(key.into(), value.into());
        self
    }

    /// Reconcile again after `after`, even if nothing changes.
    #[must_use]
    pub fn requeue_after(mut self, after: Duration) -> Self {
        self.requeue_after = Some(after);
        self
    }

    /// Record an Event on the parent.
    #[must_use]
    pub fn event(mut self, event: Event) -> Self {
        self.events.push(event);
        self
    }

    /// When finalizing: cleanup is done, let the parent go.
    #[must_use]
    pub fn finalized(mut self) -> Self {
        self.finalized = true;
        self
    }
}

/// Whether an event is routine or calls for attention.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum EventType {
    Normal,
    Warning,
}

/// A Kubernetes Event the host records on the parent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Event {
    #[serde(rename = "type")]
    pub type_: EventType,
    /// `UpperCamelCase` cause, e.g. `ErrResourceExists`.
    pub reason: String,
    pub message: String,
}

impl Event {
    pub fn normal(reason: &str, message: impl Into<String>) -> Self {
        Self { type_: EventType::Normal, reason: reason.into(), message: message.into() }
    }

    pub fn warning(reason: &str, message: impl Into<String>) -> Self {
        Self { type_: EventType::Warning, reason: reason.into(), message: message.into() }
    }
}

/// Why a reconcile produced no decision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub message: String,
    /// Whether trying again later may succeed: the host retries a retryable error with
    /// backoff from 5 ms, and a permanent one after 5 minutes or at once when the parent
    /// or its inputs change.
    pub retryable: bool,
}

impl Error {
    /// A transient failure: the host retries with backoff.
    pub fn retryable(message: impl Into<String>) -> Self {
        Self { message: message.into(), retryable: true }
    }

    /// The parent (or config) is wrong; retrying will not help until it changes.
    pub fn permanent(message: impl Into<String>) -> Self {
        Self { message: message.into(), retryable: false }
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}
