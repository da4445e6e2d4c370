//! What kube-apiserver serves itself, without a kubelet: pods' `eviction` (honouring
//! PodDisruptionBudgets), `binding` and `ephemeralcontainers`, the answers of `log`, `exec`,
//! `attach` and `portforward` when no kubelet can be reached, CSR `approval`, and
//! `componentstatuses`.

use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::core::v1::{ComponentStatus, Node, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, EvictParams, ListParams, LogParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use super::kubectl::{kubectl, ok};
use super::{api_error, exchange, raw, start};

/// A client that does not retry a 429 as kube's default client does: the refusal is what the
/// tests look at.
fn without_retries(dc: &kubewasm_devcluster::DevCluster) -> kube::Client {
    let mut config = dc.config();
    config.default_retry = false;
    kube::Client::try_from(config).unwrap()
}

const PODS: &str = "/api/v1/namespaces/default/pods";

fn pod(name: &str, labels: Value) -> Pod {
    serde_json::from_value(json!({ "metadata": { "name": name, "labels": labels },
        "spec": { "containers": [{ "name": "app", "image": "busybox" }] } }))
    .unwrap()
}

/// A pod that runs and is ready, as its kubelet would report it.
async fn running_pod(pods: &Api<Pod>, name: &str) {
    pods.create(&PostParams::default(), &pod(name, json!({ "app": "web" }))).await.unwrap();
    let status = json!({ "status": { "phase": "Running", "conditions": [{ "type": "Ready", "status": "True" }] } });
    pods.patch_status(name, &PatchParams::default(), &Patch::Merge(status)).await.unwrap();
}

/// A budget selecting `app=web`, with the status its controller would have written.
async fn budget(dc: &kubewasm_devcluster::DevCluster, status: Option<Value>) {
    let budgets: Api<PodDisruptionBudget> = Api::namespaced(dc.client(), "default");
    let pdb = json!({ "metadata": { "name": "web" }, "spec": { "minAvailable": 1, "selector": { "matchLabels": { "app": "web" } } } });
    budgets.create(&PostParams::default(), &serde_json::from_value(pdb).unwrap()).await.unwrap();
    if let Some(status) = status {
        budgets.patch_status("web", &PatchParams::default(), &Patch::Merge(json!({ "status": status }))).await.unwrap();
    }
}

#[tokio::test]
async fn a_pending_pod_is_evicted_without_consulting_budgets() {
    let dc = start().await;
    let pods: Api<Pod> = Api::namespaced(dc.client(), "default");
    pods.create(&PostParams::default(), &pod("pending", json!({ "app": "web" }))).await.unwrap();
    budget(
        &dc,
        Some(json!({ "observedGeneration": 1, "disruptionsAllowed": 0, "desiredHealthy": 1, "currentHealthy": 0 })),
    )
    .await;
    let status = pods.evict("pending", &EvictParams::default()).await.unwrap();
    assert_eq!(status.code, 201);
    assert!(pods.get_opt("pending").await.unwrap().is_none(), "the pod is gone");
    dc.shutdown().await;
}

#[tokio::test]
async fn a_budget_that_allows_no_disruption_refuses_with_429() {
    let dc = start().await;
    let pods: Api<Pod> = Api::namespaced(dc.client(), "default");
    running_pod(&pods, "web-1").await;
    budget(
        &dc,
        Some(json!({ "observedGeneration": 1, "disruptionsAllowed": 0, "desiredHealthy": 1, "currentHealthy": 1 })),
    )
    .await;
    let once: Api<Pod> = Api::namespaced(without_retries(&dc), "default");
    let refused = api_error(once.evict("web-1", &EvictParams::default()).await.unwrap_err());
    assert_eq!((refused.code, refused.reason.as_str()), (429, "TooManyRequests"));
    assert_eq!(refused.message, "Cannot evict pod as it would violate the pod's disruption budget.");
    let cause = &refused.details.unwrap().causes[0];
    assert_eq!(
        (cause.reason.as_str(), cause.message.as_str()),
        ("DisruptionBudget", "The disruption budget web needs 1 healthy pods and has 1 currently")
    );
    assert!(pods.get_opt("web-1").await.unwrap().is_some(), "the pod stays");
    dc.shutdown().await;
}

#[tokio::test]
async fn an_eviction_takes_a_disruption_from_the_budget_and_marks_the_pod() {
    let dc = start().await;
    let pods: Api<Pod> = Api::namespaced(dc.client(), "default");
    running_pod(&pods, "web-1").await;
    // A budget its controller has not seen yet: 429, come back in 10 seconds.
    budget(&dc, None).await;
    let body = json!({ "apiVersion": "policy/v1", "kind": "Eviction", "metadata": { "name": "web-1" } }).to_string();
    let req = http::Request::post(format!("{PODS}/web-1/eviction"))
        .header("content-type", "application/json")
        .body(body.into_bytes())
        .unwrap();
    let resp = without_retries(&dc).send(req.map(kube::client::Body::from)).await.unwrap();
    let retry_after = resp.headers().get("retry-after").map(|v| v.to_str().unwrap().to_string());
    assert_eq!((resp.status().as_u16(), retry_after.as_deref()), (429, Some("10")));
    let text = http_body_util::BodyExt::collect(resp.into_body()).await.unwrap().to_bytes();
    let text = String::from_utf8_lossy(&text);
    assert!(text.contains("The disruption budget web is still being processed by the server."), "{text}");

    let budgets: Api<PodDisruptionBudget> = Api::namespaced(dc.client(), "default");
    let status = json!({ "status": { "observedGeneration": 1, "disruptionsAllowed": 1, "desiredHealthy": 1, "currentHealthy": 2 } });
    budgets.patch_status("web", &PatchParams::default(), &Patch::Merge(status)).await.unwrap();
    let before = pods.get("web-1").await.unwrap().metadata.resource_version.unwrap();
    pods.evict("web-1", &EvictParams::default()).await.unwrap();
    assert!(pods.get_opt("web-1").await.unwrap().is_none());
    let after = budgets.get_status("web").await.unwrap().status.unwrap();
    assert_eq!(after.disruptions_allowed, 0);
    assert!(after.disrupted_pods.unwrap().contains_key("web-1"), "the budget records the pod");
    // Before it went, the pod was marked as a disruption target.
    let path = format!("{PODS}?watch=1&resourceVersion={before}&timeoutSeconds=1");
    let (_, _, frames) = exchange(&dc, "GET", &path, &[], "").await;
    let events: Vec<Value> = frames.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["MODIFIED", "DELETED"], "{frames}");
    let conditions = events[0]["object"]["status"]["conditions"].as_array().unwrap();
    let target = conditions.iter().find(|c| c["type"] == "DisruptionTarget").unwrap();
    assert_eq!(
        (&target["reason"], &target["message"]),
        (&json!("EvictionByEvictionAPI"), &json!("Eviction API: evicting"))
    );
    dc.shutdown().await;
}

#[tokio::test]
async fn a_pod_is_bound_once_and_its_streams_answer_as_without_a_kubelet() {
    let dc = start().await;
    let pods: Api<Pod> = Api::namespaced(dc.client(), "default");
    pods.create(&PostParams::default(), &pod("p", json!({}))).await.unwrap();
    // Not yet on a node: an empty log, and no stream.
    assert_eq!(pods.logs("p", &LogParams::default()).await.unwrap(), "");
    let (code, status) = raw(&dc, "POST", &format!("{PODS}/p/exec?command=true&stdout=1"), "", "").await;
    assert_eq!((code, status["message"].as_str()), (400, Some("pod p does not have a host assigned")));
    let (code, status) = raw(&dc, "GET", &format!("{PODS}/p/log?container=nope"), "", "").await;
    assert_eq!((code, status["message"].as_str()), (400, Some("container nope is not valid for pod p")));
    let (code, status) = raw(&dc, "GET", &format!("{PODS}/p/log?tailLines=-1"), "", "").await;
    assert_eq!(code, 422);
    assert_eq!(
        status["message"],
        "PodLogOptions \"p\" is invalid: tailLines: Invalid value: -1: must be greater than or equal to 0"
    );
    let (code, status) = raw(&dc, "POST", &format!("{PODS}/p/attach?dryRun=All"), "", "").await;
    assert_eq!((code, status["message"].as_str()), (400, Some("dryRun is not supported")));

    let binding =
        json!({ "apiVersion": "v1", "kind": "Binding", "metadata": { "name": "p", "annotations": { "placed": "yes" } },
        "target": { "kind": "Node", "name": "n1" } })
        .to_string();
    let (code, status) = raw(&dc, "POST", &format!("{PODS}/p/binding"), "application/json", &binding).await;
    assert_eq!((code, status["status"].as_str(), status["code"].as_i64()), (201, Some("Success"), Some(201)));
    let bound = pods.get("p").await.unwrap();
    assert_eq!(bound.spec.unwrap().node_name.as_deref(), Some("n1"));
    assert_eq!(bound.metadata.annotations.unwrap()["placed"], "yes");
    let scheduled = bound.status.unwrap().conditions.unwrap().into_iter().find(|c| c.type_ == "PodScheduled").unwrap();
    assert_eq!(scheduled.status, "True");
    let (code, status) = raw(&dc, "POST", &format!("{PODS}/p/binding"), "application/json", &binding).await;
    assert_eq!(code, 409);
    assert_eq!(
        status["message"],
        "Operation cannot be fulfilled on pods/binding \"p\": pod p is already assigned to node \"n1\""
    );

    // On a node the server does not know, and then on one it knows but cannot reach.
    let (code, status) = raw(&dc, "GET", &format!("{PODS}/p/log"), "", "").await;
    assert_eq!((code, status["message"].as_str()), (404, Some("nodes \"n1\" not found")));
    let nodes: Api<Node> = Api::all(dc.client());
    let node = json!({ "metadata": { "name": "n1" } });
    nodes.create(&PostParams::default(), &serde_json::from_value(node).unwrap()).await.unwrap();
    let (code, status) = raw(&dc, "GET", &format!("{PODS}/p/log"), "", "").await;
    assert_eq!((code, status["message"].as_str()), (500, Some("no preferred addresses found; known addresses: []")));
    let addresses = json!({ "status": { "addresses": [{ "type": "InternalIP", "address": "10.0.0.7" }] } });
    nodes.patch_status("n1", &PatchParams::default(), &Patch::Merge(addresses)).await.unwrap();
    let (code, status) = raw(&dc, "POST", &format!("{PODS}/p/portforward?ports=8080"), "", "").await;
    assert_eq!(code, 500, "{status}");
    assert!(status["message"].as_str().unwrap().starts_with("error dialing backend: "), "{status}");
    dc.shutdown().await;
}

#[tokio::test]
async fn ephemeral_containers_are_added_never_changed_or_removed() {
    let dc = start().await;
    let pods: Api<Pod> = Api::namespaced(dc.client(), "default");
    pods.create(&PostParams::default(), &pod("p", json!({}))).await.unwrap();
    let debugger = json!({ "spec": { "ephemeralContainers": [{ "name": "dbg", "image": "busybox", "targetContainerName": "app" }] } });
    let patched =
        pods.patch_ephemeral_containers("p", &PatchParams::default(), &Patch::Strategic(debugger)).await.unwrap();
    let ephemeral = patched.spec.unwrap().ephemeral_containers.unwrap();
    assert_eq!((ephemeral[0].name.as_str(), ephemeral[0].image.as_deref()), ("dbg", Some("busybox")));
    let got = pods.get_ephemeral_containers("p").await.unwrap();
    assert_eq!(got.spec.unwrap().ephemeral_containers.unwrap().len(), 1);

    let mut removed = pods.get("p").await.unwrap();
    removed.spec.as_mut().unwrap().ephemeral_containers = Some(Vec::new());
    let refused =
        api_error(pods.replace_ephemeral_containers("p", &PostParams::default(), &removed).await.unwrap_err());
    assert_eq!(refused.code, 422);
    assert!(
        refused
            .message
            .contains("spec.ephemeralContainers: Forbidden: existing ephemeral containers \"dbg\" may not be removed"),
        "{}",
        refused.message
    );
    let with_ports = json!({ "spec": { "ephemeralContainers": [{ "name": "dbg2", "image": "busybox", "ports": [{ "containerPort": 80 }] }] } });
    let refused = api_error(
        pods.patch_ephemeral_containers("p", &PatchParams::default(), &Patch::Strategic(with_ports)).await.unwrap_err(),
    );
    assert!(
        refused
            .message
            .contains("spec.ephemeralContainers[1].ports: Forbidden: cannot be set for an Ephemeral Container"),
        "{}",
        refused.message
    );
    dc.shutdown().await;
}

#[tokio::test]
async fn a_csr_is_approved_through_its_approval_and_not_both_ways() {
    let dc = start().await;
    let csrs: Api<CertificateSigningRequest> = Api::all(dc.client());
    let csr = json!({ "metadata": { "name": "fake" }, "spec": { "request": "LS0tLQo=", "signerName": "kubernetes.io/kube-apiserver-client",
        "expirationSeconds": 86400, "usages": ["client auth"] } });
    csrs.create(&PostParams::default(), &serde_json::from_value(csr).unwrap()).await.unwrap();
    // kube-rs's `csr_can_be_approved`: a condition of its own type.
    let approved = json!({ "status": { "conditions": [{ "type": "ApprovedFake", "status": "True", "reason": "kube-rsClient", "message": "ApprovedFake by kube-rs client" }] } });
    csrs.patch_approval("fake", &PatchParams::default(), &Patch::Merge(approved)).await.unwrap();
    let got = csrs.get_approval("fake").await.unwrap();
    let conditions = got.status.unwrap().conditions.unwrap();
    assert_eq!(conditions[0].type_, "ApprovedFake");
    assert!(conditions[0].last_update_time.is_some(), "the server stamps the condition");

    let both = json!({ "status": { "conditions": [{ "type": "Approved", "status": "True" }, { "type": "Denied", "status": "True" }] } });
    let refused =
        api_error(csrs.patch_approval("fake", &PatchParams::default(), &Patch::Merge(both)).await.unwrap_err());
    assert_eq!(refused.code, 422);
    assert!(
        refused.message.contains("status.conditions[1].type: Invalid value: \"Denied\": Approved and Denied conditions are mutually exclusive"),
        "{}",
        refused.message
    );
    let spec_change = json!({ "spec": { "signerName": "other.example.com/x" } });
    let kept = csrs.patch_approval("fake", &PatchParams::default(), &Patch::Merge(spec_change)).await.unwrap();
    assert_eq!(kept.spec.signer_name, "kubernetes.io/kube-apiserver-client", "approval writes conditions only");
    dc.shutdown().await;
}

#[tokio::test]
async fn component_statuses_are_listed_with_their_deprecation_warning() {
    let dc = start().await;
    let statuses: Api<ComponentStatus> = Api::all(dc.client());
    let list = statuses.list(&ListParams::default()).await.unwrap();
    let names: Vec<String> = list.items.iter().map(|c| c.metadata.name.clone().unwrap()).collect();
    assert_eq!(names, ["controller-manager", "etcd-0", "scheduler"]);
    let etcd = statuses.get("etcd-0").await.unwrap();
    assert_eq!(etcd.conditions.unwrap()[0].status, "True");
    let (code, headers, _) = exchange(&dc, "GET", "/api/v1/componentstatuses", &[], "").await;
    assert_eq!(code, 200);
    assert_eq!(headers["warning"], "299 - \"v1 ComponentStatus is deprecated in v1.19+\"");
    let (code, status) = raw(&dc, "GET", "/api/v1/componentstatuses?watch=1", "", "").await;
    assert_eq!(
        (code, status["message"].as_str()),
        (405, Some("watch is not supported on resources of kind \"componentstatuses\""))
    );
    dc.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_logs_exec_debug_drain_approve_and_get_cs_behave_as_on_a_cluster_without_kubelets() {
    let dc = start().await;
    ok(&kubectl(&dc, &["run", "p", "--image=busybox", "--restart=Never"]).await);
    let logs = ok(&kubectl(&dc, &["logs", "p"]).await);
    assert!(logs.is_empty(), "{logs}");
    let exec = kubectl(&dc, &["exec", "p", "--", "true"]).await;
    assert!(!exec.status.success());
    let err = String::from_utf8_lossy(&exec.stderr);
    assert!(err.contains("Error from server (BadRequest): pod p does not have a host assigned"), "{err}");
    let debug = kubectl(&dc, &["debug", "p", "--image=busybox", "--profile=general"]).await;
    assert!(debug.status.success(), "{}", String::from_utf8_lossy(&debug.stderr));
    let ephemeral =
        ok(&kubectl(&dc, &["get", "pod", "p", "-o", "jsonpath={.spec.ephemeralContainers[0].image}"]).await);
    assert_eq!(ephemeral, "busybox");

    let cs = kubectl(&dc, &["get", "componentstatuses"]).await;
    let table = String::from_utf8_lossy(&cs.stdout);
    assert!(table.starts_with("NAME") && table.contains("etcd-0") && table.contains("Healthy"), "{table}");
    assert!(String::from_utf8_lossy(&cs.stderr).contains("Warning: v1 ComponentStatus is deprecated in v1.19+"));

    let csr = json!({ "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest", "metadata": { "name": "me" },
        "spec": { "request": "LS0tLQo=", "signerName": "kubernetes.io/kube-apiserver-client", "usages": ["client auth"] } });
    let file = dc.kubeconfig_path().with_extension("csr.json");
    std::fs::write(&file, csr.to_string()).unwrap();
    ok(&kubectl(&dc, &["create", "-f", &file.display().to_string()]).await);
    let _ = std::fs::remove_file(file);
    let approved = ok(&kubectl(&dc, &["certificate", "approve", "me"]).await);
    assert!(approved.contains("approved"), "{approved}");
    let row = ok(&kubectl(&dc, &["get", "csr", "me", "--no-headers"]).await);
    assert!(row.trim_end().ends_with("Approved"), "{row}");

    // A node with a pod bound to it, drained by eviction.
    let nodes: Api<Node> = Api::all(dc.client());
    nodes
        .create(&PostParams::default(), &serde_json::from_value(json!({ "metadata": { "name": "n1" } })).unwrap())
        .await
        .unwrap();
    ok(&kubectl(
        &dc,
        &["run", "q", "--image=busybox", "--restart=Never", "--overrides", r#"{"spec":{"nodeName":"n1"}}"#],
    )
    .await);
    let drained = kubectl(&dc, &["drain", "n1", "--force", "--timeout=20s"]).await;
    let out = String::from_utf8_lossy(&drained.stdout);
    assert!(drained.status.success(), "{out}{}", String::from_utf8_lossy(&drained.stderr));
    assert!(out.contains("pod/q evicted") && out.contains("node/n1 drained"), "{out}");
    dc.shutdown().await;
}
