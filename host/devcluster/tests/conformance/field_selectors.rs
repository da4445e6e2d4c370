//! Field selectors as kube-apiserver reads them: each kind's own labels (its field label
//! conversion), their values (its strategy's field set), the real refusals, and the syntax of
//! `fields.ParseSelector`.

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod, Service};
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::json;

use super::kubectl::{kubectl, ok};
use super::{api_error, crd_resource, raw, start};

fn names<K: kube::Resource + Clone>(list: &kube::core::ObjectList<K>) -> Vec<String> {
    list.items.iter().map(|o| o.meta().name.clone().unwrap_or_default()).collect()
}

#[tokio::test]
async fn nodes_select_on_unschedulable_as_kube_rs_cordons_them() {
    let dc = start().await;
    let nodes: Api<Node> = Api::all(dc.client());
    for (name, unschedulable) in [("fakenode", None), ("cordoned", Some(true))] {
        let mut node = json!({ "metadata": { "name": name } });
        if let Some(u) = unschedulable {
            node["spec"] = json!({ "unschedulable": u });
        }
        nodes.create(&PostParams::default(), &serde_json::from_value(node).unwrap()).await.unwrap();
    }
    // kube-rs's `node_cordon_and_uncordon_works` lists with `==`; unset reads false.
    let schedulable = nodes.list(&ListParams::default().fields("spec.unschedulable==false")).await.unwrap();
    assert_eq!(names(&schedulable), ["fakenode"]);
    nodes.cordon("fakenode").await.unwrap();
    let cordoned = nodes.list(&ListParams::default().fields("spec.unschedulable=true")).await.unwrap();
    assert_eq!(names(&cordoned), ["cordoned", "fakenode"]);
    let refused = nodes.list(&ListParams::default().fields("metadata.namespace=x")).await.unwrap_err();
    let status = api_error(refused);
    assert_eq!((status.code, status.message.as_str()), (400, "field label not supported: metadata.namespace"));
    dc.shutdown().await;
}

#[tokio::test]
async fn pods_services_and_jobs_select_on_their_own_fields() {
    let dc = start().await;
    let pods: Api<Pod> = Api::namespaced(dc.client(), "default");
    for (name, host_network, node) in [("plain", false, None), ("host", true, Some("n1"))] {
        let mut spec = json!({ "containers": [{ "name": "c", "image": "busybox" }], "hostNetwork": host_network });
        if let Some(node) = node {
            spec["nodeName"] = json!(node);
        }
        let pod = json!({ "metadata": { "name": name }, "spec": spec });
        pods.create(&PostParams::default(), &serde_json::from_value(pod).unwrap()).await.unwrap();
    }
    let off_host = pods.list(&ListParams::default().fields("spec.hostNetwork=false")).await.unwrap();
    assert_eq!(names(&off_host), ["plain"]);
    let unbound = pods.list(&ListParams::default().fields("spec.nodeName=")).await.unwrap();
    assert_eq!(names(&unbound), ["plain"]);
    let by_old_name = pods.list(&ListParams::default().fields("spec.host=n1,status.phase!=Running")).await.unwrap();
    assert_eq!(names(&by_old_name), ["host"]);
    pods.patch_status(
        "host",
        &PatchParams::default(),
        &Patch::Merge(json!({ "status": { "podIPs": [{ "ip": "10.1.0.5" }] } })),
    )
    .await
    .unwrap();
    let by_ip = pods.list(&ListParams::default().fields("status.podIP=10.1.0.5")).await.unwrap();
    assert_eq!(names(&by_ip), ["host"], "the pod IP is the first of podIPs");

    let services: Api<Service> = Api::namespaced(dc.client(), "default");
    let headless =
        json!({ "metadata": { "name": "headless" }, "spec": { "clusterIP": "None", "ports": [{ "port": 80 }] } });
    services.create(&PostParams::default(), &serde_json::from_value(headless).unwrap()).await.unwrap();
    let none = services.list(&ListParams::default().fields("spec.clusterIP=None")).await.unwrap();
    assert_eq!(names(&none), ["headless"]);
    let cluster_ips = services.list(&ListParams::default().fields("spec.type=ClusterIP")).await.unwrap();
    assert!(names(&cluster_ips).contains(&"headless".to_string()));

    let jobs: Api<Job> = Api::namespaced(dc.client(), "default");
    let job = json!({ "metadata": { "name": "once" }, "spec": { "template": { "spec": {
        "restartPolicy": "Never", "containers": [{ "name": "c", "image": "busybox" }] } } } });
    jobs.create(&PostParams::default(), &serde_json::from_value(job).unwrap()).await.unwrap();
    let unfinished = jobs.list(&ListParams::default().fields("status.successful=0")).await.unwrap();
    assert_eq!(names(&unfinished), ["once"]);
    let status = api_error(jobs.list(&ListParams::default().fields("status.succeeded=1")).await.unwrap_err());
    assert_eq!(status.message, "field label \"status.succeeded\" not supported for batchv1.Job");
    dc.shutdown().await;
}

#[tokio::test]
async fn other_kinds_take_name_and_namespace_only_with_the_default_refusal() {
    let dc = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(dc.client(), "default");
    let status = api_error(cms.list(&ListParams::default().fields("data.x=1")).await.unwrap_err());
    assert_eq!(
        (status.code, status.message.as_str()),
        (400, "\"data.x\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\"")
    );
    // ReplicaSets document `status.replicas`, but apps/v1 registers no conversion for it
    // (kubernetes/kubernetes#135136).
    let (code, status) = raw(&dc, "GET", "/apis/apps/v1/replicasets?fieldSelector=status.replicas%3D0", "", "").await;
    assert_eq!(code, 400);
    assert_eq!(
        status["message"],
        "\"status.replicas\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
    );
    // Terms are checked in sorted order, and values may escape `,` and `=`.
    let status = api_error(cms.list(&ListParams::default().fields("z.b=1,a.b=2")).await.unwrap_err());
    assert!(status.message.starts_with("\"a.b\""), "{}", status.message);
    cms.create(&PostParams::default(), &serde_json::from_value(json!({ "metadata": { "name": "a.b" } })).unwrap())
        .await
        .unwrap();
    let (_, list) = raw(
        &dc,
        "GET",
        "/api/v1/namespaces/default/configmaps?fieldSelector=metadata.name%3Da.b%2Cmetadata.name%21%3Dx%5C%2Cy",
        "",
        "",
    )
    .await;
    assert_eq!(list["items"].as_array().map(Vec::len), Some(1), "{list}");
    let (code, status) = raw(&dc, "GET", "/api/v1/configmaps?fieldSelector=metadata.name%3D%3Da%3Db", "", "").await;
    assert_eq!(
        (code, status["message"].as_str()),
        (400, Some("invalid field selector: unescaped character in value: 61"))
    );
    dc.shutdown().await;
}

#[tokio::test]
async fn events_select_on_the_labels_of_their_api_group() {
    let dc = start().await;
    let event = json!({ "apiVersion": "v1", "kind": "Event", "metadata": { "name": "e1" },
        "involvedObject": { "kind": "Pod", "name": "web", "namespace": "default" }, "reason": "Created", "type": "Normal",
        "reportingComponent": "kubelet", "message": "made" })
    .to_string();
    assert_eq!(raw(&dc, "POST", "/api/v1/namespaces/default/events", "application/json", &event).await.0, 201);
    let core = "/api/v1/namespaces/default/events?fieldSelector=";
    let (_, found) =
        raw(&dc, "GET", &format!("{core}involvedObject.kind%3DPod,reason%3DCreated,source%3Dkubelet"), "", "").await;
    assert_eq!(
        found["items"].as_array().map(Vec::len),
        Some(1),
        "source falls back to the reporting component: {found}"
    );
    let v1 = "/apis/events.k8s.io/v1/namespaces/default/events?fieldSelector=";
    let (_, found) = raw(&dc, "GET", &format!("{v1}regarding.name%3Dweb,reportingController%3Dkubelet"), "", "").await;
    assert_eq!(found["items"].as_array().map(Vec::len), Some(1), "{found}");
    let (code, status) = raw(&dc, "GET", &format!("{v1}involvedObject.name%3Dweb"), "", "").await;
    assert_eq!((code, status["message"].as_str()), (400, Some("field label not supported: involvedObject.name")));
    dc.shutdown().await;
}

#[tokio::test]
async fn custom_resources_select_on_their_versions_selectable_fields() {
    let dc = start().await;
    let crds: Api<DynamicObject> = Api::all_with(dc.client(), &crd_resource());
    let version = |name: &str, storage: bool, selectable: serde_json::Value| {
        json!({ "name": name, "served": true, "storage": storage, "selectableFields": selectable,
                "schema": { "openAPIV3Schema": { "type": "object", "properties": { "spec": { "type": "object",
                    "properties": { "color": { "type": "string" }, "size": { "type": "integer" } } } } } } })
    };
    let crd = json!({ "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": { "name": "widgets.example.com" },
        "spec": { "group": "example.com", "scope": "Cluster", "names": { "plural": "widgets", "kind": "Widget" },
                  "versions": [version("v1", true, json!([{ "jsonPath": ".spec.color" }, { "jsonPath": ".spec.size" }])),
                               version("v2", false, json!([]))] } });
    crds.create(&PostParams::default(), &serde_json::from_value(crd).unwrap()).await.unwrap();
    let resource =
        |v: &str| ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("example.com", v, "Widget"), "widgets");
    let widgets: Api<DynamicObject> = Api::all_with(dc.client(), &resource("v1"));
    for (name, color, size) in [("red", "red", 3), ("blue", "blue", 4)] {
        let w = json!({ "apiVersion": "example.com/v1", "kind": "Widget", "metadata": { "name": name },
            "spec": { "color": color, "size": size } });
        widgets.create(&PostParams::default(), &serde_json::from_value(w).unwrap()).await.unwrap();
    }
    assert_eq!(names(&widgets.list(&ListParams::default().fields("spec.color=red")).await.unwrap()), ["red"]);
    assert_eq!(names(&widgets.list(&ListParams::default().fields("spec.size=4")).await.unwrap()), ["blue"]);
    let v2: Api<DynamicObject> = Api::all_with(dc.client(), &resource("v2"));
    let status = api_error(v2.list(&ListParams::default().fields("spec.color=red")).await.unwrap_err());
    assert_eq!(status.message, "field label not supported: spec.color");
    let status = api_error(widgets.list(&ListParams::default().fields("metadata.namespace=x")).await.unwrap_err());
    assert_eq!(status.message, "field label not supported: metadata.namespace", "a cluster-scoped resource");
    dc.shutdown().await;
}

#[tokio::test]
async fn a_watch_of_one_object_may_select_only_that_name() {
    let dc = start().await;
    let (code, status) =
        raw(&dc, "GET", "/api/v1/watch/namespaces/default/configmaps/a?fieldSelector=metadata.name%3Db", "", "").await;
    assert_eq!(
        (code, status["message"].as_str()),
        (400, Some("fieldSelector metadata.name doesn't match requested name"))
    );
    dc.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_field_selectors_behave_as_on_a_cluster() {
    let dc = start().await;
    ok(&kubectl(&dc, &["create", "secret", "generic", "s", "--from-literal=a=b"]).await);
    let secrets = ok(&kubectl(&dc, &["get", "secrets", "--field-selector", "type=Opaque", "-o", "name"]).await);
    assert_eq!(secrets.trim(), "secret/s");
    let services = ok(&kubectl(&dc, &["get", "svc", "--field-selector", "spec.type=ClusterIP", "-o", "name"]).await);
    assert_eq!(services.trim(), "service/kubernetes");
    let namespaces = ok(&kubectl(&dc, &["get", "ns", "--field-selector", "status.phase=Active", "-o", "name"]).await);
    assert!(namespaces.contains("namespace/default"), "{namespaces}");
    let refused = kubectl(&dc, &["get", "rs", "--field-selector", "status.replicas=0"]).await;
    assert!(!refused.status.success());
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        err.contains(
            "\"status.replicas\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
        ),
        "{err}"
    );
    let nodes = kubectl(&dc, &["get", "nodes", "--field-selector", "spec.unschedulable=false"]).await;
    assert!(nodes.status.success(), "{}", String::from_utf8_lossy(&nodes.stderr));
    dc.shutdown().await;
}
