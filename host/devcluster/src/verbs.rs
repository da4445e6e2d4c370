//! The verbs on stored objects and the write pipeline they share.

use std::sync::Arc;

use base64::Engine as _;
use serde_json::{Value, json};

use super::apply::{self, Request, Scope};
use super::crd;
use super::decode;
use super::discovery::ResourceType;
use super::metadata;
use super::names;
use super::object::{self, FOREGROUND};
use super::patch::{self, PatchFailure};
use super::schema;
use super::selectors::{FieldSelector, LabelSelector};
use super::status::{self, ApiError, Cause};
use super::store::{GroupResource, Store};

/// The resource, version, namespace and name a request addresses.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    pub rt: Arc<ResourceType>,
    pub version: String,
    /// The namespace from the URL; `None` for cluster-scoped resources and all-namespace lists.
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub subresource: Option<String>,
    /// The client asked for events.k8s.io/v1 Events, served from the core/v1 ones (`rt`).
    pub events_v1: bool,
}

impl Target {
    pub(crate) fn gr(&self) -> GroupResource {
        (self.rt.group.clone(), self.rt.plural.clone())
    }

    fn ns(&self) -> &str {
        self.namespace.as_deref().unwrap_or("")
    }

    fn name(&self) -> &str {
        self.name.as_deref().unwrap_or("")
    }

    /// A custom resource's `openAPIV3Schema` (pruning, defaulting and validation follow it).
    fn schema(&self) -> Option<&Value> {
        self.rt.version(&self.version).and_then(|v| v.schema.as_ref())
    }

    /// The schema that gives the object its list and map types: a custom resource's, or a
    /// built-in's upstream definition.
    pub(crate) fn shape(&self) -> Option<&Value> {
        self.rt.version(&self.version).and_then(|v| v.schema.as_ref().or(v.definition))
    }

    fn status_separate(&self) -> bool {
        self.rt.has_status(&self.version)
    }

    fn scope(&self) -> Scope {
        if self.subresource.as_deref() == Some("status") {
            Scope::Status
        } else {
            Scope::Main { status_separate: self.status_separate() }
        }
    }
}

/// Options common to writes.
#[derive(Debug, Clone, Default)]
pub(crate) struct WriteOptions {
    pub dry_run: bool,
    /// `fieldManager`, or the user agent's product name when the request names none.
    pub manager: String,
    /// Whether `fieldManager` was given (server-side apply requires it).
    pub explicit_manager: bool,
    pub force: bool,
    /// `fieldValidation`: what happens to unknown fields.
    pub validation: FieldValidation,
    /// Warnings for the response's `Warning` headers (unknown fields dropped under `Warn`).
    pub warnings: std::cell::RefCell<Vec<String>>,
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

/// Selectors and paging of a list (or watch).
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

/// How a DELETE should proceed (`DeleteOptions` body and query merged).
#[derive(Debug, Clone, Default)]
pub(crate) struct DeleteOptions {
    pub propagation: Option<String>,
    pub precondition_uid: Option<String>,
    pub precondition_rv: Option<String>,
    pub dry_run: bool,
}

/// The object as the client asked for it (the requested version of a custom resource).
pub(crate) fn present(rt: &ResourceType, version: &str, obj: &Value) -> Value {
    let mut out = obj.clone();
    if let Some(map) = out.as_object_mut() {
        map.insert("apiVersion".into(), json!(rt.api_version(version)));
        map.insert("kind".into(), json!(rt.kind));
    }
    out
}

pub(crate) fn get(store: &Store, t: &Target) -> Result<Value, ApiError> {
    let obj =
        store.get(&t.gr(), t.ns(), t.name()).ok_or_else(|| ApiError::not_found(&t.rt.group, &t.rt.plural, t.name()))?;
    Ok(present(&t.rt, &t.version, &obj))
}

/// A list of the matching objects (`ConfigMapList`...), with `continue` when `limit` cut it.
/// The items are the stored objects, shared: rendering them is left to the caller, after
/// the store's lock is released.
pub(crate) fn list(store: &Store, t: &Target, filter: &Filter, paging: &Paging) -> Result<Listed, ApiError> {
    let (rv, start) = match &paging.continue_token {
        Some(token) => {
            let (rv, ns, name) = decode_continue(token)?;
            (rv, Some((ns, name)))
        }
        None => (paging.exact.unwrap_or_else(|| store.current_rv()), None),
    };
    let mut objects = store.list_at(&t.gr(), t.namespace.as_deref(), rv, start.as_ref()).ok_or_else(|| {
        ApiError::expired(if start.is_some() {
            "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter."
        } else {
            "The resourceVersion for the provided list is too old."
        })
    })?;
    let limit = paging.limit.filter(|l| *l > 0).unwrap_or(usize::MAX);
    let mut items: Vec<Arc<Value>> = Vec::new();
    let mut more = false;
    for obj in objects.by_ref() {
        if !filter.matches(obj) {
            continue;
        }
        if items.len() == limit {
            more = true;
            break;
        }
        items.push(obj.clone());
    }
    let mut metadata = json!({ "resourceVersion": rv.to_string() });
    if more && let Some(last) = items.last() {
        metadata["continue"] = json!(encode_continue(rv, object::namespace(last), object::name(last)));
        // As the real server: counted only without selectors, where it costs no matching.
        if filter.labels.is_empty() && filter.fields.is_empty() {
            metadata["remainingItemCount"] = json!(1 + objects.count());
        }
    }
    Ok(Listed { rt: t.rt.clone(), version: t.version.clone(), metadata, items })
}

/// A list read from the store, not yet rendered: its objects are shared with the store.
pub(crate) struct Listed {
    rt: Arc<ResourceType>,
    version: String,
    /// The list's `metadata` (`resourceVersion`, `continue`, `remainingItemCount`).
    pub metadata: Value,
    pub items: Vec<Arc<Value>>,
}

impl Listed {
    /// The items in the requested version.
    pub(crate) fn presented(&self) -> Vec<Value> {
        self.items.iter().map(|o| present(&self.rt, &self.version, o)).collect()
    }

    /// The whole list (`ConfigMapList`...).
    pub(crate) fn render(&self) -> Value {
        json!({
            "apiVersion": self.rt.api_version(&self.version),
            "kind": format!("{}List", self.rt.kind),
            "metadata": self.metadata,
            "items": self.presented(),
        })
    }
}

fn encode_continue(rv: u64, ns: &str, name: &str) -> String {
    let token = json!({ "v": "meta.k8s.io/v1", "rv": rv, "namespace": ns, "start": name });
    base64::engine::general_purpose::URL_SAFE.encode(token.to_string())
}

/// The snapshot version and the last key (namespace, name) of a continue token.
fn decode_continue(token: &str) -> Result<(u64, String, String), ApiError> {
    let bad = |why: &str| ApiError::bad_request(format!("continue key is not valid: {why}"));
    let bytes = base64::engine::general_purpose::URL_SAFE.decode(token).map_err(|e| bad(&e.to_string()))?;
    let value: Value = serde_json::from_slice(&bytes).map_err(|e| bad(&e.to_string()))?;
    let field = |f: &str| value.get(f).and_then(Value::as_str).map(String::from).ok_or_else(|| bad("incomplete token"));
    let rv = value.get("rv").and_then(Value::as_u64).ok_or_else(|| bad("no resource version"))?;
    Ok((rv, field("namespace")?, field("start")?))
}

/// How a write records field ownership.
enum Ownership<'a> {
    /// An ordinary write: the manager takes what it changed.
    Update(&'a str),
    /// Server-side apply already computed `managedFields`.
    Applied,
}

pub(crate) fn create(
    store: &mut Store,
    t: &Target,
    body: Value,
    opts: &WriteOptions,
) -> Result<(u16, Value), ApiError> {
    if t.subresource.is_some() {
        return Err(ApiError::method_not_allowed());
    }
    write(store, t, None, body, opts, &Ownership::Update(&opts.manager))
}

pub(crate) fn update(
    store: &mut Store,
    t: &Target,
    body: Value,
    opts: &WriteOptions,
) -> Result<(u16, Value), ApiError> {
    if t.subresource.as_deref() == Some("scale") {
        return update_scale(store, t, &body, opts);
    }
    let old = existing(store, t)?;
    // A PUT's uid is a precondition, checked before anything else (the registry's
    // GuaranteedUpdate); a patch that changes it fails validation instead (below).
    let body_uid = object::uid(&body);
    if !body_uid.is_empty() && body_uid != object::uid(&old) {
        return Err(ApiError::conflict(
            &t.rt.group,
            &t.rt.plural,
            t.name(),
            &format!("Precondition failed: UID in precondition: {body_uid}, UID in object meta: {}", object::uid(&old)),
        ));
    }
    write(store, t, Some(&old), body, opts, &Ownership::Update(&opts.manager))
}

fn existing(store: &Store, t: &Target) -> Result<Arc<Value>, ApiError> {
    store.get(&t.gr(), t.ns(), t.name()).ok_or_else(|| ApiError::not_found(&t.rt.group, &t.rt.plural, t.name()))
}

/// The patch types the server understands, by `Content-Type`.
pub(crate) const PATCH_TYPES: [&str; 4] = [
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
];

pub(crate) fn patch(
    store: &mut Store,
    t: &Target,
    body: &[u8],
    content_type: &str,
    opts: &WriteOptions,
) -> Result<(u16, Value), ApiError> {
    let is_apply = content_type == "application/apply-patch+yaml";
    let accepted: Vec<&str> = PATCH_TYPES
        .iter()
        .copied()
        .filter(|p| t.rt.builtin || *p != "application/strategic-merge-patch+json")
        .collect();
    if !accepted.contains(&content_type) {
        return Err(ApiError::unsupported_media_type(content_type, &accepted));
    }
    if opts.force && !is_apply {
        return Err(ApiError::bad_request("force is only supported for apply patches"));
    }
    if is_apply {
        return apply_patch(store, t, body, opts);
    }
    let patch_doc: Value =
        serde_json::from_slice(body).map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
    if t.subresource.as_deref() == Some("scale") {
        let scale = scale_of(store, t)?;
        let patched = match content_type {
            "application/json-patch+json" => patch::json_patch(&scale, &patch_doc).map_err(patch_error)?,
            _ => patch::merge_patch(&scale, &patch_doc).map_err(ApiError::bad_request)?,
        };
        return update_scale(store, t, &patched, opts);
    }
    let old = existing(store, t)?;
    let base = present(&t.rt, &t.version, &old);
    let patched = match content_type {
        "application/json-patch+json" => patch::json_patch(&base, &patch_doc).map_err(patch_error)?,
        "application/merge-patch+json" => patch::merge_patch(&base, &patch_doc).map_err(ApiError::bad_request)?,
        _ => patch::strategic_merge(&base, &patch_doc, t.shape()).map_err(ApiError::bad_request)?,
    };
    write(store, t, Some(&old), patched, opts, &Ownership::Update(&opts.manager))
}

fn patch_error(failure: PatchFailure) -> ApiError {
    match failure {
        PatchFailure::Malformed(e) => ApiError::bad_request(e),
        PatchFailure::Unappliable(e) => ApiError::unprocessable(e),
    }
}

fn apply_patch(store: &mut Store, t: &Target, body: &[u8], opts: &WriteOptions) -> Result<(u16, Value), ApiError> {
    if !opts.explicit_manager {
        return Err(ApiError::bad_request(
            "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch",
        ));
    }
    let config: Value =
        serde_yaml_ng::from_slice(body).map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
    if !config.is_object() {
        return Err(ApiError::bad_request("apply configuration must be an object"));
    }
    let api_version = t.rt.api_version(&t.version);
    let given_version = config.get("apiVersion").and_then(Value::as_str).unwrap_or_default();
    let given_kind = config.get("kind").and_then(Value::as_str).unwrap_or_default();
    if given_version.is_empty() || given_kind.is_empty() {
        return Err(ApiError::bad_request("invalid object type: apiVersion and kind must be set"));
    }
    if given_version != api_version || given_kind != t.rt.kind {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({given_version}) or kind ({given_kind}) does not match the expected ({api_version}, {})",
            t.rt.kind
        )));
    }
    let config_name = object::name(&config);
    if !config_name.is_empty() && config_name != t.name() {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({config_name}) does not match the name on the URL ({})",
            t.name()
        )));
    }
    let old = store.get(&t.gr(), t.ns(), t.name());
    if old.is_none() && t.subresource.is_some() {
        return Err(ApiError::not_found(&t.rt.group, &t.rt.plural, t.name()));
    }
    let live = old.as_deref().map(|o| present(&t.rt, &t.version, o));
    let req = Request { manager: &opts.manager, api_version: &api_version, scope: t.scope(), schema: t.shape() };
    let mut config = config;
    if let Some(schema) = t.schema() {
        let unknown = schema::prune(&mut config, schema);
        check_unknown(t, opts, &unknown)?;
    }
    let merged = match apply::apply(live.as_ref(), &config, &req, opts.force) {
        Ok(Ok(merged)) => merged,
        Ok(Err(conflicts)) => {
            return Err(ApiError::apply_conflict(conflicts.message, &conflicts.causes));
        }
        Err(e) => {
            return Err(ApiError::unprocessable(format!("failed to create typed patch object: {e}")));
        }
    };
    let mut merged = merged;
    if old.is_none() {
        object::set_meta(&mut merged, "name", json!(t.name()));
    }
    write(store, t, old.as_ref(), merged, opts, &Ownership::Applied)
}

/// The shared write pipeline of create (`old` is `None`) and update, step by step
/// in the real API server's order.
#[allow(clippy::too_many_lines)] // one pipeline; its order is the point
fn write(
    store: &mut Store,
    t: &Target,
    old: Option<&Arc<Value>>,
    mut new: Value,
    opts: &WriteOptions,
    ownership: &Ownership<'_>,
) -> Result<(u16, Value), ApiError> {
    let rt = &t.rt;
    let api_version = rt.api_version(&t.version);
    if !new.is_object() {
        return Err(ApiError::bad_request("the request body must be a JSON object"));
    }
    check_type(rt, &t.version, &new)?;
    new["apiVersion"] = json!(api_version);
    new["kind"] = json!(rt.kind);
    if new.get("metadata").is_some_and(|m| !m.is_object() && !m.is_null()) {
        return Err(ApiError::bad_request("metadata must be an object"));
    }

    let body_ns = object::namespace(&new).to_string();
    if rt.namespaced {
        if !body_ns.is_empty() && body_ns != t.ns() {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        object::set_meta(&mut new, "namespace", json!(t.ns()));
    } else {
        object::remove_meta(&mut new, "namespace");
    }

    match old {
        None => prepare_create(store, t, &mut new)?,
        Some(old) => prepare_update(t, old, &mut new)?,
    }
    object::remove_meta(&mut new, "resourceVersion");

    let name = object::name(&new).to_string();
    let causes = metadata::validate(&new);
    if !causes.is_empty() {
        return Err(ApiError::invalid(rt, &name, &causes));
    }
    if let Some(definition) = rt.version(&t.version).and_then(|v| v.definition) {
        match decode::decode(&rt.kind, definition, &new) {
            Ok(decoded) => {
                check_unknown(t, opts, &decoded.unknown)?;
                new = decoded.object;
            }
            Err(e) => {
                return Err(ApiError::bad_request(format!(
                    "{kind} in version {version:?} cannot be handled as a {kind}: {e}",
                    kind = rt.kind,
                    version = t.version
                )));
            }
        }
        rt.strategy().defaults(&mut new);
        if old.is_none() {
            rt.strategy().generate(&mut new);
        }
        let causes = rt.strategy().validate(&new);
        if !causes.is_empty() {
            return Err(ApiError::invalid(rt, &name, &causes));
        }
    }
    if let Err(cause) = rt.strategy().allocate(store.allocations(&t.gr()), old.map(|o| &**o), &mut new) {
        return Err(ApiError::invalid(rt, &name, &[cause]));
    }
    if let Some(schema) = t.schema() {
        let unknown = schema::prune(&mut new, schema);
        check_unknown(t, opts, &unknown)?;
        schema::apply_defaults(&mut new, schema);
        let causes = schema::validate(&new, schema);
        if !causes.is_empty() {
            return Err(ApiError::invalid(rt, &name, &causes));
        }
    }
    if rt.group == "apiextensions.k8s.io" {
        crd::default_crd(&mut new);
        let causes = crd::validate(&new);
        if !causes.is_empty() {
            return Err(ApiError::invalid(rt, &name, &causes));
        }
        let spec_rt = crd::resource_type(&new);
        if store.registry.plural_taken(&name, &spec_rt.group, &spec_rt.plural) {
            return Err(ApiError::invalid(
                rt,
                &name,
                &[Cause::new(
                    "FieldValueInvalid",
                    "spec.names.plural",
                    format!("Invalid value: {:?}: the resource is already served", spec_rt.plural),
                )],
            ));
        }
        crd::set_established(&mut new);
    }

    if let Some(old) = old
        && rt.generation
        && spec_changed(old, &new, t.status_separate())
    {
        object::set_meta(&mut new, "generation", json!(object::generation(old) + 1));
    }

    if let Ownership::Update(manager) = ownership {
        let old_view = old.map(|o| present(rt, &t.version, o));
        let req = Request { manager, api_version: &api_version, scope: t.scope(), schema: t.shape() };
        apply::record_update(old_view.as_ref(), &mut new, &req);
    }

    if let Some(old) = old {
        if object::without_volatile(&present(rt, &t.version, old)) == object::without_volatile(&new)
            && old.pointer("/metadata/managedFields") == new.pointer("/metadata/managedFields")
        {
            return Ok((200, present(rt, &t.version, old)));
        }
        if object::is_deleting(&new) && object::finalizers(&new).is_empty() {
            if opts.dry_run {
                return Ok((200, new));
            }
            let gone = store.remove(&t.gr(), t.ns(), &name).unwrap_or_else(|| Arc::new(new.clone()));
            after_removal(store, rt, &gone);
            return Ok((200, present(rt, &t.version, &gone)));
        }
    }
    if opts.dry_run {
        if let Some(old) = old {
            object::set_meta(&mut new, "resourceVersion", json!(object::meta_str(old, "resourceVersion")));
        }
        return Ok((if old.is_some() { 200 } else { 201 }, new));
    }
    if rt.group == "apiextensions.k8s.io" {
        if new.to_string().contains("\"x-kubernetes-validations\"") {
            tracing::warn!(crd = %name, "x-kubernetes-validations (CEL) rules are not enforced by the embedded API server");
        }
        store.registry.register_crd(&name, crd::resource_type(&new));
    }
    let stored = store.put(&t.gr(), new);
    Ok((if old.is_some() { 200 } else { 201 }, present(rt, &t.version, &stored)))
}

/// A create's own checks and metadata: the name (or one generated), the namespace
/// that must exist and not be terminating, and the fields only the server sets.
fn prepare_create(store: &Store, t: &Target, new: &mut Value) -> Result<(), ApiError> {
    let rt = &t.rt;
    let mut name = object::name(new).to_string();
    if name.is_empty() {
        let prefix = object::meta_str(new, "generateName").to_string();
        if prefix.is_empty() {
            return Err(ApiError::invalid(
                rt,
                "",
                &[Cause::new(
                    "FieldValueRequired",
                    "metadata.name",
                    "Required value: name or generateName is required",
                )],
            ));
        }
        name = names::generated_name(&prefix);
        object::set_meta(new, "name", json!(name));
    }
    match store.get(&(String::new(), "namespaces".into()), "", t.ns()) {
        None if rt.namespaced => return Err(ApiError::not_found("", "namespaces", t.ns())),
        Some(ns) if rt.namespaced && object::is_deleting(&ns) => {
            return Err(ApiError::forbidden(
                &rt.group,
                &rt.plural,
                &name,
                &format!("unable to create new content in namespace {} because it is being terminated", t.ns()),
            ));
        }
        _ => {}
    }
    if let Some(crd) = served_by_crd(store, rt)
        && object::is_deleting(&crd)
    {
        return Err(ApiError::method_not_allowed_because(
            "create not allowed while custom resource definition is terminating",
        ));
    }
    if let Some(cause) = names::check_name(rt.strategy().name_rule(), &name) {
        return Err(ApiError::invalid(rt, &name, &[cause]));
    }
    if store.get(&t.gr(), t.ns(), &name).is_some() {
        return Err(ApiError::already_exists(&rt.group, &rt.plural, &name));
    }
    for field in ["uid", "resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink", "generation"]
    {
        object::remove_meta(new, field);
    }
    object::set_meta(new, "uid", json!(uuid::Uuid::new_v4().to_string()));
    object::set_meta(new, "creationTimestamp", json!(object::now()));
    if rt.generation {
        object::set_meta(new, "generation", json!(1));
    }
    if let Some(status) = rt.strategy().initial_status(new) {
        new["status"] = status;
    } else if !rt.builtin
        && t.status_separate()
        && let Some(map) = new.as_object_mut()
    {
        map.remove("status");
    }
    Ok(())
}

/// An update's own checks and metadata: name, resourceVersion and uid preconditions,
/// immutable fields, the status kept or taken from the status endpoint, and the
/// fields only the server sets carried over from `old`.
fn prepare_update(t: &Target, old: &Value, new: &mut Value) -> Result<(), ApiError> {
    let rt = &t.rt;
    let status_endpoint = t.subresource.as_deref() == Some("status");
    let name = t.name();
    let body_name = object::name(new);
    if !body_name.is_empty() && body_name != name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({name})"
        )));
    }
    object::set_meta(new, "name", json!(name));
    let body_rv = object::meta_str(new, "resourceVersion");
    if !body_rv.is_empty() && body_rv != object::meta_str(old, "resourceVersion") {
        return Err(ApiError::modified(&rt.group, &rt.plural, name));
    }
    // BeforeUpdate keeps a uid the body gives, and ValidateObjectMetaUpdate refuses a
    // changed one: what an apply carrying a made-up uid gets on an existing object (and
    // on a missing one, a create, the server's own uid).
    let body_uid = object::uid(new);
    if !body_uid.is_empty() && body_uid != object::uid(old) {
        return Err(ApiError::invalid(
            rt,
            name,
            &[Cause::new(
                "FieldValueInvalid",
                "metadata.uid",
                format!("Invalid value: \"{body_uid}\": field is immutable"),
            )],
        ));
    }
    if rt.builtin
        && rt.group == "apps"
        && !status_endpoint
        && new.pointer("/spec/selector").is_some()
        && new.pointer("/spec/selector") != old.pointer("/spec/selector")
    {
        let selector = new.pointer("/spec/selector").cloned().unwrap_or_default();
        return Err(ApiError::invalid(
            rt,
            name,
            &[Cause::new(
                "FieldValueInvalid",
                "spec.selector",
                format!("Invalid value: {selector}: field is immutable"),
            )],
        ));
    }
    if status_endpoint {
        let status = new.get("status").cloned();
        let managed = new.get("metadata").and_then(|m| m.get("managedFields")).cloned();
        *new = present(rt, &t.version, old);
        match status {
            Some(s) => new["status"] = s,
            None => {
                if let Some(map) = new.as_object_mut() {
                    map.remove("status");
                }
            }
        }
        if let Some(m) = managed {
            object::set_meta(new, "managedFields", m);
        }
    } else if t.status_separate() {
        match old.get("status") {
            Some(s) => new["status"] = s.clone(),
            None => {
                if let Some(map) = new.as_object_mut() {
                    map.remove("status");
                }
            }
        }
    }
    for field in ["uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation"] {
        match old.get("metadata").and_then(|m| m.get(field)) {
            Some(v) => object::set_meta(new, field, v.clone()),
            None => object::remove_meta(new, field),
        }
    }
    if object::is_deleting(old) {
        let before = object::finalizers(old);
        let added: Vec<String> = object::finalizers(new).into_iter().filter(|f| !before.contains(f)).collect();
        if !added.is_empty() {
            return Err(ApiError::invalid(
                rt,
                name,
                &[Cause::new(
                    "FieldForbidden",
                    "metadata.finalizers",
                    format!(
                        "Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers {added:?}"
                    ),
                )],
            ));
        }
    }
    Ok(())
}

/// Field validation of unknown fields: a 400 (Strict) or warnings (Warn), worded like the real server.
fn check_unknown(t: &Target, opts: &WriteOptions, unknown: &[String]) -> Result<(), ApiError> {
    if unknown.is_empty() {
        return Ok(());
    }
    match opts.validation {
        FieldValidation::Ignore => return Ok(()),
        FieldValidation::Warn => {
            opts.warnings.borrow_mut().extend(unknown.iter().map(|u| format!("unknown field {u:?}")));
            return Ok(());
        }
        FieldValidation::Strict => {}
    }
    let listed: Vec<String> = unknown.iter().map(|u| format!("unknown field {u:?}")).collect();
    Err(ApiError::bad_request(format!(
        "{kind} in version {version:?} cannot be handled as a {kind}: strict decoding error: {}",
        listed.join(", "),
        kind = t.rt.kind,
        version = t.version,
    )))
}

/// Refuses a body whose `apiVersion`/`kind` name another type.
fn check_type(rt: &ResourceType, version: &str, obj: &Value) -> Result<(), ApiError> {
    let given_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or_default();
    let given_kind = obj.get("kind").and_then(Value::as_str).unwrap_or_default();
    let version_ok = given_version.is_empty()
        || given_version == rt.api_version(version)
        || rt.versions.iter().any(|v| rt.api_version(&v.name) == given_version);
    if !version_ok || (!given_kind.is_empty() && given_kind != rt.kind) {
        return Err(ApiError::bad_request(format!(
            "the object provided is unrecognized (must be of type {}): {given_kind} in version {given_version:?}",
            rt.kind
        )));
    }
    Ok(())
}

/// Whether anything but metadata (and status, when served separately) differs.
fn spec_changed(old: &Value, new: &Value, status_separate: bool) -> bool {
    let strip = |v: &Value| {
        let mut m = v.as_object().cloned().unwrap_or_default();
        m.remove("metadata");
        m.remove("apiVersion");
        m.remove("kind");
        if status_separate {
            m.remove("status");
        }
        m
    };
    strip(old) != strip(new)
}

/// DELETE of one object: preconditions, finalizers, propagation policy.
pub(crate) fn delete(store: &mut Store, t: &Target, opts: &DeleteOptions) -> Result<(u16, Value), ApiError> {
    let rt = &t.rt;
    let name = t.name();
    let obj = existing(store, t)?;
    if let Some(uid) = &opts.precondition_uid
        && uid != object::uid(&obj)
    {
        return Err(ApiError::conflict(
            &rt.group,
            &rt.plural,
            name,
            &format!("Precondition failed: UID in precondition: {uid}, UID in object meta: {}", object::uid(&obj)),
        ));
    }
    if let Some(rv) = &opts.precondition_rv
        && rv != object::meta_str(&obj, "resourceVersion")
    {
        return Err(ApiError::conflict(
            &rt.group,
            &rt.plural,
            name,
            &format!(
                "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
                object::meta_str(&obj, "resourceVersion")
            ),
        ));
    }
    let policy = opts.propagation.as_deref().unwrap_or("Background");
    if !matches!(policy, "Background" | "Foreground" | "Orphan") {
        return Err(ApiError::invalid(
            rt,
            name,
            &[Cause::new(
                "FieldValueNotSupported",
                "propagationPolicy",
                format!("Unsupported value: {policy:?}: supported values: \"Foreground\", \"Background\", \"Orphan\""),
            )],
        ));
    }
    if opts.dry_run {
        return Ok((200, present(rt, &t.version, &obj)));
    }
    if rt.strategy().deleted_by_controller() {
        // The namespace controller empties a terminating namespace, then removes it (gc.rs).
        if object::is_deleting(&obj) {
            return Ok((200, present(rt, &t.version, &obj)));
        }
        let mut terminating = (*obj).clone();
        object::set_meta(&mut terminating, "deletionTimestamp", json!(object::now()));
        object::set_meta(&mut terminating, "deletionGracePeriodSeconds", json!(0));
        terminating["status"] = json!({ "phase": "Terminating" });
        let stored = store.put(&t.gr(), terminating);
        return Ok((200, present(rt, &t.version, &stored)));
    }
    if policy == "Orphan" {
        orphan_dependents(store, object::uid(&obj));
    }
    let mut finalizers = object::finalizers(&obj);
    if policy == "Foreground" && !finalizers.iter().any(|f| f == FOREGROUND) {
        finalizers.push(FOREGROUND.to_string());
    }
    if !finalizers.is_empty() {
        if object::is_deleting(&obj) && finalizers == object::finalizers(&obj) {
            return Ok((200, present(rt, &t.version, &obj)));
        }
        let mut pending = (*obj).clone();
        object::set_finalizers(&mut pending, &finalizers);
        if !object::is_deleting(&pending) {
            object::set_meta(&mut pending, "deletionTimestamp", json!(object::now()));
            object::set_meta(&mut pending, "deletionGracePeriodSeconds", json!(0));
            if rt.generation {
                object::set_meta(&mut pending, "generation", json!(object::generation(&obj) + 1));
            }
        }
        let stored = store.put(&t.gr(), pending);
        return Ok((200, present(rt, &t.version, &stored)));
    }
    let gone = store.remove(&t.gr(), t.ns(), name).ok_or_else(|| ApiError::not_found(&rt.group, &rt.plural, name))?;
    after_removal(store, rt, &gone);
    if rt.return_deleted {
        Ok((200, present(rt, &t.version, &gone)))
    } else {
        Ok((200, status::success(&rt.group, &rt.plural, name, object::uid(&gone))))
    }
}

/// Cascades of removing an object for good (a CRD takes its resource with it).
pub(crate) fn after_removal(store: &mut Store, rt: &ResourceType, gone: &Value) {
    rt.strategy().removed(store, gone);
}

/// The CRD that defines a custom resource.
pub(crate) fn served_by_crd(store: &Store, rt: &ResourceType) -> Option<Arc<Value>> {
    if rt.builtin {
        return None;
    }
    let crds = ("apiextensions.k8s.io".to_string(), "customresourcedefinitions".to_string());
    store.get(&crds, "", &format!("{}.{}", rt.plural, rt.group))
}

/// Removes ownerReferences to `owner_uid` from every object (`propagationPolicy: Orphan`).
fn orphan_dependents(store: &mut Store, owner_uid: &str) {
    for (gr, (ns, name)) in store.dependents_of(owner_uid) {
        let Some(dep) = store.get(&gr, &ns, &name) else {
            continue;
        };
        let mut dep = (*dep).clone();
        let refs: Vec<Value> = object::owner_refs(&dep)
            .iter()
            .filter(|r| r.get("uid").and_then(Value::as_str) != Some(owner_uid))
            .cloned()
            .collect();
        if refs.is_empty() {
            object::remove_meta(&mut dep, "ownerReferences");
        } else {
            object::set_meta(&mut dep, "ownerReferences", Value::Array(refs));
        }
        store.put(&gr, dep);
    }
}

/// DELETE on a collection: deletes every matching object, answers with the list of them.
#[allow(clippy::unnecessary_wraps)] // the signature of every verb
pub(crate) fn delete_collection(
    store: &mut Store,
    t: &Target,
    filter: &Filter,
    opts: &DeleteOptions,
) -> Result<(u16, Value), ApiError> {
    let mut items = Vec::new();
    for obj in store.list(&t.gr(), t.namespace.as_deref()) {
        if !filter.matches(&obj) {
            continue;
        }
        let one = Target {
            name: Some(object::name(&obj).to_string()),
            namespace: t
                .namespace
                .clone()
                .or_else(|| Some(object::namespace(&obj).to_string()))
                .filter(|n| !n.is_empty()),
            ..t.clone()
        };
        let opts = DeleteOptions { precondition_uid: None, precondition_rv: None, ..opts.clone() };
        if let Ok((_, gone)) = delete(store, &one, &opts) {
            if gone.get("kind").and_then(Value::as_str) == Some("Status") {
                items.push(present(&t.rt, &t.version, &obj));
            } else {
                items.push(gone);
            }
        }
    }
    Ok((
        200,
        json!({
            "apiVersion": t.rt.api_version(&t.version),
            "kind": format!("{}List", t.rt.kind),
            "metadata": { "resourceVersion": store.current_rv().to_string() },
            "items": items,
        }),
    ))
}

fn read_path<'a>(obj: &'a Value, dotted: &str) -> Option<&'a Value> {
    let mut cur = obj;
    for part in dotted.trim_start_matches('.').split('.') {
        cur = cur.get(part)?;
    }
    Some(cur)
}

/// The `autoscaling/v1` `Scale` view of an object with a scale subresource.
fn scale_of(store: &Store, t: &Target) -> Result<Value, ApiError> {
    let obj = existing(store, t)?;
    let paths = t.rt.version(&t.version).and_then(|v| v.scale.clone()).ok_or_else(ApiError::no_route)?;
    let replicas = read_path(&obj, &paths.spec_replicas).and_then(Value::as_i64).unwrap_or(0);
    let status_replicas = read_path(&obj, &paths.status_replicas).and_then(Value::as_i64).unwrap_or(0);
    let selector = paths.label_selector.as_deref().and_then(|p| read_path(&obj, p)).map(|s| match s {
        Value::String(s) => s.clone(),
        other => LabelSelector::from_object(other).map(|l| l.to_text()).unwrap_or_default(),
    });
    let mut status = json!({ "replicas": status_replicas });
    if let Some(selector) = selector {
        status["selector"] = json!(selector);
    }
    let meta = obj.get("metadata").cloned().unwrap_or_default();
    let mut scale_meta = json!({});
    for field in ["name", "namespace", "uid", "resourceVersion", "creationTimestamp"] {
        if let Some(v) = meta.get(field) {
            scale_meta[field] = v.clone();
        }
    }
    Ok(json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": scale_meta,
        "spec": { "replicas": replicas },
        "status": status,
    }))
}

pub(crate) fn get_scale(store: &Store, t: &Target) -> Result<Value, ApiError> {
    scale_of(store, t)
}

fn update_scale(store: &mut Store, t: &Target, scale: &Value, opts: &WriteOptions) -> Result<(u16, Value), ApiError> {
    let old = existing(store, t)?;
    let paths = t.rt.version(&t.version).and_then(|v| v.scale.clone()).ok_or_else(ApiError::no_route)?;
    let replicas = scale
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .ok_or_else(|| ApiError::bad_request("spec.replicas must be an integer"))?;
    let rv = object::meta_str(scale, "resourceVersion");
    if !rv.is_empty() && rv != object::meta_str(&old, "resourceVersion") {
        return Err(ApiError::modified(&t.rt.group, &t.rt.plural, t.name()));
    }
    let mut new = present(&t.rt, &t.version, &old);
    let mut cur = &mut new;
    let parts: Vec<&str> = paths.spec_replicas.trim_start_matches('.').split('.').collect();
    for part in &parts[..parts.len() - 1] {
        if !cur.get(*part).is_some_and(Value::is_object) {
            cur[*part] = json!({});
        }
        cur = &mut cur[*part];
    }
    cur[parts[parts.len() - 1]] = json!(replicas);
    let main = Target { subresource: None, ..t.clone() };
    write(store, &main, Some(&old), new, opts, &Ownership::Update(&opts.manager))?;
    Ok((200, scale_of(store, t)?))
}
