//! What the host hands a plugin for one parent.

use k8s_openapi::Resource;
use k8s_openapi::jiff::Timestamp;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::{Error, Object};

/// Everything a plugin needs to decide, for one parent.
///
/// The fields are the contract's `request` record; a plugin reads them through the
/// methods, which parse and filter.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    /// The object being reconciled.
    pub parent: Object,
    /// Children that exist now and are controlled by the parent, all kinds.
    pub children: Vec<Object>,
    /// Objects selected by the plugin's related queries.
    pub related: Vec<Object>,
    /// True when the parent is being deleted and waits on this plugin's finalizer.
    pub finalizing: bool,
    /// The host's current time, RFC 3339.
    pub now: String,
    /// The plugin's settings from the operator's configuration (`null` if none).
    pub config: Value,
}

impl Request {
    /// A request as the host sends it; [`crate::view`] decides what goes in.
    pub fn new(
        parent: Value,
        children: Vec<Value>,
        related: Vec<Value>,
        finalizing: bool,
        now: String,
        config: Value,
    ) -> Self {
        let objects = |values: Vec<Value>| values.into_iter().map(Object::new).collect();
        Self {
            parent: Object::new(parent),
            children: objects(children),
            related: objects(related),
            finalizing,
            now,
            config,
        }
    }

    /// The object being reconciled.
    pub fn parent(&self) -> &Object {
        &self.parent
    }

    /// The parent parsed into `T` (your CRD type or a k8s-openapi type).
    ///
    /// # Errors
    ///
    /// A permanent [`Error`] naming the parent and the field serde rejected.
    pub fn parent_as<T: DeserializeOwned>(&self) -> Result<T, Error> {
        self.parent.parse()
    }

    /// Children that exist now and are controlled by the parent, all kinds.
    pub fn children(&self) -> &[Object] {
        &self.children
    }

    /// Observed children of the k8s-openapi type `K`.
    ///
    /// # Errors
    ///
    /// When a child of that kind does not parse as `K`.
    pub fn children_of<K: Resource + DeserializeOwned>(&self) -> Result<Vec<K>, Error> {
        of_kind(&self.children)
    }

    /// The observed child of type `K` named `name`, if it exists.
    ///
    /// # Errors
    ///
    /// When the child does not parse as `K`.
    pub fn child<K: Resource + DeserializeOwned>(&self, name: &str) -> Result<Option<K>, Error> {
        named(&self.children, name)
    }

    /// The observed child of kind `K` named `name`, unparsed: cheaper than
    /// [`Request::child`] when reading a field or two (deserializing a whole
    /// k8s-openapi object adds its decoder to the plugin's size).
    pub fn find_child<K: Resource>(&self, name: &str) -> Option<&Object> {
        find(&self.children, K::API_VERSION, K::KIND, name)
    }

    /// The related object of kind `K` named `name`, unparsed.
    pub fn find_related<K: Resource>(&self, name: &str) -> Option<&Object> {
        find(&self.related, K::API_VERSION, K::KIND, name)
    }

    /// The related object of kind `K` named `name` in `namespace` (`None` for a
    /// cluster-scoped kind), unparsed: for queries across namespaces, where a name alone
    /// is ambiguous.
    pub fn find_related_in<K: Resource>(&self, namespace: Option<&str>, name: &str) -> Option<&Object> {
        self.related.iter().find(|o| {
            o.api_version() == K::API_VERSION && o.kind() == K::KIND && o.name() == name && o.namespace() == namespace
        })
    }

    /// Objects selected by the plugin's related queries.
    pub fn related(&self) -> &[Object] {
        &self.related
    }

    /// Related objects of the k8s-openapi type `K`.
    ///
    /// # Errors
    ///
    /// When a related object of that kind does not parse as `K`.
    pub fn related_of<K: Resource + DeserializeOwned>(&self) -> Result<Vec<K>, Error> {
        of_kind(&self.related)
    }

    /// True when the parent is being deleted and waits on this plugin's finalizer:
    /// clean up, then answer with [`crate::Response::finalized`].
    pub fn finalizing(&self) -> bool {
        self.finalizing
    }

    /// The host's current time (the same for the whole reconcile; the sandbox has no clock).
    /// The host always sends a valid RFC 3339 time; a hand-made test request that does not
    /// reads as the Unix epoch.
    pub fn now(&self) -> Timestamp {
        self.now.parse().unwrap_or(Timestamp::UNIX_EPOCH)
    }

    /// The host's current time as it was sent, RFC 3339.
    pub fn now_rfc3339(&self) -> &str {
        &self.now
    }

    /// The plugin's settings from the operator's configuration (`null` if none).
    pub fn config(&self) -> &Value {
        &self.config
    }

    /// The settings parsed into `T`.
    ///
    /// # Errors
    ///
    /// A permanent [`Error`] when the settings do not have the shape of `T`.
    pub fn config_as<T: DeserializeOwned>(&self) -> Result<T, Error> {
        T::deserialize(&self.config).map_err(|e| Error::permanent(format!("plugin config: {e}")))
    }
}

fn of_kind<K: Resource + DeserializeOwned>(objects: &[Object]) -> Result<Vec<K>, Error> {
    objects.iter().filter(|o| o.is::<K>()).map(Object::parse).collect()
}

fn find<'a>(objects: &'a [Object], api_version: &str, kind: &str, name: &str) -> Option<&'a Object> {
    objects.iter().find(|o| o.api_version() == api_version && o.kind() == kind && o.name() == name)
}

fn named<K: Resource + DeserializeOwned>(objects: &[Object], name: &str) -> Result<Option<K>, Error> {
    find(objects, K::API_VERSION, K::KIND, name).map(Object::parse).transpose()
}
