//! What a new cluster holds before anyone writes, and the controllers that keep it: the
//! default roles and bindings of 1.33 (aggregated `admin`, `edit` and `view` among them), the
//! `kubernetes` Service with its endpoints, and in every namespace a `default` service account
//! and the `kube-root-ca.crt` `ConfigMap`.

use k8s_openapi::api::core::v1::{ConfigMap, Endpoints, Namespace, ServiceAccount};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, Role};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

use super::kubectl::{kubectl, ok};
use super::{eventually, start};

fn rules(role: &ClusterRole) -> Vec<PolicyRule> {
    role.rules.clone().unwrap_or_default()
}

#[tokio::test]
async fn the_default_cluster_roles_and_bindings_are_there_with_their_upstream_rules() {
    let dc = start().await;
    let roles: Api<ClusterRole> = Api::all(dc.client());
    let bootstrapped =
        roles.list(&ListParams::default().labels("kubernetes.io/bootstrapping=rbac-defaults")).await.unwrap();
    let names: Vec<String> = bootstrapped.items.iter().map(|r| r.metadata.name.clone().unwrap()).collect();
    for name in [
        "cluster-admin",
        "admin",
        "edit",
        "view",
        "system:basic-user",
        "system:discovery",
        "system:public-info-viewer",
        "system:controller:namespace-controller",
    ] {
        assert!(names.contains(&name.to_string()), "{name} in {names:?}");
    }
    let admin = roles.get("cluster-admin").await.unwrap();
    assert_eq!(
        serde_json::to_value(rules(&admin)).unwrap(),
        json!([
            { "apiGroups": ["*"], "resources": ["*"], "verbs": ["*"] },
            { "nonResourceURLs": ["*"], "verbs": ["*"] },
        ])
    );
    let annotations = admin.metadata.annotations.unwrap();
    assert_eq!(annotations["rbac.authorization.kubernetes.io/autoupdate"], "true");

    // view flows into edit, edit into admin; admin adds the RBAC roles of a namespace.
    let (view, edit, namespace_admin) =
        (roles.get("view").await.unwrap(), roles.get("edit").await.unwrap(), roles.get("admin").await.unwrap());
    assert!(!rules(&view).is_empty());
    for rule in rules(&view) {
        assert!(rules(&edit).contains(&rule), "edit holds view's {rule:?}");
    }
    for rule in rules(&edit) {
        assert!(rules(&namespace_admin).contains(&rule), "admin holds edit's {rule:?}");
    }
    assert!(
        rules(&namespace_admin)
            .iter()
            .any(|r| r.resources.as_ref().is_some_and(|r| r.contains(&"rolebindings".to_string())))
    );
    assert!(
        !rules(&view).iter().any(|r| r.resources.as_ref().is_some_and(|r| r.contains(&"secrets".to_string()))),
        "view reads no secrets"
    );

    let bindings: Api<ClusterRoleBinding> = Api::all(dc.client());
    let masters = bindings.get("cluster-admin").await.unwrap();
    let subject = &masters.subjects.unwrap()[0];
    assert_eq!((subject.kind.as_str(), subject.name.as_str()), ("Group", "system:masters"));
    let controller = bindings.get("system:controller:job-controller").await.unwrap();
    let subject = &controller.subjects.unwrap()[0];
    assert_eq!(
        (subject.kind.as_str(), subject.name.as_str(), subject.namespace.as_deref()),
        ("ServiceAccount", "job-controller", Some("kube-system"))
    );
    let reader: Api<Role> = Api::namespaced(dc.client(), "kube-system");
    assert!(reader.get("extension-apiserver-authentication-reader").await.is_ok());

    let out = ok(&kubectl(&dc, &["get", "clusterrolebinding", "cluster-admin", "-o", "yaml"]).await);
    assert!(
        out.contains("name: system:masters") && out.contains("kubernetes.io/bootstrapping: rbac-defaults"),
        "{out}"
    );
    let out = ok(&kubectl(&dc, &["get", "clusterrole", "admin", "-o", "jsonpath={.rules}"]).await);
    assert!(out.contains("rolebindings") && out.contains("deployments"), "{out}");
    dc.shutdown().await;
}

#[tokio::test]
async fn a_cluster_role_labelled_to_aggregate_extends_view_edit_and_admin() {
    let dc = start().await;
    let roles: Api<ClusterRole> = Api::all(dc.client());
    let widgets: ClusterRole = serde_json::from_value(json!({
        "metadata": { "name": "widgets-view", "labels": { "rbac.authorization.k8s.io/aggregate-to-view": "true" } },
        "rules": [{ "apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["get"] }],
    }))
    .unwrap();
    roles.create(&PostParams::default(), &widgets).await.unwrap();
    let holds_widgets =
        |role: ClusterRole| rules(&role).iter().any(|r| r.resources.as_deref() == Some(&["widgets".to_string()][..]));
    for name in ["view", "edit", "admin"] {
        let aggregated = eventually(|| async { holds_widgets(roles.get(name).await.unwrap()) }).await;
        assert!(aggregated, "{name} holds the widgets rule");
    }
    let view = roles.get("view").await.unwrap();
    let managers: Vec<String> = view.metadata.managed_fields.unwrap().into_iter().filter_map(|m| m.manager).collect();
    assert!(managers.contains(&"clusterrole-aggregation-controller".to_string()), "{managers:?}");

    roles.delete("widgets-view", &DeleteParams::default()).await.unwrap();
    for name in ["view", "edit", "admin"] {
        let dropped = eventually(|| async { !holds_widgets(roles.get(name).await.unwrap()) }).await;
        assert!(dropped, "{name} no longer holds the widgets rule");
    }
    let out = ok(&kubectl(&dc, &["get", "clusterrole", "view", "-o", "jsonpath={.rules[*].resources}"]).await);
    assert!(!out.contains("widgets") && out.contains("pods"), "{out}");
    dc.shutdown().await;
}

#[tokio::test]
async fn every_namespace_gets_a_default_service_account_and_the_root_ca_which_come_back() {
    let dc = start().await;
    let namespaces: Api<Namespace> = Api::all(dc.client());
    namespaces
        .create(&PostParams::default(), &serde_json::from_value(json!({ "metadata": { "name": "t" } })).unwrap())
        .await
        .unwrap();
    let accounts: Api<ServiceAccount> = Api::namespaced(dc.client(), "t");
    let configmaps: Api<ConfigMap> = Api::namespaced(dc.client(), "t");
    assert!(eventually(|| async { accounts.get_opt("default").await.unwrap().is_some() }).await);
    assert!(eventually(|| async { configmaps.get_opt("kube-root-ca.crt").await.unwrap().is_some() }).await);
    let ca = configmaps.get("kube-root-ca.crt").await.unwrap();
    assert_eq!(ca.data.unwrap()["ca.crt"], dc.certificate_authority());
    let annotations = ca.metadata.annotations.unwrap();
    assert!(
        annotations["kubernetes.io/description"]
            .starts_with("Contains a CA bundle that can be used to verify the kube-apiserver")
    );
    for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        let there: Api<ServiceAccount> = Api::namespaced(dc.client(), ns);
        assert!(there.get_opt("default").await.unwrap().is_some(), "{ns} has its default service account");
    }

    // Deleted, or changed, they come back as they were.
    let first_uid = accounts.get("default").await.unwrap().metadata.uid.unwrap();
    accounts.delete("default", &DeleteParams::default()).await.unwrap();
    let recreated = eventually(|| async {
        accounts
            .get_opt("default")
            .await
            .unwrap()
            .is_some_and(|a| a.metadata.uid.as_deref() != Some(first_uid.as_str()))
    })
    .await;
    assert!(recreated, "the default service account is made again");
    configmaps
        .patch("kube-root-ca.crt", &PatchParams::default(), &Patch::Merge(json!({ "data": { "ca.crt": "forged" } })))
        .await
        .unwrap();
    let reset = eventually(|| async {
        configmaps.get("kube-root-ca.crt").await.unwrap().data.unwrap()["ca.crt"] == dc.certificate_authority()
    })
    .await;
    assert!(reset, "the CA is written back");
    configmaps.delete("kube-root-ca.crt", &DeleteParams::default()).await.unwrap();
    assert!(eventually(|| async { configmaps.get_opt("kube-root-ca.crt").await.unwrap().is_some() }).await);

    let out =
        ok(&kubectl(&dc, &["get", "configmap", "kube-root-ca.crt", "-n", "t", "-o", "jsonpath={.data.ca\\.crt}"])
            .await);
    assert_eq!(out, dc.certificate_authority());
    let out = ok(&kubectl(&dc, &["get", "serviceaccount", "default", "-n", "t"]).await);
    assert!(out.contains("default"), "{out}");
    dc.shutdown().await;
}

#[tokio::test]
async fn the_kubernetes_service_has_endpoints_at_the_server() {
    let dc = start().await;
    let port: i32 = dc.url().rsplit(':').next().unwrap().parse().unwrap();
    let endpoints: Api<Endpoints> = Api::namespaced(dc.client(), "default");
    let found = endpoints.get("kubernetes").await.unwrap();
    let subset = &found.subsets.unwrap()[0];
    assert_eq!(subset.addresses.as_ref().unwrap()[0].ip, "127.0.0.1");
    assert_eq!(subset.ports.as_ref().unwrap()[0].port, port);
    let slices: Api<EndpointSlice> = Api::namespaced(dc.client(), "default");
    let slice = slices.get("kubernetes").await.unwrap();
    assert_eq!(slice.metadata.labels.unwrap()["kubernetes.io/service-name"], "kubernetes");
    assert_eq!(slice.ports.unwrap()[0].port, Some(port));
    let out = ok(&kubectl(&dc, &["get", "endpoints", "kubernetes"]).await);
    assert!(out.contains(&format!("127.0.0.1:{port}")), "{out}");
    dc.shutdown().await;
}
