//! Labels parents with their shard bucket ([`BUCKET_LABEL`]), so that sharded replicas,
//! whose watches select by that label, see them: a parent is created without it.
//!
//! Each replica watches, metadata only, the parents that carry no bucket label (or one
//! naming no bucket), which costs nothing once every parent is labelled, and labels
//! those of the buckets its published view gives it. It watches afresh whenever that
//! view changes, so a parent created while buckets move is labelled by its new owner.

use std::time::Duration;

use futures::StreamExt;
use kube::api::{Api, DynamicObject, PartialObjectMeta, Patch, PatchParams};
use kube::discovery::ApiResource;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use serde_json::json;
use tracing::{debug, warn};

use crate::coordination::shard::{BUCKET_LABEL, Bucket, Shard};

/// The field manager of the bucket label.
const MANAGER: &str = "kubewasm-shard";

/// How long the watch waits before starting again after its stream ended.
const RESTART: Duration = Duration::from_secs(1);

/// Selects objects whose [`BUCKET_LABEL`] is missing or names no bucket.
fn unlabelled() -> String {
    let buckets: Vec<String> = Bucket::all().map(Bucket::label).collect();
    format!("{BUCKET_LABEL} notin ({})", buckets.join(","))
}

/// Labels, for as long as it runs, the unlabelled parents of `resource` (in `namespace`
/// only, if given) whose buckets `shard` holds.
pub(crate) async fn run(client: Client, resource: ApiResource, namespace: Option<String>, shard: Shard) {
    // Metadata only: the labels and names are all it reads.
    let api: Api<PartialObjectMeta<DynamicObject>> = match &namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    };
    let mut selection = shard.selection();
    loop {
        selection.mark_unchanged();
        let events =
            watcher(api.clone(), watcher::Config::default().labels(&unlabelled())).default_backoff().applied_objects();
        let mut events = std::pin::pin!(events);
        loop {
            tokio::select! {
                object = events.next() => match object {
                    Some(Ok(object)) => label(&client, &resource, &shard, &object).await,
                    Some(Err(e)) => debug!(error = %e, "watch of unlabelled parents"),
                    None => {
                        tokio::time::sleep(RESTART).await;
                        break;
                    }
                },
                changed = selection.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    // Buckets moved: list the unlabelled parents again, for the new owners.
                    break;
                }
            }
        }
    }
}

async fn label(client: &Client, resource: &ApiResource, shard: &Shard, object: &PartialObjectMeta<DynamicObject>) {
    let name = object.name_any();
    let namespace = object.namespace();
    let bucket = Bucket::of(object.labels(), &resource.group, &resource.kind, namespace.as_deref(), &name);
    if !shard.selects(bucket) {
        return;
    }
    let api: Api<DynamicObject> = match &namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, resource),
        None => Api::all_with(client.clone(), resource),
    };
    let patch = json!({"metadata": {"labels": {BUCKET_LABEL: bucket.label()}}});
    let params = PatchParams { field_manager: Some(MANAGER.into()), ..PatchParams::default() };
    match api.patch_metadata(&name, &params, &Patch::Merge(&patch)).await {
        Ok(_) => debug!(object = %name, bucket = bucket.label(), "labelled with its shard bucket"),
        // Deleted meanwhile: nothing to label.
        Err(kube::Error::Api(status)) if status.code == 404 => {}
        Err(e) => warn!(object = %name, error = %e, "could not label the parent with its shard bucket"),
    }
}
