//! Outbound HTTP, only what the operator granted: one egress policy serving both the
//! contract's `http.send` and `wasi:http/outgoing-handler` (which `StarlingMonkey`'s
//! `fetch` and Rust's `wasi`/`wstd` crates use).
//!
//! A request is sent only when its URL is allowed both by the manifest's `outbound`
//! (what the plugin asks for) and by the operator's grant (`[http] allow` in
//! `NAME.toml`), in Spin's syntax ([`allow`]); a denial names the URL's origin and the
//! setting that would allow it. Each call has a budget of requests, each request the
//! host's timeout (lowered by the plugin, never raised) and a cap on its response body.
//! The host resolves names itself and connects only to the addresses it checked
//! ([`ranges`]: no private, loopback or link-local answer unless the grant names that
//! host). `http.send` follows redirects, each hop checked like a new request; a
//! `wasi:http` guest follows them itself, which is the same. Requests are counted by
//! plugin, host and status, and the time a call waits on them is not charged to its CPU
//! deadline (see [`IoWait`]).

pub mod allow;
mod canned;
mod client;
pub(crate) mod ranges;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::BodyExt;
use wasmtime::component::{Linker, ResourceTable};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpHooks, WasiHttpView};

use super::logging::TARGET;
use crate::metrics::Metrics;
use crate::plugin::contract::bindings::kubewasm::reconciler::http as contract;
use allow::{Pattern, PatternError, Target};
use kubewasm_contract::{HttpError, HttpRequest, HttpResponse};

pub use canned::{Canned, CannedError, Recorded};

/// How many redirects `http.send` follows before it gives up.
const MAX_REDIRECTS: usize = 5;

/// The operator's HTTP settings of one plugin (`[http]` in `NAME.toml`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpSettings {
    /// The grant, in Spin's syntax; empty: no request is sent.
    pub allow: Vec<String>,
    /// The longest a request may take, from sending to its response's last byte.
    pub timeout: Duration,
    /// Requests (redirects included) one call may send.
    pub max_requests: u32,
    /// The largest response body.
    pub max_response_bytes: u64,
}

impl Default for HttpSettings {
    fn default() -> Self {
        Self { allow: Vec::new(), timeout: Duration::from_secs(10), max_requests: 10, max_response_bytes: 1 << 20 }
    }
}

/// Where requests go: the network, or canned responses (`kubewasm render --http`).
#[derive(Clone, Debug)]
pub enum Transport {
    Network,
    Canned(Arc<Canned>),
}

/// One plugin's egress policy: what its manifest asks for, what the operator granted,
/// the limits, and where requests go. Built when its settings are applied and shared by
/// all its calls.
#[derive(Debug)]
pub struct Egress {
    plugin: String,
    requested: Vec<Pattern>,
    granted: Vec<Pattern>,
    settings: HttpSettings,
    transport: Transport,
    metrics: Option<Metrics>,
}

/// A pattern of the manifest or the grant that does not parse.
#[derive(Debug, thiserror::Error)]
pub enum EgressError {
    #[error("outbound: {0}")]
    Requested(#[source] PatternError),
    #[error("[http] allow: {0}")]
    Granted(#[source] PatternError),
}

impl Egress {
    /// No request of `plugin` is sent: nothing granted.
    pub fn denied(plugin: &str) -> Self {
        Self {
            plugin: plugin.to_string(),
            requested: Vec::new(),
            granted: Vec::new(),
            settings: HttpSettings::default(),
            transport: Transport::Network,
            metrics: None,
        }
    }

    /// The policy of `plugin`, whose manifest asks for `requested`, under `settings`.
    ///
    /// # Errors
    ///
    /// An [`EgressError`] naming the list and the pattern that does not parse.
    pub fn new(
        plugin: &str,
        requested: &[String],
        settings: &HttpSettings,
        transport: Transport,
        metrics: Option<Metrics>,
    ) -> Result<Self, EgressError> {
        Ok(Self {
            plugin: plugin.to_string(),
            requested: allow::parse_all(requested).map_err(EgressError::Requested)?,
            granted: allow::parse_all(&settings.allow).map_err(EgressError::Granted)?,
            settings: settings.clone(),
            transport,
            metrics,
        })
    }

    /// The settings in force.
    pub fn settings(&self) -> &HttpSettings {
        &self.settings
    }

    /// The target of `url` and the grant that allows it; a denial names the origin and
    /// the setting that would allow it.
    fn check(&self, url: &url::Url) -> Result<(Target, &Pattern), Failure> {
        let target = Target::of_url(url).map_err(|why| Failure::Invalid(format!("{}: {why}", redacted(url))))?;
        let origin = target.origin();
        if !self.requested.iter().any(|p| p.allows(&target)) {
            let asked: Vec<String> = self.requested.iter().map(ToString::to_string).collect();
            return Err(Failure::Denied(format!(
                "{origin} is not in the plugin's manifest (outbound: [{}]); only a version of the plugin that asks for it may reach it",
                asked.join(", ")
            )));
        }
        match self.granted.iter().find(|p| p.allows(&target)) {
            Some(grant) => Ok((target, grant)),
            None => Err(Failure::Denied(format!(
                "{origin} is not granted to plugin {}: add \"{}\" to `allow` in the [http] section of {}.toml",
                self.plugin,
                target.as_pattern(),
                self.plugin
            ))),
        }
    }

    /// One request to `url`, within the policy, without following redirects.
    async fn exchange(&self, mut request: Outgoing) -> Result<Incoming, Failure> {
        let (target, grant) = match self.check(&request.url) {
            Ok(checked) => checked,
            Err(failure) => {
                self.count_refused(&failure);
                return Err(failure);
            }
        };
        let timeout = request.timeout.map_or(self.settings.timeout, |t| t.min(self.settings.timeout));
        let started = Instant::now();
        let answer = match &self.transport {
            Transport::Network => {
                request.timeout = Some(timeout);
                client::fetch(&target, grant.host(), request, self.settings.max_response_bytes).await
            }
            Transport::Canned(canned) => canned.answer(&request, self.settings.max_response_bytes),
        };
        if let Some(metrics) = &self.metrics {
            let status = match &answer {
                Ok(incoming) => incoming.status.to_string(),
                Err(failure) => failure.label().to_string(),
            };
            metrics.http_request(&self.plugin, &target.origin(), &status, started.elapsed());
        }
        answer
    }

    /// Counts a request refused before it was sent: under `host="-"`, as the host it
    /// named may be anything the plugin chose.
    fn count_refused(&self, failure: &Failure) {
        if let Some(metrics) = &self.metrics {
            metrics.http_request(&self.plugin, "-", failure.label(), Duration::ZERO);
        }
    }

    /// `http.send`: one request, redirects followed within the policy, each hop taken
    /// from `budget`.
    async fn send(&self, request: HttpRequest, budget: &mut u32) -> Result<HttpResponse, Failure> {
        let url = url::Url::parse(&request.url)
            .map_err(|e| Failure::Invalid(format!("{:?} is not an absolute URL: {e}", request.url)))?;
        let mut outgoing = Outgoing {
            method: request.method.to_ascii_uppercase(),
            url,
            headers: request.headers,
            body: Bytes::from(request.body),
            timeout: request.timeout_ms.map(|ms| Duration::from_millis(ms.into())),
        };
        for _ in 0..=MAX_REDIRECTS {
            take(budget, &self.settings, &outgoing.url).inspect_err(|failure| self.count_refused(failure))?;
            let incoming = self.exchange(outgoing.clone()).await?;
            match redirect(&outgoing, &incoming) {
                Some(next) => outgoing = next,
                None => {
                    return Ok(HttpResponse {
                        status: incoming.status,
                        headers: incoming.headers,
                        body: incoming.body.into(),
                    });
                }
            }
        }
        Err(Failure::Invalid(format!("{}: more than {MAX_REDIRECTS} redirects", redacted(&outgoing.url))))
    }

    /// Logs a refused request: the origin only, never a path or a query.
    fn report(&self, method: &str, failure: &Failure) {
        if let Failure::Denied(why) | Failure::Budget(why) = failure {
            tracing::warn!(target: TARGET, plugin = %self.plugin, %method, "outgoing HTTP request denied: {why}");
        }
    }
}

/// Takes one request from the call's budget.
fn take(budget: &mut u32, settings: &HttpSettings, url: &url::Url) -> Result<(), Failure> {
    if *budget == 0 {
        return Err(Failure::Budget(format!(
            "{}: the call has sent its {} requests (`max-requests` in the [http] section of the plugin's settings)",
            redacted(url),
            settings.max_requests
        )));
    }
    *budget -= 1;
    Ok(())
}

/// The request a redirect leads to, if `incoming` is one `http.send` follows: 303, and
/// 301 and 302 of a POST, become GETs without body; `Authorization` and `Cookie` are
/// dropped when the origin changes.
fn redirect(sent: &Outgoing, incoming: &Incoming) -> Option<Outgoing> {
    if !matches!(incoming.status, 301 | 302 | 303 | 307 | 308) {
        return None;
    }
    let location = incoming.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case("location"))?;
    let url = sent.url.join(&location.1).ok()?;
    let mut next = sent.clone();
    if incoming.status == 303 || (matches!(incoming.status, 301 | 302) && sent.method == "POST") {
        next.method = "GET".into();
        next.body = Bytes::new();
        next.headers
            .retain(|(n, _)| !n.eq_ignore_ascii_case("content-type") && !n.eq_ignore_ascii_case("content-length"));
    }
    if url.origin() != sent.url.origin() {
        next.headers.retain(|(n, _)| !n.eq_ignore_ascii_case("authorization") && !n.eq_ignore_ascii_case("cookie"));
    }
    next.url = url;
    Some(next)
}

/// `scheme://host:port` of a URL, for messages: its path and query may hold credentials.
fn redacted(url: &url::Url) -> String {
    url.origin().ascii_serialization()
}

/// A request as the egress sends it: whole body.
#[derive(Clone, Debug)]
pub(crate) struct Outgoing {
    pub(crate) method: String,
    pub(crate) url: url::Url,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Bytes,
    pub(crate) timeout: Option<Duration>,
}

/// A response as the egress returns it: whole body, header names in lower case.
#[derive(Clone, Debug)]
pub(crate) struct Incoming {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Bytes,
}

/// Why a request got no response, before it is told to the plugin in the words of the
/// interface it used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Failure {
    /// Outside the manifest or the grant.
    Denied(String),
    /// Every address the name resolved to is refused.
    Prohibited(String),
    /// The call's request budget is spent.
    Budget(String),
    Timeout(String),
    /// The response body exceeds the cap (the cap).
    TooLarge(String, u64),
    /// The URL or the request cannot be sent.
    Invalid(String),
    Dns(String),
    Connect(String),
    Tls(String),
    Protocol(String),
}

impl Failure {
    /// The `status` label of the requests metric.
    fn label(&self) -> &'static str {
        match self {
            Self::Denied(_) => "denied",
            Self::Prohibited(_) => "ip_prohibited",
            Self::Budget(_) => "too_many_requests",
            Self::Timeout(_) => "timeout",
            Self::TooLarge(..) => "body_too_large",
            Self::Invalid(_) => "invalid",
            Self::Dns(_) => "dns_error",
            Self::Connect(_) => "connect_error",
            Self::Tls(_) => "tls_error",
            Self::Protocol(_) => "protocol_error",
        }
    }

    /// The contract's `http-error`.
    fn to_contract(&self) -> HttpError {
        match self.clone() {
            Self::Denied(m) | Self::Prohibited(m) => HttpError::Denied(m),
            Self::Budget(m) => HttpError::TooManyRequests(m),
            Self::Timeout(m) => HttpError::Timeout(m),
            Self::TooLarge(m, _) => HttpError::TooLarge(m),
            Self::Invalid(m) | Self::Dns(m) | Self::Connect(m) | Self::Tls(m) | Self::Protocol(m) => {
                HttpError::Failed(m)
            }
        }
    }

    /// `wasi:http`'s error code.
    fn to_wasi(&self) -> wasmtime_wasi_http::Error {
        use wasmtime_wasi_http::Error;
        match self {
            Self::Denied(_) | Self::Budget(_) => Error::HttpRequestDenied,
            Self::Prohibited(_) => Error::DestinationIpProhibited,
            Self::Timeout(_) => Error::HttpResponseTimeout,
            Self::TooLarge(_, max) => Error::HttpResponseBodySize(Some(*max)),
            Self::Invalid(_) => Error::HttpRequestUriInvalid,
            Self::Dns(m) => Error::DnsError { rcode: Some(m.clone()), info_code: None },
            Self::Connect(_) => Error::ConnectionRefused,
            Self::Tls(_) => Error::TlsProtocolError,
            Self::Protocol(_) => Error::HttpProtocolError,
        }
    }
}

/// The time one call has waited on the network, which its CPU deadline does not count:
/// the sandbox's epoch callback turns what it has not yet credited into more ticks.
#[derive(Debug, Default)]
pub(crate) struct IoWait {
    waited_ns: AtomicU64,
    credited_ns: AtomicU64,
}

impl IoWait {
    fn add(&self, waited: Duration) {
        let ns = u64::try_from(waited.as_nanos()).unwrap_or(u64::MAX);
        self.waited_ns.fetch_add(ns, Ordering::Relaxed);
    }

    /// The waiting not credited yet, now credited.
    pub(crate) fn take_uncredited(&self) -> Duration {
        let waited = self.waited_ns.load(Ordering::Relaxed);
        let credited = self.credited_ns.swap(waited, Ordering::Relaxed);
        Duration::from_nanos(waited.saturating_sub(credited))
    }
}

/// One call's HTTP: the plugin's egress, the call's request budget and the time it waited.
pub(crate) struct Http {
    ctx: WasiHttpCtx,
    hooks: Hooks,
}

struct Hooks {
    egress: Arc<Egress>,
    budget: u32,
    io: Arc<IoWait>,
}

impl Http {
    /// A call of the plugin whose policy is `egress`.
    pub(crate) fn new(egress: Arc<Egress>) -> Self {
        let budget = egress.settings.max_requests;
        Self { ctx: WasiHttpCtx::new(), hooks: Hooks { egress, budget, io: Arc::default() } }
    }

    /// Starts a new call's budget and clock.
    pub(crate) fn rearm(&mut self) {
        self.hooks.budget = self.hooks.egress.settings.max_requests;
        self.hooks.io = Arc::default();
    }

    /// The time this call waited on the network.
    pub(crate) fn io_wait(&self) -> &IoWait {
        &self.hooks.io
    }

    /// The longest a call may wait on the network in all: every request of its budget
    /// at the full timeout.
    pub(crate) fn max_wait(&self) -> Duration {
        let settings = &self.hooks.egress.settings;
        settings.timeout.saturating_mul(settings.max_requests)
    }

    /// The view `wasmtime-wasi-http` works on, over the store's resource table.
    pub(crate) fn view<'a>(&'a mut self, table: &'a mut ResourceTable) -> WasiHttpCtxView<'a> {
        WasiHttpCtxView { ctx: &mut self.ctx, table, hooks: &mut self.hooks }
    }
}

/// Links `wasi:http` (only the HTTP interfaces: WASI itself is linked apart).
pub(crate) fn add_to_linker<T: WasiHttpView + 'static>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    wasmtime_wasi_http::p2::add_only_http_to_linker_sync(linker)
}

type Finished = Box<dyn Future<Output = Result<(), wasmtime_wasi_http::Error>> + Send>;
type Sent = Box<
    dyn Future<Output = Result<(http::Response<wasmtime_wasi_http::WasiBody>, Finished), wasmtime_wasi_http::Error>>
        + Send,
>;

/// The largest request body a `wasi:http` guest may send.
const MAX_REQUEST_BYTES: usize = 16 << 20;

impl WasiHttpHooks for Hooks {
    fn send_request(
        &mut self,
        request: http::Request<wasmtime_wasi_http::WasiBody>,
        options: Option<wasmtime_wasi_http::RequestOptions>,
        _done: Finished,
    ) -> Sent {
        let egress = self.egress.clone();
        let method = request.method().to_string();
        let checked = url::Url::parse(&request.uri().to_string())
            .map_err(|e| Failure::Invalid(format!("{}: {e}", request.uri())))
            .and_then(|url| take(&mut self.budget, &egress.settings, &url).map(|()| url));
        let url = match checked {
            Ok(url) => url,
            Err(failure) => {
                egress.count_refused(&failure);
                egress.report(&method, &failure);
                return Box::new(std::future::ready(Err(failure.to_wasi())));
            }
        };
        // The guest's timeouts lower the host's; the longest of them bounds the whole.
        let timeout = options.and_then(|o| {
            [o.connect_timeout, o.first_byte_timeout, o.between_bytes_timeout].into_iter().flatten().max()
        });
        let io = self.io.clone();
        Box::new(async move {
            let started = Instant::now();
            let (parts, body) = request.into_parts();
            let body = http_body_util::Limited::new(body, MAX_REQUEST_BYTES)
                .collect()
                .await
                .map_err(|_| wasmtime_wasi_http::Error::HttpRequestBodySize(None))?
                .to_bytes();
            let headers = parts
                .headers
                .iter()
                .filter(|(name, _)| *name != http::header::HOST)
                .filter_map(|(n, v)| Some((n.to_string(), v.to_str().ok()?.to_string())))
                .collect();
            let outgoing = Outgoing { method: method.clone(), url, headers, body, timeout };
            let answer = egress.exchange(outgoing).await;
            io.add(started.elapsed());
            let incoming = answer.map_err(|failure| {
                egress.report(&method, &failure);
                failure.to_wasi()
            })?;
            let mut response = http::Response::builder().status(incoming.status);
            for (name, value) in &incoming.headers {
                response = response.header(name, value);
            }
            let body = http_body_util::Full::new(incoming.body).map_err(|never| match never {}).boxed_unsync();
            let response = response.body(body).map_err(|_| wasmtime_wasi_http::Error::HttpProtocolError)?;
            let finished: Finished = Box::new(std::future::ready(Ok(())));
            Ok((response, finished))
        })
    }
}

/// The contract's own `http.send`, through the same policy.
impl contract::Host for Http {
    fn send(&mut self, request: contract::HttpRequest) -> Result<contract::HttpResponse, contract::HttpError> {
        let request = HttpRequest::from(request);
        let method = request.method.clone();
        let egress = self.hooks.egress.clone();
        let started = Instant::now();
        let budget = &mut self.hooks.budget;
        let answer = wasmtime_wasi::runtime::in_tokio(egress.send(request, budget));
        self.hooks.io.add(started.elapsed());
        match answer {
            Ok(response) => Ok(contract::HttpResponse::from(&response)),
            Err(failure) => {
                egress.report(&method, &failure);
                Err(kubewasm_contract::wit::Lower::lower(&failure.to_contract()))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn egress(requested: &[&str], allow: &[&str], canned: &str) -> Egress {
        let settings =
            HttpSettings { allow: allow.iter().map(ToString::to_string).collect(), ..HttpSettings::default() };
        let requested: Vec<String> = requested.iter().map(ToString::to_string).collect();
        let canned = Arc::new(Canned::parse(canned).unwrap());
        Egress::new("kw", &requested, &settings, Transport::Canned(canned), None).unwrap()
    }

    fn post(url: &str) -> HttpRequest {
        HttpRequest { method: "POST".into(), url: url.into(), body: b"{}".to_vec(), ..HttpRequest::default() }
    }

    fn send(egress: &Egress, request: HttpRequest) -> Result<HttpResponse, Failure> {
        let mut budget = egress.settings.max_requests;
        tokio_test_block_on(egress.send(request, &mut budget))
    }

    fn tokio_test_block_on<F: Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
    }

    const OK: &str = "- request: {url: 'https://hooks.slack.com/*'}\n  response: {status: 200, body: ok}\n";

    #[test]
    fn a_request_needs_both_the_manifest_and_the_grant() {
        let both = egress(&["https://hooks.slack.com"], &["https://hooks.slack.com"], OK);
        assert_eq!(send(&both, post("https://hooks.slack.com/services/T/B/X")).unwrap().body, b"ok");

        let ungranted = egress(&["https://hooks.slack.com"], &[], OK);
        let Err(Failure::Denied(why)) = send(&ungranted, post("https://hooks.slack.com/services/T/B/X")) else {
            panic!("denied")
        };
        assert!(why.contains("https://hooks.slack.com:443 is not granted"), "{why}");
        assert!(why.contains("add \"https://hooks.slack.com\" to `allow` in the [http] section of kw.toml"), "{why}");
        assert!(!why.contains("services"), "no path in messages: {why}");

        let unasked = egress(&[], &["https://hooks.slack.com"], OK);
        let Err(Failure::Denied(why)) = send(&unasked, post("https://hooks.slack.com/x")) else { panic!("denied") };
        assert!(why.contains("not in the plugin's manifest"), "{why}");
    }

    #[test]
    fn redirects_are_followed_only_inside_the_grant() {
        let canned = "\
- request: {url: 'https://a.example/start'}
  response: {status: 302, headers: {location: 'https://b.example/next'}}
- request: {url: 'https://a.example/inside'}
  response: {status: 307, headers: {location: '/done'}}
- request: {method: POST, url: 'https://a.example/done'}
  response: {status: 201, body: done}
";
        let policy = egress(&["https://*"], &["https://a.example"], canned);
        let Err(Failure::Denied(why)) = send(&policy, post("https://a.example/start")) else { panic!("denied") };
        assert!(why.contains("https://b.example:443 is not granted"), "{why}");
        let response = send(&policy, post("https://a.example/inside")).unwrap();
        assert_eq!((response.status, response.body), (201, b"done".to_vec()), "307 keeps the method");
    }

    #[test]
    fn a_call_sends_at_most_its_budget() {
        let mut settings = HttpSettings { allow: vec!["https://hooks.slack.com".into()], ..HttpSettings::default() };
        settings.max_requests = 2;
        let canned = Arc::new(Canned::parse(OK).unwrap());
        let policy =
            Egress::new("kw", &["https://hooks.slack.com".into()], &settings, Transport::Canned(canned), None).unwrap();
        let mut budget = 2;
        for _ in 0..2 {
            tokio_test_block_on(policy.send(post("https://hooks.slack.com/x"), &mut budget)).unwrap();
        }
        let Err(Failure::Budget(why)) =
            tokio_test_block_on(policy.send(post("https://hooks.slack.com/x"), &mut budget))
        else {
            panic!("over budget")
        };
        assert!(why.contains("its 2 requests") && why.contains("max-requests"), "{why}");
    }

    #[test]
    fn a_redirect_to_another_origin_drops_credentials() {
        let sent = Outgoing {
            method: "POST".into(),
            url: url::Url::parse("https://a.example/x").unwrap(),
            headers: vec![("Authorization".into(), "Bearer t".into()), ("X-Other".into(), "1".into())],
            body: Bytes::from_static(b"{}"),
            timeout: None,
        };
        let incoming = |status, location: &str| Incoming {
            status,
            headers: vec![("location".into(), location.into())],
            body: Bytes::new(),
        };
        let next = redirect(&sent, &incoming(302, "https://b.example/y")).unwrap();
        assert_eq!((next.method.as_str(), next.body.len()), ("GET", 0), "302 of a POST becomes a GET");
        assert_eq!(next.headers, vec![("X-Other".to_string(), "1".to_string())]);
        let same = redirect(&sent, &incoming(308, "/z")).unwrap();
        assert_eq!((same.method.as_str(), same.url.as_str()), ("POST", "https://a.example/z"));
        assert!(same.headers.iter().any(|(n, _)| n == "Authorization"), "same origin keeps them");
        assert!(redirect(&sent, &incoming(200, "/z")).is_none());
    }
}
