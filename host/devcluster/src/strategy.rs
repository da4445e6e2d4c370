//! What differs between resources, asked at named points of the request pipeline as
//! kube-apiserver's registry asks a resource's strategy: the [`Strategy`] every kind
//! implements (built-ins in `kinds/`, CRDs and custom resources in `crd/`), what its hooks
//! hand back to the server, and [`Resource`], a served type with the strategy of each version.
//! Nothing here names a kind; the pipeline, the store and the server know kinds only through it.

use std::ops::Deref;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::Value;

use super::allocator::{Allocations, Range};
use super::decode;
use super::names::NameRule;
use super::printers::Columns;
use super::resource::{GroupResource, ResourceType};
use super::selectors::SelectableFields;
use super::status::{ApiError, Cause};
use super::store::Store;
use super::tokens::Signer;
use super::user::User;
use super::webhook::{ClientConfig, Endpoint};

/// The kind-specific behaviour of a resource version. Every method has the behaviour of a kind
/// that adds nothing, so a strategy states only what its kind does. Grouped as the pipeline
/// asks: options of the resource, then create and update, deletion, and the resources that are
/// not stored as themselves.
pub(crate) trait Strategy: Send + Sync {
    // Options of the resource (the generic registry `Store`'s fields in kube-apiserver).

    /// Whether `metadata.generation` is kept: 1 on create, bumped by every change outside
    /// metadata (and status, when it is a subresource).
    fn tracks_generation(&self) -> bool {
        false
    }

    /// Whether DELETE answers with the deleted object rather than a `Status`
    /// (`ReturnDeletedObject`).
    fn returns_deleted(&self) -> bool {
        false
    }

    fn name_rule(&self) -> NameRule {
        NameRule::Subdomain
    }

    /// The fields a field selector may name and their values (the kind's field label conversion
    /// and `GetAttrs`); by default its name and namespace.
    fn selectable_fields(&self) -> SelectableFields {
        SelectableFields::metadata()
    }

    /// The subresources the kind serves besides `status` and `scale`, which its versions
    /// declare (`log`, `eviction`...); their kinds and verbs come from the upstream data.
    fn subresources(&self) -> &'static [&'static str] {
        &[]
    }

    /// Server-side table columns (the `TableConvertor`).
    fn columns(&self) -> Columns {
        Columns::name_and_age()
    }

    // Create and update, in the order the pipeline asks.

    /// `PrepareForCreate`: what a new object starts with whatever the client sent (its status:
    /// a create may not set status).
    fn prepare_for_create(&self, _obj: &mut Value) {}

    /// Removes the fields the version's schema does not know (a custom resource's structural
    /// pruning) and returns their paths, for `fieldValidation`. Built-ins are decoded by their
    /// upstream definition before this.
    fn prune(&self, _obj: &mut Value) -> Vec<String> {
        Vec::new()
    }

    /// The kind's `SetDefaults`, applied on every write (so fields a manager stops applying come
    /// back as defaults), before validation.
    fn defaults(&self, _obj: &mut Value) {}

    /// What the server generates for a new object once defaults are applied and its uid is
    /// known (a Job's selector and labels).
    fn generate(&self, _obj: &mut Value) {}

    /// The kind's validation, with the real server's field paths and messages.
    fn validate(&self, _obj: &Value) -> Vec<Cause> {
        Vec::new()
    }

    /// What an update may not change (`ValidateUpdate` beyond `validate`): immutable fields.
    fn validate_update(&self, _old: &Value, _new: &Value) -> Vec<Cause> {
        Vec::new()
    }

    /// Checks that run on create and update alike and see the object as stored on an update
    /// (`old`, in the version written): a custom resource's CEL rules, whose transition rules
    /// and ratcheting compare with it.
    fn validate_rules(&self, _old: Option<&Value>, _new: &Value) -> Vec<Cause> {
        Vec::new()
    }

    /// The numbers of ranges shared by the kind that `obj` holds (a Service's cluster IP and
    /// node ports). The store indexes them on every write, so [`Strategy::allocate`] looks them
    /// up instead of scanning the kind.
    fn allocated(&self, _obj: &Value) -> Vec<(&'static Range, u32)> {
        Vec::new()
    }

    /// Gives a written object what is allocated among all objects of its kind; `taken` is what
    /// the stored objects hold, `old` (the object as stored) among them.
    fn allocate(&self, _taken: &Allocations, _old: Option<&Value>, _obj: &mut Value) -> Result<(), Cause> {
        Ok(())
    }

    /// `Canonicalize`: the last change before storage, once the object is valid (a CRD's
    /// `Established` status).
    fn canonicalize(&self, _obj: &mut Value) {}

    /// `AfterCreate`/`AfterUpdate`: what the server does once a create or update of `obj` is
    /// stored (a CRD serves its custom resource).
    fn after_write(&self, _obj: &Value) -> Vec<Effect> {
        Vec::new()
    }

    // Deletion.

    /// The status of an object that a DELETE only marks terminating, leaving its removal to a
    /// controller once its contents are gone (a namespace); `None`: deleted as usual
    /// (finalizers, propagation policy).
    fn terminating_status(&self) -> Option<Value> {
        None
    }

    /// What `obj`, being deleted, holds that is deleted before it goes (a namespace's objects,
    /// a CRD's custom resources), and how it goes then; `None` while it holds nothing.
    fn contents(&self, _obj: &Value) -> Option<Contents> {
        None
    }

    /// `AfterDelete`: what the server does once `gone` is removed for good (a CRD takes its
    /// custom resources with it).
    fn after_delete(&self, _gone: &Value) -> Vec<Effect> {
        Vec::new()
    }

    // Resources that are not stored as themselves.

    /// The resource whose objects this one shows, converted (`events.k8s.io` Events are core
    /// Events): it is served by reading and writing that resource's objects.
    fn stored_as(&self) -> Option<StoredAs> {
        None
    }

    /// A stored object (of [`Strategy::stored_as`]) as this resource shows it.
    fn convert_from_stored(&self, stored: &Value) -> Value {
        stored.clone()
    }

    /// An object of this resource in its stored form.
    fn convert_to_stored(&self, obj: &Value) -> Value {
        obj.clone()
    }

    /// For a resource that is answered, never stored (the access and token reviews): the
    /// `status` of the answer to a create of `review`, or why the review is refused.
    fn answer(&self, _review: &Value, _context: &Answering<'_>) -> Option<Result<Value, ApiError>> {
        None
    }

    /// For a subresource whose create is answered, storing nothing (`serviceaccounts/token`):
    /// the answer to a create of `request` at the subresource `name` of `parent`; `None` for
    /// another subresource.
    fn answer_subresource(
        &self,
        _name: &str,
        _parent: &Value,
        _request: &Value,
        _context: &Answering<'_>,
    ) -> Option<Result<Value, ApiError>> {
        None
    }

    /// For a resource whose objects are made on each read, never stored
    /// (`componentstatuses`): its objects.
    fn computed(&self) -> Option<Vec<Value>> {
        None
    }

    /// A warning every answer about this resource carries (a deprecated resource's).
    fn warning(&self) -> Option<&'static str> {
        None
    }

    // Subresources besides `status` and `scale`, as kube-apiserver's REST storage of each.

    /// For a subresource that writes part of the object, as `status` writes its status (a
    /// pod's `ephemeralcontainers`, a CSR's `approval`): the JSON pointers of that part; an
    /// update through it takes them from the body and everything else from the stored object.
    fn subresource_fields(&self, _subresource: &str) -> Option<&'static [&'static str]> {
        None
    }

    /// The checks of an update through such a subresource (in place of the kind's own).
    fn validate_subresource(&self, _subresource: &str, _old: &Value, _new: &Value) -> Vec<Cause> {
        Vec::new()
    }

    /// For a subresource whose create acts on the object instead of making one (a pod's
    /// `binding` and `eviction`): the action, done through `objects`, and the answer (a
    /// `Status`); `None` for another subresource.
    fn act(&self, _action: &Action<'_>, _objects: &mut dyn Objects) -> Option<Result<Value, ApiError>> {
        None
    }

    /// For a subresource that streams from where the object runs (a pod's `log`, `exec`,
    /// `attach`, `portforward`): `Ok` when there is nothing to stream (a log of a pod not yet
    /// on a node), else why no stream can be opened; `None` for another subresource.
    fn connect(&self, _stream: &Action<'_>, _obj: &Value, _objects: &dyn Objects) -> Option<Result<(), ApiError>> {
        None
    }
}

/// What a resource that is answered rather than stored may read: who asks, the stored objects
/// (the roles and bindings an access review evaluates, the service account a token names) and
/// the key tokens are signed with.
pub(crate) struct Answering<'a> {
    pub user: &'a User,
    pub store: &'a Store,
    pub signer: &'a Signer,
    /// The namespace of the request's path; empty for cluster-scoped paths.
    pub namespace: &'a str,
}

/// One of the controllers a bare cluster cannot do without, though kube-controller-manager runs
/// them (a namespace's `default` service account, its root CA `ConfigMap`, aggregated cluster
/// roles): level-based, it says what brings the store where it should be, whatever changed.
pub(crate) trait Controller: Send + Sync {
    /// The resources whose changes may give it work.
    fn watches(&self) -> Vec<GroupResource>;

    /// The writes that bring `store` where the controller wants it; none once it is there.
    fn reconcile(&self, store: &Store) -> Vec<Write>;
}

/// A write a controller asks for, under its field manager.
#[derive(Debug, Clone)]
pub(crate) struct Write {
    pub resource: GroupResource,
    pub namespace: String,
    pub name: String,
    pub manager: &'static str,
    pub how: How,
}

/// How a controller's write is made.
#[derive(Debug, Clone)]
pub(crate) enum How {
    /// Created when absent (refused quietly when it exists or its namespace is going).
    Create(Value),
    /// Replaced (the stored object, changed).
    Update(Value),
    /// Applied with server-side apply, forcing conflicts.
    Apply(Value),
}

/// A request to a subresource that acts (`Strategy::act`) or streams (`Strategy::connect`).
pub(crate) struct Action<'a> {
    pub subresource: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
    /// The request's body (a `Binding`, an `Eviction`), `null` for a stream.
    pub body: &'a Value,
    /// The request's query parameters, in order.
    pub query: &'a [(String, String)],
    pub dry_run: bool,
}

/// The objects a subresource's action reads and writes, through the server's own paths.
pub(crate) trait Objects {
    fn get(&self, resource: &GroupResource, namespace: &str, name: &str) -> Option<Arc<Value>>;

    /// The objects of a resource in a namespace.
    fn list(&self, resource: &GroupResource, namespace: &str) -> Vec<Arc<Value>>;

    /// Stores `object` as it is, under a new resourceVersion, as a subresource's storage
    /// updates an object (`GuaranteedUpdate`, past the kind's update checks); nothing in a
    /// dry run.
    fn put(&mut self, resource: &GroupResource, object: Value) -> Arc<Value>;

    /// Deletes an object as a DELETE with `options` (a `DeleteOptions` object) does.
    fn delete(
        &mut self,
        resource: &GroupResource,
        namespace: &str,
        name: &str,
        options: &Value,
    ) -> Result<(), ApiError>;
}

/// A resource stored as another: its group, version and plural.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StoredAs {
    pub group: &'static str,
    pub version: &'static str,
    pub plural: &'static str,
}

/// What a deleted object holds (see [`Strategy::contents`]), as the namespace controller and
/// the CRD finalizer of kube-apiserver empty it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Contents {
    pub holds: Holds,
    pub then: Finish,
}

/// Where the objects held are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Holds {
    /// Every namespaced object in the namespace of this name.
    Namespace(String),
    /// Every object of this resource.
    Objects(GroupResource),
}

/// How the holder goes once what it holds is gone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Finish {
    /// It is removed, whatever finalizers it lists.
    Remove,
    /// This finalizer is lifted; it goes once no other is left.
    LiftFinalizer(&'static str),
}

/// What an after-commit hook asks of the server: the hook only says what, the server does it
/// under the same lock as the write (`Cluster::apply`).
pub(crate) enum Effect {
    /// Serve this resource, in place of what its defining object served before.
    Serve(Arc<Resource>),
    /// Stop serving what the object of this name defined, and remove its objects.
    Unserve(String),
}

/// How a resource's objects change version beyond their `apiVersion`: a CRD's conversion
/// webhook (`spec.conversion.strategy: Webhook`). Without one, only `apiVersion` changes.
pub(crate) trait Converter: Send + Sync {
    /// Where conversions are sent.
    fn client(&self) -> &ClientConfig;

    /// `objects`, each of another version, converted to `api_version` by the webhook at
    /// `endpoint`, in order and checked as apiextensions-apiserver checks a `ConversionReview`
    /// answer; the error is its message, naming `read` (the kind read: an object's `<gv>,
    /// Kind=<kind>`, or a list's).
    fn convert<'a>(
        &'a self,
        endpoint: &'a Endpoint,
        objects: Vec<Value>,
        api_version: &'a str,
        read: &'a str,
    ) -> BoxFuture<'a, Result<Vec<Value>, String>>;
}

/// A served resource: its type, the strategy of each version, and what defines it.
pub(crate) struct Resource {
    ty: ResourceType,
    /// The strategy of each version, in the order of `ty.versions`.
    strategies: Vec<Box<dyn Strategy>>,
    /// The name of the object that defines this resource (a CRD's); `None` for a built-in.
    pub defined_by: Option<String>,
    /// What converts its objects between versions besides `apiVersion`.
    converter: Option<Arc<dyn Converter>>,
}

impl Resource {
    /// A resource with one strategy per version of `ty`, in the same order.
    pub(crate) fn new(ty: ResourceType, strategies: Vec<Box<dyn Strategy>>, defined_by: Option<String>) -> Resource {
        Resource { ty, strategies, defined_by, converter: None }
    }

    /// The resource, its objects converted between versions by `converter`.
    #[must_use]
    pub(crate) fn with_converter(mut self, converter: Arc<dyn Converter>) -> Resource {
        self.converter = Some(converter);
        self
    }

    pub(crate) fn converter(&self) -> Option<&Arc<dyn Converter>> {
        self.converter.as_ref()
    }

    /// Reads `obj` as `version` of this resource, as the real server's codec does: a built-in
    /// by its upstream definition, then the fields the version's schema lacks pruned. Returns
    /// the object and the paths of the fields dropped (for `fieldValidation`); the error is the
    /// decoder's, naming the field of the wrong type.
    pub(crate) fn decode(&self, version: &str, obj: Value) -> Result<(Value, Vec<String>), String> {
        let (mut obj, mut unknown) = match self.version(version).and_then(|v| v.definition) {
            Some(definition) => {
                let decoded = decode::decode(&self.kind, definition, &obj)?;
                (decoded.object, decoded.unknown)
            }
            None => (obj, Vec::new()),
        };
        unknown.extend(self.strategy(version).prune(&mut obj));
        Ok((obj, unknown))
    }

    /// The strategy of `version`; the storage version's for a version the resource lacks.
    pub(crate) fn strategy(&self, version: &str) -> &dyn Strategy {
        let i = self.ty.versions.iter().position(|v| v.name == version).unwrap_or(0);
        self.strategies.get(i).map_or(&Plain, |s| &**s)
    }

    /// The storage version's strategy: what does not depend on the version a request names
    /// (deletion, indexing, after-commit hooks).
    pub(crate) fn storage(&self) -> &dyn Strategy {
        self.strategy(self.ty.storage_version())
    }
}

impl Deref for Resource {
    type Target = ResourceType;

    fn deref(&self) -> &ResourceType {
        &self.ty
    }
}

/// A kind that adds nothing to the generic pipeline.
pub(crate) struct Plain;

impl Strategy for Plain {}
