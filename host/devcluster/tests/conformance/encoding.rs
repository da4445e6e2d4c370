//! Bodies byte for byte as kube-apiserver writes them: Go's field order (`TypeMeta` first, a
//! `Status`'s `details` before its `code`), sorted map keys, custom resources sorted at every
//! level, Go's escaping and numbers, list items without their type, a final newline.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DynamicObject, PostParams};
use serde_json::{Value, json};

use super::kubectl::{kubectl, ok};
use super::{exchange, foo, install_foo, start};

#[tokio::test]
async fn a_not_found_status_is_the_real_server_s_bytes() {
    let dc = start().await;
    let (code, headers, body) = exchange(&dc, "GET", "/api/v1/namespaces/default/pods/missing", &[], "").await;
    assert_eq!(code, 404);
    assert_eq!(headers["content-type"], "application/json");
    assert_eq!(
        body,
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"pods \\\"missing\\\" not found\",\"reason\":\"NotFound\",\"details\":{\"name\":\"missing\",\"kind\":\"pods\"},\"code\":404}\n"
    );
    dc.shutdown().await;
}

/// The body the Python client's `test_create_apiservice_from_yaml_with_conflict` compares.
#[tokio::test]
async fn a_conflict_is_written_as_the_python_client_s_e2e_test_expects() {
    let dc = start().await;
    let service = json!({ "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": { "name": "v1alpha1.wardle.k8s.io" },
        "spec": { "group": "wardle.k8s.io", "version": "v1alpha1", "groupPriorityMinimum": 1000, "versionPriority": 15,
                  "service": { "name": "api", "namespace": "wardle" } } })
    .to_string();
    let path = "/apis/apiregistration.k8s.io/v1/apiservices";
    let json = [("content-type", "application/json")];
    assert_eq!(exchange(&dc, "POST", path, &json, &service).await.0, 201);
    let (code, _, body) = exchange(&dc, "POST", path, &json, &service).await;
    assert_eq!(code, 409);
    assert_eq!(
        body,
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"apiservices.apiregistration.k8s.io \\\"v1alpha1.wardle.k8s.io\\\" already exists\",\"reason\":\"AlreadyExists\",\"details\":{\"name\":\"v1alpha1.wardle.k8s.io\",\"group\":\"apiregistration.k8s.io\",\"kind\":\"apiservices\"},\"code\":409}\n"
    );
    dc.shutdown().await;
}

#[tokio::test]
async fn built_ins_come_back_in_go_struct_order_with_maps_sorted_and_html_escaped() {
    let dc = start().await;
    let sent = r#"{"data":{"b":"1","a":"<&>"},"metadata":{"namespace":"default","name":"order"},"kind":"ConfigMap","apiVersion":"v1"}"#;
    let json = [("content-type", "application/json")];
    let (code, _, created) = exchange(&dc, "POST", "/api/v1/namespaces/default/configmaps", &json, sent).await;
    assert_eq!(code, 201);
    assert!(created.starts_with("{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"order\",\"namespace\":\"default\",\"uid\":"), "{created}");
    assert!(created.ends_with(",\"data\":{\"a\":\"\\u003c\\u0026\\u003e\",\"b\":\"1\"}}\n"), "{created}");
    let cms: Api<ConfigMap> = Api::namespaced(dc.client(), "default");
    assert_eq!(cms.get("order").await.unwrap().data.unwrap()["a"], "<&>", "clients read the same value");

    let deployments: Api<Deployment> = Api::namespaced(dc.client(), "default");
    let deployment: Deployment = serde_json::from_value(json!({ "metadata": { "name": "web" }, "spec": {
        "template": { "spec": { "containers": [{ "name": "app", "image": "nginx" }] }, "metadata": { "labels": { "app": "web" } } },
        "selector": { "matchLabels": { "app": "web" } } } }))
    .unwrap();
    deployments.create(&PostParams::default(), &deployment).await.unwrap();
    let (_, _, body) = exchange(&dc, "GET", "/apis/apps/v1/namespaces/default/deployments/web", &[], "").await;
    let spec: Value = serde_json::from_str(&body).map(|d: Value| d["spec"].clone()).unwrap();
    let keys: Vec<&String> = spec.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        ["replicas", "selector", "template", "strategy", "revisionHistoryLimit", "progressDeadlineSeconds"]
    );
    let container = &spec["template"]["spec"]["containers"][0];
    let keys: Vec<&String> = container.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        ["name", "image", "resources", "terminationMessagePath", "terminationMessagePolicy", "imagePullPolicy"]
    );
    dc.shutdown().await;
}

#[tokio::test]
async fn lists_carry_no_item_types_and_an_empty_one_has_empty_items() {
    let dc = start().await;
    let (_, _, empty) = exchange(&dc, "GET", "/api/v1/namespaces/default/secrets?labelSelector=none", &[], "").await;
    assert!(
        empty.starts_with("{\"kind\":\"SecretList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":"),
        "{empty}"
    );
    assert!(empty.ends_with(",\"items\":[]}\n"), "{empty}");
    let (_, _, namespaces) = exchange(&dc, "GET", "/api/v1/namespaces", &[], "").await;
    assert!(namespaces.contains("\"items\":[{\"metadata\":{\"name\":"), "{namespaces}");
    dc.shutdown().await;
}

#[tokio::test]
async fn custom_resources_are_sorted_at_every_level_as_go_maps_are() {
    let dc = start().await;
    let foos = install_foo(&dc).await;
    let created = foo("sorted", 2);
    let sent = serde_json::to_string(&created).unwrap();
    let json = [("content-type", "application/json")];
    let path = "/apis/samplecontroller.k8s.io/v1alpha1/namespaces/default/foos";
    let (code, _, body) = exchange(&dc, "POST", path, &json, &sent).await;
    assert_eq!(code, 201, "{body}");
    assert!(
        body.starts_with(
            "{\"apiVersion\":\"samplecontroller.k8s.io/v1alpha1\",\"kind\":\"Foo\",\"metadata\":{\"creationTimestamp\":"
        ),
        "{body}"
    );
    let (_, _, list) = exchange(&dc, "GET", path, &[], "").await;
    assert!(
        list.starts_with("{\"apiVersion\":\"samplecontroller.k8s.io/v1alpha1\",\"items\":[{\"apiVersion\":"),
        "{list}"
    );
    assert!(list.contains("],\"kind\":\"FooList\",\"metadata\":{\"continue\":\"\",\"resourceVersion\":\""), "{list}");
    assert!(body.ends_with(",\"spec\":{\"deploymentName\":\"sorted\",\"replicas\":2}}\n"), "{body}");
    assert!(body.contains("\"name\":\"sorted\",\"namespace\":\"default\",\"resourceVersion\":"), "{body}");
    let got: DynamicObject = foos.get("sorted").await.unwrap();
    assert_eq!(got.data["spec"]["replicas"], 2);
    dc.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_raw_reads_end_with_a_newline_and_start_with_the_kind() {
    let dc = start().await;
    let out = ok(&kubectl(&dc, &["get", "--raw", "/api/v1/namespaces/default"]).await);
    assert!(
        out.starts_with("{\"kind\":\"Namespace\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"default\""),
        "{out}"
    );
    assert!(out.ends_with("}\n") || out.ends_with("}\n\n"), "{out:?}");
    let missing = kubectl(&dc, &["get", "configmap", "missing", "-o", "json"]).await;
    let err = String::from_utf8_lossy(&missing.stderr);
    assert!(err.contains("configmaps \"missing\" not found"), "{err}");
    dc.shutdown().await;
}
