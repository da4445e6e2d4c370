//! Waiting for a controller's children without polling lists: a watch counts them.

use std::collections::HashSet;
use std::time::Instant;

use futures::StreamExt;
use k8s_openapi::NamespaceResourceScope;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, Resource, ResourceExt};
use tokio::sync::oneshot;

/// Sees every `K` in `namespace`; resolves once `n` distinct names were seen.
pub fn all_seen<K>(client: &Client, namespace: &str, n: usize) -> oneshot::Receiver<Instant>
where
    K: Resource<DynamicType = (), Scope = NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + 'static,
{
    let (tx, rx) = oneshot::channel();
    let api: Api<K> = Api::namespaced(client.clone(), namespace);
    tokio::spawn(async move {
        let mut names = HashSet::new();
        let mut objects = watcher(api, watcher::Config::default()).default_backoff().applied_objects().boxed();
        while let Some(Ok(object)) = objects.next().await {
            names.insert(object.name_any());
            if names.len() >= n {
                let _ = tx.send(Instant::now());
                return;
            }
        }
    });
    rx
}
