//! Reads of stored objects: get (now or at an older version), list with selectors and paging,
//! the `scale` subresource's view, and each object as the client asked for it (its version,
//! and the resource it addressed when that is a view of the stored one).

use std::sync::Arc;

use base64::Engine as _;
use serde_json::{Value, json};

use super::conversion::{Conversion, relabel};
use super::object;
use super::request::{Filter, Paging, Target};
use super::selectors::LabelSelector;
use super::status::ApiError;
use super::store::Store;
use super::strategy::Resource;

/// The object as the client asked for it, for a resource without a conversion webhook:
/// converted to the requested version (the `None` strategy of a CRD: only `apiVersion`
/// changes), then pruned by that version's schema, as apiextensions-apiserver prunes after every
/// conversion (a field only another version knows does not survive a read in this one).
/// A resource with a conversion webhook converts through its [`Conversion`], unlocked.
pub(crate) fn present(rt: &Resource, version: &str, obj: &Value) -> Value {
    let mut out = relabel(rt, version, obj);
    if let Some(map) = out.as_object_mut() {
        map.insert("kind".into(), json!(rt.kind));
    }
    out
}

/// `stored` in the version `t` addresses, with its kind, converted by `conversion`.
pub(crate) async fn show(conversion: &Conversion, t: &Target, stored: &Value) -> Result<Value, ApiError> {
    if !conversion.remote() {
        return Ok(present(&t.rt, &t.version, stored));
    }
    let mut shown = conversion.one(stored, &t.version).await?;
    shown["kind"] = json!(t.rt.kind);
    Ok(shown)
}

/// An answer about the stored resource as the resource the client addressed shows it, when
/// that is a view (an object, or a list of them; a `Status` is left as it is).
pub(crate) fn as_addressed(t: &Target, answer: Value) -> Value {
    let Some((view, version)) = &t.view else {
        return answer;
    };
    let strategy = view.strategy(version);
    let kind = answer.get("kind").and_then(Value::as_str).unwrap_or_default();
    if kind == t.rt.kind {
        return strategy.convert_from_stored(&answer);
    }
    if kind != format!("{}List", t.rt.kind) {
        return answer;
    }
    let mut list = answer;
    list["apiVersion"] = json!(view.api_version(version));
    if let Some(items) = list.get_mut("items").and_then(Value::as_array_mut) {
        for item in items.iter_mut() {
            *item = strategy.convert_from_stored(item);
        }
    }
    list
}

/// The stored object `t` names.
pub(crate) fn existing(store: &Store, t: &Target) -> Result<Arc<Value>, ApiError> {
    store.get(&t.gr(), t.ns(), t.name()).ok_or_else(|| ApiError::not_found(&t.rt.group, &t.rt.plural, t.name()))
}

/// One object as it was at resourceVersion `at` (which the history must reach back to).
pub(crate) fn get_at(store: &Store, t: &Target, at: u64) -> Result<Arc<Value>, ApiError> {
    let item = store.get_at(&t.gr(), t.ns(), t.name(), at);
    item.ok_or_else(|| ApiError::not_found(&t.rt.group, &t.rt.plural, t.name()))
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
    Ok(Listed { target: t.clone(), metadata, items })
}

/// A list read from the store, not yet rendered: its objects are shared with the store.
pub(crate) struct Listed {
    target: Target,
    /// The list's `metadata` (`resourceVersion`, `continue`, `remainingItemCount`).
    pub metadata: Value,
    pub items: Vec<Arc<Value>>,
}

impl Listed {
    /// The list with its items converted to the requested version by the resource's
    /// conversion webhook, in one review (nothing to do without one: [`Listed::presented`]
    /// converts).
    pub(crate) async fn convert(mut self, conversion: &Conversion) -> Result<Listed, ApiError> {
        if conversion.remote() {
            let objects = self.items.iter().map(|o| (**o).clone()).collect();
            let converted = conversion.list(objects, &self.target.version).await?;
            self.items = converted.into_iter().map(Arc::new).collect();
        }
        Ok(self)
    }

    /// The items in the requested version.
    pub(crate) fn presented(&self) -> Vec<Value> {
        let t = &self.target;
        self.items.iter().map(|o| present(&t.rt, &t.version, o)).collect()
    }

    /// The whole list (`ConfigMapList`...).
    pub(crate) fn render(&self) -> Value {
        let t = &self.target;
        list_of(t, &self.presented(), &self.metadata)
    }
}

/// A list of `items` of `t`'s resource (`ConfigMapList`...). The list of a custom resource
/// is a map in Go, written with its `continue`, empty or not.
pub(crate) fn list_of(t: &Target, items: &[Value], metadata: &Value) -> Value {
    let mut metadata = metadata.clone();
    if t.definition().is_none()
        && let Some(meta) = metadata.as_object_mut()
    {
        meta.entry("continue").or_insert_with(|| json!(""));
    }
    json!({
        "apiVersion": t.rt.api_version(&t.version),
        "kind": format!("{}List", t.rt.kind),
        "metadata": metadata,
        "items": items,
    })
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

fn read_path<'a>(obj: &'a Value, dotted: &str) -> Option<&'a Value> {
    dotted.trim_start_matches('.').split('.').try_fold(obj, |cur, part| cur.get(part))
}

/// The `autoscaling/v1` `Scale` view of `obj` (in `t`'s version), whose resource has a scale
/// subresource.
pub(crate) fn scale(t: &Target, obj: &Value) -> Result<Value, ApiError> {
    let paths = t.rt.version(&t.version).and_then(|v| v.scale.clone()).ok_or_else(ApiError::no_route)?;
    let replicas = read_path(obj, &paths.spec_replicas).and_then(Value::as_i64).unwrap_or(0);
    let status_replicas = read_path(obj, &paths.status_replicas).and_then(Value::as_i64).unwrap_or(0);
    let selector = paths.label_selector.as_deref().and_then(|p| read_path(obj, p)).map(|s| match s {
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
