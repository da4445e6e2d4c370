//! A webhook server for the tests, as a cluster's webhooks are served: HTTPS on loopback with a
//! certificate for `127.0.0.1` and for the Service `hooks.default.svc`, signed by a CA made for
//! the test (`kubewasm-pki`, as the host's webhook server makes its own), whose PEM the
//! configurations carry as `caBundle`. It records each review it is sent and answers with the
//! test's function.

use std::sync::{Arc, Mutex};

use base64::Engine as _;
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

/// The name a call to the Service `hooks` of namespace `default` checks the certificate for.
const SERVICE_HOST: &str = "hooks.default.svc";

/// What the server answers a review posted to a path.
type Answer = dyn Fn(&str, &Value) -> Value + Send + Sync;

pub struct HookServer {
    /// `https://127.0.0.1:PORT`.
    pub base: String,
    /// The CA's PEM, base64, for `caBundle`.
    pub ca_bundle: String,
    /// The reviews received, with the path and query they were posted to.
    received: Arc<Mutex<Vec<(String, Value)>>>,
    task: tokio::task::JoinHandle<()>,
}

impl HookServer {
    /// Serves `answer` until dropped.
    pub async fn start(answer: impl Fn(&str, &Value) -> Value + Send + Sync + 'static) -> HookServer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("https://{}", listener.local_addr().unwrap());
        // A name of its own: each server's CA is another authority.
        let ca = kubewasm_pki::Authority::generate(&format!("webhook CA of {base}"), 1).unwrap();
        // Reached by its address, or as the Service `hooks` of namespace `default`.
        let names = vec!["127.0.0.1".to_string(), SERVICE_HOST.to_string()];
        let (chain, key) = ca.serving(&names, SERVICE_HOST, 1).unwrap();
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let received: Arc<Mutex<Vec<(String, Value)>>> = Arc::default();
        let answer: Arc<Answer> = Arc::new(answer);
        let (log, task_answer) = (received.clone(), answer.clone());
        let task = tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let (acceptor, log, answer) = (acceptor.clone(), log.clone(), task_answer.clone());
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else { return };
                    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
                        let (log, answer) = (log.clone(), answer.clone());
                        async move {
                            let target = request.uri().path_and_query().map(ToString::to_string).unwrap_or_default();
                            let body = request.into_body().collect().await?.to_bytes();
                            let review: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                            let out = answer(&target, &review);
                            log.lock().unwrap().push((target, review));
                            Ok::<_, hyper::Error>(Response::new(Full::new(Bytes::from(out.to_string()))))
                        }
                    });
                    let _ =
                        hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(tls), service).await;
                });
            }
        });
        let ca_bundle = base64::engine::general_purpose::STANDARD.encode(ca.cert_pem());
        HookServer { base, ca_bundle, received, task }
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.base.rsplit(':').next().and_then(|p| p.parse().ok()).unwrap()
    }

    /// A `clientConfig` for `path` of this server.
    pub fn client_config(&self, path: &str) -> Value {
        json!({"url": format!("{}{path}", self.base), "caBundle": self.ca_bundle})
    }

    /// The reviews received so far, with the path and query of each.
    pub fn received(&self) -> Vec<(String, Value)> {
        self.received.lock().unwrap().clone()
    }
}

impl Drop for HookServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}
