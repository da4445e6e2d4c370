//! Service accounts: the kind, its `token` subresource (`TokenRequest`, `kubectl create
//! token`: `pkg/registry/core/serviceaccount/storage/token.go`), the authentication of the tokens
//! it hands out (`pkg/serviceaccount`: the account, and the object a token is bound to, must
//! still exist with the uid the token names), and the controller that gives every active
//! namespace its `default` service account (`pkg/controller/serviceaccount`).

use serde_json::{Value, json};

use super::core::active_namespaces;
use crate::object;
use crate::printers::{Columns, column, doc};
use crate::resource::GroupResource;
use crate::status::{ApiError, Cause, go_quote};
use crate::store::Store;
use crate::strategy::{Answering, Controller, How, Strategy, Write};
use crate::tokens::{self, ISSUER, Signer, TokenError};
use crate::user::{User, service_account_groups, service_account_name};

/// Who writes the `default` service accounts.
const MANAGER: &str = "kube-controller-manager";

/// A token's lifetime when the request names none (v1 defaulting), and the bounds
/// `ValidateTokenRequest` puts on it.
const DEFAULT_EXPIRATION: i64 = 3600;
const MIN_EXPIRATION: i64 = 600;
const MAX_EXPIRATION: i64 = 1 << 32;

/// The extra keys of a service account's user (`k8s.io/apiserver/pkg/authentication/serviceaccount`).
const POD_NAME: &str = "authentication.kubernetes.io/pod-name";
const POD_UID: &str = "authentication.kubernetes.io/pod-uid";
const NODE_NAME: &str = "authentication.kubernetes.io/node-name";
const NODE_UID: &str = "authentication.kubernetes.io/node-uid";
const CREDENTIAL_ID: &str = "authentication.kubernetes.io/credential-id";

fn core(plural: &str) -> GroupResource {
    (String::new(), plural.to_string())
}

pub(crate) struct ServiceAccounts;

impl Strategy for ServiceAccounts {
    fn returns_deleted(&self) -> bool {
        true
    }

    fn columns(&self) -> Columns {
        Columns::one(column("Secrets", "string", &doc("io.k8s.api.core.v1.ServiceAccount", "secrets"), 0), |o| {
            json!(o.get("secrets").and_then(Value::as_array).map_or(0, Vec::len))
        })
    }

    /// `serviceaccounts/token`, which answers a `TokenRequest`, storing nothing.
    fn subresources(&self) -> &'static [&'static str] {
        &["token"]
    }

    fn answer_subresource(
        &self,
        name: &str,
        account: &Value,
        request: &Value,
        context: &Answering<'_>,
    ) -> Option<Result<Value, ApiError>> {
        (name == "token").then(|| request_token(context.store, context.signer, account, request))
    }
}

/// A `TokenRequest` for `account`, answered with a signed token.
fn request_token(store: &Store, signer: &Signer, account: &Value, request: &Value) -> Result<Value, ApiError> {
    let (namespace, name, uid) = (object::namespace(account), object::name(account), object::uid(account));
    let invalid = |object_name: &str, cause: Cause| {
        ApiError::invalid_kind("authentication.k8s.io", "TokenRequest", object_name, &[cause])
    };
    for (field, expected, what) in [("name", name, "name"), ("namespace", namespace, "namespace")] {
        let given = object::meta_str(request, field);
        if !given.is_empty() && given != expected {
            return Err(invalid(
                name,
                Cause::new(
                    "FieldValueInvalid",
                    format!("metadata.{field}"),
                    format!("Invalid value: {}: must match the service account {what} if specified", go_quote(given)),
                ),
            ));
        }
    }
    let spec = request.get("spec").cloned().unwrap_or_else(|| json!({}));
    let expiration = spec.get("expirationSeconds").and_then(Value::as_i64).unwrap_or(DEFAULT_EXPIRATION);
    let too = if expiration < MIN_EXPIRATION {
        Some("may not specify a duration less than 10 minutes")
    } else if expiration > MAX_EXPIRATION {
        Some("may not specify a duration larger than 2^32 seconds")
    } else {
        None
    };
    if let Some(why) = too {
        return Err(invalid(
            "",
            Cause::new("FieldValueInvalid", "spec.expirationSeconds", format!("Invalid value: {expiration}: {why}")),
        ));
    }
    let audiences: Vec<String> = match tokens::audience_list(&json!({ "aud": spec.get("audiences") })) {
        given if given.is_empty() => vec![ISSUER.to_string()],
        given => given,
    };
    let bound = spec.get("boundObjectRef").filter(|b| !b.is_null()).cloned();
    let mut private = json!({ "namespace": namespace, "serviceaccount": { "name": name, "uid": uid } });
    if let Some(bound) = &bound {
        bind(store, account, bound, &mut private)?;
    }
    let now = jiff::Timestamp::now().as_second();
    let claims = json!({
        "aud": audiences,
        "exp": now + expiration,
        "iat": now,
        "iss": ISSUER,
        "jti": uuid::Uuid::new_v4().to_string(),
        "kubernetes.io": private,
        "nbf": now,
        "sub": service_account_name(namespace, name),
    });
    let token = signer.sign(&claims).map_err(ApiError::internal)?;
    let expires = jiff::Timestamp::from_second(now + expiration)
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_default();
    let mut spec = spec;
    spec["audiences"] = json!(audiences);
    spec["expirationSeconds"] = json!(expiration);
    if bound.is_none() {
        spec["boundObjectRef"] = Value::Null;
    }
    Ok(json!({
        "kind": "TokenRequest",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": { "name": name, "namespace": namespace, "uid": uid, "creationTimestamp": object::now() },
        "spec": spec,
        "status": { "token": token, "expirationTimestamp": expires },
    }))
}

/// Checks the object a token is to be bound to and adds it to the token's private claims.
fn bind(store: &Store, account: &Value, bound: &Value, private: &mut Value) -> Result<(), ApiError> {
    let text = |field: &str| bound.get(field).and_then(Value::as_str).unwrap_or_default();
    let (kind, name, uid) = (text("kind"), text("name"), text("uid"));
    let namespace = object::namespace(account);
    let api_version = match text("apiVersion") {
        "" => "v1",
        given => given,
    };
    let (plural, scoped) = match (kind, api_version) {
        ("Pod", "v1") => ("pods", namespace),
        ("Secret", "v1") => ("secrets", namespace),
        ("Node", "v1") => ("nodes", ""),
        _ => {
            let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
            let gvk = if group.is_empty() {
                format!("/{version}, Kind={kind}")
            } else {
                format!("{group}/{version}, Kind={kind}")
            };
            return Err(ApiError::bad_request(format!("cannot bind token to object of type {gvk}")));
        }
    };
    let found = store.get(&core(plural), scoped, name).ok_or_else(|| ApiError::not_found("", plural, name))?;
    if !uid.is_empty() && uid != object::uid(&found) {
        return Err(ApiError::conflict(
            "",
            kind,
            name,
            &format!(
                "the UID in the bound object reference ({uid}) does not match the UID in record. The object might have been deleted and then recreated"
            ),
        ));
    }
    let reference = json!({ "name": name, "uid": object::uid(&found) });
    match kind {
        "Pod" => {
            let runs_as = found.pointer("/spec/serviceAccountName").and_then(Value::as_str).unwrap_or("default");
            if runs_as != object::name(account) {
                return Err(ApiError::bad_request(format!(
                    "cannot bind token for serviceaccount {} to pod running with different serviceaccount name.",
                    go_quote(object::name(account))
                )));
            }
            private["pod"] = reference;
            if let Some(node) = found.pointer("/spec/nodeName").and_then(Value::as_str).filter(|n| !n.is_empty()) {
                let mut node_ref = json!({ "name": node });
                if let Some(known) = store.get(&core("nodes"), "", node) {
                    node_ref["uid"] = json!(object::uid(&known));
                }
                private["node"] = node_ref;
            }
        }
        "Secret" => private["secret"] = reference,
        _ => private["node"] = reference,
    }
    Ok(())
}

/// The user a bearer token names, and its audiences, if it is a service-account token of this
/// server whose account and bound object still exist (`serviceaccount.validator`).
pub(crate) fn authenticate(
    store: &Store,
    signer: &Signer,
    token: &str,
    audiences: &[String],
) -> Result<(User, Vec<String>), TokenError> {
    let claims = signer.verify(token, audiences, jiff::Timestamp::now().as_second())?;
    let private = claims.get("kubernetes.io").cloned().unwrap_or_else(|| json!({}));
    let text = |pointer: &str| private.pointer(pointer).and_then(Value::as_str).unwrap_or_default().to_string();
    let namespace = text("/namespace");
    let (name, uid) = (text("/serviceaccount/name"), text("/serviceaccount/uid"));
    let Some(account) = store.get(&core("serviceaccounts"), &namespace, &name) else {
        return Err(TokenError::Invalidated(format!("serviceaccounts {} not found", go_quote(&name))));
    };
    if object::is_deleting(&account) {
        return Err(TokenError::Invalidated(format!("service account {namespace}/{name} has been deleted")));
    }
    if object::uid(&account) != uid {
        return Err(TokenError::Invalidated(format!(
            "service account UID ({}) does not match claim ({uid})",
            object::uid(&account)
        )));
    }
    let mut user = User { name: service_account_name(&namespace, &name), uid, ..User::default() };
    user.groups = service_account_groups(&namespace);
    for (claim, plural, scoped, what) in [
        ("secret", "secrets", namespace.as_str(), "secret"),
        ("pod", "pods", namespace.as_str(), "pod"),
        ("node", "nodes", "", "node"),
    ] {
        let Some(reference) = private.get(claim) else {
            continue;
        };
        let reference_name = reference.get("name").and_then(Value::as_str).unwrap_or_default();
        let reference_uid = reference.get("uid").and_then(Value::as_str).unwrap_or_default();
        let Some(found) = store.get(&core(plural), scoped, reference_name).filter(|o| !object::is_deleting(o)) else {
            if claim == "node" {
                // A pod-bound token names the pod's node for information; it need not exist.
                user.extra.insert(NODE_NAME.into(), vec![reference_name.to_string()]);
                continue;
            }
            return Err(TokenError::Invalidated("service account token has been invalidated".into()));
        };
        if !reference_uid.is_empty() && object::uid(&found) != reference_uid {
            return Err(TokenError::Invalidated(format!(
                "{what} UID ({}) does not match service account {what} ref claim ({reference_uid})",
                object::uid(&found)
            )));
        }
        match claim {
            "pod" => {
                user.extra.insert(POD_NAME.into(), vec![reference_name.to_string()]);
                user.extra.insert(POD_UID.into(), vec![reference_uid.to_string()]);
            }
            "node" => {
                user.extra.insert(NODE_NAME.into(), vec![reference_name.to_string()]);
                if !reference_uid.is_empty() {
                    user.extra.insert(NODE_UID.into(), vec![reference_uid.to_string()]);
                }
            }
            _ => {}
        }
    }
    if let Some(jti) = claims.get("jti").and_then(Value::as_str) {
        user.extra.insert(CREDENTIAL_ID.into(), vec![format!("JTI={jti}")]);
    }
    Ok((user, tokens::audience_list(&claims)))
}

/// Every active namespace has a `default` service account: created when the namespace is, and
/// again when it is deleted.
pub(in crate::kinds) struct DefaultServiceAccounts;

impl Controller for DefaultServiceAccounts {
    fn watches(&self) -> Vec<GroupResource> {
        vec![core("namespaces"), core("serviceaccounts")]
    }

    fn reconcile(&self, store: &Store) -> Vec<Write> {
        active_namespaces(store)
            .into_iter()
            .filter(|ns| store.get(&core("serviceaccounts"), ns, "default").is_none())
            .map(|namespace| Write {
                resource: core("serviceaccounts"),
                name: "default".into(),
                manager: MANAGER,
                how: How::Create(json!({
                    "apiVersion": "v1",
                    "kind": "ServiceAccount",
                    "metadata": { "name": "default", "namespace": namespace },
                })),
                namespace,
            })
            .collect()
    }
}
