//! Liveness and readiness over HTTP: `/healthz` and `/readyz` for the kubelet's probes.
//!
//! [`Health`] is a cheap, cloneable handle on one readiness flag: hand a clone to
//! whatever knows when the host is ready (every plugin's caches synced) and call
//! [`Health::set_ready`]. [`serve`] answers the probes on one address and can serve
//! more routes (metrics) on the same port.
//!
//! ```no_run
//! # async fn example() -> Result<(), kubewasm::health::Error> {
//! use kubewasm::health::{self, Health};
//!
//! let health = Health::new();
//! let server = health::serve("0.0.0.0:8080".parse().unwrap(), health.clone(), None).await?;
//! // ... start the controllers, wait for their caches ...
//! health.set_ready(true);
//! // ... on shutdown:
//! server.shutdown().await;
//! # Ok(()) }
//! ```

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::http::StatusCode;
use axum::routing::get;

/// Why the health server could not start.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The address is in use or not available to this process: choose another with
    /// `--health-addr`.
    #[error("cannot serve health probes on {addr}: {source}")]
    Bind { addr: SocketAddr, source: std::io::Error },
}

/// The readiness flag the probes report. Clones share the flag.
#[derive(Clone, Debug, Default)]
pub struct Health {
    ready: Arc<AtomicBool>,
}

impl Health {
    /// Not ready until [`Health::set_ready`] says so.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether `/readyz` answers 200. Set it once every loaded plugin's caches are
    /// synced; clear it when the host can no longer serve (shutting down).
    pub fn set_ready(&self, ready: bool) {
        self.ready.store(ready, Ordering::Release);
    }

    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }

    /// `/healthz` (200 while the process serves) and `/readyz` (200 when ready,
    /// 503 otherwise), to merge into a larger router.
    pub fn router(&self) -> Router {
        let health = self.clone();
        Router::new().route("/healthz", get(|| async { (StatusCode::OK, "ok\n") })).route(
            "/readyz",
            get(move || {
                let ready = health.is_ready();
                async move {
                    if ready { (StatusCode::OK, "ready\n") } else { (StatusCode::SERVICE_UNAVAILABLE, "not ready\n") }
                }
            }),
        )
    }
}

/// A running health server; dropping it leaves the server running until the process
/// ends, [`Server::shutdown`] stops it.
pub use crate::serving::Server;

/// Binds `addr` and serves [`Health::router`], merged with `extra` (for example
/// the metrics endpoint), on a background task.
///
/// # Errors
///
/// [`Error::Bind`] when `addr` cannot be bound.
///
/// # Panics
///
/// When `extra` defines `/healthz` or `/readyz` too (axum refuses overlapping routes).
pub async fn serve(addr: SocketAddr, health: Health, extra: Option<Router>) -> Result<Server, Error> {
    let bind = |source| Error::Bind { addr, source };
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(bind)?;
    let local = listener.local_addr().map_err(bind)?;
    let mut router = health.router();
    if let Some(extra) = extra {
        router = router.merge(extra);
    }
    tracing::info!(addr = %local, "serving /healthz and /readyz");
    Ok(crate::serving::spawn(listener, router, local, None, "health"))
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// One HTTP/1.1 GET over a raw socket; returns the status code and the body.
    async fn http_get(addr: SocketAddr, path: &str) -> (u16, String) {
        let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
        let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.expect("send");
        let mut response = String::new();
        stream.read_to_string(&mut response).await.expect("read");
        let status = response.split(' ').nth(1).and_then(|s| s.parse().ok()).expect("status line");
        let body = response.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
        (status, body)
    }

    fn loopback() -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], 0))
    }

    #[tokio::test]
    async fn healthz_is_ok_and_readyz_follows_the_readiness_flag() {
        let health = Health::new();
        let server = serve(loopback(), health.clone(), None).await.expect("serves");
        let addr = server.local_addr();
        assert_eq!(http_get(addr, "/healthz").await.0, 200);
        assert_eq!(http_get(addr, "/readyz").await, (503, "not ready\n".to_string()));
        health.set_ready(true);
        assert_eq!(http_get(addr, "/readyz").await, (200, "ready\n".to_string()));
        health.set_ready(false);
        assert_eq!(http_get(addr, "/readyz").await.0, 503);
        assert_eq!(http_get(addr, "/nothing-here").await.0, 404);
        server.shutdown().await;
        assert!(tokio::net::TcpStream::connect(addr).await.is_err(), "the port is closed after shutdown");
    }

    #[tokio::test]
    async fn extra_routes_are_served_on_the_same_port() {
        let metrics = Router::new().route("/metrics", get(|| async { "kubewasm_up 1\n" }));
        let server = serve(loopback(), Health::new(), Some(metrics)).await.expect("serves");
        assert_eq!(http_get(server.local_addr(), "/metrics").await, (200, "kubewasm_up 1\n".to_string()));
        assert_eq!(http_get(server.local_addr(), "/healthz").await.0, 200);
        server.shutdown().await;
    }

    #[tokio::test]
    async fn an_address_in_use_is_reported_with_the_address() {
        let taken = tokio::net::TcpListener::bind(loopback()).await.expect("bind");
        let addr = taken.local_addr().expect("address");
        let err = serve(addr, Health::new(), None).await.expect_err("the port is taken");
        assert!(err.to_string().contains(&addr.to_string()), "{err}");
    }
}
