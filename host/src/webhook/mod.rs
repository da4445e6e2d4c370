//! Admission and conversion webhooks: the plugins that default, validate or convert, served
//! to the API server over HTTPS and registered with it.
//!
//! [`tls`] is the server's identity and the CA bundle the API server trusts it by.

pub mod tls;
