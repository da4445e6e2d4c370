//! Outbound HTTP as the contract's `http` interface carries it: whole requests and
//! responses, and why a request has no response.

use std::fmt;

/// One HTTP request a plugin sends.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HttpRequest {
    /// `GET`, `POST`, ...
    pub method: String,
    /// An absolute `http://` or `https://` URL.
    pub url: String,
    /// Header names and values; a name may repeat.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// The whole request's timeout; lowered to the host's, never raised.
    pub timeout_ms: Option<u32>,
}

/// The response to a request, whatever its status.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HttpResponse {
    pub status: u16,
    /// Header names (lower-case) and values.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl HttpResponse {
    /// The first value of header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// Whether the status is 2xx.
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

/// Why a request has no response; each message names the URL's origin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HttpError {
    /// Outside the manifest's `outbound` or the operator's grant (the message names the
    /// setting that would allow it), or only refused addresses.
    Denied(String),
    /// No complete response within the timeout.
    Timeout(String),
    /// The response body exceeds the host's cap.
    TooLarge(String),
    /// The call has used up its request budget.
    TooManyRequests(String),
    /// Anything else: a malformed request, DNS, connection, TLS, protocol.
    Failed(String),
}

impl HttpError {
    /// The message, whatever the case.
    pub fn message(&self) -> &str {
        match self {
            Self::Denied(m) | Self::Timeout(m) | Self::TooLarge(m) | Self::TooManyRequests(m) | Self::Failed(m) => m,
        }
    }

    /// Whether sending the same request later may succeed: a timeout or a failure may
    /// pass, a denial or an oversized answer will not.
    pub fn is_transient(&self) -> bool {
        matches!(self, Self::Timeout(_) | Self::Failed(_))
    }

    /// The case's name: `denied`, `timeout`, `too-large`, `too-many-requests`, `failed`.
    pub fn case(&self) -> &'static str {
        match self {
            Self::Denied(_) => "denied",
            Self::Timeout(_) => "timeout",
            Self::TooLarge(_) => "too-large",
            Self::TooManyRequests(_) => "too-many-requests",
            Self::Failed(_) => "failed",
        }
    }
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.case(), self.message())
    }
}

impl std::error::Error for HttpError {}
