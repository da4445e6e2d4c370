//! The development loop per language, measured once per run: from saving a plugin's
//! source to the kube client seeing the new behaviour.
//!
//! One `kubewasm dev` (the bench profile's binary) on the embedded API server watches
//! five projects made by `kubewasm new` (Rust, Python, JavaScript, TypeScript, Go), set
//! up as their READMEs say (the Python virtualenv and Go of `make python-plugins` and
//! `make go-plugins`, `npm install` for the JavaScript SDK). Each project's parent is
//! created in a namespace of its own and its ConfigMap awaited. Then, one language at a
//! time, a one-line change to the reconciler (the ConfigMap's message gets a suffix) is
//! written over the source file, and the clock runs until the ConfigMap holds the new
//! message: the change noticed, the project built, the component installed, read,
//! compiled (baseline compiler) and swapped in, the parent reconciled, the ConfigMap
//! applied and read back. A Python project is not built before it acts: the SDK's
//! development component, compiled once, is installed with a copy of the sources, and
//! its build runs after (and is what `build alone` shows). [`ROUNDS`] edits per language; the build's own time is what
//! `kubewasm dev`'s table shows. For the ratio, the Rust crate is also rebuilt after a
//! one-line change with the shipping `plugin` profile (LTO), as the README's loop did.
//!
//! Run with `make bench-devloop`; `cargo bench -p kubewasm --bench devloop -- python go`
//! runs those languages only (`kubewasm new`'s `--lang` names). Results: BENCHMARKS.md.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kube::api::{Api, DynamicObject, PostParams};
use kube::discovery::ApiResource;
use serde_json::json;

const ROUNDS: usize = 3;
/// How long the first builds may take (the Rust crate's dependencies compile once).
const FIRST_BUILDS: Duration = Duration::from_secs(30 * 60);
/// How long one edit may take to be seen before the run fails.
const PATIENCE: Duration = Duration::from_secs(120);

/// A scaffolded project and its one-line change.
struct Language {
    name: &'static str,
    lang: &'static str,
    /// The parent kind (`kubewasm new --kind`) and its plural.
    kind: (&'static str, &'static str),
    /// The source file edited, and the text in it the edit replaces.
    file: &'static str,
    original: &'static str,
    /// The replacement for edit `n`: it appends `#n` to the message.
    edited: fn(usize) -> String,
}

const LANGUAGES: [Language; 5] = [
    Language {
        name: "bench-rust",
        lang: "rust",
        kind: ("RustApp", "rustapps"),
        file: "src/lib.rs",
        original: "spec.message)]",
        edited: |n| format!("format!(\"{{}}#{n}\", spec.message))]"),
    },
    Language {
        name: "bench-python",
        lang: "python",
        kind: ("PythonApp", "pythonapps"),
        file: "app.py",
        original: "\"data\": {\"message\": message}",
        edited: |n| format!("\"data\": {{\"message\": message + \"#{n}\"}}"),
    },
    Language {
        name: "bench-js",
        lang: "js",
        kind: ("JsApp", "jsapps"),
        file: "app.js",
        original: "data: { message }",
        edited: |n| format!("data: {{ message: message + '#{n}' }}"),
    },
    Language {
        name: "bench-ts",
        lang: "ts",
        kind: ("TsApp", "tsapps"),
        file: "app.ts",
        original: "data: { message }",
        edited: |n| format!("data: {{ message: message + '#{n}' }}"),
    },
    Language {
        name: "bench-go",
        lang: "go",
        kind: ("GoApp", "goapps"),
        file: "main.go",
        original: "map[string]any{\"message\": message}",
        edited: |n| format!("map[string]any{{\"message\": message + \"#{n}\"}}"),
    },
];

fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("bench binary path");
    exe.ancestors().nth(3).expect("target directory").to_path_buf()
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_path_buf()
}

fn run(command: &mut Command) {
    let out = command.output().unwrap_or_else(|e| panic!("{command:?}: {e}"));
    assert!(
        out.status.success(),
        "{command:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The languages the command line names (`--lang` names), all when it names none.
fn languages() -> Vec<&'static Language> {
    let named: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    LANGUAGES.iter().filter(|l| named.is_empty() || named.iter().any(|n| n == l.lang)).collect()
}

/// `kubewasm new` for each language under `base`, set up as its README says.
fn scaffold(base: &Path) {
    let kubewasm = env!("CARGO_BIN_EXE_kubewasm");
    for language in languages() {
        let dir = base.join(language.name);
        let new = ["new", language.name, "--lang", language.lang, "--kind", language.kind.0, "--path"];
        run(Command::new(kubewasm).args(new).arg(&dir));
        match language.lang {
            // The workspace's versions of every dependency, already downloaded.
            "rust" => {
                std::fs::copy(workspace().join("Cargo.lock"), dir.join("Cargo.lock")).expect("copy Cargo.lock");
            }
            "js" | "ts" => run(Command::new("npm")
                .args(["install", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"])
                .current_dir(&dir)),
            _ => {}
        }
    }
}

/// What `kubewasm dev` printed, each line with when it came.
type Lines = Arc<Mutex<Vec<(Instant, String)>>>;

/// `kubewasm dev` watching every project of `base`, with the toolchains of `make test`
/// first on the PATH and a compiled-plugin cache of its own.
fn start_dev(base: &Path, plugins: &Path, kubeconfig: &Path) -> (Child, Lines) {
    let target = target_dir();
    let path = format!(
        "{}:{}:{}",
        target.join("python-venv/bin").display(),
        target.join("go-venv/bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut command = Command::new(env!("CARGO_BIN_EXE_kubewasm"));
    command.args(["dev", "--plugins"]).arg(plugins).arg("--kubeconfig").arg(kubeconfig).arg("--watch");
    for language in languages() {
        command.arg(base.join(language.name));
    }
    let mut child = command
        .env("PATH", path)
        .env("CARGO_TARGET_DIR", &target)
        .env("KUBEWASM_CACHE_DIR", base.join("cache"))
        .envs([("GOTOOLCHAIN", "local"), ("GOPROXY", "off")])
        .env("GOCACHE", target.join("go-cache"))
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubewasm dev starts");
    let lines: Lines = Arc::default();
    let stderr = child.stderr.take().expect("stderr");
    let sink = lines.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            sink.lock().expect("lines").push((Instant::now(), line));
        }
    });
    (child, lines)
}

/// The build time the table showed last for project `name` since `since`.
fn build_time(lines: &Lines, name: &str, since: Instant) -> Option<f64> {
    let lines = lines.lock().expect("lines");
    lines.iter().rev().filter(|(at, _)| *at >= since).find_map(|(_, line)| {
        let mut words = line.split_whitespace();
        (words.next() == Some(name) && words.next() == Some("built")).then(|| words.next()?.parse().ok()).flatten()
    })
}

fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    let api_version = if group.is_empty() { version.to_string() } else { format!("{group}/{version}") };
    ApiResource { group: group.into(), version: version.into(), api_version, kind: kind.into(), plural: plural.into() }
}

/// The message of ConfigMap `hello` in namespace `name`, if it exists.
async fn message(client: &kube::Client, name: &str) -> Option<String> {
    let configmaps =
        Api::<DynamicObject>::namespaced_with(client.clone(), name, &resource("", "v1", "ConfigMap", "configmaps"));
    let cm = configmaps.get_opt("hello").await.ok()??;
    cm.data["data"]["message"].as_str().map(str::to_string)
}

async fn wait_for(what: &str, limit: Duration, mut check: impl AsyncFnMut() -> bool) {
    let started = Instant::now();
    while !check().await {
        assert!(started.elapsed() < limit, "gave up waiting for {what} after {limit:?}");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// Creates each project's namespace and parent, once its kind is served.
async fn create_parents(client: &kube::Client) {
    let namespaces = Api::<DynamicObject>::all_with(client.clone(), &resource("", "v1", "Namespace", "namespaces"));
    for language in languages() {
        let ns: DynamicObject = serde_json::from_value(
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": language.name}}),
        )
        .expect("namespace");
        namespaces.create(&PostParams::default(), &ns).await.expect("create namespace");
        let (kind, plural) = language.kind;
        let parents = Api::<DynamicObject>::namespaced_with(
            client.clone(),
            language.name,
            &resource("example.com", "v1", kind, plural),
        );
        let parent: DynamicObject = serde_json::from_value(json!({"apiVersion": "example.com/v1", "kind": kind,
            "metadata": {"name": "hello", "namespace": language.name}, "spec": {"message": "hello"}}))
        .expect("parent");
        wait_for(&format!("{kind} to be served"), FIRST_BUILDS, async || {
            parents.create(&PostParams::default(), &parent).await.is_ok()
        })
        .await;
    }
}

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

/// The Rust crate rebuilt after a one-line change with the shipping profile: seconds.
fn rust_with_plugin_profile(dir: &Path) -> f64 {
    let cargo = || {
        let mut command = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
        command.args(["build", "--profile", "plugin", "--target", "wasm32-wasip2", "--offline"]);
        command.current_dir(dir).env("CARGO_TARGET_DIR", target_dir());
        command
    };
    run(&mut cargo());
    let lib = dir.join("src/lib.rs");
    let source = std::fs::read_to_string(&lib).expect("lib.rs");
    std::fs::write(&lib, source.replace("format!(\"{}#", "format!(\"{}#plugin-")).expect("edit");
    let started = Instant::now();
    run(&mut cargo());
    started.elapsed().as_secs_f64()
}

#[tokio::main]
async fn main() {
    let base = target_dir().join("bench-devloop");
    let _ = std::fs::remove_dir_all(&base);
    let plugins = base.join("plugins");
    std::fs::create_dir_all(&plugins).expect("plugin dir");
    scaffold(&base);
    let kubeconfig = base.join("kubeconfig");
    let started = Instant::now();
    let (mut dev, lines) = start_dev(&base, &plugins, &kubeconfig);
    wait_for("the kubeconfig", Duration::from_secs(60), async || kubeconfig.exists()).await;
    let config = kube::config::Kubeconfig::read_from(&kubeconfig).expect("kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(config, &kube::config::KubeConfigOptions::default())
        .await
        .expect("client config");
    let client = kube::Client::try_from(config).expect("client");
    create_parents(&client).await;
    for language in languages() {
        wait_for(&format!("{}'s first ConfigMap", language.name), FIRST_BUILDS, async || {
            message(&client, language.name).await.as_deref() == Some("hello")
        })
        .await;
    }
    println!("first builds of the projects and their first ConfigMaps: {:.1} s", started.elapsed().as_secs_f64());

    let mut results = BTreeMap::new();
    for language in languages() {
        let file = base.join(language.name).join(language.file);
        let original = std::fs::read_to_string(&file).expect("source");
        assert!(original.contains(language.original), "{}: no {:?} to edit", file.display(), language.original);
        let (mut seen, mut built) = (Vec::new(), Vec::new());
        for round in 1..=ROUNDS {
            let edited = original.replace(language.original, &(language.edited)(round));
            let want = format!("hello#{round}");
            let at = Instant::now();
            std::fs::write(&file, edited).expect("save the source");
            wait_for(&format!("{} edit {round}", language.name), PATIENCE, async || {
                message(&client, language.name).await.as_deref() == Some(want.as_str())
            })
            .await;
            seen.push(at.elapsed().as_secs_f64());
            built.extend(build_time(&lines, language.name, at));
            // Let the background compile of the optimised code run out before the next edit.
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
        println!(
            "{:<13} saved -> seen: {}  (median {:.2} s); build alone: {}",
            language.name,
            seen.iter().map(|s| format!("{s:.2} s")).collect::<Vec<_>>().join(", "),
            median(seen.clone()),
            built.iter().map(|s| format!("{s:.1} s")).collect::<Vec<_>>().join(", "),
        );
        results.insert(language.name, median(seen));
    }
    let _ = dev.kill();
    let _ = dev.wait();

    if let Some(dev_loop) = results.get("bench-rust") {
        let lto = rust_with_plugin_profile(&base.join("bench-rust"));
        println!("bench-rust rebuilt with --profile plugin (LTO) after a one-line change: {lto:.1} s");
        println!("  / plugin-dev's whole loop (saved -> seen, median): {:.1}", lto / dev_loop);
    }
    let _ = std::fs::remove_dir_all(&base);
}
