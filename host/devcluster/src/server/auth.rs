//! Authentication and authorization, as a request layer in front of the verbs: who makes the
//! request (the [`User`] the handler and the reviews read), and whether they may do what its
//! `RequestInfo` says. This server takes no credentials and has no RBAC: every request is the
//! cluster administrator's, and every request is allowed. Client certificates or tokens
//! belong in [`authenticate`], RBAC in [`authorize`].

use axum::extract::Request;
use axum::http::HeaderMap;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::request_info::RequestInfo;
use crate::status::ApiError;
use crate::user::User;

/// The layer. It reads the [`RequestInfo`] the server attaches before it.
pub(super) async fn layer(mut req: Request, next: Next) -> Response {
    let user = authenticate(req.headers());
    if let Some(info) = req.extensions().get::<RequestInfo>()
        && let Err(refused) = authorize(&user, info)
    {
        return refused.into_response();
    }
    req.extensions_mut().insert(user);
    next.run(req).await
}

/// Who sends these headers: always the administrator, as the kubeconfig the server writes
/// carries no credentials.
fn authenticate(_headers: &HeaderMap) -> User {
    User::admin()
}

/// Whether `user` may do what `info` asks: always, as no authorizer is configured.
#[allow(clippy::unnecessary_wraps)] // an authorizer answers with the refusal it may make
fn authorize(_user: &User, _info: &RequestInfo) -> Result<(), ApiError> {
    Ok(())
}
