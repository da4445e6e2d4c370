//! The host runs as the service account `kubewasm rbac` makes for its plugins (every test of
//! this suite does, through the harness): that RBAC is enough for what the plugins declare,
//! and no more: a write to a kind no plugin declared is refused by the API server.

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, ListParams, PostParams};
use serde_json::json;

use crate::harness::{Env, deployments};

#[tokio::test]
async fn the_hosts_identity_holds_what_its_plugins_declare_and_nothing_more() {
    let env = Env::start(&["demo-application"]).await;
    // The plugin's children: the host may read and write them.
    let children: Api<kube::api::DynamicObject> =
        Api::namespaced_with(env.host_client.clone(), "default", &deployments());
    children.list(&ListParams::default()).await.expect("the host lists Deployments, a declared child kind");

    let configmaps: Api<ConfigMap> = Api::namespaced(env.host_client.clone(), "default");
    let config_map: ConfigMap = serde_json::from_value(json!({ "metadata": { "name": "undeclared" } })).unwrap();
    let refused = match configmaps.create(&PostParams::default(), &config_map).await {
        Err(kube::Error::Api(status)) => status,
        other => panic!("a ConfigMap, which no plugin declared, is refused: {other:?}"),
    };
    assert_eq!((refused.code, refused.reason.as_str()), (403, "Forbidden"));
    assert_eq!(
        refused.message,
        r#"configmaps is forbidden: User "system:serviceaccount:kubewasm-system:kubewasm" cannot create resource "configmaps" in API group "" in the namespace "default""#
    );
    let secrets: Api<Secret> = Api::all(env.host_client.clone());
    let refused = match secrets.list(&ListParams::default()).await {
        Err(kube::Error::Api(status)) => status,
        other => panic!("Secrets are not readable: {other:?}"),
    };
    assert_eq!(
        refused.message,
        r#"secrets is forbidden: User "system:serviceaccount:kubewasm-system:kubewasm" cannot list resource "secrets" in API group "" at the cluster scope"#
    );
    // The administrator's client is another identity, for the test's own writes.
    Api::<ConfigMap>::namespaced(env.client.clone(), "default")
        .create(&PostParams::default(), &config_map)
        .await
        .expect("the administrator may");
    env.stop().await;
}
