//! PATCH: the four patch types, each computing the new object from the stored one (as the
//! client sees it) and entering the write sequence with it; server-side apply merges by field
//! ownership first.

use serde_json::{Value, json};

use super::{Expect, Ownership, Write, scale, stages, write, write_local};
use crate::apply::{self, Request};
use crate::cluster::Cluster;
use crate::object;
use crate::patch::{self as patches, PatchFailure};
use crate::request::{Target, WriteOptions};
use crate::state::Shared;
use crate::status::ApiError;

/// The patch types, by `Content-Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PatchType {
    Json,
    Merge,
    Strategic,
    Apply,
}

const PATCH_TYPES: [(&str, PatchType); 4] = [
    ("application/json-patch+json", PatchType::Json),
    ("application/merge-patch+json", PatchType::Merge),
    ("application/strategic-merge-patch+json", PatchType::Strategic),
    ("application/apply-patch+yaml", PatchType::Apply),
];

/// The patch type of `content_type`, where `t` accepts it: strategic merge patch needs the
/// upstream definition of a built-in.
pub(crate) fn patch_type(t: &Target, content_type: &str) -> Result<PatchType, ApiError> {
    let accepted: Vec<(&str, PatchType)> =
        PATCH_TYPES.into_iter().filter(|(_, p)| *p != PatchType::Strategic || t.definition().is_some()).collect();
    accepted.iter().find(|(c, _)| *c == content_type).map(|(_, p)| *p).ok_or_else(|| {
        ApiError::unsupported_media_type(content_type, &accepted.iter().map(|(c, _)| *c).collect::<Vec<_>>())
    })
}

/// PATCH with a body of the patch type `kind` (see [`patch_type`]); the options are checked
/// for it (`force` of an apply only, its `fieldManager` given).
pub(crate) async fn patch(
    shared: &Shared,
    t: &Target,
    body: &[u8],
    kind: PatchType,
    opts: &WriteOptions,
) -> Result<(u16, Value), ApiError> {
    if kind == PatchType::Apply {
        return server_side_apply(shared, t, body, opts).await;
    }
    let patch_doc: Value =
        serde_json::from_slice(body).map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
    if t.subresource.as_deref() == Some("scale") {
        return scale::update(shared, t, &|current| apply_patch(kind, current, &patch_doc, None), opts).await;
    }
    let make = |old: Option<&Value>| {
        let base = old.ok_or_else(|| ApiError::not_found(&t.rt.group, &t.rt.plural, t.name()))?;
        match &t.view {
            None => apply_patch(kind, base, &patch_doc, t.shape()),
            Some((view, version)) => {
                // A view is patched as the client sees it, and stored converted back.
                let strategy = view.strategy(version);
                let shape = view.version(version).and_then(|v| v.shape());
                Ok(strategy.convert_to_stored(&apply_patch(
                    kind,
                    &strategy.convert_from_stored(base),
                    &patch_doc,
                    shape,
                )?))
            }
        }
    };
    let ownership = Ownership::Update(&opts.manager);
    write(shared, Write { t, expect: Expect::Existing, make: &make, opts, ownership: &ownership }).await
}

/// `patch_doc` applied to `base` as a patch of type `kind` (not apply); `shape` gives a
/// strategic merge its list keys and patch strategies.
fn apply_patch(kind: PatchType, base: &Value, patch_doc: &Value, shape: Option<&Value>) -> Result<Value, ApiError> {
    match kind {
        PatchType::Json => patches::json_patch(base, patch_doc).map_err(|e| match e {
            PatchFailure::Malformed(m) => ApiError::bad_request(m),
            PatchFailure::Unappliable(m) => ApiError::unprocessable(m),
        }),
        PatchType::Strategic if shape.is_some() => {
            patches::strategic_merge(base, patch_doc, shape).map_err(ApiError::bad_request)
        }
        _ => patches::merge_patch(base, patch_doc).map_err(ApiError::bad_request),
    }
}

/// Server-side apply: the configuration merged into the live object by field ownership, or
/// refused with the conflicts; a view's configuration is converted to the stored form first.
async fn server_side_apply(
    shared: &Shared,
    t: &Target,
    body: &[u8],
    opts: &WriteOptions,
) -> Result<(u16, Value), ApiError> {
    let make = applying(t, body, opts)?;
    write(shared, Write { t, expect: Expect::Any, make: &make, opts, ownership: &Ownership::Applied }).await
}

/// The server's own server-side apply (its controllers, its manifests): the stages under the
/// lock the caller holds, no webhooks (`write_local`).
pub(crate) fn apply_local(
    cluster: &mut Cluster,
    t: &Target,
    body: &[u8],
    opts: &WriteOptions,
) -> Result<(u16, Value), ApiError> {
    let make = applying(t, body, opts)?;
    write_local(cluster, Write { t, expect: Expect::Any, make: &make, opts, ownership: &Ownership::Applied })
}

/// What an apply of the configuration `body` makes of the live object, once the
/// configuration passes its checks.
fn applying<'a>(
    t: &'a Target,
    body: &[u8],
    opts: &'a WriteOptions,
) -> Result<impl Fn(Option<&Value>) -> Result<Value, ApiError> + Send + Sync + 'a, ApiError> {
    let config: Value =
        serde_yaml_ng::from_slice(body).map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
    let mut config = match &t.view {
        Some((view, version)) => view.strategy(version).convert_to_stored(&config),
        None => config,
    };
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
    let unknown = t.strategy().prune(&mut config);
    stages::check_unknown(t, opts, &unknown)?;
    Ok(move |live: Option<&Value>| {
        if live.is_none() && t.subresource.is_some() {
            return Err(ApiError::not_found(&t.rt.group, &t.rt.plural, t.name()));
        }
        let req = Request { manager: &opts.manager, api_version: &api_version, scope: t.scope(), schema: t.shape() };
        let mut merged = match apply::apply(live, &config, &req, opts.force) {
            Ok(Ok(merged)) => merged,
            Ok(Err(conflicts)) => return Err(ApiError::apply_conflict(conflicts.message, &conflicts.causes)),
            Err(e) => return Err(ApiError::unprocessable(format!("failed to create typed patch object: {e}"))),
        };
        if live.is_none() {
            object::set_meta(&mut merged, "name", json!(t.name()));
        }
        Ok(merged)
    })
}
