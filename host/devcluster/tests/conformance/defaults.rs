//! What the server fills in and prints for built-in kinds, compared with a real 1.33
//! kube-apiserver: `SetDefaults` field by field (also inside objects a client sent empty),
//! what a create generates (a Job's selector), initial status, and the columns of
//! `kubectl get`.

use serde_json::{Value, json};

use super::kubectl::{kubectl, ok, path};
use super::start;

async fn get_json(dc: &kubewasm_devcluster::DevCluster, args: &[&str]) -> Value {
    let mut all = vec!["get"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["-o", "json"]);
    serde_json::from_str(&ok(&kubectl(dc, &all).await)).expect("kubectl prints JSON")
}

/// kubectl's table with runs of spaces collapsed, one string per line.
async fn table(dc: &kubewasm_devcluster::DevCluster, args: &[&str]) -> Vec<String> {
    let mut all = vec!["get"];
    all.extend_from_slice(args);
    ok(&kubectl(dc, &all).await).lines().map(|l| l.split_whitespace().collect::<Vec<_>>().join(" ")).collect()
}

#[tokio::test]
async fn a_deployment_created_through_protobuf_gets_its_strategy_and_no_service_links() {
    let dc = start().await;
    // kubectl sends protobuf with `strategy: {}`: defaults fill the fields inside it.
    ok(&kubectl(&dc, &["create", "deployment", "web", "--image=nginx:1.27"]).await);
    let deploy = get_json(&dc, &["deployment", "web"]).await;
    assert_eq!(
        deploy["spec"]["strategy"],
        json!({ "type": "RollingUpdate", "rollingUpdate": { "maxSurge": "25%", "maxUnavailable": "25%" } })
    );
    assert_eq!(deploy["spec"]["revisionHistoryLimit"], 10);
    let template = &deploy["spec"]["template"]["spec"];
    assert_eq!(template["restartPolicy"], "Always");
    assert!(template.get("enableServiceLinks").is_none(), "a pod template gets no service links: {template}");
    assert_eq!(deploy["status"], json!({}));

    ok(&kubectl(&dc, &["run", "once", "--image=busybox"]).await);
    let pod = get_json(&dc, &["pod", "once"]).await;
    assert_eq!(pod["spec"]["enableServiceLinks"], true, "pods get service links");
    dc.shutdown().await;
}

#[tokio::test]
async fn workload_kinds_get_their_defaults_and_initial_status() {
    let dc = start().await;
    ok(&kubectl(&dc, &["apply", "--server-side", "-f", &path("builtins.yaml")]).await);

    let job = get_json(&dc, &["job", "pi"]).await;
    let uid = job["metadata"]["uid"].as_str().unwrap().to_string();
    let spec = &job["spec"];
    for (field, value) in [
        ("completions", json!(1)),
        ("parallelism", json!(1)),
        ("backoffLimit", json!(6)),
        ("completionMode", json!("NonIndexed")),
        ("suspend", json!(false)),
        ("podReplacementPolicy", json!("TerminatingOrFailed")),
    ] {
        assert_eq!(spec[field], value, "Job spec.{field}");
    }
    assert_eq!(spec["selector"], json!({ "matchLabels": { "batch.kubernetes.io/controller-uid": uid } }));
    let labels = &spec["template"]["metadata"]["labels"];
    assert_eq!(labels["batch.kubernetes.io/job-name"], "pi");
    assert_eq!(labels["job-name"], "pi");
    assert_eq!(labels["controller-uid"], json!(uid));
    assert_eq!(job["status"], json!({}));

    let cron = get_json(&dc, &["cronjob", "nightly"]).await;
    for (field, value) in [
        ("concurrencyPolicy", json!("Allow")),
        ("suspend", json!(false)),
        ("successfulJobsHistoryLimit", json!(3)),
        ("failedJobsHistoryLimit", json!(1)),
    ] {
        assert_eq!(cron["spec"][field], value, "CronJob spec.{field}");
    }
    assert!(cron["spec"]["jobTemplate"]["spec"].get("backoffLimit").is_none(), "Job defaults wait for the Job");

    let sts = get_json(&dc, &["statefulset", "db"]).await;
    assert_eq!(sts["spec"]["podManagementPolicy"], "OrderedReady");
    assert_eq!(sts["spec"]["updateStrategy"], json!({ "type": "RollingUpdate", "rollingUpdate": { "partition": 0 } }));
    assert_eq!(
        sts["spec"]["persistentVolumeClaimRetentionPolicy"],
        json!({ "whenDeleted": "Retain", "whenScaled": "Retain" })
    );
    assert_eq!(sts["status"], json!({ "availableReplicas": 0, "replicas": 0 }));

    let ds = get_json(&dc, &["daemonset", "agent"]).await;
    assert_eq!(
        ds["spec"]["updateStrategy"],
        json!({ "type": "RollingUpdate", "rollingUpdate": { "maxSurge": 0, "maxUnavailable": 1 } })
    );

    let pvc = get_json(&dc, &["pvc", "data"]).await;
    assert_eq!(pvc["spec"]["volumeMode"], "Filesystem");
    assert_eq!(pvc["status"], json!({ "phase": "Pending" }));

    // Egress rules without policy types: both types, and ports default to TCP.
    let policy = json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": { "name": "egress" },
        "spec": { "podSelector": {}, "egress": [{ "ports": [{ "port": 53 }] }] },
    });
    let file = dc.kubeconfig_path().with_file_name("egress-policy.json");
    std::fs::write(&file, policy.to_string()).unwrap();
    ok(&kubectl(&dc, &["apply", "--server-side", "-f", file.to_str().unwrap()]).await);
    let policy = get_json(&dc, &["networkpolicy", "egress"]).await;
    assert_eq!(policy["spec"]["policyTypes"], json!(["Ingress", "Egress"]));
    assert_eq!(policy["spec"]["egress"][0]["ports"][0]["protocol"], "TCP");
    dc.shutdown().await;
}

#[tokio::test]
async fn a_job_that_would_restart_always_is_refused_as_the_real_server_does() {
    let dc = start().await;
    let job = json!({
        "apiVersion": "batch/v1", "kind": "Job", "metadata": { "name": "forever" },
        "spec": { "template": { "spec": { "containers": [{ "name": "c", "image": "busybox" }] } } },
    });
    let file = dc.kubeconfig_path().with_file_name("forever-job.json");
    std::fs::write(&file, job.to_string()).unwrap();
    let out = kubectl(&dc, &["create", "-f", file.to_str().unwrap()]).await;
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            r#"spec.template.spec.restartPolicy: Unsupported value: "Always": supported values: "OnFailure", "Never""#
        ),
        "{stderr}"
    );
    dc.shutdown().await;
}

#[tokio::test]
async fn kubectl_get_prints_the_columns_of_a_real_server() {
    let dc = start().await;
    ok(&kubectl(&dc, &["apply", "-f", &path("builtins.yaml")]).await);
    ok(&kubectl(&dc, &["create", "deployment", "web", "--image=nginx:1.27"]).await);
    ok(&kubectl(&dc, &["create", "service", "nodeport", "web", "--tcp=80:8080", "--node-port=30002"]).await);

    let jobs = table(&dc, &["jobs"]).await;
    assert_eq!(jobs[0], "NAME STATUS COMPLETIONS DURATION AGE");
    assert!(jobs[1].starts_with("pi Running 0/1 "), "{jobs:?}");

    let cron = table(&dc, &["cronjobs"]).await;
    assert_eq!(cron[0], "NAME SCHEDULE TIMEZONE SUSPEND ACTIVE LAST SCHEDULE AGE");
    assert!(cron[1].starts_with("nightly 0 3 * * * <none> False 0 <none> "), "{cron:?}");

    let sts = table(&dc, &["statefulsets", "-o", "wide"]).await;
    assert_eq!(sts[0], "NAME READY AGE CONTAINERS IMAGES");
    assert!(sts[1].starts_with("db 0/2 ") && sts[1].ends_with(" db postgres"), "{sts:?}");

    let ds = table(&dc, &["daemonsets"]).await;
    assert_eq!(ds[0], "NAME DESIRED CURRENT READY UP-TO-DATE AVAILABLE NODE SELECTOR AGE");
    assert!(ds[1].starts_with("agent 0 0 0 0 0 <none> "), "{ds:?}");

    let pvc = table(&dc, &["pvc"]).await;
    assert_eq!(pvc[0], "NAME STATUS VOLUME CAPACITY ACCESS MODES STORAGECLASS VOLUMEATTRIBUTESCLASS AGE");
    assert!(pvc[1].starts_with("data Pending <unset> "), "{pvc:?}");

    let ingress = table(&dc, &["ingress"]).await;
    assert_eq!(ingress[0], "NAME CLASS HOSTS ADDRESS PORTS AGE");
    assert!(ingress[1].starts_with("web <none> web.example.com 80 "), "{ingress:?}");

    let svc = table(&dc, &["service", "web"]).await;
    assert_eq!(svc[0], "NAME TYPE CLUSTER-IP EXTERNAL-IP PORT(S) AGE");
    assert!(svc[1].starts_with("web NodePort 10.96.") && svc[1].contains(" <none> 80:30002/TCP "), "{svc:?}");

    let deploy = table(&dc, &["deployment", "web", "-o", "wide"]).await;
    assert_eq!(deploy[0], "NAME READY UP-TO-DATE AVAILABLE AGE CONTAINERS IMAGES SELECTOR");
    assert!(deploy[1].starts_with("web 0/1 0 0 ") && deploy[1].ends_with(" nginx nginx:1.27 app=web"), "{deploy:?}");
    dc.shutdown().await;
}
