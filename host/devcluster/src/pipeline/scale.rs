//! The `scale` subresource: an `autoscaling/v1` `Scale` read from, and written to, the replica
//! paths of the object (a built-in's `spec.replicas`, a CRD's `specReplicasPath`).

use serde_json::{Value, json};

use super::{Expect, Ownership, Write, write};
use crate::object;
use crate::read;
use crate::request::{Target, WriteOptions};
use crate::state::Shared;
use crate::status::ApiError;

/// Writes the replicas of the `Scale` that `scale` makes of the current one to the object,
/// through the write sequence of its main resource; answers with the new `Scale`.
pub(super) async fn update(
    shared: &Shared,
    t: &Target,
    scale: &(dyn Fn(&Value) -> Result<Value, ApiError> + Send + Sync),
    opts: &WriteOptions,
) -> Result<(u16, Value), ApiError> {
    let paths = t.rt.version(&t.version).and_then(|v| v.scale.clone()).ok_or_else(ApiError::no_route)?;
    let make = |old: Option<&Value>| {
        let old = old.ok_or_else(|| ApiError::not_found(&t.rt.group, &t.rt.plural, t.name()))?;
        let scale = scale(&read::scale(t, old)?)?;
        let replicas = scale
            .pointer("/spec/replicas")
            .and_then(Value::as_i64)
            .ok_or_else(|| ApiError::bad_request("spec.replicas must be an integer"))?;
        let rv = object::meta_str(&scale, "resourceVersion");
        if !rv.is_empty() && rv != object::meta_str(old, "resourceVersion") {
            return Err(ApiError::modified(&t.rt.group, &t.rt.plural, t.name()));
        }
        let mut new = old.clone();
        let parts: Vec<&str> = paths.spec_replicas.trim_start_matches('.').split('.').collect();
        let Some((last, parents)) = parts.split_last() else {
            return Err(ApiError::no_route());
        };
        let mut cur = &mut new;
        for part in parents {
            if !cur.get(*part).is_some_and(Value::is_object) {
                cur[*part] = json!({});
            }
            cur = &mut cur[*part];
        }
        cur[*last] = json!(replicas);
        Ok(new)
    };
    let main = Target { subresource: None, ..t.clone() };
    let ownership = Ownership::Update(&opts.manager);
    let (_, written) =
        write(shared, Write { t: &main, expect: Expect::Existing, make: &make, opts, ownership: &ownership }).await?;
    Ok((200, read::scale(t, &written)?))
}
