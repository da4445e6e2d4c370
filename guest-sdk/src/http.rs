//! Outbound HTTP through the host: only the URLs the manifest asks for
//! ([`Manifest::outbound`](crate::Manifest::outbound)) and the operator grants reach the
//! network; anything else fails at once with [`HttpError::Denied`], naming the URL and
//! the setting that would allow it. Whole requests and responses; redirects are followed
//! by the host, inside the grant.
//!
//! A [`HttpError`] converts into the plugin's [`Error`]: retryable for a timeout or a
//! failed connection, permanent for a denial. Check the status yourself: any answer is a
//! response.
//!
//! ```no_run
//! use kubewasm_sdk::http;
//!
//! # fn f() -> Result<(), kubewasm_sdk::Error> {
//! let response = http::post("https://hooks.slack.com/services/T/B/X")
//!     .json(&kubewasm_sdk::serde_json::json!({"text": "hello"}))?
//!     .send()?;
//! if !response.is_success() {
//!     return Err(kubewasm_sdk::Error::retryable(format!("Slack answered {}", response.status)));
//! }
//! # Ok(())
//! # }
//! ```
//!
//! In a native `cargo test` nothing leaves the process: [`crate::testing`] answers from
//! canned responses and records every request.

use std::time::Duration;

use serde::Serialize;

pub use kubewasm_contract::{HttpError, HttpRequest, HttpResponse};

use crate::Error;

/// A request to `url` with `method`, to fill in and [`send`](RequestBuilder::send).
pub fn request(method: &str, url: &str) -> RequestBuilder {
    RequestBuilder(HttpRequest { method: method.to_string(), url: url.to_string(), ..HttpRequest::default() })
}

pub fn get(url: &str) -> RequestBuilder {
    request("GET", url)
}

pub fn post(url: &str) -> RequestBuilder {
    request("POST", url)
}

pub fn put(url: &str) -> RequestBuilder {
    request("PUT", url)
}

pub fn delete(url: &str) -> RequestBuilder {
    request("DELETE", url)
}

/// A request being built.
#[derive(Clone, Debug)]
#[must_use]
pub struct RequestBuilder(HttpRequest);

impl RequestBuilder {
    /// Adds a header (a name may repeat).
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.0.headers.push((name.to_string(), value.to_string()));
        self
    }

    /// The body, as it is.
    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.0.body = body.into();
        self
    }

    /// `value` as a JSON body, with `Content-Type: application/json`.
    ///
    /// # Errors
    ///
    /// A permanent [`Error`] when `value` does not serialize.
    pub fn json(self, value: &impl Serialize) -> Result<Self, Error> {
        let body = serde_json::to_vec(value).map_err(|e| Error::permanent(format!("request body: {e}")))?;
        Ok(self.header("content-type", "application/json").body(body))
    }

    /// A timeout shorter than the host's (which it never exceeds).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.0.timeout_ms = Some(u32::try_from(timeout.as_millis()).unwrap_or(u32::MAX));
        self
    }

    /// The request as built.
    pub fn build(self) -> HttpRequest {
        self.0
    }

    /// Sends the request; see [`send`].
    ///
    /// # Errors
    ///
    /// Why there is no response: an [`HttpError`].
    pub fn send(self) -> Result<HttpResponse, HttpError> {
        send(&self.0)
    }
}

/// Sends `request` through the host and returns its whole response, whatever its status.
///
/// # Errors
///
/// Why there is no response: [`HttpError::Denied`] (outside the manifest or the grant),
/// [`HttpError::Timeout`], [`HttpError::TooLarge`], [`HttpError::TooManyRequests`] (the
/// call's budget), [`HttpError::Failed`] (DNS, connection, TLS...).
pub fn send(request: &HttpRequest) -> Result<HttpResponse, HttpError> {
    transport::send(request)
}

#[cfg(target_arch = "wasm32")]
mod transport {
    use super::{HttpError, HttpRequest, HttpResponse};
    use crate::bindings::kubewasm::reconciler::http as wit;

    pub(super) fn send(request: &HttpRequest) -> Result<HttpResponse, HttpError> {
        use kubewasm_contract::wit::Lift;
        wit::send(&wit::HttpRequest::from(request)).map(HttpResponse::from).map_err(|e| {
            let Ok(e) = HttpError::lift(&e, "http error");
            e
        })
    }
}

#[cfg(not(target_arch = "wasm32"))]
pub(crate) mod transport {
    use std::cell::RefCell;

    use super::{HttpError, HttpRequest, HttpResponse};

    /// How the test harness answers a request.
    pub(crate) type Answer = Box<dyn FnMut(&HttpRequest) -> Result<HttpResponse, HttpError>>;

    thread_local! {
        pub(crate) static ANSWER: RefCell<Option<Answer>> = const { RefCell::new(None) };
        pub(crate) static SENT: RefCell<Vec<HttpRequest>> = const { RefCell::new(Vec::new()) };
    }

    pub(super) fn send(request: &HttpRequest) -> Result<HttpResponse, HttpError> {
        SENT.with(|sent| sent.borrow_mut().push(request.clone()));
        ANSWER.with(|answer| match answer.borrow_mut().as_mut() {
            Some(answer) => answer(request),
            None => Err(HttpError::Denied(format!(
                "{}: a native test sends nothing; give kubewasm_sdk::testing canned responses",
                request.url
            ))),
        })
    }
}
