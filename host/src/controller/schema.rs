//! Changes of the parent kind's schema: the `CustomResourceDefinition` of a custom parent
//! kind, watched by name. A new schema may keep what the API server dropped before (a status
//! field it did not declare), so the controller forgets what it knew of the statuses it
//! wrote and reconciles every parent again.

use futures::{Stream, StreamExt, future};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};

use crate::plugin::KindRef;

/// One item per change of the schema of `parent`'s CRD (a new `metadata.generation`),
/// from the first one seen on; none for a kind no CRD defines.
pub(crate) fn changes(client: &Client, parent: &KindRef) -> impl Stream<Item = ()> + Send + use<> {
    // The core group's kinds are no custom resources.
    if parent.group.is_empty() {
        return futures::stream::empty().left_stream();
    }
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let name = format!("{}.{}", parent.plural, parent.group);
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let mut seen = None;
    watcher(api, config)
        .default_backoff()
        .applied_objects()
        .filter_map(move |crd| {
            // A watch that fails (no right to read CRDs, say) is retried with backoff.
            let generation = crd.ok().map(|crd| crd.metadata.generation);
            let changed = match generation {
                Some(generation) => seen.replace(generation).is_some_and(|before| before != generation),
                None => false,
            };
            future::ready(changed.then_some(()))
        })
        .right_stream()
}
