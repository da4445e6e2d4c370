//! The controllers of kube-controller-manager the server runs itself, besides garbage
//! collection (`gc`): what each writes is its kind's [`Controller`] (a namespace's `default`
//! service account and `kube-root-ca.crt`, aggregated cluster roles); this module runs them once
//! at start and again after every change to what they watch, and makes their writes through the
//! write pipeline, as their real counterparts write through the API.

use std::sync::Arc;

use tokio::sync::Notify;
use tokio::sync::broadcast::error::RecvError;

use super::cluster::Cluster;
use super::pipeline;
use super::request::{Target, WriteOptions};
use super::state::Shared;
use super::strategy::{Controller, How, Write};

/// How many rounds settle the controllers at start (an aggregated role of an aggregated role
/// needs one round per level).
const SETTLE_ROUNDS: usize = 10;

/// Runs each controller until nothing is left to write.
pub(crate) fn settle(cluster: &mut Cluster, controllers: &[Arc<dyn Controller>]) {
    for _ in 0..SETTLE_ROUNDS {
        let mut wrote = false;
        for controller in controllers {
            wrote |= reconcile(cluster, controller.as_ref());
        }
        if !wrote {
            return;
        }
    }
}

/// Carries out the writes `controller` asks for now; whether any was stored.
fn reconcile(cluster: &mut Cluster, controller: &dyn Controller) -> bool {
    let mut wrote = false;
    for write in controller.reconcile(&cluster.store) {
        wrote |= carry_out(cluster, write);
    }
    wrote
}

fn carry_out(cluster: &mut Cluster, write: Write) -> bool {
    let Some(rt) = cluster.resource(&write.resource) else {
        return false;
    };
    let target = Target::stored(rt, &write.namespace, &write.name);
    let mut opts = WriteOptions { manager: write.manager.to_string(), ..WriteOptions::default() };
    let written = match write.how {
        How::Create(object) => pipeline::create_local(cluster, &Target { name: None, ..target }, &object, &opts),
        How::Update(object) => pipeline::update_local(cluster, &target, &object, &opts),
        How::Apply(object) => {
            opts.force = true;
            let body = object.to_string();
            pipeline::apply_local(cluster, &target, body.as_bytes(), &opts)
        }
    };
    match written {
        Ok(_) => true,
        Err(e) => {
            // The namespace went, or the object came back meanwhile: the next change settles it.
            tracing::debug!(manager = write.manager, object = %write.name, error = %e.message, "a controller write was refused");
            false
        }
    }
}

/// Runs every controller after each change to what it watches, until shutdown.
pub(crate) async fn run(shared: Arc<Shared>, controllers: Vec<Arc<dyn Controller>>) {
    let runs: Vec<_> = controllers.into_iter().map(|c| tokio::spawn(run_one(shared.clone(), c))).collect();
    for run in runs {
        let _ = run.await;
    }
}

async fn run_one(shared: Arc<Shared>, controller: Arc<dyn Controller>) {
    let changed = Arc::new(Notify::new());
    let mut forwarders = Vec::new();
    {
        let mut cluster = shared.lock();
        for resource in controller.watches() {
            let mut subscription = cluster.store.subscribe(&resource);
            let changed = changed.clone();
            forwarders.push(tokio::spawn(async move {
                loop {
                    match subscription.recv().await {
                        Ok(_) | Err(RecvError::Lagged(_)) => changed.notify_one(),
                        Err(RecvError::Closed) => return,
                    }
                }
            }));
        }
    }
    let mut shutdown = shared.shutdown.clone();
    loop {
        let wrote = reconcile(&mut shared.lock(), controller.as_ref());
        if wrote {
            shared.persist.notify_one();
        }
        tokio::select! {
            () = changed.notified() => {}
            _ = shutdown.changed() => break,
        }
    }
    for forwarder in forwarders {
        forwarder.abort();
    }
}
