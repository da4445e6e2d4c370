//! A Kubernetes object as the host hands it over: JSON with typed accessors.

use std::collections::BTreeMap;

use k8s_openapi::Resource;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::Timestamp;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::Error;

/// Any Kubernetes object. Read fields directly, or [`Object::parse`] it into a
/// k8s-openapi type or your own `#[derive(Deserialize)]` struct.
#[derive(Clone, Debug, PartialEq)]
pub struct Object(Value);

static NULL: Value = Value::Null;

impl Object {
    /// Wraps a JSON value; the host always sends JSON objects.
    pub fn new(value: Value) -> Self {
        Self(value)
    }

    /// The whole object as JSON.
    pub fn json(&self) -> &Value {
        &self.0
    }

    /// Deserialize the object into `T` (a k8s-openapi type or your own).
    ///
    /// # Errors
    ///
    /// A permanent [`Error`] naming the object and the field (`spec.ports[0].port`)
    /// when the object does not have the shape of `T`.
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, Error> {
        serde_path_to_error::deserialize(&self.0)
            .map_err(|e| Error::permanent(format!("{}: {}: {}", self.describe(), e.path(), e.inner())))
    }

    /// `"Kind namespace/name"`, for messages.
    pub fn describe(&self) -> String {
        match self.namespace() {
            Some(ns) => format!("{} {ns}/{}", self.kind(), self.name()),
            None => format!("{} {}", self.kind(), self.name()),
        }
    }

    pub fn api_version(&self) -> &str {
        self.0["apiVersion"].as_str().unwrap_or_default()
    }

    pub fn kind(&self) -> &str {
        self.0["kind"].as_str().unwrap_or_default()
    }

    /// Whether this object is of the k8s-openapi type `K`.
    pub fn is<K: Resource>(&self) -> bool {
        self.api_version() == K::API_VERSION && self.kind() == K::KIND
    }

    pub fn name(&self) -> &str {
        self.0["metadata"]["name"].as_str().unwrap_or_default()
    }

    pub fn namespace(&self) -> Option<&str> {
        self.0["metadata"]["namespace"].as_str()
    }

    pub fn uid(&self) -> &str {
        self.0["metadata"]["uid"].as_str().unwrap_or_default()
    }

    pub fn labels(&self) -> BTreeMap<String, String> {
        string_map(&self.0["metadata"]["labels"])
    }

    pub fn annotations(&self) -> BTreeMap<String, String> {
        string_map(&self.0["metadata"]["annotations"])
    }

    /// `.spec`, or `null` when absent.
    pub fn spec(&self) -> &Value {
        self.0.get("spec").unwrap_or(&NULL)
    }

    /// `.status`, or `null` when absent.
    pub fn status(&self) -> &Value {
        self.0.get("status").unwrap_or(&NULL)
    }

    /// The uid of the object's controller (the ownerReference with `controller: true`).
    pub fn controller_uid(&self) -> Option<&str> {
        crate::view::controller_uid(&self.0)
    }

    /// Whether `owner` is this object's controller.
    pub fn is_controlled_by(&self, owner: &Object) -> bool {
        !owner.uid().is_empty() && self.controller_uid() == Some(owner.uid())
    }

    /// Metadata for a child of this object: `name`, this object's namespace and a copy
    /// of its labels. The host adds the ownerReference.
    pub fn child_meta(&self, name: &str) -> ObjectMeta {
        let labels = self.labels();
        ObjectMeta {
            name: Some(name.to_string()),
            namespace: self.namespace().map(str::to_string),
            labels: (!labels.is_empty()).then_some(labels),
            ..ObjectMeta::default()
        }
    }

    /// Metadata for a child in `namespace`: what a cluster-scoped parent needs for its
    /// namespaced children (a namespaced parent's children stay in its namespace).
    pub fn child_meta_in(&self, name: &str, namespace: &str) -> ObjectMeta {
        ObjectMeta { namespace: Some(namespace.to_string()), ..self.child_meta(name) }
    }

    /// `metadata.generation`: bumped by the API server on each change of the spec.
    pub fn generation(&self) -> Option<i64> {
        self.0["metadata"]["generation"].as_i64()
    }

    /// `metadata.creationTimestamp`.
    pub fn creation_timestamp(&self) -> Option<Timestamp> {
        self.0["metadata"]["creationTimestamp"].as_str()?.parse().ok()
    }

    /// `metadata.deletionTimestamp`: set once the object is being deleted.
    pub fn deletion_timestamp(&self) -> Option<Timestamp> {
        self.0["metadata"]["deletionTimestamp"].as_str()?.parse().ok()
    }

    /// A reference to this object, as events and a `CronJob`'s `status.active` hold them.
    pub fn object_reference(&self) -> ObjectReference {
        let text = |s: &str| (!s.is_empty()).then(|| s.to_string());
        ObjectReference {
            api_version: text(self.api_version()),
            kind: text(self.kind()),
            name: text(self.name()),
            namespace: self.namespace().map(str::to_string),
            uid: text(self.uid()),
            resource_version: self.0["metadata"]["resourceVersion"].as_str().map(str::to_string),
            ..ObjectReference::default()
        }
    }
}

fn string_map(value: &Value) -> BTreeMap<String, String> {
    value
        .as_object()
        .map(|m| m.iter().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string()))).collect())
        .unwrap_or_default()
}

impl From<Value> for Object {
    fn from(value: Value) -> Self {
        Self(value)
    }
}
