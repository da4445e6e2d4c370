//! Authentication, impersonation and authorization: one request layer in front of the verbs,
//! in kube-apiserver's order (`WithAuthentication`, `WithImpersonation`, `WithAuthorization`),
//! that leaves the [`User`] for the handler and the reviews.
//!
//! - Authentication: a client certificate the cluster's CA signed names its user (`CN`) and
//!   groups (`O`); a bearer token must be a service-account token of this server whose account
//!   still exists; a request with neither is `system:anonymous` (on plain HTTP, the
//!   administrator's); a certificate or token that does not verify is `401 Unauthorized`.
//! - Impersonation (`Impersonate-User`, `-Group`, `-Uid`, `-Extra-*`): each part allowed for the
//!   real user by the verb `impersonate`, then the request is the impersonated user's.
//! - Authorization: `system:masters` may do anything, everyone else what RBAC grants; a refusal
//!   is `403 Forbidden`, worded as upstream's `responsewriters.Forbidden`, before the handler
//!   looks at the object (a forbidden read of a missing object is 403, not 404).

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::tls::Peer;
use crate::access::Attributes;
use crate::kinds;
use crate::request_info::RequestInfo;
use crate::state::{Credentials, Shared};
use crate::status::{ApiError, go_quote};
use crate::store::Store;
use crate::tokens::ISSUER;
use crate::user::{
    ANONYMOUS, AUTHENTICATED, UNAUTHENTICATED, User, service_account_groups, service_account_name,
    split_service_account,
};

const IMPERSONATE_USER: &str = "impersonate-user";
const IMPERSONATE_GROUP: &str = "impersonate-group";
const IMPERSONATE_UID: &str = "impersonate-uid";
const IMPERSONATE_EXTRA: &str = "impersonate-extra-";

/// Why a request is not served.
enum Refusal {
    /// Unauthorized or forbidden: a `Status`.
    Status(ApiError),
    /// Impersonation headers without a user to impersonate: upstream answers a plain-text 500.
    Internal(String),
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let (mut response, nosniff) = match self {
            Refusal::Status(status) => {
                let forbidden = status.code == 403;
                (status.into_response(), forbidden)
            }
            Refusal::Internal(text) => {
                let text = sanitize(&text);
                let mut response = (StatusCode::INTERNAL_SERVER_ERROR, Body::from(format!("{text}\n"))).into_response();
                response
                    .headers_mut()
                    .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
                (response, true)
            }
        };
        if nosniff {
            response.headers_mut().insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
        }
        response
    }
}

/// The layer. It reads the [`RequestInfo`] and the connection's [`Peer`] the server attaches
/// before it.
pub(super) async fn layer(State(shared): State<Arc<Shared>>, mut req: Request, next: Next) -> Response {
    let peer = req.extensions().get::<ConnectInfo<Peer>>().map(|c| c.0.clone()).unwrap_or_default();
    let decided = {
        let cluster = shared.lock();
        admit(&shared.credentials, &cluster.store, &peer, &req)
    };
    let user = match decided {
        Ok(user) => user,
        Err(refused) => return refused.into_response(),
    };
    let headers = req.headers_mut();
    headers.remove(header::AUTHORIZATION);
    let impersonation: Vec<_> =
        headers.keys().filter(|name| name.as_str().starts_with("impersonate-")).cloned().collect();
    for name in impersonation {
        headers.remove(name);
    }
    req.extensions_mut().insert(user);
    next.run(req).await
}

/// The user the request is served as, or the answer that refuses it.
fn admit(credentials: &Credentials, store: &Store, peer: &Peer, req: &Request) -> Result<User, Refusal> {
    let authenticated = authenticate(credentials, store, req.headers(), peer).map_err(Refusal::Status)?;
    let user = impersonate(store, &authenticated, req)?;
    if let Some(info) = req.extensions().get::<RequestInfo>() {
        let attributes = attributes(info, req);
        let decision = kinds::authorize(store, &user, &attributes);
        if !decision.allowed() {
            return Err(Refusal::Status(forbidden(&user, &attributes, decision.reason())));
        }
    }
    Ok(user)
}

/// Who sends the request: the first authenticator that recognizes its credentials, anonymous
/// without any, 401 when credentials are given and none recognizes them.
fn authenticate(credentials: &Credentials, store: &Store, headers: &HeaderMap, peer: &Peer) -> Result<User, ApiError> {
    let mut refused = false;
    if let Some(chain) = &peer.certificates {
        match credentials.pki.verify_client(chain) {
            // A certificate without a common name names nobody (`CommonNameUserConversion`).
            Ok(subject) if subject.common_name.is_empty() => {}
            Ok(subject) => {
                let mut user = User {
                    name: subject.common_name,
                    uid: subject.uid.unwrap_or_default(),
                    groups: subject.organizations,
                    ..User::default()
                };
                user.extra.insert(
                    "authentication.kubernetes.io/credential-id".into(),
                    vec![format!("X509SHA256={}", subject.fingerprint)],
                );
                return Ok(user.authenticated());
            }
            Err(why) => {
                tracing::debug!(reason = %why, "a client certificate was refused");
                refused = true;
            }
        }
    }
    if let Some(token) = bearer_token(headers) {
        match kinds::authenticate_token(store, &credentials.signer, token, &[ISSUER.to_string()]) {
            Ok((user, _)) => return Ok(user.authenticated()),
            Err(why) => {
                tracing::debug!(reason = %why, "a bearer token was refused");
                refused = true;
            }
        }
    }
    if refused {
        return Err(ApiError::unauthorized());
    }
    Ok(if credentials.plain_http { User::admin() } else { User::anonymous() })
}

/// The token of an `Authorization: Bearer` header (`bearertoken.Authenticator`).
fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let mut parts = value.splitn(3, ' ');
    let (scheme, token) = (parts.next()?, parts.next()?);
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// One thing a request asks to act as (`buildImpersonationRequests`).
struct Impersonation {
    kind: &'static str,
    namespace: String,
    name: String,
    api_version: &'static str,
    /// The extra key of a `UserExtra`.
    field_path: String,
}

/// The user the request acts as: `user` itself without impersonation headers, else the user
/// they name once `user` is allowed to impersonate each part (`WithImpersonation`).
fn impersonate(store: &Store, user: &User, req: &Request) -> Result<User, Refusal> {
    let requests = impersonation_requests(req).map_err(Refusal::Internal)?;
    if requests.is_empty() {
        return Ok(user.clone());
    }
    let groups_given = requests.iter().any(|r| r.kind == "Group");
    let mut acting = User::default();
    for request in &requests {
        let (group, resource) = match request.kind {
            "ServiceAccount" => {
                acting.name = service_account_name(&request.namespace, &request.name);
                if !groups_given {
                    acting.groups = service_account_groups(&request.namespace);
                }
                ("", "serviceaccounts".to_string())
            }
            "User" => {
                acting.name.clone_from(&request.name);
                ("", "users".to_string())
            }
            "Group" => {
                acting.groups.push(request.name.clone());
                ("", "groups".to_string())
            }
            "UserExtra" => {
                acting.extra.entry(request.field_path.clone()).or_default().push(request.name.clone());
                ("authentication.k8s.io", format!("userextras/{}", request.field_path))
            }
            _ => {
                acting.uid.clone_from(&request.name);
                ("authentication.k8s.io", "uids".to_string())
            }
        };
        let attributes = Attributes::resource("impersonate", group, &resource, &request.namespace, &request.name);
        let decision = kinds::authorize(store, user, &attributes);
        if !decision.allowed() {
            return Err(Refusal::Status(forbidden(user, &attributes, decision.reason())));
        }
    }
    let (added, present) = if acting.name == ANONYMOUS {
        (UNAUTHENTICATED, &[UNAUTHENTICATED][..])
    } else {
        (AUTHENTICATED, &[AUTHENTICATED, UNAUTHENTICATED][..])
    };
    if !acting.groups.iter().any(|g| present.contains(&g.as_str())) {
        acting.groups.push(added.to_string());
    }
    Ok(acting)
}

/// What the impersonation headers ask to act as, in upstream's order; the text of the 500 when
/// they name groups, extras or a uid but no user (`buildImpersonationRequests`).
fn impersonation_requests(req: &Request) -> Result<Vec<Impersonation>, String> {
    let headers = req.headers();
    let values = |name: &str| -> Vec<String> {
        headers.get_all(name).iter().filter_map(|v| v.to_str().ok()).map(String::from).collect()
    };
    let request = |kind, name: String, api_version, field_path: String| Impersonation {
        kind,
        namespace: String::new(),
        name,
        api_version,
        field_path,
    };
    let mut requests = Vec::new();
    let requested_user = values(IMPERSONATE_USER).into_iter().next().unwrap_or_default();
    if !requested_user.is_empty() {
        requests.push(match split_service_account(&requested_user) {
            Some((namespace, name)) => Impersonation {
                namespace: namespace.to_string(),
                ..request("ServiceAccount", name.to_string(), "", String::new())
            },
            None => request("User", requested_user.clone(), "", String::new()),
        });
    }
    for group in values(IMPERSONATE_GROUP) {
        requests.push(request("Group", group, "", String::new()));
    }
    for header_name in headers.keys().map(axum::http::HeaderName::as_str).filter(|n| n.starts_with(IMPERSONATE_EXTRA)) {
        let key = unescape_extra_key(&header_name[IMPERSONATE_EXTRA.len()..]);
        for value in values(header_name) {
            requests.push(request("UserExtra", value, "authentication.k8s.io/v1", key.clone()));
        }
    }
    if let Some(uid) = values(IMPERSONATE_UID).into_iter().next().filter(|u| !u.is_empty()) {
        requests.push(request("UID", uid, "authentication.k8s.io/v1", String::new()));
    }
    if !requests.is_empty() && requested_user.is_empty() {
        // Go's `%v` of the `ObjectReference`s: Kind Namespace Name UID APIVersion
        // ResourceVersion FieldPath.
        let listed: Vec<String> = requests
            .iter()
            .map(|r| format!("{{{} {} {}  {}  {}}}", r.kind, r.namespace, r.name, r.api_version, r.field_path))
            .collect();
        let uri = req.uri().path_and_query().map_or_else(|| req.uri().path().to_string(), ToString::to_string);
        return Err(format!(
            "Internal Server Error: {}: requested [{}] without impersonating a user",
            go_quote(&uri),
            listed.join(" ")
        ));
    }
    Ok(requests)
}

/// An extra key of an `Impersonate-Extra-` header: lower-case, `%`-escapes decoded
/// (`unescapeExtraKey`; left as it is when it does not decode).
fn unescape_extra_key(key: &str) -> String {
    let lower = key.to_ascii_lowercase();
    let bytes = lower.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
            match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                Some(byte) => {
                    out.push(byte);
                    i += 3;
                    continue;
                }
                None => return lower,
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or(lower)
}

/// What the request asks to do: its verb on the resource `RequestInfo` found, or on its path;
/// a list or watch of one name (a `metadata.name` field selector) names the object.
fn attributes(info: &RequestInfo, req: &Request) -> Attributes {
    let Some(path) = &info.resource else {
        return Attributes::path(&req.method().as_str().to_ascii_lowercase(), req.uri().path());
    };
    let mut name = path.name.clone().unwrap_or_default();
    if name.is_empty() && matches!(info.verb, "list" | "watch") {
        let selector = form_urlencoded::parse(req.uri().query().unwrap_or("").as_bytes())
            .find(|(k, _)| k == "fieldSelector")
            .map(|(_, v)| v.into_owned())
            .unwrap_or_default();
        if let Some(exact) = selector
            .strip_prefix("metadata.name==")
            .or_else(|| selector.strip_prefix("metadata.name="))
            .filter(|n| !n.is_empty() && !n.contains([',', '/', '%']) && *n != "." && *n != "..")
        {
            name = exact.to_string();
        }
    }
    Attributes {
        verb: info.verb.to_string(),
        resource_request: true,
        namespace: path.namespace.clone().unwrap_or_default(),
        group: path.group.clone(),
        version: path.version.clone(),
        resource: path.resource.clone(),
        subresource: path.subresource.clone().unwrap_or_default(),
        name,
        path: req.uri().path().to_string(),
    }
}

/// The 403 of a refused access (`responsewriters.Forbidden`).
fn forbidden(user: &User, a: &Attributes, reason: &str) -> ApiError {
    let who = go_quote(&user.name);
    let message = if !a.resource_request {
        format!("User {who} cannot {} path {}", a.verb, go_quote(&a.path))
    } else if a.namespace.is_empty() {
        format!(
            "User {who} cannot {} resource {} in API group {} at the cluster scope",
            a.verb,
            go_quote(&a.combined_resource()),
            go_quote(&a.group)
        )
    } else {
        format!(
            "User {who} cannot {} resource {} in API group {} in the namespace {}",
            a.verb,
            go_quote(&a.combined_resource()),
            go_quote(&a.group),
            go_quote(&a.namespace)
        )
    };
    let message = sanitize(&message);
    let message = if reason.is_empty() { message } else { format!("{message}: {reason}") };
    ApiError::forbidden_access(&a.group, &a.resource, &a.name, &message)
}

/// What upstream's response writers escape in messages.
fn sanitize(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extra_keys_are_lower_case_and_unescaped() {
        assert_eq!(unescape_extra_key("Acme.com%2Fproject"), "acme.com/project");
        assert_eq!(unescape_extra_key("scopes"), "scopes");
        assert_eq!(unescape_extra_key("bad%zz"), "bad%zz");
    }
}
