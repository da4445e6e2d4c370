//! The HTTPS server the API server calls: `POST /default/{plugin}`, `/validate/{plugin}`
//! and `/convert/{plugin}`, and `GET /healthz`. Each call runs in a fresh instance of the
//! plugin's current version, on a blocking thread, under the plugin's deadline; whatever
//! happens to the plugin, the API server gets an answer (Kubewarden's policy-server does the
//! same): a trap, the deadline or an answer that does not parse is a denial naming the
//! reason, or an allow when the plugin's failure policy says `Ignore`.
//!
//! TLS is rustls over tokio-rustls under axum's own server: handshakes run on their own
//! tasks, so a slow client never holds up the others.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use kubewasm_contract::AdmissionRequest;
use serde_json::Value;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

use super::review::{self, BadAnswer, Outcome};
use super::served::{Served, Webhooks};
use crate::metrics::{Call, Failure, Metrics, WebhookVerdict};
use crate::plugin::{CallError, FailurePolicy, Instance};
pub use crate::serving::Server;

/// The largest review read: kube-apiserver's objects are at most 3 MiB, an update's
/// review holds two.
const MAX_BODY: usize = 8 << 20;

/// How long a client may take over its TLS handshake.
const HANDSHAKE: Duration = Duration::from_secs(10);

/// Why the webhook server could not start.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The address is in use or not available to this process: choose another with
    /// `--webhook-listen`.
    #[error("cannot serve webhooks on {addr}: {source}")]
    Bind { addr: SocketAddr, source: std::io::Error },
}

/// Binds `addr` and serves the webhooks of the plugins in `webhooks` over TLS with `tls`,
/// on a background task.
///
/// # Errors
///
/// [`Error::Bind`] when `addr` cannot be bound.
pub async fn serve(
    addr: SocketAddr,
    tls: Arc<rustls::ServerConfig>,
    webhooks: Webhooks,
    metrics: Metrics,
) -> Result<Server, Error> {
    let bind = |source| Error::Bind { addr, source };
    let tcp = TcpListener::bind(addr).await.map_err(bind)?;
    let local = tcp.local_addr().map_err(bind)?;
    let (listener, accepting) = TlsListener::new(tcp, TlsAcceptor::from(tls), local);
    let router = router(Arc::new(Shared { webhooks, metrics }));
    tracing::info!(addr = %local, "serving admission and conversion webhooks");
    Ok(crate::serving::spawn(listener, router, local, Some(accepting), "webhook"))
}

/// What every call reads.
struct Shared {
    webhooks: Webhooks,
    metrics: Metrics,
}

fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/default/{plugin}", post(default))
        .route("/validate/{plugin}", post(validate))
        .route("/convert/{plugin}", post(convert))
        .route("/healthz", get(|| async { (StatusCode::OK, "ok\n") }))
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(shared)
}

/// A 404 or 400 the API server treats as a failed call (its `failurePolicy` applies).
struct Refused {
    status: StatusCode,
    message: String,
}

impl IntoResponse for Refused {
    fn into_response(self) -> Response {
        tracing::warn!(status = %self.status, "webhook call refused: {}", self.message);
        (self.status, format!("{}\n", self.message)).into_response()
    }
}

fn refuse(status: StatusCode, message: &str) -> Response {
    Refused { status, message: message.to_string() }.into_response()
}

/// A review as the API server reads it: JSON, 200 whatever the verdict.
fn answer(review: &Value) -> Response {
    ([(axum::http::header::CONTENT_TYPE, "application/json")], review.to_string()).into_response()
}

/// The plugin named in the path, or a 404 naming it.
fn served(shared: &Shared, name: &str) -> Result<Served, Refused> {
    shared.webhooks.get(name).ok_or_else(|| Refused {
        status: StatusCode::NOT_FOUND,
        message: format!("no plugin named {name} serves webhooks here"),
    })
}

/// The plugin's config with its Secret references resolved now, and their values to hide.
fn resolved(served: &Served) -> Result<crate::secrets::Resolved, String> {
    served.secrets.resolve(&served.config).map_err(|e| format!("plugin {}: {e}", served.plugin.manifest().name))
}

fn now() -> String {
    jiff::Timestamp::now().to_string()
}

async fn default(State(shared): State<Arc<Shared>>, Path(name): Path<String>, body: Bytes) -> Response {
    admit(&shared, &name, &body, Call::Default).await
}

async fn validate(State(shared): State<Arc<Shared>>, Path(name): Path<String>, body: Bytes) -> Response {
    admit(&shared, &name, &body, Call::Validate).await
}

/// One `default` or `validate` call of plugin `name` about the review in `body`.
async fn admit(shared: &Shared, name: &str, body: &[u8], call: Call) -> Response {
    let served = match served(shared, name) {
        Ok(served) => served,
        Err(refused) => return refused.into_response(),
    };
    let resolved = resolved(&served);
    let config = resolved.as_ref().map_or(Value::Null, |r| r.config.clone());
    let request = match review::admission_request(body, now(), config) {
        Ok(request) => request,
        Err(e) => return refuse(StatusCode::BAD_REQUEST, &e.to_string()),
    };
    if let Err(refused) = declared(&served, &request, call) {
        return refused.into_response();
    }
    let (uid, ignore) = (request.uid.clone(), served.settings.failure_policy == FailurePolicy::Ignore);
    let started = Instant::now();
    let outcome = match resolved {
        Err(reason) => Err(Failed::Secrets(reason)),
        Ok(resolved) => run(&served, resolved.hidden, move |instance| match call {
            Call::Default => instance.default(&request).map(|answer| review::defaulted(&request, answer)),
            _ => instance.validate(&request).map(|verdict| Ok(review::validated(&request, verdict))),
        })
        .await
        .and_then(|answer| answer.map_err(Failed::Answer)),
    };
    shared.metrics.called(name, call, started.elapsed(), outcome.as_ref().err().and_then(Failed::failure));
    match outcome {
        Ok((review, outcome)) => {
            let verdict = match outcome {
                Outcome::Allowed => WebhookVerdict::Allowed,
                Outcome::Denied => WebhookVerdict::Denied,
                Outcome::Mutated => WebhookVerdict::Mutated,
            };
            shared.metrics.webhook(name, call, verdict);
            answer(&review)
        }
        Err(failed) => {
            let reason = failed.reason(name, call);
            tracing::warn!(plugin = %name, "webhook call failed: {reason}");
            shared.metrics.webhook(name, call, WebhookVerdict::Error);
            answer(&review::failed(&uid, &reason, ignore))
        }
    }
}

/// Why a plugin gave no usable answer.
enum Failed {
    /// The Secrets its settings name cannot be read.
    Secrets(String),
    Call(CallError),
    Answer(BadAnswer),
    /// No answer in the webhook's time, or the call's thread was lost.
    Stopped(String),
}

impl Failed {
    /// The reason the answer gives, naming the plugin and the call.
    fn reason(self, name: &str, call: Call) -> String {
        match self {
            Self::Secrets(reason) => reason,
            Self::Call(e) => e.to_string(),
            Self::Answer(bad) => format!("plugin {name} answered {}: {bad}", call.as_str()),
            Self::Stopped(why) => format!("plugin {name}: {why} in {}", call.as_str()),
        }
    }

    /// How the plugin call failed, as the metrics count it; `None` if it was not called.
    fn failure(&self) -> Option<Failure> {
        match self {
            Self::Secrets(_) => None,
            Self::Call(e) => Some(Failure::from(e)),
            Self::Answer(_) => Some(Failure::Malformed),
            Self::Stopped(_) => Some(Failure::Timeout),
        }
    }
}

/// Runs `f` in a fresh instance of `served`'s plugin on a blocking thread, `hidden` kept
/// out of what the plugin writes; waits a little less than the webhook's timeout (the
/// plugin's own deadline is shorter: this is for a call that waits for the instance pool),
/// so that the API server reads the host's reason rather than its own timeout.
async fn run<T: Send + 'static>(
    served: &Served,
    hidden: Vec<String>,
    f: impl for<'a> FnOnce(&mut Instance<'a>) -> Result<T, CallError> + Send + 'static,
) -> Result<T, Failed> {
    let plugin = served.plugin.clone();
    let limit = answer_within(served.settings.timeout_seconds);
    let call = tokio::task::spawn_blocking(move || {
        let mut instance = plugin.instance();
        instance.hide(hidden);
        f(&mut instance)
    });
    match tokio::time::timeout(limit, call).await {
        Ok(Ok(answer)) => answer.map_err(Failed::Call),
        Ok(Err(e)) => Err(Failed::Stopped(e.to_string())),
        Err(_) => Err(Failed::Stopped(format!("no answer within {limit:?}"))),
    }
}

/// How long a call may wait for its answer under a webhook timeout of `seconds`: the
/// timeout less [`ANSWER_MARGIN`] for the answer's way back, at least half of it.
fn answer_within(seconds: u32) -> Duration {
    let timeout = Duration::from_secs(u64::from(seconds));
    timeout.saturating_sub(ANSWER_MARGIN).max(timeout / 2)
}

/// The time kept for an answer to reach the API server before its timeout.
const ANSWER_MARGIN: Duration = Duration::from_millis(500);

/// Whether the plugin's manifest declares `call` for the request's kind and operation; a
/// 404 saying what it does declare otherwise.
fn declared(served: &Served, request: &AdmissionRequest, call: Call) -> Result<(), Refused> {
    let manifest = served.plugin.manifest();
    let rules = if call == Call::Default { &manifest.defaults } else { &manifest.validates };
    let kind = &request.kind;
    let matches = rules.iter().any(|rule| {
        (&rule.kind.group, &rule.kind.version, &rule.kind.kind) == (&kind.group, &kind.version, &kind.kind)
            && rule.effective_operations().contains(&request.operation)
    });
    if matches {
        return Ok(());
    }
    Err(Refused {
        status: StatusCode::NOT_FOUND,
        message: format!("plugin {} does not {} {} of {kind}", manifest.name, call.as_str(), request.operation),
    })
}

async fn convert(State(shared): State<Arc<Shared>>, Path(name): Path<String>, body: Bytes) -> Response {
    let served = match served(&shared, &name) {
        Ok(served) => served,
        Err(refused) => return refused.into_response(),
    };
    if !served.plugin.manifest().converts {
        return refuse(StatusCode::NOT_FOUND, &format!("plugin {name} does not convert"));
    }
    let resolved = resolved(&served);
    let config = resolved.as_ref().map_or(Value::Null, |r| r.config.clone());
    let conversion = match review::conversion_request(&body, now(), config) {
        Ok(conversion) => conversion,
        Err(e) => return refuse(StatusCode::BAD_REQUEST, &e.to_string()),
    };
    let uid = conversion.uid().to_string();
    let started = Instant::now();
    let outcome = match resolved {
        Err(reason) => Err(Failed::Secrets(reason)),
        Ok(resolved) => run(&served, resolved.hidden, move |instance| {
            instance.convert(&conversion.request).map(|answer| review::converted(conversion, answer))
        })
        .await
        .and_then(|answer| answer.map_err(Failed::Answer)),
    };
    let failure = outcome.as_ref().err().and_then(Failed::failure);
    shared.metrics.called(&name, Call::Convert, started.elapsed(), failure);
    match outcome {
        Ok(review) => {
            let refused = review["response"]["result"]["status"] != "Success";
            let verdict = if refused { WebhookVerdict::Denied } else { WebhookVerdict::Allowed };
            shared.metrics.webhook(&name, Call::Convert, verdict);
            answer(&review)
        }
        Err(failed) => {
            let reason = failed.reason(&name, Call::Convert);
            tracing::warn!(plugin = %name, "conversion failed: {reason}");
            shared.metrics.webhook(&name, Call::Convert, WebhookVerdict::Error);
            answer(&review::conversion_failed(&uid, &reason))
        }
    }
}

/// A TCP listener whose connections come out TLS-terminated: a background task accepts
/// and hands each handshake its own task; [`axum::serve`] takes the finished streams.
struct TlsListener {
    streams: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    local: SocketAddr,
}

impl TlsListener {
    /// The listener, and the accepting task that owns `tcp`.
    fn new(tcp: TcpListener, acceptor: TlsAcceptor, local: SocketAddr) -> (Self, JoinHandle<()>) {
        let (send, streams) = mpsc::channel(64);
        let accepting = tokio::spawn(async move {
            loop {
                let (stream, peer) = match tcp.accept().await {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        // Out of file descriptors, say: wait rather than spin.
                        tracing::warn!(error = %e, "webhook server: accept failed");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                };
                let (acceptor, send) = (acceptor.clone(), send.clone());
                tokio::spawn(async move {
                    match tokio::time::timeout(HANDSHAKE, acceptor.accept(stream)).await {
                        Ok(Ok(tls)) => {
                            let _ = send.send((tls, peer)).await;
                        }
                        Ok(Err(e)) => tracing::debug!(%peer, error = %e, "webhook server: TLS handshake failed"),
                        Err(_) => tracing::debug!(%peer, "webhook server: TLS handshake timed out"),
                    }
                });
            }
        });
        (Self { streams, local }, accepting)
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.streams.recv().await {
            Some(accepted) => accepted,
            // The accepting task ended: the server is stopping.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.local)
    }
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use axum::http::Request;
    use http_body_util::BodyExt;
    use serde_json::json;
    use tower::ServiceExt;

    use super::*;
    use crate::plugin::{Engine, Plugin, WebhookSettings};
    use crate::secrets::Secrets;

    #[test]
    fn the_host_answers_before_the_api_server_gives_up() {
        assert_eq!(answer_within(10), Duration::from_millis(9500));
        assert_eq!(answer_within(1), Duration::from_millis(500));
    }

    /// A test fixture as `make plugins` builds it.
    fn fixture(engine: &Engine, name: &str) -> Arc<Plugin> {
        let exe = std::env::current_exe().expect("test binary path");
        // <target>/<profile>/deps/<test binary>
        let path = exe.ancestors().nth(3).expect("target directory").join("fixtures").join(format!("{name}.wasm"));
        Arc::new(Plugin::load(engine, &path).unwrap_or_else(|e| panic!("{e}: run `make plugins` first")))
    }

    /// The server's routes with `plugins` served, each with default settings.
    fn server(plugins: &[Arc<Plugin>]) -> Router {
        let webhooks = Webhooks::new();
        for plugin in plugins {
            let settings = WebhookSettings::default();
            webhooks.set(Served { plugin: plugin.clone(), settings, config: Value::Null, secrets: Secrets::none() });
        }
        router(Arc::new(Shared { webhooks, metrics: Metrics::new() }))
    }

    async fn post(router: &Router, path: &str, body: &Value) -> (StatusCode, String) {
        let request = Request::post(path).body(Body::from(body.to_string())).expect("request");
        let response = router.clone().oneshot(request).await.expect("answer");
        let status = response.status();
        let bytes = response.into_body().collect().await.expect("body").to_bytes();
        (status, String::from_utf8_lossy(&bytes).into_owned())
    }

    fn review(operation: &str) -> Value {
        json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
            "uid": "u-1", "operation": operation, "name": "w", "namespace": "default",
            "kind": {"group": "test.kubewasm.io", "version": "v1", "kind": "Widget"},
            "resource": {"group": "test.kubewasm.io", "version": "v1", "resource": "widgets"},
            "userInfo": {"username": "admin"}, "dryRun": false,
            "object": {"apiVersion": "test.kubewasm.io/v1", "kind": "Widget",
                       "metadata": {"name": "w", "namespace": "default"}, "spec": {"replicas": 2}}}})
    }

    #[tokio::test]
    async fn a_declared_call_is_answered_by_the_plugin() {
        let engine = Engine::new().expect("engine");
        let router = server(&[fixture(&engine, "admit")]);
        let (status, body) = post(&router, "/validate/admit", &review("CREATE")).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let answer: Value = serde_json::from_str(&body).expect("JSON");
        assert_eq!(answer["response"], json!({"uid": "u-1", "allowed": true, "warnings": ["2 replicas"]}));
    }

    #[tokio::test]
    async fn what_a_plugin_does_not_declare_is_not_found() {
        let engine = Engine::new().expect("engine");
        // misbehave admits nothing: it is not served at all.
        let router = server(&[fixture(&engine, "admit"), fixture(&engine, "misbehave")]);
        let (status, body) = post(&router, "/validate/misbehave", &review("CREATE")).await;
        assert_eq!(
            (status, body.as_str()),
            (StatusCode::NOT_FOUND, "no plugin named misbehave serves webhooks here\n")
        );
        let (status, body) = post(&router, "/default/nope", &review("CREATE")).await;
        assert_eq!((status, body.as_str()), (StatusCode::NOT_FOUND, "no plugin named nope serves webhooks here\n"));
        let (status, body) = post(&router, "/validate/admit", &review("DELETE")).await;
        assert_eq!(
            (status, body.as_str()),
            (StatusCode::NOT_FOUND, "plugin admit does not validate DELETE of test.kubewasm.io/v1 Widget\n")
        );
        let mut other_version = review("CREATE");
        other_version["request"]["kind"]["version"] = json!("v2");
        let (status, body) = post(&router, "/default/admit", &other_version).await;
        assert_eq!(
            (status, body.as_str()),
            (StatusCode::NOT_FOUND, "plugin admit does not default CREATE of test.kubewasm.io/v2 Widget\n")
        );
    }

    #[tokio::test]
    async fn a_body_that_is_no_review_is_a_bad_request() {
        let engine = Engine::new().expect("engine");
        let router = server(&[fixture(&engine, "admit")]);
        let (status, body) = post(&router, "/validate/admit", &json!({"hello": "world"})).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert!(body.starts_with("the body is not an AdmissionReview: "), "{body}");
        let (status, body) = post(&router, "/convert/admit", &review("CREATE")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert!(body.starts_with("the body is not a ConversionReview: missing field `desiredAPIVersion`"), "{body}");
        let health = Request::get("/healthz").body(Body::empty()).expect("request");
        assert_eq!(router.oneshot(health).await.expect("answer").status(), StatusCode::OK);
    }
}
