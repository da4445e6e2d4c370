//! get, list (selectors, paging), create (generateName, uid...), update (optimistic
//! concurrency), generation and the status subresource of built-ins, error Status objects.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod, Secret, Service};
use kube::api::{Api, ListParams, ObjectMeta, PostParams};
use serde_json::json;

use super::{api_error, raw, start, start_empty};

fn config_map(name: &str, labels: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(labels.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect()),
            ..ObjectMeta::default()
        },
        data: Some([("k".to_string(), "v".to_string())].into()),
        ..ConfigMap::default()
    }
}

fn deployment(name: &str, image: &str) -> Deployment {
    serde_json::from_value(json!({
        "metadata": { "name": name },
        "spec": {
            "replicas": 1,
            "selector": { "matchLabels": { "app": name } },
            "template": { "metadata": { "labels": { "app": name } },
                          "spec": { "containers": [{ "name": "main", "image": image }] } }
        }
    }))
    .unwrap()
}

#[tokio::test]
async fn a_new_cluster_has_the_system_namespaces_and_the_kubernetes_service() {
    let dc = start().await;
    let namespaces: Api<Namespace> = Api::all(dc.client());
    let names: Vec<String> = namespaces
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect();
    assert_eq!(names, ["default", "kube-node-lease", "kube-public", "kube-system"]);
    // The API server's own Service, as on every cluster.
    let services: Api<Service> = Api::namespaced(dc.client(), "default");
    let kubernetes = services.get("kubernetes").await.unwrap();
    let spec = kubernetes.spec.unwrap();
    assert_eq!(spec.cluster_ip.as_deref(), Some("10.96.0.1"));
    assert_eq!(spec.ports.unwrap()[0].port, 443);
    assert_eq!(kubernetes.metadata.labels.unwrap()["component"], "apiserver");
    dc.shutdown().await;
}

#[tokio::test]
async fn create_sets_identity_and_generate_name() {
    let dc = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(dc.client(), "default");
    let created = cms.create(&PostParams::default(), &config_map("one", &[])).await.unwrap();
    assert!(created.metadata.uid.is_some());
    assert!(created.metadata.creation_timestamp.is_some());
    let rv: u64 = created.metadata.resource_version.as_deref().unwrap().parse().unwrap();
    let mut generated = config_map("", &[]);
    generated.metadata.name = None;
    generated.metadata.generate_name = Some("gen-".into());
    let second = cms.create(&PostParams::default(), &generated).await.unwrap();
    let name = second.metadata.name.unwrap();
    assert!(name.starts_with("gen-") && name.len() == 9, "{name}");
    let rv2: u64 = second.metadata.resource_version.unwrap().parse().unwrap();
    assert!(rv2 > rv);
    assert_eq!(cms.get("one").await.unwrap().data, created.data);
    dc.shutdown().await;
}

#[tokio::test]
async fn errors_are_status_objects_with_code_and_reason() {
    let dc = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(dc.client(), "default");
    let missing = api_error(cms.get("nope").await.unwrap_err());
    assert_eq!((missing.code, missing.reason.as_str()), (404, "NotFound"));
    assert_eq!(missing.message, "configmaps \"nope\" not found");
    cms.create(&PostParams::default(), &config_map("dup", &[])).await.unwrap();
    let dup = api_error(cms.create(&PostParams::default(), &config_map("dup", &[])).await.unwrap_err());
    assert_eq!((dup.code, dup.reason.as_str()), (409, "AlreadyExists"));
    let elsewhere: Api<ConfigMap> = Api::namespaced(dc.client(), "missing-ns");
    let no_ns = api_error(elsewhere.create(&PostParams::default(), &config_map("x", &[])).await.unwrap_err());
    assert_eq!(no_ns.code, 404);
    assert_eq!(no_ns.message, "namespaces \"missing-ns\" not found");
    let bad_name = api_error(cms.create(&PostParams::default(), &config_map("Bad_Name", &[])).await.unwrap_err());
    assert_eq!((bad_name.code, bad_name.reason.as_str()), (422, "Invalid"));
    dc.shutdown().await;
}

#[tokio::test]
async fn malformed_bodies_get_400_and_change_nothing() {
    let dc = start_empty().await;
    let path = "/api/v1/namespaces/default/configmaps";
    let (code, status) = raw(&dc, "POST", path, "application/json", "{not json").await;
    assert_eq!((code, status["reason"].as_str()), (400, Some("BadRequest")));
    let (code, _) = raw(&dc, "POST", path, "application/json", "[1, 2]").await;
    assert_eq!(code, 400);
    let (code, _) = raw(&dc, "POST", path, "application/json", r#"{"metadata": 5}"#).await;
    assert_eq!(code, 400);
    let (code, _) =
        raw(&dc, "PATCH", "/api/v1/namespaces/default/configmaps/x", "application/merge-patch+json", "{").await;
    assert!(code == 400 || code == 404, "{code}");
    let (code, list) = raw(&dc, "GET", path, "", "").await;
    assert_eq!(code, 200);
    assert_eq!(list["items"], json!([]));
    dc.shutdown().await;
}

#[tokio::test]
async fn update_with_a_stale_resource_version_conflicts() {
    let dc = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(dc.client(), "default");
    let first = cms.create(&PostParams::default(), &config_map("c", &[])).await.unwrap();
    let mut a = first.clone();
    a.data = Some([("k".to_string(), "a".to_string())].into());
    cms.replace("c", &PostParams::default(), &a).await.unwrap();
    let mut b = first.clone();
    b.data = Some([("k".to_string(), "b".to_string())].into());
    let err = api_error(cms.replace("c", &PostParams::default(), &b).await.unwrap_err());
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));
    assert!(err.message.contains("the object has been modified"), "{}", err.message);
    assert_eq!(cms.get("c").await.unwrap().data.unwrap()["k"], "a");
    dc.shutdown().await;
}

#[tokio::test]
async fn lists_filter_by_label_and_field_selectors_across_namespaces() {
    let dc = start_empty().await;
    let default: Api<ConfigMap> = Api::namespaced(dc.client(), "default");
    let system: Api<ConfigMap> = Api::namespaced(dc.client(), "kube-system");
    default.create(&PostParams::default(), &config_map("a", &[("app", "web"), ("tier", "front")])).await.unwrap();
    default.create(&PostParams::default(), &config_map("b", &[("app", "db")])).await.unwrap();
    system.create(&PostParams::default(), &config_map("c", &[("app", "web"), ("legacy", "yes")])).await.unwrap();
    let all: Api<ConfigMap> = Api::all(dc.client());
    let names = |list: kube::core::ObjectList<ConfigMap>| -> Vec<String> {
        list.items.into_iter().map(|c| c.metadata.name.unwrap()).collect()
    };
    let select = |s: &str| ListParams::default().labels(s);
    assert_eq!(names(all.list(&ListParams::default()).await.unwrap()), ["a", "b", "c"]);
    assert_eq!(names(all.list(&select("app=web")).await.unwrap()), ["a", "c"]);
    assert_eq!(names(all.list(&select("app!=web")).await.unwrap()), ["b"]);
    assert_eq!(names(all.list(&select("app in (db, cache)")).await.unwrap()), ["b"]);
    assert_eq!(names(all.list(&select("app notin (db)")).await.unwrap()), ["a", "c"]);
    assert_eq!(names(all.list(&select("legacy")).await.unwrap()), ["c"]);
    assert_eq!(names(all.list(&select("app,!legacy")).await.unwrap()), ["a", "b"]);
    assert_eq!(names(default.list(&select("app==web")).await.unwrap()), ["a"]);
    let fields = |s: &str| ListParams::default().fields(s);
    assert_eq!(names(all.list(&fields("metadata.namespace=kube-system")).await.unwrap()), ["c"]);
    assert_eq!(names(all.list(&fields("metadata.name!=a")).await.unwrap()), ["b", "c"]);
    let bad = api_error(all.list(&fields("data.k=v")).await.unwrap_err());
    assert_eq!(bad.code, 400);
    let bad = api_error(all.list(&select("app in web")).await.unwrap_err());
    assert_eq!(bad.code, 400);
    dc.shutdown().await;
}

#[tokio::test]
async fn limit_and_continue_page_through_a_list() {
    let dc = start_empty().await;
    let cms: Api<ConfigMap> = Api::namespaced(dc.client(), "default");
    for i in 0..5 {
        cms.create(&PostParams::default(), &config_map(&format!("cm-{i}"), &[])).await.unwrap();
    }
    let mut seen = Vec::new();
    let mut params = ListParams::default().limit(2);
    loop {
        let page = cms.list(&params).await.unwrap();
        assert!(page.items.len() <= 2);
        seen.extend(page.items.into_iter().map(|c| c.metadata.name.unwrap()));
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() => {
                assert!(page.metadata.remaining_item_count.unwrap() > 0);
                params = params.continue_token(&token);
            }
            _ => break,
        }
    }
    assert_eq!(seen, ["cm-0", "cm-1", "cm-2", "cm-3", "cm-4"]);

    // As the real server: with a selector the remaining count is not given (it would cost
    // matching every remaining object), only the continue token.
    let labelled = |name: &str| -> ConfigMap {
        serde_json::from_value(json!({ "metadata": { "name": name, "labels": { "page": "yes" } } })).unwrap()
    };
    for name in ["l-0", "l-1"] {
        cms.create(&PostParams::default(), &labelled(name)).await.unwrap();
    }
    let page = cms.list(&ListParams::default().labels("page=yes").limit(1)).await.unwrap();
    assert_eq!(page.items.len(), 1);
    assert!(page.metadata.continue_.is_some_and(|c| !c.is_empty()));
    assert_eq!(page.metadata.remaining_item_count, None);
    dc.shutdown().await;
}

#[tokio::test]
async fn generation_follows_spec_and_status_is_its_own_subresource() {
    let dc = start().await;
    let deployments: Api<Deployment> = Api::namespaced(dc.client(), "default");
    let created = deployments.create(&PostParams::default(), &deployment("web", "nginx:1")).await.unwrap();
    assert_eq!(created.metadata.generation, Some(1));

    let mut labelled = created.clone();
    labelled.metadata.labels = Some([("x".to_string(), "y".to_string())].into());
    let labelled = deployments.replace("web", &PostParams::default(), &labelled).await.unwrap();
    assert_eq!(labelled.metadata.generation, Some(1), "metadata changes keep the generation");

    let mut with_status = labelled.clone();
    with_status.status = Some(serde_json::from_value(json!({ "availableReplicas": 1 })).unwrap());
    let ignored = deployments.replace("web", &PostParams::default(), &with_status).await.unwrap();
    assert_eq!(ignored.status.and_then(|s| s.available_replicas), None, "the main resource ignores status");

    let status_set = deployments.replace_status("web", &PostParams::default(), &with_status).await.unwrap();
    assert_eq!(status_set.status.unwrap().available_replicas, Some(1));
    assert_eq!(status_set.metadata.generation, Some(1));

    let mut new_image = deployments.get("web").await.unwrap();
    new_image.spec.as_mut().unwrap().template.spec.as_mut().unwrap().containers[0].image = Some("nginx:2".into());
    new_image.status = None;
    let bumped = deployments.replace("web", &PostParams::default(), &new_image).await.unwrap();
    assert_eq!(bumped.metadata.generation, Some(2));
    assert_eq!(bumped.status.unwrap().available_replicas, Some(1), "status survives a spec update");
    dc.shutdown().await;
}

#[tokio::test]
async fn pod_status_subresource_ignores_spec_changes() {
    let dc = start().await;
    let pods: Api<Pod> = Api::namespaced(dc.client(), "default");
    let pod: Pod = serde_json::from_value(json!({
        "metadata": { "name": "p" },
        "spec": { "containers": [{ "name": "c", "image": "busybox" }] }
    }))
    .unwrap();
    let created = pods.create(&PostParams::default(), &pod).await.unwrap();
    assert_eq!(created.status.as_ref().unwrap().phase.as_deref(), Some("Pending"));
    let mut changed = created.clone();
    changed.spec.as_mut().unwrap().containers[0].image = Some("other".into());
    changed.status.as_mut().unwrap().phase = Some("Running".into());
    let after = pods.replace_status("p", &PostParams::default(), &changed).await.unwrap();
    assert_eq!(after.status.unwrap().phase.as_deref(), Some("Running"));
    assert_eq!(after.spec.unwrap().containers[0].image.as_deref(), Some("busybox"));
    dc.shutdown().await;
}

#[tokio::test]
async fn secret_string_data_is_stored_as_base64_data() {
    let dc = start().await;
    let secrets: Api<Secret> = Api::namespaced(dc.client(), "default");
    let secret: Secret =
        serde_json::from_value(json!({ "metadata": { "name": "s" }, "stringData": { "password": "hunter2" } }))
            .unwrap();
    let created = secrets.create(&PostParams::default(), &secret).await.unwrap();
    assert_eq!(created.string_data, None);
    assert_eq!(created.data.unwrap()["password"].0, b"hunter2");
    assert_eq!(created.type_.as_deref(), Some("Opaque"));
    let (code, _) = raw(
        &dc,
        "POST",
        "/api/v1/namespaces/default/secrets",
        "application/json",
        r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"bad"},"data":{"k":"not base64!"}}"#,
    )
    .await;
    assert_eq!(code, 400, "data that is not base64 does not decode");
    dc.shutdown().await;
}

#[tokio::test]
async fn deployments_serve_the_scale_subresource() {
    let dc = start().await;
    let deployments: Api<Deployment> = Api::namespaced(dc.client(), "default");
    deployments.create(&PostParams::default(), &deployment("web", "nginx:1")).await.unwrap();
    let scale = deployments.get_scale("web").await.unwrap();
    assert_eq!(scale.spec.unwrap().replicas, Some(1));
    assert_eq!(scale.status.unwrap().selector.as_deref(), Some("app=web"));
    let patch = kube::api::Patch::Merge(json!({ "spec": { "replicas": 4 } }));
    deployments.patch_scale("web", &kube::api::PatchParams::default(), &patch).await.unwrap();
    let d = deployments.get("web").await.unwrap();
    assert_eq!(d.spec.unwrap().replicas, Some(4));
    assert_eq!(d.metadata.generation, Some(2));
    dc.shutdown().await;
}

#[tokio::test]
async fn runtime_event_recorder_publishes_events() {
    use kube::runtime::events::{Event, EventType, Recorder, Reporter};
    let dc = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(dc.client(), "default");
    let owner = cms.create(&PostParams::default(), &config_map("owner", &[])).await.unwrap();
    let recorder = Recorder::new(dc.client(), Reporter { controller: "kubewasm-test".into(), instance: None });
    let reference = kube::Resource::object_ref(&owner, &());
    let event = Event {
        type_: EventType::Warning,
        reason: "Testing".into(),
        note: Some("something happened".into()),
        action: "Test".into(),
        secondary: None,
    };
    recorder.publish(&event, &reference).await.unwrap();
    recorder.publish(&event, &reference).await.unwrap();
    let events: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(dc.client(), "default");
    let list = events.list(&ListParams::default()).await.unwrap();
    assert_eq!(list.items.len(), 1, "a repeated event is folded into a series");
    assert_eq!(list.items[0].reason.as_deref(), Some("Testing"));
    let core: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(dc.client(), "default");
    let uid = owner.metadata.uid.unwrap();
    let described = core
        .list(&ListParams::default().fields(&format!("involvedObject.name=owner,involvedObject.uid={uid}")))
        .await
        .unwrap();
    assert_eq!(described.items.len(), 1, "kubectl describe finds it through core/v1");
    assert_eq!(described.items[0].message.as_deref(), Some("something happened"));
    let by_regarding = events.list(&ListParams::default().fields(&format!("regarding.uid={uid}"))).await.unwrap();
    assert_eq!(by_regarding.items.len(), 1);
    dc.shutdown().await;
}

/// A NodePort Service on port 80, for the allocation tests.
fn node_port_service(name: &str) -> k8s_openapi::api::core::v1::Service {
    serde_json::from_value(json!({ "metadata": { "name": name },
        "spec": { "type": "NodePort", "selector": { "app": "x" }, "ports": [{ "port": 80 }] } }))
    .unwrap()
}

#[tokio::test]
async fn services_get_a_cluster_ip_and_node_ports_that_updates_keep() {
    use k8s_openapi::api::core::v1::Service;
    let dc = start().await;
    let services: Api<Service> = Api::namespaced(dc.client(), "default");
    let a = services.create(&PostParams::default(), &node_port_service("a")).await.unwrap().spec.unwrap();
    let b = services.create(&PostParams::default(), &node_port_service("b")).await.unwrap().spec.unwrap();
    assert!(a.cluster_ip.is_some() && a.cluster_ip != b.cluster_ip);
    let port = &a.ports.as_ref().unwrap()[0];
    assert_eq!(port.protocol.as_deref(), Some("TCP"));
    assert!(port.node_port.is_some_and(|n| (30000..=32767).contains(&n)));
    let apply = kube::api::Patch::Apply(json!({ "apiVersion": "v1", "kind": "Service", "metadata": { "name": "a" },
        "spec": { "type": "NodePort", "selector": { "app": "y" }, "ports": [{ "port": 80 }] } }));
    let after = services.patch("a", &kube::api::PatchParams::apply("m").force(), &apply).await.unwrap().spec.unwrap();
    assert_eq!(after.cluster_ip, a.cluster_ip);
    assert_eq!(after.ports.unwrap()[0].node_port, port.node_port);
    let mut taken = node_port_service("c");
    taken.spec.as_mut().unwrap().ports.as_mut().unwrap()[0].node_port = port.node_port;
    let err = api_error(services.create(&PostParams::default(), &taken).await.unwrap_err());
    assert!(err.message.contains("provided port is already allocated"), "{}", err.message);
    dc.shutdown().await;
}

#[tokio::test]
async fn a_deleted_services_cluster_ip_and_node_port_are_handed_out_again() {
    use k8s_openapi::api::core::v1::Service;
    let dc = start().await;
    let services: Api<Service> = Api::namespaced(dc.client(), "default");
    let spec = |s: Service| {
        let spec = s.spec.unwrap();
        (spec.cluster_ip.unwrap(), spec.ports.unwrap()[0].node_port.unwrap())
    };
    let a = spec(services.create(&PostParams::default(), &node_port_service("a")).await.unwrap());
    let b = spec(services.create(&PostParams::default(), &node_port_service("b")).await.unwrap());
    assert_ne!(a, b);
    services.delete("a", &kube::api::DeleteParams::default()).await.unwrap();
    let c = spec(services.create(&PostParams::default(), &node_port_service("c")).await.unwrap());
    assert_eq!(c, a, "the lowest free ones, a's again");
    let d = spec(services.create(&PostParams::default(), &node_port_service("d")).await.unwrap());
    assert!(d.0 != b.0 && d.1 != b.1 && d != c);
    dc.shutdown().await;
}

#[tokio::test]
async fn pod_templates_get_container_defaults() {
    let dc = start().await;
    let deployments: Api<Deployment> = Api::namespaced(dc.client(), "default");
    let d = deployments.create(&PostParams::default(), &deployment("web", "nginx")).await.unwrap();
    let spec = d.spec.unwrap().template.spec.unwrap();
    assert_eq!(spec.restart_policy.as_deref(), Some("Always"));
    let c = &spec.containers[0];
    assert_eq!(c.image_pull_policy.as_deref(), Some("Always"), "an untagged image is pulled always");
    assert_eq!(c.termination_message_path.as_deref(), Some("/dev/termination-log"));
    dc.shutdown().await;
}

#[tokio::test]
async fn built_ins_are_decoded_and_validated_like_the_real_server() {
    let dc = start().await;
    let path = "/apis/apps/v1/namespaces/default/deployments";
    let body = |spec: serde_json::Value| {
        json!({ "apiVersion": "apps/v1", "kind": "Deployment", "metadata": { "name": "d" }, "spec": spec }).to_string()
    };
    let template =
        json!({ "metadata": { "labels": { "app": "a" } }, "spec": { "containers": [{ "name": "c", "image": "i" }] } });
    let (code, status) = raw(
        &dc,
        "POST",
        path,
        "application/json",
        &body(json!({ "replicas": "three", "selector": { "matchLabels": { "app": "a" } }, "template": template })),
    )
    .await;
    assert_eq!((code, status["reason"].as_str()), (400, Some("BadRequest")), "{status}");
    let (code, status) = raw(
        &dc,
        "POST",
        path,
        "application/json",
        &body(json!({ "selector": { "matchLabels": { "app": "b" } }, "template": template })),
    )
    .await;
    assert_eq!(code, 422);
    assert_eq!(status["details"]["causes"][0]["field"], "spec.template.metadata.labels");
    let (code, status) = raw(&dc, "POST", path, "application/json",
        &body(json!({ "selector": { "matchLabels": { "app": "a" } }, "template": { "metadata": { "labels": { "app": "a" } }, "spec": { "containers": [{ "name": "c" }] } } }))).await;
    assert_eq!(code, 422);
    assert_eq!(status["details"]["causes"][0]["field"], "spec.template.spec.containers[0].image");
    let (code, status) = raw(
        &dc,
        "POST",
        &format!("{path}?fieldValidation=Strict"),
        "application/json",
        &body(json!({ "selector": { "matchLabels": { "app": "a" } }, "template": template, "replica": 2 })),
    )
    .await;
    assert_eq!(code, 400);
    assert!(status["message"].as_str().unwrap().contains("unknown field \"spec.replica\""), "{status}");
    let (code, created) = raw(
        &dc,
        "POST",
        path,
        "application/json",
        &body(json!({ "selector": { "matchLabels": { "app": "a" } }, "template": template, "replica": 2 })),
    )
    .await;
    assert_eq!(code, 201);
    assert!(created["spec"].get("replica").is_none(), "unknown fields are dropped");
    dc.shutdown().await;
}

#[tokio::test]
async fn write_requests_counts_mutating_requests_only() {
    let dc = start().await;
    let before = dc.write_requests();
    let cms: Api<ConfigMap> = Api::namespaced(dc.client(), "default");
    cms.create(&PostParams::default(), &config_map("w", &[])).await.unwrap();
    cms.get("w").await.unwrap();
    cms.list(&ListParams::default()).await.unwrap();
    let _ = cms.create(&PostParams::default(), &config_map("w", &[])).await.unwrap_err();
    cms.patch("w", &kube::api::PatchParams::default(), &kube::api::Patch::Merge(json!({ "data": { "k": "v2" } })))
        .await
        .unwrap();
    cms.delete("w", &kube::api::DeleteParams::default()).await.unwrap();
    assert_eq!(dc.write_requests() - before, 4, "create, refused create, patch, delete");
    dc.shutdown().await;
}

#[tokio::test]
async fn continued_pages_show_the_snapshot_of_the_first_page() {
    let dc = kubewasm_devcluster::DevCluster::start(kubewasm_devcluster::Options {
        watch_history: 20,
        namespace_controllers: false,
        ..Default::default()
    })
    .await
    .unwrap();
    let namespaces: Api<Namespace> = Api::all(dc.client());
    for ns in ["a", "a-b"] {
        namespaces
            .create(&PostParams::default(), &serde_json::from_value(json!({ "metadata": { "name": ns } })).unwrap())
            .await
            .unwrap();
    }
    let in_a: Api<ConfigMap> = Api::namespaced(dc.client(), "a");
    let in_ab: Api<ConfigMap> = Api::namespaced(dc.client(), "a-b");
    for name in ["x", "z"] {
        in_a.create(&PostParams::default(), &config_map(name, &[])).await.unwrap();
    }
    in_ab.create(&PostParams::default(), &config_map("c", &[])).await.unwrap();
    let all: Api<ConfigMap> = Api::all(dc.client());
    let first = all.list(&ListParams::default().limit(1)).await.unwrap();
    let token = first.metadata.continue_.clone().unwrap();
    in_a.delete("z", &kube::api::DeleteParams::default()).await.unwrap();
    in_ab.create(&PostParams::default(), &config_map("d", &[])).await.unwrap();
    in_ab
        .patch("c", &kube::api::PatchParams::default(), &kube::api::Patch::Merge(json!({ "data": { "k": "patched" } })))
        .await
        .unwrap();
    let mut seen: Vec<String> = first
        .items
        .into_iter()
        .map(|c| format!("{}/{}", c.metadata.namespace.unwrap(), c.metadata.name.unwrap()))
        .collect();
    let rest = all.list(&ListParams::default().continue_token(&token)).await.unwrap();
    assert_eq!(rest.metadata.resource_version, first.metadata.resource_version);
    assert_eq!(rest.items.last().unwrap().data.as_ref().unwrap()["k"], "v", "a-b/c as it was, before its patch");
    seen.extend(
        rest.items.into_iter().map(|c| format!("{}/{}", c.metadata.namespace.unwrap(), c.metadata.name.unwrap())),
    );
    assert_eq!(seen, ["a/x", "a/z", "a-b/c"], "the snapshot of the first page, in namespace order");

    let (_, exact) = raw(
        &dc,
        "GET",
        &format!(
            "/api/v1/configmaps?resourceVersionMatch=Exact&resourceVersion={}",
            first.metadata.resource_version.as_deref().unwrap()
        ),
        "",
        "",
    )
    .await;
    let names: Vec<&str> =
        exact["items"].as_array().unwrap().iter().map(|i| i["metadata"]["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["x", "z", "c"], "an exact list shows the state at that version");

    for i in 0..25 {
        in_a.patch(
            "x",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({ "data": { "k": i.to_string() } })),
        )
        .await
        .unwrap();
    }
    let expired = api_error(all.list(&ListParams::default().continue_token(&token)).await.unwrap_err());
    assert_eq!((expired.code, expired.reason.as_str()), (410, "Expired"));
    dc.shutdown().await;
}

#[tokio::test]
async fn a_deployment_selector_is_immutable_and_a_wrong_uid_conflicts() {
    let dc = start().await;
    let deployments: Api<Deployment> = Api::namespaced(dc.client(), "default");
    deployments.create(&PostParams::default(), &deployment("web", "nginx:1")).await.unwrap();
    let patch = kube::api::Patch::Merge(json!({ "spec": { "selector": { "matchLabels": { "app": "other" } },
        "template": { "metadata": { "labels": { "app": "other" } } } } }));
    let err = api_error(deployments.patch("web", &kube::api::PatchParams::default(), &patch).await.unwrap_err());
    assert_eq!(err.code, 422);
    assert!(err.message.contains("spec.selector") && err.message.contains("field is immutable"), "{}", err.message);
    let mut stale = deployments.get("web").await.unwrap();
    stale.metadata.uid = Some("someone-else".into());
    let err = api_error(deployments.replace("web", &PostParams::default(), &stale).await.unwrap_err());
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));
    dc.shutdown().await;
}

#[tokio::test]
async fn odd_requests_get_client_errors_never_server_errors() {
    let dc = start().await;
    let cm = "/api/v1/namespaces/default/configmaps";
    let foo = "/apis/samplecontroller.k8s.io/v1alpha1/namespaces/default/foos";
    super::install_foo(&dc).await;
    raw(&dc, "POST", cm, "application/json", r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}"#).await;
    let requests: Vec<(&str, String, &str, &str)> = vec![
        (
            "POST",
            cm.into(),
            "application/json",
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","labels":5}}"#,
        ),
        (
            "POST",
            cm.into(),
            "application/json",
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","finalizers":"f"}}"#,
        ),
        (
            "POST",
            cm.into(),
            "application/json",
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","ownerReferences":{}}}"#,
        ),
        ("POST", cm.into(), "application/json", r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":7}}"#),
        (
            "POST",
            cm.into(),
            "application/json",
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"data":{"k":1e400}}"#,
        ),
        (
            "POST",
            foo.into(),
            "application/json",
            r#"{"apiVersion":"samplecontroller.k8s.io/v1alpha1","kind":"Foo","metadata":{"name":"f"},"spec":[1]}"#,
        ),
        (
            "POST",
            foo.into(),
            "application/json",
            r#"{"apiVersion":"samplecontroller.k8s.io/v1alpha1","kind":"Foo","metadata":{"name":"f"},"spec":{"replicas":1e30}}"#,
        ),
        ("PATCH", format!("{cm}/c"), "application/json-patch+json", r#"[{"op":"remove","path":"/metadata"}]"#),
        (
            "PATCH",
            format!("{cm}/c"),
            "application/json-patch+json",
            r#"[{"op":"replace","path":"/metadata/name","value":"other"}]"#,
        ),
        ("PATCH", format!("{cm}/c"), "application/merge-patch+json", r#"{"metadata":null}"#),
        (
            "PATCH",
            format!("{cm}/c"),
            "application/strategic-merge-patch+json",
            r#"{"metadata":{"finalizers":[{"$patch":"delete"}]}}"#,
        ),
        ("PATCH", format!("{cm}/c"), "application/strategic-merge-patch+json", r#"{"$patch":"delete"}"#),
        ("PATCH", format!("{cm}/c?fieldManager=m"), "application/apply-patch+yaml", ": : :"),
        (
            "PATCH",
            format!("{cm}/c?fieldManager=m"),
            "application/apply-patch+yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: [1, 2]\n",
        ),
        (
            "PATCH",
            format!("{cm}/c?fieldManager=m"),
            "application/apply-patch+yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, managedFields: 3}\n",
        ),
        ("GET", format!("{cm}?labelSelector=a%20in%20(b"), "", ""),
        ("GET", format!("{cm}?limit=abc&continue=%%%"), "", ""),
        ("GET", format!("{cm}?watch=true&resourceVersion=abc"), "", ""),
        ("DELETE", format!("{cm}/c"), "application/json", "{\"preconditions\": 5}"),
        ("DELETE", format!("{cm}/c?dryRun=Maybe"), "", ""),
        (
            "PUT",
            format!("{cm}/c"),
            "application/json",
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","resourceVersion":"abc"}}"#,
        ),
    ];
    for (method, path, content_type, body) in requests {
        let (code, status) = raw(&dc, method, &path, content_type, body).await;
        assert!(code < 500, "{method} {path} {body}: {code} {status}");
    }
    let (code, _) = raw(&dc, "GET", cm, "", "").await;
    assert_eq!(code, 200, "the server still serves");
    dc.shutdown().await;
}

#[tokio::test]
async fn invalid_labels_and_owner_references_are_refused() {
    let dc = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(dc.client(), "default");
    let err =
        api_error(cms.create(&PostParams::default(), &config_map("l", &[("app", "not valid")])).await.unwrap_err());
    assert_eq!(err.code, 422);
    assert!(err.message.contains("metadata.labels: Invalid value: \"not valid\""), "{}", err.message);
    let orphan: ConfigMap = serde_json::from_value(json!({ "metadata": { "name": "o", "ownerReferences": [{ "apiVersion": "v1", "kind": "ConfigMap", "name": "x" }] } })).unwrap();
    let err = api_error(cms.create(&PostParams::default(), &orphan).await.unwrap_err());
    assert!(err.message.contains("metadata.ownerReferences[0].uid"), "{}", err.message);
    dc.shutdown().await;
}
