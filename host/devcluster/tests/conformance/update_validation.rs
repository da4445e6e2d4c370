//! What an update of a built-in may not change, refused with the real server's 422, field
//! path and message (`pkg/apis/*/validation`'s `Validate*Update`), through the `kube` client
//! (merge patches, PUTs and server-side apply) and the real kubectl.

use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kubewasm_devcluster::DevCluster;
use serde_json::{Value, json};

use super::kubectl::kubectl;
use super::{api_error, start};

fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

/// Creates `obj` in `default` (or cluster-wide when `namespaced` is false) and returns its API.
async fn created(dc: &DevCluster, ar: &ApiResource, namespaced: bool, obj: Value) -> Api<DynamicObject> {
    let api: Api<DynamicObject> =
        if namespaced { Api::namespaced_with(dc.client(), "default", ar) } else { Api::all_with(dc.client(), ar) };
    let obj: DynamicObject = serde_json::from_value(obj).expect("an object");
    api.create(&PostParams::default(), &obj).await.expect("the object is created");
    api
}

/// The 422 a merge patch of `name` gets; its message and the fields of its causes.
async fn refused(api: &Api<DynamicObject>, name: &str, patch: Value) -> (String, Vec<String>) {
    let err = api.patch(name, &PatchParams::default(), &Patch::Merge(&patch)).await.expect_err("the patch is refused");
    let status = api_error(err);
    assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"), "{status:?}");
    let fields = status.details.map(|d| d.causes.into_iter().map(|c| c.field).collect()).unwrap_or_default();
    (status.message, fields)
}

fn deployment(name: &str, app: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {"selector": {"matchLabels": {"app": app}}, "template": {"metadata": {"labels": {"app": app}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}},
    })
}

fn stateful_set() -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
        "spec": {"serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
            "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [{"name": "c", "image": "postgres"}]}},
            "volumeClaimTemplates": [{"metadata": {"name": "data"},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]},
    })
}

#[tokio::test]
async fn a_workload_selector_is_immutable() {
    let dc = start().await;
    let deployments =
        created(&dc, &resource("apps", "v1", "Deployment", "deployments"), true, deployment("web", "web")).await;
    let patch = json!({"spec": {"selector": {"matchLabels": {"app": "new"}}, "template": {"metadata": {"labels": {"app": "new"}}}}});
    let (message, fields) = refused(&deployments, "web", patch).await;
    assert_eq!(
        message,
        "Deployment.apps \"web\" is invalid: spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"new\"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable"
    );
    assert_eq!(fields, ["spec.selector"]);
    // The template, replicas and strategy stay mutable.
    let patch =
        json!({"spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}}});
    deployments
        .patch("web", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("a template change is allowed");
    dc.shutdown().await;
}

#[tokio::test]
async fn a_stateful_set_keeps_all_but_its_replicas_template_and_strategies() {
    let dc = start().await;
    let sets = created(&dc, &resource("apps", "v1", "StatefulSet", "statefulsets"), true, stateful_set()).await;
    let forbidden = "StatefulSet.apps \"db\" is invalid: spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden";
    for patch in [
        json!({"spec": {"serviceName": "other"}}),
        json!({"spec": {"podManagementPolicy": "Parallel"}}),
        json!({"spec": {"volumeClaimTemplates": [{"metadata": {"name": "data"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "2Gi"}}}}]}}),
    ] {
        let (message, fields) = refused(&sets, "db", patch.clone()).await;
        assert_eq!((message.as_str(), fields), (forbidden, vec!["spec".to_string()]), "{patch}");
    }
    for patch in [
        json!({"spec": {"replicas": 4, "minReadySeconds": 5}}),
        json!({"spec": {"updateStrategy": {"type": "OnDelete", "rollingUpdate": null}}}),
        json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "postgres:17"}]}}}}),
    ] {
        sets.patch("db", &PatchParams::default(), &Patch::Merge(&patch)).await.expect("a mutable field changes");
    }
    dc.shutdown().await;
}

#[tokio::test]
async fn a_job_keeps_its_template_selector_and_completions() {
    let dc = start().await;
    let job = json!({
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "pi"},
        "spec": {"completions": 2, "template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "pi", "image": "perl"}]}}},
    });
    let jobs = created(&dc, &resource("batch", "v1", "Job", "jobs"), true, job).await;
    let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": "pi", "image": "perl:2"}]}}}});
    let (message, fields) = refused(&jobs, "pi", patch).await;
    assert!(
        message.starts_with("Job.batch \"pi\" is invalid: spec.template: Invalid value: core.PodTemplateSpec{"),
        "{message}"
    );
    assert!(message.ends_with(": field is immutable"), "{message}");
    assert_eq!(fields, ["spec.template"]);
    let (message, _) = refused(&jobs, "pi", json!({"spec": {"completions": 5}})).await;
    assert_eq!(message, "Job.batch \"pi\" is invalid: spec.completions: Invalid value: 5: field is immutable");
    let (message, _) = refused(&jobs, "pi", json!({"spec": {"completionMode": "Indexed"}})).await;
    assert!(message.contains("spec.completionMode: Invalid value: \"Indexed\": field is immutable"), "{message}");
    // Parallelism, the deadline and suspension stay mutable.
    let patch = json!({"spec": {"parallelism": 2, "activeDeadlineSeconds": 60, "suspend": true}});
    jobs.patch("pi", &PatchParams::default(), &Patch::Merge(&patch)).await.expect("mutable Job fields change");
    dc.shutdown().await;
}

#[tokio::test]
async fn a_suspended_job_that_never_ran_may_move_its_pods() {
    let dc = start().await;
    let job = json!({
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "later"},
        "spec": {"suspend": true, "template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox"}]}}},
    });
    let jobs = created(&dc, &resource("batch", "v1", "Job", "jobs"), true, job).await;
    let patch = json!({"spec": {"template": {"metadata": {"annotations": {"a": "b"}},
        "spec": {"nodeSelector": {"zone": "a"}, "tolerations": [{"key": "k", "operator": "Exists"}]}}}});
    jobs.patch("later", &PatchParams::default(), &Patch::Merge(&patch)).await.expect("scheduling directives change");
    let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox:2"}]}}}});
    let (_, fields) = refused(&jobs, "later", patch).await;
    assert_eq!(fields, ["spec.template"]);
    dc.shutdown().await;
}

#[tokio::test]
async fn an_indexed_job_changes_completions_with_its_parallelism() {
    let dc = start().await;
    let job = json!({
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "idx"},
        "spec": {"completionMode": "Indexed", "completions": 3, "parallelism": 3,
            "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}},
    });
    let jobs = created(&dc, &resource("batch", "v1", "Job", "jobs"), true, job).await;
    let (message, _) = refused(&jobs, "idx", json!({"spec": {"completions": 5}})).await;
    assert_eq!(
        message,
        "Job.batch \"idx\" is invalid: spec.completions: Invalid value: 5: can only be modified in tandem with spec.parallelism"
    );
    let patch = json!({"spec": {"completions": 5, "parallelism": 5}});
    jobs.patch("idx", &PatchParams::default(), &Patch::Merge(&patch)).await.expect("in tandem it changes");
    dc.shutdown().await;
}

#[tokio::test]
async fn a_service_keeps_its_cluster_ip_and_an_update_without_it_keeps_it_too() {
    let dc = start().await;
    let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}});
    let services = created(&dc, &resource("", "v1", "Service", "services"), true, svc.clone()).await;
    let ip = services.get("web").await.unwrap().data["spec"]["clusterIP"].as_str().unwrap().to_string();
    let (message, fields) = refused(&services, "web", json!({"spec": {"clusterIP": "10.96.200.2"}})).await;
    assert_eq!(
        message,
        "Service \"web\" is invalid: spec.clusterIPs[0]: Invalid value: []string{\"10.96.200.2\"}: may not change once set"
    );
    assert_eq!(fields, ["spec.clusterIPs[0]"]);
    // A whole object without its cluster IP (what `kubectl apply --server-side` sends) keeps it.
    let params = PatchParams::apply("test").force();
    services.patch("web", &params, &Patch::Apply(&svc)).await.expect("an apply without clusterIP");
    assert_eq!(services.get("web").await.unwrap().data["spec"]["clusterIP"], ip);
    dc.shutdown().await;
}

#[tokio::test]
async fn an_immutable_config_map_or_secret_keeps_its_data() {
    let dc = start().await;
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}, "immutable": true});
    let maps = created(&dc, &resource("", "v1", "ConfigMap", "configmaps"), true, cm).await;
    let (message, _) = refused(&maps, "c", json!({"data": {"a": "2"}})).await;
    assert_eq!(message, "ConfigMap \"c\" is invalid: data: Forbidden: field is immutable when `immutable` is set");
    let (message, _) = refused(&maps, "c", json!({"immutable": false})).await;
    assert_eq!(message, "ConfigMap \"c\" is invalid: immutable: Forbidden: field is immutable when `immutable` is set");
    maps.patch("c", &PatchParams::default(), &Patch::Merge(&json!({"metadata": {"labels": {"l": "v"}}})))
        .await
        .expect("metadata stays mutable");

    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "stringData": {"a": "1"}, "immutable": true});
    let secrets = created(&dc, &resource("", "v1", "Secret", "secrets"), true, secret).await;
    let (message, _) = refused(&secrets, "s", json!({"stringData": {"a": "2"}})).await;
    assert_eq!(message, "Secret \"s\" is invalid: data: Forbidden: field is immutable when `immutable` is set");
    let (message, _) = refused(&secrets, "s", json!({"type": "kubernetes.io/tls"})).await;
    assert!(
        message.starts_with("Secret \"s\" is invalid: type: Invalid value: \"kubernetes.io/tls\": field is immutable"),
        "{message}"
    );
    dc.shutdown().await;
}

#[tokio::test]
async fn a_binding_keeps_its_role() {
    let dc = start().await;
    let rb = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "rb"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [{"kind": "User", "name": "u", "apiGroup": "rbac.authorization.k8s.io"}]});
    let ar = resource("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings");
    let bindings = created(&dc, &ar, true, rb).await;
    let (message, fields) = refused(&bindings, "rb", json!({"roleRef": {"name": "edit"}})).await;
    assert_eq!(
        message,
        "RoleBinding.rbac.authorization.k8s.io \"rb\" is invalid: roleRef: Invalid value: rbac.RoleRef{APIGroup:\"rbac.authorization.k8s.io\", Kind:\"ClusterRole\", Name:\"edit\"}: cannot change roleRef"
    );
    assert_eq!(fields, ["roleRef"]);
    let patch = json!({"subjects": [{"kind": "User", "name": "w", "apiGroup": "rbac.authorization.k8s.io"}]});
    bindings.patch("rb", &PatchParams::default(), &Patch::Merge(&patch)).await.expect("subjects change");
    dc.shutdown().await;
}

#[tokio::test]
async fn a_claim_keeps_its_spec_and_classes_their_provisioner() {
    let dc = start().await;
    let pvc = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}});
    let claims = created(&dc, &resource("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims"), true, pvc).await;
    let (message, _) = refused(&claims, "data", json!({"spec": {"resources": {"requests": {"storage": "2Gi"}}}})).await;
    assert_eq!(
        message,
        "PersistentVolumeClaim \"data\" is invalid: spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"
    );
    // Binding it (setting volumeName once) is allowed.
    claims
        .patch("data", &PatchParams::default(), &Patch::Merge(&json!({"spec": {"volumeName": "pv-1"}})))
        .await
        .expect("bound once");

    let class = json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "fast"},
        "provisioner": "a.example.com"});
    let classes = created(&dc, &resource("storage.k8s.io", "v1", "StorageClass", "storageclasses"), false, class).await;
    let (message, _) = refused(&classes, "fast", json!({"provisioner": "b.example.com"})).await;
    assert_eq!(
        message,
        "StorageClass.storage.k8s.io \"fast\" is invalid: provisioner: Forbidden: updates to provisioner are forbidden."
    );
    let ingress_class = json!({"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": {"name": "nginx"},
        "spec": {"controller": "k8s.io/ingress-nginx"}});
    let ar = resource("networking.k8s.io", "v1", "IngressClass", "ingressclasses");
    let ingress_classes = created(&dc, &ar, false, ingress_class).await;
    let (message, _) = refused(&ingress_classes, "nginx", json!({"spec": {"controller": "example.com/other"}})).await;
    assert_eq!(
        message,
        "IngressClass.networking.k8s.io \"nginx\" is invalid: spec.controller: Invalid value: \"example.com/other\": field is immutable"
    );
    dc.shutdown().await;
}

#[tokio::test]
async fn a_pod_changes_only_its_images_deadline_and_tolerations() {
    let dc = start().await;
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "nginx", "ports": [{"containerPort": 80}]}]}});
    let pods = created(&dc, &resource("", "v1", "Pod", "pods"), true, pod).await;
    // A strategic merge patch keeps what the server defaulted in the container
    // (`imagePullPolicy`), as kubectl's patches do.
    let patch = json!({"spec": {"containers": [{"name": "c", "image": "nginx:2"}],
        "activeDeadlineSeconds": 30, "tolerations": [{"key": "k", "operator": "Exists"}]}});
    pods.patch("p", &PatchParams::default(), &Patch::Strategic(&patch))
        .await
        .expect("image, deadline and tolerations change");
    let patch = json!({"spec": {"containers": [{"name": "c", "image": "nginx:2", "imagePullPolicy": "IfNotPresent",
        "ports": [{"containerPort": 81}]}]}});
    let (message, fields) = refused(&pods, "p", patch).await;
    assert_eq!(
        message,
        "Pod \"p\" is invalid: spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"
    );
    assert_eq!(fields, ["spec"]);
    dc.shutdown().await;
}

#[tokio::test]
async fn kubectl_shows_the_refusals_as_on_a_cluster() {
    let dc = start().await;
    let created = kubectl(&dc, &["create", "deployment", "web", "--image=nginx"]).await;
    assert!(created.status.success(), "{}", String::from_utf8_lossy(&created.stderr));
    let patch = r#"{"spec":{"selector":{"matchLabels":{"app":"x"}},"template":{"metadata":{"labels":{"app":"x"}}}}}"#;
    let out = kubectl(&dc, &["patch", "deployment", "web", "-p", patch]).await;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("The Deployment \"web\" is invalid: spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"x\"}"),
        "{err}"
    );

    assert!(kubectl(&dc, &["create", "configmap", "c", "--from-literal=a=1"]).await.status.success());
    assert!(kubectl(&dc, &["patch", "configmap", "c", "-p", r#"{"immutable":true}"#]).await.status.success());
    let out = kubectl(&dc, &["patch", "configmap", "c", "-p", r#"{"data":{"a":"2"}}"#]).await;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("The ConfigMap \"c\" is invalid: data: Forbidden: field is immutable when `immutable` is set"),
        "{err}"
    );

    assert!(kubectl(&dc, &["create", "rolebinding", "rb", "--clusterrole=view", "--user=u"]).await.status.success());
    let out = kubectl(&dc, &["patch", "rolebinding", "rb", "-p", r#"{"roleRef":{"name":"edit"}}"#]).await;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("roleRef: Invalid value: rbac.RoleRef{APIGroup:\"rbac.authorization.k8s.io\", Kind:\"ClusterRole\", Name:\"edit\"}: cannot change roleRef"), "{err}");

    let out = kubectl(&dc, &["patch", "service", "kubernetes", "-p", r#"{"spec":{"clusterIP":"10.96.0.2"}}"#]).await;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("spec.clusterIPs[0]: Invalid value: []string{\"10.96.0.2\"}: may not change once set"),
        "{err}"
    );
    dc.shutdown().await;
}
