//! Built-in kinds beyond the few a controller demo needs, through the real kubectl: every served
//! resource lists, workload, storage, networking and policy objects apply, print, explain, scale
//! and delete, and their list types and types are the upstream ones.

use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

use super::kubectl::{kubectl, ok, path};
use super::start;

/// The kinds of `fixtures/builtins.yaml`, as `kubectl get` names them.
const FIXTURE_KINDS: &str = "jobs,cronjobs,statefulsets,daemonsets,persistentvolumeclaims,ingresses,\
networkpolicies,poddisruptionbudgets,horizontalpodautoscalers,resourcequotas,priorityclasses,storageclasses";

#[tokio::test]
async fn every_served_resource_lists() {
    let dc = start().await;
    let names = ok(&kubectl(&dc, &["api-resources", "--verbs=list", "-o", "name"]).await);
    let names: Vec<&str> = names.lines().collect();
    for expected in [
        "jobs.batch",
        "cronjobs.batch",
        "statefulsets.apps",
        "persistentvolumeclaims",
        "ingresses.networking.k8s.io",
        "nodes",
        "endpointslices.discovery.k8s.io",
    ] {
        assert!(names.contains(&expected), "{expected} is served: {names:?}");
    }
    assert!(names.len() > 50, "the stable resources of Kubernetes: {}", names.len());
    for name in names {
        ok(&kubectl(&dc, &["get", name, "--all-namespaces"]).await);
    }
    dc.shutdown().await;
}

#[tokio::test]
async fn workload_storage_and_network_kinds_apply_print_scale_and_delete() {
    let dc = start().await;
    let applied = ok(&kubectl(&dc, &["apply", "-f", &path("builtins.yaml")]).await);
    assert!(applied.contains("job.batch/pi created"), "{applied}");
    assert!(applied.contains("storageclass.storage.k8s.io/fast created"), "{applied}");
    // Applying again changes nothing, server-side as well.
    let again = ok(&kubectl(&dc, &["apply", "-f", &path("builtins.yaml")]).await);
    assert!(again.contains("job.batch/pi unchanged"), "{again}");
    let ssa = ok(&kubectl(&dc, &["apply", "--server-side", "-f", &path("builtins.yaml")]).await);
    assert!(ssa.contains("cronjob.batch/nightly serverside-applied"), "{ssa}");

    let wide = ok(&kubectl(&dc, &["get", FIXTURE_KINDS, "-o", "wide"]).await);
    for name in [
        "job.batch/pi",
        "cronjob.batch/nightly",
        "statefulset.apps/db",
        "persistentvolumeclaim/data",
        "ingress.networking.k8s.io/web",
        "priorityclass.scheduling.k8s.io/high",
    ] {
        assert!(wide.contains(name), "{name} printed: {wide}");
    }

    ok(&kubectl(&dc, &["scale", "statefulset", "db", "--replicas=4"]).await);
    let replicas = ok(&kubectl(&dc, &["get", "statefulset", "db", "-o", "jsonpath={.spec.replicas}"]).await);
    assert_eq!(replicas, "4");

    ok(&kubectl(&dc, &["delete", "-f", &path("builtins.yaml"), "--wait=false"]).await);
    let left = ok(&kubectl(&dc, &["get", FIXTURE_KINDS, "-o", "name"]).await);
    assert_eq!(left.trim(), "", "everything deleted");
    dc.shutdown().await;
}

#[tokio::test]
async fn explain_reads_the_upstream_definitions_of_built_ins() {
    let dc = start().await;
    let ports = ok(&kubectl(&dc, &["explain", "deployment.spec.template.spec.containers.ports"]).await);
    assert!(ports.contains("FIELD: ports <[]ContainerPort>"), "{ports}");
    assert!(ports.contains("containerPort\t<integer> -required-"), "{ports}");
    let cronjob = ok(&kubectl(&dc, &["explain", "cronjob.spec.schedule"]).await);
    assert!(cronjob.contains("The schedule in Cron format"), "{cronjob}");
    dc.shutdown().await;
}

#[tokio::test]
async fn a_wrong_type_in_a_built_in_is_refused_naming_the_field() {
    let dc = start().await;
    let manifest = dc.kubeconfig_path().with_extension("bad.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: three\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: web, image: nginx}]}\n",
    )
    .unwrap();
    let out = kubectl(&dc, &["apply", "--validate=false", "-f", &manifest.display().to_string()]).await;
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("Deployment in version \"v1\" cannot be handled as a Deployment: json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32"),
        "{stderr}"
    );
    dc.shutdown().await;
}

#[tokio::test]
async fn service_ports_are_keyed_by_port_and_protocol_for_every_applier() {
    let dc = start().await;
    let services: Api<Service> = Api::namespaced(dc.client(), "default");
    let service = |ports: serde_json::Value| {
        Patch::Apply(
            json!({ "apiVersion": "v1", "kind": "Service", "metadata": { "name": "dns" }, "spec": { "ports": ports } }),
        )
    };
    let udp = service(json!([{ "name": "dns-udp", "port": 53, "protocol": "UDP" }]));
    let tcp = service(json!([{ "name": "dns-tcp", "port": 53, "protocol": "TCP" }]));
    services.patch("dns", &PatchParams::apply("udp"), &udp).await.unwrap();
    let both = services.patch("dns", &PatchParams::apply("tcp"), &tcp).await.unwrap();
    let ports: Vec<(i32, String)> =
        both.spec.unwrap().ports.unwrap().into_iter().map(|p| (p.port, p.protocol.unwrap_or_default())).collect();
    assert_eq!(ports, [(53, "UDP".to_string()), (53, "TCP".to_string())], "one item per port and protocol");
    dc.shutdown().await;
}

#[tokio::test]
async fn topology_spread_constraints_are_keyed_by_topology_key_and_when_unsatisfiable() {
    // A field-name guess keys them by topologyKey alone and merges the two; the upstream
    // definition keys them by both fields, so both stay. (In a pod template: a Pod's spec may
    // not change after creation.)
    let dc = start().await;
    let templates: Api<k8s_openapi::api::core::v1::PodTemplate> = Api::namespaced(dc.client(), "default");
    let template = |when: &str| {
        Patch::Apply(json!({
            "apiVersion": "v1", "kind": "PodTemplate", "metadata": { "name": "p" },
            "template": { "spec": { "containers": [{ "name": "c", "image": "nginx" }], "topologySpreadConstraints": [
                { "maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": when, "labelSelector": { "matchLabels": { "a": "b" } } }
            ] } },
        }))
    };
    templates.patch("p", &PatchParams::apply("first"), &template("DoNotSchedule")).await.unwrap();
    let both = templates.patch("p", &PatchParams::apply("second"), &template("ScheduleAnyway")).await.unwrap();
    let constraints = both.template.unwrap().spec.unwrap().topology_spread_constraints.unwrap();
    let when: Vec<&str> = constraints.iter().map(|c| c.when_unsatisfiable.as_str()).collect();
    assert_eq!(when, ["DoNotSchedule", "ScheduleAnyway"]);
    dc.shutdown().await;
}

#[tokio::test]
async fn network_policy_ports_are_atomic_so_a_second_applier_conflicts() {
    // A field-name guess keys any `ports` list by port; the upstream definition makes these atomic.
    let dc = start().await;
    let resource = kube::api::ApiResource::erase::<k8s_openapi::api::networking::v1::NetworkPolicy>(&());
    let policies: Api<kube::api::DynamicObject> = Api::namespaced_with(dc.client(), "default", &resource);
    let policy = |port: i64| {
        Patch::Apply(json!({
            "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": { "name": "np" },
            "spec": { "podSelector": {}, "ingress": [{ "ports": [{ "port": port }] }] },
        }))
    };
    policies.patch("np", &PatchParams::apply("first"), &policy(80)).await.unwrap();
    let err = policies.patch("np", &PatchParams::apply("second"), &policy(443)).await.unwrap_err();
    let kube::Error::Api(status) = err else { panic!("an API error: {err}") };
    assert_eq!(status.code, 409, "{}", status.message);
    dc.shutdown().await;
}

#[tokio::test]
async fn tolerations_are_atomic_so_a_second_applier_conflicts() {
    let dc = start().await;
    let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(dc.client(), "default");
    let pod = |key: &str| {
        Patch::Apply(json!({
            "apiVersion": "v1", "kind": "Pod", "metadata": { "name": "p" },
            "spec": { "containers": [{ "name": "c", "image": "nginx" }], "tolerations": [{ "key": key, "operator": "Exists" }] },
        }))
    };
    pods.patch("p", &PatchParams::apply("first"), &pod("a")).await.unwrap();
    let err = pods.patch("p", &PatchParams::apply("second"), &pod("b")).await.unwrap_err();
    let kube::Error::Api(status) = err else { panic!("an API error: {err}") };
    assert_eq!(status.code, 409);
    assert!(status.message.contains(".spec.tolerations"), "the whole list conflicts: {}", status.message);
    dc.shutdown().await;
}

#[tokio::test]
async fn verbs_a_resource_does_not_serve_are_refused() {
    // Namespaces have no deletecollection on a real server; bindings are not served.
    let dc = start().await;
    let (code, body) = super::raw(&dc, "DELETE", "/api/v1/namespaces", "", "").await;
    assert_eq!(code, 405, "{body}");
    let (code, _) = super::raw(&dc, "GET", "/api/v1/namespaces/default", "", "").await;
    assert_eq!(code, 200);
    let (code, _) = super::raw(&dc, "POST", "/api/v1/namespaces/default/bindings", "application/json", "{}").await;
    assert_eq!(code, 404, "bindings are not served");
    dc.shutdown().await;
}

#[tokio::test]
async fn access_reviews_allow_the_administrator_everything() {
    use k8s_openapi::api::authorization::v1::{
        ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
    };
    let dc = start().await;
    let reviews: Api<SelfSubjectAccessReview> = Api::all(dc.client());
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                verb: Some("create".into()),
                group: Some("apps".into()),
                resource: Some("deployments".into()),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    let answered = reviews.create(&kube::api::PostParams::default(), &review).await.unwrap();
    assert!(answered.status.unwrap().allowed);
    assert_eq!(
        answered.spec.resource_attributes.unwrap().resource.as_deref(),
        Some("deployments"),
        "the spec is echoed"
    );
    let (code, _) = super::raw(&dc, "GET", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", "", "").await;
    assert_eq!(code, 405, "reviews are created, never stored or listed");
    dc.shutdown().await;
}

#[tokio::test]
async fn every_kubectl_create_subcommand_works_through_protobuf() {
    // kubectl sends these bodies as protobuf.
    let dc = start().await;
    let creates: &[&[&str]] = &[
        &["deployment", "web", "--image=nginx", "--port=80"],
        &["job", "hello", "--image=busybox", "--", "echo", "hi"],
        &["cronjob", "nightly", "--image=busybox", "--schedule=0 3 * * *", "--", "echo", "hi"],
        &["service", "clusterip", "cip", "--tcp=80:8080"],
        &["service", "nodeport", "np", "--tcp=80:8080", "--node-port=30002"],
        &["secret", "generic", "s1", "--from-literal=password=hunter2"],
        &["configmap", "c1", "--from-literal=a=b"],
        &["serviceaccount", "sa1"],
        &["role", "r1", "--verb=get", "--resource=pods"],
        &["rolebinding", "rb1", "--role=r1", "--serviceaccount=default:sa1"],
        &["clusterrole", "cr1", "--verb=get", "--resource=nodes"],
        &["clusterrolebinding", "crb1", "--clusterrole=cr1", "--user=bob"],
        &["namespace", "ns1"],
        &["quota", "q1", "--hard=pods=10"],
        &["priorityclass", "pc1", "--value=100"],
        &["poddisruptionbudget", "pdb1", "--selector=app=web", "--min-available=1"],
        &["ingress", "ing1", "--rule=foo.com/bar=svc1:8080"],
    ];
    for args in creates {
        let mut command = vec!["create"];
        command.extend_from_slice(args);
        let out = kubectl(&dc, &command).await;
        assert!(out.status.success(), "kubectl create {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    let get = |args: &'static [&'static str]| kubectl(&dc, args);
    assert_eq!(
        ok(&get(&[
            "get",
            "deploy",
            "web",
            "-o",
            "jsonpath={.spec.template.spec.containers[0].ports[0].containerPort}"
        ])
        .await),
        "80"
    );
    assert_eq!(
        ok(&get(&["get", "svc", "np", "-o", "jsonpath={.spec.ports[0].nodePort}/{.spec.ports[0].targetPort}"]).await),
        "30002/8080"
    );
    assert_eq!(ok(&get(&["get", "secret", "s1", "-o", "jsonpath={.data.password}"]).await), "aHVudGVyMg==");
    assert_eq!(ok(&get(&["get", "cronjob", "nightly", "-o", "jsonpath={.spec.schedule}"]).await), "0 3 * * *");
    assert_eq!(ok(&get(&["get", "quota", "q1", "-o", "jsonpath={.spec.hard.pods}"]).await), "10");
    // An inline Go struct (IngressRuleValue) is read into its parent, as the real server does.
    assert_eq!(
        ok(&get(&[
            "get",
            "ingress",
            "ing1",
            "-o",
            "jsonpath={.spec.rules[0].http.paths[0].backend.service.port.number}"
        ])
        .await),
        "8080"
    );
    assert_eq!(ok(&get(&["auth", "can-i", "create", "pods"]).await).trim(), "yes");
    dc.shutdown().await;
}
