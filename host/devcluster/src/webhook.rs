//! Calling a webhook, as kube-apiserver calls admission webhooks and CRD conversion webhooks:
//! the `clientConfig` both share (a `url`, or a `service` reference, and the `caBundle`), one
//! HTTPS POST of a JSON review under a deadline, and failures worded as Go's HTTP client words
//! them (`Post "https://…": dial tcp …: connect: connection refused`), since they reach the
//! clients inside the server's messages. TLS is rustls with the ring provider.
//!
//! Each call opens its own connection: a dev server's webhooks come and go with the tests and
//! processes that serve them, and a pooled connection to one that went away would fail a call
//! that a fresh one would not.

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use base64::Engine as _;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use rustls::RootCertStore;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::Value;

use super::status::Cause;

/// The largest answer read from a webhook.
const MAX_ANSWER: usize = 3 * 1024 * 1024;

/// Where a webhook is reached (`WebhookClientConfig` of admissionregistration and
/// apiextensions), as configured: checked, not yet resolved to an address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ClientConfig {
    to: To,
    /// The PEM certificates of `caBundle`; `None`: the system's trust roots.
    ca_bundle: Option<Vec<u8>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum To {
    /// An `https://` URL: its host, port, authority as written, and path with query.
    Url {
        host: String,
        port: u16,
        authority: String,
        path: String,
    },
    Service(ServiceRef),
}

/// A `service` reference of a client configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServiceRef {
    pub namespace: String,
    pub name: String,
    /// `path`, or `/`.
    pub path: String,
    /// `port`, 443 unless given.
    pub port: u16,
}

impl ServiceRef {
    /// The DNS name the server's certificate must hold (`<name>.<namespace>.svc`).
    pub(crate) fn host(&self) -> String {
        format!("{}.{}.svc", self.name, self.namespace)
    }
}

impl ClientConfig {
    /// Reads a `clientConfig` object; the error says what is wrong with it, for a refused call.
    pub(crate) fn parse(config: &Value) -> Result<ClientConfig, String> {
        let ca_bundle = match config.get("caBundle").and_then(Value::as_str).filter(|s| !s.is_empty()) {
            None => None,
            Some(b64) => Some(
                base64::engine::general_purpose::STANDARD
                    .decode(b64)
                    .map_err(|e| format!("caBundle is not base64: {e}"))?,
            ),
        };
        let url = config.get("url").and_then(Value::as_str).filter(|s| !s.is_empty());
        let service = config.get("service").filter(|s| s.is_object());
        let to = match (url, service) {
            (Some(url), None) => parse_url(url)?,
            (None, Some(service)) => To::Service(parse_service(service)),
            _ => return Err("exactly one of url or service is required".to_string()),
        };
        Ok(ClientConfig { to, ca_bundle })
    }

    /// The service this configuration names, if it names one.
    pub(crate) fn service(&self) -> Option<&ServiceRef> {
        match &self.to {
            To::Service(service) => Some(service),
            To::Url { .. } => None,
        }
    }

    /// Where to call: a URL's host, or `address`, found for the service reference (or why it
    /// cannot be, which each call then fails with, as a dial of kube-apiserver's fails); TLS
    /// checks the URL's host, or `<name>.<namespace>.svc`. The error is a `caBundle` without
    /// certificates.
    pub(crate) fn endpoint(&self, address: Option<Result<SocketAddr, String>>) -> Result<Endpoint, String> {
        let roots = roots(self.ca_bundle.as_deref())?;
        let (host, authority, path, dial) = match &self.to {
            To::Url { host, port, authority, path } => {
                (host.clone(), authority.clone(), path.clone(), Dial::Host(host.clone(), *port))
            }
            To::Service(service) => {
                let address = address.unwrap_or_else(|| Err(format!("service {:?} has no address", service.name)));
                let host = service.host();
                let authority = format!("{host}:{}", service.port);
                (host, authority, service.path.clone(), Dial::Address(address))
            }
        };
        let server_name = ServerName::try_from(host.trim_start_matches('[').trim_end_matches(']').to_string())
            .map_err(|e| format!("invalid host {host:?}: {e}"))?;
        Ok(Endpoint { authority, path, dial, server_name, roots })
    }
}

/// The checks of a `clientConfig` at `path` when its configuration is written
/// (`ValidateWebhookURL`, `ValidateWebhookService`), with upstream's messages.
pub(crate) fn validate(config: &Value, path: &str) -> Vec<Cause> {
    const FORM: &str = "; desired format: https://host[/path]";
    let mut causes = Vec::new();
    let url = config.get("url").and_then(Value::as_str);
    let service = config.get("service").filter(|s| s.is_object());
    match (url, service) {
        (Some(url), None) => {
            let field = format!("{path}.url");
            match url.parse::<http::Uri>() {
                Err(e) => causes.push(Cause::new(
                    "FieldValueRequired",
                    field,
                    format!("Required value: url must be a valid URL: {e}{FORM}"),
                )),
                Ok(uri) => {
                    let scheme = uri.scheme_str().unwrap_or_default();
                    if scheme != "https" {
                        causes.push(Cause::new(
                            "FieldValueInvalid",
                            field.clone(),
                            format!("Invalid value: {scheme:?}: 'https' is the only allowed URL scheme{FORM}"),
                        ));
                    }
                    if uri.host().is_none_or(str::is_empty) {
                        causes.push(Cause::new(
                            "FieldValueInvalid",
                            field.clone(),
                            format!("Invalid value: \"\": host must be specified{FORM}"),
                        ));
                    }
                    if uri.authority().is_some_and(|a| a.as_str().contains('@')) {
                        causes.push(Cause::new(
                            "FieldValueInvalid",
                            field.clone(),
                            format!("Invalid value: \"\": user information is not permitted in the URL{FORM}"),
                        ));
                    }
                    if let Some(query) = uri.query() {
                        causes.push(Cause::new(
                            "FieldValueInvalid",
                            field,
                            format!("Invalid value: {query:?}: query parameters are not permitted in the URL{FORM}"),
                        ));
                    }
                }
            }
        }
        (None, Some(service)) => {
            let text = |f: &str| service.get(f).and_then(Value::as_str).unwrap_or_default();
            if text("name").is_empty() {
                causes.push(Cause::new(
                    "FieldValueRequired",
                    format!("{path}.service.name"),
                    "Required value: service name is required",
                ));
            }
            if text("namespace").is_empty() {
                causes.push(Cause::new(
                    "FieldValueRequired",
                    format!("{path}.service.namespace"),
                    "Required value: service namespace is required",
                ));
            }
            if let Some(port) = service.get("port").and_then(Value::as_i64)
                && !(1..=65535).contains(&port)
            {
                causes.push(Cause::new(
                    "FieldValueInvalid",
                    format!("{path}.service.port"),
                    format!("Invalid value: {port}: port is not valid: must be between 1 and 65535, inclusive"),
                ));
            }
            let path_given = text("path");
            if !path_given.is_empty() && !path_given.starts_with('/') {
                causes.push(Cause::new(
                    "FieldValueInvalid",
                    format!("{path}.service.path"),
                    format!("Invalid value: {path_given:?}: must start with a '/'"),
                ));
            }
        }
        _ => causes.push(Cause::new(
            "FieldValueRequired",
            path.to_string(),
            "Required value: exactly one of url or service is required",
        )),
    }
    causes
}

/// An `https://` URL without user info or fragment (the real server refuses those when the
/// configuration is written).
fn parse_url(url: &str) -> Result<To, String> {
    let uri: http::Uri = url.parse().map_err(|e| format!("invalid url {url:?}: {e}"))?;
    if uri.scheme_str() != Some("https") {
        return Err(format!("the url {url:?} must begin with https://"));
    }
    let host = uri.host().filter(|h| !h.is_empty()).ok_or_else(|| format!("the url {url:?} has no host"))?;
    let path = uri.path_and_query().map_or("/", |p| p.as_str()).to_string();
    let authority = uri.authority().map_or(host, |a| a.as_str()).to_string();
    Ok(To::Url { host: host.to_string(), port: uri.port_u16().unwrap_or(443), authority, path })
}

fn parse_service(service: &Value) -> ServiceRef {
    let text = |f: &str| service.get(f).and_then(Value::as_str).unwrap_or_default().to_string();
    let path = text("path");
    ServiceRef {
        namespace: text("namespace"),
        name: text("name"),
        path: if path.is_empty() { "/".to_string() } else { path },
        port: service.get("port").and_then(Value::as_u64).and_then(|p| u16::try_from(p).ok()).unwrap_or(443),
    }
}

/// The trust roots of a call: the `caBundle`'s certificates, or the system's.
fn roots(ca_bundle: Option<&[u8]>) -> Result<Arc<RootCertStore>, String> {
    let Some(pem) = ca_bundle else {
        return Ok(system_roots());
    };
    let mut store = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(pem) {
        let cert = cert.map_err(|e| format!("caBundle holds no valid PEM certificate: {e}"))?;
        store.add(cert).map_err(|e| format!("caBundle holds an unusable certificate: {e}"))?;
    }
    if store.is_empty() {
        return Err("caBundle holds no PEM certificate".to_string());
    }
    Ok(Arc::new(store))
}

/// The system's trust roots, read once.
fn system_roots() -> Arc<RootCertStore> {
    static ROOTS: OnceLock<Arc<RootCertStore>> = OnceLock::new();
    ROOTS
        .get_or_init(|| {
            let mut store = RootCertStore::empty();
            store.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
            Arc::new(store)
        })
        .clone()
}

/// A webhook resolved for one call: what to dial and which name its certificate must hold.
#[derive(Debug, Clone)]
pub(crate) struct Endpoint {
    /// The URL's host and port as written (`<name>.<namespace>.svc:443` for a service).
    authority: String,
    path: String,
    dial: Dial,
    server_name: ServerName<'static>,
    roots: Arc<RootCertStore>,
}

#[derive(Debug, Clone)]
enum Dial {
    /// A URL's host, looked up when called.
    Host(String, u16),
    /// A service's address, found when resolved, or why none was.
    Address(Result<SocketAddr, String>),
}

/// A call that did not get an answer: Go's words for it, after `Post "<url>": `.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct CallError(pub String);

impl Endpoint {
    /// The URL the call is sent to, as messages show it: with `?timeout=Ns` when the webhook
    /// is told its deadline.
    pub(crate) fn url(&self, timeout: Option<Duration>) -> String {
        format!("https://{}{}", self.authority, self.target(timeout))
    }

    /// The path and query the call is sent to.
    fn target(&self, timeout: Option<Duration>) -> String {
        let mut target = self.path.clone();
        if let Some(timeout) = timeout {
            // The deadline in whole seconds, rounded up, as client-go's `Timeout` sends it.
            let seconds = timeout.as_secs() + u64::from(timeout.subsec_nanos() > 0);
            let separator = if self.path.contains('?') { '&' } else { '?' };
            target = format!("{target}{separator}timeout={seconds}s");
        }
        target
    }

    /// POSTs `review` and reads the answer's JSON, all within `limit`; `tell` adds the deadline
    /// to the query (`?timeout=10s`), as admission calls do. A non-2xx answer is an error whose
    /// text is the answer's `Status` message, when it is one.
    pub(crate) async fn post(&self, review: &Value, limit: Duration, tell: bool) -> Result<Value, CallError> {
        let deadline = tell.then_some(limit);
        let url = self.url(deadline);
        let target = self.target(deadline);
        match tokio::time::timeout(limit, self.exchange(&target, review)).await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(Failure::Transport(why))) => Err(CallError(format!("Post {url:?}: {why}"))),
            Ok(Err(Failure::Answer(why))) => Err(CallError(why)),
            Err(_) => Err(CallError(format!("Post {url:?}: context deadline exceeded"))),
        }
    }

    async fn exchange(&self, target: &str, review: &Value) -> Result<Value, Failure> {
        let address = match &self.dial {
            Dial::Address(address) => address.clone().map_err(Failure::Transport)?,
            Dial::Host(host, port) => {
                let host = host.trim_start_matches('[').trim_end_matches(']');
                tokio::net::lookup_host((host, *port))
                    .await
                    .ok()
                    .and_then(|mut found| found.next())
                    .ok_or_else(|| Failure::Transport(format!("dial tcp: lookup {host}: no such host")))?
            }
        };
        let tcp = tokio::net::TcpStream::connect(address)
            .await
            .map_err(|e| Failure::Transport(format!("dial tcp {address}: {}", dial_error(&e))))?;
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .map_err(|e| Failure::Transport(format!("tls: {e}")))?
            .with_root_certificates(self.roots.clone())
            .with_no_client_auth();
        let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
            .connect(self.server_name.clone(), tcp)
            .await
            .map_err(|e| Failure::Transport(tls_error(&e, &self.server_name)))?;
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
            .await
            .map_err(|e| Failure::Transport(e.to_string()))?;
        tokio::spawn(async move {
            // The connection ends with the call; its error, if any, reaches the call.
            let _ = connection.await;
        });
        let body = serde_json::to_vec(review).unwrap_or_default();
        let request = http::Request::post(target)
            .header(http::header::HOST, &self.authority)
            .header(http::header::CONTENT_TYPE, "application/json")
            .header(http::header::ACCEPT, "application/json, */*")
            .header(http::header::USER_AGENT, "kube-apiserver-admission")
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| Failure::Transport(e.to_string()))?;
        let response = sender.send_request(request).await.map_err(|e| Failure::Transport(e.to_string()))?;
        let status = response.status();
        let bytes = Limited::new(response.into_body(), MAX_ANSWER)
            .collect()
            .await
            .map_err(|e| Failure::Transport(format!("reading the answer: {e}")))?
            .to_bytes();
        if !status.is_success() {
            return Err(Failure::Answer(unsuccessful(status.as_u16(), &bytes)));
        }
        serde_json::from_slice(&bytes).map_err(|e| Failure::Answer(format!("the answer is not JSON: {e}")))
    }
}

enum Failure {
    /// No answer (connecting, TLS, HTTP): shown after `Post "<url>": `.
    Transport(String),
    /// An answer that is not a usable one.
    Answer(String),
}

/// The message of a non-2xx answer, as client-go makes one: the `Status` message the body
/// carries, or one for the status code.
fn unsuccessful(code: u16, body: &[u8]) -> String {
    let status: Option<Value> = serde_json::from_slice(body).ok();
    if let Some(message) = status
        .as_ref()
        .filter(|s| s.get("kind").and_then(Value::as_str) == Some("Status"))
        .and_then(|s| s.get("message"))
        .and_then(Value::as_str)
    {
        return message.to_string();
    }
    let text = String::from_utf8_lossy(body);
    if text.trim().is_empty() {
        format!("the server responded with the status code {code} but did not return more information")
    } else if code >= 500 {
        format!("an error on the server ({:?}) has prevented the request from succeeding", text.trim())
    } else {
        format!("the server responded with the status code {code}: {}", text.trim())
    }
}

/// A connect failure in the words of Go's `net` package.
fn dial_error(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::ConnectionRefused => "connect: connection refused".to_string(),
        std::io::ErrorKind::TimedOut => "i/o timeout".to_string(),
        _ => format!("connect: {e}"),
    }
}

/// A TLS failure in the words of Go's `crypto/tls` and `crypto/x509`.
fn tls_error(e: &std::io::Error, server_name: &ServerName<'_>) -> String {
    let inner = e.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>());
    match inner {
        Some(rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer)) => {
            "tls: failed to verify certificate: x509: certificate signed by unknown authority".to_string()
        }
        Some(rustls::Error::InvalidCertificate(
            rustls::CertificateError::NotValidForName | rustls::CertificateError::NotValidForNameContext { .. },
        )) => format!("tls: failed to verify certificate: x509: certificate is not valid for {}", server_name.to_str()),
        Some(rustls::Error::InvalidCertificate(
            rustls::CertificateError::Expired | rustls::CertificateError::ExpiredContext { .. },
        )) => "tls: failed to verify certificate: x509: certificate has expired or is not yet valid".to_string(),
        Some(other) => format!("tls: {other}"),
        None => format!("remote error: {e}"),
    }
}

/// A fresh unique id for a review (`uuid.NewUUID()`).
pub(crate) fn review_uid() -> String {
    uuid::Uuid::new_v4().to_string()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_url_or_a_service_but_not_both() {
        let url = ClientConfig::parse(&json!({"url": "https://127.0.0.1:8443/validate"})).unwrap();
        assert_eq!(
            url.endpoint(None).unwrap().url(Some(Duration::from_secs(10))),
            "https://127.0.0.1:8443/validate?timeout=10s"
        );
        let service = ClientConfig::parse(&json!({"service": {"namespace": "ns", "name": "hooks"}})).unwrap();
        let address: SocketAddr = "127.0.0.1:9443".parse().unwrap();
        assert_eq!(service.endpoint(Some(Ok(address))).unwrap().url(None), "https://hooks.ns.svc:443/");
        assert!(ClientConfig::parse(&json!({})).is_err());
        assert!(ClientConfig::parse(&json!({"url": "http://127.0.0.1/x"})).unwrap_err().contains("https://"));
    }

    #[test]
    fn the_deadline_in_the_query_is_rounded_up_to_seconds() {
        let url = ClientConfig::parse(&json!({"url": "https://h/x?a=b"})).unwrap().endpoint(None).unwrap();
        assert_eq!(url.url(Some(Duration::from_millis(1500))), "https://h/x?a=b&timeout=2s");
    }
}
