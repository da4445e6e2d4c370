//! Service-account tokens: `serviceaccounts/token` (`kubectl create token`) signs a JWT with
//! upstream's claims, which the server's own authentication and `TokenReview` accept while the
//! account (and the object the token is bound to) still exists.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenReview};
use k8s_openapi::api::core::v1::{Pod, ServiceAccount};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kubewasm_devcluster::DevCluster;
use serde_json::{Value, json};

use super::https::whoami;
use super::kubectl::{kubectl, ok, stderr};
use super::{api_error, eventually, raw, start};

const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

/// The claims of a JWT.
fn claims(token: &str) -> Value {
    let parts: Vec<&str> = token.split('.').collect();
    assert_eq!(parts.len(), 3, "a signed JWT: {token}");
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap()
}

async fn token_for(dc: &DevCluster, namespace: &str, account: &str, request: Value) -> String {
    let accounts: Api<ServiceAccount> = Api::namespaced(dc.client(), namespace);
    let request: TokenRequest = serde_json::from_value(request).unwrap();
    accounts.create_token_request(account, &PostParams::default(), &request).await.unwrap().status.unwrap().token
}

async fn review(dc: &DevCluster, token: &str) -> Value {
    let reviews: Api<TokenReview> = Api::all(dc.client());
    let review: TokenReview = serde_json::from_value(json!({ "spec": { "token": token } })).unwrap();
    serde_json::to_value(reviews.create(&PostParams::default(), &review).await.unwrap().status.unwrap()).unwrap()
}

#[tokio::test]
async fn kubectl_create_token_signs_a_token_with_upstream_claims() {
    let dc = start().await;
    let token = ok(&kubectl(&dc, &["create", "token", "default"]).await).trim().to_string();
    let claims = claims(&token);
    let uid =
        Api::<ServiceAccount>::namespaced(dc.client(), "default").get("default").await.unwrap().metadata.uid.unwrap();
    assert_eq!(claims["sub"], "system:serviceaccount:default:default");
    assert_eq!(claims["iss"], ISSUER);
    assert_eq!(claims["aud"], json!([ISSUER]));
    assert_eq!(claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap(), 3600);
    assert_eq!(claims["nbf"], claims["iat"]);
    assert_eq!(
        claims["kubernetes.io"],
        json!({ "namespace": "default", "serviceaccount": { "name": "default", "uid": uid } })
    );
    assert!(!claims["jti"].as_str().unwrap().is_empty());

    let out = kubectl(&dc, &["create", "token", "default", "--duration=1m"]).await;
    assert!(!out.status.success());
    assert!(
        stderr(&out)
            .contains("spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes"),
        "{}",
        stderr(&out)
    );
    let out = kubectl(&dc, &["create", "token", "nobody"]).await;
    assert!(stderr(&out).contains(r#"serviceaccounts "nobody" not found"#), "{}", stderr(&out));

    // The key the token names is the one the server publishes.
    let (code, jwks) = raw(&dc, "GET", "/openid/v1/jwks", "", "").await;
    assert_eq!(code, 200);
    let header: Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(token.split('.').next().unwrap()).unwrap()).unwrap();
    assert_eq!(header["kid"], jwks["keys"][0]["kid"]);
    assert_eq!((header["alg"].as_str(), jwks["keys"][0]["alg"].as_str()), (Some("ES256"), Some("ES256")));
    let (_, discovery) = raw(&dc, "GET", "/.well-known/openid-configuration", "", "").await;
    assert_eq!(discovery["issuer"], ISSUER);
    dc.shutdown().await;
}

#[tokio::test]
async fn a_token_authenticates_its_service_account_until_the_account_is_gone() {
    let dc = start().await;
    let accounts: Api<ServiceAccount> = Api::namespaced(dc.client(), "default");
    accounts
        .create(&PostParams::default(), &serde_json::from_value(json!({ "metadata": { "name": "robot" } })).unwrap())
        .await
        .unwrap();
    let token = token_for(&dc, "default", "robot", json!({ "spec": {} })).await;
    let robot = DevCluster::client_from(&dc.kubeconfig_for_token(&token)).await.unwrap();
    let (user, groups) = whoami(robot.clone()).await;
    assert_eq!(user, "system:serviceaccount:default:robot");
    assert_eq!(groups, ["system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"]);
    let status =
        api_error(Api::<Pod>::namespaced(robot.clone(), "default").list(&ListParams::default()).await.unwrap_err());
    assert_eq!(
        status.message,
        r#"pods is forbidden: User "system:serviceaccount:default:robot" cannot list resource "pods" in API group "" in the namespace "default""#
    );
    // Service accounts may read the issuer's keys (`system:service-account-issuer-discovery`).
    let jwks = robot
        .send(http::Request::get("/openid/v1/jwks").body(Vec::new()).unwrap().map(kube::client::Body::from))
        .await
        .unwrap();
    assert_eq!(jwks.status().as_u16(), 200);

    let reviewed = review(&dc, &token).await;
    assert_eq!(reviewed["authenticated"], true);
    assert_eq!(reviewed["user"]["username"], "system:serviceaccount:default:robot");
    assert_eq!(reviewed["audiences"], json!([ISSUER]));
    let jti = claims(&token)["jti"].as_str().unwrap().to_string();
    assert_eq!(reviewed["user"]["extra"]["authentication.kubernetes.io/credential-id"], json!([format!("JTI={jti}")]));
    let other = review(&dc, "not.a.token").await;
    assert_eq!(other, json!({ "user": {}, "error": "invalid bearer token" }));

    accounts.delete("robot", &DeleteParams::default()).await.unwrap();
    let status = api_error(Api::<Pod>::namespaced(robot, "default").list(&ListParams::default()).await.unwrap_err());
    assert_eq!((status.code, status.message.as_str()), (401, "Unauthorized"));
    let reviewed = review(&dc, &token).await;
    assert_eq!(reviewed["error"], r#"[invalid bearer token, serviceaccounts "robot" not found]"#);
    assert!(reviewed.get("authenticated").is_none_or(|a| a == false));
    dc.shutdown().await;
}

#[tokio::test]
async fn a_token_of_a_recreated_account_or_a_deleted_pod_no_longer_authenticates() {
    let dc = start().await;
    let accounts: Api<ServiceAccount> = Api::namespaced(dc.client(), "default");
    let token = token_for(&dc, "default", "default", json!({ "spec": {} })).await;
    let old_uid = accounts.get("default").await.unwrap().metadata.uid.unwrap();
    accounts.delete("default", &DeleteParams::default()).await.unwrap();
    let recreated = eventually(|| async {
        accounts.get_opt("default").await.unwrap().is_some_and(|a| a.metadata.uid.as_deref() != Some(old_uid.as_str()))
    })
    .await;
    assert!(recreated);
    let reviewed = review(&dc, &token).await;
    let error = reviewed["error"].as_str().unwrap();
    assert!(error.contains(&format!("does not match claim ({old_uid})")), "{error}");

    let pods: Api<Pod> = Api::namespaced(dc.client(), "default");
    let pod: Pod = serde_json::from_value(json!({
        "metadata": { "name": "p" },
        "spec": { "containers": [{ "name": "c", "image": "busybox" }] },
    }))
    .unwrap();
    let pod_uid = pods.create(&PostParams::default(), &pod).await.unwrap().metadata.uid.unwrap();
    let bound = token_for(
        &dc,
        "default",
        "default",
        json!({ "spec": { "boundObjectRef": { "kind": "Pod", "apiVersion": "v1", "name": "p", "uid": pod_uid } } }),
    )
    .await;
    assert_eq!(claims(&bound)["kubernetes.io"]["pod"], json!({ "name": "p", "uid": pod_uid }));
    let reviewed = review(&dc, &bound).await;
    assert_eq!(reviewed["user"]["extra"]["authentication.kubernetes.io/pod-name"], json!(["p"]));
    assert_eq!(reviewed["user"]["extra"]["authentication.kubernetes.io/pod-uid"], json!([pod_uid]));
    pods.delete("p", &DeleteParams { grace_period_seconds: Some(0), ..DeleteParams::default() }).await.unwrap();
    assert!(eventually(|| async { pods.get_opt("p").await.unwrap().is_none() }).await);
    assert_eq!(
        review(&dc, &bound).await["error"],
        "[invalid bearer token, service account token has been invalidated]"
    );

    // Bound to a pod of another account, or to a kind tokens cannot be bound to: refused.
    pods.create(
        &PostParams::default(),
        &serde_json::from_value(json!({
            "metadata": { "name": "q" },
            "spec": { "serviceAccountName": "robot", "containers": [{ "name": "c", "image": "busybox" }] },
        }))
        .unwrap(),
    )
    .await
    .unwrap();
    let request: TokenRequest = serde_json::from_value(
        json!({ "spec": { "boundObjectRef": { "kind": "Pod", "apiVersion": "v1", "name": "q" } } }),
    )
    .unwrap();
    let status =
        api_error(accounts.create_token_request("default", &PostParams::default(), &request).await.unwrap_err());
    assert_eq!(
        (status.code, status.message.as_str()),
        (400, r#"cannot bind token for serviceaccount "default" to pod running with different serviceaccount name."#)
    );
    let request: TokenRequest = serde_json::from_value(
        json!({ "spec": { "boundObjectRef": { "kind": "Deployment", "apiVersion": "apps/v1", "name": "d" } } }),
    )
    .unwrap();
    let status =
        api_error(accounts.create_token_request("default", &PostParams::default(), &request).await.unwrap_err());
    assert_eq!(
        (status.code, status.message.as_str()),
        (400, "cannot bind token to object of type apps/v1, Kind=Deployment")
    );
    dc.shutdown().await;
}

#[tokio::test]
async fn a_controller_applied_with_its_rbac_acts_as_its_service_account_with_exactly_that_rbac() {
    let dc = start().await;
    dc.apply(
        "apiVersion: v1
kind: Namespace
metadata: {name: robots}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: reader, namespace: robots}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: configmap-reader}
rules:
- {apiGroups: [\"\"], resources: [configmaps], verbs: [get, list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: configmap-reader}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: configmap-reader}
subjects:
- {kind: ServiceAccount, name: reader, namespace: robots}
",
    )
    .unwrap();
    let token = dc.service_account_token("robots", "reader").await.unwrap();
    let reader = DevCluster::client_from(&dc.kubeconfig_for_token(&token)).await.unwrap();
    let configmaps: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::namespaced(reader, "default");
    configmaps.list(&ListParams::default()).await.expect("reading is granted");
    let status = api_error(
        configmaps
            .create(&PostParams::default(), &serde_json::from_value(json!({ "metadata": { "name": "x" } })).unwrap())
            .await
            .unwrap_err(),
    );
    assert_eq!(
        status.message,
        r#"configmaps is forbidden: User "system:serviceaccount:robots:reader" cannot create resource "configmaps" in API group "" in the namespace "default""#
    );

    let err = dc.apply("apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n").unwrap_err();
    assert_eq!(err.to_string(), r#"could not apply Widget/w: the server serves no Widget in "example.com/v1""#);
    let err = dc.apply("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: nowhere}\n").unwrap_err();
    assert_eq!(err.to_string(), r#"could not apply ConfigMap/c: namespaces "nowhere" not found"#);
    dc.shutdown().await;
}
