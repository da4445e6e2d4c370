//! Admission and conversion webhooks: the plugins that default, validate or convert, served
//! to the API server over HTTPS and registered with it.
//!
//! [`tls`] is the server's identity and the CA bundle the API server trusts it by;
//! [`register`] turns the loaded plugins into the webhook configurations and CRD conversions
//! that point the API server at the server, and keeps them in step.

pub mod register;
pub mod tls;
