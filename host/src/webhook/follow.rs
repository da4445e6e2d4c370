//! The webhook server and the cluster's registration kept in step with the served plugins:
//! the server starts once a loaded plugin admits or converts, and after every load, swap
//! and removal the webhook configurations and CRD conversions are applied again, so
//! `kubewasm run` and `kubewasm dev` register their plugins by one path (dev's endpoint is
//! a loopback URL, run's a Service).

use std::net::SocketAddr;

use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tracing::{error, info};

use super::register::{Admits, Endpoint, Registrar};
use super::serve::{self, Server};
use super::served::Webhooks;
use super::tls::Identity;
use crate::metrics::Metrics;

/// Where and as whom the webhook server listens, and how the API server reaches it.
#[derive(Clone, Debug)]
pub struct WebhookOptions {
    pub listen: SocketAddr,
    /// The certificate it presents, and the CA bundle the API server trusts it by.
    pub identity: Identity,
    /// Where the API server calls; `None`: `https://` the address the server is bound to
    /// (loopback, for `kubewasm dev`).
    pub endpoint: Option<Endpoint>,
    /// The name of the webhook configurations.
    pub name: String,
}

/// Why webhooks cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum FollowError {
    #[error(transparent)]
    Serve(#[from] serve::Error),
    /// The certificate and key do not go together.
    #[error("the webhook server's certificate: {0}")]
    Certificate(#[from] rustls::Error),
    #[error(transparent)]
    Register(#[from] super::register::RegisterError),
}

/// The server and registration following the served plugins; [`Following::stop`] ends
/// both (the registration stays: the API server's failure policy answers while the host is
/// away, as it would for a host that crashed).
#[derive(Debug)]
pub struct Following {
    stop: oneshot::Sender<()>,
    task: JoinHandle<Option<Server>>,
    addr: Option<SocketAddr>,
}

impl Following {
    /// Where the server listens, if a plugin needed it at the start.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.addr
    }

    /// Stops following and stops the server, waiting for the calls in flight.
    pub async fn stop(self) {
        let _ = self.stop.send(());
        if let Ok(Some(server)) = self.task.await {
            server.shutdown().await;
        }
    }
}

/// Serves and registers the plugins of `webhooks` from now on.
///
/// # Errors
///
/// When the server cannot start for the plugins loaded now (the address is taken, the
/// certificate is unusable). Later failures (a registration the API server refuses) are
/// logged, and tried again at the next change.
pub async fn follow(
    client: kube::Client,
    options: WebhookOptions,
    webhooks: Webhooks,
    metrics: Metrics,
) -> Result<Following, FollowError> {
    let mut changes = webhooks.changes();
    changes.mark_unchanged();
    let mut state = State { client, options, webhooks, metrics, server: None, registrar: None };
    state.step().await?;
    let addr = state.server.as_ref().map(Server::local_addr);
    let (stop, mut stopped) = oneshot::channel();
    let task = tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = &mut stopped => break,
                signal = changes.changed() => {
                    if signal.is_err() {
                        break;
                    }
                    if let Err(e) = state.step().await {
                        error!(error = %e, "webhooks not served or not registered; tried again at the next change");
                    }
                }
            }
        }
        state.server
    });
    Ok(Following { stop, task, addr })
}

struct State {
    client: kube::Client,
    options: WebhookOptions,
    webhooks: Webhooks,
    metrics: Metrics,
    server: Option<Server>,
    registrar: Option<Registrar>,
}

impl State {
    /// Starts the server if a plugin needs it, then registers the plugins served now.
    async fn step(&mut self) -> Result<(), FollowError> {
        let plugins = self.webhooks.all();
        if self.server.is_none() {
            if plugins.is_empty() {
                return Ok(());
            }
            let tls = self.options.identity.server_config()?;
            let server = serve::serve(self.options.listen, tls, self.webhooks.clone(), self.metrics.clone()).await?;
            let endpoint = match &self.options.endpoint {
                Some(endpoint) => endpoint.clone(),
                None => Endpoint::url(&format!("https://{}", server.local_addr()))?,
            };
            let ca = self.options.identity.ca_bundle().map(str::to_string);
            self.registrar = Some(Registrar::new(self.client.clone(), &self.options.name, endpoint, ca));
            self.server = Some(server);
        }
        let Some(registrar) = &self.registrar else { return Ok(()) };
        let admits: Vec<Admits<'_>> =
            plugins.iter().map(|s| Admits { manifest: s.plugin.manifest(), settings: &s.settings }).collect();
        registrar.sync(&admits).await?;
        let names: Vec<&str> = plugins.iter().map(|s| s.plugin.manifest().name.as_str()).collect();
        info!(plugins = ?names, "webhooks registered");
        Ok(())
    }
}
