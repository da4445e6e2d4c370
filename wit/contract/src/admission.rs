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

impl Denial {
    /// The `metav1.Status` a webhook answers with, as controller-runtime shapes a
    /// validator's error: with causes, 422 `Invalid` worded as apimachinery's
    /// `NewInvalid` (`CronJob.batch.tutorial.kubebuilder.io "x" is invalid: metadata.name:
    /// ...`, a `message` of its own replacing the head); without, 403 `Forbidden` with the
    /// message as it is. `kind` and `name` are the object's.
    pub fn status(&self, kind: &KindRef, name: &str) -> Value {
        if self.causes.is_empty() {
            return serde_json::json!({
                "apiVersion": "v1", "kind": "Status", "status": "Failure",
                "message": self.message, "reason": "Forbidden", "code": 403,
            });
        }
        let qualified = if kind.group.is_empty() { kind.kind.clone() } else { format!("{}.{}", kind.kind, kind.group) };
        let head =
            if self.message.is_empty() { format!("{qualified} {name:?} is invalid") } else { self.message.clone() };
        let errors: Vec<String> = self.causes.iter().map(|c| format!("{}: {}", c.field, c.message)).collect();
        let message = match errors.as_slice() {
            [one] => format!("{head}: {one}"),
            many => format!("{head}: [{}]", many.join(", ")),
        };
        let causes: Vec<Value> = self
            .causes
            .iter()
            .map(|c| {
                let reason = if c.reason.is_empty() { "FieldValueInvalid" } else { c.reason.as_str() };
                serde_json::json!({"reason": reason, "message": c.message, "field": c.field})
            })
            .collect();
        serde_json::json!({
            "apiVersion": "v1", "kind": "Status", "status": "Failure", "message": message, "reason": "Invalid",
            "details": {"name": name, "group": kind.group, "kind": kind.kind, "causes": causes},
            "code": 422,
        })
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

    /// Refuse the write blaming every one of `causes` (field, message), as a Kubebuilder
    /// validator returns `NewInvalid` of its `field.ErrorList`; allow it when there are
    /// none. For validations that collect what is wrong before answering.
    pub fn invalid<F: AsRef<str>, M: Into<String>>(causes: impl IntoIterator<Item = (F, M)>) -> Self {
        let mut denial = Denial::new(String::new());
        for (field, message) in causes {
            denial = denial.field(field.as_ref(), message);
        }
        if denial.causes.is_empty() { Self::allow() } else { Self::deny(denial) }
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

impl Defaulted {
    /// The object `request` writes as defaulting leaves it, refused as kube-apiserver
    /// refuses a mutating webhook's answer: a change to a delete (or to a write without an
    /// object), a patch that is not a list of RFC 6902 operations or does not apply, or a
    /// result that is not an object.
    ///
    /// # Errors
    ///
    /// What is wrong, in words for the plugin's author.
    #[cfg(feature = "patch")]
    pub fn apply(&self, request: &AdmissionRequest) -> Result<Value, String> {
        let written = request.object.as_ref().map(Object::json);
        let object = match (&self.mutation, written) {
            (Mutation::Unchanged, Some(written)) => return Ok(written.clone()),
            (Mutation::Unchanged, None) => return Ok(Value::Null),
            (_, None) => {
                return Err(format!(
                    "defaulting changed the object of a {} request, which has none to change",
                    request.operation
                ));
            }
            (Mutation::Object(object), Some(_)) => object.clone(),
            (Mutation::Patch(patch), Some(written)) => {
                let patch: json_patch::Patch = serde_json::from_value(patch.clone())
                    .map_err(|e| format!("the defaulting patch is not a list of JSON patch operations: {e}"))?;
                let mut object = written.clone();
                json_patch::patch(&mut object, &patch)
                    .map_err(|e| format!("the defaulting patch does not apply to the written object: {e}"))?;
                object
            }
        };
        if request.operation == Operation::Delete {
            return Err("defaulting changed the object of a DELETE request, which kube-apiserver refuses".into());
        }
        if !object.is_object() {
            return Err(format!("defaulting made the written object {object}, which is no object"));
        }
        Ok(object)
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

impl ConversionRequest {
    /// The plugin's `converted` objects as kube-apiserver keeps them: one for each
    /// object asked about, each of the desired version, of the same kind, name, namespace
    /// and uid, with its `metadata` restored from the original but for the labels and
    /// annotations the plugin returned (its other changes there are dropped, silently, as
    /// the API server drops them).
    ///
    /// # Errors
    ///
    /// The API server's own words for what it refuses (`returned 1 objects, expected 2`,
    /// `invalid groupVersion (expected ..., received ...)`...), naming the object's index.
    pub fn check(&self, converted: Vec<Value>) -> Result<Vec<Value>, String> {
        if converted.len() != self.objects.len() {
            return Err(format!("returned {} objects, expected {}", converted.len(), self.objects.len()));
        }
        self.objects
            .iter()
            .zip(converted)
            .enumerate()
            .map(|(i, (original, mut converted))| {
                let invalid = |what: String| format!("returned invalid converted object at index {i}: {what}");
                let received = converted["apiVersion"].as_str().unwrap_or_default();
                if received != self.desired_api_version {
                    return Err(invalid(format!(
                        "invalid groupVersion (expected {}, received {received})",
                        self.desired_api_version
                    )));
                }
                if converted["kind"] != original["kind"] {
                    return Err(invalid(format!(
                        "invalid kind (expected {}, received {})",
                        original["kind"].as_str().unwrap_or_default(),
                        converted["kind"].as_str().unwrap_or_default()
                    )));
                }
                for field in ["name", "namespace", "uid"] {
                    if converted["metadata"][field] != original["metadata"][field] {
                        return Err(invalid(format!(
                            "must have the same {field}: {} != {}",
                            converted["metadata"][field], original["metadata"][field]
                        )));
                    }
                }
                let Some(returned) = converted.get("metadata").and_then(Value::as_object).cloned() else {
                    return Err(invalid("missing metadata in converted object".into()));
                };
                let mut metadata = original["metadata"].as_object().cloned().unwrap_or_default();
                for field in ["labels", "annotations"] {
                    match returned.get(field) {
                        None | Some(Value::Null) => {
                            metadata.remove(field);
                        }
                        Some(value) => {
                            if let Some((key, _)) =
                                value.as_object().and_then(|m| m.iter().find(|(_, v)| !v.is_string()))
                            {
                                return Err(invalid(format!(
                                    "metadata.{field}[{key}] must be a string in the converted object"
                                )));
                            }
                            metadata.insert(field.to_string(), value.clone());
                        }
                    }
                }
                converted["metadata"] = Value::Object(metadata);
                Ok(converted)
            })
            .collect()
    }
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
    #[test]
    fn a_validation_that_collects_causes_denies_with_all_of_them_or_allows() {
        let none: [(&str, String); 0] = [];
        assert!(Verdict::invalid(none).allowed());
        let verdict = Verdict::invalid([("metadata.name", "too long"), ("spec.schedule", "bad")]);
        let fields: Vec<&str> = verdict.denied.as_ref().unwrap().causes.iter().map(|c| c.field.as_str()).collect();
        assert_eq!(fields, ["metadata.name", "spec.schedule"]);
    }

    #[test]
    fn a_denial_with_causes_is_the_status_apimachinery_words_for_an_invalid_object() {
        let kind = KindRef::namespaced("batch.tutorial.kubebuilder.io", "v1", "CronJob", "cronjobs");
        let one = Denial::invalid("metadata.name", "Invalid value: \"x\": must be no more than 52 characters");
        let status = one.status(&kind, "x");
        assert_eq!(status["code"], 422);
        assert_eq!(
            status["message"],
            "CronJob.batch.tutorial.kubebuilder.io \"x\" is invalid: metadata.name: Invalid value: \"x\": must be no more than 52 characters"
        );
        assert_eq!(status["details"]["causes"][0]["reason"], "FieldValueInvalid");
        let two = one.field("spec.schedule", "Invalid value: \"a\": no");
        let message = two.status(&kind, "x")["message"].as_str().unwrap().to_string();
        assert!(message.ends_with("is invalid: [metadata.name: Invalid value: \"x\": must be no more than 52 characters, spec.schedule: Invalid value: \"a\": no]"), "{message}");
        let forbidden = Denial::new("no").status(&kind, "x");
        assert_eq!((forbidden["code"].clone(), forbidden["message"].clone()), (json!(403), json!("no")));
    }

    #[test]
    fn converted_objects_keep_their_metadata_but_labels_and_annotations() {
        let request = ConversionRequest {
            objects: vec![json!({"apiVersion": "x.io/v1", "kind": "X",
                "metadata": {"name": "a", "uid": "u", "generation": 2, "labels": {"l": "1"}}})],
            desired_api_version: "x.io/v2".into(),
            now: String::new(),
            config: Value::Null,
        };
        let converted = json!({"apiVersion": "x.io/v2", "kind": "X",
            "metadata": {"name": "a", "uid": "u", "generation": 7, "annotations": {"a": "2"}}, "spec": {}});
        let kept = request.check(vec![converted.clone()]).unwrap();
        assert_eq!(kept[0]["metadata"], json!({"name": "a", "uid": "u", "generation": 2, "annotations": {"a": "2"}}));
        assert_eq!(request.check(vec![]).unwrap_err(), "returned 0 objects, expected 1");
        let mut v1 = converted.clone();
        v1["apiVersion"] = json!("x.io/v1");
        assert!(
            request.check(vec![v1]).unwrap_err().ends_with("invalid groupVersion (expected x.io/v2, received x.io/v1)")
        );
        let mut renamed = converted;
        renamed["metadata"]["name"] = json!("b");
        assert!(request.check(vec![renamed]).unwrap_err().contains("must have the same name"));
    }

    #[cfg(feature = "patch")]
    #[test]
    fn a_defaulted_write_reads_back_whole_and_a_patch_that_does_not_apply_is_refused() {
        let kind = KindRef::namespaced("x.io", "v1", "X", "xs");
        let object = json!({"metadata": {"name": "a"}, "spec": {}});
        let create = AdmissionRequest::new(Operation::Create, kind.clone(), Some(object.clone()), None);
        let patch = Defaulted::patch(json!([{"op": "add", "path": "/spec/suspend", "value": false}]));
        assert_eq!(patch.apply(&create).unwrap()["spec"], json!({"suspend": false}));
        assert_eq!(Defaulted::unchanged().apply(&create).unwrap(), object);
        let bad = Defaulted::patch(json!([{"op": "replace", "path": "/nope/x", "value": 1}]));
        assert!(bad.apply(&create).unwrap_err().contains("does not apply"));
        let delete = AdmissionRequest::new(Operation::Delete, kind, None, Some(object));
        assert!(patch.apply(&delete).unwrap_err().contains("DELETE"));
    }
}
