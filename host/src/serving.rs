//! A server on its own task and port, as the health probes and the webhooks run: spawned
//! over any axum listener, stopped in order (the port closed first, then the requests in
//! flight finished).

use std::net::SocketAddr;

use axum::Router;
use axum::serve::Listener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A running server; dropping it leaves the server running until the process ends,
/// [`Server::shutdown`] stops it.
#[derive(Debug)]
pub struct Server {
    addr: SocketAddr,
    /// What it serves, for its log lines.
    what: &'static str,
    /// A task that accepts connections for the listener and owns the port, if any.
    accepting: Option<JoinHandle<()>>,
    stop: oneshot::Sender<()>,
    task: JoinHandle<std::io::Result<()>>,
}

impl Server {
    /// The address it listens on (the port the OS chose when given port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting connections and waits for requests in flight.
    pub async fn shutdown(self) {
        if let Some(accepting) = self.accepting {
            // The port closes once the accepting task is gone, not merely told to go: a
            // client then finds it refused rather than reset.
            accepting.abort();
            let _ = accepting.await;
        }
        let _ = self.stop.send(());
        match self.task.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "{} server stopped with an error", self.what),
            Err(e) => tracing::warn!(error = %e, "{} server task failed", self.what),
        }
    }
}

/// Serves `router` on `listener`, bound to `addr`, on a background task; `accepting` is
/// the listener's own accepting task, if it has one, ended first at shutdown.
pub(crate) fn spawn<L>(
    listener: L,
    router: Router,
    addr: SocketAddr,
    accepting: Option<JoinHandle<()>>,
    what: &'static str,
) -> Server
where
    L: Listener,
    L::Addr: std::fmt::Debug,
{
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        axum::serve(listener, router)
            .with_graceful_shutdown(async {
                let _ = stopped.await;
            })
            .await
    });
    Server { addr, what, accepting, stop, task }
}
