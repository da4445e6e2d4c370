//! A plugin's admission and conversion webhooks, end to end: the host serves them over
//! HTTPS, the embedded API server calls them as kube-apiserver does (webhook
//! configurations and the CRD's `conversion.webhook`, trusted by their `caBundle`), and
//! clients see the plugin's verdicts in what their writes return.
//!
//! The plugin is the `admit` fixture: it defaults `spec.replicas` and `spec.color`,
//! refuses `forbidden-*` names (403) and more replicas than its config allows (422, naming
//! the field), loops in `validate` when told to, and converts `spec.size` between v1 and v2.

#[path = "../support/host.rs"]
#[allow(dead_code)] // shared with the other end-to-end tests, which use all of it
mod host;

use std::time::{Duration, Instant};

use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::discovery::ApiResource;
use kubewasm::webhook::{self, WebhookOptions, tls::Identity};
use serde_json::{Value, json};

use host::{Host, eventually, resource};

/// The name the API server quotes the plugin's webhooks by.
const WEBHOOK: &str = "admit.kubewasm.io";

fn widgets(version: &str) -> ApiResource {
    resource("test.kubewasm.io", version, "Widget", "widgets")
}

fn widget(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "test.kubewasm.io/v1", "kind": "Widget",
           "metadata": {"name": name, "namespace": "default"}, "spec": spec})
}

/// The host running the `admit` fixture with `settings`, serving and registering its
/// webhooks on loopback as `kubewasm dev` does.
struct Admitting {
    host: Host,
    following: Option<webhook::Following>,
    options: WebhookOptions,
}

/// Serving on a free loopback port, registered as `kubewasm dev` registers.
fn loopback() -> WebhookOptions {
    WebhookOptions {
        listen: "127.0.0.1:0".parse().expect("address"),
        identity: Identity::generate(&["127.0.0.1".to_string()]).expect("certificate"),
        endpoint: None,
        name: "kubewasm".into(),
    }
}

impl Admitting {
    async fn start(settings: &str) -> Admitting {
        let host = Host::start("admit", "admit", settings).await;
        let mut admitting = Admitting { host, following: None, options: loopback() };
        admitting.serve().await;
        admitting
    }

    /// Starts serving and registering (again, on the same port once it had one).
    async fn serve(&mut self) {
        let metrics = self.host.runtime().metrics().clone();
        let following =
            webhook::follow(self.host.client.clone(), self.options.clone(), self.host.webhooks.clone(), metrics)
                .await
                .expect("serves");
        self.options.listen = following.local_addr().expect("the plugin admits: served at once");
        self.following = Some(following);
    }

    /// Stops the webhook server; the registration stays, as when the host is down.
    async fn halt(&mut self) {
        if let Some(following) = self.following.take() {
            following.stop().await;
        }
    }

    /// The failure policy the validating webhook is registered with.
    async fn registered_policy(&self) -> Option<String> {
        let api: Api<DynamicObject> = Api::all_with(
            self.host.client.clone(),
            &resource(
                "admissionregistration.k8s.io",
                "v1",
                "ValidatingWebhookConfiguration",
                "validatingwebhookconfigurations",
            ),
        );
        let config = api.get_opt("kubewasm").await.expect("get")?;
        config.data["webhooks"][0]["failurePolicy"].as_str().map(str::to_string)
    }

    fn api(&self, version: &str) -> Api<DynamicObject> {
        self.host.api(&widgets(version), "default")
    }

    async fn create(&self, object: Value) -> Result<DynamicObject, kube::Error> {
        let object: DynamicObject = serde_json::from_value(object).expect("object JSON");
        self.api("v1").create(&PostParams::default(), &object).await
    }

    /// Creating `object` is refused: the API server's Status.
    async fn refused(&self, object: Value) -> kube::core::Status {
        match self.create(object).await {
            Err(kube::Error::Api(status)) => *status,
            other => panic!("expected the write refused, got {other:?}"),
        }
    }

    async fn stop(mut self) {
        self.halt().await;
        self.host.stop().await;
    }
}

/// `status` refuses `replicas` for being over `limit`, naming the field.
fn assert_over_the_limit(status: &kube::core::Status, replicas: u32, limit: &str) {
    let expected = format!("spec.replicas: Invalid value: {replicas}: must be no more than {limit}");
    assert!(status.message.ends_with(&expected), "{}", status.message);
}

fn spec(object: &DynamicObject) -> Value {
    object.data["spec"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_the_plugin_denies_is_refused_with_its_message() {
    let admitting = Admitting::start("").await;

    let forbidden = admitting.refused(widget("forbidden-one", json!({}))).await;
    assert_eq!(forbidden.code, 403, "{forbidden:?}");
    assert_eq!(forbidden.reason, "Forbidden");
    assert_eq!(
        forbidden.message,
        format!("admission webhook \"{WEBHOOK}\" denied the request: widgets named forbidden-* are not allowed")
    );

    let invalid = admitting.refused(widget("big", json!({"replicas": 20}))).await;
    assert_eq!((invalid.code, invalid.reason.as_str()), (422, "Invalid"), "{invalid:?}");
    assert_eq!(
        invalid.message,
        format!(
            "admission webhook \"{WEBHOOK}\" denied the request: Widget.test.kubewasm.io \"big\" is invalid: \
             spec.replicas: Invalid value: 20: must be no more than 10"
        )
    );
    let causes = invalid.details.expect("details").causes;
    assert_eq!(causes.len(), 1);
    assert_eq!(
        (causes[0].field.as_str(), causes[0].reason.as_str(), causes[0].message.as_str()),
        ("spec.replicas", "FieldValueInvalid", "Invalid value: 20: must be no more than 10")
    );
    assert!(admitting.api("v1").get_opt("big").await.expect("get").is_none(), "nothing stored");
    let denied =
        admitting.host.metric("kubewasm_webhook_requests_total", &[("plugin", "admit"), ("verdict", "denied")]);
    assert_eq!(denied, 2.0, "both denials counted");
    admitting.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_defaulted_object_comes_back_with_its_defaults() {
    let admitting = Admitting::start("").await;
    let created = admitting.create(widget("plain", json!({"size": "large"}))).await.expect("create");
    assert_eq!(spec(&created), json!({"size": "large", "replicas": 1, "color": "blue"}));
    let kept = admitting.create(widget("red", json!({"replicas": 3, "color": "red"}))).await.expect("create");
    assert_eq!(spec(&kept), json!({"replicas": 3, "color": "red"}), "what the user set stays");
    let stored = admitting.api("v1").get("plain").await.expect("get");
    assert_eq!(spec(&stored), spec(&created), "stored as defaulted");
    let labels = [("plugin", "admit"), ("webhook", "default"), ("verdict", "mutated")];
    assert_eq!(admitting.host.metric("kubewasm_webhook_requests_total", &labels), 1.0);
    admitting.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_that_loops_in_validate_is_cut_at_its_deadline() {
    let mut admitting = Admitting::start("[limits]\ndeadline-ms = 300\n\n[config]\nmode = \"loop\"\n").await;
    let started = Instant::now();
    let refused = admitting.refused(widget("looped", json!({}))).await;
    assert!(started.elapsed() < Duration::from_secs(4), "cut at the deadline, not the webhook's timeout");
    assert_eq!(refused.code, 500, "{refused:?}");
    assert_eq!(
        refused.message,
        format!(
            "admission webhook \"{WEBHOOK}\" denied the request: plugin admit exceeded its deadline of 300ms in validate"
        )
    );
    let errors = [("plugin", "admit"), ("webhook", "validate"), ("verdict", "error")];
    assert_eq!(admitting.host.metric("kubewasm_webhook_requests_total", &errors), 1.0);

    let ignore =
        "[limits]\ndeadline-ms = 300\n\n[webhooks]\nfailure-policy = \"Ignore\"\n\n[config]\nmode = \"loop\"\n";
    admitting.host.settings("admit", ignore).await;
    let created = admitting.create(widget("looped", json!({}))).await.expect("let through under Ignore");
    assert_eq!(spec(&created)["replicas"], 1, "defaulting still ran");
    admitting.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_host_down_refuses_writes_under_fail_and_lets_them_through_under_ignore() {
    let mut admitting = Admitting::start("").await;
    assert_eq!(admitting.registered_policy().await.as_deref(), Some("Fail"));
    admitting.halt().await;
    let refused = admitting.refused(widget("while-down", json!({}))).await;
    assert_eq!(refused.code, 500, "{refused:?}");
    assert!(
        refused.message.starts_with(&format!("Internal error occurred: failed calling webhook \"{WEBHOOK}\": ")),
        "{}",
        refused.message
    );
    assert!(refused.message.contains("connection refused"), "{}", refused.message);

    admitting.serve().await;
    admitting.host.settings("admit", "[webhooks]\nfailure-policy = \"Ignore\"\n").await;
    eventually("failurePolicy Ignore registered", || async {
        (admitting.registered_policy().await.as_deref() == Some("Ignore")).then_some(())
    })
    .await;
    admitting.halt().await;
    let created = admitting.create(widget("while-down", json!({"size": "small"}))).await.expect("let through");
    assert_eq!(spec(&created), json!({"size": "small"}), "stored as written: no webhook answered");

    admitting.serve().await;
    let created = admitting.create(widget("back-up", json!({}))).await.expect("create");
    assert_eq!(spec(&created)["color"], "blue", "the host serves again on the same address");
    admitting.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_swap_changes_the_verdict_at_once() {
    let mut admitting = Admitting::start("").await;
    admitting.create(widget("five", json!({"replicas": 5}))).await.expect("5 of at most 10");
    // The next version allows at most 3. No waiting: the next call finds it.
    admitting.host.replace("admit-strict", "admit").await;
    let refused = admitting.refused(widget("five-again", json!({"replicas": 5}))).await;
    assert_over_the_limit(&refused, 5, "3");
    // New settings swap in as much at once.
    admitting.host.settings("admit", "[config]\nmax-replicas = 6\n").await;
    admitting.create(widget("five-again", json!({"replicas": 5}))).await.expect("5 of at most 6");
    let refused = admitting.refused(widget("seven", json!({"replicas": 7}))).await;
    assert_over_the_limit(&refused, 7, "6");
    admitting.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plugin_gets_its_config_with_secret_references_resolved() {
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "limits", "namespace": "default"},
                        "stringData": {"max": "2"}});
    let settings = "[config]\nmax-replicas = { secretKeyRef = { name = \"limits\", key = \"max\" } }\n";
    let mut host = Host::stopped("admit", "admit", settings).await;
    host.create(&resource("", "v1", "Secret", "secrets"), secret).await;
    host.run().await;
    let mut admitting = Admitting { host, following: None, options: loopback() };
    admitting.serve().await;
    let refused = eventually("the Secret's value in validate's config", || async {
        match admitting.create(widget("three", json!({"replicas": 3}))).await {
            Err(kube::Error::Api(status)) if status.code == 422 => Some(*status),
            _ => None,
        }
    })
    .await;
    // 3 is refused: the limit is the Secret's 2, not the plugin's default of 10. The value
    // is a Secret's: the host masks it in what the plugin says, denials included.
    assert_over_the_limit(&refused, 3, "[secret]");
    admitting.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_written_as_v1_read_as_v2_and_back() {
    let admitting = Admitting::start("").await;
    let v1 = admitting.create(widget("sized", json!({"size": "large"}))).await.expect("create");
    let v2 = admitting.api("v2").get("sized").await.expect("read as v2");
    assert_eq!(v2.types.as_ref().map(|t| t.api_version.as_str()), Some("test.kubewasm.io/v2"));
    assert_eq!(spec(&v2), json!({"size": {"name": "large"}, "replicas": 1, "color": "blue"}));
    assert_eq!(v2.metadata.uid, v1.metadata.uid);

    let patch = json!({"spec": {"size": {"name": "small"}}});
    let written =
        admitting.api("v2").patch("sized", &PatchParams::default(), &Patch::Merge(patch)).await.expect("write as v2");
    assert_eq!(spec(&written)["size"], json!({"name": "small"}));
    let back = admitting.api("v1").get("sized").await.expect("read as v1");
    assert_eq!(spec(&back), json!({"size": "small", "replicas": 1, "color": "blue"}), "back in v1, nothing lost");
    let labels = [("plugin", "admit"), ("webhook", "convert"), ("verdict", "allowed")];
    assert!(admitting.host.metric("kubewasm_webhook_requests_total", &labels) >= 2.0);
    admitting.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_starts_when_a_plugin_that_admits_is_loaded() {
    let mut host = Host::start("admit", "admit", "enabled = false\n").await;
    let metrics = host.runtime().metrics().clone();
    let following =
        webhook::follow(host.client.clone(), loopback(), host.webhooks.clone(), metrics).await.expect("follows");
    assert_eq!(following.local_addr(), None, "no plugin admits: nothing served");

    host.settings("admit", "").await;
    let configurations: Api<DynamicObject> = Api::all_with(
        host.client.clone(),
        &resource(
            "admissionregistration.k8s.io",
            "v1",
            "MutatingWebhookConfiguration",
            "mutatingwebhookconfigurations",
        ),
    );
    eventually("the plugin's webhooks registered", || async { configurations.get_opt("kubewasm").await.expect("get") })
        .await;
    let object: DynamicObject = serde_json::from_value(widget("late", json!({}))).expect("object JSON");
    let created = host.api(&widgets("v1"), "default").create(&PostParams::default(), &object).await.expect("create");
    assert_eq!(spec(&created)["color"], "blue", "defaulted by the server started on the plugin's load");
    following.stop().await;
    host.stop().await;
}
