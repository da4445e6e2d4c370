//! The network side of the egress: resolve the name, keep the addresses the grant
//! allows ([`super::ranges`]), connect to one of them (never by name again: no DNS
//! rebinding between the check and the connection), TLS to the name, HTTP/1.1, the
//! response body read up to its cap, all within the request's timeout.

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};

use bytes::{Bytes, BytesMut};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

use super::allow::{HostPattern, Target, TargetHost};
use super::{Failure, Incoming, Outgoing, ranges};

/// The TLS configuration of every request: the system's roots, the ring provider kube
/// uses too. Built once.
fn tls() -> Result<Arc<rustls::ClientConfig>, Failure> {
    static CONFIG: OnceLock<Result<Arc<rustls::ClientConfig>, String>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let mut roots = rustls::RootCertStore::empty();
            let found = rustls_native_certs::load_native_certs();
            for cert in found.certs {
                // A certificate the store refuses is skipped, as browsers do.
                let _ = roots.add(cert);
            }
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map(|builder| Arc::new(builder.with_root_certificates(roots).with_no_client_auth()))
                .map_err(|e| e.to_string())
        })
        .clone()
        .map_err(Failure::Tls)
}

/// Sends `request` to `target`, granted by `grant`, and reads the whole response.
pub(super) async fn fetch(
    target: &Target,
    grant: &HostPattern,
    request: Outgoing,
    max_bytes: u64,
) -> Result<Incoming, Failure> {
    let origin = target.origin();
    let timeout = request.timeout.unwrap_or(std::time::Duration::from_secs(10));
    tokio::time::timeout(timeout, exchange(target, grant, request, max_bytes))
        .await
        .unwrap_or_else(|_| Err(Failure::Timeout(format!("{origin}: no complete response within {timeout:?}"))))
}

async fn exchange(
    target: &Target,
    grant: &HostPattern,
    request: Outgoing,
    max_bytes: u64,
) -> Result<Incoming, Failure> {
    let origin = target.origin();
    let addrs = resolve(target).await?;
    let (allowed, refused): (Vec<SocketAddr>, Vec<SocketAddr>) =
        addrs.into_iter().partition(|a| ranges::allowed(grant, a.ip()));
    if allowed.is_empty() {
        let refused: Vec<String> = refused.iter().map(|a| a.ip().to_string()).collect();
        return Err(Failure::Prohibited(format!(
            "{origin} resolves only to addresses a plugin may not reach unless the grant names them by address ({})",
            refused.join(", ")
        )));
    }
    let tcp = TcpStream::connect(&allowed[..]).await.map_err(|e| Failure::Connect(format!("{origin}: {e}")))?;
    if target.scheme == "https" {
        let name = match &target.host {
            TargetHost::Name(name) => rustls::pki_types::ServerName::try_from(name.clone())
                .map_err(|e| Failure::Tls(format!("{origin}: {e}")))?,
            TargetHost::Ip(ip) => rustls::pki_types::ServerName::IpAddress((*ip).into()),
        };
        let tls = tokio_rustls::TlsConnector::from(tls()?)
            .connect(name, tcp)
            .await
            .map_err(|e| Failure::Tls(format!("{origin}: {e}")))?;
        over(tls, target, request, max_bytes).await
    } else {
        over(tcp, target, request, max_bytes).await
    }
}

/// The addresses of the target: its own, or what its name resolves to (once).
async fn resolve(target: &Target) -> Result<Vec<SocketAddr>, Failure> {
    match &target.host {
        TargetHost::Ip(ip) => Ok(vec![SocketAddr::new(*ip, target.port)]),
        TargetHost::Name(name) => {
            let found = tokio::net::lookup_host((name.as_str(), target.port))
                .await
                .map_err(|e| Failure::Dns(format!("{}: {e}", target.origin())))?;
            let addrs: Vec<SocketAddr> = found.collect();
            if addrs.is_empty() {
                return Err(Failure::Dns(format!("{}: the name has no address", target.origin())));
            }
            Ok(addrs)
        }
    }
}

/// HTTP/1.1 over `io`.
async fn over<S>(io: S, target: &Target, request: Outgoing, max_bytes: u64) -> Result<Incoming, Failure>
where
    S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    let origin = target.origin();
    let protocol = |e: hyper::Error| Failure::Protocol(format!("{origin}: {e}"));
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(io)).await.map_err(protocol)?;
    let driver = tokio::spawn(connection);
    let path = match request.url.query() {
        Some(query) => format!("{}?{query}", request.url.path()),
        None => request.url.path().to_string(),
    };
    let host = match (&target.host, target.port, target.scheme.as_str()) {
        (host, 80, "http") | (host, 443, "https") => host.to_string(),
        (host, port, _) => format!("{host}:{port}"),
    };
    let mut builder =
        http::Request::builder().method(request.method.as_str()).uri(path).header(http::header::HOST, host);
    for (name, value) in &request.headers {
        if !name.eq_ignore_ascii_case("host") {
            builder = builder.header(name.as_str(), value.as_str());
        }
    }
    let invalid = |e: http::Error| Failure::Invalid(format!("{origin}: {e}"));
    let outgoing = builder.body(Full::new(request.body)).map_err(invalid)?;
    let response = sender.send_request(outgoing).await.map_err(protocol)?;
    let status = response.status().as_u16();
    let headers = response
        .headers()
        .iter()
        .filter_map(|(n, v)| Some((n.as_str().to_string(), v.to_str().ok()?.to_string())))
        .collect();
    let too_large = || Failure::TooLarge(format!("{origin}: the response body exceeds {max_bytes} bytes"), max_bytes);
    if response.headers().get(http::header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
        > Some(max_bytes)
    {
        driver.abort();
        return Err(too_large());
    }
    let mut body = response.into_body();
    let mut read = BytesMut::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(protocol)?;
        if let Some(data) = frame.data_ref() {
            if (read.len() + data.len()) as u64 > max_bytes {
                driver.abort();
                return Err(too_large());
            }
            read.extend_from_slice(data);
        }
    }
    driver.abort();
    Ok(Incoming { status, headers, body: Bytes::from(read) })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    use super::*;

    /// A server on loopback answering every connection with `answer`, after `delay`.
    async fn server(answer: &'static [u8], delay: Duration) -> u16 {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut buf = [0u8; 4096];
                    let _ = socket.read(&mut buf).await;
                    tokio::time::sleep(delay).await;
                    let _ = socket.write_all(answer).await;
                });
            }
        });
        port
    }

    fn request(port: u16, timeout: Duration) -> (Target, Outgoing) {
        let url = url::Url::parse(&format!("http://127.0.0.1:{port}/x?a=1")).unwrap();
        let target = Target::of_url(&url).unwrap();
        (
            target,
            Outgoing { method: "GET".into(), url, headers: Vec::new(), body: Bytes::new(), timeout: Some(timeout) },
        )
    }

    fn by_ip() -> HostPattern {
        HostPattern::Network("127.0.0.1/32".parse().unwrap())
    }

    #[tokio::test]
    async fn a_response_is_read_whole_within_its_cap_and_timeout() {
        let port = server(b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\nx-a: b\r\n\r\nhello", Duration::ZERO).await;
        let (target, outgoing) = request(port, Duration::from_secs(5));
        let incoming = fetch(&target, &by_ip(), outgoing, 100).await.unwrap();
        assert_eq!((incoming.status, &incoming.body[..]), (200, &b"hello"[..]));
        assert!(incoming.headers.contains(&("x-a".into(), "b".into())));

        let (target, outgoing) = request(port, Duration::from_secs(5));
        let err = fetch(&target, &by_ip(), outgoing, 4).await.unwrap_err();
        assert!(matches!(err, Failure::TooLarge(_, 4)), "{err:?}");

        let slow = server(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n", Duration::from_secs(5)).await;
        let (target, outgoing) = request(slow, Duration::from_millis(100));
        let err = fetch(&target, &by_ip(), outgoing, 100).await.unwrap_err();
        assert!(matches!(&err, Failure::Timeout(m) if m.contains("127.0.0.1")), "{err:?}");
    }

    #[tokio::test]
    async fn loopback_is_refused_unless_granted_by_address() {
        let port = server(b"HTTP/1.1 204 No Content\r\n\r\n", Duration::ZERO).await;
        let url = url::Url::parse(&format!("http://localhost:{port}/")).unwrap();
        let target = Target::of_url(&url).unwrap();
        let outgoing = Outgoing { method: "GET".into(), url, headers: Vec::new(), body: Bytes::new(), timeout: None };
        let by_name = HostPattern::Name("localhost".into());
        let err = fetch(&target, &by_name, outgoing, 100).await.unwrap_err();
        assert!(matches!(&err, Failure::Prohibited(m) if m.contains("localhost")), "{err:?}");
    }
}
