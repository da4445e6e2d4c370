//! Objects applied from a YAML stream as the administrator (`DevCluster::apply`), as
//! `kubectl apply --server-side` would: each found among the served resources by its
//! `apiVersion` and `kind`, then applied through the write pipeline.

use serde_json::Value;

use super::cluster::Cluster;
use super::object;
use super::pipeline;
use super::request::{Target, WriteOptions};

/// The field manager of what is applied.
const MANAGER: &str = "kubewasm-devcluster";

/// Applies `obj`; on refusal, the object (`kind/name`) and why.
pub(crate) fn apply(cluster: &mut Cluster, obj: &Value) -> Result<(), (String, String)> {
    let text = |field: &str| obj.get(field).and_then(Value::as_str).unwrap_or_default();
    let (api_version, kind, name) = (text("apiVersion"), text("kind"), object::name(obj));
    let described = format!("{kind}/{name}");
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let served = cluster
        .registry
        .all()
        .find(|r| r.group == group && r.kind == kind && r.version(version).is_some())
        .cloned()
        .ok_or_else(|| (described.clone(), format!("the server serves no {kind} in {api_version:?}")))?;
    let namespace = match (served.namespaced, object::namespace(obj)) {
        (false, _) => "",
        (true, "") => "default",
        (true, given) => given,
    };
    let mut target = Target::stored(served, namespace, name);
    target.version = version.to_string();
    let opts = WriteOptions { manager: MANAGER.into(), force: true, ..WriteOptions::default() };
    pipeline::apply_local(cluster, &target, obj.to_string().as_bytes(), &opts)
        .map(|_| ())
        .map_err(|e| (described, e.message))
}
