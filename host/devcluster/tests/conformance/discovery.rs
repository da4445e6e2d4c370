//! `/version`, `/api`, `/apis` and the resource lists kubectl and kube discovery read.

use kube::api::{Api, DeleteParams, DynamicObject};
use kube::discovery::{Discovery, Scope};

use super::kubectl::{kubectl, ok};
use super::{crd_resource, exchange, install_foo, raw, start};

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

const AGGREGATED_V2: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
const CLIENT_GO_ACCEPT: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";

/// Every resource a discovery found: `group/version/plural` with its subresources.
fn resource_set(discovery: &Discovery) -> std::collections::BTreeSet<String> {
    let mut set = std::collections::BTreeSet::new();
    for group in discovery.groups() {
        for version in group.versions() {
            for (resource, caps) in group.versioned_resources(version) {
                let mut subs: Vec<String> = caps.subresources.iter().map(|(r, _)| r.plural.clone()).collect();
                subs.sort();
                set.insert(format!("{}/{} {} {:?} {:?}", group.name(), version, resource.plural, caps.scope, subs));
            }
        }
    }
    set
}

#[tokio::test]
async fn kube_aggregated_discovery_finds_what_legacy_discovery_finds() {
    let dc = start().await;
    install_foo(&dc).await;
    let aggregated = Discovery::new(dc.client()).run_aggregated().await.expect("aggregated discovery runs");
    let legacy = Discovery::new(dc.client()).run().await.expect("legacy discovery runs");
    assert_eq!(resource_set(&aggregated), resource_set(&legacy));
    let apps = aggregated.get("apps").expect("apps");
    assert_eq!(apps.preferred_version(), Some("v1"));
    let (_, deployments) = apps.recommended_kind("Deployment").expect("deployments");
    let subs: Vec<&str> = deployments.subresources.iter().map(|(r, _)| r.plural.as_str()).collect();
    assert!(subs.contains(&"deployments/scale") || subs.contains(&"scale"), "{subs:?}");
    assert!(aggregated.get("samplecontroller.k8s.io").is_some(), "a CRD's group");
    let core = dc.client().list_core_api_versions_aggregated().await.unwrap();
    assert_eq!(core.items.len(), 1);
    let versions: Vec<&str> = core.items[0].versions.iter().map(|v| v.version.as_deref().unwrap_or("")).collect();
    assert_eq!(versions, ["v1"]);
    let pods = core.items[0].versions[0].resources.iter().find(|r| r.resource.as_deref() == Some("pods")).unwrap();
    assert_eq!(pods.short_names, ["po"]);
    dc.shutdown().await;
}

#[tokio::test]
async fn aggregated_discovery_is_served_with_its_media_type_and_entity_tag() {
    let dc = start().await;
    let (code, headers, body) = exchange(&dc, "GET", "/apis", &[("accept", CLIENT_GO_ACCEPT)], "").await;
    assert_eq!(code, 200);
    assert_eq!(headers["content-type"], AGGREGATED_V2);
    assert_eq!(headers["vary"], "Accept");
    assert!(body.starts_with("{\"kind\":\"APIGroupDiscoveryList\",\"apiVersion\":\"apidiscovery.k8s.io/v2\",\"metadata\":{},\"items\":[{\"metadata\":{\"name\":"), "{body}");
    let list: serde_json::Value = serde_json::from_str(&body).unwrap();
    let apps = list["items"].as_array().unwrap().iter().find(|g| g["metadata"]["name"] == "apps").unwrap();
    let deployments =
        apps["versions"][0]["resources"].as_array().unwrap().iter().find(|r| r["resource"] == "deployments").unwrap();
    assert_eq!(deployments["responseKind"], serde_json::json!({ "group": "", "version": "", "kind": "Deployment" }));
    assert_eq!(
        deployments["subresources"][0]["responseKind"],
        serde_json::json!({ "group": "autoscaling", "version": "v1", "kind": "Scale" })
    );
    assert_eq!(apps["versions"][0]["freshness"], "Current");

    let etag = headers["etag"].to_str().unwrap().to_string();
    let (code, _, body) =
        exchange(&dc, "GET", "/apis", &[("accept", AGGREGATED_V2), ("if-none-match", &etag)], "").await;
    assert_eq!((code, body.as_str()), (304, ""));
    install_foo(&dc).await;
    let (code, headers, _) =
        exchange(&dc, "GET", "/apis", &[("accept", AGGREGATED_V2), ("if-none-match", &etag)], "").await;
    assert_eq!(code, 200, "a new CRD changes the document");
    assert_ne!(headers["etag"].to_str().unwrap(), etag);

    // v2beta1 is no longer served by 1.33: such a client gets the legacy list.
    let beta = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";
    let (_, headers, body) = exchange(&dc, "GET", "/apis", &[("accept", beta)], "").await;
    assert_eq!(headers["content-type"], "application/json");
    assert!(body.starts_with("{\"kind\":\"APIGroupList\""), "{body}");
    dc.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_discovers_everything_from_the_two_aggregated_documents() {
    let dc = start().await;
    install_foo(&dc).await;
    let out = kubectl(&dc, &["api-resources", "-v=6"]).await;
    let listed = ok(&out);
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(listed.contains("deployments") && listed.contains("foos"), "{listed}");
    assert!(log.contains("/api?timeout") && log.contains("/apis?timeout"), "{log}");
    assert!(!log.contains("/apis/apps/v1?timeout"), "no request per group version: {log}");
    let table = ok(&kubectl(&dc, &["get", "deployments"]).await);
    assert!(table.is_empty() || table.starts_with("NAME"), "{table}");
    dc.shutdown().await;
}
