//! CustomResourceDefinitions: registration (Established), openAPIV3Schema validation with
//! field paths, pruning, status subresource, generation, and removal with the CRD.

use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::json;

use super::{api_error, crd_resource, foo, install_foo, start};

#[tokio::test]
async fn a_created_crd_is_established_and_served_at_once() {
    let dc = start().await;
    let foos = install_foo(&dc).await;
    let crds: Api<DynamicObject> = Api::all_with(dc.client(), &crd_resource());
    let crd = crds.get("foos.samplecontroller.k8s.io").await.unwrap();
    let conditions = crd.data["status"]["conditions"].as_array().unwrap();
    for kind in ["Established", "NamesAccepted"] {
        assert!(conditions.iter().any(|c| c["type"] == kind && c["status"] == "True"), "{kind}");
    }
    assert_eq!(crd.data["status"]["acceptedNames"]["kind"], "Foo");
    let created = foos.create(&PostParams::default(), &foo("example-foo", 1)).await.unwrap();
    assert_eq!(created.metadata.generation, Some(1));
    dc.shutdown().await;
}

#[tokio::test]
async fn replicas_above_the_maximum_are_refused_with_the_field_path() {
    let dc = start().await;
    let foos = install_foo(&dc).await;
    let err = api_error(foos.create(&PostParams::default(), &foo("too-many", 11)).await.unwrap_err());
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        err.message,
        "Foo.samplecontroller.k8s.io \"too-many\" is invalid: spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10"
    );
    let (_, status) = super::raw(
        &dc,
        "POST",
        "/apis/samplecontroller.k8s.io/v1alpha1/namespaces/default/foos",
        "application/json",
        &serde_json::to_string(&foo("too-many", 11)).unwrap(),
    )
    .await;
    assert_eq!(status["details"]["causes"][0]["field"], "spec.replicas");
    assert_eq!(status["details"]["causes"][0]["reason"], "FieldValueInvalid");
    assert_eq!(status["details"]["kind"], "Foo");
    assert_eq!(status["details"]["group"], "samplecontroller.k8s.io");

    let err = api_error(foos.create(&PostParams::default(), &foo("zero", 0)).await.unwrap_err());
    assert!(err.message.contains("should be greater than or equal to 1"), "{}", err.message);
    let wrong_type: DynamicObject =
        serde_json::from_value(json!({ "apiVersion": "samplecontroller.k8s.io/v1alpha1", "kind": "Foo",
        "metadata": { "name": "t" }, "spec": { "replicas": "three" } }))
        .unwrap();
    let err = api_error(foos.create(&PostParams::default(), &wrong_type).await.unwrap_err());
    assert!(err.message.contains("spec.replicas in body must be of type integer"), "{}", err.message);
    foos.create(&PostParams::default(), &foo("ok", 3)).await.unwrap();
    let err = api_error(
        foos.patch("ok", &PatchParams::default(), &Patch::Merge(json!({ "spec": { "replicas": 11 } })))
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 422, "updates are validated too");
    dc.shutdown().await;
}

#[tokio::test]
async fn schema_keywords_required_enum_pattern_are_enforced() {
    let dc = start().await;
    let crds: Api<DynamicObject> = Api::all_with(dc.client(), &crd_resource());
    let crd: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": { "name": "gadgets.example.com" },
        "spec": { "group": "example.com", "scope": "Cluster", "names": { "kind": "Gadget", "plural": "gadgets", "shortNames": ["gd"] },
            "versions": [{ "name": "v1", "served": true, "storage": true, "schema": { "openAPIV3Schema": {
                "type": "object", "properties": { "spec": { "type": "object", "required": ["mode"], "properties": {
                    "mode": { "type": "string", "enum": ["fast", "slow"] },
                    "code": { "type": "string", "pattern": "^[A-Z]{3}$" },
                    "size": { "type": "integer", "default": 5 },
                    "extra": { "type": "object", "x-kubernetes-preserve-unknown-fields": true } } } } } } }] }
    }))
    .unwrap();
    crds.create(&PostParams::default(), &crd).await.unwrap();
    let gadgets: Api<DynamicObject> = Api::all_with(
        dc.client(),
        &kube::core::ApiResource::from_gvk_with_plural(
            &kube::core::GroupVersionKind::gvk("example.com", "v1", "Gadget"),
            "gadgets",
        ),
    );
    let make = |spec: serde_json::Value| -> DynamicObject {
        serde_json::from_value(
            json!({ "apiVersion": "example.com/v1", "kind": "Gadget", "metadata": { "name": "g" }, "spec": spec }),
        )
        .unwrap()
    };
    let err = api_error(gadgets.create(&PostParams::default(), &make(json!({ "code": "abc" }))).await.unwrap_err());
    assert!(err.message.contains("spec.mode: Required value"), "{}", err.message);
    assert!(err.message.contains("spec.code in body should match '^[A-Z]{3}$'"), "{}", err.message);
    let err = api_error(gadgets.create(&PostParams::default(), &make(json!({ "mode": "medium" }))).await.unwrap_err());
    assert!(
        err.message.contains("spec.mode: Unsupported value: \"medium\": supported values: \"fast\", \"slow\""),
        "{}",
        err.message
    );
    let ok = gadgets
        .create(&PostParams::default(), &make(json!({ "mode": "fast", "unknown": 1, "extra": { "kept": true } })))
        .await
        .unwrap();
    assert_eq!(ok.data["spec"].get("unknown"), None, "unknown fields are pruned");
    assert_eq!(ok.data["spec"]["extra"]["kept"], true, "preserve-unknown-fields keeps them");
    assert_eq!(ok.data["spec"]["size"], 5, "defaults are applied");
    dc.shutdown().await;
}

#[tokio::test]
async fn status_subresource_is_separate_and_generation_tracks_spec() {
    let dc = start().await;
    let foos = install_foo(&dc).await;
    let mut with_status = foo("s", 1);
    with_status.data["status"] = json!({ "availableReplicas": 9 });
    let created = foos.create(&PostParams::default(), &with_status).await.unwrap();
    assert!(created.data.get("status").is_none(), "status is dropped on create");

    let status = foos
        .patch_status(
            "s",
            &PatchParams::default(),
            &Patch::Merge(json!({ "status": { "availableReplicas": 1 }, "spec": { "replicas": 5 } })),
        )
        .await
        .unwrap();
    assert_eq!(status.data["status"]["availableReplicas"], 1);
    assert_eq!(status.data["spec"]["replicas"], 1, "the status subresource ignores spec");
    assert_eq!(status.metadata.generation, Some(1));

    let main = foos
        .patch(
            "s",
            &PatchParams::default(),
            &Patch::Merge(json!({ "status": { "availableReplicas": 7 }, "spec": { "replicas": 2 } })),
        )
        .await
        .unwrap();
    assert_eq!(main.data["status"]["availableReplicas"], 1, "the main resource ignores status");
    assert_eq!(main.metadata.generation, Some(2));
    let labels = foos
        .patch("s", &PatchParams::default(), &Patch::Merge(json!({ "metadata": { "labels": { "a": "b" } } })))
        .await
        .unwrap();
    assert_eq!(labels.metadata.generation, Some(2), "metadata changes keep the generation");
    dc.shutdown().await;
}

#[tokio::test]
async fn deleting_a_crd_removes_its_objects() {
    let dc = start().await;
    let foos = install_foo(&dc).await;
    foos.create(&PostParams::default(), &foo("gone", 1)).await.unwrap();
    let crds: Api<DynamicObject> = Api::all_with(dc.client(), &crd_resource());
    let pending = crds.delete("foos.samplecontroller.k8s.io", &DeleteParams::default()).await.unwrap().left().unwrap();
    assert!(pending.metadata.deletion_timestamp.is_some(), "the CRD waits for its cleanup finalizer");
    assert!(
        super::eventually(|| async { crds.get_opt("foos.samplecontroller.k8s.io").await.unwrap().is_none() }).await
    );
    assert_eq!(api_error(foos.get("gone").await.unwrap_err()).code, 404);
    install_foo(&dc).await;
    assert!(foos.get_opt("gone").await.unwrap().is_none(), "a re-created CRD starts empty");
    dc.shutdown().await;
}

#[tokio::test]
async fn a_crd_deletion_waits_for_custom_resource_finalizers() {
    let dc = start().await;
    let foos = install_foo(&dc).await;
    let mut held = foo("held", 1);
    held.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    foos.create(&PostParams::default(), &held).await.unwrap();
    let crds: Api<DynamicObject> = Api::all_with(dc.client(), &crd_resource());
    crds.delete("foos.samplecontroller.k8s.io", &DeleteParams::default()).await.unwrap();
    assert!(
        super::eventually(|| async { foos.get("held").await.unwrap().metadata.deletion_timestamp.is_some() }).await
    );
    let err = api_error(foos.create(&PostParams::default(), &foo("new", 1)).await.unwrap_err());
    assert_eq!(err.code, 405, "no new custom resources while the CRD terminates");
    assert!(crds.get_opt("foos.samplecontroller.k8s.io").await.unwrap().is_some());
    foos.patch("held", &PatchParams::default(), &Patch::Merge(json!({ "metadata": { "finalizers": null } })))
        .await
        .unwrap();
    assert!(
        super::eventually(|| async { crds.get_opt("foos.samplecontroller.k8s.io").await.unwrap().is_none() }).await
    );
    dc.shutdown().await;
}

#[tokio::test]
async fn an_invalid_crd_is_refused() {
    let dc = start().await;
    let crds: Api<DynamicObject> = Api::all_with(dc.client(), &crd_resource());
    let crd: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": { "name": "wrong.example.com" },
        "spec": { "group": "example.com", "scope": "Namespaced", "names": { "kind": "Thing", "plural": "things" },
            "versions": [{ "name": "v1", "served": true, "storage": true }] }
    }))
    .unwrap();
    let err = api_error(crds.create(&PostParams::default(), &crd).await.unwrap_err());
    assert_eq!(err.code, 422);
    assert!(err.message.contains("metadata.name"), "{}", err.message);
    dc.shutdown().await;
}

#[tokio::test]
async fn strict_field_validation_refuses_unknown_fields_that_are_otherwise_pruned() {
    let dc = start().await;
    install_foo(&dc).await;
    let body = json!({ "apiVersion": "samplecontroller.k8s.io/v1alpha1", "kind": "Foo", "metadata": { "name": "x" },
        "spec": { "deploymentName": "x", "replica": 2 } })
    .to_string();
    let path = "/apis/samplecontroller.k8s.io/v1alpha1/namespaces/default/foos";
    let (code, status) =
        super::raw(&dc, "POST", &format!("{path}?fieldValidation=Strict"), "application/json", &body).await;
    assert_eq!((code, status["reason"].as_str()), (400, Some("BadRequest")));
    assert_eq!(
        status["message"],
        "Foo in version \"v1alpha1\" cannot be handled as a Foo: strict decoding error: unknown field \"spec.replica\""
    );
    let (code, created) = super::raw(&dc, "POST", path, "application/json", &body).await;
    assert_eq!(code, 201);
    assert_eq!(created["spec"], json!({ "deploymentName": "x" }));
    dc.shutdown().await;
}
