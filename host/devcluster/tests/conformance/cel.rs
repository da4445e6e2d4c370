//! CEL: a CRD's `x-kubernetes-validations` rules (messages, reasons, field paths, transition
//! rules, the CRD refused for a rule that does not compile, a CRD as kube-rs derives it), and
//! `ValidatingAdmissionPolicies` with their bindings, through the `kube` client and kubectl.

use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{CustomResource, CustomResourceExt, KubeSchema};
use kubewasm_devcluster::DevCluster;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::kubectl::kubectl;
use super::{api_error, crd_resource, start};

fn widget_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("example.com", "v1", "Widget"), "widgets")
}

/// A `Widget` CRD whose `spec` carries `rules`, and whose root carries `root_rules`.
fn widget_crd(rules: Value, root_rules: Value) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                "type": "object", "x-kubernetes-validations": root_rules,
                "properties": {"spec": {"type": "object", "x-kubernetes-validations": rules, "properties": {
                    "replicas": {"type": "integer"}, "maxReplicas": {"type": "integer"},
                    "name": {"type": "string", "x-kubernetes-validations": [
                        {"rule": "self == oldSelf", "message": "name is immutable"}]},
                    "mode": {"type": "string"}}}}}}}]},
    })
}

async fn install(dc: &DevCluster, crd: Value) -> Api<DynamicObject> {
    let crds: Api<DynamicObject> = Api::all_with(dc.client(), &crd_resource());
    let crd: DynamicObject = serde_json::from_value(crd).expect("a CRD");
    crds.create(&PostParams::default(), &crd).await.expect("the CRD is created");
    Api::namespaced_with(dc.client(), "default", &widget_resource())
}

fn widget(name: &str, spec: Value) -> DynamicObject {
    serde_json::from_value(
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}, "spec": spec}),
    )
    .expect("a Widget")
}

fn replicas_rule() -> Value {
    json!([{"rule": "self.replicas <= self.maxReplicas", "message": "replicas must be <= maxReplicas"},
        {"rule": "!has(self.mode) || self.mode != 'off'", "reason": "FieldValueForbidden",
            "messageExpression": "'mode ' + self.mode + ' is not allowed'"}])
}

#[tokio::test]
async fn a_rule_that_fails_refuses_the_object_with_its_message() {
    let dc = start().await;
    let widgets = install(&dc, widget_crd(replicas_rule(), json!([]))).await;
    let err = widgets
        .create(&PostParams::default(), &widget("w", json!({"replicas": 5, "maxReplicas": 3})))
        .await
        .unwrap_err();
    let status = api_error(err);
    assert_eq!(status.code, 422);
    assert_eq!(
        status.message,
        "Widget.example.com \"w\" is invalid: spec: Invalid value: \"object\": replicas must be <= maxReplicas"
    );
    let cause = &status.details.unwrap().causes[0];
    assert_eq!((cause.reason.as_str(), cause.field.as_str()), ("FieldValueInvalid", "spec"));

    let err = widgets
        .create(&PostParams::default(), &widget("w", json!({"replicas": 1, "maxReplicas": 3, "mode": "off"})))
        .await
        .unwrap_err();
    assert_eq!(api_error(err).message, "Widget.example.com \"w\" is invalid: spec: Forbidden: mode off is not allowed");
    widgets
        .create(&PostParams::default(), &widget("w", json!({"replicas": 1, "maxReplicas": 3})))
        .await
        .expect("a valid Widget");
    dc.shutdown().await;
}

#[tokio::test]
async fn a_root_rule_reports_the_nil_path_and_the_default_message() {
    let dc = start().await;
    let widgets = install(&dc, widget_crd(json!([]), json!([{"rule": "has(self.spec)"}]))).await;
    let obj: DynamicObject =
        serde_json::from_value(json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}))
            .unwrap();
    let status = api_error(widgets.create(&PostParams::default(), &obj).await.unwrap_err());
    assert_eq!(
        status.message,
        "Widget.example.com \"w\" is invalid: <nil>: Invalid value: \"object\": failed rule: has(self.spec)"
    );
    assert_eq!(status.details.unwrap().causes[0].field, "<nil>");
    dc.shutdown().await;
}

#[tokio::test]
async fn a_transition_rule_keeps_a_field_immutable() {
    let dc = start().await;
    let widgets = install(&dc, widget_crd(json!([]), json!([]))).await;
    widgets.create(&PostParams::default(), &widget("w", json!({"name": "a"}))).await.expect("created: no old value");
    let patch = json!({"spec": {"name": "b"}});
    let status = api_error(widgets.patch("w", &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap_err());
    assert_eq!(
        status.message,
        "Widget.example.com \"w\" is invalid: spec.name: Invalid value: \"string\": name is immutable"
    );
    let patch = json!({"spec": {"name": "a", "replicas": 2}});
    widgets.patch("w", &PatchParams::default(), &Patch::Merge(&patch)).await.expect("other fields change");
    dc.shutdown().await;
}

#[tokio::test]
async fn a_schema_error_keeps_the_rules_from_running() {
    let dc = start().await;
    let widgets = install(&dc, widget_crd(replicas_rule(), json!([]))).await;
    let status = api_error(
        widgets
            .create(&PostParams::default(), &widget("w", json!({"replicas": "many", "maxReplicas": 3})))
            .await
            .unwrap_err(),
    );
    assert_eq!(
        status.message,
        "Widget.example.com \"w\" is invalid: [spec.replicas: Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\", <nil>: Invalid value: \"null\": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]"
    );
    dc.shutdown().await;
}

#[tokio::test]
async fn a_crd_with_a_rule_that_does_not_compile_is_refused() {
    let dc = start().await;
    let crds: Api<DynamicObject> = Api::all_with(dc.client(), &crd_resource());
    let crd: DynamicObject =
        serde_json::from_value(widget_crd(json!([{"rule": "self.replicas <"}]), json!([]))).unwrap();
    let status = api_error(crds.create(&PostParams::default(), &crd).await.unwrap_err());
    assert_eq!(status.code, 422);
    let cause = &status.details.unwrap().causes[0];
    assert_eq!(
        cause.field,
        "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule"
    );
    assert!(
        cause.message.starts_with("Invalid value: apiextensions.ValidationRule{Rule:\"self.replicas <\", Message:\"\"")
            && cause.message.contains(": compilation failed: ERROR: <input>:1:"),
        "{}",
        cause.message
    );
    dc.shutdown().await;
}

#[tokio::test]
async fn kubectl_prints_the_rule_message() {
    let dc = start().await;
    install(&dc, widget_crd(replicas_rule(), json!([]))).await;
    let manifest = std::env::temp_dir().join(format!("widget-{}.yaml", std::process::id()));
    std::fs::write(
        &manifest,
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: x\nspec:\n  replicas: 5\n  maxReplicas: 3\n",
    )
    .unwrap();
    let out = kubectl(&dc, &["apply", "-f", &manifest.display().to_string()]).await;
    let _ = std::fs::remove_file(&manifest);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("The Widget \"x\" is invalid: spec: Invalid value: \"object\": replicas must be <= maxReplicas"),
        "{err}"
    );
    dc.shutdown().await;
}

/// A CRD as kube-rs derives it: `#[x_kube(validation)]` on fields and the spec.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug)]
#[kube(group = "example.com", version = "v1", kind = "Gadget", namespaced)]
#[x_kube(validation = Rule::new("self.min <= self.max").message("min must not exceed max"))]
struct GadgetSpec {
    min: i32,
    max: i32,
    #[x_kube(validation = Rule::new("self == oldSelf").message("owner is immutable"))]
    owner: String,
}

#[tokio::test]
async fn rules_of_a_crd_derived_by_kube_rs_are_enforced() {
    let dc = start().await;
    let crds: Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
        Api::all(dc.client());
    crds.create(&PostParams::default(), &Gadget::crd()).await.expect("the derived CRD is created");
    let gadgets: Api<Gadget> = Api::namespaced(dc.client(), "default");
    let bad = Gadget::new("g", GadgetSpec { min: 5, max: 1, owner: "a".into() });
    let status = api_error(gadgets.create(&PostParams::default(), &bad).await.unwrap_err());
    assert_eq!(
        status.message,
        "Gadget.example.com \"g\" is invalid: spec: Invalid value: \"object\": min must not exceed max"
    );
    let good = Gadget::new("g", GadgetSpec { min: 1, max: 5, owner: "a".into() });
    gadgets.create(&PostParams::default(), &good).await.expect("a valid Gadget");
    let patch = json!({"spec": {"owner": "b"}});
    let status = api_error(gadgets.patch("g", &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap_err());
    assert_eq!(
        status.message,
        "Gadget.example.com \"g\" is invalid: spec.owner: Invalid value: \"string\": owner is immutable"
    );
    dc.shutdown().await;
}

fn policy_resource(kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("admissionregistration.k8s.io", "v1", kind), plural)
}

/// Creates a policy and its binding.
async fn bind(dc: &DevCluster, policy: Value, binding: Value) {
    for (obj, ar) in [
        (policy, policy_resource("ValidatingAdmissionPolicy", "validatingadmissionpolicies")),
        (binding, policy_resource("ValidatingAdmissionPolicyBinding", "validatingadmissionpolicybindings")),
    ] {
        let api: Api<DynamicObject> = Api::all_with(dc.client(), &ar);
        let obj: DynamicObject = serde_json::from_value(obj).expect("a policy object");
        api.create(&PostParams::default(), &obj).await.expect("the policy object is created");
    }
}

fn max_replicas_policy(spec_extra: Value) -> Value {
    let mut policy = json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "max-replicas"},
        "spec": {"failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
                "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]}]},
            "validations": [{"expression": "object.spec.replicas <= 5"}]},
    });
    if let (Some(spec), Some(extra)) = (policy["spec"].as_object_mut(), spec_extra.as_object()) {
        spec.extend(extra.clone());
    }
    policy
}

fn binding(actions: &[&str], extra: Value) -> Value {
    let mut binding = json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "max-replicas-binding"},
        "spec": {"policyName": "max-replicas", "validationActions": actions},
    });
    if let (Some(spec), Some(extra)) = (binding["spec"].as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    binding
}

fn deployment(name: &str, replicas: i64) -> k8s_openapi::api::apps::v1::Deployment {
    serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}},
    }))
    .expect("a Deployment")
}

#[tokio::test]
async fn a_bound_policy_denies_what_fails_its_validation() {
    let dc = start().await;
    bind(&dc, max_replicas_policy(json!({})), binding(&["Deny"], json!({}))).await;
    let deployments: Api<k8s_openapi::api::apps::v1::Deployment> = Api::namespaced(dc.client(), "default");
    let status = api_error(deployments.create(&PostParams::default(), &deployment("web", 6)).await.unwrap_err());
    assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        status.message,
        "deployments.apps \"web\" is forbidden: ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas-binding' denied request: failed expression: object.spec.replicas <= 5"
    );
    deployments.create(&PostParams::default(), &deployment("web", 3)).await.expect("within the policy");
    let patch = json!({"spec": {"replicas": 9}});
    let status = api_error(deployments.patch("web", &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap_err());
    assert_eq!(status.code, 422, "updates are checked too");
    // Other resources are not matched.
    let cms: Api<DynamicObject> = Api::namespaced_with(
        dc.client(),
        "default",
        &ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("", "v1", "ConfigMap"), "configmaps"),
    );
    let cm: DynamicObject =
        serde_json::from_value(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})).unwrap();
    cms.create(&PostParams::default(), &cm).await.expect("a ConfigMap is not matched");
    dc.shutdown().await;
}

#[tokio::test]
async fn params_variables_conditions_and_message_expressions() {
    let dc = start().await;
    let policy = max_replicas_policy(json!({
        "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
        "matchConditions": [{"name": "not-exempt", "expression": "!('exempt' in object.metadata.labels)"}],
        "variables": [{"name": "limit", "expression": "int(params.data.max)"}],
        "validations": [{"expression": "object.spec.replicas <= variables.limit", "reason": "Forbidden",
            "messageExpression": "'replicas ' + string(object.spec.replicas) + ' exceed ' + string(variables.limit)"}],
    }));
    let limits: Api<DynamicObject> = Api::namespaced_with(
        dc.client(),
        "default",
        &ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("", "v1", "ConfigMap"), "configmaps"),
    );
    let limit: DynamicObject = serde_json::from_value(
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "limits"}, "data": {"max": "2"}}),
    )
    .unwrap();
    limits.create(&PostParams::default(), &limit).await.unwrap();
    bind(&dc, policy, binding(&["Deny"], json!({"paramRef": {"name": "limits", "parameterNotFoundAction": "Deny"}})))
        .await;
    let deployments: Api<k8s_openapi::api::apps::v1::Deployment> = Api::namespaced(dc.client(), "default");
    let status = api_error(deployments.create(&PostParams::default(), &deployment("web", 3)).await.unwrap_err());
    assert_eq!((status.code, status.reason.as_str()), (403, "Forbidden"));
    assert!(status.message.ends_with("denied request: replicas 3 exceed 2"), "{}", status.message);
    let mut exempt = deployment("exempt", 3);
    exempt.metadata.labels.get_or_insert_default().insert("exempt".into(), "yes".into());
    deployments.create(&PostParams::default(), &exempt).await.expect("a match condition exempts it");
    // In a namespace without the params, the binding denies.
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(dc.client());
    namespaces
        .create(&PostParams::default(), &serde_json::from_value(json!({"metadata": {"name": "other"}})).unwrap())
        .await
        .unwrap();
    let other: Api<k8s_openapi::api::apps::v1::Deployment> = Api::namespaced(dc.client(), "other");
    let status = api_error(other.create(&PostParams::default(), &deployment("web", 1)).await.unwrap_err());
    assert!(
        status.message.ends_with("no params found for policy binding with `Deny` parameterNotFoundAction"),
        "{}",
        status.message
    );
    dc.shutdown().await;
}

#[tokio::test]
async fn a_warn_binding_lets_the_request_through_with_a_warning_kubectl_prints() {
    let dc = start().await;
    bind(&dc, max_replicas_policy(json!({})), binding(&["Warn"], json!({}))).await;
    let out = kubectl(&dc, &["create", "deployment", "web", "--image=nginx", "--replicas=6"]).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("Warning: Validation failed for ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas-binding': failed expression: object.spec.replicas <= 5"),
        "{err}"
    );
    dc.shutdown().await;
}

#[tokio::test]
async fn kubectl_shows_a_policy_denial_and_a_policy_that_does_not_compile_is_refused() {
    let dc = start().await;
    let policies: Api<DynamicObject> =
        Api::all_with(dc.client(), &policy_resource("ValidatingAdmissionPolicy", "validatingadmissionpolicies"));
    let bad: DynamicObject = serde_json::from_value(max_replicas_policy(
        json!({"validations": [{"expression": "object.spec.replicas <="}]}),
    ))
    .unwrap();
    let status = api_error(policies.create(&PostParams::default(), &bad).await.unwrap_err());
    assert_eq!(status.details.unwrap().causes[0].field, "spec.validations[0].expression");
    bind(&dc, max_replicas_policy(json!({})), binding(&["Deny"], json!({}))).await;
    let out = kubectl(&dc, &["create", "deployment", "web", "--image=nginx", "--replicas=6"]).await;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("deployments.apps \"web\" is forbidden: ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas-binding' denied request: failed expression: object.spec.replicas <= 5"),
        "{err}"
    );
    dc.shutdown().await;
}

/// A create at a subresource that acts or answers (an eviction, a token request) passes
/// admission as any create: a policy whose rules name the subresource sees it, with the
/// parent's name.
#[tokio::test]
async fn a_policy_on_a_subresource_sees_evictions_and_token_requests() {
    use k8s_openapi::api::authentication::v1::TokenRequest;
    use k8s_openapi::api::core::v1::{Pod, ServiceAccount};
    use kube::api::EvictParams;

    let dc = start().await;
    let policy = json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "max-replicas"},
        "spec": {"failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["CREATE"], "resources": ["pods/eviction", "serviceaccounts/token"]}]},
            "validations": [{"expression": "request.name != 'guarded'"}]},
    });
    bind(&dc, policy, binding(&["Deny"], json!({}))).await;
    let denied = |what: &str| {
        format!(
            "{what} \"guarded\" is forbidden: ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas-binding' denied request: failed expression: request.name != 'guarded'"
        )
    };

    let pods: Api<Pod> = Api::namespaced(dc.client(), "default");
    for name in ["guarded", "free"] {
        let pod =
            json!({ "metadata": { "name": name }, "spec": { "containers": [{ "name": "c", "image": "nginx" }] } });
        pods.create(&PostParams::default(), &serde_json::from_value(pod).unwrap())
            .await
            .expect("the rule names no pod creates");
    }
    let status = api_error(pods.evict("guarded", &EvictParams::default()).await.unwrap_err());
    assert_eq!((status.code, status.message), (422, denied("pods")));
    assert!(pods.get_opt("guarded").await.unwrap().is_some(), "the pod stays");
    pods.evict("free", &EvictParams::default()).await.expect("another pod is evicted");

    let accounts: Api<ServiceAccount> = Api::namespaced(dc.client(), "default");
    for name in ["guarded", "free"] {
        let account = json!({ "metadata": { "name": name } });
        accounts.create(&PostParams::default(), &serde_json::from_value(account).unwrap()).await.unwrap();
    }
    let request: TokenRequest = serde_json::from_value(json!({ "spec": { "audiences": [] } })).unwrap();
    let status =
        api_error(accounts.create_token_request("guarded", &PostParams::default(), &request).await.unwrap_err());
    assert_eq!((status.code, status.message), (422, denied("serviceaccounts")));
    let issued = accounts.create_token_request("free", &PostParams::default(), &request).await.unwrap();
    assert!(issued.status.is_some_and(|s| !s.token.is_empty()), "another account gets its token");
    dc.shutdown().await;
}
