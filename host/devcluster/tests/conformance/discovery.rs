//! `/version`, `/api`, `/apis` and the resource lists kubectl and kube discovery read.

use kube::api::{Api, DeleteParams, DynamicObject};
use kube::discovery::{Discovery, Scope};

use super::{crd_resource, install_foo, raw, start};

#[tokio::test]
async fn version_and_group_lists_are_served() {
    let dc = start().await;
    let version = dc.client().apiserver_version().await.expect("/version");
    assert_eq!(version.major, "1");
    let (code, apis) = raw(&dc, "GET", "/apis", "", "").await;
    assert_eq!(code, 200);
    assert_eq!(apis["kind"], "APIGroupList");
    let groups: Vec<&str> = apis["groups"].as_array().unwrap().iter().map(|g| g["name"].as_str().unwrap()).collect();
    for group in ["apps", "coordination.k8s.io", "events.k8s.io", "apiextensions.k8s.io", "rbac.authorization.k8s.io"] {
        assert!(groups.contains(&group), "{group} missing from {groups:?}");
    }
    let (_, core) = raw(&dc, "GET", "/api", "", "").await;
    assert_eq!(core["versions"], serde_json::json!(["v1"]));
    dc.shutdown().await;
}

#[tokio::test]
async fn resource_lists_carry_verbs_short_names_scope_and_subresources() {
    let dc = start().await;
    let (_, v1) = raw(&dc, "GET", "/api/v1", "", "").await;
    let find = |name: &str| v1["resources"].as_array().unwrap().iter().find(|r| r["name"] == name).cloned();
    let pods = find("pods").expect("pods listed");
    assert_eq!(pods["namespaced"], true);
    assert_eq!(pods["kind"], "Pod");
    assert!(pods["shortNames"].as_array().unwrap().contains(&"po".into()));
    assert!(pods["verbs"].as_array().unwrap().contains(&"watch".into()));
    assert!(find("pods/status").is_some());
    assert_eq!(find("namespaces").unwrap()["namespaced"], false);
    let (_, apps) = raw(&dc, "GET", "/apis/apps/v1", "", "").await;
    let names: Vec<&str> = apps["resources"].as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"deployments/status") && names.contains(&"deployments/scale"), "{names:?}");
    dc.shutdown().await;
}

#[tokio::test]
async fn kube_discovery_sees_builtins_and_a_new_crd_then_forgets_it() {
    let dc = start().await;
    install_foo(&dc).await;
    let discovery = Discovery::new(dc.client()).run().await.expect("discovery runs");
    let (foo, caps) = discovery
        .groups()
        .flat_map(|g| g.recommended_resources())
        .find(|(r, _)| r.kind == "Foo")
        .expect("Foo discovered");
    assert_eq!(foo.plural, "foos");
    assert_eq!(caps.scope, Scope::Namespaced);
    assert!(caps.subresources.iter().any(|(r, _)| r.plural == "foos/status" || r.plural == "status"));
    let lease = discovery.groups().flat_map(|g| g.recommended_resources()).any(|(r, _)| r.kind == "Lease");
    assert!(lease);

    let crds: Api<DynamicObject> = Api::all_with(dc.client(), &crd_resource());
    crds.delete("foos.samplecontroller.k8s.io", &DeleteParams::default()).await.expect("CRD deleted");
    let gone = super::eventually(|| async {
        raw(&dc, "GET", "/apis/samplecontroller.k8s.io/v1alpha1", "", "").await.0 == 404
    })
    .await;
    assert!(gone, "the group leaves discovery with its CRD");
    dc.shutdown().await;
}

#[tokio::test]
async fn unknown_paths_answer_a_not_found_status() {
    let dc = start().await;
    let (code, status) = raw(&dc, "GET", "/api/v1/widgets", "", "").await;
    assert_eq!(code, 404);
    assert_eq!(status["reason"], "NotFound");
    let (code, _) = raw(&dc, "GET", "/apis/nope.example.com/v1", "", "").await;
    assert_eq!(code, 404);
    let (code, status) = raw(&dc, "PUT", "/api/v1/namespaces/default/configmaps", "application/json", "{}").await;
    assert_eq!(code, 405);
    assert_eq!(status["reason"], "MethodNotAllowed");
    dc.shutdown().await;
}

#[tokio::test]
async fn shutdown_and_drop_stop_serving() {
    for drop_it in [false, true] {
        let dc = start().await;
        let address = dc.url().trim_start_matches("https://").to_string();
        let kubeconfig = dc.kubeconfig_path().to_path_buf();
        assert!(std::fs::read_to_string(&kubeconfig).unwrap().contains(&dc.url()));
        if drop_it {
            drop(dc);
        } else {
            dc.shutdown().await;
            assert!(!kubeconfig.exists(), "a temporary kubeconfig is removed at shutdown");
        }
        let closed = super::eventually(|| async { tokio::net::TcpStream::connect(&address).await.is_err() }).await;
        assert!(closed, "nothing listens on {address} any more");
    }
}
