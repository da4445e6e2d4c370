//! Admission webhooks (`ValidatingWebhookConfiguration`, `MutatingWebhookConfiguration`),
//! checked against kube-apiserver's `admission/plugin/webhook`: the `AdmissionReview` v1 each
//! is sent over HTTPS (checked with the `caBundle`), rules and selectors deciding who is
//! called, refusals and call failures as `failurePolicy` says, in upstream's words, warnings
//! passed on, JSON patches applied, and `reinvocationPolicy: IfNeeded`.

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kubewasm_devcluster::DevCluster;
use serde_json::{Value, json};

use super::hook_server::HookServer;
use super::kubectl::kubectl;
use super::start;

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

fn api_error(err: kube::Error) -> Box<kube::core::Status> {
    match err {
        kube::Error::Api(status) => status,
        other => panic!("an API error, not {other}"),
    }
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
