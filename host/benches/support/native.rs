//! The DemoApplication controller as an ordinary kube-rs controller, the plugin's code
//! called natively: what the benchmarks measure the host against.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use demo_application::DemoApplicationReconciler;
use futures::{Stream, StreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::discovery::ApiResource;
use kube::runtime::controller::{self, Action, Controller as KubeController};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource, ResourceExt};
use kubewasm::controller as host_controller;
use kubewasm_sdk::testing::{self, TestRequest};
use serde_json::json;
use tokio::sync::oneshot;

/// The same decisions made by an ordinary kube-rs controller: the plugin's code is
/// called natively, and each reconcile applies every desired child and the status,
/// as a kube-rs controller usually does (the API server turns an unchanged apply
/// into a no-op, but it is still a request).
pub struct Native {
    reconciles: Arc<AtomicU64>,
    stop: oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

struct NativeContext {
    client: Client,
    parent: ApiResource,
    deployments: Store<Deployment>,
    services: Store<Service>,
    reconciles: Arc<AtomicU64>,
}

#[derive(Debug, thiserror::Error)]
enum NativeError {
    #[error("plugin: {0}")]
    Plugin(String),
    #[error("{0}")]
    Kube(#[from] kube::Error),
}

pub const NATIVE_MANAGER: &str = "native.demo-application";

/// A cache of `K` across namespaces and the stream that fills it.
fn cached<K>(client: &Client) -> (Store<K>, impl Stream<Item = Result<K, watcher::Error>> + Send + 'static)
where
    K: Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
{
    let (store, writer) = reflector::store();
    let stream = watcher(Api::<K>::all(client.clone()), watcher::Config::default())
        .default_backoff()
        .reflect(writer)
        .touched_objects();
    (store, stream)
}

impl Native {
    /// Reconciles finished so far.
    pub fn reconciles(&self) -> u64 {
        self.reconciles.load(Ordering::Relaxed)
    }

    /// Stops watching; reconciles in flight finish.
    pub async fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.task.await;
    }

    /// The kube-rs controller with the host's default concurrency and debounce.
    pub fn start(client: Client, parent: ApiResource) -> Self {
        let options = host_controller::Options::default();
        let (deployments, deployment_stream) = cached::<Deployment>(&client);
        let (services, service_stream) = cached::<Service>(&client);
        let reconciles = Arc::new(AtomicU64::new(0));
        let ctx = Arc::new(NativeContext {
            client: client.clone(),
            parent: parent.clone(),
            deployments,
            services,
            reconciles: reconciles.clone(),
        });
        let (stop, stopped) = oneshot::channel::<()>();
        let config = controller::Config::default().concurrency(options.concurrency).debounce(options.debounce);
        let run = KubeController::new_with(
            Api::<DynamicObject>::all_with(client, &parent),
            watcher::Config::default(),
            parent,
        )
        .owns_stream(deployment_stream)
        .owns_stream(service_stream)
        .with_config(config)
        .graceful_shutdown_on(async {
            let _ = stopped.await;
        })
        .run(native_reconcile, |_, _, _| Action::requeue(Duration::from_millis(100)), ctx)
        .for_each(|_| async {});
        Self { reconciles, stop, task: tokio::spawn(run) }
    }
}

async fn native_reconcile(parent: Arc<DynamicObject>, ctx: Arc<NativeContext>) -> Result<Action, NativeError> {
    let result = native_write(&parent, &ctx).await;
    ctx.reconciles.fetch_add(1, Ordering::Relaxed);
    result
}

async fn native_write(parent: &DynamicObject, ctx: &NativeContext) -> Result<Action, NativeError> {
    let name = parent.name_any();
    let namespace = parent.namespace().unwrap_or_default();
    let uid = parent.uid().unwrap_or_default();
    let owner =
        parent.controller_owner_ref(&ctx.parent).ok_or_else(|| NativeError::Plugin("parent without uid".into()))?;

    let mut request_parent = parent.clone();
    request_parent.metadata.managed_fields = None;
    let mut request_parent = serde_json::to_value(request_parent).map_err(|e| NativeError::Plugin(e.to_string()))?;
    request_parent["apiVersion"] = ctx.parent.api_version.clone().into();
    request_parent["kind"] = ctx.parent.kind.clone().into();
    let mut request = TestRequest::new(request_parent);
    let controlled = |owners: &[k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference]| {
        owners.iter().any(|r| r.controller == Some(true) && r.uid == uid)
    };
    if let Some(d) =
        ctx.deployments.get(&ObjectRef::new(&name).within(&namespace)).filter(|d| controlled(d.owner_references()))
    {
        request = request.child(d.as_ref());
    }
    if let Some(s) =
        ctx.services.get(&ObjectRef::new(&name).within(&namespace)).filter(|s| controlled(s.owner_references()))
    {
        request = request.child(s.as_ref());
    }
    let outcome =
        testing::reconcile::<DemoApplicationReconciler>(request).map_err(|e| NativeError::Plugin(e.message))?;

    let params = PatchParams::apply(NATIVE_MANAGER).force();
    for child in &outcome.children {
        let mut body = child.json().clone();
        body["metadata"]["ownerReferences"] = json!([owner]);
        let child_name = child.name();
        if child.is::<Deployment>() {
            Api::<Deployment>::namespaced(ctx.client.clone(), &namespace)
                .patch(child_name, &params, &Patch::Apply(&body))
                .await?;
        } else if child.is::<Service>() {
            Api::<Service>::namespaced(ctx.client.clone(), &namespace)
                .patch(child_name, &params, &Patch::Apply(&body))
                .await?;
        }
    }
    if let Some(status) = outcome.status {
        let body = json!({"apiVersion": ctx.parent.api_version, "kind": ctx.parent.kind, "metadata": {"name": name}, "status": status});
        Api::<DynamicObject>::namespaced_with(ctx.client.clone(), &namespace, &ctx.parent)
            .patch_status(&name, &params, &Patch::Apply(&body))
            .await?;
    }
    Ok(Action::requeue(host_controller::Options::default().resync))
}
