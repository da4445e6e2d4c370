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

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use base64::Engine as _;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::discovery::ApiResource;
use kubewasm::webhook::{self, tls::Identity};
use serde_json::{Value, json};

use host::{Host, resource};

const MUTATING: &str = "default.admit.kubewasm.io";
const VALIDATING: &str = "validate.admit.kubewasm.io";

fn widgets(version: &str) -> ApiResource {
    resource("test.kubewasm.io", version, "Widget", "widgets")
}

fn widget(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "test.kubewasm.io/v1", "kind": "Widget",
           "metadata": {"name": name, "namespace": "default"}, "spec": spec})
}

/// The host running the `admit` fixture with `settings`, its webhook server on loopback,
/// and the webhooks registered with the cluster.
struct Admitting {
    host: Host,
    server: Option<webhook::Server>,
    identity: Identity,
    addr: SocketAddr,
}

impl Admitting {
    async fn start(settings: &str) -> Admitting {
        let host = Host::start("admit", "admit", settings).await;
        let identity = Identity::generate(&["127.0.0.1".to_string()]).expect("certificate");
        let mut admitting = Admitting { host, server: None, identity, addr: "127.0.0.1:0".parse().unwrap() };
        admitting.serve().await;
        admitting.register("Fail").await;
        admitting
    }

    /// Starts the webhook server (again, on the same port once it had one).
    async fn serve(&mut self) {
        let tls = self.identity.server_config().expect("server config");
        let metrics = self.host.runtime().metrics().clone();
        let server = webhook::serve(self.addr, tls, self.host.webhooks.clone(), metrics).await.expect("serves");
        self.addr = server.local_addr();
        self.server = Some(server);
    }

    async fn halt(&mut self) {
        if let Some(server) = self.server.take() {
            server.shutdown().await;
        }
    }

    fn client_config(&self, path: &str) -> Value {
        let ca = self.identity.ca_bundle().expect("a made identity has a CA");
        json!({"url": format!("https://{}{path}", self.addr),
               "caBundle": base64::engine::general_purpose::STANDARD.encode(ca)})
    }

    /// The webhook configurations and the CRD's conversion, pointing at the server, with
    /// `failure_policy`.
    async fn register(&self, failure_policy: &str) {
        let rules = json!([{"apiGroups": ["test.kubewasm.io"], "apiVersions": ["v1"],
                            "operations": ["CREATE", "UPDATE"], "resources": ["widgets"]}]);
        let hook = |name: &str, path: &str| {
            json!({"name": name, "clientConfig": self.client_config(path), "rules": rules,
                   "sideEffects": "None", "admissionReviewVersions": ["v1"],
                   "failurePolicy": failure_policy, "timeoutSeconds": 5})
        };
        let apply = |kind: &str, plural: &str, hook: Value| {
            let api: Api<DynamicObject> =
                Api::all_with(self.host.client.clone(), &resource("admissionregistration.k8s.io", "v1", kind, plural));
            let object = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
                                "metadata": {"name": "admit"}, "webhooks": [hook]});
            async move {
                api.patch("admit", &PatchParams::apply("admission-test").force(), &Patch::Apply(object))
                    .await
                    .expect("webhook configuration")
            }
        };
        apply("MutatingWebhookConfiguration", "mutatingwebhookconfigurations", hook(MUTATING, "/default/admit")).await;
        apply("ValidatingWebhookConfiguration", "validatingwebhookconfigurations", hook(VALIDATING, "/validate/admit"))
            .await;
        let crds: Api<DynamicObject> = Api::all_with(
            self.host.client.clone(),
            &resource("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions"),
        );
        let conversion = json!({"spec": {"conversion": {"strategy": "Webhook", "webhook": {
            "conversionReviewVersions": ["v1"], "clientConfig": self.client_config("/convert/admit")}}}});
        crds.patch("widgets.test.kubewasm.io", &PatchParams::default(), &Patch::Merge(conversion))
            .await
            .expect("conversion webhook");
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
        format!("admission webhook \"{VALIDATING}\" denied the request: widgets named forbidden-* are not allowed")
    );

    let invalid = admitting.refused(widget("big", json!({"replicas": 20}))).await;
    assert_eq!((invalid.code, invalid.reason.as_str()), (422, "Invalid"), "{invalid:?}");
    assert_eq!(
        invalid.message,
        format!(
            "admission webhook \"{VALIDATING}\" denied the request: Widget.test.kubewasm.io \"big\" is invalid: \
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
            "admission webhook \"{VALIDATING}\" denied the request: plugin admit exceeded its deadline of 300ms in validate"
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
    admitting.halt().await;
    let refused = admitting.refused(widget("while-down", json!({}))).await;
    assert_eq!(refused.code, 500, "{refused:?}");
    assert!(
        refused.message.starts_with(&format!("Internal error occurred: failed calling webhook \"{MUTATING}\": ")),
        "{}",
        refused.message
    );
    assert!(refused.message.contains("connection refused"), "{}", refused.message);

    admitting.register("Ignore").await;
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
    assert!(
        refused.message.ends_with("spec.replicas: Invalid value: 5: must be no more than 3"),
        "{}",
        refused.message
    );
    // New settings swap in as much at once.
    admitting.host.settings("admit", "[config]\nmax-replicas = 6\n").await;
    admitting.create(widget("five-again", json!({"replicas": 5}))).await.expect("5 of at most 6");
    let refused = admitting.refused(widget("seven", json!({"replicas": 7}))).await;
    assert!(
        refused.message.ends_with("spec.replicas: Invalid value: 7: must be no more than 6"),
        "{}",
        refused.message
    );
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
