//! Server-side apply: managedFields, per-manager ownership, conflicts and force, removal of
//! fields a manager stops applying, list types, and dry run.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use super::{api_error, install_foo, raw, start};

fn deployment(replicas: i64, containers: Value) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": { "name": "web", "labels": { "team": "a" } },
        "spec": { "replicas": replicas, "selector": { "matchLabels": { "app": "web" } },
            "template": { "metadata": { "labels": { "app": "web" } }, "spec": { "containers": containers } } }
    })
}

fn ssa(manager: &str) -> PatchParams {
    PatchParams::apply(manager)
}

#[tokio::test]
async fn apply_creates_and_records_the_manager_in_fields_v1() {
    let dc = start().await;
    let deployments: Api<Deployment> = Api::namespaced(dc.client(), "default");
    let containers = json!([{ "name": "nginx", "image": "nginx:1", "ports": [{ "containerPort": 80 }] }]);
    let out = deployments.patch("web", &ssa("alpha"), &Patch::Apply(deployment(2, containers))).await.unwrap();
    let managed = out.metadata.managed_fields.unwrap();
    assert_eq!(managed.len(), 1);
    assert_eq!(managed[0].manager.as_deref(), Some("alpha"));
    assert_eq!(managed[0].operation.as_deref(), Some("Apply"));
    assert_eq!(managed[0].api_version.as_deref(), Some("apps/v1"));
    assert!(managed[0].time.is_some());
    let fields = &managed[0].fields_v1.as_ref().unwrap().0;
    assert_eq!(fields["f:spec"]["f:replicas"], json!({}));
    assert_eq!(fields["f:spec"]["f:selector"], json!({}), "LabelSelector is atomic");
    let container = &fields["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"nginx\"}"];
    assert_eq!(container["."], json!({}));
    assert_eq!(container["f:image"], json!({}));
    assert_eq!(fields["f:metadata"]["f:labels"]["f:team"], json!({}));
    dc.shutdown().await;
}

#[tokio::test]
async fn a_second_manager_conflicts_unless_it_forces() {
    let dc = start().await;
    let deployments: Api<Deployment> = Api::namespaced(dc.client(), "default");
    let containers = json!([{ "name": "nginx", "image": "nginx:1" }]);
    deployments.patch("web", &ssa("alpha"), &Patch::Apply(deployment(2, containers.clone()))).await.unwrap();

    // The same value is shared ownership, not a conflict.
    deployments.patch("web", &ssa("beta"), &Patch::Apply(deployment(2, containers.clone()))).await.unwrap();

    let err = api_error(
        deployments.patch("web", &ssa("gamma"), &Patch::Apply(deployment(5, containers.clone()))).await.unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));
    assert!(err.message.starts_with("Apply failed with 2 conflicts"), "{}", err.message);
    let (_, status) = raw(
        &dc,
        "PATCH",
        "/apis/apps/v1/namespaces/default/deployments/web?fieldManager=gamma",
        "application/apply-patch+yaml",
        &deployment(5, containers.clone()).to_string(),
    )
    .await;
    let causes = status["details"]["causes"].as_array().unwrap();
    assert!(causes.iter().all(|c| c["type"] == "FieldManagerConflict" && c["field"] == ".spec.replicas"));
    assert!(causes.iter().any(|c| c["message"] == "conflict with \"alpha\""));

    let forced =
        deployments.patch("web", &ssa("gamma").force(), &Patch::Apply(deployment(5, containers))).await.unwrap();
    assert_eq!(forced.spec.unwrap().replicas, Some(5));
    let managed = forced.metadata.managed_fields.unwrap();
    let alpha = managed.iter().find(|m| m.manager.as_deref() == Some("alpha")).unwrap();
    assert!(alpha.fields_v1.as_ref().unwrap().0["f:spec"].get("f:replicas").is_none(), "force takes ownership");
    dc.shutdown().await;
}

#[tokio::test]
async fn fields_a_manager_stops_applying_are_removed_unless_owned_elsewhere() {
    let dc = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(dc.client(), "default");
    let apply = |data: Value| {
        Patch::Apply(json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": "c" }, "data": data }))
    };
    cms.patch("c", &ssa("one"), &apply(json!({ "a": "1", "b": "2", "shared": "s" }))).await.unwrap();
    cms.patch("c", &ssa("two"), &apply(json!({ "shared": "s" }))).await.unwrap();
    let out = cms.patch("c", &ssa("one"), &apply(json!({ "a": "1" }))).await.unwrap();
    let data = out.data.unwrap();
    assert_eq!(data.get("b"), None, "b is no longer applied by anyone");
    assert_eq!(data.get("shared").map(String::as_str), Some("s"), "shared is still owned by two");
    dc.shutdown().await;
}

#[tokio::test]
async fn list_entries_a_manager_stops_applying_are_removed_whole() {
    let dc = start().await;
    let services: Api<k8s_openapi::api::core::v1::Service> = Api::namespaced(dc.client(), "default");
    let apply = |ports: Value| {
        Patch::Apply(json!({ "apiVersion": "v1", "kind": "Service", "metadata": { "name": "s" },
            "spec": { "selector": { "app": "s" }, "ports": ports } }))
    };
    let ports = json!([{ "name": "a", "port": 80 }, { "name": "b", "port": 8443 }]);
    services.patch("s", &ssa("me"), &apply(ports)).await.unwrap();
    let out = services.patch("s", &ssa("me"), &apply(json!([{ "name": "c", "port": 8080 }]))).await.unwrap();
    let ports: Vec<(Option<String>, i32)> =
        out.spec.unwrap().ports.unwrap().into_iter().map(|p| (p.name, p.port)).collect();
    assert_eq!(ports, [(Some("c".to_string()), 8080)], "no husk of the dropped entries (keyed by port and protocol)");
    dc.shutdown().await;
}

#[tokio::test]
async fn containers_are_merged_by_name_across_managers() {
    let dc = start().await;
    let deployments: Api<Deployment> = Api::namespaced(dc.client(), "default");
    deployments
        .patch("web", &ssa("alpha"), &Patch::Apply(deployment(1, json!([{ "name": "app", "image": "app:1" }]))))
        .await
        .unwrap();
    let sidecar = json!({ "apiVersion": "apps/v1", "kind": "Deployment", "metadata": { "name": "web" },
        "spec": { "template": { "spec": { "containers": [{ "name": "sidecar", "image": "side:1" }] } } } });
    let out = deployments.patch("web", &ssa("beta"), &Patch::Apply(sidecar)).await.unwrap();
    let names: Vec<String> = out.spec.unwrap().template.spec.unwrap().containers.into_iter().map(|c| c.name).collect();
    assert_eq!(names, ["app", "sidecar"]);
    dc.shutdown().await;
}

#[tokio::test]
async fn apply_requires_a_field_manager_and_checks_the_type() {
    let dc = start().await;
    let body = json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": "c" } }).to_string();
    let (code, status) =
        raw(&dc, "PATCH", "/api/v1/namespaces/default/configmaps/c", "application/apply-patch+yaml", &body).await;
    // `ValidatePatchOptions`: an options error, 422 of the kind `PatchOptions.meta.k8s.io`.
    assert_eq!((code, status["reason"].as_str()), (422, Some("Invalid")));
    assert_eq!(
        status["message"],
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"
    );
    let wrong = json!({ "apiVersion": "v1", "kind": "Secret", "metadata": { "name": "c" } }).to_string();
    let (code, _) = raw(
        &dc,
        "PATCH",
        "/api/v1/namespaces/default/configmaps/c?fieldManager=m",
        "application/apply-patch+yaml",
        &wrong,
    )
    .await;
    assert_eq!(code, 400);
    let yaml = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  k: v\n";
    let (code, created) = raw(
        &dc,
        "PATCH",
        "/api/v1/namespaces/default/configmaps/c?fieldManager=m",
        "application/apply-patch+yaml",
        yaml,
    )
    .await;
    assert_eq!(code, 201);
    assert_eq!(created["data"]["k"], "v");
    dc.shutdown().await;
}

#[tokio::test]
async fn crd_list_map_keys_make_lists_associative() {
    let dc = start().await;
    let crds: Api<kube::api::DynamicObject> = Api::all_with(dc.client(), &super::crd_resource());
    let crd: kube::api::DynamicObject = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": { "name": "widgets.example.com" },
        "spec": { "group": "example.com", "scope": "Namespaced",
            "names": { "kind": "Widget", "plural": "widgets" },
            "versions": [{ "name": "v1", "served": true, "storage": true, "schema": { "openAPIV3Schema": {
                "type": "object", "properties": { "spec": { "type": "object", "properties": {
                    "items": { "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["id"],
                        "items": { "type": "object", "properties": { "id": { "type": "string" }, "v": { "type": "integer" } } } },
                    "tags": { "type": "array", "items": { "type": "string" } } } } } } } }] }
    }))
    .unwrap();
    crds.create(&PostParams::default(), &crd).await.unwrap();
    let widgets: Api<kube::api::DynamicObject> = Api::namespaced_with(
        dc.client(),
        "default",
        &kube::core::ApiResource::from_gvk_with_plural(
            &kube::core::GroupVersionKind::gvk("example.com", "v1", "Widget"),
            "widgets",
        ),
    );
    let w = |items: Value, tags: Value| {
        Patch::Apply(
            json!({ "apiVersion": "example.com/v1", "kind": "Widget", "metadata": { "name": "w" }, "spec": { "items": items, "tags": tags } }),
        )
    };
    widgets.patch("w", &ssa("one"), &w(json!([{ "id": "a", "v": 1 }]), json!(["x"]))).await.unwrap();
    let out = widgets.patch("w", &ssa("two"), &w(json!([{ "id": "b", "v": 2 }]), json!(["x"]))).await.unwrap();
    let ids: Vec<&str> =
        out.data["spec"]["items"].as_array().unwrap().iter().map(|i| i["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["a", "b"], "a list-type map merges by key");
    let err =
        api_error(widgets.patch("w", &ssa("two"), &w(json!([{ "id": "b", "v": 2 }]), json!(["y"]))).await.unwrap_err());
    assert_eq!(err.code, 409, "an atomic list is owned whole: {}", err.message);
    dc.shutdown().await;
}

#[tokio::test]
async fn dry_run_apply_and_create_change_nothing() {
    let dc = start().await;
    let foos = install_foo(&dc).await;
    let mut params = ssa("m");
    params.dry_run = true;
    let applied = foos
        .patch(
            "dry",
            &params,
            &Patch::Apply(json!({ "apiVersion": "samplecontroller.k8s.io/v1alpha1", "kind": "Foo",
        "metadata": { "name": "dry" }, "spec": { "deploymentName": "d", "replicas": 2 } })),
        )
        .await
        .unwrap();
    assert_eq!(applied.data["spec"]["replicas"], 2);
    assert!(foos.get_opt("dry").await.unwrap().is_none());
    let pp = PostParams { dry_run: true, ..PostParams::default() };
    foos.create(&pp, &super::foo("dry2", 3)).await.unwrap();
    assert!(foos.get_opt("dry2").await.unwrap().is_none());
    let err = api_error(foos.create(&pp, &super::foo("dry3", 30)).await.unwrap_err());
    assert_eq!(err.code, 422, "dry run still validates");
    dc.shutdown().await;
}

#[tokio::test]
async fn applying_status_through_the_subresource_records_its_own_manager() {
    let dc = start().await;
    let foos = install_foo(&dc).await;
    foos.create(&PostParams::default(), &super::foo("s", 2)).await.unwrap();
    let status = Patch::Apply(
        json!({ "apiVersion": "samplecontroller.k8s.io/v1alpha1", "kind": "Foo", "metadata": { "name": "s" },
        "status": { "availableReplicas": 2 }, "spec": { "replicas": 9 } }),
    );
    let out = foos.patch_status("s", &ssa("controller").force(), &status).await.unwrap();
    assert_eq!(out.data["status"]["availableReplicas"], 2);
    assert_eq!(out.data["spec"]["replicas"], 2, "spec is not applied through /status");
    let entry =
        out.metadata.managed_fields.unwrap().into_iter().find(|m| m.manager.as_deref() == Some("controller")).unwrap();
    assert_eq!(entry.subresource.as_deref(), Some("status"));
    assert_eq!(entry.fields_v1.unwrap().0, json!({ "f:status": { "f:availableReplicas": {} } }));
    dc.shutdown().await;
}

#[tokio::test]
async fn a_finalizer_added_and_dropped_by_apply_releases_a_deleted_object() {
    let dc = start().await;
    let foos = install_foo(&dc).await;
    foos.create(&PostParams::default(), &super::foo("f", 1)).await.unwrap();
    let meta = |finalizers: Value| {
        Patch::Apply(json!({ "apiVersion": "samplecontroller.k8s.io/v1alpha1", "kind": "Foo",
        "metadata": { "name": "f", "finalizers": finalizers } }))
    };
    let held = foos.patch("f", &ssa("host").force(), &meta(json!(["kubewasm.io/foo"]))).await.unwrap();
    assert_eq!(held.metadata.finalizers, Some(vec!["kubewasm.io/foo".to_string()]));
    assert_eq!(held.metadata.generation, Some(1), "finalizers are metadata");
    foos.delete("f", &kube::api::DeleteParams::default()).await.unwrap();
    assert!(foos.get("f").await.unwrap().metadata.deletion_timestamp.is_some());
    foos.patch("f", &ssa("host").force(), &meta(json!([]))).await.unwrap();
    assert!(foos.get_opt("f").await.unwrap().is_none(), "the last finalizer gone, the object goes");
    dc.shutdown().await;
}

#[tokio::test]
async fn a_forced_apply_reverts_a_hand_edit_and_takes_the_field_back() {
    let dc = start().await;
    let deployments: Api<Deployment> = Api::namespaced(dc.client(), "default");
    let desired = deployment(1, json!([{ "name": "app", "image": "app:1" }]));
    deployments.patch("web", &ssa("kubewasm.foo").force(), &Patch::Apply(desired.clone())).await.unwrap();
    let edit = json!({ "spec": { "template": { "spec": { "containers": [{ "name": "app", "image": "hacked" }] } } } });
    let edited = deployments.patch("web", &PatchParams::default(), &Patch::Strategic(edit)).await.unwrap();
    let managers: Vec<String> = edited.metadata.managed_fields.unwrap().into_iter().filter_map(|m| m.manager).collect();
    assert!(managers.iter().any(|m| m != "kubewasm.foo"), "the hand edit has its own manager: {managers:?}");
    let before = edited.metadata.resource_version.clone();
    let reverted =
        deployments.patch("web", &ssa("kubewasm.foo").force(), &Patch::Apply(desired.clone())).await.unwrap();
    assert_eq!(reverted.spec.unwrap().template.spec.unwrap().containers[0].image.as_deref(), Some("app:1"));
    assert_ne!(reverted.metadata.resource_version, before);
    let again = deployments.patch("web", &ssa("kubewasm.foo").force(), &Patch::Apply(desired)).await.unwrap();
    assert_eq!(
        again.metadata.resource_version, reverted.metadata.resource_version,
        "an identical apply writes nothing"
    );
    dc.shutdown().await;
}

#[tokio::test]
async fn an_apply_carrying_a_uid_creates_with_the_server_s_uid_and_is_refused_on_an_existing_object() {
    let dc = start().await;
    let deployments: Api<Deployment> = Api::namespaced(dc.client(), "default");
    let containers = json!([{ "name": "nginx", "image": "nginx:1" }]);
    let mut config = deployment(1, containers);
    config["metadata"]["uid"] = json!("00000000-0000-4000-8000-000000000001");

    // A create: the server assigns its own uid, and the uid is no field of the manager.
    let created = deployments.patch("web", &ssa("alpha"), &Patch::Apply(config.clone())).await.unwrap();
    let uid = created.metadata.uid.clone().unwrap();
    assert_ne!(uid, "00000000-0000-4000-8000-000000000001");
    let managed = created.metadata.managed_fields.unwrap();
    let fields = &managed[0].fields_v1.as_ref().unwrap().0;
    assert!(fields["f:metadata"].get("f:uid").is_none(), "{fields}");

    // The object exists now: the same apply changes its uid, which is immutable.
    let err = api_error(deployments.patch("web", &ssa("alpha"), &Patch::Apply(config.clone())).await.unwrap_err());
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"), "{}", err.message);
    assert_eq!(
        err.message,
        "Deployment.apps \"web\" is invalid: metadata.uid: Invalid value: \"00000000-0000-4000-8000-000000000001\": field is immutable"
    );
    assert_eq!(deployments.get("web").await.unwrap().metadata.uid.as_deref(), Some(uid.as_str()), "nothing written");

    // With the object's own uid, it is an ordinary apply.
    config["metadata"]["uid"] = json!(uid);
    deployments.patch("web", &ssa("alpha"), &Patch::Apply(config)).await.unwrap();

    // A PUT's uid stays a precondition: 409 Conflict, as before.
    let mut put = serde_json::to_value(deployments.get("web").await.unwrap()).unwrap();
    put["metadata"]["uid"] = json!("00000000-0000-4000-8000-000000000002");
    let put: Deployment = serde_json::from_value(put).unwrap();
    let err = api_error(deployments.replace("web", &PostParams::default(), &put).await.unwrap_err());
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"), "{}", err.message);
    dc.shutdown().await;
}
