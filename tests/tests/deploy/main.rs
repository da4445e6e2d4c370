//! The manifests of `deploy/`: kustomize builds them, they keep the promises a platform
//! team checks (probes, ports, a locked-down security context), and the embedded API
//! server accepts them with `kubectl apply --dry-run=server`.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ListParams, PostParams};
use kubewasm_devcluster::{DevCluster, Options};
use serde_json::Value;

fn deploy_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").join("deploy")
}

fn succeeded(out: &Output, what: &str) -> String {
    assert!(out.status.success(), "{what} failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout.clone()).expect("utf-8 output")
}

/// `kubectl kustomize deploy/`: the manifests as YAML text.
fn kustomize() -> String {
    let out = Command::new("kubectl").arg("kustomize").arg(deploy_dir()).output().expect("kubectl runs");
    succeeded(&out, "kubectl kustomize deploy/")
}

fn documents(text: &str) -> Vec<Value> {
    serde_yaml_ng::Deserializer::from_str(text)
        .map(|d| serde::Deserialize::deserialize(d).expect("a YAML document"))
        .filter(|v: &Value| !v.is_null())
        .collect()
}

fn find<'a>(objects: &'a [Value], kind: &str) -> &'a Value {
    objects.iter().find(|o| o["kind"] == kind).unwrap_or_else(|| panic!("no {kind} in deploy/"))
}

#[test]
fn the_deployment_runs_the_host_locked_down_with_probes_and_a_metrics_port() {
    let objects = documents(&kustomize());
    let deployment = find(&objects, "Deployment");
    assert_eq!(deployment["metadata"]["namespace"], "kubewasm-system");
    let pod = &deployment["spec"]["template"]["spec"];
    assert_eq!(pod["serviceAccountName"], find(&objects, "ServiceAccount")["metadata"]["name"]);
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert_eq!(pod["securityContext"]["seccompProfile"]["type"], "RuntimeDefault");
    let container = &pod["containers"][0];
    let args: Vec<&str> = container["args"].as_array().expect("args").iter().filter_map(Value::as_str).collect();
    assert_eq!(args[0], "run");
    assert!(args.contains(&"--plugins=/plugins"), "{args:?}");
    assert!(args.contains(&"--health-addr=0.0.0.0:8080"), "{args:?}");
    let security = &container["securityContext"];
    assert_eq!(security["readOnlyRootFilesystem"], true);
    assert_eq!(security["allowPrivilegeEscalation"], false);
    assert_eq!(security["capabilities"]["drop"][0], "ALL");
    let port = |name: &str| {
        container["ports"]
            .as_array()
            .expect("ports")
            .iter()
            .find(|p| p["name"] == name)
            .map(|p| p["containerPort"].clone())
    };
    assert_eq!(port("http"), Some(8080.into()), "probes and /metrics share one port");
    assert!(args.contains(&"--leader-elect"), "{args:?}");
    // Plugin objects are followed, and each plugin acts as its own ServiceAccount.
    assert!(args.contains(&"--plugin-resources") && args.contains(&"--plugin-identities"), "{args:?}");
    let crd = objects.iter().find(|o| o["kind"] == "CustomResourceDefinition");
    assert_eq!(crd.map(|c| c["metadata"]["name"].clone()), Some("plugins.kubewasm.io".into()));
    let accounts = objects.iter().filter(|o| o["kind"] == "ServiceAccount").count();
    assert!(accounts > 1, "an account per plugin beside the host's");
    assert_eq!(container["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/readyz");
    assert!(container["resources"]["requests"].is_object() && container["resources"]["limits"].is_object());
    let mount = container["volumeMounts"].as_array().expect("mounts").iter().find(|m| m["mountPath"] == "/plugins");
    let volume = mount.and_then(|m| pod["volumes"].as_array()?.iter().find(|v| v["name"] == m["name"]));
    assert!(volume.is_some_and(|v| v["image"]["reference"].is_string()), "/plugins comes from an image volume");
    // Every path the host writes to is a volume: the root filesystem is read-only.
    let env = container["env"].as_array().expect("env");
    let cache = env.iter().find(|e| e["name"] == "KUBEWASM_CACHE_DIR").map(|e| e["value"].clone());
    let mounted =
        |path: &Value| container["volumeMounts"].as_array().is_some_and(|m| m.iter().any(|m| &m["mountPath"] == path));
    assert!(cache.as_ref().is_some_and(mounted), "the plugin cache directory {cache:?} is a mounted volume");
}

#[test]
fn the_webhook_service_reaches_the_hosts_webhook_port_by_the_name_its_certificate_carries() {
    let objects = documents(&kustomize());
    let service = find(&objects, "Service");
    assert_eq!(
        (&service["metadata"]["name"], &service["metadata"]["namespace"]),
        (&"kubewasm-webhooks".into(), &"kubewasm-system".into()),
        "kubewasm webhooks --service kubewasm-system/kubewasm-webhooks, and the name the API server checks: \
         kubewasm-webhooks.kubewasm-system.svc"
    );
    let port = &service["spec"]["ports"][0];
    assert_eq!(port["port"], 443, "the port a webhook's service reference defaults to");
    let pod = &find(&objects, "Deployment")["spec"]["template"];
    let labels = pod["metadata"]["labels"].as_object().expect("pod labels");
    let selector = service["spec"]["selector"].as_object().expect("a selector");
    assert!(selector.iter().all(|(k, v)| labels.get(k) == Some(v)), "{selector:?} selects the host's pods {labels:?}");
    let container = &pod["spec"]["containers"][0];
    let target = container["ports"].as_array().expect("ports").iter().find(|p| p["name"] == port["targetPort"]);
    assert_eq!(target.map(|p| p["containerPort"].clone()), Some(9443.into()), "kubewasm run's --webhook-listen");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_kustomization_is_accepted_by_the_api_server() {
    let manifests = kustomize();
    let objects = documents(&manifests);
    let cluster = DevCluster::start(Options::default()).await.expect("the embedded API server starts");
    // A dry run creates nothing, so the namespace the other objects go to must exist,
    // as it would on a real cluster: create it from the manifests first.
    let namespace: Namespace = serde_json::from_value(find(&objects, "Namespace").clone()).expect("a Namespace");
    Api::<Namespace>::all(cluster.client())
        .create(&PostParams::default(), &namespace)
        .await
        .expect("namespace created");

    let kubeconfig = cluster.kubeconfig_path().to_path_buf();
    let applied = tokio::task::spawn_blocking(move || {
        let mut child = Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .arg("--cache-dir")
            .arg(kubeconfig.with_extension("kubectl-cache"))
            .args(["apply", "--dry-run=server", "-f", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("kubectl runs");
        child.stdin.take().expect("stdin").write_all(manifests.as_bytes()).expect("write manifests");
        child.wait_with_output().expect("kubectl finishes")
    })
    .await
    .expect("kubectl task");
    let applied = succeeded(&applied, "kubectl apply --dry-run=server");
    for object in &objects {
        let kind = object["kind"].as_str().expect("kind").to_lowercase();
        let name = object["metadata"]["name"].as_str().expect("name");
        let accepted = applied.lines().any(|line| {
            (line.starts_with(&format!("{kind}/")) || line.starts_with(&format!("{kind}.")))
                && line.contains(&format!("/{name} "))
                && line.ends_with("(server dry run)")
        });
        assert!(accepted, "{kind}/{name} not accepted:\n{applied}");
    }
    let deployments: Api<Deployment> = Api::namespaced(cluster.client(), "kubewasm-system");
    let stored = deployments.list(&ListParams::default()).await.expect("list deployments");
    assert!(stored.items.is_empty(), "a dry run stores nothing");
    cluster.shutdown().await;
}

/// The Dockerfile's instructions, continuation lines joined, comments dropped.
fn dockerfile() -> Vec<String> {
    let text = std::fs::read_to_string(deploy_dir().with_file_name("Dockerfile")).expect("read Dockerfile");
    let mut lines = Vec::new();
    let mut current = String::new();
    for line in text.lines().map(str::trim).filter(|l| !l.starts_with('#') && !l.is_empty()) {
        match line.strip_suffix('\\') {
            Some(part) => current.push_str(part),
            None => {
                current.push_str(line);
                lines.push(std::mem::take(&mut current));
            }
        }
    }
    lines
}

/// The instructions of the stage named `name` (`FROM ... AS name`).
fn stage(lines: &[String], name: &str) -> Vec<String> {
    lines
        .iter()
        .skip_while(|l| !(l.starts_with("FROM ") && l.ends_with(&format!(" AS {name}"))))
        .enumerate()
        .take_while(|(i, l)| *i == 0 || !l.starts_with("FROM "))
        .map(|(_, l)| l.clone())
        .collect()
}

/// The Dockerfile cannot be built on the test machines (no container engine, no
/// registry), so this checks what can drift: that it builds every example plugin and
/// that the image runs the way `deploy/` expects it to.
#[test]
fn the_dockerfile_builds_what_the_deployment_runs() {
    let lines = dockerfile();
    let objects = documents(&kustomize());
    let pod = &find(&objects, "Deployment")["spec"]["template"]["spec"];
    let container = &pod["containers"][0];

    let host = stage(&lines, "host");
    assert!(!host.is_empty(), "the Dockerfile has a `host` stage");
    assert_eq!(lines.iter().rev().find(|l| l.starts_with("FROM ")), host.first(), "`host` is the default target");
    let user = format!("USER {}:{}", pod["securityContext"]["runAsUser"], pod["securityContext"]["runAsGroup"]);
    assert!(host.contains(&user), "the image runs as the Deployment's user ({user}): {host:?}");
    let ports: Vec<String> =
        container["ports"].as_array().expect("ports").iter().map(|p| p["containerPort"].to_string()).collect();
    assert!(host.contains(&format!("EXPOSE {}", ports.join(" "))), "the image exposes {ports:?}: {host:?}");
    assert!(host.iter().any(|l| l == r#"CMD ["run", "--plugins", "/plugins"]"#), "{host:?}");
    let mounts = container["volumeMounts"].as_array().expect("mounts");
    assert!(
        mounts.iter().any(|m| m["mountPath"] == "/plugins"),
        "the plugin directory is mounted where the image looks"
    );

    let plugins = stage(&lines, "plugins");
    assert!(
        plugins.iter().any(|l| l == "COPY --from=build /out/plugins/ /"),
        "plugin files at the image root: {plugins:?}"
    );
    let build = lines.iter().find(|l| l.contains("--target wasm32-wasip2")).expect("the plugin build");
    // The Rust examples; demo-application-python is the same controller in Python, kept
    // out of the image so that one DemoApplication has one controller. The Makefile's
    // EXAMPLES need what a bare install lacks (kubewatch and dns-record an operator's
    // settings: the URLs they may reach, a token; cronjob its webhooks' certificate and
    // rights), so the image, and deploy/rbac.yaml, leave them out.
    let makefile = std::fs::read_to_string(deploy_dir().with_file_name("Makefile")).expect("Makefile");
    let left_out: Vec<&str> = makefile
        .lines()
        .find_map(|l| l.strip_prefix("EXAMPLES :="))
        .expect("the Makefile's EXAMPLES")
        .split_whitespace()
        .collect();
    assert!(left_out.contains(&"kubewatch"), "EXAMPLES as the Makefile writes them: {left_out:?}");
    let examples = std::fs::read_dir(deploy_dir().with_file_name("plugins")).expect("plugins/");
    for example in examples {
        let example = example.expect("entry");
        let needs_settings = left_out.contains(&&*example.file_name().to_string_lossy());
        if !example.path().join("Cargo.toml").is_file() || needs_settings {
            continue;
        }
        let name = example.file_name().to_string_lossy().into_owned();
        assert!(build.contains(&format!("-p {name} ")), "the Dockerfile builds the example plugin {name}: {build}");
    }
}
