//! The real kubectl against the server: apply (client- and server-side), get, get -w, describe,
//! delete, wait, and server-side dry run.

use std::io::{BufRead, BufReader};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kubewasm_devcluster::DevCluster;
use serde_json::json;

use super::{fixture, foo_resource, start};

/// Runs kubectl with the server's kubeconfig and a private discovery cache.
pub async fn kubectl(dc: &DevCluster, args: &[&str]) -> Output {
    let mut cmd = base_command(dc);
    cmd.args(args);
    tokio::task::spawn_blocking(move || cmd.output().expect("kubectl runs")).await.unwrap()
}

/// Runs kubectl with another kubeconfig (another user's, given as text) on the same server.
pub async fn kubectl_with(dc: &DevCluster, kubeconfig: &str, args: &[&str]) -> Output {
    static FILES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = FILES.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let file = dc.kubeconfig_path().with_extension(format!("user-{n}.kubeconfig"));
    std::fs::write(&file, kubeconfig).expect("the kubeconfig is written");
    let cache = dc.kubeconfig_path().with_extension(format!("user-{n}.kubectl-cache"));
    let mut cmd = Command::new("kubectl");
    cmd.arg("--kubeconfig").arg(&file).arg("--cache-dir").arg(cache).args(args);
    let out = tokio::task::spawn_blocking(move || cmd.output().expect("kubectl runs")).await.unwrap();
    let _ = std::fs::remove_file(file);
    out
}

/// What kubectl wrote to stderr.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn base_command(dc: &DevCluster) -> Command {
    let cache = dc.kubeconfig_path().with_extension("kubectl-cache");
    let mut cmd = Command::new("kubectl");
    cmd.arg("--kubeconfig").arg(dc.kubeconfig_path()).arg("--cache-dir").arg(cache);
    cmd
}

pub fn ok(out: &Output) -> String {
    assert!(out.status.success(), "kubectl failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn path(name: &str) -> String {
    fixture(name).display().to_string()
}

/// A long-running kubectl whose output lines arrive on a channel.
pub struct Streaming {
    child: std::process::Child,
    lines: mpsc::Receiver<String>,
}

impl Streaming {
    pub fn start(dc: &DevCluster, args: &[&str]) -> Streaming {
        let mut cmd = base_command(dc);
        cmd.args(args).stdout(Stdio::piped()).stderr(Stdio::null());
        let mut child = cmd.spawn().expect("kubectl starts");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Streaming { child, lines }
    }

    /// The next line containing `needle`, within a few seconds.
    pub async fn expect(&self, needle: &str) -> String {
        self.until(needle).await.pop().expect("the line found")
    }

    /// The lines printed up to the next one containing `needle` (included), within a few
    /// seconds.
    pub async fn until(&self, needle: &str) -> Vec<String> {
        let mut seen = Vec::new();
        for _ in 0..100 {
            while let Ok(line) = self.lines.try_recv() {
                let found = line.contains(needle);
                seen.push(line);
                if found {
                    return seen;
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("kubectl printed no line with {needle:?}: {seen:?}");
    }
}

impl Drop for Streaming {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_the_foo_crd_and_a_foo_then_get_w_shows_changes() {
    let dc = start().await;
    let out = ok(&kubectl(&dc, &["apply", "-f", &path("foo-crd.yaml")]).await);
    assert!(
        out.contains("customresourcedefinition.apiextensions.k8s.io/foos.samplecontroller.k8s.io created"),
        "{out}"
    );
    let out = ok(&kubectl(&dc, &["apply", "-f", &path("foo.yaml")]).await);
    assert!(out.contains("foo.samplecontroller.k8s.io/example-foo created"), "{out}");

    let watch = Streaming::start(&dc, &["get", "foos", "-w", "--output-watch-events"]);
    watch.expect("example-foo").await;
    let foos: Api<DynamicObject> = Api::namespaced_with(dc.client(), "default", &foo_resource());
    foos.patch("example-foo", &PatchParams::default(), &Patch::Merge(json!({ "spec": { "replicas": 3 } })))
        .await
        .unwrap();
    assert!(watch.expect("example-foo").await.starts_with("MODIFIED"));
    ok(&kubectl(&dc, &["delete", "foo", "example-foo"]).await);
    assert!(watch.expect("example-foo").await.starts_with("DELETED"));

    let plain = ok(&kubectl(&dc, &["get", "foos"]).await);
    assert!(plain.is_empty(), "{plain}");
    dc.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foo_with_eleven_replicas_is_refused_naming_the_field() {
    let dc = start().await;
    ok(&kubectl(&dc, &["apply", "-f", &path("foo-crd.yaml")]).await);
    let out = kubectl(&dc, &["apply", "-f", &path("foo-too-many.yaml")]).await;
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "is invalid: spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10"
        ),
        "{err}"
    );
    let typo = kubectl(&dc, &["apply", "-f", &path("foo-typo.yaml")]).await;
    assert!(!typo.status.success(), "kubectl asks for strict field validation");
    let err = String::from_utf8_lossy(&typo.stderr);
    assert!(err.contains("strict decoding error: unknown field \"spec.replica\""), "{err}");
    let warned = kubectl(&dc, &["apply", "--validate=warn", "-f", &path("foo-typo.yaml")]).await;
    assert!(warned.status.success());
    let err = String::from_utf8_lossy(&warned.stderr);
    assert!(err.contains("Warning: unknown field \"spec.replica\""), "{err}");
    dc.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_side_apply_updates_a_deployment_with_a_strategic_merge_patch() {
    let dc = start().await;
    ok(&kubectl(&dc, &["apply", "-f", &path("deployment.yaml")]).await);
    let changed = std::fs::read_to_string(fixture("deployment.yaml")).unwrap().replace("nginx:1.25", "nginx:1.26");
    let file = dc.kubeconfig_path().with_extension("deployment.yaml");
    std::fs::write(&file, changed).unwrap();
    let out = ok(&kubectl(&dc, &["apply", "-f", &file.display().to_string()]).await);
    assert!(out.contains("deployment.apps/web configured"), "{out}");
    let deployments: Api<Deployment> = Api::namespaced(dc.client(), "default");
    let d = deployments.get("web").await.unwrap();
    assert_eq!(d.spec.unwrap().template.spec.unwrap().containers[0].image.as_deref(), Some("nginx:1.26"));
    let annotations = d.metadata.annotations.unwrap();
    assert!(annotations["kubectl.kubernetes.io/last-applied-configuration"].contains("nginx:1.26"));
    assert_eq!(d.metadata.generation, Some(2));
    let unchanged = ok(&kubectl(&dc, &["apply", "-f", &file.display().to_string()]).await);
    assert!(unchanged.contains("deployment.apps/web unchanged"), "{unchanged}");
    let _ = std::fs::remove_file(file);
    let table = ok(&kubectl(&dc, &["get", "deployments"]).await);
    assert!(table.starts_with("NAME") && table.contains("web"), "{table}");
    dc.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_side_apply_reports_conflicts_and_forces() {
    let dc = start().await;
    let out = ok(&kubectl(&dc, &["apply", "--server-side", "-f", &path("deployment.yaml")]).await);
    assert!(out.contains("serverside-applied"), "{out}");
    let changed = std::fs::read_to_string(fixture("deployment.yaml")).unwrap().replace("replicas: 2", "replicas: 4");
    let file = dc.kubeconfig_path().with_extension("scaled.yaml");
    std::fs::write(&file, changed).unwrap();
    let file = file.display().to_string();
    let out = kubectl(&dc, &["apply", "--server-side", "--field-manager=other", "-f", &file]).await;
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("conflict with \"kubectl\""), "{err}");
    assert!(err.contains(".spec.replicas"), "{err}");
    ok(&kubectl(&dc, &["apply", "--server-side", "--field-manager=other", "--force-conflicts", "-f", &file]).await);
    let replicas = ok(&kubectl(&dc, &["get", "deployment", "web", "-o", "jsonpath={.spec.replicas}"]).await);
    assert_eq!(replicas, "4");
    let yaml = ok(&kubectl(&dc, &["get", "deployment", "web", "-o", "yaml", "--show-managed-fields"]).await);
    assert!(yaml.contains("manager: other") && yaml.contains("operation: Apply"), "{yaml}");
    let _ = std::fs::remove_file(file);
    dc.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_yaml_describe_wait_and_delete_work() {
    let dc = start().await;
    ok(&kubectl(&dc, &["apply", "-f", &path("foo-crd.yaml")]).await);
    ok(&kubectl(&dc, &["wait", "--for=condition=Established", "crd/foos.samplecontroller.k8s.io", "--timeout=10s"])
        .await);
    ok(&kubectl(&dc, &["apply", "-f", &path("foo.yaml")]).await);
    let yaml = ok(&kubectl(&dc, &["get", "foo", "example-foo", "-o", "yaml"]).await);
    assert!(yaml.contains("deploymentName: example-foo") && yaml.contains("uid:"), "{yaml}");
    let foos: Api<DynamicObject> = Api::namespaced_with(dc.client(), "default", &foo_resource());
    let recorder = Recorder::new(dc.client(), Reporter { controller: "kubewasm-test".into(), instance: None });
    let event = Event {
        type_: EventType::Warning,
        reason: "Taken".into(),
        note: Some("deployment exists".into()),
        action: "Reconcile".into(),
        secondary: None,
    };
    let reference = kube::Resource::object_ref(&foos.get("example-foo").await.unwrap(), &foo_resource());
    recorder.publish(&event, &reference).await.unwrap();
    let described = ok(&kubectl(&dc, &["describe", "foo", "example-foo"]).await);
    assert!(described.contains("Deployment Name:  example-foo"), "{described}");
    assert!(described.contains("Warning  Taken") && described.contains("deployment exists"), "{described}");

    let waiting = {
        let mut cmd = base_command(&dc);
        cmd.args(["wait", "--for=jsonpath={.status.availableReplicas}=1", "foo/example-foo", "--timeout=20s"]);
        tokio::task::spawn_blocking(move || cmd.output().unwrap())
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    foos.patch_status(
        "example-foo",
        &PatchParams::default(),
        &Patch::Merge(json!({ "status": { "availableReplicas": 1 } })),
    )
    .await
    .unwrap();
    ok(&waiting.await.unwrap());

    let out = ok(&kubectl(&dc, &["delete", "foo", "example-foo"]).await);
    assert!(out.contains("deleted"), "{out}");
    let missing = kubectl(&dc, &["get", "foo", "example-foo"]).await;
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("NotFound"));
    dc.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_dry_run_validates_without_storing() {
    let dc = start().await;
    ok(&kubectl(&dc, &["apply", "-f", &path("foo-crd.yaml")]).await);
    let out = ok(&kubectl(&dc, &["apply", "--dry-run=server", "-f", &path("foo.yaml")]).await);
    assert!(out.contains("(server dry run)"), "{out}");
    let refused = kubectl(&dc, &["apply", "--dry-run=server", "-f", &path("foo-too-many.yaml")]).await;
    assert!(!refused.status.success());
    let foos: Api<DynamicObject> = Api::namespaced_with(dc.client(), "default", &foo_resource());
    assert!(foos.get_opt("example-foo").await.unwrap().is_none());
    dc.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn moving_from_client_side_to_server_side_apply_takes_over_without_conflicts() {
    let dc = start().await;
    ok(&kubectl(&dc, &["apply", "-f", &path("deployment.yaml")]).await);
    let changed = std::fs::read_to_string(fixture("deployment.yaml")).unwrap().replace("replicas: 2", "replicas: 3");
    let file = dc.kubeconfig_path().with_extension("ssa.yaml");
    std::fs::write(&file, changed).unwrap();
    let out = ok(&kubectl(&dc, &["apply", "--server-side", "-f", &file.display().to_string()]).await);
    assert!(out.contains("serverside-applied"), "{out}");
    let _ = std::fs::remove_file(file);
    let deployments: Api<Deployment> = Api::namespaced(dc.client(), "default");
    let d = deployments.get("web").await.unwrap();
    let managers: Vec<String> = d.metadata.managed_fields.unwrap().into_iter().filter_map(|m| m.manager).collect();
    assert!(!managers.contains(&"kubectl-client-side-apply".to_string()), "{managers:?}");
    let spec = d.spec.unwrap();
    assert_eq!(spec.replicas, Some(3));
    assert!(spec.strategy.is_some(), "defaults come back after the applier drops them");
    dc.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_create_commands_sending_protobuf_work_in_a_new_namespace() {
    let dc = start().await;
    ok(&kubectl(&dc, &["create", "namespace", "team"]).await);
    ok(&kubectl(&dc, &["create", "configmap", "settings", "-n", "team", "--from-literal=mode=fast"]).await);
    ok(&kubectl(&dc, &["create", "secret", "generic", "token", "-n", "team", "--from-literal=value=s3cret"]).await);
    let mode = ok(&kubectl(&dc, &["get", "configmap", "settings", "-n", "team", "-o", "jsonpath={.data.mode}"]).await);
    assert_eq!(mode, "fast");
    let value = ok(&kubectl(&dc, &["get", "secret", "token", "-n", "team", "-o", "jsonpath={.data.value}"]).await);
    assert_eq!(value, "czNjcmV0");
    dc.shutdown().await;
}
