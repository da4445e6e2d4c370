//! An identity per plugin (`kubewasm run --plugin-identities`): each plugin reads and
//! writes as its own service account, `kubewasm-plugin-NAME`, which the host impersonates
//! and `kubewasm rbac --plugin-identities` grants only what the plugin declares. The API
//! server, not only the host's check of declared kinds, then fences each plugin.

use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DynamicObject, ListParams, PostParams};
use kube::core::Status;
use kubewasm::runtime::Identities;
use serde_json::json;

use kubewasm::plugin::KindRef;

use crate::harness::{Env, configmaps, deployments, eventually, resource, services, wait_for};

fn refusal<T: std::fmt::Debug>(result: kube::Result<T>, what: &str) -> Box<Status> {
    match result {
        Err(kube::Error::Api(status)) => status,
        other => panic!("{what} is refused by the API server: {other:?}"),
    }
}

#[tokio::test]
async fn a_plugin_writes_as_its_own_account_and_the_api_server_refuses_it_what_it_did_not_declare() {
    let env = Env::start_with_identities(&["demo-application"]).await;
    let identities = Identities { namespace: kubewasm_tests::HOST_ACCOUNT.0.into() };

    // The host's own account holds none of the plugin's kinds...
    let as_host: Api<DynamicObject> = Api::namespaced_with(env.host_client.clone(), "default", &deployments());
    let refused = refusal(as_host.list(&ListParams::default()).await, "the host listing Deployments");
    assert_eq!(
        refused.message,
        r#"deployments.apps is forbidden: User "system:serviceaccount:kubewasm-system:kubewasm" cannot list resource "deployments" in API group "apps" in the namespace "default""#
    );

    // ...yet the plugin converges as before: its account watched the parent and wrote the
    // children and the status.
    let demo = resource("paas.cmft.com", "v1beta1", "DemoApplication", "demoapplications");
    env.create(
        &demo,
        json!({"apiVersion": "paas.cmft.com/v1beta1", "kind": "DemoApplication",
               "metadata": {"name": "web", "namespace": "default"},
               "spec": {"image": "nginx:1.27", "replica": 1, "ports": [{"port": 80}]}}),
    )
    .await;
    let deployment = wait_for(&env, &deployments(), "web", "the Deployment", |_| true).await;
    assert_eq!(deployment["spec"]["replicas"], 1);
    wait_for(&env, &services(), "web", "the Service", |_| true).await;
    wait_for(&env, &demo, "web", "the status", |d| d["status"]["availableReplicas"].is_number()).await;

    // The API server takes the plugin's client for the plugin's account, with the groups a
    // token of that account would carry.
    let as_plugin = identities.client(&env.host_client, "demo-application").expect("the plugin's client");
    let review: SelfSubjectReview = Api::all(as_plugin.clone())
        .create(&PostParams::default(), &SelfSubjectReview::default())
        .await
        .expect("a SelfSubjectReview");
    let user = review.status.and_then(|s| s.user_info).unwrap_or_default();
    assert_eq!(
        user.username.as_deref(),
        Some("system:serviceaccount:kubewasm-system:kubewasm-plugin-demo-application")
    );
    assert_eq!(
        user.groups.unwrap_or_default(),
        ["system:serviceaccounts", "system:serviceaccounts:kubewasm-system", "system:authenticated"]
    );

    // The plugin's account is refused a kind the plugin did not declare by the API server
    // itself, whatever the host checks before writing.
    let config_map: ConfigMap = serde_json::from_value(json!({ "metadata": { "name": "undeclared" } })).unwrap();
    let refused = refusal(
        Api::<ConfigMap>::namespaced(as_plugin, "default").create(&PostParams::default(), &config_map).await,
        "a ConfigMap written as the plugin",
    );
    assert_eq!((refused.code, refused.reason.as_str()), (403, "Forbidden"));
    assert_eq!(
        refused.message,
        r#"configmaps is forbidden: User "system:serviceaccount:kubewasm-system:kubewasm-plugin-demo-application" cannot create resource "configmaps" in API group "" in the namespace "default""#
    );

    // The host may act as its plugins' accounts only, not as any other.
    let as_other = identities.client(&env.host_client, "other").expect("a client");
    let refused = refusal(
        Api::<DynamicObject>::namespaced_with(as_other, "default", &deployments()).list(&ListParams::default()).await,
        "impersonating an account that is no plugin's",
    );
    assert_eq!(refused.code, 403);
    assert_eq!(
        refused.message,
        r#"serviceaccounts "kubewasm-plugin-other" is forbidden: User "system:serviceaccount:kubewasm-system:kubewasm" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "kubewasm-system""#
    );
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_hosts_check_switched_off_the_api_server_still_refuses_a_kind_the_plugin_did_not_declare() {
    // misbehave declares ConfigMaps as related (read only), not as children; told to, it
    // answers a ConfigMap child. The host is made to take ConfigMaps as declared children,
    // so only the API server stands between the plugin and the write (a server-side apply:
    // a patch).
    let config_maps = KindRef::namespaced("", "v1", "ConfigMap", "configmaps");
    let env =
        Env::start_unchecked_with_identities(vec![("misbehave", json!({"mode": "config-map"}))], &[config_maps]).await;
    env.create(
        &resource("test.kubewasm.io", "v1", "Misbehave", "misbehaves"),
        json!({"apiVersion": "test.kubewasm.io/v1", "kind": "Misbehave", "metadata": {"name": "m", "namespace": "default"}}),
    )
    .await;
    let events = eventually("a WriteFailed warning", || async {
        let events = env.events("m", "WriteFailed").await;
        (!events.is_empty()).then_some(events)
    })
    .await;
    let message = events[0].message.as_deref().unwrap_or_default();
    assert!(
        message.contains(
            r#"configmaps "m" is forbidden: User "system:serviceaccount:kubewasm-system:kubewasm-plugin-misbehave" cannot patch resource "configmaps" in API group "" in the namespace "default""#
        ),
        "the API server refused the plugin's own account: {message}"
    );
    assert!(env.get(&configmaps(), "m").await.is_none(), "no ConfigMap was written");
    env.stop().await;
}
