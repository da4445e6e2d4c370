//! Admission webhooks (`ValidatingWebhookConfiguration`, `MutatingWebhookConfiguration`),
//! checked against kube-apiserver's `admission/plugin/webhook`: the `AdmissionReview` v1 each
//! is sent over HTTPS (checked with the `caBundle`), rules and selectors deciding who is
//! called, refusals and call failures as `failurePolicy` says, in upstream's words, warnings
//! passed on, JSON patches applied, and `reinvocationPolicy: IfNeeded`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use base64::Engine as _;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod};
use kube::api::{Api, DynamicObject, EvictParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kubewasm_devcluster::DevCluster;
use serde_json::{Value, json};

use super::hook_server::HookServer;
use super::kubectl::kubectl;
use super::{api_error, exchange, install_things, start};

fn configurations(dc: &DevCluster, kind: &str) -> Api<DynamicObject> {
    let plural = format!("{}s", kind.to_lowercase());
    let ar =
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("admissionregistration.k8s.io", "v1", kind), &plural);
    Api::all_with(dc.client(), &ar)
}

/// Registers a configuration of `kind` named `name` with `webhooks`.
async fn register(dc: &DevCluster, kind: &str, name: &str, webhooks: Value) {
    let config = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
        "metadata": {"name": name}, "webhooks": webhooks});
    configurations(dc, kind)
        .create(&PostParams::default(), &serde_json::from_value(config).unwrap())
        .await
        .expect("the configuration is created");
}

/// A webhook for creates and updates of ConfigMaps, called at `client`.
fn configmap_hook(name: &str, client: Value) -> Value {
    json!({"name": name, "clientConfig": client, "admissionReviewVersions": ["v1"], "sideEffects": "None",
        "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["configmaps"]}]})
}

fn configmap(name: &str, data: Value) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": data})).unwrap()
}

async fn namespace(dc: &DevCluster, name: &str, labels: Value) {
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).unwrap();
    Api::<Namespace>::all(dc.client()).create(&PostParams::default(), &ns).await.unwrap();
}

/// Refuses ConfigMaps with `data.bad` (403, as its status says), allows others with a warning.
async fn gatekeeper() -> HookServer {
    HookServer::start(|_, review| {
        let object = &review["request"]["object"];
        if object["data"].get("bad").is_some() {
            admission_answer(
                review,
                json!({"allowed": false,
                "status": {"code": 403, "reason": "Forbidden", "message": "bad is not allowed"}}),
            )
        } else {
            let name = object["metadata"]["name"].as_str().unwrap_or_default();
            admission_answer(review, json!({"allowed": true, "warnings": [format!("looked at {name}")]}))
        }
    })
    .await
}

#[tokio::test]
async fn a_validating_webhook_is_sent_the_review_and_its_refusal_fails_the_write() {
    let dc = start().await;
    let hook = gatekeeper().await;
    namespace(&dc, "hooked", json!({"webhooks": "on"})).await;
    let mut spec = configmap_hook("deny.example.com", hook.client_config("/validate"));
    spec["namespaceSelector"] = json!({"matchLabels": {"webhooks": "on"}});
    register(&dc, "ValidatingWebhookConfiguration", "gate", json!([spec])).await;
    let hooked: Api<ConfigMap> = Api::namespaced(dc.client(), "hooked");

    let err =
        api_error(hooked.create(&PostParams::default(), &configmap("bad", json!({"bad": "1"}))).await.unwrap_err());
    assert_eq!((err.code, err.reason.as_str()), (403, "Forbidden"));
    assert_eq!(err.message, r#"admission webhook "deny.example.com" denied the request: bad is not allowed"#);
    assert!(hooked.get_opt("bad").await.unwrap().is_none(), "a refused object is not stored");

    hooked.create(&PostParams::default(), &configmap("good", json!({"a": "1"}))).await.unwrap();
    let (path, review) = hook.received().last().cloned().unwrap();
    assert_eq!(path, "/validate?timeout=10s", "the deadline (timeoutSeconds, 10 by default) is in the query");
    assert_eq!(
        (review["apiVersion"].as_str(), review["kind"].as_str()),
        (Some("admission.k8s.io/v1"), Some("AdmissionReview"))
    );
    let request = &review["request"];
    assert_eq!(request["kind"], json!({"group": "", "version": "v1", "kind": "ConfigMap"}));
    assert_eq!(request["resource"], json!({"group": "", "version": "v1", "resource": "configmaps"}));
    assert_eq!(request["requestKind"], request["kind"]);
    assert_eq!(
        (request["operation"].as_str(), request["namespace"].as_str(), request["name"].as_str()),
        (Some("CREATE"), Some("hooked"), Some("good"))
    );
    assert_eq!(request["object"]["data"], json!({"a": "1"}));
    assert_eq!((&request["oldObject"], &request["dryRun"]), (&Value::Null, &json!(false)));
    assert_eq!(
        (request["options"]["kind"].as_str(), request["options"]["apiVersion"].as_str()),
        (Some("CreateOptions"), Some("meta.k8s.io/v1"))
    );
    assert!(request["userInfo"]["username"].is_string());
    assert!(request["uid"].as_str().is_some_and(|u| !u.is_empty()));

    // An update is sent with the stored object as `oldObject`.
    let mut good = hooked.get("good").await.unwrap();
    good.data = Some([("a".to_string(), "2".to_string())].into());
    hooked.replace("good", &PostParams::default(), &good).await.unwrap();
    let request = hook.received().last().cloned().unwrap().1["request"].clone();
    assert_eq!((request["operation"].as_str(), &request["oldObject"]["data"]), (Some("UPDATE"), &json!({"a": "1"})));
    assert_eq!(request["options"]["kind"], "UpdateOptions");

    // Another namespace, or a kind no rule names, is not sent.
    let before = hook.received().len();
    let default: Api<ConfigMap> = Api::namespaced(dc.client(), "default");
    default.create(&PostParams::default(), &configmap("elsewhere", json!({"bad": "1"}))).await.unwrap();
    namespace(&dc, "other", json!({})).await;
    assert_eq!(hook.received().len(), before);

    // The webhook's warnings reach the client.
    let out = kubectl(&dc, &["create", "configmap", "shown", "-n", "hooked", "--from-literal=a=1"]).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("Warning: looked at shown"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    dc.shutdown().await;
}

#[tokio::test]
async fn a_webhook_that_cannot_be_called_fails_the_write_or_is_ignored_as_its_policy_says() {
    let dc = start().await;
    let hook = gatekeeper().await;
    let base = hook.base.clone();
    let client = hook.client_config("/validate");
    drop(hook);
    let mut ignored = configmap_hook("ignored.example.com", client.clone());
    ignored["failurePolicy"] = json!("Ignore");
    register(&dc, "ValidatingWebhookConfiguration", "ignored", json!([ignored])).await;
    let default: Api<ConfigMap> = Api::namespaced(dc.client(), "default");
    default
        .create(&PostParams::default(), &configmap("passes", json!({})))
        .await
        .expect("failurePolicy: Ignore lets it through");

    // `Fail` is the default.
    register(&dc, "ValidatingWebhookConfiguration", "failing", json!([configmap_hook("failing.example.com", client)]))
        .await;
    let err = api_error(default.create(&PostParams::default(), &configmap("stopped", json!({}))).await.unwrap_err());
    let address = base.trim_start_matches("https://");
    assert_eq!((err.code, err.reason.as_str()), (500, "InternalError"));
    assert_eq!(
        err.message,
        format!(
            "Internal error occurred: failed calling webhook \"failing.example.com\": failed to call webhook: \
             Post \"{base}/validate?timeout=10s\": dial tcp {address}: connect: connection refused"
        )
    );
    assert!(default.get_opt("stopped").await.unwrap().is_none());
    dc.shutdown().await;
}

#[tokio::test]
async fn a_dry_run_is_only_sent_to_webhooks_without_side_effects() {
    let dc = start().await;
    let hook = gatekeeper().await;
    let mut unknown = configmap_hook("effects.example.com", hook.client_config("/validate"));
    unknown["sideEffects"] = json!("Unknown");
    let err = api_error(
        configurations(&dc, "ValidatingWebhookConfiguration")
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({"apiVersion": "admissionregistration.k8s.io/v1",
                    "kind": "ValidatingWebhookConfiguration", "metadata": {"name": "effects"}, "webhooks": [unknown]}))
                .unwrap(),
            )
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 422, "v1 accepts only None and NoneOnDryRun: {}", err.message);

    register(
        &dc,
        "ValidatingWebhookConfiguration",
        "gate",
        json!([configmap_hook("deny.example.com", hook.client_config("/validate"))]),
    )
    .await;
    let default: Api<ConfigMap> = Api::namespaced(dc.client(), "default");
    let dry = PostParams { dry_run: true, ..PostParams::default() };
    let err = api_error(default.create(&dry, &configmap("bad", json!({"bad": "1"}))).await.unwrap_err());
    assert_eq!(err.code, 403, "a webhook with sideEffects: None judges dry runs too");
    let request = hook.received().last().cloned().unwrap().1["request"].clone();
    assert_eq!((&request["dryRun"], &request["options"]["dryRun"]), (&json!(true), &json!(["All"])));
    dc.shutdown().await;
}

#[tokio::test]
async fn webhook_configurations_are_never_sent_to_webhooks() {
    let dc = start().await;
    let hook = gatekeeper().await;
    let everything = json!({"name": "all.example.com", "clientConfig": hook.client_config("/validate"),
        "admissionReviewVersions": ["v1"], "sideEffects": "None",
        "rules": [{"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["*"], "resources": ["*"]}]});
    register(&dc, "ValidatingWebhookConfiguration", "all", json!([everything])).await;
    register(
        &dc,
        "ValidatingWebhookConfiguration",
        "second",
        json!([configmap_hook("x.example.com", hook.client_config("/x"))]),
    )
    .await;
    assert!(hook.received().is_empty(), "a configuration cannot be held back by a webhook");
    let default: Api<ConfigMap> = Api::namespaced(dc.client(), "default");
    default.create(&PostParams::default(), &configmap("seen", json!({}))).await.unwrap();
    let paths: Vec<String> = hook.received().into_iter().map(|(p, _)| p).collect();
    assert_eq!(paths, ["/validate?timeout=10s", "/x?timeout=10s"]);
    dc.shutdown().await;
}

/// The `response` of an `AdmissionReview` (v1) to `review`: `fields` plus its uid.
pub fn admission_answer(review: &Value, fields: Value) -> Value {
    let mut response = fields;
    response["uid"] = review["request"]["uid"].clone();
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})
}

/// A JSON Patch answer (`patchType: JSONPatch`, the patch base64).
fn patch_answer(review: &Value, patch: &Value) -> Value {
    let encoded = base64::engine::general_purpose::STANDARD.encode(patch.to_string());
    admission_answer(review, json!({"allowed": true, "patchType": "JSONPatch", "patch": encoded}))
}

#[tokio::test]
async fn mutating_webhooks_patch_in_order_and_are_reinvoked_if_needed() {
    let dc = start().await;
    let calls_of_first = Arc::new(AtomicUsize::new(0));
    let counter = calls_of_first.clone();
    let hook = HookServer::start(move |path, review| {
        let labels = &review["request"]["object"]["metadata"]["labels"];
        if path.starts_with("/first") {
            counter.fetch_add(1, Ordering::SeqCst);
            // Adds `first`, and on its second call records that it saw `second`.
            if labels.get("first").is_none() {
                return patch_answer(
                    review,
                    &json!([{"op": "add", "path": "/metadata/labels", "value": {"first": "1"}}]),
                );
            }
            if labels.get("second").is_some() {
                return patch_answer(
                    review,
                    &json!([{"op": "add", "path": "/metadata/labels/saw-second", "value": "yes"}]),
                );
            }
            admission_answer(review, json!({"allowed": true}))
        } else if path.starts_with("/second") {
            patch_answer(review, &json!([{"op": "add", "path": "/metadata/labels/second", "value": "2"}]))
        } else {
            admission_answer(review, json!({"allowed": true}))
        }
    })
    .await;
    let mut first = configmap_hook("first.example.com", hook.client_config("/first"));
    first["reinvocationPolicy"] = json!("IfNeeded");
    // Configurations are called in name order, webhooks in list order.
    register(&dc, "MutatingWebhookConfiguration", "a", json!([first])).await;
    register(
        &dc,
        "MutatingWebhookConfiguration",
        "b",
        json!([configmap_hook("second.example.com", hook.client_config("/second"))]),
    )
    .await;
    register(
        &dc,
        "ValidatingWebhookConfiguration",
        "v",
        json!([configmap_hook("check.example.com", hook.client_config("/check"))]),
    )
    .await;

    let default: Api<ConfigMap> = Api::namespaced(dc.client(), "default");
    let created = default.create(&PostParams::default(), &configmap("m", json!({}))).await.unwrap();
    let labels = created.metadata.labels.clone().unwrap_or_default();
    assert_eq!(
        labels.into_iter().collect::<Vec<_>>(),
        [("first".to_string(), "1".to_string()), ("saw-second".into(), "yes".into()), ("second".into(), "2".into())]
    );
    assert_eq!(calls_of_first.load(Ordering::SeqCst), 2, "called again after the second webhook changed the object");
    let paths: Vec<String> = hook.received().into_iter().map(|(p, _)| p).collect();
    assert_eq!(paths, ["/first?timeout=10s", "/second?timeout=10s", "/first?timeout=10s", "/check?timeout=10s"]);
    let validated = hook.received().last().cloned().unwrap().1;
    assert_eq!(
        validated["request"]["object"]["metadata"]["labels"]["second"], "2",
        "validation sees the mutated object"
    );
    assert_eq!(default.get("m").await.unwrap().metadata.labels, created.metadata.labels, "stored as answered");

    // An answer asked for as metadata only is the mutated object's.
    let accept = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
    let headers = [("content-type", "application/json"), ("accept", accept)];
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "meta"}}).to_string();
    let (code, _, text) = exchange(&dc, "POST", "/api/v1/namespaces/default/configmaps", &headers, &body).await;
    let answer: Value = serde_json::from_str(&text).unwrap();
    assert_eq!((code, answer["kind"].as_str()), (201, Some("PartialObjectMetadata")), "{text}");
    assert_eq!(answer["metadata"]["labels"]["second"], "2", "{text}");
    assert!(answer.get("data").is_none(), "{text}");
    dc.shutdown().await;
}

#[tokio::test]
async fn a_patch_that_breaks_the_object_fails_the_write() {
    let dc = start().await;
    let hook = HookServer::start(|_, review| {
        patch_answer(review, &json!([{"op": "replace", "path": "/data", "value": {"n": 1}}]))
    })
    .await;
    register(
        &dc,
        "MutatingWebhookConfiguration",
        "breaker",
        json!([configmap_hook("breaker.example.com", hook.client_config("/m"))]),
    )
    .await;
    let default: Api<ConfigMap> = Api::namespaced(dc.client(), "default");
    let err = api_error(default.create(&PostParams::default(), &configmap("x", json!({}))).await.unwrap_err());
    // Upstream: the patched object fails to decode, `apierrors.NewInternalError(err)`.
    assert_eq!((err.code, err.reason.as_str()), (500, "InternalError"), "{err:?}");
    assert!(
        err.message
            .starts_with("Internal error occurred: json: cannot unmarshal number into Go struct field ConfigMap.data"),
        "{}",
        err.message
    );
    assert!(default.get_opt("x").await.unwrap().is_none());
    dc.shutdown().await;
}

#[tokio::test]
async fn a_webhook_that_does_not_answer_in_time_fails_the_write_and_holds_no_one_else_up() {
    let dc = start().await;
    // Takes connections and never answers.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = silent.local_addr().unwrap();
    let held = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((tcp, _)) = silent.accept().await {
            open.push(tcp);
        }
    });
    let hook = gatekeeper().await;
    let mut slow = configmap_hook(
        "slow.example.com",
        json!({"url": format!("https://{address}/slow"), "caBundle": hook.ca_bundle}),
    );
    slow["timeoutSeconds"] = json!(2);
    register(&dc, "ValidatingWebhookConfiguration", "slow", json!([slow])).await;

    let default: Api<ConfigMap> = Api::namespaced(dc.client(), "default");
    let write = {
        let default = default.clone();
        tokio::spawn(async move { default.create(&PostParams::default(), &configmap("waits", json!({}))).await })
    };
    // While the write waits for the webhook, the server answers others.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let listed = tokio::time::timeout(
        std::time::Duration::from_secs(1),
        Api::<Namespace>::all(dc.client()).list(&Default::default()),
    )
    .await
    .expect("a read is not held up by a webhook call")
    .unwrap();
    assert!(!listed.items.is_empty());
    assert!(!write.is_finished(), "the write still waits for the webhook");

    let err = api_error(write.await.unwrap().unwrap_err());
    assert_eq!(
        err.message,
        format!(
            "Internal error occurred: failed calling webhook \"slow.example.com\": failed to call webhook: \
             Post \"https://{address}/slow?timeout=2s\": context deadline exceeded"
        )
    );
    held.abort();
    dc.shutdown().await;
}

#[tokio::test]
async fn a_delete_is_sent_with_the_stored_object_as_old_object_and_may_not_be_patched() {
    let dc = start().await;
    let hook = HookServer::start(|path, review| {
        let old = &review["request"]["oldObject"];
        if path.starts_with("/patch") {
            return patch_answer(review, &json!([{"op": "add", "path": "/metadata/labels", "value": {"x": "y"}}]));
        }
        if old["metadata"]["labels"]["protected"] == "true" {
            return admission_answer(review, json!({"allowed": false, "status": {"message": "protected"}}));
        }
        admission_answer(review, json!({"allowed": true}))
    })
    .await;
    let deletes = |name: &str, path: &str| {
        json!({"name": name, "clientConfig": hook.client_config(path), "admissionReviewVersions": ["v1"], "sideEffects": "None",
            "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["DELETE"], "resources": ["configmaps"]}]})
    };
    register(&dc, "ValidatingWebhookConfiguration", "guard", json!([deletes("guard.example.com", "/guard")])).await;
    let default: Api<ConfigMap> = Api::namespaced(dc.client(), "default");
    let mut kept = configmap("kept", json!({"a": "1"}));
    kept.metadata.labels = Some([("protected".to_string(), "true".to_string())].into());
    default.create(&PostParams::default(), &kept).await.unwrap();
    default.create(&PostParams::default(), &configmap("gone", json!({}))).await.unwrap();
    assert!(hook.received().is_empty(), "creates are not sent to a webhook of deletes");

    let err = api_error(default.delete("kept", &Default::default()).await.unwrap_err());
    assert_eq!(
        (err.code, err.message.as_str()),
        (400, r#"admission webhook "guard.example.com" denied the request: protected"#)
    );
    assert!(default.get_opt("kept").await.unwrap().is_some());
    let request = hook.received()[0].1["request"].clone();
    assert_eq!((request["operation"].as_str(), request["name"].as_str()), (Some("DELETE"), Some("kept")));
    assert_eq!((&request["object"], &request["oldObject"]["data"]), (&Value::Null, &json!({"a": "1"})));
    assert_eq!(request["options"]["kind"], "DeleteOptions");
    default.delete("gone", &Default::default()).await.expect("allowed");

    register(&dc, "MutatingWebhookConfiguration", "patcher", json!([deletes("patcher.example.com", "/patch")])).await;
    default.create(&PostParams::default(), &configmap("patched", json!({}))).await.unwrap();
    let err = api_error(default.delete("patched", &Default::default()).await.unwrap_err());
    assert_eq!(
        (err.code, err.message.as_str()),
        (
            500,
            r#"Internal error occurred: admission webhook "patcher.example.com" attempted to modify the object, which is not supported for this operation"#
        )
    );
    assert!(default.get_opt("patched").await.unwrap().is_some());
    dc.shutdown().await;
}

#[tokio::test]
async fn match_conditions_skip_a_webhook_and_a_failing_one_forbids_the_write() {
    let dc = start().await;
    let hook = gatekeeper().await;
    let mut spec = configmap_hook("conditional.example.com", hook.client_config("/validate"));
    spec["matchConditions"] = json!([
        {"name": "not-skipped", "expression": "object.metadata.name != 'skip'"},
        {"name": "by-operation", "expression": "request.operation == 'CREATE'"},
    ]);
    register(&dc, "ValidatingWebhookConfiguration", "conditional", json!([spec])).await;
    let default: Api<ConfigMap> = Api::namespaced(dc.client(), "default");
    default
        .create(&PostParams::default(), &configmap("skip", json!({"bad": "1"})))
        .await
        .expect("not sent: a condition is false");
    assert!(hook.received().is_empty());
    let err =
        api_error(default.create(&PostParams::default(), &configmap("sent", json!({"bad": "1"}))).await.unwrap_err());
    assert_eq!(err.code, 403, "every condition true: sent and refused");
    assert_eq!(hook.received().len(), 1);

    // A condition that cannot be evaluated fails closed (failurePolicy: Fail) with a 403.
    let mut broken = configmap_hook("broken.example.com", hook.client_config("/validate"));
    broken["matchConditions"] = json!([{"name": "no-such-field", "expression": "object.spec.replicas > 1"}]);
    register(&dc, "ValidatingWebhookConfiguration", "broken", json!([broken])).await;
    let err = api_error(default.create(&PostParams::default(), &configmap("any", json!({}))).await.unwrap_err());
    assert_eq!((err.code, err.reason.as_str()), (403, "Forbidden"));
    assert!(err.message.starts_with(r#"configmaps "any" is forbidden: "#), "{}", err.message);
    dc.shutdown().await;
}

#[tokio::test]
async fn a_service_reference_leads_to_the_services_target_port_on_this_machine() {
    let dc = start().await;
    let hook = gatekeeper().await;
    // A Service without endpoints stands for a process on this machine at its target port.
    let service: k8s_openapi::api::core::v1::Service = serde_json::from_value(json!({
        "metadata": {"name": "hooks"},
        "spec": {"ports": [{"port": 443, "targetPort": hook.port()}]}}))
    .unwrap();
    Api::<k8s_openapi::api::core::v1::Service>::namespaced(dc.client(), "default")
        .create(&PostParams::default(), &service)
        .await
        .unwrap();
    let by_service = |name: &str, service: &str| {
        configmap_hook(
            name,
            json!({"service": {"namespace": "default", "name": service, "path": "/validate"}, "caBundle": hook.ca_bundle}),
        )
    };
    register(&dc, "ValidatingWebhookConfiguration", "by-service", json!([by_service("svc.example.com", "hooks")]))
        .await;
    let default: Api<ConfigMap> = Api::namespaced(dc.client(), "default");
    let err =
        api_error(default.create(&PostParams::default(), &configmap("bad", json!({"bad": "1"}))).await.unwrap_err());
    assert_eq!(err.message, r#"admission webhook "svc.example.com" denied the request: bad is not allowed"#);
    assert_eq!(hook.received()[0].0, "/validate?timeout=10s");

    // A Service that does not exist: the dial fails, as kube-apiserver's service resolver does.
    register(&dc, "ValidatingWebhookConfiguration", "missing", json!([by_service("missing.example.com", "nope")]))
        .await;
    let err = api_error(default.create(&PostParams::default(), &configmap("good", json!({}))).await.unwrap_err());
    assert_eq!(
        (err.code, err.message.as_str()),
        (
            500,
            r#"Internal error occurred: failed calling webhook "missing.example.com": failed to call webhook: Post "https://nope.default.svc:443/validate?timeout=10s": service "nope" not found"#
        )
    );
    dc.shutdown().await;
}

#[tokio::test]
async fn a_rule_for_another_version_of_a_resource_is_matched_in_that_version() {
    let dc = start().await;
    let schema = json!({"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object",
        "properties": {"a": {"type": "string"}}}}}});
    let versions = json!([{"name": "v1", "served": true, "storage": true, "schema": schema},
        {"name": "v2", "served": true, "storage": false, "schema": schema}]);
    install_things(&dc, versions, None).await;
    let hook = gatekeeper().await;
    let on_v1 = |name: &str, policy: &str| {
        json!({"name": name, "clientConfig": hook.client_config(&format!("/{policy}")), "admissionReviewVersions": ["v1"],
            "sideEffects": "None", "matchPolicy": policy,
            "rules": [{"apiGroups": ["example.com"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["things"]}]})
    };
    register(
        &dc,
        "ValidatingWebhookConfiguration",
        "things",
        json!([on_v1("exact.example.com", "Exact"), on_v1("equivalent.example.com", "Equivalent")]),
    )
    .await;
    let v2 = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("example.com", "v2", "Thing"), "things");
    let thing = json!({"apiVersion": "example.com/v2", "kind": "Thing", "metadata": {"name": "t"}, "spec": {"a": "1"}});
    Api::<DynamicObject>::namespaced_with(dc.client(), "default", &v2)
        .create(&PostParams::default(), &serde_json::from_value(thing).unwrap())
        .await
        .unwrap();
    let received = hook.received();
    assert_eq!(received.len(), 1, "only the Equivalent webhook is called for a v2 request");
    let (path, review) = &received[0];
    assert_eq!(path, "/Equivalent?timeout=10s");
    let request = &review["request"];
    assert_eq!(request["kind"], json!({"group": "example.com", "version": "v1", "kind": "Thing"}));
    assert_eq!(request["requestKind"], json!({"group": "example.com", "version": "v2", "kind": "Thing"}));
    assert_eq!(request["resource"]["version"], "v1");
    assert_eq!(request["object"]["apiVersion"], "example.com/v1", "the object in the version the rule names");
    assert_eq!(request["object"]["spec"], json!({"a": "1"}));
    dc.shutdown().await;
}

#[tokio::test]
async fn a_subresource_create_is_sent_as_a_create_of_the_subresource_and_may_be_refused() {
    let dc = start().await;
    // Refuses the eviction of the pod `kept`, allows the others.
    let hook = HookServer::start(|_, review| {
        let object = &review["request"]["object"];
        if object["metadata"]["name"] == "kept" {
            admission_answer(
                review,
                json!({"allowed": false, "status": {"code": 403, "reason": "Forbidden", "message": "kept stays"}}),
            )
        } else {
            admission_answer(review, json!({"allowed": true}))
        }
    })
    .await;
    let hook_spec = json!({"name": "evictions.example.com", "clientConfig": hook.client_config("/validate"),
        "admissionReviewVersions": ["v1"], "sideEffects": "None",
        "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods/eviction"]}]});
    register(&dc, "ValidatingWebhookConfiguration", "evictions", json!([hook_spec])).await;
    let pods: Api<Pod> = Api::namespaced(dc.client(), "default");
    for name in ["kept", "gone"] {
        let pod = json!({"metadata": {"name": name}, "spec": {"containers": [{"name": "app", "image": "busybox"}]}});
        pods.create(&PostParams::default(), &serde_json::from_value(pod).unwrap()).await.unwrap();
    }
    assert!(hook.received().is_empty(), "a create of the pod itself matches no rule for pods/eviction");

    let err = api_error(pods.evict("kept", &EvictParams::default()).await.unwrap_err());
    assert_eq!(
        (err.code, err.message.as_str()),
        (403, r#"admission webhook "evictions.example.com" denied the request: kept stays"#)
    );
    assert!(pods.get_opt("kept").await.unwrap().is_some(), "a refused eviction deletes nothing");

    pods.evict("gone", &EvictParams::default()).await.unwrap();
    assert!(pods.get_opt("gone").await.unwrap().is_none());
    let request = hook.received().last().cloned().unwrap().1["request"].clone();
    assert_eq!(
        (request["operation"].as_str(), request["subResource"].as_str(), request["name"].as_str()),
        (Some("CREATE"), Some("eviction"), Some("gone"))
    );
    assert_eq!(request["kind"], json!({"group": "policy", "version": "v1", "kind": "Eviction"}));
    assert_eq!(request["resource"], json!({"group": "", "version": "v1", "resource": "pods"}));
    assert_eq!(request["object"]["kind"], "Eviction", "{}", request["object"]);
    assert_eq!(request["oldObject"], Value::Null);
    dc.shutdown().await;
}
