//! An identity per plugin: each plugin's reads and writes go out as its own
//! `ServiceAccount` through impersonation, so the API server's RBAC, not only the host's
//! check of declared kinds, fences what a plugin may touch.
//!
//! The host keeps one connection pool: a plugin's client wraps the host's and adds the
//! `Impersonate-User` header to every request. kube-apiserver then checks that the host
//! may `impersonate` that `ServiceAccount` (by name) and serves the request as it, with the
//! groups a token of the account would carry (`WithImpersonation`).

use http::{HeaderName, HeaderValue, Request};
use kube::Client;
use kube::client::Body;

/// The header kube-apiserver reads the user to act as from.
const IMPERSONATE_USER: HeaderName = HeaderName::from_static("impersonate-user");

/// What every plugin's `ServiceAccount` name starts with; `kubewasm rbac` uses the same.
pub const ACCOUNT_PREFIX: &str = "kubewasm-plugin-";

/// Where the plugins' `ServiceAccount`s live: each plugin acts as
/// `system:serviceaccount:NAMESPACE:kubewasm-plugin-NAME`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identities {
    /// The namespace of the plugins' `ServiceAccount`s (`kubewasm rbac` puts them beside
    /// the host's own).
    pub namespace: String,
}

/// Why a plugin's client could not be made.
#[derive(Debug, thiserror::Error)]
#[error("plugin {plugin}: {user:?} cannot be sent as an Impersonate-User header")]
pub struct IdentityError {
    plugin: String,
    user: String,
}

impl Identities {
    /// The name of plugin `plugin`'s `ServiceAccount`.
    pub fn account(plugin: &str) -> String {
        format!("{ACCOUNT_PREFIX}{plugin}")
    }

    /// The user plugin `plugin` acts as.
    pub fn user(&self, plugin: &str) -> String {
        self.user_of(&Self::account(plugin))
    }

    /// The user a plugin acting as `ServiceAccount` `account` is.
    pub fn user_of(&self, account: &str) -> String {
        format!("system:serviceaccount:{}:{account}", self.namespace)
    }

    /// A client that sends every request of `host` as plugin `plugin`'s `ServiceAccount`,
    /// over `host`'s connections.
    ///
    /// # Errors
    ///
    /// When the user name is no valid header value (a plugin name is a DNS label, so only
    /// a namespace that is none).
    pub fn client(&self, host: &Client, plugin: &str) -> Result<Client, IdentityError> {
        self.client_as(host, plugin, &Self::account(plugin))
    }

    /// Like [`Identities::client`], for a plugin whose settings name its `ServiceAccount`.
    ///
    /// # Errors
    ///
    /// As [`Identities::client`].
    pub fn client_as(&self, host: &Client, plugin: &str, account: &str) -> Result<Client, IdentityError> {
        let user = self.user_of(account);
        let value = HeaderValue::from_str(&user).map_err(|_| IdentityError { plugin: plugin.to_string(), user })?;
        let inner = host.clone();
        let service = tower::service_fn(move |mut request: Request<Body>| {
            request.headers_mut().insert(IMPERSONATE_USER, value.clone());
            let inner = inner.clone();
            async move { inner.send(request).await }
        });
        Ok(Client::new(service, host.default_namespace()))
    }
}
