//! Admission and conversion: what the host asks a plugin about one write (defaulting and
//! validation, as Kubebuilder's webhooks do) or about objects to convert between the
//! versions of the plugin's kind, and what the plugin answers.

use std::collections::BTreeMap;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::{Error, KindRef, Object};

/// A write the API server asks an admission webhook about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Operation {
    Create,
    Update,
    Delete,
    /// `kubectl exec`, `attach`, `port-forward` and proxy requests.
    Connect,
}

impl Operation {
    /// `CREATE`, `UPDATE`, `DELETE`, `CONNECT`: the words of `AdmissionReview` and of
    /// webhook rules.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Create => "CREATE",
            Self::Update => "UPDATE",
            Self::Delete => "DELETE",
            Self::Connect => "CONNECT",
        }
    }

    /// The operation an `AdmissionReview` names (`CREATE`...).
    pub fn parse(word: &str) -> Option<Self> {
        [Self::Create, Self::Update, Self::Delete, Self::Connect].into_iter().find(|o| o.as_str() == word)
    }
}

impl std::fmt::Display for Operation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The writes of one kind an admission export is asked about.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AdmissionRule {
    pub kind: KindRef,
    /// Empty: create and update.
    pub operations: Vec<Operation>,
}

impl AdmissionRule {
    /// Creates and updates of `kind`.
    pub fn new(kind: KindRef) -> Self {
        Self { kind, operations: Vec::new() }
    }

    /// These operations instead of create and update.
    #[must_use]
    pub fn on(mut self, operations: &[Operation]) -> Self {
        self.operations = operations.to_vec();
        self
    }

    /// The operations this rule asks about, the default filled in.
    pub fn effective_operations(&self) -> Vec<Operation> {
        if self.operations.is_empty() { vec![Operation::Create, Operation::Update] } else { self.operations.clone() }
    }
}

/// Who asks for a write, as the API server authenticated them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct UserInfo {
    pub username: String,
    pub uid: String,
    pub groups: Vec<String>,
    pub extra: BTreeMap<String, Vec<String>>,
}

/// One write the API server asks about.
#[derive(Clone, Debug, PartialEq)]
pub struct AdmissionRequest {
    /// The `AdmissionReview`'s uid.
    pub uid: String,
    /// The object's kind, in the version the rule names.
    pub kind: KindRef,
    pub operation: Operation,
    /// `status`, `scale`...; `None` for the object itself.
    pub sub_resource: Option<String>,
    pub namespace: Option<String>,
    /// Empty on a create whose name the server generates.
    pub name: String,
    /// The object as it would be stored; `None` for delete.
    pub object: Option<Object>,
    /// The stored object: update and delete.
    pub old_object: Option<Object>,
    pub user_info: UserInfo,
    pub dry_run: bool,
    /// `CreateOptions`, `UpdateOptions` or `DeleteOptions`; `null` if none.
    pub options: Value,
    /// The host's current time, RFC 3339.
    pub now: String,
    /// The plugin's settings (`null` if none).
    pub config: Value,
}

impl AdmissionRequest {
    /// A request about `operation` of `object` (of `kind`), by nobody in particular:
    /// for tests and `kubewasm render`.
    pub fn new(operation: Operation, kind: KindRef, object: Option<Value>, old_object: Option<Value>) -> Self {
        let meta =
            |o: &Option<Value>, field: &str| o.as_ref().and_then(|o| o["metadata"][field].as_str()).map(str::to_string);
        let namespace = meta(&object, "namespace").or_else(|| meta(&old_object, "namespace"));
        let name = meta(&object, "name").or_else(|| meta(&old_object, "name")).unwrap_or_default();
        Self {
            uid: String::new(),
            kind,
            operation,
            sub_resource: None,
            namespace,
            name,
            object: object.map(Object::new),
            old_object: old_object.map(Object::new),
            user_info: UserInfo::default(),
            dry_run: false,
            options: Value::Null,
            now: String::new(),
            config: Value::Null,
        }
    }

    /// The object written (or, on delete, the stored one) parsed into `T`.
    ///
    /// # Errors
    ///
    /// A [`Denial`] naming the field serde rejected: a write the plugin cannot read is
    /// refused, never let through unexamined.
    pub fn object_as<T: DeserializeOwned>(&self) -> Result<T, Denial> {
        let object = self.object.as_ref().or(self.old_object.as_ref()).map_or(&Value::Null, Object::json);
        serde_path_to_error::deserialize(object).map_err(|e| Denial::new(format!("{}: {}", e.path(), e.inner())))
    }

    /// The stored object before the write parsed into `T`; `None` on create.
    ///
    /// # Errors
    ///
    /// As [`AdmissionRequest::object_as`].
    pub fn old_object_as<T: DeserializeOwned>(&self) -> Result<Option<T>, Denial> {
        self.old_object
            .as_ref()
            .map(|o| {
                serde_path_to_error::deserialize(o.json())
                    .map_err(|e| Denial::new(format!("old object: {}: {}", e.path(), e.inner())))
            })
            .transpose()
    }

    /// The plugin's settings parsed into `T`.
    ///
    /// # Errors
    ///
    /// A permanent [`Error`] naming the field serde rejected.
    pub fn config<T: DeserializeOwned>(&self) -> Result<T, Error> {
        serde_path_to_error::deserialize(&self.config)
            .map_err(|e| Error::permanent(format!("settings: {}: {}", e.path(), e.inner())))
    }
}

/// One field a denial blames.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FieldCause {
    /// `spec.schedule`, `metadata.name`.
    pub field: String,
    pub message: String,
    /// `FieldValueInvalid` (when empty), `FieldValueRequired`, `FieldValueNotSupported`...
    pub reason: String,
}

/// Why a write is refused: 422 Invalid naming the fields when it has causes, 403
/// Forbidden otherwise.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Denial {
    pub message: String,
    pub causes: Vec<FieldCause>,
}

impl Denial {
    /// A refusal with `message` (403 Forbidden unless a field is blamed).
    pub fn new(message: impl Into<String>) -> Self {
        Self { message: message.into(), causes: Vec::new() }
    }

    /// A refusal blaming `field` (`spec.schedule`): `message` says why. The API server
    /// answers 422 Invalid, as for a schema violation.
    pub fn invalid(field: &str, message: impl Into<String>) -> Self {
        Self::new(String::new()).field(field, message)
    }

    /// Blame `field` too (`FieldValueInvalid`).
    #[must_use]
    pub fn field(self, field: &str, message: impl Into<String>) -> Self {
        self.cause(field, "FieldValueInvalid", message)
    }

    /// Blame `field` with Kubernetes' cause type `reason` (`FieldValueRequired`...).
    #[must_use]
    pub fn cause(mut self, field: &str, reason: &str, message: impl Into<String>) -> Self {
        self.causes.push(FieldCause { field: field.into(), message: message.into(), reason: reason.into() });
        self
    }
}

impl std::fmt::Display for Denial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)?;
        for (i, cause) in self.causes.iter().enumerate() {
            let sep = if i == 0 && self.message.is_empty() { "" } else { ", " };
            write!(f, "{sep}{}: {}", cause.field, cause.message)?;
        }
        Ok(())
    }
}

impl From<Error> for Denial {
    fn from(error: Error) -> Self {
        Self::new(error.message)
    }
}

/// What validation decided about a write.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Verdict {
    /// `None`: allowed.
    pub denied: Option<Denial>,
    /// Shown to the client, allowed or not.
    pub warnings: Vec<String>,
}

impl Verdict {
    /// Let the write through.
    pub fn allow() -> Self {
        Self::default()
    }

    /// Refuse the write.
    pub fn deny(denial: Denial) -> Self {
        Self { denied: Some(denial), warnings: Vec::new() }
    }

    /// Show `warning` to the client.
    #[must_use]
    pub fn warning(mut self, warning: impl Into<String>) -> Self {
        self.warnings.push(warning.into());
        self
    }

    pub fn allowed(&self) -> bool {
        self.denied.is_none()
    }
}

impl From<Result<(), Denial>> for Verdict {
    fn from(result: Result<(), Denial>) -> Self {
        match result {
            Ok(()) => Self::allow(),
            Err(denial) => Self::deny(denial),
        }
    }
}

/// How defaulting changes a written object.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum Mutation {
    /// Store it as written.
    Unchanged,
    /// The whole object as it should be stored; the host sends the patch to it.
    Object(Value),
    /// An RFC 6902 JSON patch to the written object.
    Patch(Value),
}

/// What defaulting did to a written object.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Defaulted {
    pub mutation: Mutation,
    pub warnings: Vec<String>,
}

impl Defaulted {
    /// Store the object as written.
    pub fn unchanged() -> Self {
        Self { mutation: Mutation::Unchanged, warnings: Vec::new() }
    }

    /// Store `object` (a k8s-openapi object or any `Serialize`) instead.
    ///
    /// # Errors
    ///
    /// A [`Denial`] when `object` does not serialize to JSON.
    pub fn object(object: &impl Serialize) -> Result<Self, Denial> {
        let value = serde_json::to_value(object)
            .map_err(|e| Denial::new(format!("the defaulted object does not serialize: {e}")))?;
        Ok(Self { mutation: Mutation::Object(value), warnings: Vec::new() })
    }

    /// Apply the RFC 6902 JSON `patch` (a list of operations) to the written object.
    pub fn patch(patch: Value) -> Self {
        Self { mutation: Mutation::Patch(patch), warnings: Vec::new() }
    }

    /// Show `warning` to the client.
    #[must_use]
    pub fn warning(mut self, warning: impl Into<String>) -> Self {
        self.warnings.push(warning.into());
        self
    }
}

/// Objects of the parent's kind to convert to one version.
#[derive(Clone, Debug, PartialEq)]
pub struct ConversionRequest {
    /// Each in its own version.
    pub objects: Vec<Value>,
    /// `group/version`.
    pub desired_api_version: String,
    /// The host's current time, RFC 3339.
    pub now: String,
    /// The plugin's settings (`null` if none).
    pub config: Value,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_denial_reads_as_the_api_server_lists_causes() {
        let denial = Denial::invalid("metadata.name", "must be no more than 52 characters")
            .field("spec.schedule", "Invalid value");
        assert_eq!(
            denial.to_string(),
            "metadata.name: must be no more than 52 characters, spec.schedule: Invalid value"
        );
        assert_eq!(Denial::new("no").to_string(), "no");
    }

    #[test]
    fn a_request_names_its_object_and_reads_it_typed() {
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct Spec {
            schedule: String,
        }
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct CronJob {
            spec: Spec,
        }
        let kind = KindRef::namespaced("batch.tutorial.kubebuilder.io", "v1", "CronJob", "cronjobs");
        let object = json!({"metadata": {"name": "a", "namespace": "n"}, "spec": {"schedule": 5}});
        let request = AdmissionRequest::new(Operation::Create, kind, Some(object), None);
        assert_eq!((request.name.as_str(), request.namespace.as_deref()), ("a", Some("n")));
        let error = request.object_as::<CronJob>().unwrap_err();
        assert!(error.message.starts_with("spec.schedule: invalid type"), "{error}");
    }

    #[test]
    fn operations_read_and_write_as_admission_review_spells_them() {
        for op in [Operation::Create, Operation::Update, Operation::Delete, Operation::Connect] {
            assert_eq!(Operation::parse(op.as_str()), Some(op));
        }
        assert_eq!(Operation::parse("create"), None);
        let rule = AdmissionRule::new(KindRef::namespaced("", "v1", "Pod", "pods"));
        assert_eq!(rule.effective_operations(), vec![Operation::Create, Operation::Update]);
    }
}
