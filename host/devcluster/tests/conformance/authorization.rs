//! Authentication and authorization as a real server's: users from client certificates,
//! anonymous requests as `system:anonymous`, RBAC over roles and bindings, impersonation with
//! its checks, the access reviews and `kubectl auth can-i`, and 401/403 bodies worded as
//! kube-apiserver words them.

use k8s_openapi::api::authorization::v1::{SelfSubjectAccessReview, SubjectAccessReview};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::api::rbac::v1::RoleBinding;
use kube::api::{Api, ListParams, PostParams};
use kubewasm_devcluster::DevCluster;
use serde_json::{Value, json};

use super::https::whoami;
use super::kubectl::{kubectl, kubectl_with, ok, stderr};
use super::{api_error, raw, start};

/// A client of the server without credentials.
fn anonymous(dc: &DevCluster) -> kube::Client {
    let mut config = dc.config();
    config.auth_info = kube::config::AuthInfo::default();
    kube::Client::try_from(config).unwrap()
}

/// Binds `role` (a cluster role) to the user `user` in `namespace`, as `r`.
async fn bind(dc: &DevCluster, namespace: &str, name: &str, role: &str, user: &str) {
    let bindings: Api<RoleBinding> = Api::namespaced(dc.client(), namespace);
    let binding: RoleBinding = serde_json::from_value(json!({
        "metadata": { "name": name },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role },
        "subjects": [{ "apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user }],
    }))
    .unwrap();
    bindings.create(&PostParams::default(), &binding).await.unwrap();
}

#[tokio::test]
async fn a_request_without_credentials_is_system_anonymous_and_forbidden_as_upstream_words_it() {
    let dc = start().await;
    let pods: Api<Pod> = Api::all(anonymous(&dc));
    let status = api_error(pods.list(&ListParams::default()).await.unwrap_err());
    assert_eq!((status.code, status.reason.as_str()), (403, "Forbidden"));
    assert_eq!(
        status.message,
        r#"pods is forbidden: User "system:anonymous" cannot list resource "pods" in API group "" at the cluster scope"#
    );
    let details = status.details.unwrap();
    assert_eq!((details.kind.as_str(), details.name.as_str(), details.group.as_str()), ("pods", "", ""));

    // Forbidden before anything is looked up: a missing object is 403, not 404.
    let configmaps: Api<ConfigMap> = Api::namespaced(anonymous(&dc), "default");
    let status = api_error(configmaps.get("missing").await.unwrap_err());
    assert_eq!(
        status.message,
        r#"configmaps "missing" is forbidden: User "system:anonymous" cannot get resource "configmaps" in API group "" in the namespace "default""#
    );
    assert_eq!(status.details.unwrap().name, "missing");

    // What `system:public-info-viewer` grants everyone, and a path it does not.
    let client = anonymous(&dc);
    let version = client.apiserver_version().await.unwrap();
    assert_eq!(version.major, "1");
    let health = client
        .send(http::Request::get("/healthz").body(Vec::new()).unwrap().map(kube::client::Body::from))
        .await
        .unwrap();
    assert_eq!(health.status().as_u16(), 200);
    let openapi = client
        .send(http::Request::get("/openapi/v2").body(Vec::new()).unwrap().map(kube::client::Body::from))
        .await
        .unwrap();
    assert_eq!(openapi.status().as_u16(), 403);
    assert_eq!(openapi.headers()["x-content-type-options"], "nosniff");
    let body: Value =
        serde_json::from_slice(&http_body_util::BodyExt::collect(openapi.into_body()).await.unwrap().to_bytes())
            .unwrap();
    assert_eq!(body["message"], r#"forbidden: User "system:anonymous" cannot get path "/openapi/v2""#);
    assert_eq!(body["details"], json!({}));

    // Without credentials kubectl would prompt for a user name; basic credentials, which no
    // authenticator of a 1.33 server takes, leave the request anonymous.
    let text = dc.kubeconfig_for_token("none").replace("token: none", "username: nobody\n    password: none");
    let out = kubectl_with(&dc, &text, &["get", "--raw", "/api/v1/namespaces"]).await;
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains(r#"Error from server (Forbidden): namespaces is forbidden: User "system:anonymous" cannot list resource "namespaces" in API group "" at the cluster scope"#),
        "{}",
        stderr(&out)
    );
    dc.shutdown().await;
}

#[tokio::test]
async fn a_token_the_server_did_not_sign_is_unauthorized() {
    let dc = start().await;
    let client = DevCluster::client_from(&dc.kubeconfig_for_token("bogus")).await.unwrap();
    let status = api_error(Api::<Pod>::all(client).list(&ListParams::default()).await.unwrap_err());
    assert_eq!((status.code, status.reason.as_str(), status.message.as_str()), (401, "Unauthorized", "Unauthorized"));
    assert!(status.details.is_none());
    let out = kubectl_with(&dc, &dc.kubeconfig_for_token("bogus"), &["get", "--raw", "/api/v1/pods"]).await;
    assert!(!out.status.success());
    assert!(stderr(&out).contains("error: You must be logged in to the server (Unauthorized)"), "{}", stderr(&out));
    dc.shutdown().await;
}

#[tokio::test]
async fn a_certificate_user_holds_what_rbac_binds_to_it_and_nothing_more() {
    let dc = start().await;
    let alice_config = dc.kubeconfig_for_user("alice", Some("dev")).unwrap();
    let alice = DevCluster::client_from(&alice_config).await.unwrap();
    assert_eq!(
        whoami(alice.clone()).await,
        ("alice".to_string(), vec!["dev".to_string(), "system:authenticated".to_string()])
    );
    let out = ok(&kubectl_with(&dc, &alice_config, &["auth", "whoami", "-o", "json"]).await);
    let review: Value = serde_json::from_str(&out).unwrap();
    let credential =
        review["status"]["userInfo"]["extra"]["authentication.kubernetes.io/credential-id"][0].as_str().unwrap();
    assert!(credential.starts_with("X509SHA256=") && credential.len() == "X509SHA256=".len() + 64, "{credential}");

    let pods: Api<Pod> = Api::namespaced(alice.clone(), "default");
    let status = api_error(pods.list(&ListParams::default()).await.unwrap_err());
    assert_eq!(
        status.message,
        r#"pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default""#
    );
    bind(&dc, "default", "alice-view", "view", "alice").await;
    assert!(pods.list(&ListParams::default()).await.unwrap().items.is_empty(), "view lets alice list pods in default");
    let elsewhere: Api<Pod> = Api::namespaced(alice.clone(), "kube-system");
    assert_eq!(api_error(elsewhere.list(&ListParams::default()).await.unwrap_err()).code, 403, "only in default");
    let configmaps: Api<ConfigMap> = Api::namespaced(alice.clone(), "default");
    let refused = api_error(
        configmaps
            .create(&PostParams::default(), &serde_json::from_value(json!({ "metadata": { "name": "x" } })).unwrap())
            .await
            .unwrap_err(),
    );
    assert_eq!(
        refused.message,
        r#"configmaps is forbidden: User "alice" cannot create resource "configmaps" in API group "" in the namespace "default""#
    );
    // A subresource is its own resource to RBAC: view grants pods/log, not pods/exec.
    for (verb, subresource, allowed) in [("get", "log", true), ("create", "exec", false), ("get", "status", true)] {
        let review: SelfSubjectAccessReview = serde_json::from_value(json!({
            "spec": { "resourceAttributes": { "namespace": "default", "verb": verb, "resource": "pods", "subresource": subresource } }
        }))
        .unwrap();
        let answer =
            Api::<SelfSubjectAccessReview>::all(alice.clone()).create(&PostParams::default(), &review).await.unwrap();
        assert_eq!(answer.status.unwrap().allowed, allowed, "{verb} pods/{subresource}");
    }

    let out = kubectl_with(&dc, &alice_config, &["get", "pods", "-n", "kube-system"]).await;
    assert!(
        stderr(&out).contains(r#"Error from server (Forbidden): pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "kube-system""#),
        "{}",
        stderr(&out)
    );
    let out = ok(&kubectl_with(&dc, &alice_config, &["auth", "can-i", "--list", "-n", "default"]).await);
    assert!(out.contains("Resources") && out.contains("Non-Resource URLs") && out.contains("pods/log"), "{out}");
    dc.shutdown().await;
}

#[tokio::test]
async fn kubectl_auth_can_i_answers_from_rbac_for_impersonated_users() {
    let dc = start().await;
    let out = kubectl(&dc, &["auth", "can-i", "list", "pods", "--as=alice", "-n", "default"]).await;
    assert_eq!((String::from_utf8_lossy(&out.stdout).trim(), out.status.code()), ("no", Some(1)));
    bind(&dc, "default", "r", "view", "alice").await;
    let out = kubectl(&dc, &["auth", "can-i", "list", "pods", "--as=alice", "-n", "default"]).await;
    assert_eq!((String::from_utf8_lossy(&out.stdout).trim(), out.status.code()), ("yes", Some(0)));
    let out = kubectl(&dc, &["auth", "can-i", "delete", "pods", "--as=alice", "-n", "default"]).await;
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "no");
    let out = ok(&kubectl(&dc, &["auth", "can-i", "create", "deployments"]).await);
    assert_eq!(out.trim(), "yes", "the administrator may do anything");

    // The impersonated user is who the request acts as.
    let out = kubectl(&dc, &["get", "pods", "-n", "kube-system", "--as=alice", "--as-group=dev"]).await;
    assert!(
        stderr(&out).contains(r#"pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "kube-system""#),
        "{}",
        stderr(&out)
    );
    let out = ok(&kubectl(&dc, &["auth", "whoami", "--as=system:serviceaccount:default:default"]).await);
    assert!(
        out.contains("system:serviceaccount:default:default") && out.contains("system:serviceaccounts:default"),
        "{out}"
    );

    // kube-rs impersonating through its configuration.
    let mut config = dc.config();
    config.auth_info.impersonate = Some("alice".into());
    config.auth_info.impersonate_groups = Some(vec!["dev".into()]);
    let (user, groups) = whoami(kube::Client::try_from(config).unwrap()).await;
    assert_eq!((user.as_str(), groups), ("alice", vec!["dev".to_string(), "system:authenticated".to_string()]));
    dc.shutdown().await;
}

#[tokio::test]
async fn impersonation_needs_the_impersonate_verb_on_each_part() {
    let dc = start().await;
    let alice = DevCluster::client_from(&dc.kubeconfig_for_user("alice", None).unwrap()).await.unwrap();
    let as_bob = |client: &kube::Client, headers: &[(&str, &str)]| {
        let mut req = http::Request::get("/api/v1/namespaces/default/configmaps");
        for (name, value) in headers {
            req = req.header(*name, *value);
        }
        let client = client.clone();
        let req = req.body(Vec::new()).unwrap().map(kube::client::Body::from);
        async move {
            let resp = client.send(req).await.unwrap();
            let code = resp.status().as_u16();
            let bytes = http_body_util::BodyExt::collect(resp.into_body()).await.unwrap().to_bytes();
            (code, String::from_utf8_lossy(&bytes).into_owned())
        }
    };
    let (code, body) = as_bob(&alice, &[("Impersonate-User", "bob")]).await;
    assert_eq!(code, 403);
    let status: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        status["message"],
        r#"users "bob" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope"#
    );
    let (code, body) = as_bob(&alice, &[("Impersonate-User", "system:serviceaccount:ns:robot")]).await;
    assert_eq!(code, 403);
    let status: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        status["message"],
        r#"serviceaccounts "robot" is forbidden: User "alice" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "ns""#
    );
    let (code, body) = as_bob(&dc.client(), &[("Impersonate-Group", "dev")]).await;
    assert_eq!(code, 500);
    assert!(body.trim_end().ends_with("without impersonating a user"), "{body}");

    // Granted the verb on one user, alice may act as that user, and only as that user.
    let roles = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": { "name": "impersonate-bob" },
        "rules": [{ "apiGroups": [""], "resources": ["users"], "verbs": ["impersonate"], "resourceNames": ["bob"] }],
    });
    let (code, _) =
        raw(&dc, "POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", "application/json", &roles.to_string())
            .await;
    assert_eq!(code, 201);
    let binding = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": { "name": "alice-impersonates-bob" },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "impersonate-bob" },
        "subjects": [{ "apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice" }],
    });
    let (code, _) = raw(
        &dc,
        "POST",
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
        "application/json",
        &binding.to_string(),
    )
    .await;
    assert_eq!(code, 201);
    let (code, body) = as_bob(&alice, &[("Impersonate-User", "bob")]).await;
    assert_eq!(code, 403);
    assert!(body.contains(r#"User \"bob\" cannot list resource \"configmaps\""#), "now bob is refused: {body}");
    let (code, body) = as_bob(&alice, &[("Impersonate-User", "carol")]).await;
    assert!(
        code == 403 && body.contains(r#"users \"carol\" is forbidden: User \"alice\" cannot impersonate"#),
        "{body}"
    );
    dc.shutdown().await;
}

#[tokio::test]
async fn access_reviews_answer_as_the_authorizer_decides() {
    let dc = start().await;
    let reviews: Api<SubjectAccessReview> = Api::all(dc.client());
    let review: SubjectAccessReview = serde_json::from_value(json!({
        "spec": { "user": "alice", "resourceAttributes": { "namespace": "default", "verb": "list", "resource": "pods" } }
    }))
    .unwrap();
    let answer = reviews.create(&PostParams::default(), &review).await.unwrap().status.unwrap();
    assert!(!answer.allowed);
    bind(&dc, "default", "r", "view", "alice").await;
    let answer = reviews.create(&PostParams::default(), &review).await.unwrap().status.unwrap();
    assert!(answer.allowed);
    assert_eq!(
        answer.reason.as_deref(),
        Some(r#"RBAC: allowed by RoleBinding "r/default" of ClusterRole "view" to User "alice""#)
    );

    // A binding to a role that does not exist says so.
    let (code, _) = raw(
        &dc,
        "POST",
        "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
        "application/json",
        &json!({
            "metadata": { "name": "dangling" },
            "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "missing" },
            "subjects": [{ "apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "bob" }],
        })
        .to_string(),
    )
    .await;
    assert_eq!(code, 201);
    let bob: SubjectAccessReview = serde_json::from_value(json!({
        "spec": { "user": "bob", "resourceAttributes": { "namespace": "default", "verb": "get", "resource": "pods" } }
    }))
    .unwrap();
    let answer = reviews.create(&PostParams::default(), &bob).await.unwrap().status.unwrap();
    assert!(!answer.allowed);
    assert_eq!(answer.reason.as_deref(), Some(r#"RBAC: role.rbac.authorization.k8s.io "missing" not found"#));

    let nobody: SubjectAccessReview =
        serde_json::from_value(json!({ "spec": { "resourceAttributes": { "verb": "get", "resource": "pods" } } }))
            .unwrap();
    let status = api_error(reviews.create(&PostParams::default(), &nobody).await.unwrap_err());
    assert_eq!(status.code, 422);
    assert_eq!(
        status.message,
        r#"SubjectAccessReview.authorization.k8s.io "" is invalid: spec.user: Invalid value: "": at least one of user or group must be specified"#
    );
    let selves: Api<SelfSubjectAccessReview> = Api::all(dc.client());
    let neither: SelfSubjectAccessReview = serde_json::from_value(json!({ "spec": {} })).unwrap();
    let status = api_error(selves.create(&PostParams::default(), &neither).await.unwrap_err());
    assert_eq!(
        status.message,
        r#"SelfSubjectAccessReview.authorization.k8s.io "" is invalid: spec.resourceAttributes: Invalid value: "null": exactly one of nonResourceAttributes or resourceAttributes must be specified"#
    );
    let path: SelfSubjectAccessReview =
        serde_json::from_value(json!({ "spec": { "nonResourceAttributes": { "verb": "get", "path": "/healthz" } } }))
            .unwrap();
    assert!(selves.create(&PostParams::default(), &path).await.unwrap().status.unwrap().allowed);
    dc.shutdown().await;
}

#[tokio::test]
async fn rbac_writes_grant_only_what_their_writer_holds() {
    let dc = start().await;
    bind(&dc, "default", "alice-admin", "admin", "alice").await;
    let alice_config = dc.kubeconfig_for_user("alice", None).unwrap();
    let alice = DevCluster::client_from(&alice_config).await.unwrap();
    let post = |path: &str, body: Value| {
        let client = alice.clone();
        let req = http::Request::post(path)
            .header("content-type", "application/json")
            .body(body.to_string().into_bytes())
            .unwrap()
            .map(kube::client::Body::from);
        async move {
            let resp = client.send(req).await.unwrap();
            let code = resp.status().as_u16();
            let bytes = http_body_util::BodyExt::collect(resp.into_body()).await.unwrap().to_bytes();
            (code, serde_json::from_slice::<Value>(&bytes).unwrap())
        }
    };
    let roles = "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles";
    let role = |name: &str, resource: &str| json!({ "metadata": { "name": name }, "rules": [{ "apiGroups": [""], "resources": [resource], "verbs": ["get"] }] });
    assert_eq!(post(roles, role("pod-reader", "pods")).await.0, 201, "alice holds get pods");
    let (code, status) = post(roles, role("node-reader", "nodes")).await;
    assert_eq!(code, 403);
    assert_eq!(
        status["message"],
        "roles.rbac.authorization.k8s.io \"node-reader\" is forbidden: user \"alice\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"nodes\"], Verbs:[\"get\"]}"
    );

    let bindings = "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings";
    let binding = |name: &str, role: &str| {
        json!({
            "metadata": { "name": name },
            "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role },
            "subjects": [{ "apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "bob" }],
        })
    };
    assert_eq!(post(bindings, binding("bob-view", "view")).await.0, 201, "alice holds all of view");
    let (code, status) = post(bindings, binding("bob-admin", "cluster-admin")).await;
    assert_eq!(code, 403);
    let message = status["message"].as_str().unwrap();
    assert!(
        message.starts_with("rolebindings.rbac.authorization.k8s.io \"bob-admin\" is forbidden: user \"alice\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n"),
        "{message}"
    );

    let out =
        kubectl_with(&dc, &alice_config, &["create", "role", "node-lister", "--verb=list", "--resource=nodes"]).await;
    assert!(
        stderr(&out).contains(r#"roles.rbac.authorization.k8s.io "node-lister" is forbidden: user "alice" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held"#),
        "{}",
        stderr(&out)
    );

    // The escalate verb lets a user grant what they do not hold; bind, to bind a role.
    let (code, _) = raw(
        &dc,
        "POST",
        "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        "application/json",
        &json!({
            "metadata": { "name": "escalate-and-bind" },
            "rules": [{ "apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles", "clusterroles"], "verbs": ["escalate", "bind"] }],
        })
        .to_string(),
    )
    .await;
    assert_eq!(code, 201);
    bind(&dc, "default", "alice-escalates", "escalate-and-bind", "alice").await;
    assert_eq!(post(roles, role("node-reader", "nodes")).await.0, 201);
    assert_eq!(post(bindings, binding("bob-admin", "cluster-admin")).await.0, 201);

    dc.shutdown().await;
}
