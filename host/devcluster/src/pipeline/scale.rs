//! The `scale` subresource: an `autoscaling/v1` `Scale` read from, and written to, the replica
//! paths of the object (a built-in's `spec.replicas`, a CRD's `specReplicasPath`).

use serde_json::{Value, json};

use super::{Ownership, write};
use crate::cluster::Cluster;
use crate::object;
use crate::read::{self, existing, present};
use crate::request::{Target, WriteOptions};
use crate::status::ApiError;

/// Writes the replicas of `scale` to the object, through the write sequence of its main
/// resource; answers with the new `Scale`.
pub(super) fn update(
    cluster: &mut Cluster,
    t: &Target,
    scale: &Value,
    opts: &WriteOptions,
) -> Result<(u16, Value), ApiError> {
    let old = existing(&cluster.store, t)?;
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
    let main = Target { subresource: None, ..t.clone() };
    write(cluster, &main, Some(&old), new, opts, &Ownership::Update(&opts.manager))?;
    Ok((200, read::scale(&cluster.store, t)?))
}
